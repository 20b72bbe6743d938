//! The write-ahead log: a byte stream of records (`logrec`) on its own flash region,
//! appended sequentially and forced at commit and before any dirty page is written.
//!
//! Log page n holds stream bytes [n·P, (n+1)·P), P = flash page bytes − 24, and lives
//! at logical page n mod C of the log region (C = the region's logical pages):
//!
//! ```text
//! offset size field
//!  0      4   magic "DFL2"
//!  4      8   n, the page's number in the stream
//! 12      4   bytes of payload in use (P for a full page)
//! 16      4   crc32 of bytes [0, 16), bytes [20, 24) and the payload in use
//! 20      4   link: the crc32 (bytes 16..20) of page n − 1 as the log holds it
//! 24      …   payload
//! ```
//!
//! The link ties each page to its predecessor's exact contents. Pages of an earlier
//! pass over the same stream positions (written before a crash, beyond where the
//! restart found the log's end) carry valid numbers and checksums, but link to a
//! predecessor that has since been rewritten: the link ends the log there. Pages of
//! earlier builds ("DFLG", no link, crc32 of bytes [0, 16) and the payload) are read
//! as before, until the first linked page.
//!
//! A force writes every page holding bytes not yet durable; the last one may be partial
//! and is written again, whole or further filled, by a later force (an out-of-place
//! write in the region, so a torn rewrite leaves the earlier copy). Opening reads pages
//! from the restart point while their number and checksum hold: the torn or stale page
//! ends the log. Bytes before the truncation point may be overwritten as the stream
//! wraps around the region.
//!
//! Between forces the unwritten bytes wait in memory, as in a log buffer: once more
//! than `DbOptions::log_buffer_bytes` wait, their full pages are written ahead (`write_ahead`),
//! so a long transaction's log lives on flash, not in memory. That does not make them
//! durable in the write-ahead sense (`durable` stays at the last force, since the last
//! full page may end inside a record); the next force only waits for their writes.

use crate::error::{Error, Result};
use crate::logrec::Record;
use flash::{PageDevice, RegionId};
use nand::SimTime;
use serde::Serialize;

const MAGIC: &[u8; 4] = b"DFL2";
/// Log pages of earlier builds, without the link.
const MAGIC_UNLINKED: &[u8; 4] = b"DFLG";
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
pub(crate) const RING_SHARE: f64 = 0.5;

pub struct Log {
    region: RegionId,
    payload: u64,
    capacity_pages: u64,
    /// Stream bytes from `tail_base` (a page start) to `end`: the pages not yet
    /// written in full.
    tail: Vec<u8>,
    tail_base: u64,
    end: u64,
    durable: u64,
    /// When the pages written ahead of a force are done (the next force waits for them).
    ahead_done: SimTime,
    /// The crc32 of the page before `tail_base`'s page: the next page written links to it.
    link: u32,
    /// The truncation point: older bytes may be overwritten.
    start: u64,
    /// When the last force's page writes ended.
    durable_at: SimTime,
    counters: LogCounters,
    page: Vec<u8>,
}

/// A log page as read, its number and checksum holding.
struct LogPage<'a> {
    /// Whether it is linked ("DFL2"); an unlinked one's `link` is not checked.
    linked: bool,
    link: u32,
    /// Its crc32 as stored: the next page's link.
    crc: u32,
    /// The payload bytes in use.
    payload: &'a [u8],
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
            ahead_done: 0,
            link: 0,
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
        // The stored crc32 of each page read, and the first page's link.
        let mut crcs: Vec<u32> = Vec::new();
        let mut first_link = 0;
        let done = log.read_pages(device, first_page, now, |page| {
            if crcs.is_empty() {
                first_link = page.link;
            }
            crcs.push(page.crc);
            stream.extend_from_slice(page.payload);
        })?;
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
        let tail_page = (log.tail_base / log.payload - first_page) as usize;
        log.link = if tail_page == 0 { first_link } else { crcs[tail_page - 1] };
        log.tail = stream[(log.tail_base - base) as usize..(end - base) as usize].to_vec();
        Ok((log, found, done))
    }

    /// Reads the log's pages in order from page `first`, handing each to `each`, up to
    /// where the log ends: before a page that is missing, torn or of another number,
    /// before a page left from an earlier pass (linked to another linked predecessor,
    /// or unlinked after a linked one), and after a partial page. Returns when the last
    /// read ended.
    fn read_pages(
        &self,
        device: &mut dyn PageDevice,
        first: u64,
        now: SimTime,
        mut each: impl FnMut(LogPage),
    ) -> Result<SimTime> {
        let mut done = now;
        // The crc of the page before, if it was linked: the first linked page after
        // unlinked ones links to what its writer found in a legacy page's link bytes
        // (a restart in an unlinked tail page), so its link cannot be checked.
        let mut prev_linked_crc = None;
        let mut linked_seen = false;
        for n in first.. {
            let lpn = (n % self.capacity_pages) as u32;
            let Some(read) = device.read(self.region, lpn, now)? else { break };
            done = done.max(read.timing.end_ns);
            let Some(page) = self.check_page(read.data, n) else { break };
            let stale = if page.linked { prev_linked_crc.is_some_and(|crc| crc != page.link) } else { linked_seen };
            if stale {
                break;
            }
            linked_seen |= page.linked;
            prev_linked_crc = page.linked.then_some(page.crc);
            let full = page.payload.len() as u64 == self.payload;
            each(page);
            if !full {
                break;
            }
        }
        Ok(done)
    }

    /// `p` as log page `n`, if it is one and its checksum holds.
    fn check_page<'a>(&self, p: &'a [u8], n: u64) -> Option<LogPage<'a>> {
        let linked = &p[0..4] == MAGIC;
        let used = crate::page::le_u32(&p[12..16]) as u64;
        let crc = crate::page::le_u32(&p[16..20]);
        let ok = (linked || &p[0..4] == MAGIC_UNLINKED)
            && crate::page::le_u64(&p[4..12]) == n
            && used <= self.payload
            && page_crc(p, used as usize, linked) == crc;
        ok.then(|| LogPage {
            linked,
            link: crate::page::le_u32(&p[20..24]),
            crc,
            payload: &p[PAGE_HEADER..PAGE_HEADER + used as usize],
        })
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

    /// Pages of the log's ring: what the log holds before it must be cut back.
    pub fn ring_pages(&self) -> u64 {
        self.capacity_pages
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
        let done = self.write_tail(self.end, device, now)?.max(self.ahead_done);
        self.durable = self.end;
        self.durable_at = done;
        Ok(done)
    }

    /// Writes the full pages of the tail once more than `buffer_bytes` wait there (what
    /// a full log buffer does), without waiting for them.
    pub fn write_ahead(&mut self, buffer_bytes: u64, device: &mut dyn PageDevice, now: SimTime) -> Result<()> {
        let full_pages_end = self.end - self.end % self.payload;
        if self.end - self.tail_base <= buffer_bytes || full_pages_end <= self.tail_base {
            return Ok(());
        }
        let done = self.write_tail(full_pages_end, device, now)?;
        self.ahead_done = self.ahead_done.max(done);
        Ok(())
    }

    /// Writes the tail's pages up to stream byte `to` (the last one partial if `to`
    /// ends inside it), then keeps in the tail only the page that is not yet full. A
    /// write that fails leaves the tail and the link as they were, so a retry writes
    /// the same pages again.
    fn write_tail(&mut self, to: u64, device: &mut dyn PageDevice, now: SimTime) -> Result<SimTime> {
        let mut done = now;
        let mut link = self.link;
        for n in self.tail_base / self.payload..to.div_ceil(self.payload) {
            let from = n * self.payload;
            let until = ((n + 1) * self.payload).min(to);
            let bytes = &self.tail[(from - self.tail_base) as usize..(until - self.tail_base) as usize];
            self.page.fill(0xFF);
            self.page[0..4].copy_from_slice(MAGIC);
            self.page[4..12].copy_from_slice(&n.to_le_bytes());
            self.page[12..16].copy_from_slice(&(bytes.len() as u32).to_le_bytes());
            self.page[20..24].copy_from_slice(&link.to_le_bytes());
            self.page[PAGE_HEADER..PAGE_HEADER + bytes.len()].copy_from_slice(bytes);
            let crc = page_crc(&self.page, bytes.len(), true);
            self.page[16..20].copy_from_slice(&crc.to_le_bytes());
            let lpn = (n % self.capacity_pages) as u32;
            let timing = device.write_pages(self.region, lpn, &self.page, now)?;
            done = done.max(timing.end_ns);
            self.counters.page_writes += 1;
            if until == (n + 1) * self.payload {
                // Full: the next page links to it (a partial one is written again).
                link = crc;
            }
        }
        let keep_from = to - to % self.payload;
        self.tail.drain(..(keep_from - self.tail_base) as usize);
        self.tail_base = keep_from;
        self.link = link;
        Ok(done)
    }

    /// Moves the truncation point forward to `lsn`.
    pub fn truncate(&mut self, lsn: u64) {
        self.start = self.start.max(lsn.min(self.durable));
    }
}

/// Every record still readable in the log region, oldest first, for analysis (the IPA
/// advisor reads a finished run's updates; restart reads from the truncation point with
/// [`Log::open`]). The ring's valid pages (number and checksum holding) are read as
/// [`Log::open`] reads them, from each page whose predecessor is not in the ring, and
/// the longest such run is the log: pages left from before a crash (written ahead past
/// a torn page, or an earlier lap's copy where a later program was torn) form short
/// runs of their own, ended by a missing page or a link to another predecessor.
/// Decoding starts at the first offset from which records (length and checksum
/// holding) chain to the run's end, since its first page may begin inside a record. An
/// empty or unreadable ring gives no records.
pub fn history(device: &mut dyn PageDevice, region: RegionId, now: SimTime) -> Result<Vec<LoggedRecord>> {
    let log = Log::create(device, region);
    let mut valid = std::collections::BTreeSet::new();
    for lpn in 0..log.capacity_pages {
        let Some(read) = device.read(region, lpn as u32, now)? else { continue };
        let n = crate::page::le_u64(&read.data[4..12]);
        if n % log.capacity_pages == lpn && log.check_page(read.data, n).is_some() {
            valid.insert(n);
        }
    }
    // (pages, first page, payload bytes) of the longest run; on a tie, the newer.
    let mut longest: Option<(u64, u64, Vec<u8>)> = None;
    for &n in valid.iter().filter(|&&n| n == 0 || !valid.contains(&(n - 1))) {
        let (mut pages, mut stream) = (0, Vec::new());
        log.read_pages(device, n, now, |page| {
            pages += 1;
            stream.extend_from_slice(page.payload);
        })?;
        if longest.as_ref().is_none_or(|&(most, first, _)| (pages, n) > (most, first)) {
            longest = Some((pages, n, stream));
        }
    }
    let Some((_, first, stream)) = longest else { return Ok(Vec::new()) };
    let base = first * log.payload;
    let end = base + stream.len() as u64;
    // Records are at most a few pages long (a page image, the longest, is a DB page of
    // at most 16 KiB and its header): a boundary lies within the first ones.
    let longest = crate::logrec::image_record_bytes(16 << 10).max(2 * log.payload as usize);
    for at in 0..stream.len().min(longest + 2 * log.payload as usize) {
        if let Ok((found, stop)) = records(&stream, base, base + at as u64) {
            // Eight records in a row with valid checksums do not happen by chance.
            if (stop == end && !found.is_empty()) || found.len() >= 8 {
                return Ok(found);
            }
        }
    }
    Ok(Vec::new())
}

/// A log page's checksum: its header (with the link, on linked pages) and the payload
/// bytes in use.
fn page_crc(page: &[u8], used: usize, linked: bool) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(&page[..16]);
    if linked {
        h.update(&page[20..24]);
    }
    h.update(&page[PAGE_HEADER..PAGE_HEADER + used]);
    h.finalize()
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::logrec::{Body, Range};
    use crate::store::PageId;
    use flash::{Flash, IpaMode, RegionSpec};
    use nand::{Device, Geometry, MemoryStorage};

    fn device() -> Flash {
        on(Box::new(MemoryStorage::new(geometry(), true)))
    }

    fn on(storage: Box<dyn nand::Storage>) -> Flash {
        Flash::format(Device::new(storage), vec![RegionSpec::new("log", IpaMode::None)]).unwrap()
    }

    /// One SLC chip of 64 blocks.
    fn geometry() -> Geometry {
        Geometry {
            channels: 1,
            chips_per_channel: 1,
            blocks_per_chip: 64,
            pages_per_block: 32,
            ..Geometry::paper_emulator()
        }
    }

    fn update(tx: u64, len: usize) -> Record {
        let range = Range { offset: 0, before: vec![1; len], after: vec![2; len] };
        Record { tx, prev: 0, body: Body::Update { page: PageId { region: 0, page: 1 }, ranges: vec![range] } }
    }

    fn encoded_len(r: &Record) -> u64 {
        let mut out = Vec::new();
        r.encode(&mut out);
        out.len() as u64
    }

    /// Appends records of transaction `tx` until the stream ends exactly at `to`.
    fn fill_to(log: &mut Log, tx: u64, to: u64) {
        let base = encoded_len(&update(tx, 0));
        let commit = Record { tx, prev: 0, body: Body::Commit };
        while to - log.next_lsn() > 300 {
            log.append(&update(tx, 50)).unwrap();
        }
        if (to - log.next_lsn() - base) % 2 == 1 {
            log.append(&commit).unwrap();
        }
        let len = (to - log.next_lsn() - base) / 2;
        log.append(&update(tx, len as usize)).unwrap();
        assert_eq!(log.next_lsn(), to);
    }

    /// A page write that fails (here a power cut the device comes back from) leaves the
    /// log to write the same pages again: the next force makes everything durable and
    /// the log reads back whole.
    #[test]
    fn a_failed_page_write_leaves_the_log_to_write_the_same_pages_again() {
        let programs = |flash: &Flash| flash.device().counters().page_programs;
        let mut dry = device();
        let mut log = Log::create(&dry, RegionId(0));
        let p = log.page_payload();
        fill_to(&mut log, 1, p + 100);
        log.force(log.next_lsn() - 1, &mut dry, 0).unwrap();
        // The second page write_ahead writes (log page 2) fails.
        let cut = programs(&dry) + 2;
        for cut_at in [None, Some(cut)] {
            let storage = nand::FaultyStorage::new(MemoryStorage::new(geometry(), true), cut_at, 7);
            let mut flash = on(Box::new(storage));
            let mut log = Log::create(&flash, RegionId(0));
            fill_to(&mut log, 1, p + 100);
            log.force(log.next_lsn() - 1, &mut flash, 0).unwrap();
            fill_to(&mut log, 1, 4 * p + 10);
            assert_eq!(log.write_ahead(0, &mut flash, 0).is_err(), cut_at.is_some());
            if cut_at.is_some() {
                let mut device = flash.into_device();
                device.power_on();
                flash = Flash::open(device, 0).unwrap().0;
            }
            log.force(log.next_lsn() - 1, &mut flash, 0).unwrap();
            let (reopened, _, _) = Log::open(&mut flash, RegionId(0), FIRST_LSN, 0).unwrap();
            assert_eq!(reopened.next_lsn(), 4 * p + 10, "cut at {cut_at:?}");
        }
    }

    /// Rewrites the log's pages as earlier builds wrote them: magic "DFLG", no link.
    fn unlink_pages(flash: &mut Flash, pages: std::ops::Range<u32>) {
        for lpn in pages {
            let mut p = flash.read(RegionId(0), lpn, 0).unwrap().unwrap().data.to_vec();
            let used = crate::page::le_u32(&p[12..16]) as usize;
            p[0..4].copy_from_slice(MAGIC_UNLINKED);
            p[20..24].fill(0);
            let crc = page_crc(&p, used, false);
            p[16..20].copy_from_slice(&crc.to_le_bytes());
            flash.write_pages(RegionId(0), lpn, &p, 0).unwrap();
        }
    }

    /// A log of an earlier build (pages without links) opens whole, and the pages
    /// written after it link on.
    #[test]
    fn a_log_of_unlinked_pages_opens_and_goes_on_linked() {
        let mut flash = device();
        let mut log = Log::create(&flash, RegionId(0));
        let p = log.page_payload();
        fill_to(&mut log, 1, 2 * p + 100);
        log.force(log.next_lsn() - 1, &mut flash, 0).unwrap();
        unlink_pages(&mut flash, 0..3);
        let (mut log, records, _) = Log::open(&mut flash, RegionId(0), FIRST_LSN, 0).unwrap();
        assert_eq!(log.next_lsn(), 2 * p + 100);
        let old = records.len();
        fill_to(&mut log, 2, 4 * p + 10);
        log.force(log.next_lsn() - 1, &mut flash, 0).unwrap();
        let (log, records, _) = Log::open(&mut flash, RegionId(0), FIRST_LSN, 0).unwrap();
        assert_eq!(log.next_lsn(), 4 * p + 10);
        assert!(records.len() > old && records[old..].iter().all(|(_, r)| r.tx == 2));
        // An unlinked page after a linked one is from an earlier build's pass: stale.
        unlink_pages(&mut flash, 4..5);
        let (log, _, _) = Log::open(&mut flash, RegionId(0), FIRST_LSN, 0).unwrap();
        assert!(log.next_lsn() <= 4 * p);
    }

    /// A crash leaves pages written ahead beyond where the restart finds the log's end
    /// (here: the page before them was torn). The restarted log fills its last page to
    /// the end of a record, exactly where an old page begins with one. Its numbers and
    /// checksum hold; only the link shows that it continues another past. Returns the
    /// device and the page payload; the log ends at 3 pages' payload.
    fn a_log_with_a_page_left_from_before_a_crash() -> (Flash, u64) {
        let mut flash = device();
        let region = RegionId(0);
        let mut log = Log::create(&flash, region);
        let p = log.page_payload();
        // Before the crash: transaction 1's records, pages 0 to 5 written ahead, with a
        // record boundary where page 3 begins.
        fill_to(&mut log, 1, 3 * p);
        fill_to(&mut log, 1, 6 * p);
        log.write_ahead(0, &mut flash, 0).unwrap();
        assert_eq!(log.counters().page_writes, 6);
        // Page 2 was torn: the restart ends the log in page 1.
        let mut torn = vec![0u8; 4096];
        torn[..4].copy_from_slice(MAGIC);
        flash.write_pages(region, 2, &torn, 0).unwrap();
        let (mut log, records, _) = Log::open(&mut flash, region, FIRST_LSN, 0).unwrap();
        assert!(log.next_lsn() < 2 * p && !records.is_empty());
        // After the restart: transaction 2 fills pages 1 and 2 exactly, and forces.
        fill_to(&mut log, 2, 3 * p);
        log.force(log.next_lsn() - 1, &mut flash, 0).unwrap();
        (flash, p)
    }

    #[test]
    fn a_page_left_from_before_a_crash_does_not_continue_the_log() {
        let (mut flash, p) = a_log_with_a_page_left_from_before_a_crash();
        let (log, records, _) = Log::open(&mut flash, RegionId(0), FIRST_LSN, 0).unwrap();
        assert_eq!(log.next_lsn(), 3 * p, "the log ends where the restarted one did");
        assert!(records.iter().filter(|(lsn, _)| *lsn >= 2 * p).all(|(_, r)| r.tx == 2));
    }

    /// An earlier build's log (unlinked pages), closed cleanly so the restart point lies
    /// in its tail page: the restart rewrites that page linked, with the legacy page's
    /// link bytes (zero) as its link. Neither a later restart from before it nor
    /// `history` may take it for a page left from an earlier pass.
    #[test]
    fn a_log_reopened_in_an_unlinked_tail_page_reads_on_past_it() {
        let mut flash = device();
        let region = RegionId(0);
        let mut log = Log::create(&flash, region);
        let p = log.page_payload();
        fill_to(&mut log, 1, 2 * p + 100);
        // The restart point (a checkpoint, say): a record in the tail page.
        let restart = log.append(&update(1, 10)).unwrap();
        log.force(log.next_lsn() - 1, &mut flash, 0).unwrap();
        unlink_pages(&mut flash, 0..3);
        let (mut log, _, _) = Log::open(&mut flash, region, restart, 0).unwrap();
        fill_to(&mut log, 2, 4 * p + 10);
        log.force(log.next_lsn() - 1, &mut flash, 0).unwrap();
        let (log, _, _) = Log::open(&mut flash, region, FIRST_LSN, 0).unwrap();
        assert_eq!(log.next_lsn(), 4 * p + 10, "a restart from the first page reads to the end");
        let h = history(&mut flash, region, 0).unwrap();
        assert_eq!(h.iter().filter(|(_, r)| r.tx == 2).count(), h.iter().filter(|(lsn, _)| *lsn > restart).count());
        assert_eq!(end_of(&h), 4 * p + 10, "history reads to the end");
    }

    /// Fills the log to `to` with transaction 1's updates, forces it and cuts it back to
    /// what is durable, as a commit and a checkpoint would.
    fn commit_and_cut(log: &mut Log, flash: &mut Flash, to: u64) {
        fill_to(log, 1, to);
        log.force(log.next_lsn() - 1, flash, 0).unwrap();
        log.truncate(log.durable_lsn());
    }

    /// Where the last of `records` ends.
    fn end_of(records: &[LoggedRecord]) -> u64 {
        let (lsn, last) = records.last().expect("records");
        let mut bytes = Vec::new();
        last.encode(&mut bytes);
        lsn + bytes.len() as u64
    }

    /// On a wrapped ring, a page torn before a crash leaves its slot holding the copy of
    /// one lap earlier, and the pages written ahead past it are left too. That old copy
    /// is the ring's oldest valid page, but neither it nor the pages ahead are the log:
    /// `history` gives the records a restart reads.
    #[test]
    fn history_on_a_wrapped_ring_skips_an_old_copy_left_by_a_torn_page() {
        let mut flash = device();
        let region = RegionId(0);
        let mut log = Log::create(&flash, region);
        let p = log.page_payload();
        let c = log.capacity_pages;
        let k = c + 20;
        // More than a lap, forced and cut back as checkpoints would.
        let mut to = 0;
        while to + 8 * p < k * p {
            to += 8 * p;
            commit_and_cut(&mut log, &mut flash, to);
        }
        commit_and_cut(&mut log, &mut flash, k * p);
        let start = log.start_lsn();
        let slot = ((k + 1) % c) as u32;
        let previous_lap = flash.read(region, slot, 0).unwrap().unwrap().data.to_vec();
        assert_eq!(crate::page::le_u64(&previous_lap[4..12]), k + 1 - c);
        // Before the crash: pages k .. k+3 written ahead, then page k+1 torn (its slot
        // reads as the copy before it).
        fill_to(&mut log, 1, (k + 4) * p);
        log.write_ahead(0, &mut flash, 0).unwrap();
        flash.write_pages(region, slot, &previous_lap, 0).unwrap();
        let (mut log, _, _) = Log::open(&mut flash, region, start, 0).unwrap();
        log.append(&update(2, 20)).unwrap();
        log.force(log.next_lsn() - 1, &mut flash, 0).unwrap();
        assert!(log.next_lsn() < (k + 1) * p, "the restarted log stays in page k");
        let (_, from_restart, _) = Log::open(&mut flash, region, start, 0).unwrap();
        let h = history(&mut flash, region, 0).unwrap();
        assert!(h.len() > from_restart.len(), "history also gives the ring's older records");
        assert_eq!(h.last().map(|(lsn, r)| (*lsn, r.tx)), from_restart.last().map(|(lsn, r)| (*lsn, r.tx)));
    }

    /// A wrapped log without a crash: `history` gives about a ring's worth of records,
    /// to the log's end.
    #[test]
    fn history_on_a_wrapped_ring_reads_to_the_end() {
        let mut flash = device();
        let region = RegionId(0);
        let mut log = Log::create(&flash, region);
        let p = log.page_payload();
        let c = log.capacity_pages;
        let mut to = 0;
        while to < (2 * c + 7) * p + 100 {
            to += 5 * p + 77;
            commit_and_cut(&mut log, &mut flash, to);
        }
        let h = history(&mut flash, region, 0).unwrap();
        assert_eq!(end_of(&h), to, "history ends where the log does");
        assert!(h.first().unwrap().0 < (to / p - c + 2) * p, "history starts at {}", h.first().unwrap().0);
    }

    /// `history` reads the ring to the same end as a restart: not on into the pages
    /// left from before the crash (which hold transaction 1's records from a record
    /// boundary on, so they would decode).
    #[test]
    fn history_ends_where_a_page_left_from_before_a_crash_begins() {
        let (mut flash, _) = a_log_with_a_page_left_from_before_a_crash();
        let (_, records, _) = Log::open(&mut flash, RegionId(0), FIRST_LSN, 0).unwrap();
        let lsn_and_tx = |records: &[LoggedRecord]| records.iter().map(|(lsn, r)| (*lsn, r.tx)).collect::<Vec<_>>();
        assert_eq!(lsn_and_tx(&history(&mut flash, RegionId(0), 0).unwrap()), lsn_and_tx(&records));
    }
}
