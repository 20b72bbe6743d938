//! Issues page I/O against one NoFTL region, or a conventional FTL over the whole
//! device, in simulated time and measures it.
//!
//! The issuer keeps up to `queue_depth` operations in flight: each new operation is
//! issued when the earliest outstanding one completes, and the device timelines do the
//! queueing. Pages the runner writes carry a 16-byte stamp (lpn, version) up front and
//! keep a delta area of erased bytes at the end, where appends go in order, as in the
//! IPA page layout. An append the region refuses becomes an out-of-place write of the
//! page with its area reset, as a DBMS would do.
//!
//! A host request may span pages (a block trace's 64 KiB write): [`Runner::begin`]
//! issues it, its page operations all start then (`*_page_at`), and
//! [`Runner::end_request`] frees its slot when its last page completes. Issued open
//! (at an arrival time, see [`Runner::begin`]) or closed (when a slot frees). Read and
//! write latencies per request go to HDR histograms for percentiles.

use crate::memory::{Kept, MemoryReport};
use flash::ftl::{Ftl, FtlCounters};
use flash::{DeltaRefusal, Error, Flash, RegionCounters, RegionId, WearStats, WriteHint};
use latency::{LatencyHistogram, Percentiles};
use nand::{Device, DeviceCounters, OpTiming, SimTime};
use serde::Serialize;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Keeps `depth` operations in flight.
struct Issuer {
    depth: usize,
    in_flight: BinaryHeap<Reverse<SimTime>>,
    now: SimTime,
    last_completion: SimTime,
}

impl Issuer {
    fn next_issue_time(&mut self) -> SimTime {
        if self.in_flight.len() >= self.depth {
            let Reverse(t) = self.in_flight.pop().expect("depth >= 1");
            self.now = self.now.max(t);
        }
        self.now
    }

    /// Open issue: at `arrival` (never before an earlier request: the host queue is
    /// FIFO), or later when `depth` requests are still in flight then.
    fn next_issue_time_open(&mut self, arrival: SimTime) -> SimTime {
        self.now = self.now.max(arrival);
        while self.in_flight.peek().is_some_and(|&Reverse(end)| end <= self.now) {
            self.in_flight.pop();
        }
        self.next_issue_time()
    }

    /// When every request in flight has completed (`now` if none is).
    fn drained_at(&self) -> SimTime {
        self.in_flight.iter().map(|&Reverse(end)| end).max().unwrap_or(self.now).max(self.now)
    }

    fn complete(&mut self, end: SimTime) {
        self.in_flight.push(Reverse(end));
        self.last_completion = self.last_completion.max(end);
    }
}

/// Which latency histogram a request goes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RequestKind {
    Read,
    /// A page write or an append (both are host writes).
    Write,
}

/// Operation counts and latency sums of the runner itself.
#[derive(Clone, Copy, Debug, Default)]
pub struct RunnerStats {
    pub writes: u64,
    pub write_latency_ns: u64,
    pub deltas: u64,
    pub delta_latency_ns: u64,
    pub delta_refusals: u64,
    pub reads: u64,
    pub read_latency_ns: u64,
    pub unmapped_reads: u64,
    pub trims: u64,
}

/// What the runner drives.
pub enum Target {
    /// Region 0 of a NoFTL device.
    Region(Box<Flash>),
    /// A conventional FTL over the whole device (no in-place appends).
    Ftl(Box<dyn Ftl>),
}

const REGION: RegionId = RegionId(0);

impl Target {
    pub fn device(&self) -> &Device {
        match self {
            Target::Region(f) => f.device(),
            Target::Ftl(f) => f.device(),
        }
    }
    /// The heap bytes of the regions' or the FTL's maps and tables.
    pub fn mapping_bytes(&self) -> u64 {
        match self {
            Target::Region(f) => f.mapping_bytes(),
            Target::Ftl(f) => f.mapping_bytes(),
        }
    }
    fn logical_pages(&self) -> u32 {
        match self {
            Target::Region(f) => f.region(REGION).logical_pages(),
            Target::Ftl(f) => f.logical_pages(),
        }
    }
    fn page_bytes(&self) -> usize {
        match self {
            Target::Region(f) => f.region(REGION).page_bytes(),
            Target::Ftl(f) => f.page_bytes(),
        }
    }
    fn write(&mut self, lpn: u32, data: &[u8], now: SimTime) -> Result<OpTiming, Error> {
        match self {
            Target::Region(f) => f.write(REGION, lpn, data, now),
            Target::Ftl(f) => f.write(lpn, data, now),
        }
    }
    /// An FTL refuses every append, as the engine sees it through `FtlVolume`.
    fn write_delta(&mut self, lpn: u32, offset: usize, bytes: &[u8], now: SimTime) -> Result<OpTiming, Error> {
        match self {
            Target::Region(f) => f.write_delta(REGION, lpn, offset, bytes, now),
            Target::Ftl(_) => Err(Error::DeltaRefused { lpn, reason: DeltaRefusal::NoInPlaceAppend }),
        }
    }
    fn prefetch_write(&self, lpn: u32, stage: WriteHint) {
        match self {
            Target::Region(f) => f.prefetch_write(REGION, lpn, stage),
            Target::Ftl(f) => f.prefetch_write(lpn, stage),
        }
    }
    fn mapped(&self, lpn: u32) -> bool {
        match self {
            Target::Region(f) => f.region(REGION).mapping(lpn).is_some(),
            Target::Ftl(_) => true,
        }
    }
    /// When the read ends; `None` for a page never written.
    fn read(&mut self, lpn: u32, now: SimTime) -> Result<Option<SimTime>, Error> {
        Ok(match self {
            Target::Region(f) => f.read(REGION, lpn, now)?.map(|r| r.timing.end_ns),
            Target::Ftl(f) => f.read(lpn, now)?.map(|r| r.timing.end_ns),
        })
    }
    fn trim(&mut self, lpn: u32, now: SimTime) -> Result<Option<OpTiming>, Error> {
        match self {
            Target::Region(f) => f.trim(REGION, lpn, now),
            Target::Ftl(f) => f.trim(lpn, now),
        }
    }
    fn region_counters(&self) -> RegionCounters {
        match self {
            Target::Region(f) => f.region(REGION).counters(),
            Target::Ftl(_) => RegionCounters::default(),
        }
    }
    fn ftl_counters(&self) -> Option<FtlCounters> {
        match self {
            Target::Region(_) => None,
            Target::Ftl(f) => Some(f.counters()),
        }
    }
    /// P/E cycles over the region's blocks (an FTL's: every block of the device).
    fn wear(&self) -> WearStats {
        match self {
            Target::Region(f) => f.region(REGION).wear(),
            Target::Ftl(f) => {
                let storage = f.device().storage();
                let blocks = f.device().geometry().total_blocks();
                WearStats::of((0..blocks).map(|b| storage.erase_count(nand::BlockId(b))))
            }
        }
    }
    /// The region's spec or the FTL's configuration, for the JSON file.
    pub fn describe(&self) -> serde_json::Value {
        match self {
            Target::Region(f) => serde_json::json!({ "region": f.region(REGION).spec() }),
            Target::Ftl(f) => match flash::ftl::stored_config(f.device().storage().config_area()) {
                Ok(config) => serde_json::json!({ "ftl": config }),
                Err(e) => serde_json::json!({ "ftl": e.to_string() }),
            },
        }
    }
    fn flush(&mut self) -> Result<(), Error> {
        match self {
            Target::Region(f) => f.flush(),
            Target::Ftl(f) => Ok(f.device_mut().storage_mut().flush()?),
        }
    }
}

/// A point-in-time copy of every counter, so a phase can be measured by difference.
#[derive(Clone, Copy)]
pub struct Snapshot {
    ftl: Option<FtlCounters>,
    region: RegionCounters,
    device: DeviceCounters,
    runner: RunnerStats,
    sim_ns: SimTime,
    wall: std::time::Instant,
}

pub struct Runner {
    pub target: Target,
    issuer: Issuer,
    stats: RunnerStats,
    /// Latency per read and per write request (ns) since [`Runner::start_measurement`].
    read_latency: LatencyHistogram,
    write_latency: LatencyHistogram,
    keeps_data: bool,
    page: Vec<u8>,
    page_bytes: usize,
    delta_area_start: usize,
    /// Next append offset per lpn (0 = area empty); allocated by the first append, so
    /// a run without appends spends no memory or cache misses on it.
    append_at: Vec<u32>,
    logical_pages: usize,
    versions: u64,
}

impl Runner {
    /// `delta_area_bytes` erased bytes at the end of each page take appends.
    pub fn new(target: Target, queue_depth: usize, delta_area_bytes: usize) -> Self {
        let page_bytes = target.page_bytes();
        let logical = target.logical_pages() as usize;
        let keeps_data = target.device().storage().keeps_data();
        let delta_area_start = page_bytes - delta_area_bytes.min(page_bytes - 16);
        let mut page = vec![0x5A; page_bytes];
        page[delta_area_start..].fill(0xFF);
        Runner {
            target,
            issuer: Issuer { depth: queue_depth.max(1), in_flight: BinaryHeap::new(), now: 0, last_completion: 0 },
            stats: RunnerStats::default(),
            read_latency: LatencyHistogram::new(),
            write_latency: LatencyHistogram::new(),
            keeps_data,
            page: if keeps_data { page } else { Vec::new() },
            page_bytes,
            delta_area_start,
            append_at: Vec::new(),
            logical_pages: logical,
            versions: 0,
        }
    }

    pub fn logical_pages(&self) -> u32 {
        self.target.logical_pages()
    }

    pub fn page_bytes(&self) -> usize {
        self.page_bytes
    }

    pub fn snapshot(&self) -> Snapshot {
        Snapshot {
            ftl: self.target.ftl_counters(),
            region: self.target.region_counters(),
            device: self.target.device().counters(),
            runner: self.stats,
            sim_ns: self.issuer.last_completion.max(self.issuer.now),
            wall: std::time::Instant::now(),
        }
    }

    /// Starts a measured phase: the snapshot to measure from, and empty latency
    /// histograms.
    pub fn start_measurement(&mut self) -> Snapshot {
        self.read_latency.reset();
        self.write_latency.reset();
        self.snapshot()
    }

    /// The simulated time the issuer has reached (the last completion, or later).
    pub fn sim_now(&self) -> SimTime {
        self.issuer.last_completion.max(self.issuer.now)
    }

    /// Issues a request: closed (`None`: when one of the `queue_depth` requests in
    /// flight completes) or open (at `arrival`, or later if `queue_depth` requests are
    /// in flight then). Its page operations start at the time returned.
    pub fn begin(&mut self, arrival: Option<SimTime>) -> SimTime {
        match arrival {
            None => self.issuer.next_issue_time(),
            Some(at) => self.issuer.next_issue_time_open(at),
        }
    }

    /// Ends a request whose last page completed at `end` (`None`: it touched no page
    /// and holds no slot): frees its slot then and records `end - from` as its latency.
    pub fn end_request(&mut self, kind: Option<RequestKind>, from: SimTime, end: Option<SimTime>) {
        let Some(end) = end else { return };
        self.issuer.complete(end);
        let histogram = match kind {
            Some(RequestKind::Read) => &mut self.read_latency,
            Some(RequestKind::Write) => &mut self.write_latency,
            None => return,
        };
        histogram.record(end.saturating_sub(from));
    }

    /// When a flush issued at `now` completes: once every request in flight has.
    pub fn flush_done_at(&self, now: SimTime) -> SimTime {
        self.issuer.drained_at().max(now)
    }

    /// Out-of-place write of a stamped page with an empty delta area.
    pub fn write(&mut self, lpn: u32) -> Result<(), Error> {
        let now = self.issuer.next_issue_time();
        let end = self.write_page_at(lpn, now)?;
        self.end_request(Some(RequestKind::Write), now, Some(end));
        Ok(())
    }

    /// One page of a request: an out-of-place write of a stamped page starting at
    /// `now`; when it completes.
    pub fn write_page_at(&mut self, lpn: u32, now: SimTime) -> Result<SimTime, Error> {
        self.versions += 1;
        if self.keeps_data {
            self.page[..4].copy_from_slice(&lpn.to_le_bytes());
            self.page[4..12].copy_from_slice(&self.versions.to_le_bytes());
        }
        let timing = self.target.write(lpn, &self.page, now)?;
        self.reset_append(lpn);
        self.stats.writes += 1;
        self.stats.write_latency_ns += timing.latency_from(now);
        Ok(timing.end_ns)
    }

    /// Hints that `lpn` will be written soon (see [`flash::Region::prefetch_write`]);
    /// changes nothing. Regions and the page FTL take hints.
    pub fn prefetch_write(&self, lpn: u32, stage: WriteHint) {
        self.target.prefetch_write(lpn, stage);
    }

    /// Empties the page's delta area (a no-op before the first append).
    fn reset_append(&mut self, lpn: u32) {
        if let Some(at) = self.append_at.get_mut(lpn as usize) {
            *at = 0;
        }
    }

    /// Appends `bytes` at the next free offset of the page's delta area; falls back to
    /// an out-of-place write when the area is full or the region refuses.
    pub fn append(&mut self, lpn: u32, bytes: &[u8]) -> Result<(), Error> {
        let offset = match self.append_at.get(lpn as usize).copied().unwrap_or(0) {
            0 => self.delta_area_start,
            at => at as usize,
        };
        self.append_at_offset(lpn, offset, bytes)
    }

    /// Appends `bytes` at `offset`; falls back to an out-of-place write on refusal.
    pub fn append_at_offset(&mut self, lpn: u32, offset: usize, bytes: &[u8]) -> Result<(), Error> {
        if offset + bytes.len() > self.page_bytes || !self.target.mapped(lpn) {
            self.stats.delta_refusals += 1;
            return self.write(lpn);
        }
        let now = self.issuer.next_issue_time();
        match self.target.write_delta(lpn, offset, bytes, now) {
            Ok(timing) => {
                if self.append_at.is_empty() {
                    self.append_at = vec![0; self.logical_pages];
                }
                self.append_at[lpn as usize] = (offset + bytes.len()) as u32;
                self.stats.deltas += 1;
                self.stats.delta_latency_ns += timing.latency_from(now);
                self.end_request(Some(RequestKind::Write), now, Some(timing.end_ns));
                Ok(())
            }
            Err(Error::DeltaRefused { .. }) => {
                self.stats.delta_refusals += 1;
                self.write(lpn)
            }
            Err(e) => Err(e),
        }
    }

    pub fn read(&mut self, lpn: u32) -> Result<(), Error> {
        let now = self.issuer.next_issue_time();
        let end = self.read_page_at(lpn, now)?;
        self.end_request(Some(RequestKind::Read), now, end);
        Ok(())
    }

    /// One page of a request: a read starting at `now`; when it completes, `None` for a
    /// page never written (counted, no flash work).
    pub fn read_page_at(&mut self, lpn: u32, now: SimTime) -> Result<Option<SimTime>, Error> {
        let end = self.target.read(lpn, now)?;
        match end {
            Some(end) => {
                self.stats.reads += 1;
                self.stats.read_latency_ns += end - now;
            }
            None => self.stats.unmapped_reads += 1,
        }
        Ok(end)
    }

    pub fn trim(&mut self, lpn: u32) -> Result<(), Error> {
        let now = self.issuer.next_issue_time();
        let end = self.trim_page_at(lpn, now)?;
        self.end_request(None, now, end);
        Ok(())
    }

    /// One page of a request: a trim at `now`; when its flash work (if any) completes.
    pub fn trim_page_at(&mut self, lpn: u32, now: SimTime) -> Result<Option<SimTime>, Error> {
        let end = self.target.trim(lpn, now)?.map(|t| t.end_ns);
        self.reset_append(lpn);
        self.stats.trims += 1;
        Ok(end)
    }

    /// What happened since `start`.
    pub fn measure(&self, start: &Snapshot) -> Measured {
        let end = self.snapshot();
        let (r0, r1) = (start.region, end.region);
        let (d0, d1) = (start.device, end.device);
        let (s0, s1) = (start.runner, end.runner);
        let ftl = end.ftl.zip(start.ftl).map(|(b, a)| b.since(&a));
        let (host_writes, gc_page_migrations, gc_erases) = match &ftl {
            Some(f) => (f.host_writes, f.gc_page_migrations, f.gc_erases),
            None => (
                r1.host_writes - r0.host_writes,
                r1.gc_page_migrations - r0.gc_page_migrations,
                r1.gc_erases - r0.gc_erases,
            ),
        };
        let wall_seconds = end.wall.duration_since(start.wall).as_secs_f64();
        let flash_programs = (d1.page_programs + d1.copybacks) - (d0.page_programs + d0.copybacks);
        let per_host_write = |x: u64| {
            if host_writes == 0 {
                0.0
            } else {
                x as f64 / host_writes as f64
            }
        };
        let mean_us = |sum: u64, n: u64| {
            if n == 0 {
                0.0
            } else {
                sum as f64 / n as f64 / 1000.0
            }
        };
        let wear = self.target.wear();
        let write_amplification = match &ftl {
            // Every program the FTL made (copies, merges, translation pages) per host write.
            Some(f) => f.write_amplification(),
            None if host_writes == 0 => 0.0,
            None => (host_writes + gc_page_migrations) as f64 / host_writes as f64,
        };
        Measured {
            host_writes,
            host_write_deltas: r1.host_write_deltas - r0.host_write_deltas,
            delta_refusals: s1.delta_refusals - s0.delta_refusals,
            host_reads: ftl.map_or(r1.host_reads - r0.host_reads, |f| f.host_reads),
            host_trims: ftl.map_or(r1.host_trims - r0.host_trims, |f| f.host_trims),
            gc_page_migrations,
            wl_page_migrations: r1.wl_page_migrations - r0.wl_page_migrations,
            gc_erases,
            write_amplification,
            migrations_per_host_write: per_host_write(gc_page_migrations),
            erases_per_host_write: per_host_write(gc_erases),
            flash_programs,
            write_latency_us_mean: mean_us(s1.write_latency_ns - s0.write_latency_ns, s1.writes - s0.writes),
            delta_latency_us_mean: mean_us(s1.delta_latency_ns - s0.delta_latency_ns, s1.deltas - s0.deltas),
            read_latency_us_mean: mean_us(s1.read_latency_ns - s0.read_latency_ns, s1.reads - s0.reads),
            read_latency_us: self.read_latency.percentiles(),
            write_latency_us: self.write_latency.percentiles(),
            pe_min: wear.pe_min,
            pe_mean: wear.pe_mean,
            pe_max: wear.pe_max,
            sim_seconds: end.sim_ns.saturating_sub(start.sim_ns) as f64 / 1e9,
            wall_seconds,
            host_writes_per_wall_second: host_writes as f64 / wall_seconds.max(1e-9),
            flash_programs_per_wall_second: flash_programs as f64 / wall_seconds.max(1e-9),
            memory: MemoryReport::now(Kept {
                device: self.target.device().storage().memory_bytes(),
                mapping: self.target.mapping_bytes(),
                buffer_pool: 0,
            }),
            ftl,
        }
    }

    /// Flushes an image-backed device.
    pub fn finish(mut self) -> Result<(), Error> {
        self.target.flush()
    }
}

const MIB: f64 = (1u64 << 20) as f64;

/// Metrics of one measured phase. Names follow the IPA paper's tables; units go last.
#[derive(Clone, Debug, Serialize)]
pub struct Measured {
    pub host_writes: u64,
    pub host_write_deltas: u64,
    pub delta_refusals: u64,
    pub host_reads: u64,
    pub host_trims: u64,
    pub gc_page_migrations: u64,
    pub wl_page_migrations: u64,
    pub gc_erases: u64,
    /// NoFTL: (host page programs + GC migrations) / host page programs; an FTL: every
    /// flash program it made (copies, merges, translation pages) per host write.
    pub write_amplification: f64,
    pub migrations_per_host_write: f64,
    pub erases_per_host_write: f64,
    /// Out-of-place programs and GC copies on the device.
    pub flash_programs: u64,
    pub write_latency_us_mean: f64,
    pub delta_latency_us_mean: f64,
    pub read_latency_us_mean: f64,
    /// Per read request since [`Runner::start_measurement`] (a request of several
    /// pages completes with its last page; queueing included).
    pub read_latency_us: Percentiles,
    /// Per write request (page writes and appends), likewise.
    pub write_latency_us: Percentiles,
    pub pe_min: u32,
    pub pe_mean: f64,
    pub pe_max: u32,
    pub sim_seconds: f64,
    pub wall_seconds: f64,
    pub host_writes_per_wall_second: f64,
    pub flash_programs_per_wall_second: f64,
    /// Peak RSS, what the device keeps, and their ratio.
    #[serde(flatten)]
    pub memory: MemoryReport,
    /// On an FTL: its counters over the phase (merges, translation pages).
    pub ftl: Option<FtlCounters>,
}

impl Measured {
    /// Rows for the printed table.
    pub fn rows(&self) -> Vec<(String, String)> {
        let f = |v: f64, d: usize| format!("{v:.d$}");
        let mut rows: Vec<(String, String)> = vec![
            ("host writes (out-of-place)".into(), self.host_writes.to_string()),
            ("host write_deltas (in-place appends)".into(), self.host_write_deltas.to_string()),
            ("delta refusals (written out-of-place)".into(), self.delta_refusals.to_string()),
            ("host reads".into(), self.host_reads.to_string()),
            ("GC page migrations".into(), self.gc_page_migrations.to_string()),
            ("GC erases".into(), self.gc_erases.to_string()),
            ("write amplification".into(), f(self.write_amplification, 3)),
            ("GC migrations per host write".into(), f(self.migrations_per_host_write, 4)),
            ("GC erases per host write".into(), f(self.erases_per_host_write, 4)),
            ("mean write latency (µs)".into(), f(self.write_latency_us_mean, 1)),
            ("mean write_delta latency (µs)".into(), f(self.delta_latency_us_mean, 1)),
            ("read latency p50 / p95 / p99 / p99.9 / max (µs)".into(), self.read_latency_us.cell()),
            ("write latency p50 / p95 / p99 / p99.9 / max (µs)".into(), self.write_latency_us.cell()),
            ("P/E cycles min / mean / max".into(), format!("{} / {:.1} / {}", self.pe_min, self.pe_mean, self.pe_max)),
            ("simulated seconds".into(), f(self.sim_seconds, 3)),
            ("wall seconds".into(), f(self.wall_seconds, 3)),
            ("host writes per wall-second".into(), f(self.host_writes_per_wall_second, 0)),
            ("flash programs per wall-second".into(), f(self.flash_programs_per_wall_second, 0)),
            ("device memory (MiB)".into(), f(self.memory.memory_device_bytes as f64 / MIB, 1)),
            ("mapping memory (MiB)".into(), f(self.memory.memory_mapping_bytes as f64 / MIB, 1)),
            ("peak RSS (MiB)".into(), self.memory.memory_peak_rss_bytes.map_or("–".into(), |b| f(b as f64 / MIB, 1))),
            (
                "peak RSS per byte kept (device + mapping)".into(),
                self.memory.memory_peak_rss_per_kept_byte.map_or("–".into(), |r| f(r, 2)),
            ),
            (
                "peak RSS per device byte".into(),
                self.memory.memory_peak_rss_per_device_byte.map_or("–".into(), |r| f(r, 2)),
            ),
        ];
        if let Some(c) = &self.ftl {
            rows.extend([
                (
                    "merges switch / partial / full".into(),
                    format!("{} / {} / {}", c.merges_switch, c.merges_partial, c.merges_full),
                ),
                ("translation reads / writes".into(), format!("{} / {}", c.translation_reads, c.translation_writes)),
            ]);
        }
        rows
    }
}
