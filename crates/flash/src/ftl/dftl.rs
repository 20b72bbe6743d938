//! DFTL (Gupta, Kim, Urgaonkar, ASPLOS'09): page-level mapping whose map lives in
//! translation pages on flash, with only a cached mapping table (CMT) of `cmt_entries`
//! entries and the global translation directory (GTD, translation page → physical page)
//! in controller RAM.
//!
//! The data path is the page FTL's (`super::pagelog`: striped out-of-place writes,
//! tombstones, GC). A translation page holds `page_bytes / 4` entries (u32 ppn, little
//! endian, `0xFFFF_FFFF` = unmapped); translation page `t` maps lpns
//! `t·E .. (t+1)·E`. Translation pages are written to their own stream (block) per chip.
//!
//! - A CMT miss reads the lpn's translation page (`translation_reads`) unless the GTD
//!   says it was never written. The CMT is plain LRU.
//! - Evicting a dirty entry rewrites its translation page (read-modify-write:
//!   `translation_reads` + `translation_writes`), folding in every dirty cached entry
//!   of that page, which become clean.
//! - GC of a data block: moved lpns that are cached are updated in the CMT (dirty);
//!   the rest are grouped per translation page (`pending`) and each page is rewritten
//!   once when GC is over (DFTL's batch update, `Remap::settle`: after a foreground
//!   GC before the host write goes on, after a background one at the end of the host
//!   operation), on the chip GC ran on while it has room, else striped. Moves made by
//!   GC that the batch's own writes start, to pages the batch has passed, wait for the
//!   next one. Not before the victim's erase: the batch is up to a block's worth of
//!   pages, and during a collection no GC may make room for it (on a full device every
//!   chip would be down to the free block its own GC needs). GC of a translation page
//!   moves it and updates the GTD.
//!
//! Invariant: the mapping of `lpn` is its CMT entry if cached, else its newest pending
//! GC move if any, else the entry in the GTD's translation page (unmapped if the GTD
//! has none); and it is always the lpn's newest whole data page on flash by (seq, gen)
//! (NONE if that is a tombstone or there is none) — the same invariant as the page FTL.
//!
//! Rebuild after a power cut ([`Dftl::open`]): the OOB scan of the page store is
//! authoritative for data (newest whole data page or tombstone per lpn, exactly as for
//! the page FTL), so dirty CMT entries lost with the power are recovered from data
//! OOB. The GTD is rebuilt from the newest whole copy of each translation page (its OOB
//! names the translation page number and sequence number; a torn one fails its CRC).
//! Each translation page is then compared with the scanned map and every one that
//! disagrees is rewritten, so the invariant holds again with an empty CMT. Only at
//! mount time does the FTL hold the whole map in RAM. Counters start at zero after
//! `open`; the scan and rewrites show in the returned time.

use super::pagelog::{Owner, PageLog, Place, ProgramOptions, Remap, Stream, NONE};
use super::{device_accessors, Ftl, FtlConfig, FtlCounters, FtlKind, FtlRead};
use crate::error::Error;
use nand::{Device, OpTiming, Ppn, SimTime};
use std::collections::{BTreeMap, BTreeSet, HashMap};

#[derive(Clone, Copy, Debug)]
struct Cached {
    ppn: u32,
    stamp: u64,
}

/// The mapping state: CMT, GTD and what GC has moved but not yet written.
struct Map {
    logical_pages: u32,
    total_pages: u32,
    /// Entries per translation page.
    per_page: u32,
    capacity: usize,
    cmt: HashMap<u32, Cached>,
    /// LRU order of the CMT: stamp → lpn, oldest first.
    lru: BTreeMap<u64, u32>,
    /// Cached lpns whose entry differs from their translation page, in lpn order so a
    /// page's dirty entries are one range.
    dirty: BTreeSet<u32>,
    clock: u64,
    gtd: Vec<u32>,
    /// GC moves of uncached lpns (lpn, ppn), oldest first, per translation page, not
    /// yet in it: written by `settle` or the page's next write, whichever is first.
    pending: BTreeMap<u32, Vec<(u32, u32)>>,
    /// During `open` only: the scanned map, and the translation pages that disagree.
    recovered: Option<Vec<u32>>,
    stale: BTreeSet<u32>,
}

impl Map {
    fn tvpn(&self, lpn: u32) -> u32 {
        lpn / self.per_page
    }

    fn touch(&mut self, lpn: u32) {
        self.clock += 1;
        let stamp = self.clock;
        if let Some(c) = self.cmt.get_mut(&lpn) {
            self.lru.remove(&c.stamp);
            c.stamp = stamp;
            self.lru.insert(stamp, lpn);
        }
    }

    /// Decodes a translation page's entries, refusing a ppn beyond the device.
    fn decode(&self, t: u32, data: &[u8]) -> Result<Vec<u32>, Error> {
        let entries: Vec<u32> = data
            .chunks_exact(4)
            .take(self.per_page as usize)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        match entries.iter().position(|&p| p != NONE && p >= self.total_pages) {
            Some(i) => Err(Error::CorruptLayout(format!(
                "DFTL translation page {t}: entry {i} names physical page {}, the device has {}",
                entries[i], self.total_pages
            ))),
            None => Ok(entries),
        }
    }

    /// The newest GC move of `lpn` not yet written to its translation page `t`.
    fn pending_move(&self, t: u32, lpn: u32) -> Option<u32> {
        let moves = self.pending.get(&t)?;
        moves.iter().rev().find(|m| m.0 == lpn).map(|m| m.1)
    }

    /// Points the cached entry of `lpn` at `ppn` (dirty) and kills the page it named.
    fn point(&mut self, log: &mut PageLog, lpn: u32, ppn: u32) -> Result<(), Error> {
        let Some(c) = self.cmt.get_mut(&lpn) else {
            // lookup cached it and GC never drops CMT entries.
            return Err(log.poison(Error::NeedsReopen { region: "DFTL".into() }));
        };
        let old = std::mem::replace(&mut c.ppn, ppn);
        self.dirty.insert(lpn);
        if old != NONE {
            // The newer page (or tombstone) of `lpn` is durable: `old` is garbage for good.
            log.retire(Ppn(old));
        }
        Ok(())
    }

    /// The entries translation page `t` should hold according to the scanned map.
    fn recovered_entries(&self, t: u32) -> Option<Vec<u32>> {
        let r = self.recovered.as_ref()?;
        let start = (t * self.per_page) as usize;
        let end = (start + self.per_page as usize).min(self.logical_pages as usize);
        let mut entries = r[start..end].to_vec();
        entries.resize(self.per_page as usize, NONE);
        Some(entries)
    }
}

impl Remap for Map {
    fn moved(&mut self, owner: Owner, _src: Ppn, dst: Ppn) {
        match owner {
            Owner::Data(lpn) => {
                let t = self.tvpn(lpn);
                if let Some(r) = self.recovered.as_mut() {
                    r[lpn as usize] = dst.0;
                    self.stale.insert(t);
                } else if let Some(c) = self.cmt.get_mut(&lpn) {
                    c.ppn = dst.0;
                    self.dirty.insert(lpn);
                } else {
                    self.pending.entry(t).or_default().push((lpn, dst.0));
                }
            }
            Owner::Translation(t) => self.gtd[t as usize] = dst.0,
            // DFTL writes no remap records.
            Owner::Tombstone(_) | Owner::Remap => {}
        }
    }

    fn settle(&mut self, log: &mut PageLog, dev: &mut Device, chip: usize, mut now: SimTime) -> Result<SimTime, Error> {
        // One pass in page order. GC that these writes start adds moves; those to pages
        // behind the pass wait for the next settle. Draining them here instead need not
        // end: under uniform writes a collection's batch is nearly what it reclaims.
        let mut next = 0;
        while let Some(&t) = self.pending.range(next..).next().map(|(t, _)| t) {
            now = write_translation(self, log, dev, t, Place::Near(chip), now)?;
            next = t + 1;
        }
        Ok(now)
    }
}

/// Writes a new copy of translation page `t`: the current copy (read from flash) with
/// its pending GC moves and then every dirty cached entry of the page applied; those
/// become written and clean. The page is allocated first, so GC that allocation runs
/// is reflected in what is written. Returns when the program ends.
fn write_translation(
    map: &mut Map,
    log: &mut PageLog,
    dev: &mut Device,
    t: u32,
    place: Place,
    now: SimTime,
) -> Result<SimTime, Error> {
    let (ppn, mut ready) = log.allocate(dev, map, Stream::Translation, place, now)?;
    let entries = match map.recovered_entries(t) {
        Some(entries) => entries,
        None => {
            let current = map.gtd[t as usize];
            let mut entries = if current == NONE {
                vec![NONE; map.per_page as usize]
            } else {
                let read = log.read(dev, Ppn(current), ready)?;
                ready = read.timing.end_ns;
                log.counters.translation_reads += 1;
                let entries = map.decode(t, read.data);
                entries.map_err(|e| log.poison(e))?
            };
            let base = t * map.per_page;
            for (lpn, p) in map.pending.remove(&t).unwrap_or_default() {
                entries[(lpn - base) as usize] = p;
            }
            let end = base + map.per_page;
            while let Some(lpn) = map.dirty.range(base..end).next().copied() {
                map.dirty.remove(&lpn);
                if let Some(c) = map.cmt.get(&lpn) {
                    entries[(lpn - base) as usize] = c.ppn;
                }
            }
            entries
        }
    };
    let mut bytes = vec![0xFF; log.page_bytes()];
    for (chunk, e) in bytes.chunks_exact_mut(4).zip(&entries) {
        chunk.copy_from_slice(&e.to_le_bytes());
    }
    let timing = log.program(dev, ppn, Owner::Translation(t), &bytes, ready)?;
    log.counters.translation_writes += 1;
    let old = std::mem::replace(&mut map.gtd[t as usize], ppn.0);
    if old != NONE {
        log.retire(Ppn(old));
    }
    Ok(timing.end_ns)
}

/// A DFTL over a whole device.
pub struct Dftl {
    dev: Device,
    log: PageLog,
    map: Map,
}

/// (logical pages, translation pages) of a DFTL on `dev`: translation pages take
/// physical space beside the data.
fn layout(dev: &Device, config: &FtlConfig) -> Result<(u32, u32, u32), Error> {
    if config.cmt_entries == 0 {
        return Err(Error::Config("DFTL: the cached mapping table needs at least 1 entry".into()));
    }
    if !dev.storage().keeps_data() {
        return Err(Error::Config(
            "DFTL: a metadata-only device keeps no bytes, so translation pages cannot be read back".into(),
        ));
    }
    let capacity = PageLog::capacity("DFTL", dev.geometry(), config.over_provisioning, &config.gc, 3)?;
    let per_page = dev.geometry().page_bytes / 4;
    if per_page == 0 {
        return Err(Error::Config("DFTL: pages under 4 bytes cannot hold a mapping entry".into()));
    }
    let mut logical = capacity - capacity.div_ceil(per_page as u64 + 1);
    while logical + logical.div_ceil(per_page as u64) > capacity {
        logical -= 1;
    }
    if logical == 0 {
        return Err(Error::Config("DFTL: no logical capacity left beside the translation pages".into()));
    }
    Ok((logical as u32, logical.div_ceil(per_page as u64) as u32, per_page))
}

impl Dftl {
    /// A fresh DFTL over the device: every block erased, nothing mapped, no
    /// translation page written yet.
    pub fn format(mut dev: Device, config: &FtlConfig) -> Result<Dftl, Error> {
        let (logical, tpages, per_page) = layout(&dev, config)?;
        let log = PageLog::format("DFTL", &mut dev, config.gc.clone(), logical, 0)?;
        let map = Dftl::map(&dev, config, logical, per_page, vec![NONE; tpages as usize], None);
        Ok(Dftl { dev, log, map })
    }

    /// Rebuilds from flash from `now` (see the module comment); returns the FTL and
    /// when the scan and the translation page rewrites finished.
    pub fn open(dev: Device, config: &FtlConfig, now: SimTime) -> Result<(Dftl, SimTime), Error> {
        Dftl::open_or_keep(dev, config, now).map_err(|failed| failed.0)
    }

    /// As [`Dftl::open`], but a failure hands the device back: the mount rewrites
    /// translation pages, so a power cut can land in it, and the caller powers on and
    /// opens again.
    pub fn open_or_keep(
        mut dev: Device,
        config: &FtlConfig,
        now: SimTime,
    ) -> Result<(Dftl, SimTime), Box<(Error, Device)>> {
        match Dftl::mount(&mut dev, config, now) {
            Ok((log, map, done)) => Ok((Dftl { dev, log, map }, done)),
            Err(e) => Err(Box::new((e, dev))),
        }
    }

    fn mount(dev: &mut Device, config: &FtlConfig, now: SimTime) -> Result<(PageLog, Map, SimTime), Error> {
        let (logical, tpages, per_page) = layout(dev, config)?;
        let (mut log, scan) = PageLog::rebuild("DFTL", dev, config.gc.clone(), logical, tpages, now)?;
        let mut map = Dftl::map(dev, config, logical, per_page, scan.translation, Some(scan.data));
        for t in 0..tpages {
            let on_flash = match map.gtd[t as usize] {
                NONE => Ok(vec![NONE; per_page as usize]),
                // Read (and timed) by the scan's verification.
                ppn => map.decode(t, dev.peek(Ppn(ppn)).0),
            };
            if on_flash.ok() != map.recovered_entries(t) {
                map.stale.insert(t);
            }
        }
        let mut done = scan.done;
        // GC during the rewrites can make pages stale again; bounded all the same.
        let mut budget = 4 * tpages as u64 + 1024;
        while let Some(t) = map.stale.pop_first() {
            if budget == 0 {
                return Err(Error::Config("DFTL: translation page rewrites at mount did not converge".into()));
            }
            budget -= 1;
            done = write_translation(&mut map, &mut log, dev, t, Place::Striped, done)?;
        }
        map.recovered = None;
        log.counters = Default::default();
        Ok((log, map, done))
    }

    fn map(
        dev: &Device,
        config: &FtlConfig,
        logical: u32,
        per_page: u32,
        gtd: Vec<u32>,
        recovered: Option<Vec<u32>>,
    ) -> Map {
        Map {
            logical_pages: logical,
            total_pages: dev.geometry().total_pages(),
            per_page,
            capacity: config.cmt_entries as usize,
            cmt: HashMap::new(),
            lru: BTreeMap::new(),
            dirty: BTreeSet::new(),
            clock: 0,
            gtd,
            pending: BTreeMap::new(),
            recovered,
            stale: BTreeSet::new(),
        }
    }

    /// The lpn's mapping, cached in the CMT (most recently used) when this returns;
    /// a miss may evict (writing a translation page) and read one, unless a pending GC
    /// move answers it. Returns the mapping and when it is known.
    fn lookup(&mut self, lpn: u32, now: SimTime) -> Result<(u32, SimTime), Error> {
        if let Some(c) = self.map.cmt.get(&lpn) {
            let ppn = c.ppn;
            self.map.touch(lpn);
            return Ok((ppn, now));
        }
        let mut t = now;
        while self.map.cmt.len() >= self.map.capacity {
            let Some((&stamp, &victim)) = self.map.lru.first_key_value() else { break };
            if self.map.dirty.contains(&victim) {
                let tvpn = self.map.tvpn(victim);
                t = write_translation(&mut self.map, &mut self.log, &mut self.dev, tvpn, Place::Striped, t)?;
            }
            self.map.lru.remove(&stamp);
            self.map.cmt.remove(&victim);
        }
        let tvpn = self.map.tvpn(lpn);
        let pending = self.map.pending_move(tvpn, lpn);
        let ppn = match (pending, self.map.gtd[tvpn as usize]) {
            (Some(moved), _) => moved,
            (None, NONE) => NONE,
            (None, tp) => {
                let read = self.log.read(&mut self.dev, Ppn(tp), t)?;
                t = read.timing.end_ns;
                let decoded = self.map.decode(tvpn, read.data);
                self.log.counters.translation_reads += 1;
                let entries = decoded.map_err(|e| self.log.poison(e))?;
                entries[(lpn % self.map.per_page) as usize]
            }
        };
        self.map.clock += 1;
        let stamp = self.map.clock;
        self.map.cmt.insert(lpn, Cached { ppn, stamp });
        self.map.lru.insert(stamp, lpn);
        Ok((ppn, t))
    }
}

impl Ftl for Dftl {
    fn kind(&self) -> FtlKind {
        FtlKind::Dftl
    }
    fn logical_pages(&self) -> u32 {
        self.log.logical_pages()
    }
    device_accessors!(dev);

    fn read(&mut self, lpn: u32, now: SimTime) -> Result<Option<FtlRead<'_>>, Error> {
        self.log.check_lpn(lpn)?;
        let (ppn, t) = self.lookup(lpn, now)?;
        Ok(self.log.host_read(&mut self.dev, ppn, t)?.map(FtlRead::from))
    }

    fn write(&mut self, lpn: u32, data: &[u8], now: SimTime) -> Result<OpTiming, Error> {
        self.log.check_lpn(lpn)?;
        super::check_payload(true, data, self.log.page_bytes())?;
        let (_, t) = self.lookup(lpn, now)?;
        let options = ProgramOptions::default();
        let (ppn, timing) = self.log.host_program(&mut self.dev, &mut self.map, Owner::Data(lpn), data, options, t)?;
        self.map.point(&mut self.log, lpn, ppn.0)?;
        self.log.host_done(&mut self.dev, &mut self.map, ppn, timing.end_ns)?;
        Ok(timing)
    }

    fn trim(&mut self, lpn: u32, now: SimTime) -> Result<Option<OpTiming>, Error> {
        self.log.check_lpn(lpn)?;
        let (old, t) = self.lookup(lpn, now)?;
        self.log.host_trim(&mut self.dev, &mut self.map, lpn, old, t, |map, log| map.point(log, lpn, NONE))
    }

    fn counters(&self) -> FtlCounters {
        self.log.counters
    }

    fn mapping_bytes(&self) -> u64 {
        use crate::heap;
        let m = &self.map;
        self.log.mapping_bytes()
            + heap::map(&m.cmt)
            + heap::btree_map(&m.lru)
            + heap::btree_set(&m.dirty)
            + heap::vec(&m.gtd)
            + heap::btree_map_with(&m.pending, heap::vec)
            + m.recovered.as_ref().map_or(0, heap::vec)
            + heap::btree_set(&m.stale)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nand::{CellType, Geometry, Latencies, MemoryStorage};
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// GC that a batch update's own writes start leaves its moves pending (see
    /// [`Remap::settle`]); until the next batch, reads of those lpns must come from the
    /// pending list, not from their translation pages, which name erased pages.
    #[test]
    fn pending_moves_are_read_before_their_translation_page_is_written() {
        let g = Geometry {
            channels: 1,
            chips_per_channel: 1,
            blocks_per_chip: 128,
            pages_per_block: 16,
            page_bytes: 512,
            oob_bytes: 64,
            cell: CellType::Slc,
            nop: 1,
            endurance: 1_000_000,
            latencies: Latencies::mlc_typical(),
        };
        let mut config = FtlConfig::new(FtlKind::Dftl);
        config.cmt_entries = 64;
        let mut ftl = Dftl::format(Device::new(Box::new(MemoryStorage::new(g, true))), &config).unwrap();
        let lpns = ftl.logical_pages();
        let mut model = vec![None; lpns as usize];
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let (mut now, mut checked) = (0, 0);
        for i in 0..40 * lpns {
            let lpn = rng.gen_range(0..lpns);
            now += 1_000;
            ftl.write(lpn, &[i as u8; 512], now).unwrap();
            model[lpn as usize] = Some(i as u8);
            let pending: Vec<u32> = ftl.map.pending.values().flatten().map(|&(lpn, _)| lpn).collect();
            for lpn in pending {
                if ftl.map.cmt.contains_key(&lpn) {
                    continue;
                }
                let got = ftl.read(lpn, now).unwrap().map(|r| r.data[0]);
                assert_eq!(got, model[lpn as usize], "write {i}: pending lpn {lpn}");
                checked += 1;
            }
        }
        assert!(checked > 0, "no write left a move pending: the test checks nothing");
    }
}
