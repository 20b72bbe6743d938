//! The write-ahead log: a byte stream of records (`logrec`) on its own flash region,
//! appended sequentially and forced at commit and before any dirty page is written.
//!
//! Log page n holds stream bytes [n·P, (n+1)·P), P = flash page bytes − 24, and lives
//! at logical page n mod C of the log region (C = the region's logical pages):
//!
//! ```text
//! offset size field
//!  0      4   magic "DFLG"
//!  4      8   n, the page's number in the stream
//! 12      4   bytes of payload in use (P for a full page)
//! 16      4   crc32 of bytes [0, 16) and the payload in use
//! 20      4   zero
//! 24      …   payload
//! ```
//!
//! A force writes every page holding bytes not yet durable; the last one may be partial
//! and is written again, whole or further filled, by a later force (an out-of-place
//! write in the region, so a torn rewrite leaves the earlier copy). Opening reads pages
//! from the restart point while their number and checksum hold: the torn or stale page
//! ends the log. Bytes before the truncation point may be overwritten as the stream
//! wraps around the region.

use crate::error::{Error, Result};
use crate::logrec::Record;
use flash::{PageDevice, RegionId};
use nand::SimTime;
use serde::Serialize;

const MAGIC: &[u8; 4] = b"DFLG";
/// A record and its LSN.
pub type LoggedRecord = (u64, Record);
const PAGE_HEADER: usize = 24;
/// The stream starts here, so LSN 0 can mean "none".
pub const FIRST_LSN: u64 = 8;

/// Log counters, reported beside the page I/O.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct LogCounters {
    pub records: u64,
    pub bytes: u64,
    pub forces: u64,
    pub page_writes: u64,
}

/// Share of the log region's logical pages the log ring uses. A ring over all of them
/// would leave the region no unmapped pages (the log never trims), so its GC would find
/// only nearly full victims and migrate almost every page it erases; with half the
/// pages unmapped, the region has room and its GC stays cheap.
const RING_SHARE: f64 = 0.5;

pub struct Log {
    region: RegionId,
    payload: u64,
    capacity_pages: u64,
    /// Stream bytes from `tail_base` (a page start) to `end`, not all durable.
    tail: Vec<u8>,
    tail_base: u64,
    end: u64,
    durable: u64,
    /// The truncation point: older bytes may be overwritten.
    start: u64,
    /// When the last force's page writes ended.
    durable_at: SimTime,
    counters: LogCounters,
    page: Vec<u8>,
}

impl Log {
    /// A new, empty log on `region`.
    pub fn create(device: &dyn PageDevice, region: RegionId) -> Log {
        let page_bytes = device.page_bytes();
        let mut tail = vec![0u8; FIRST_LSN as usize];
        tail.reserve(page_bytes);
        Log {
            region,
            payload: (page_bytes - PAGE_HEADER) as u64,
            capacity_pages: (device.logical_pages(region) as f64 * RING_SHARE) as u64,
            tail,
            tail_base: 0,
            end: FIRST_LSN,
            durable: 0,
            start: FIRST_LSN,
            durable_at: 0,
            counters: LogCounters::default(),
            page: vec![0; page_bytes],
        }
    }

    /// Reads the log from `start` (the truncation point, a record boundary) to its last
    /// whole record. Returns the log, ready to append after that record, the records,
    /// and when the last read ended.
    pub fn open(
        device: &mut dyn PageDevice,
        region: RegionId,
        start: u64,
        now: SimTime,
    ) -> Result<(Log, Vec<LoggedRecord>, SimTime)> {
        let mut log = Log::create(device, region);
        let first_page = start / log.payload;
        let mut stream = Vec::new();
        let mut n = first_page;
        let mut done = now;
        loop {
            let lpn = (n % log.capacity_pages) as u32;
            let Some(read) = device.read(region, lpn, now)? else { break };
            done = done.max(read.timing.end_ns);
            let p = read.data;
            let seq = crate::page::le_u64(&p[4..12]);
            let used = crate::page::le_u32(&p[12..16]) as u64;
            let crc = crate::page::le_u32(&p[16..20]);
            if &p[0..4] != MAGIC || seq != n || used > log.payload {
                break;
            }
            let payload = &p[PAGE_HEADER..PAGE_HEADER + used as usize];
            let mut h = crc32fast::Hasher::new();
            h.update(&p[..16]);
            h.update(payload);
            if h.finalize() != crc {
                break;
            }
            stream.extend_from_slice(payload);
            n += 1;
            if used < log.payload {
                break;
            }
        }
        let base = first_page * log.payload;
        if base + (stream.len() as u64) < start {
            return Err(Error::Corrupt(format!(
                "the log ends at byte {}, before its restart point {start} (log pages missing)",
                base + stream.len() as u64
            )));
        }
        // A record cut off by a torn or missing page ends the log before it; appends
        // continue there and overwrite the rest.
        let (found, end) = records(&stream, base, start)?;
        log.end = end;
        log.durable = end;
        log.start = start;
        log.tail_base = end - end % log.payload;
        log.tail = stream[(log.tail_base - base) as usize..(end - base) as usize].to_vec();
        Ok((log, found, done))
    }

    /// The LSN the next record gets.
    pub fn next_lsn(&self) -> u64 {
        self.end
    }
    pub fn durable_lsn(&self) -> u64 {
        self.durable
    }
    /// When the log last became durable up to `durable_lsn`.
    pub fn durable_at(&self) -> SimTime {
        self.durable_at
    }
    pub fn start_lsn(&self) -> u64 {
        self.start
    }
    pub fn counters(&self) -> LogCounters {
        self.counters
    }
    pub fn region(&self) -> RegionId {
        self.region
    }

    /// Share of the log's capacity between the truncation point and the end.
    pub fn used_share(&self) -> f64 {
        let pages = self.end / self.payload - self.start / self.payload + 1;
        pages as f64 / self.capacity_pages as f64
    }

    /// Appends a record; returns its LSN.
    pub fn append(&mut self, record: &Record) -> Result<u64> {
        self.append_encoded(|out| record.encode(out), |_| 0)
    }

    /// Bytes of one log page's payload.
    pub fn page_payload(&self) -> u64 {
        self.payload
    }

    /// Appends the record `encode` writes to the end of the stream; returns its LSN.
    /// `keep_free` says, from the record's length, how many bytes must stay free after
    /// it (the room set aside for rolling back open transactions); the record is
    /// refused if they would not.
    pub fn append_encoded(
        &mut self,
        encode: impl FnOnce(&mut Vec<u8>),
        keep_free: impl FnOnce(u64) -> u64,
    ) -> Result<u64> {
        let lsn = self.end;
        let at = self.tail.len();
        encode(&mut self.tail);
        let len = (self.tail.len() - at) as u64;
        let new_end = self.end + len;
        if (new_end + keep_free(len)) / self.payload - self.start / self.payload + 1 >= self.capacity_pages {
            self.tail.truncate(at);
            return Err(Error::Full(format!(
                "the log region is full: its {} pages hold the log from LSN {} on, which a restart \
                 still needs (an active transaction or a page not yet written reaches back there); \
                 give the log region more chips or make the transaction smaller",
                self.capacity_pages, self.start
            )));
        }
        self.end = new_end;
        self.counters.records += 1;
        self.counters.bytes += len;
        Ok(lsn)
    }

    /// Makes everything appended so far durable if `lsn` is not yet; returns when the
    /// last log page write ends.
    pub fn force(&mut self, lsn: u64, device: &mut dyn PageDevice, now: SimTime) -> Result<SimTime> {
        if lsn < self.durable || self.durable == self.end {
            return Ok(now);
        }
        self.counters.forces += 1;
        let mut done = now;
        let first = self.durable / self.payload;
        let last = (self.end - 1) / self.payload;
        for n in first..=last {
            let from = n * self.payload;
            let to = ((n + 1) * self.payload).min(self.end);
            let bytes = &self.tail[(from - self.tail_base) as usize..(to - self.tail_base) as usize];
            self.page.fill(0xFF);
            self.page[0..4].copy_from_slice(MAGIC);
            self.page[4..12].copy_from_slice(&n.to_le_bytes());
            self.page[12..16].copy_from_slice(&(bytes.len() as u32).to_le_bytes());
            self.page[20..24].fill(0);
            self.page[PAGE_HEADER..PAGE_HEADER + bytes.len()].copy_from_slice(bytes);
            let mut h = crc32fast::Hasher::new();
            h.update(&self.page[..16]);
            h.update(bytes);
            self.page[16..20].copy_from_slice(&h.finalize().to_le_bytes());
            let lpn = (n % self.capacity_pages) as u32;
            let timing = device.write_pages(self.region, lpn, &self.page, now)?;
            done = done.max(timing.end_ns);
            self.counters.page_writes += 1;
        }
        self.durable = self.end;
        self.durable_at = done;
        let keep_from = self.end - self.end % self.payload;
        self.tail.drain(..(keep_from - self.tail_base) as usize);
        self.tail_base = keep_from;
        Ok(done)
    }

    /// Moves the truncation point forward to `lsn`.
    pub fn truncate(&mut self, lsn: u64) {
        self.start = self.start.max(lsn.min(self.durable));
    }
}

/// Every record still readable in the log region, oldest first, for analysis (the IPA
/// advisor reads a finished run's updates; restart reads from the truncation point with
/// [`Log::open`]). The ring's pages are taken back from the newest while their numbers
/// run consecutively; decoding starts at the first offset of that stream from which
/// records (length and checksum holding) chain to its end, since the oldest page may
/// begin inside a record. An empty or unreadable ring gives no records.
pub fn history(device: &mut dyn PageDevice, region: RegionId, now: SimTime) -> Result<Vec<LoggedRecord>> {
    let log = Log::create(device, region);
    let mut pages: std::collections::BTreeMap<u64, Vec<u8>> = std::collections::BTreeMap::new();
    for lpn in 0..log.capacity_pages {
        let Some(read) = device.read(region, lpn as u32, now)? else { continue };
        let p = read.data;
        let seq = crate::page::le_u64(&p[4..12]);
        let used = crate::page::le_u32(&p[12..16]) as u64;
        if &p[0..4] != MAGIC || used > log.payload || seq % log.capacity_pages != lpn {
            continue;
        }
        let payload = &p[PAGE_HEADER..PAGE_HEADER + used as usize];
        let mut h = crc32fast::Hasher::new();
        h.update(&p[..16]);
        h.update(payload);
        if h.finalize() == crate::page::le_u32(&p[16..20]) {
            pages.insert(seq, payload.to_vec());
        }
    }
    let Some(&newest) = pages.keys().next_back() else { return Ok(Vec::new()) };
    let mut first = newest;
    while first > 0 && pages.get(&(first - 1)).is_some_and(|p| p.len() as u64 == log.payload) {
        first -= 1;
    }
    let stream: Vec<u8> = (first..=newest).flat_map(|n| pages.remove(&n).unwrap_or_default()).collect();
    let base = first * log.payload;
    let end = base + stream.len() as u64;
    // Records are at most a few pages long: a boundary lies within the first ones.
    for at in 0..stream.len().min(4 * log.payload as usize) {
        if let Ok((found, stop)) = records(&stream, base, base + at as u64) {
            // Eight records in a row with valid checksums do not happen by chance.
            if (stop == end && !found.is_empty()) || found.len() >= 8 {
                return Ok(found);
            }
        }
    }
    Ok(Vec::new())
}

/// Decodes the records of `stream` (starting at stream offset `base`) from `from` on,
/// stopping at the first torn or missing one; also returns where that one starts.
fn records(stream: &[u8], base: u64, from: u64) -> Result<(Vec<LoggedRecord>, u64)> {
    let mut out = Vec::new();
    let mut at = from
        .checked_sub(base)
        .ok_or_else(|| Error::Corrupt(format!("log restart point {from} lies before the log's first page at {base}")))?
        as usize;
    while at < stream.len() {
        match Record::decode(&stream[at..])? {
            Some((record, len)) => {
                out.push((base + at as u64, record));
                at += len;
            }
            None => break,
        }
    }
    Ok((out, base + at as u64))
}
