//! `PageDevice`: the one interface the storage engine writes its pages through.
//!
//! A device is a set of named regions, each an array of logical flash pages
//! (`logical_pages(region)` of `page_bytes()` each). A database keeps several regions
//! (`system` with the catalog, `log`, and the data regions `CREATE REGION` adds), so
//! every operation names its region. Implementations: [`crate::Flash`] (NoFTL regions
//! on raw NAND, the IPA paper's path) and [`crate::FtlVolume`] (static partitions of
//! a conventional FTL's block device) and [`crate::ipl::IplStore`] (In-Page Logging).
//!
//! Contract:
//! - `write_pages` writes k ≥ 1 whole consecutive logical pages (one DB page). An
//!   implementation that can make the group atomic under power cuts does (and says so,
//!   `atomic_page_groups`); the others write the pages in order (a cut may leave a
//!   prefix written).
//! - `write_delta` appends bytes in place to a written page. It may be refused with
//!   [`Error::DeltaRefused`]; the caller then writes the page out of place. Nothing is
//!   changed by a refusal.
//! - `write_log` (In-Page Logging devices, `logs_changes()`) logs changed byte ranges
//!   of a page on flash; other devices refuse it with [`Error::DeltaRefused`].
//! - `sync` is the durability point: once it returns, every write that returned before
//!   it survives a power cut. Simulated devices need nothing for that.
//! - Errors other than a refusal may leave the region needing a reopen, as for
//!   [`crate::Region`].
//! - Transactions (devices over an FTL with transactions, NoLgn-FTL; the others refuse
//!   with [`Error::NotTransactional`]): after [`PageDevice::start_transactions`] every
//!   write and trim belongs to the device's open transaction, which the first write
//!   after a commit or abort starts. Its writes are visible to reads at once and undone
//!   by a power cut until [`PageDevice::commit_tx`] returns; [`PageDevice::abort_tx`]
//!   undoes them. The writes after [`PageDevice::prepare_commit_tx`] are the last of
//!   the transaction: the device may hold the latest of them back (reads still see it)
//!   to write it, marked as the end, at the commit.

use crate::error::Error;
use crate::ftl::FtlCounters;
use crate::region::{Occupancy, RegionCounters, RegionRead, WearStats};
use crate::spec::RegionSpec;
use crate::{Flash, RegionId};
use nand::{Device, OpTiming, SimTime, SyncPoint};
use serde::Serialize;

/// Regions of logical flash pages that a storage engine reads and writes.
pub trait PageDevice: Send {
    fn region_count(&self) -> usize;
    fn region_id(&self, name: &str) -> Option<RegionId>;
    fn region_name(&self, region: RegionId) -> &str;
    fn region_spec(&self, region: RegionId) -> &RegionSpec;
    fn logical_pages(&self, region: RegionId) -> u32;
    /// Bytes of one logical page (the flash page).
    fn page_bytes(&self) -> usize;
    /// Whether reads return the bytes written (a metadata-only device does not).
    fn keeps_data(&self) -> bool;
    /// The heap bytes of the store's maps and tables (what it keeps beside the
    /// device's pages), for the bench commands' memory report.
    fn mapping_bytes(&self) -> u64;
    /// Adds a region (`CREATE REGION`) and stores the new layout.
    fn add_region(&mut self, spec: RegionSpec, now: SimTime) -> Result<RegionId, Error>;
    /// The page with its appends applied, or `None` if it was never written or trimmed.
    fn read(&mut self, region: RegionId, lpn: u32, now: SimTime) -> Result<Option<RegionRead<'_>>, Error>;
    /// Writes `data` (whole pages) to `first_lpn`, `first_lpn + 1`, …; the timing spans
    /// the first start to the last end.
    fn write_pages(&mut self, region: RegionId, first_lpn: u32, data: &[u8], now: SimTime) -> Result<OpTiming, Error>;
    /// Appends `bytes` at `offset` of a written page, or refuses ([`Error::DeltaRefused`]).
    fn write_delta(
        &mut self,
        region: RegionId,
        lpn: u32,
        offset: usize,
        bytes: &[u8],
        now: SimTime,
    ) -> Result<OpTiming, Error>;
    /// Whether the device takes changes to a page on flash as log records
    /// ([`PageDevice::write_log`]) instead of page writes (In-Page Logging).
    fn logs_changes(&self) -> bool {
        false
    }
    /// Whether a device that logs changes takes a page's write as the records of its
    /// updates since its last write, in order, rather than its net change
    /// ([`crate::IplConfig::update_records`]).
    fn logs_updates(&self) -> bool {
        false
    }
    /// Logs changed byte ranges `(offset from the start of first_lpn, bytes)` of a page
    /// on flash as its change records; the page itself is not written. Devices that do
    /// not log refuse ([`Error::DeltaRefused`]) and change nothing.
    fn write_log(
        &mut self,
        region: RegionId,
        first_lpn: u32,
        ranges: &[(usize, &[u8])],
        now: SimTime,
    ) -> Result<OpTiming, Error> {
        let _ = (region, ranges, now);
        Err(Error::DeltaRefused { lpn: first_lpn, reason: crate::DeltaRefusal::NoInPlaceAppend })
    }
    /// Forgets a page; `None` when nothing had to be written to make that durable.
    fn trim(&mut self, region: RegionId, lpn: u32, now: SimTime) -> Result<Option<OpTiming>, Error>;
    /// Whether a `write_pages` of several pages is atomic under power cuts (all parts
    /// old or all new after a cut). Where it is not, a DB page larger than a flash page
    /// can be torn, and the engine must repair it from its log (full-page images) or
    /// refuse the configuration.
    fn atomic_page_groups(&self) -> bool {
        false
    }
    /// Whether the device groups writes into transactions that it makes atomic
    /// ([`PageDevice::start_transactions`]).
    fn transactional(&self) -> bool {
        false
    }
    /// From now on every write and trim belongs to the device's open transaction (the
    /// module comment's contract). Refused by devices without transactions.
    fn start_transactions(&mut self) -> Result<(), Error> {
        Err(not_transactional())
    }
    /// The writes from here to [`PageDevice::commit_tx`] are the transaction's last.
    fn prepare_commit_tx(&mut self) -> Result<(), Error> {
        Err(not_transactional())
    }
    /// Makes the open transaction's writes (and then its trims) durable; returns when
    /// that is done. Nothing to do without an open transaction.
    fn commit_tx(&mut self, now: SimTime) -> Result<SimTime, Error> {
        let _ = now;
        Err(not_transactional())
    }
    /// Undoes the open transaction's writes and drops its trims: reads see the pages as
    /// at its start.
    fn abort_tx(&mut self, now: SimTime) -> Result<(), Error> {
        let _ = now;
        Err(not_transactional())
    }
    /// Makes every write that returned durable as far as the device's sync mode asks at
    /// this kind of point (an image file's fdatasync); returns when that is done.
    fn sync(&mut self, point: SyncPoint, now: SimTime) -> Result<SimTime, Error>;
    /// Host I/O of the region (and, on NoFTL, its GC and wear levelling).
    fn counters(&self, region: RegionId) -> RegionCounters;
    /// Device-wide counters of a conventional FTL underneath (GC, merges, translation
    /// pages); `None` on NoFTL, whose GC is counted per region.
    fn ftl_counters(&self) -> Option<FtlCounters> {
        None
    }
    /// Counters of an In-Page Logging store (log sectors, merges); `None` elsewhere.
    fn ipl_counters(&self) -> Option<IplCounters> {
        None
    }
    /// The In-Page Logging counters of one region (a data region's merges apart from
    /// the log's); `None` elsewhere.
    fn ipl_region_counters(&self, _region: RegionId) -> Option<IplCounters> {
        None
    }
    /// Where the region's pages are; `None` where the device does not know (an FTL
    /// hides its physical pages).
    fn occupancy(&self, region: RegionId) -> Option<Occupancy>;
    /// P/E cycles over the region's blocks; `None` where blocks are not the region's own.
    fn wear(&self, region: RegionId) -> Option<WearStats>;
    /// Chips that hold the region's pages.
    fn chips(&self, region: RegionId) -> &[u32];
    /// The NAND device (geometry, device-wide counters).
    fn device(&self) -> &Device;
    /// Makes an image-backed device's file whole (at close); a no-op in memory.
    fn flush(&mut self) -> Result<(), Error>;
    fn into_device(self: Box<Self>) -> Device;
    /// The implementation, for tools and tests that look beneath the interface (a
    /// NoFTL region's physical mapping).
    fn as_any(&self) -> &dyn std::any::Any;
}

impl dyn PageDevice + '_ {
    /// Every region, in order.
    pub fn region_ids(&self) -> impl Iterator<Item = RegionId> {
        (0..self.region_count()).map(RegionId)
    }
}

impl PageDevice for Flash {
    fn region_count(&self) -> usize {
        self.regions().len()
    }
    fn mapping_bytes(&self) -> u64 {
        Flash::mapping_bytes(self)
    }
    fn region_id(&self, name: &str) -> Option<RegionId> {
        Flash::region_id(self, name)
    }
    fn region_name(&self, region: RegionId) -> &str {
        self.region(region).name()
    }
    fn region_spec(&self, region: RegionId) -> &RegionSpec {
        self.region(region).spec()
    }
    fn logical_pages(&self, region: RegionId) -> u32 {
        self.region(region).logical_pages()
    }
    fn page_bytes(&self) -> usize {
        self.device().geometry().page_bytes as usize
    }
    fn keeps_data(&self) -> bool {
        self.device().storage().keeps_data()
    }
    fn add_region(&mut self, spec: RegionSpec, now: SimTime) -> Result<RegionId, Error> {
        Flash::add_region(self, spec, now)
    }
    fn read(&mut self, region: RegionId, lpn: u32, now: SimTime) -> Result<Option<RegionRead<'_>>, Error> {
        Flash::read(self, region, lpn, now)
    }
    fn write_pages(&mut self, region: RegionId, first_lpn: u32, data: &[u8], now: SimTime) -> Result<OpTiming, Error> {
        // One atomic group: after a power cut all parts are old or all are new.
        self.write_group(region, first_lpn, data, now)
    }
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
        Flash::write_delta(self, region, lpn, offset, bytes, now)
    }
    fn trim(&mut self, region: RegionId, lpn: u32, now: SimTime) -> Result<Option<OpTiming>, Error> {
        Flash::trim(self, region, lpn, now)
    }
    fn sync(&mut self, point: SyncPoint, now: SimTime) -> Result<SimTime, Error> {
        // A program is durable on the simulated device when it returns; an image file
        // written through needs its fdatasync (by its sync mode), not simulated time.
        self.device.storage_mut().sync(point)?;
        Ok(now)
    }
    fn counters(&self, region: RegionId) -> RegionCounters {
        self.region(region).counters()
    }
    fn occupancy(&self, region: RegionId) -> Option<Occupancy> {
        Some(Flash::occupancy(self, region))
    }
    fn wear(&self, region: RegionId) -> Option<WearStats> {
        Some(self.region(region).wear())
    }
    fn chips(&self, region: RegionId) -> &[u32] {
        self.region(region).chips()
    }
    fn device(&self) -> &Device {
        Flash::device(self)
    }
    fn flush(&mut self) -> Result<(), Error> {
        Flash::flush(self)
    }
    fn into_device(self: Box<Self>) -> Device {
        Flash::into_device(*self)
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// The refusal of a transactional call by a device without transactions.
fn not_transactional() -> Error {
    Error::Config(
        "this page device has no transactions (NoFTL regions, In-Page Logging and FTLs other than nolgn); \
         they need NoLgn-FTL (--storage ftl:nolgn)"
            .into(),
    )
}

/// Writes `data` page by page with `write(lpn, page)` from `first_lpn` on; the timing
/// runs from the first start to the last end. `data` must be whole pages.
pub(crate) fn write_each(
    data: &[u8],
    page_bytes: usize,
    first_lpn: u32,
    now: SimTime,
    mut write: impl FnMut(u32, &[u8]) -> Result<OpTiming, Error>,
) -> Result<OpTiming, Error> {
    if data.is_empty() || !data.len().is_multiple_of(page_bytes) {
        return Err(Error::WrongPayloadSize { got: data.len(), expected: page_bytes });
    }
    let mut span = OpTiming { start_ns: SimTime::MAX, end_ns: now };
    for (lpn, page) in (first_lpn..).zip(data.chunks(page_bytes)) {
        let t = write(lpn, page)?;
        span.start_ns = span.start_ns.min(t.start_ns);
        span.end_ns = span.end_ns.max(t.end_ns);
    }
    Ok(span)
}

/// What an In-Page Logging store did, per region (and summed over regions): the counts
/// a [`PageDevice`] on IPL reports beside the flash counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct IplCounters {
    /// Data flash pages read by host reads.
    pub page_reads: u64,
    /// Log sectors applied by host reads (the IPL read overhead)…
    pub log_sector_reads: u64,
    /// …and the log flash pages read to get them.
    pub log_page_reads: u64,
    /// Data flash pages programmed by first writes.
    pub page_writes: u64,
    pub log_sector_writes: u64,
    pub log_records: u64,
    pub merges: u64,
    /// Flash pages (data and log) read by merges.
    pub merge_page_reads: u64,
    pub merge_page_writes: u64,
    /// Blocks erased (merges and reuse of units left dirty by a power cut).
    pub erases: u64,
}

impl IplCounters {
    pub fn add(&mut self, o: &IplCounters) {
        self.combine(o, |a, b| a + b);
    }

    /// The counts since `earlier`.
    pub fn since(&self, earlier: &IplCounters) -> IplCounters {
        let mut out = *self;
        out.combine(earlier, |a, b| a - b);
        out
    }

    fn combine(&mut self, o: &IplCounters, f: impl Fn(u64, u64) -> u64) {
        self.page_reads = f(self.page_reads, o.page_reads);
        self.log_sector_reads = f(self.log_sector_reads, o.log_sector_reads);
        self.log_page_reads = f(self.log_page_reads, o.log_page_reads);
        self.page_writes = f(self.page_writes, o.page_writes);
        self.log_sector_writes = f(self.log_sector_writes, o.log_sector_writes);
        self.log_records = f(self.log_records, o.log_records);
        self.merges = f(self.merges, o.merges);
        self.merge_page_reads = f(self.merge_page_reads, o.merge_page_reads);
        self.merge_page_writes = f(self.merge_page_writes, o.merge_page_writes);
        self.erases = f(self.erases, o.erases);
    }
}
