//! Page-level mapping FTL: the whole logical-to-physical map in controller RAM (one
//! u32 per logical page), out-of-place writes striped round-robin over every chip,
//! greedy or cost-benefit GC with foreground and background thresholds, durable trims.
//!
//! The page store ([`super::pagelog`]) does allocation, GC and the OOB format; this
//! module only keeps the map. Invariant: `l2p[lpn]` is the live data page of `lpn`
//! (NONE when unmapped or trimmed), and it is the page the store's rebuild scan finds
//! newest for `lpn`, so after a power cut [`PageFtl::open`] rebuilds the same map from
//! OOB bytes (a torn newest program fails its CRC and the previous copy wins).

use super::pagelog::{Owner, PageLog, Remap, Stream, NONE};
use super::{Ftl, FtlConfig, FtlCounters, FtlKind, FtlRead};
use crate::error::Error;
use nand::{Device, OpTiming, Ppn, SimTime};

/// The map, as the store's GC sees it.
struct Map {
    l2p: Vec<u32>,
}

impl Remap for Map {
    fn moved(&mut self, owner: Owner, dst: Ppn) {
        if let Owner::Data(lpn) = owner {
            self.l2p[lpn as usize] = dst.0;
        }
    }

    fn settle(&mut self, _: &mut PageLog, _: &mut Device, _: usize, now: SimTime) -> Result<SimTime, Error> {
        Ok(now)
    }
}

/// A page-mapping FTL over a whole device.
pub struct PageFtl {
    dev: Device,
    log: PageLog,
    map: Map,
    host_reads: u64,
    host_writes: u64,
    host_trims: u64,
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
        Ok((PageFtl::assemble(dev, log, scan.data), scan.done))
    }

    fn assemble(dev: Device, log: PageLog, l2p: Vec<u32>) -> PageFtl {
        PageFtl { dev, log, map: Map { l2p }, host_reads: 0, host_writes: 0, host_trims: 0 }
    }

    fn check_lpn(&self, lpn: u32) -> Result<(), Error> {
        self.log.check_usable()?;
        super::check_lpn("page", lpn, self.map.l2p.len() as u32)
    }
}

impl Ftl for PageFtl {
    fn kind(&self) -> FtlKind {
        FtlKind::Page
    }
    fn logical_pages(&self) -> u32 {
        self.map.l2p.len() as u32
    }
    fn page_bytes(&self) -> usize {
        self.log.page_bytes()
    }
    fn device(&self) -> &Device {
        &self.dev
    }
    fn device_mut(&mut self) -> &mut Device {
        &mut self.dev
    }
    fn into_device(self: Box<Self>) -> Device {
        self.dev
    }

    fn read(&mut self, lpn: u32, now: SimTime) -> Result<Option<FtlRead<'_>>, Error> {
        self.check_lpn(lpn)?;
        self.host_reads += 1;
        let ppn = self.map.l2p[lpn as usize];
        if ppn == NONE {
            return Ok(None);
        }
        let read = self.log.read(&mut self.dev, Ppn(ppn), now)?;
        Ok(Some(FtlRead { timing: read.timing, data: read.data }))
    }

    fn write(&mut self, lpn: u32, data: &[u8], now: SimTime) -> Result<OpTiming, Error> {
        self.check_lpn(lpn)?;
        super::check_payload(self.log.keeps_data(), data, self.log.page_bytes())?;
        let (ppn, ready) = self.log.allocate(&mut self.dev, &mut self.map, Stream::Host, None, now)?;
        let timing = self.log.program(&mut self.dev, ppn, Owner::Data(lpn), data, ready)?;
        let old = std::mem::replace(&mut self.map.l2p[lpn as usize], ppn.0);
        if old != NONE {
            self.log.kill(Ppn(old));
        }
        self.host_writes += 1;
        let chip = self.log.geometry().chip_of(ppn) as usize;
        self.log.background_gc(&mut self.dev, &mut self.map, chip, timing.end_ns)?;
        Ok(timing)
    }

    fn trim(&mut self, lpn: u32, now: SimTime) -> Result<Option<OpTiming>, Error> {
        self.check_lpn(lpn)?;
        let old = self.map.l2p[lpn as usize];
        if old == NONE {
            return Ok(None);
        }
        let (ppn, ready) = self.log.allocate(&mut self.dev, &mut self.map, Stream::Host, None, now)?;
        let timing = self.log.program(&mut self.dev, ppn, Owner::Tombstone(lpn), &[], ready)?;
        self.map.l2p[lpn as usize] = NONE;
        self.log.kill(Ppn(old));
        self.host_trims += 1;
        let chip = self.log.geometry().chip_of(ppn) as usize;
        self.log.background_gc(&mut self.dev, &mut self.map, chip, timing.end_ns)?;
        Ok(Some(timing))
    }

    fn counters(&self) -> FtlCounters {
        let c = self.log.counters;
        FtlCounters {
            host_reads: self.host_reads,
            host_writes: self.host_writes,
            host_trims: self.host_trims,
            flash_programs: c.flash_programs,
            flash_reads: c.flash_reads,
            gc_page_migrations: c.gc_page_migrations,
            gc_erases: c.gc_erases,
            ..FtlCounters::default()
        }
    }
}
