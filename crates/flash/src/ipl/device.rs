//! [`PageDevice`] over an [`IplStore`]: regions are its partitions, `write_pages` is a
//! first write (or a logged rewrite), `write_log` takes a page's changed byte ranges as
//! log records, and `write_delta` is refused (IPL has no in-place append of the page).
//! The [`super::WAL_REGION`] region is a NoFTL [`crate::Region`]: its calls go to it.

use super::format::Record;
use super::IplStore;
use crate::error::{DeltaRefusal, Error};
use crate::page_device::IplCounters;
use crate::page_device::PageDevice;
use crate::region::{Occupancy, Region, RegionCounters, RegionRead, WearStats};
use crate::spec::RegionSpec;
use crate::RegionId;
use nand::{Device, OpTiming, SimTime, SyncPoint};

impl IplStore {
    /// Logs byte ranges (offsets from the start of `first_lpn`) of pages on flash, one
    /// log group per DB page they touch.
    pub fn write_log_ranges(
        &mut self,
        region: RegionId,
        first_lpn: u32,
        ranges: &[(usize, &[u8])],
        now: SimTime,
    ) -> Result<OpTiming, Error> {
        let f = self.shape.flash_page_bytes;
        let db = self.shape.parts as usize * f;
        self.check_range(region.0, first_lpn, 1)?;
        let mut groups: Vec<(u32, Vec<Record>)> = Vec::new();
        for &(offset, bytes) in ranges {
            let mut at = first_lpn as usize * f + offset;
            let mut rest = bytes;
            while !rest.is_empty() {
                let (db_page, within) = ((at / db) as u32, at % db);
                let take = rest.len().min(db - within);
                let lpn = db_page * self.shape.parts;
                self.check_range(region.0, lpn, self.shape.parts)?;
                self.check_record(region.0, lpn, within, take)?;
                let record = Record::Bytes { offset: within as u32, bytes: rest[..take].to_vec() };
                match groups.iter_mut().find(|(p, _)| *p == db_page) {
                    Some((_, records)) => records.push(record),
                    None => groups.push((db_page, vec![record])),
                }
                at += take;
                rest = &rest[take..];
            }
        }
        let mut span = OpTiming { start_ns: now, end_ns: now };
        for (db_page, mut records) in groups {
            let (lu, d) = self.locate_db(region.0, db_page * self.shape.parts);
            let mut all = std::mem::take(&mut self.lunits[lu].pending[d as usize]);
            all.append(&mut records);
            let t = self.flush_records(region.0, lu, d, all, now)?;
            span.end_ns = span.end_ns.max(t.end_ns);
        }
        self.parts[region.0].counters.host_write_deltas += 1;
        Ok(span)
    }
}

impl PageDevice for IplStore {
    fn region_count(&self) -> usize {
        self.parts.len()
    }
    fn mapping_bytes(&self) -> u64 {
        IplStore::mapping_bytes(self)
    }
    fn region_id(&self, name: &str) -> Option<RegionId> {
        IplStore::region_id(self, name)
    }
    fn region_name(&self, region: RegionId) -> &str {
        &self.parts[region.0].spec.name
    }
    fn region_spec(&self, region: RegionId) -> &RegionSpec {
        &self.parts[region.0].spec
    }
    fn logical_pages(&self, region: RegionId) -> u32 {
        match &self.plain[region.0] {
            Some(r) => r.logical_pages(),
            None => self.logical_pages_of(region.0),
        }
    }
    fn page_bytes(&self) -> usize {
        self.shape.flash_page_bytes
    }
    fn keeps_data(&self) -> bool {
        self.device.storage().keeps_data()
    }
    fn add_region(&mut self, spec: RegionSpec, now: SimTime) -> Result<RegionId, Error> {
        let id = self.place(spec, now)?;
        if let Err(e) = self.save_layout() {
            self.parts.pop();
            self.plain.pop();
            return Err(e);
        }
        Ok(id)
    }
    fn read(&mut self, region: RegionId, lpn: u32, now: SimTime) -> Result<Option<RegionRead<'_>>, Error> {
        if let Some(r) = &mut self.plain[region.0] {
            return r.read(&mut self.device, lpn, now);
        }
        let whole_bytes = self.shape.flash_page_bytes;
        Ok(self.read_lpn(region.0, lpn, now)?.map(|timing| RegionRead {
            timing,
            data: &self.scratch,
            appends: 0,
            torn_tail: false,
            whole_bytes,
        }))
    }
    fn write_pages(&mut self, region: RegionId, first_lpn: u32, data: &[u8], now: SimTime) -> Result<OpTiming, Error> {
        if let Some(r) = &mut self.plain[region.0] {
            // One atomic group, as on a NoFTL device.
            return r.write_group(&mut self.device, first_lpn, data, now);
        }
        self.write_lpns(region.0, first_lpn, data, now)
    }
    /// Plain regions write groups; the data units write a DB page's flash pages as one
    /// group, counted only when whole (docs/safety.md, I2).
    fn atomic_page_groups(&self) -> bool {
        true
    }
    fn write_delta(
        &mut self,
        region: RegionId,
        lpn: u32,
        offset: usize,
        bytes: &[u8],
        now: SimTime,
    ) -> Result<OpTiming, Error> {
        if let Some(r) = &mut self.plain[region.0] {
            return r.write_delta(&mut self.device, lpn, offset, bytes, now);
        }
        self.check_range(region.0, lpn, 1)?;
        Err(Error::DeltaRefused { lpn, reason: DeltaRefusal::NoInPlaceAppend })
    }
    fn logs_changes(&self) -> bool {
        true
    }
    fn logs_updates(&self) -> bool {
        self.config().update_records
    }
    fn write_log(
        &mut self,
        region: RegionId,
        first_lpn: u32,
        ranges: &[(usize, &[u8])],
        now: SimTime,
    ) -> Result<OpTiming, Error> {
        if self.plain[region.0].is_some() {
            return Err(Error::DeltaRefused { lpn: first_lpn, reason: DeltaRefusal::NoInPlaceAppend });
        }
        self.write_log_ranges(region, first_lpn, ranges, now)
    }
    fn trim(&mut self, region: RegionId, lpn: u32, now: SimTime) -> Result<Option<OpTiming>, Error> {
        if let Some(r) = &mut self.plain[region.0] {
            return r.trim(&mut self.device, lpn, now);
        }
        self.trim_lpn(region.0, lpn, now)
    }
    fn sync(&mut self, point: SyncPoint, now: SimTime) -> Result<SimTime, Error> {
        // Programs are durable when they return; an image file may need its fdatasync.
        // Records still in memory are not flushed: the engine's write_log flushes them.
        self.device.storage_mut().sync(point)?;
        Ok(now)
    }
    /// Host I/O of the region; merges show as GC (pages they program, blocks erased).
    fn counters(&self, region: RegionId) -> RegionCounters {
        if let Some(r) = &self.plain[region.0] {
            return r.counters();
        }
        let p = &self.parts[region.0];
        RegionCounters {
            gc_page_migrations: p.ipl.merge_page_writes,
            gc_erases: p.ipl.erases,
            foreground_gc_collections: p.ipl.merges,
            ..p.counters
        }
    }
    fn ipl_counters(&self) -> Option<IplCounters> {
        Some(IplStore::ipl_counters(self))
    }
    fn ipl_region_counters(&self, region: RegionId) -> Option<IplCounters> {
        Some(IplStore::counters(self, region))
    }
    fn occupancy(&self, region: RegionId) -> Option<Occupancy> {
        self.plain[region.0].as_ref().map(|r| r.occupancy(&self.device))
    }
    fn wear(&self, region: RegionId) -> Option<WearStats> {
        self.plain[region.0].as_ref().map(Region::wear)
    }
    fn chips(&self, region: RegionId) -> &[u32] {
        match &self.plain[region.0] {
            Some(r) => r.chips(),
            None => &self.chips,
        }
    }
    fn device(&self) -> &Device {
        &self.device
    }
    fn flush(&mut self) -> Result<(), Error> {
        Ok(self.device.storage_mut().flush()?)
    }
    fn into_device(self: Box<Self>) -> Device {
        self.device
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}
