//! Page-level mapping FTL: the whole logical-to-physical map in controller RAM (one
//! u32 per logical page), out-of-place writes striped round-robin over every chip,
//! greedy or cost-benefit GC with foreground and background thresholds, durable trims.
//!
//! The page store (`super::pagelog`) does allocation, GC and the OOB format; this
//! module only keeps the map. Invariant: `l2p[lpn]` is the live data page of `lpn`
//! (NONE when unmapped or trimmed), and it is the page the store's rebuild scan finds
//! newest for `lpn`, so after a power cut [`PageFtl::open`] rebuilds the same map from
//! OOB bytes (a torn newest program fails its CRC and the previous copy wins).
//!
//! Remapping ([`Ftl::remap`], SW-WAL's copy-free checkpoint): a remapped lpn shares the
//! flash page of its source (sharing, not moving: the source still reads it, as a WAL
//! read after a partial checkpoint needs). A shared page stays live until every lpn
//! mapped to it has moved on (`sharers`); GC moves it once and repoints them all. Each
//! batch of remaps is made durable by one remap record page per up to ~340 pairs
//! (format in `pagelog`); a record stays live while some lpn still reads through one of
//! its entries. Remapped lpns come back from the rebuild scan because a record entry is
//! a candidate of its lpn like a data page (newest wins); a torn record fails its CRC,
//! so each of its lpns keeps its old page. Tagged writes ([`Ftl::write_tagged`]) put a
//! caller's 24 bytes in the OOB header (version 2).

use super::pagelog::{self, Owner, PageLog, ProgramOptions, Remap, NONE};
use super::{device_accessors, Ftl, FtlConfig, FtlCounters, FtlKind, FtlRead, TAG_BYTES};
use crate::error::Error;
use crate::WriteHint;
use nand::{Device, OpTiming, Ppn, SimTime};
use prefetch_index::prefetch_index;
use std::collections::{HashMap, HashSet};

/// The map, as the store's GC sees it.
struct Map {
    l2p: Vec<u32>,
    /// Data ppn → every lpn mapped to it, for pages a remap shared. Invariant: a live
    /// data page absent here is mapped by exactly the lpn its OOB names.
    sharers: HashMap<u32, Vec<u32>>,
    /// lpn → the remap record whose entry it reads through.
    via: HashMap<u32, u32>,
    /// Remap record ppn → the lpns reading through it; the record dies with the last.
    record_users: HashMap<u32, Vec<u32>>,
}

impl Remap for Map {
    fn moved(&mut self, owner: Owner, src: Ppn, dst: Ppn) {
        match owner {
            // Only remaps share pages: most runs have none, and skip the hashing.
            Owner::Data(lpn) if self.sharers.is_empty() => self.l2p[lpn as usize] = dst.0,
            Owner::Data(lpn) => match self.sharers.remove(&src.0) {
                Some(lpns) => {
                    for &l in &lpns {
                        self.l2p[l as usize] = dst.0;
                    }
                    self.sharers.insert(dst.0, lpns);
                }
                None => self.l2p[lpn as usize] = dst.0,
            },
            Owner::Remap => {
                if let Some(lpns) = self.record_users.remove(&src.0) {
                    for &l in &lpns {
                        self.via.insert(l, dst.0);
                    }
                    self.record_users.insert(dst.0, lpns);
                }
            }
            Owner::Tombstone(_) | Owner::Translation(_) => {}
        }
    }

    fn settle(&mut self, _: &mut PageLog, _: &mut Device, _: usize, now: SimTime) -> Result<SimTime, Error> {
        Ok(now)
    }

    fn prefetch_moved(&self, owner: Owner) {
        if let Owner::Data(lpn) = owner {
            prefetch_index(&self.l2p, lpn as usize);
        }
    }
}

impl Map {
    /// Unmaps `lpn`: its page dies for good (retired: a newer page or tombstone of
    /// `lpn` is already durable) unless another lpn shares it, and the remap record it
    /// read through dies when no lpn reads through it any more (killed only: rebuilds
    /// read every record on flash).
    fn unmap(&mut self, log: &mut PageLog, lpn: u32) {
        let old = std::mem::replace(&mut self.l2p[lpn as usize], NONE);
        if old != NONE {
            match self.sharers.get_mut(&old) {
                Some(lpns) => {
                    lpns.retain(|&l| l != lpn);
                    if lpns.is_empty() {
                        self.sharers.remove(&old);
                        log.retire(Ppn(old));
                    }
                }
                None => log.retire(Ppn(old)),
            }
        }
        if let Some(record) = self.via.remove(&lpn) {
            if let Some(users) = self.record_users.get_mut(&record) {
                users.retain(|&l| l != lpn);
                if users.is_empty() {
                    self.record_users.remove(&record);
                    log.kill(Ppn(record));
                }
            }
        }
    }
}

/// A page-mapping FTL over a whole device.
pub struct PageFtl {
    dev: Device,
    log: PageLog,
    map: Map,
}

/// Logical pages a page-mapping FTL offers on `dev` with `config`.
fn logical_pages(dev: &Device, config: &FtlConfig) -> Result<u32, Error> {
    Ok(PageLog::capacity("page", dev.geometry(), config.over_provisioning, &config.gc, 2)? as u32)
}

impl PageFtl {
    /// A fresh FTL over the device: every block erased, nothing mapped.
    pub fn format(mut dev: Device, config: &FtlConfig) -> Result<PageFtl, Error> {
        let logical = logical_pages(&dev, config)?;
        let log = PageLog::format("page", &mut dev, config.gc.clone(), logical, 0)?;
        Ok(PageFtl::assemble(dev, log, vec![NONE; logical as usize]))
    }

    /// Rebuilds the map by an OOB scan from `now`; returns the FTL and when the scan ended.
    pub fn open(mut dev: Device, config: &FtlConfig, now: SimTime) -> Result<(PageFtl, SimTime), Error> {
        let logical = logical_pages(&dev, config)?;
        let (log, scan) = PageLog::rebuild("page", &mut dev, config.gc.clone(), logical, 0, now)?;
        let mut ftl = PageFtl::assemble(dev, log, scan.data);
        // Pages shared by remaps, and the records remapped lpns read through.
        let mut by_ppn: HashMap<u32, Vec<u32>> = HashMap::new();
        for (lpn, &ppn) in ftl.map.l2p.iter().enumerate() {
            if ppn != NONE {
                by_ppn.entry(ppn).or_default().push(lpn as u32);
            }
        }
        for (ppn, lpns) in by_ppn {
            if lpns.len() > 1 || ftl.log.owner_of(Ppn(ppn)) != Some(Owner::Data(lpns[0])) {
                ftl.map.sharers.insert(ppn, lpns);
            }
        }
        for (lpn, record) in scan.via {
            ftl.map.via.insert(lpn, record);
            ftl.map.record_users.entry(record).or_default().push(lpn);
        }
        Ok((ftl, scan.done))
    }

    fn assemble(dev: Device, log: PageLog, l2p: Vec<u32>) -> PageFtl {
        let map = Map { l2p, sharers: HashMap::new(), via: HashMap::new(), record_users: HashMap::new() };
        PageFtl { dev, log, map }
    }

    /// Writes a page (with a tag in its OOB, or not) and unmaps what `lpn` had.
    fn write_page(
        &mut self,
        lpn: u32,
        data: &[u8],
        tag: Option<&[u8; TAG_BYTES]>,
        now: SimTime,
    ) -> Result<OpTiming, Error> {
        self.log.check_lpn(lpn)?;
        super::check_payload(self.log.keeps_data(), data, self.log.page_bytes())?;
        let options = ProgramOptions { tag, ..Default::default() };
        let (ppn, timing) =
            self.log.host_program(&mut self.dev, &mut self.map, Owner::Data(lpn), data, options, now)?;
        self.map.unmap(&mut self.log, lpn);
        self.map.l2p[lpn as usize] = ppn.0;
        self.log.host_done(&mut self.dev, &mut self.map, ppn, timing.end_ns)?;
        Ok(timing)
    }

    /// Refuses what tags and remaps need: page bytes on the device and OOB room.
    fn check_extensions(&self, what: &str) -> Result<(), Error> {
        let oob = self.log.geometry().oob_bytes as usize;
        if !self.log.keeps_data() || oob < pagelog::TAGGED_OOB_BYTES {
            return Err(Error::Config(format!(
                "page FTL: {what} needs a device that keeps page data and an OOB of at least {} bytes (this one: {oob} bytes{})",
                pagelog::TAGGED_OOB_BYTES,
                if self.log.keeps_data() { "" } else { ", metadata only" }
            )));
        }
        Ok(())
    }

    /// Refuses a remap batch that is not a set of independent pairs.
    fn check_pairs(&self, pairs: &[(u32, u32)]) -> Result<(), Error> {
        let dsts: HashSet<u32> = pairs.iter().map(|p| p.0).collect();
        if dsts.len() != pairs.len() {
            return Err(Error::Config("page FTL remap: a destination logical page appears twice in one batch".into()));
        }
        for &(dst, src) in pairs {
            self.log.check_lpn(dst)?;
            self.log.check_lpn(src)?;
            if dsts.contains(&src) {
                return Err(Error::Config(format!(
                    "page FTL remap: logical page {src} is both a source and a destination in one batch"
                )));
            }
            if self.map.l2p[src as usize] == NONE {
                return Err(Error::Config(format!(
                    "page FTL remap: source logical page {src} (for {dst}) is not mapped"
                )));
            }
        }
        Ok(())
    }

    /// One remap record for `pairs` (at most a record's capacity), then the map. The
    /// sources' OOB reads are issued together (each chip serves its own in turn), and
    /// the record is programmed once the last has ended.
    fn remap_batch(&mut self, pairs: &[(u32, u32)], now: SimTime) -> Result<OpTiming, Error> {
        let mut t = now;
        let mut entries = Vec::with_capacity(pairs.len());
        for &(dst, src) in pairs {
            // The entry names its target by seq, which GC copies keep.
            let ppn = Ppn(self.map.l2p[src as usize]);
            let (timing, oob) = self.dev.read_oob(ppn, now).map_err(|e| self.log.device_error(e))?;
            t = t.max(timing.end_ns);
            let Some(h) = pagelog::Header::decode(oob) else {
                return Err(self.log.poison(Error::NeedsReopen { region: "page FTL".into() }));
            };
            self.log.counters.flash_reads += 1;
            entries.push((dst, h.seq));
        }
        let record = pagelog::encode_record(&entries, self.log.page_bytes());
        let options = ProgramOptions::default();
        let (ppn, timing) = self.log.host_program(&mut self.dev, &mut self.map, Owner::Remap, &record, options, t)?;
        for &(dst, src) in pairs {
            // Read after the allocation: its GC may have moved the source's page.
            let target = self.map.l2p[src as usize];
            self.map.unmap(&mut self.log, dst);
            self.map.sharers.entry(target).or_insert_with(|| vec![src]).push(dst);
            self.map.l2p[dst as usize] = target;
            self.map.via.insert(dst, ppn.0);
            self.map.record_users.entry(ppn.0).or_default().push(dst);
        }
        self.log.counters.remaps += pairs.len() as u64;
        self.log.counters.remap_records += 1;
        self.log.host_done(&mut self.dev, &mut self.map, ppn, timing.end_ns)?;
        Ok(timing)
    }
}

impl Ftl for PageFtl {
    fn kind(&self) -> FtlKind {
        FtlKind::Page
    }
    fn logical_pages(&self) -> u32 {
        self.log.logical_pages()
    }
    device_accessors!(dev);

    fn read(&mut self, lpn: u32, now: SimTime) -> Result<Option<FtlRead<'_>>, Error> {
        Ok(self.read_tagged(lpn, now)?.map(|(read, _)| read))
    }

    fn write(&mut self, lpn: u32, data: &[u8], now: SimTime) -> Result<OpTiming, Error> {
        self.write_page(lpn, data, None, now)
    }

    fn prefetch_write(&self, lpn: u32, stage: WriteHint) {
        // The map names the page itself: no block-number stage.
        let current = || self.map.l2p.get(lpn as usize).copied().filter(|&p| p != NONE).map(Ppn);
        match stage {
            WriteHint::Map => prefetch_index(&self.map.l2p, lpn as usize),
            WriteHint::Block => {}
            WriteHint::OldCopy => {
                if let Some(ppn) = current() {
                    self.log.prefetch_old_copy(&self.dev, ppn);
                }
            }
            WriteHint::Bucket => {
                if let Some(ppn) = current() {
                    self.log.prefetch_bucket(ppn);
                }
            }
        }
    }

    fn trim(&mut self, lpn: u32, now: SimTime) -> Result<Option<OpTiming>, Error> {
        self.log.check_lpn(lpn)?;
        let old = self.map.l2p[lpn as usize];
        self.log.host_trim(&mut self.dev, &mut self.map, lpn, old, now, |map, log| {
            map.unmap(log, lpn);
            Ok(())
        })
    }

    fn counters(&self) -> FtlCounters {
        self.log.counters
    }

    fn mapping_bytes(&self) -> u64 {
        use crate::heap;
        let m = &self.map;
        self.log.mapping_bytes()
            + heap::vec(&m.l2p)
            + heap::map_with(&m.sharers, heap::vec)
            + heap::map(&m.via)
            + heap::map_with(&m.record_users, heap::vec)
    }

    fn write_tagged(&mut self, lpn: u32, data: &[u8], tag: &[u8; TAG_BYTES], now: SimTime) -> Result<OpTiming, Error> {
        self.check_extensions("a tagged write")?;
        self.write_page(lpn, data, Some(tag), now)
    }

    fn read_tagged(&mut self, lpn: u32, now: SimTime) -> Result<Option<(FtlRead<'_>, Option<[u8; TAG_BYTES]>)>, Error> {
        self.log.check_lpn(lpn)?;
        let Some(read) = self.log.host_read(&mut self.dev, self.map.l2p[lpn as usize], now)? else {
            return Ok(None);
        };
        let tag = pagelog::Header::decode(read.oob).and_then(|h| h.tag);
        Ok(Some((read.into(), tag)))
    }

    fn remap(&mut self, pairs: &[(u32, u32)], now: SimTime) -> Result<Option<OpTiming>, Error> {
        self.check_extensions("remapping")?;
        self.check_pairs(pairs)?;
        let mut done: Option<OpTiming> = None;
        let mut t = now;
        for chunk in pairs.chunks(pagelog::record_capacity(self.log.page_bytes()).max(1)) {
            let timing = self.remap_batch(chunk, t)?;
            t = timing.end_ns;
            done = Some(OpTiming { start_ns: done.map_or(timing.start_ns, |d| d.start_ns), end_ns: timing.end_ns });
        }
        Ok(done)
    }
}
