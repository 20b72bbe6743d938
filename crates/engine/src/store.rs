//! DB pages on a [`PageDevice`]'s regions: fetch with delta-records applied, and the IPA write path
//! (§6.2): a dirty page goes out-of-place with its delta area reset, or as new
//! delta-records appended with `write_delta` to the same physical flash page.
//!
//! A DB page of P bytes spans k = P / flash-page-bytes consecutive logical flash pages
//! of its region; its delta area sits at the end of the last one, which is the only one
//! appended to. Per object (the id in each page header) the store counts reads,
//! out-of-place writes, in-place appends, net changed and gross written bytes.
//!
//! A page's IPA scheme is its object's (after `ALTER … SET IPA`) or its region's. An
//! object may have pages of older schemes until they adopt the new one; the page's own
//! body end (see [`page::body_end`]) says which, and a page whose layout differs from
//! its copy on flash is written out-of-place.

use crate::delta::{self, Changes, Eviction, FlashState, IpaScheme, OutOfPlaceReason};
use crate::error::{Error, Result};
use crate::ipl_log::PageLogs;
use crate::page;
use flash::{PageDevice, RegionId};
use nand::SimTime;
use serde::Serialize;
use std::collections::BTreeMap;

/// A DB page: its region and its number within the region.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PageId {
    pub region: u16,
    pub page: u32,
}

/// I/O of one object (table or index), the IPA paper's per-object metrics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ObjectCounters {
    pub reads: u64,
    pub out_of_place_writes: u64,
    pub in_place_appends: u64,
    /// Delta-records written (an append may carry several).
    pub delta_records: u64,
    /// Appends the flash layer refused (page type, NOP, OOB slots); written out-of-place.
    pub delta_refusals: u64,
    /// Writes of pages on flash sent as their changed byte ranges to an In-Page
    /// Logging device (`PageDevice::write_log`), the page itself not written.
    pub logged_writes: u64,
    /// Changed bytes at each write, against the page as last read or written.
    pub net_changed_bytes: u64,
    /// Out-of-place writes × page size + delta-records × record size (paper §8).
    pub gross_written_bytes: u64,
    /// Writes of pages already on flash by their changed body bytes, header and slot
    /// directory excluded (the IPA paper's "net data" update sizes, Table 1 and
    /// appendix A): bucket 0 counts writes of 0 or 1 byte, bucket k of [2^k, 2^(k+1))
    /// bytes, the last one of 8 KiB or more.
    pub update_size_writes: [u64; UPDATE_SIZE_BUCKETS],
    /// The same writes that changed fewer than [`SMALL_UPDATE_BYTES`] body bytes, by
    /// their exact count (index = bytes): a delta-record's capacity M lies inside the
    /// small buckets, and an 8-byte change (a BIGINT changing sign) is one record at
    /// M = 8 where a [8, 16) bucket cannot say so. Absent from reports while empty.
    #[serde(skip_serializing_if = "all_zero")]
    pub update_size_small: [u64; SMALL_UPDATE_BYTES],
    /// Where the changed bytes of writes of pages already on flash lie: in tuples
    /// (the "net data" of `update_size_writes`), in the page header (LSN, counts, free
    /// space bounds) and in the slot directory. Their sum is those writes' share of
    /// `net_changed_bytes`; they tell what an update changes besides its rows.
    pub update_body_bytes: u64,
    pub update_header_bytes: u64,
    pub update_slot_bytes: u64,
}

/// Buckets of [`ObjectCounters::update_size_writes`].
pub const UPDATE_SIZE_BUCKETS: usize = 14;

/// Changed body bytes below which [`ObjectCounters::update_size_small`] counts writes
/// exactly: the first five buckets, which hold the record sizes M of the schemes the
/// advisor weighs.
pub const SMALL_UPDATE_BYTES: usize = 32;

fn all_zero(counts: &[u64; SMALL_UPDATE_BYTES]) -> bool {
    counts.iter().all(|&c| c == 0)
}

/// The update-size bucket of a write that changed `bytes` bytes.
pub fn update_size_bucket(bytes: u64) -> usize {
    (63 - bytes.max(1).leading_zeros() as usize).min(UPDATE_SIZE_BUCKETS - 1)
}

impl ObjectCounters {
    /// Host writes: out-of-place writes, in-place appends and logged writes.
    pub fn host_writes(&self) -> u64 {
        self.out_of_place_writes + self.in_place_appends + self.logged_writes
    }

    /// DBMS write amplification: gross written bytes / net changed bytes.
    pub fn write_amplification(&self) -> f64 {
        self.gross_written_bytes as f64 / self.net_changed_bytes.max(1) as f64
    }

    pub fn add(&mut self, o: &ObjectCounters) {
        self.combine(o, |a, b| a + b);
    }

    /// The counts since `earlier`.
    pub fn since(&self, earlier: &ObjectCounters) -> ObjectCounters {
        let mut out = *self;
        out.combine(earlier, |a, b| a - b);
        out
    }

    fn combine(&mut self, o: &ObjectCounters, f: impl Fn(u64, u64) -> u64) {
        self.reads = f(self.reads, o.reads);
        self.out_of_place_writes = f(self.out_of_place_writes, o.out_of_place_writes);
        self.in_place_appends = f(self.in_place_appends, o.in_place_appends);
        self.delta_records = f(self.delta_records, o.delta_records);
        self.delta_refusals = f(self.delta_refusals, o.delta_refusals);
        self.logged_writes = f(self.logged_writes, o.logged_writes);
        self.net_changed_bytes = f(self.net_changed_bytes, o.net_changed_bytes);
        self.gross_written_bytes = f(self.gross_written_bytes, o.gross_written_bytes);
        self.update_body_bytes = f(self.update_body_bytes, o.update_body_bytes);
        self.update_header_bytes = f(self.update_header_bytes, o.update_header_bytes);
        self.update_slot_bytes = f(self.update_slot_bytes, o.update_slot_bytes);
        for (a, b) in self.update_size_writes.iter_mut().zip(o.update_size_writes) {
            *a = f(*a, b);
        }
        for (a, b) in self.update_size_small.iter_mut().zip(o.update_size_small) {
            *a = f(*a, b);
        }
    }
}

/// Changed bytes closer than this are logged as one run (a log record's header costs
/// about as much as the bytes between them).
const LOG_RUN_GAP: usize = 8;

/// What a write did, for the buffer pool's frame state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Written {
    pub eviction: Eviction,
    pub done: SimTime,
}

/// The page device with its regions, seen as DB pages.
pub struct PageStore {
    device: Box<dyn PageDevice>,
    page_bytes: usize,
    flash_page_bytes: usize,
    /// IPA scheme per region index.
    schemes: Vec<IpaScheme>,
    /// Objects with schemes of their own: the ones their pages may have, current last.
    layouts: BTreeMap<u32, Vec<IpaScheme>>,
    counters: BTreeMap<u32, ObjectCounters>,
    changes: Changes,
    records: Vec<u8>,
    /// In-Page Logging: each changed page's update records until its write.
    ipl_logs: PageLogs<PageId>,
    /// A page with its update records replayed (the IPL write's scratch).
    replayed: Vec<u8>,
}

impl PageStore {
    /// `page_bytes` must be a multiple of the device's page size.
    pub fn new(device: Box<dyn PageDevice>, page_bytes: usize) -> Result<PageStore> {
        let flash_page_bytes = device.page_bytes();
        PageStore::check_keeps_data(device.as_ref())?;
        if !matches!(page_bytes, 4096 | 8192 | 16384) || !page_bytes.is_multiple_of(flash_page_bytes) {
            return Err(Error::Invalid(format!(
                "DB page size {page_bytes} must be 4, 8 or 16 KiB and a multiple of the {flash_page_bytes}-byte flash page"
            )));
        }
        let schemes = vec![IpaScheme::NONE; device.region_count()];
        Ok(PageStore {
            device,
            page_bytes,
            flash_page_bytes,
            schemes,
            layouts: BTreeMap::new(),
            counters: BTreeMap::new(),
            changes: Changes::default(),
            records: Vec::new(),
            ipl_logs: PageLogs::default(),
            replayed: Vec::new(),
        })
    }

    /// The engine reads page bytes back: a metadata-only device will not do.
    pub fn check_keeps_data(device: &dyn PageDevice) -> Result<()> {
        if !device.keeps_data() {
            return Err(Error::Invalid("the engine needs a device that keeps page data".into()));
        }
        Ok(())
    }

    pub fn device(&self) -> &dyn PageDevice {
        self.device.as_ref()
    }
    pub fn device_mut(&mut self) -> &mut dyn PageDevice {
        self.device.as_mut()
    }
    pub fn into_device(self) -> Box<dyn PageDevice> {
        self.device
    }
    pub fn page_bytes(&self) -> usize {
        self.page_bytes
    }
    fn flash_pages_per_page(&self) -> u32 {
        (self.page_bytes / self.flash_page_bytes) as u32
    }

    /// Sets the IPA scheme of a region.
    pub fn set_scheme(&mut self, region: RegionId, scheme: IpaScheme) -> Result<()> {
        self.check_scheme(scheme)?;
        if self.schemes.len() <= region.0 {
            self.schemes.resize(region.0 + 1, IpaScheme::NONE);
        }
        self.schemes[region.0] = scheme;
        Ok(())
    }

    /// A scheme's delta area must fit in half a flash page (it is appended to one).
    pub fn check_scheme(&self, scheme: IpaScheme) -> Result<()> {
        if scheme.area_bytes() > self.flash_page_bytes / 2 {
            return Err(Error::Invalid(format!(
                "IPA [{scheme}] with V = {} needs a {}-byte delta area; at most half a {}-byte flash page is allowed",
                scheme.v,
                scheme.area_bytes(),
                self.flash_page_bytes
            )));
        }
        Ok(())
    }

    pub fn scheme(&self, region: u16) -> IpaScheme {
        self.schemes[region as usize]
    }

    /// Where the delta area of pages in `region` starts, for objects with no scheme of
    /// their own.
    pub fn body_end(&self, region: u16) -> usize {
        self.page_bytes - self.scheme(region).area_bytes()
    }

    /// Gives an object schemes of its own (`ALTER … SET IPA`): the ones its pages may
    /// have, current last; empty: its region's.
    pub fn set_layouts(&mut self, object: u32, layouts: &[IpaScheme]) {
        if layouts.is_empty() {
            self.layouts.remove(&object);
        } else {
            self.layouts.insert(object, layouts.to_vec());
        }
    }

    /// The scheme new pages of `object` (in `region`) get.
    pub fn object_scheme(&self, object: u32, region: u16) -> IpaScheme {
        self.layouts.get(&object).and_then(|l| l.last().copied()).unwrap_or(self.scheme(region))
    }

    /// Where the delta area of new pages of `object` starts.
    pub fn object_body_end(&self, object: u32, region: u16) -> usize {
        self.page_bytes - self.object_scheme(object, region).area_bytes()
    }

    /// The scheme of a page of `object` whose body ends at `body_end`, if that is one
    /// of the object's layouts.
    fn layout(&self, object: u32, region: u16, body_end: usize) -> Option<IpaScheme> {
        let fits = |s: &IpaScheme| self.page_bytes - s.area_bytes() == body_end;
        match self.layouts.get(&object) {
            Some(l) => l.iter().rev().copied().find(fits),
            None => Some(self.scheme(region)).filter(fits),
        }
    }

    /// [`PageStore::layout`] of a page's header, or [`Error::Corrupt`].
    fn page_layout(&self, pid: PageId, p: &[u8]) -> Result<(IpaScheme, usize)> {
        let body_end = page::body_end(p);
        let scheme = self.layout(page::object(p), pid.region, body_end).ok_or_else(|| {
            Error::Corrupt(format!(
                "region {} page {}: its header puts the delta area at byte {body_end}, which no IPA scheme of object {} does",
                pid.region,
                pid.page,
                page::object(p)
            ))
        })?;
        Ok((scheme, body_end))
    }

    /// DB pages the region can hold.
    pub fn pages_in(&self, region: u16) -> u32 {
        self.device.logical_pages(RegionId(region as usize)) / self.flash_pages_per_page()
    }

    pub fn counters(&self) -> &BTreeMap<u32, ObjectCounters> {
        &self.counters
    }

    fn lpn(&self, pid: PageId, part: u32) -> u32 {
        pid.page * self.flash_pages_per_page() + part
    }

    /// Reads a page's flash pages into `buf`. `None` if it was never written. Returns
    /// the bytes known whole in the last flash page, whether its tail is torn, and when
    /// the last read ends.
    fn read_parts(&mut self, pid: PageId, buf: &mut [u8], now: SimTime) -> Result<Option<(usize, bool, SimTime)>> {
        let region = RegionId(pid.region as usize);
        let mut done = now;
        let mut last = (0, false);
        for part in 0..self.flash_pages_per_page() {
            let lpn = self.lpn(pid, part);
            let Some(read) = self.device.read(region, lpn, now)? else {
                if part == 0 {
                    return Ok(None);
                }
                return Err(Error::Corrupt(format!(
                    "page {} of region {} is missing flash page {part}",
                    pid.page, pid.region
                )));
            };
            let at = part as usize * self.flash_page_bytes;
            buf[at..at + self.flash_page_bytes].copy_from_slice(read.data);
            done = done.max(read.timing.end_ns);
            last = (read.whole_bytes, read.torn_tail);
        }
        Ok(Some((last.0, last.1, done)))
    }

    /// Fetches a page into `buf` with its delta-records applied (§6.2). `None` if the
    /// page was never written. A page that does not parse is [`Error::Corrupt`].
    pub fn fetch(&mut self, pid: PageId, buf: &mut [u8], now: SimTime) -> Result<Option<(FlashState, SimTime)>> {
        self.ipl_logs.forget(pid);
        let Some((whole, torn_tail, done)) = self.read_parts(pid, buf, now)? else { return Ok(None) };
        // The layout as written out-of-place (delta-records keep it).
        let (scheme, body_end) = self.page_layout(pid, buf)?;
        let whole = (self.flash_pages_per_page() as usize - 1) * self.flash_page_bytes + whole;
        let applied = delta::apply_records(scheme, buf, body_end, whole)?;
        page::check(buf, body_end)?;
        if matches!(page::kind(buf), k if k == page::Kind::Leaf as u8 || k == page::Kind::Inner as u8) {
            crate::node::check_entries(buf, body_end)?;
        }
        if page::page_no(buf) != pid.page {
            return Err(Error::Corrupt(format!(
                "region {} page {} holds page {}",
                pid.region,
                pid.page,
                page::page_no(buf)
            )));
        }
        self.counters.entry(page::object(buf)).or_default().reads += 1;
        let state = FlashState { on_flash: true, records: applied.records, sealed: applied.torn || torn_tail };
        Ok(Some((state, done)))
    }

    /// Writes a dirty page by the IPA rule. `page` is the buffer frame, `base` the page
    /// as it was last read or written; both are updated to the new flash state.
    pub fn write(
        &mut self,
        pid: PageId,
        page: &mut [u8],
        base: &mut [u8],
        state: &mut FlashState,
        now: SimTime,
    ) -> Result<Written> {
        let whole = [(0, page.len())];
        self.write_changed(pid, page, base, &whole, state, now)
    }

    /// [`PageStore::write`] of a page whose changes since `base` all lie in the byte
    /// ranges `changed` (sorted, disjoint): only those are compared.
    pub fn write_changed(
        &mut self,
        pid: PageId,
        page: &mut [u8],
        base: &mut [u8],
        changed: &[(usize, usize)],
        state: &mut FlashState,
        now: SimTime,
    ) -> Result<Written> {
        let (scheme, body_end) = self.page_layout(pid, page)?;
        // A page that adopted its object's new scheme leaves its old layout on flash.
        let relayout = state.on_flash && page::body_end(base) != body_end;
        let slots_from = page::free_end(page).min(page::free_end(base)).max(page::HEADER_BYTES);
        let (base_body, page_body) = (&base[..body_end], &page[..body_end]);
        let counts = delta::count_in(base_body, page_body, page::HEADER_BYTES, slots_from, changed);
        let net = counts.bytes() as u64;
        let mut eviction = delta::choose_eviction(scheme, *state, counts.body, counts.meta());
        if relayout {
            eviction = Eviction::OutOfPlace(OutOfPlaceReason::Relayout);
        }
        // Where the bytes changed matters only to delta-records and log records; an
        // out-of-place write (every write of a page with no copy on flash) needs the
        // counts alone.
        self.changes.clear();
        if state.on_flash && (matches!(eviction, Eviction::Append { .. }) || self.device.logs_changes()) {
            delta::diff_in(base_body, page_body, page::HEADER_BYTES, slots_from, changed, &mut self.changes);
        }
        let object = page::object(page);
        if state.on_flash && net > 0 {
            let c = self.counters.entry(object).or_default();
            c.update_size_writes[update_size_bucket(counts.body as u64)] += 1;
            if let Some(small) = c.update_size_small.get_mut(counts.body) {
                *small += 1;
            }
            c.update_body_bytes += counts.body as u64;
            c.update_header_bytes += counts.header as u64;
            c.update_slot_bytes += counts.slots as u64;
        }
        if state.on_flash && self.device.logs_changes() {
            let written = self.write_logged(pid, page, base, net, now)?;
            sync_base(base, page, changed, body_end);
            return Ok(written);
        }
        let mut done = now;
        if let Eviction::Append { records } = eviction {
            match self.append(pid, page, scheme, body_end, state.records as usize, records, now) {
                Ok(end) => {
                    done = end;
                    state.records += records as u8;
                    let c = self.counters.entry(object).or_default();
                    c.in_place_appends += 1;
                    c.delta_records += records as u64;
                    c.net_changed_bytes += net;
                    c.gross_written_bytes += (records * scheme.record_bytes()) as u64;
                }
                Err(Error::Flash(flash::Error::DeltaRefused { .. })) => {
                    self.counters.entry(object).or_default().delta_refusals += 1;
                    eviction = Eviction::OutOfPlace(OutOfPlaceReason::Refused);
                }
                Err(e) => return Err(e),
            }
        }
        if let Eviction::OutOfPlace(_) = eviction {
            page[body_end..].fill(0xFF);
            done = self.write_out_of_place(pid, page, now)?;
            *state = FlashState { on_flash: true, records: 0, sealed: false };
            let c = self.counters.entry(object).or_default();
            c.out_of_place_writes += 1;
            c.net_changed_bytes += net;
            c.gross_written_bytes += self.page_bytes as u64;
        }
        sync_base(base, page, changed, body_end);
        Ok(Written { eviction, done })
    }

    /// Notes an operation's change of page `pid` (its changed `spans` of `page`, the
    /// page after it) as the page's next In-Page Logging record, on a device that logs
    /// each update (`ipl_log`).
    pub fn note_change(&mut self, pid: PageId, spans: &[(u16, u16)], page: &[u8]) {
        if self.device.logs_updates() {
            self.ipl_logs.note(pid, spans, page);
        }
    }

    /// In-Page Logging: a page on flash is written as log records, the page itself is
    /// not. The records are its updates since `base` (the page as on flash), one per
    /// operation ([`crate::ipl_log`]), then the runs of bytes in which the page still
    /// differs from them (bytes changed outside an operation: the page LSN, a redo),
    /// found by the `delta::diff` offsets joined across gaps shorter than `LOG_RUN_GAP`.
    fn write_logged(&mut self, pid: PageId, page: &[u8], base: &[u8], net: u64, now: SimTime) -> Result<Written> {
        let updates = self.ipl_logs.take(pid);
        if net == 0 {
            return Ok(Written { eviction: Eviction::Clean, done: now });
        }
        let mut offsets: Vec<usize> = match &updates {
            Some(log) => {
                self.replayed.clear();
                self.replayed.extend_from_slice(base);
                log.replay(&mut self.replayed);
                self.replayed.iter().zip(page).enumerate().filter(|(_, (a, b))| a != b).map(|(i, _)| i).collect()
            }
            None => self.changes.body.iter().chain(&self.changes.meta).map(|&o| o as usize).collect(),
        };
        offsets.sort_unstable();
        let mut runs: Vec<(usize, usize)> = Vec::new();
        for o in offsets {
            match runs.last_mut() {
                Some((_, end)) if o < *end + LOG_RUN_GAP => *end = o + 1,
                _ => runs.push((o, o + 1)),
            }
        }
        let mut ranges: Vec<(usize, &[u8])> = updates.iter().flat_map(|log| log.records()).collect();
        ranges.extend(runs.iter().map(|&(from, to)| (from, &page[from..to])));
        let timing = self.device.write_log(RegionId(pid.region as usize), self.lpn(pid, 0), &ranges, now)?;
        let c = self.counters.entry(page::object(page)).or_default();
        c.logged_writes += 1;
        c.net_changed_bytes += net;
        c.gross_written_bytes += ranges.iter().map(|(_, bytes)| bytes.len() as u64).sum::<u64>();
        Ok(Written { eviction: Eviction::Logged, done: timing.end_ns.max(now) })
    }

    /// Encodes `records` new delta-records after the `existing` ones into the frame's
    /// delta area and appends them with one `write_delta`.
    #[allow(clippy::too_many_arguments)]
    fn append(
        &mut self,
        pid: PageId,
        page: &mut [u8],
        scheme: IpaScheme,
        body_end: usize,
        existing: usize,
        records: usize,
        now: SimTime,
    ) -> Result<SimTime> {
        delta::encode_records(scheme, &self.changes, page, records, &mut self.records);
        let at = body_end + existing * scheme.record_bytes();
        let last_part = self.flash_pages_per_page() - 1;
        let offset = at - last_part as usize * self.flash_page_bytes;
        let lpn = self.lpn(pid, last_part);
        let timing = self.device.write_delta(RegionId(pid.region as usize), lpn, offset, &self.records, now)?;
        page[at..at + self.records.len()].copy_from_slice(&self.records);
        Ok(timing.end_ns)
    }

    fn write_out_of_place(&mut self, pid: PageId, bytes: &[u8], now: SimTime) -> Result<SimTime> {
        self.ipl_logs.forget(pid);
        let timing = self.device.write_pages(RegionId(pid.region as usize), self.lpn(pid, 0), bytes, now)?;
        Ok(timing.end_ns.max(now))
    }

    /// Forgets a page on flash (its object freed it): trims its flash pages.
    pub fn trim(&mut self, pid: PageId, now: SimTime) -> Result<()> {
        for part in 0..self.flash_pages_per_page() {
            let lpn = self.lpn(pid, part);
            self.device.trim(RegionId(pid.region as usize), lpn, now)?;
        }
        Ok(())
    }
}

/// Makes `base` the page as written. They differ at most within the ranges `changed`
/// (the invariant the IPA diff relies on too) and in the delta area from `body_end`,
/// which an append fills and an out-of-place write erases, so only those are copied,
/// not the whole page after every write.
fn sync_base(base: &mut [u8], page: &[u8], changed: &[(usize, usize)], body_end: usize) {
    for &(from, to) in changed {
        let to = to.min(page.len());
        if from < to {
            base[from..to].copy_from_slice(&page[from..to]);
        }
    }
    base[body_end..].copy_from_slice(&page[body_end..]);
    debug_assert!(base == page, "a page changed outside the ranges its writes named");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn update_size_buckets_are_powers_of_two() {
        let b = update_size_bucket;
        assert_eq!((b(0), b(1), b(2), b(3), b(4), b(7), b(8)), (0, 0, 1, 1, 2, 2, 3));
        assert_eq!((b(4095), b(4096), b(8191), b(8192), b(1 << 30)), (11, 12, 12, 13, 13));
        let mut c = ObjectCounters::default();
        c.update_size_writes[3] = 5;
        c.reads = 7;
        let mut later = c;
        later.add(&c);
        assert_eq!(later.since(&c), c);
    }
}
