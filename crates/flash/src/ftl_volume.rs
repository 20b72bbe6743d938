//! `FtlVolume`: a [`PageDevice`] over a conventional FTL's block device, its regions
//! static partitions of the FTL's logical pages.
//!
//! Layout of the FTL's logical pages:
//!
//! ```text
//! lpn 0, 1        partition table, two copies written alternately (copy = generation mod 2)
//! lpn 2 …         the partitions, in the order they were added, back to back
//!
//! partition-table page
//! offset size field
//!  0      8   magic "DFVOLTB1"
//!  8      8   generation (u64 LE)
//! 16      4   JSON length (u32 LE)
//! 20      4   crc32 of the JSON
//! 24      …   JSON: [{spec, first, pages}, …]
//! ```
//!
//! A table write goes to the copy the previous one did not use, so a torn write leaves
//! the other intact; `open` takes the valid copy with the higher generation.
//!
//! A partition's size is its spec's `MAX_SIZE` (whole pages); without one, a spec
//! with `MAX_CHIPS = n` takes n / chips of the FTL's logical pages (the share n chips
//! would give a NoFTL region), and a spec with neither takes all that is left.
//!
//! An FTL has no in-place append: `write_delta` is always refused
//! ([`DeltaRefusal::NoInPlaceAppend`]) and the engine writes out of place. Counters
//! per region count the host's reads, writes and trims of that partition; device-wide
//! FTL counters (flash programs, GC, merges) come from [`FtlVolume::ftl_counters`].
//!
//! Transactions (NoLgn-FTL underneath, after [`PageDevice::start_transactions`]): every
//! write goes to the FTL as `write_tx` of the open FTL transaction, begun at the first
//! write after a commit or abort, so a power cut before [`PageDevice::commit_tx`] rolls
//! all of them back (the FTL's recovery scan). After [`PageDevice::prepare_commit_tx`]
//! the volume holds the latest write back (reads see it) and writes it at the commit
//! with the FTL's end flag; with nothing held, the commit rewrites the transaction's
//! last page with the flag (one extra program). Trims are deferred to after the FTL
//! commit (a trim is not transactional on the FTL) and dropped by an abort; a write
//! cancels an earlier deferred trim of its page. Reads see held writes and deferred
//! trims. A full P2P table surfaces as the FTL's [`Error::P2pFull`]; the caller aborts.

use crate::error::{DeltaRefusal, Error};
use crate::ftl::{Ftl, FtlCounters, FtlKind};
use crate::page_device::{write_each, PageDevice};
use crate::region::{Occupancy, RegionCounters, RegionRead, WearStats};
use crate::spec::RegionSpec;
use crate::RegionId;
use nand::{Device, OpTiming, SimTime, SyncPoint};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

const MAGIC: &[u8; 8] = b"DFVOLTB1";
const HEADER: usize = 24;
/// Logical pages holding the partition table (two copies).
pub const TABLE_PAGES: u32 = 2;

#[derive(Clone, Debug, Serialize, Deserialize)]
struct Partition {
    spec: RegionSpec,
    first: u32,
    pages: u32,
    #[serde(skip)]
    counters: RegionCounters,
}

/// Regions as static partitions of one FTL.
pub struct FtlVolume {
    ftl: Box<dyn Ftl>,
    parts: Vec<Partition>,
    generation: u64,
    /// Every chip: an FTL spreads each partition over all of them.
    chips: Vec<u32>,
    /// Set once writes go in transactions.
    tx: Option<Transactions>,
}

/// The open transaction of a volume whose writes go in transactions (FTL pages).
#[derive(Default)]
struct Transactions {
    /// The FTL's tid, begun at the transaction's first write.
    tid: Option<u32>,
    /// `prepare_commit_tx` was called: the latest write waits in `held`.
    closing: bool,
    held: Option<(u32, Vec<u8>)>,
    /// The FTL page the transaction wrote last.
    last: Option<u32>,
    /// FTL pages to trim after the commit.
    trims: BTreeSet<u32>,
}

impl FtlVolume {
    /// Lays out fresh partitions on an FTL and writes the partition table.
    pub fn format(ftl: Box<dyn Ftl>, specs: Vec<RegionSpec>, now: SimTime) -> Result<FtlVolume, Error> {
        let chips = (0..ftl.device().geometry().chips()).collect();
        let mut volume = FtlVolume { ftl, parts: Vec::new(), generation: 0, chips, tx: None };
        for spec in specs {
            volume.place(spec)?;
        }
        volume.save_table(now)?;
        Ok(volume)
    }

    /// Opens a formatted volume: reads the partition table. Returns when the reads end.
    pub fn open(mut ftl: Box<dyn Ftl>, now: SimTime) -> Result<(FtlVolume, SimTime), Error> {
        let mut best: Option<(u64, Vec<Partition>)> = None;
        let mut problems = Vec::new();
        let mut done = now;
        for copy in 0..TABLE_PAGES {
            let Some(read) = ftl.read(copy, now)? else { continue };
            done = done.max(read.timing.end_ns);
            match decode_table(read.data, copy) {
                Ok((generation, parts)) if best.as_ref().is_none_or(|b| b.0 < generation) => {
                    best = Some((generation, parts))
                }
                Ok(_) => {}
                Err(m) => problems.push(format!("copy {copy}: {m}")),
            }
        }
        let Some((generation, parts)) = best else {
            return Err(Error::CorruptLayout(if problems.is_empty() {
                "the FTL holds no partition table (not a formatted volume)".into()
            } else {
                format!("no readable partition table ({})", problems.join("; "))
            }));
        };
        let chips = (0..ftl.device().geometry().chips()).collect();
        Ok((FtlVolume { ftl, parts, generation, chips, tx: None }, done))
    }

    pub fn ftl(&self) -> &dyn Ftl {
        self.ftl.as_ref()
    }
    /// The FTL, for reopening the volume (or opening it as something else).
    pub fn into_ftl(self) -> Box<dyn Ftl> {
        self.ftl
    }

    /// Adds a partition after the last one, sized as the module comment says.
    fn place(&mut self, spec: RegionSpec) -> Result<RegionId, Error> {
        spec.validate().map_err(Error::Config)?;
        if self.parts.iter().any(|p| p.spec.name.eq_ignore_ascii_case(&spec.name)) {
            return Err(Error::Config(format!("a region named {} already exists", spec.name)));
        }
        let total = self.ftl.logical_pages();
        let first = self.parts.last().map_or(TABLE_PAGES, |p| p.first + p.pages);
        let left = total.saturating_sub(first);
        let page_bytes = self.ftl.page_bytes() as u64;
        let wanted = match (spec.max_size_bytes, spec.max_chips) {
            (Some(bytes), _) => (bytes / page_bytes).min(u32::MAX as u64) as u32,
            (None, Some(chips)) => (total as u64 * chips as u64 / self.chips.len().max(1) as u64) as u32,
            (None, None) => left,
        };
        let pages = wanted.min(left);
        if pages == 0 {
            return Err(Error::Config(format!(
                "region {}: the FTL has no logical pages left ({} of {total} are in use)",
                spec.name, first
            )));
        }
        self.parts.push(Partition { spec, first, pages, counters: RegionCounters::default() });
        Ok(RegionId(self.parts.len() - 1))
    }

    fn save_table(&mut self, now: SimTime) -> Result<OpTiming, Error> {
        let json = serde_json::to_vec(&self.parts)
            .map_err(|e| Error::Config(format!("the partition table does not serialize: {e}")))?;
        let page_bytes = self.ftl.page_bytes();
        if json.len() + HEADER > page_bytes {
            return Err(Error::Config(format!(
                "the partition table needs {} bytes; one {page_bytes}-byte page holds it",
                json.len() + HEADER
            )));
        }
        let generation = self.generation + 1;
        let mut page = Vec::with_capacity(page_bytes);
        page.extend_from_slice(MAGIC);
        page.extend_from_slice(&generation.to_le_bytes());
        page.extend_from_slice(&(json.len() as u32).to_le_bytes());
        page.extend_from_slice(&crc32fast::hash(&json).to_le_bytes());
        page.extend_from_slice(&json);
        page.resize(page_bytes, 0xFF);
        let timing = self.ftl.write((generation % 2) as u32, &page, now)?;
        self.generation = generation;
        Ok(timing)
    }

    /// Writes FTL page `at` in the open transaction (begun here if need be).
    fn program_tx(&mut self, at: u32, data: &[u8], end: bool, now: SimTime) -> Result<OpTiming, Error> {
        let Some(tx) = self.tx.as_mut() else { return Err(no_transactions()) };
        let tid = match tx.tid {
            Some(tid) => tid,
            None => *tx.tid.insert(self.ftl.begin_tx()?),
        };
        let timing = self.ftl.write_tx(at, data, tid, end, now)?;
        tx.last = Some(at);
        Ok(timing)
    }

    /// A write of FTL page `at` in the open transaction: held back while closing (the
    /// one held before, of another page, is written now).
    fn write_tx(&mut self, at: u32, page: &[u8], now: SimTime) -> Result<OpTiming, Error> {
        let Some(tx) = self.tx.as_mut() else { return Err(no_transactions()) };
        tx.trims.remove(&at);
        if !tx.closing {
            return self.program_tx(at, page, false, now);
        }
        match tx.held.take() {
            Some((earlier, data)) if earlier != at => {
                tx.held = Some((at, page.to_vec()));
                self.program_tx(earlier, &data, false, now)
            }
            same => {
                let mut data = same.map(|(_, data)| data).unwrap_or_default();
                data.clear();
                data.extend_from_slice(page);
                tx.held = Some((at, data));
                Ok(OpTiming { start_ns: now, end_ns: now })
            }
        }
    }

    fn part(&self, region: RegionId) -> &Partition {
        &self.parts[region.0]
    }

    /// The FTL page of `lpn` of a region, `count` pages long, if in range.
    fn locate(&self, region: RegionId, lpn: u32, count: u32) -> Result<u32, Error> {
        let p = self.part(region);
        if lpn.checked_add(count).is_none_or(|end| end > p.pages) {
            return Err(Error::LpnOutOfRange { region: p.spec.name.clone(), lpn, logical_pages: p.pages });
        }
        Ok(p.first + lpn)
    }
}

/// A transactional call before `start_transactions`.
fn no_transactions() -> Error {
    Error::Config("the FTL volume's writes are not in transactions (start_transactions was not called)".into())
}

/// Decodes a partition-table page of copy `copy`.
fn decode_table(page: &[u8], copy: u32) -> Result<(u64, Vec<Partition>), String> {
    let header = page.get(..HEADER).ok_or("the page is shorter than the table header")?;
    if &header[..8] != MAGIC {
        return Err("bad magic".into());
    }
    let word = |at: usize, n: usize| header[at..at + n].iter().rev().fold(0u64, |v, &b| v << 8 | b as u64);
    let (generation, len, crc) = (word(8, 8), word(16, 4) as usize, word(20, 4) as u32);
    if generation % 2 != copy as u64 {
        return Err(format!("generation {generation} does not belong in copy {copy}"));
    }
    let json = page.get(HEADER..HEADER + len).ok_or_else(|| format!("the header names {len} bytes of JSON"))?;
    if crc32fast::hash(json) != crc {
        return Err("checksum mismatch".into());
    }
    let parts: Vec<Partition> = serde_json::from_slice(json).map_err(|e| e.to_string())?;
    let mut next = TABLE_PAGES;
    for p in &parts {
        if p.first != next || p.pages == 0 {
            return Err(format!("region {} at page {} does not follow the one before", p.spec.name, p.first));
        }
        next = p.first.checked_add(p.pages).ok_or("partition sizes overflow")?;
    }
    Ok((generation, parts))
}

impl PageDevice for FtlVolume {
    fn region_count(&self) -> usize {
        self.parts.len()
    }
    /// The FTL's; the partition table and the open transaction are a few bytes.
    fn mapping_bytes(&self) -> u64 {
        self.ftl.mapping_bytes()
    }
    fn region_id(&self, name: &str) -> Option<RegionId> {
        self.parts.iter().position(|p| p.spec.name == name).map(RegionId)
    }
    fn region_name(&self, region: RegionId) -> &str {
        &self.part(region).spec.name
    }
    fn region_spec(&self, region: RegionId) -> &RegionSpec {
        &self.part(region).spec
    }
    fn logical_pages(&self, region: RegionId) -> u32 {
        self.part(region).pages
    }
    fn page_bytes(&self) -> usize {
        self.ftl.page_bytes()
    }
    fn keeps_data(&self) -> bool {
        self.ftl.device().storage().keeps_data()
    }
    fn add_region(&mut self, spec: RegionSpec, now: SimTime) -> Result<RegionId, Error> {
        let id = self.place(spec)?;
        if let Err(e) = self.save_table(now) {
            self.parts.pop();
            return Err(e);
        }
        Ok(id)
    }
    fn read(&mut self, region: RegionId, lpn: u32, now: SimTime) -> Result<Option<RegionRead<'_>>, Error> {
        let at = self.locate(region, lpn, 1)?;
        self.parts[region.0].counters.host_reads += 1;
        let whole_bytes = self.ftl.page_bytes();
        if let Some(tx) = &self.tx {
            if tx.trims.contains(&at) {
                return Ok(None);
            }
            if let Some((_, data)) = tx.held.as_ref().filter(|(held, _)| *held == at) {
                let timing = OpTiming { start_ns: now, end_ns: now };
                return Ok(Some(RegionRead { timing, data, appends: 0, torn_tail: false, whole_bytes }));
            }
        }
        Ok(self.ftl.read(at, now)?.map(|r| RegionRead {
            timing: r.timing,
            data: r.data,
            appends: 0,
            torn_tail: false,
            whole_bytes,
        }))
    }
    fn write_pages(&mut self, region: RegionId, first_lpn: u32, data: &[u8], now: SimTime) -> Result<OpTiming, Error> {
        let page_bytes = self.ftl.page_bytes();
        let count = (data.len() / page_bytes.max(1)) as u32;
        let at = self.locate(region, first_lpn, count.max(1))?;
        if self.tx.is_some() {
            let timing = write_each(data, page_bytes, at, now, |lpn, page| self.write_tx(lpn, page, now))?;
            self.parts[region.0].counters.host_writes += count as u64;
            return Ok(timing);
        }
        let ftl = &mut self.ftl;
        let counters = &mut self.parts[region.0].counters;
        write_each(data, page_bytes, at, now, |lpn, page| {
            let t = ftl.write(lpn, page, now)?;
            counters.host_writes += 1;
            Ok(t)
        })
    }
    fn write_delta(
        &mut self,
        region: RegionId,
        lpn: u32,
        _offset: usize,
        _bytes: &[u8],
        _now: SimTime,
    ) -> Result<OpTiming, Error> {
        self.locate(region, lpn, 1)?;
        Err(Error::DeltaRefused { lpn, reason: DeltaRefusal::NoInPlaceAppend })
    }
    fn trim(&mut self, region: RegionId, lpn: u32, now: SimTime) -> Result<Option<OpTiming>, Error> {
        let at = self.locate(region, lpn, 1)?;
        self.parts[region.0].counters.host_trims += 1;
        if let Some(tx) = &mut self.tx {
            if tx.held.as_ref().is_some_and(|(held, _)| *held == at) {
                tx.held = None;
            }
            tx.trims.insert(at);
            return Ok(None);
        }
        self.ftl.trim(at, now)
    }
    /// Only in transactions (NoLgn-FTL): otherwise the parts of a DB page are separate
    /// FTL writes, and a cut between them leaves the page half new, half old.
    fn atomic_page_groups(&self) -> bool {
        self.tx.is_some()
    }
    fn transactional(&self) -> bool {
        self.ftl.kind() == FtlKind::Nolgn
    }
    fn start_transactions(&mut self) -> Result<(), Error> {
        if !self.transactional() {
            return Err(Error::NotTransactional { ftl: self.ftl.kind().name().into() });
        }
        self.tx.get_or_insert_with(Transactions::default);
        Ok(())
    }
    fn prepare_commit_tx(&mut self) -> Result<(), Error> {
        self.tx.as_mut().ok_or_else(no_transactions)?.closing = true;
        Ok(())
    }
    fn commit_tx(&mut self, now: SimTime) -> Result<SimTime, Error> {
        let tx = self.tx.as_mut().ok_or_else(no_transactions)?;
        tx.closing = false;
        let (held, tid, last) = (tx.held.take(), tx.tid, tx.last);
        let mut done = now;
        match (held, tid, last) {
            (Some((at, data)), _, _) => done = self.program_tx(at, &data, true, now)?.end_ns,
            (None, Some(tid), Some(at)) => {
                // Nothing left to write: the last page again, with the end flag.
                let read = self.ftl.read(at, now)?.ok_or_else(|| Error::Transaction {
                    tid,
                    what: format!("its last page {at} reads as unwritten"),
                })?;
                let (data, read_end) = (read.data.to_vec(), read.timing.end_ns);
                done = self.program_tx(at, &data, true, read_end)?.end_ns;
            }
            _ => {}
        }
        let Some(tx) = self.tx.as_mut() else { return Err(no_transactions()) };
        let tid = tx.tid.take();
        tx.last = None;
        let trims = std::mem::take(&mut tx.trims);
        if let Some(tid) = tid {
            self.ftl.commit(tid, done)?;
        }
        for at in trims {
            if let Some(t) = self.ftl.trim(at, done)? {
                done = done.max(t.end_ns);
            }
        }
        Ok(done)
    }
    fn abort_tx(&mut self, now: SimTime) -> Result<(), Error> {
        let tx = self.tx.as_mut().ok_or_else(no_transactions)?;
        let tid = tx.tid.take();
        *tx = Transactions::default();
        match tid {
            Some(tid) => self.ftl.abort(tid, now),
            None => Ok(()),
        }
    }
    fn sync(&mut self, point: SyncPoint, now: SimTime) -> Result<SimTime, Error> {
        // The FTLs keep no volatile write cache: a write is durable on the device when it
        // returns; an image file behind it may still need its fdatasync.
        self.ftl.device_mut().storage_mut().sync(point)?;
        Ok(now)
    }
    fn counters(&self, region: RegionId) -> RegionCounters {
        self.part(region).counters
    }
    fn ftl_counters(&self) -> Option<FtlCounters> {
        Some(self.ftl.counters())
    }
    fn occupancy(&self, _region: RegionId) -> Option<Occupancy> {
        None
    }
    fn wear(&self, _region: RegionId) -> Option<WearStats> {
        None
    }
    fn chips(&self, _region: RegionId) -> &[u32] {
        &self.chips
    }
    fn device(&self) -> &Device {
        self.ftl.device()
    }
    fn flush(&mut self) -> Result<(), Error> {
        Ok(self.ftl.device_mut().storage_mut().flush()?)
    }
    fn into_device(self: Box<Self>) -> Device {
        self.ftl.into_device()
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}
