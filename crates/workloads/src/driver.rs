//! The simulated-time driver: K closed-loop terminals, each with its own clock. The
//! terminal whose clock is earliest runs its next transaction with the engine's clock
//! set to its own; the transaction's I/O is timed by the device model (queueing behind
//! other terminals' I/O, the page cleaner, log writes and GC on the same chips), and a
//! configured CPU cost per record operation is added. Transactions run one at a time in
//! the engine; terminals interleave in simulated time.
//!
//! With group commit (`Database::set_group_commit`) a terminal whose commit joined an
//! open group waits, runs nothing, until the group's log pages are durable: the driver
//! flushes the group at its deadline once no other terminal has work before it.
//!
//! The caller sees the run through one callback ([`Event`]): a tick every 256
//! transactions and each interval line; answering [`Control::Stop`] ends the run at once
//! with [`RunError::Stopped`].
//!
//! Metrics are the differences between a snapshot at the end of the warm-up and one at
//! the end of the run, named as in the IPA paper's tables (§8.4, appendix B).
//!
//! Latency percentiles come from HDR histograms (within 1 %, [`LatencyHistogram`]): page
//! read and write latencies from the engine's histograms, which the driver empties at
//! the end of the warm-up and at each interval line (folding them into the run's), and
//! transaction latencies (start to completion, a group commit's wait included) from
//! those the driver keeps for the transactions started after the warm-up, all together
//! and per transaction type.

use crate::workload::{Workload, WorkloadError};
use engine::buffer::PoolStats;
use engine::store::ObjectCounters;
use engine::Database;
use flash::ftl::FtlCounters;
use flash::IplCounters;
use flash::RegionCounters;
use latency::{LatencyHistogram, Percentiles};
use nand::{DeviceCounters, SimTime};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use std::collections::BTreeMap;

/// What the driver reports while it runs.
pub enum Event<'a> {
    /// Every 256 transactions: simulated seconds since the run began (warm-up
    /// included), transactions run and committed so far.
    Tick { sim_seconds: f64, transactions: u64, committed: u64 },
    /// An interval line, as it completes.
    Interval(&'a Interval),
}

/// The callback's answer: go on, or end the run now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[must_use]
pub enum Control {
    Continue,
    Stop,
}

/// Why a run ended without metrics.
#[derive(Debug)]
pub enum RunError {
    /// The callback answered [`Control::Stop`] this many simulated seconds into the run.
    Stopped { sim_seconds: f64 },
    /// The workload or the engine failed.
    Failed(WorkloadError),
    /// The DDL the run switches to (`switch_ddl`) failed.
    SwitchDdl(engine::Error),
}

impl RunError {
    /// A data region had no free extent left for an object to grow into.
    pub fn is_no_free_extent(&self) -> bool {
        match self {
            RunError::Stopped { .. } => false,
            RunError::Failed(e) => e.is_no_free_extent(),
            RunError::SwitchDdl(e) => matches!(e, engine::Error::NoFreeExtent { .. }),
        }
    }
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunError::Stopped { sim_seconds } => write!(f, "stopped after {sim_seconds:.1} simulated seconds"),
            RunError::Failed(e) => write!(f, "{e}"),
            RunError::SwitchDdl(e) => write!(f, "the switch DDL: {e}"),
        }
    }
}

#[derive(Clone, Debug)]
pub struct DriverConfig {
    pub terminals: usize,
    /// Simulated seconds of warm-up (not measured) and of measurement.
    pub warmup_s: f64,
    pub duration_s: f64,
    /// CPU time per record operation, simulated nanoseconds.
    pub cpu_ns_per_operation: SimTime,
    /// Simulated seconds between interval lines (0: none).
    pub progress_s: f64,
    /// Statements run once this many simulated seconds into the measurement, between
    /// transactions (an online layout change mid-run).
    pub switch: Option<(f64, String)>,
    /// Ends the measurement after this many measured transactions, if that comes
    /// before `duration_s` (`compare --engines` runs every engine for the same count).
    pub max_transactions: Option<u64>,
}

#[derive(Clone, Debug, Default)]
struct Snapshot {
    time: SimTime,
    transactions: u64,
    committed: u64,
    objects: BTreeMap<String, ObjectCounters>,
    regions: BTreeMap<String, RegionCounters>,
    device: DeviceCounters,
    ftl: Option<FtlCounters>,
    ipl: Option<IplCounters>,
    ipl_regions: BTreeMap<String, IplCounters>,
    pool: PoolStats,
    /// The LSN the next log record gets (`None` without a log).
    log_end_lsn: Option<u64>,
    /// The log's page writes as the log counts them (`None` without a log): the count
    /// for a log on a device of its own, which has no region on the database device.
    log_pages_written: Option<u64>,
}

fn snapshot(db: &Database, time: SimTime, transactions: u64, committed: u64) -> Snapshot {
    let objects = db.object_stats().into_iter().map(|s| (s.name, s.counters)).collect();
    let dev = db.page_device();
    let regions = dev.region_ids().map(|r| (dev.region_name(r).to_string(), dev.counters(r))).collect();
    let ipl_regions = dev
        .region_ids()
        .filter_map(|r| dev.ipl_region_counters(r).map(|c| (dev.region_name(r).to_string(), c)))
        .collect();
    let (device, ftl, ipl) = (dev.device().counters(), dev.ftl_counters(), dev.ipl_counters());
    let log_end_lsn = db.log_lsns().map(|_| db.log_end_lsn());
    let pool = db.pool_stats();
    let log_pages_written = db.log_counters().map(|c| c.page_writes);
    Snapshot {
        time,
        transactions,
        committed,
        objects,
        regions,
        device,
        ftl,
        ipl,
        ipl_regions,
        pool,
        log_end_lsn,
        log_pages_written,
    }
}

/// Where a transaction's simulated time goes, in mean milliseconds per transaction.
/// `response` is the whole (closed loop: terminals × time / transactions); `other` is
/// what the named waits leave: mostly the simulated CPU cost per record operation.
/// A transaction started in the window counts whole, waits that end after the window
/// included; when a switch DDL books the chips for seconds, the transactions queued
/// behind it outweigh the window and `other` goes negative.
#[derive(Clone, Debug, Default, Serialize)]
pub struct TimeBreakdown {
    pub response: f64,
    pub reads: f64,
    pub evictions: f64,
    pub commits: f64,
    pub checkpoints: f64,
    pub other: f64,
}

/// The buffer pool's page writes in the measurement by what wrote them: a dirty page
/// evicted to free a frame (on the transaction's path), the page cleaner, checkpoints;
/// `other` is the rest (a commit that writes its pages without a log, DDL). With the
/// number of checkpoints taken, it says where a run's host writes come from.
#[derive(Clone, Debug, Default, Serialize)]
pub struct WritesByCause {
    pub evictions: u64,
    pub cleaner: u64,
    pub checkpoints: u64,
    pub other: u64,
    pub checkpoints_taken: u64,
}

fn writes_by_cause(a: &PoolStats, b: &PoolStats) -> WritesByCause {
    let evictions = b.dirty_evictions - a.dirty_evictions;
    let cleaner = b.cleaner_writes - a.cleaner_writes;
    let checkpoints = b.checkpoint_writes - a.checkpoint_writes;
    let all = b.page_writes - a.page_writes;
    WritesByCause {
        evictions,
        cleaner,
        checkpoints,
        other: all.saturating_sub(evictions + cleaner + checkpoints),
        checkpoints_taken: b.checkpoints - a.checkpoints,
    }
}

/// One line of the time series.
#[derive(Clone, Debug, Serialize)]
pub struct Interval {
    pub sim_seconds: f64,
    pub throughput_tps: f64,
    /// Page I/O latency in the interval: the mean, the median and the 99th percentile.
    pub read_latency_ms: f64,
    pub read_latency_p50_ms: f64,
    pub read_latency_p99_ms: f64,
    pub write_latency_ms: f64,
    pub write_latency_p50_ms: f64,
    pub write_latency_p99_ms: f64,
    /// Latency of the transactions the driver ran in the interval (and of those whose
    /// group commit it released then).
    pub transaction_latency_p50_ms: f64,
    pub transaction_latency_p99_ms: f64,
    pub gc_erases_so_far: u64,
    /// Page writes in the interval: out-of-place, in-place appends, and GC migrations.
    pub out_of_place_writes: u64,
    pub in_place_appends: u64,
    pub gc_page_migrations: u64,
}

/// Per-object results.
#[derive(Clone, Debug, Serialize)]
pub struct ObjectResult {
    pub name: String,
    #[serde(flatten)]
    pub counters: ObjectCounters,
    pub dbms_write_amplification: f64,
}

/// The measured part of a run, named as in the paper.
#[derive(Clone, Debug, Serialize)]
pub struct Metrics {
    pub transactions: u64,
    pub committed_transactions: u64,
    pub sim_seconds: f64,
    pub throughput_tps: f64,
    pub host_reads: u64,
    pub host_writes: u64,
    pub out_of_place_writes: u64,
    pub in_place_appends: u64,
    pub gc_page_migrations: u64,
    pub gc_erases: u64,
    pub gc_migrations_per_host_write: f64,
    pub gc_erases_per_host_write: f64,
    /// Pages the engine pinned in its buffer pool (B+-tree nodes, heap pages), found
    /// there or read from flash: the engine's work per transaction apart from I/O.
    pub buffer_hits: u64,
    pub buffer_misses: u64,
    /// Page I/O latency over the measurement: the means, medians and 99th percentiles.
    pub read_latency_ms: f64,
    pub read_latency_p50_ms: f64,
    pub read_latency_p99_ms: f64,
    pub write_latency_ms: f64,
    pub write_latency_p50_ms: f64,
    pub write_latency_p99_ms: f64,
    /// The mean write latency by kind: out-of-place writes, and in-place appends, which
    /// wait at their page's chip (0 without either).
    pub out_of_place_write_latency_ms: f64,
    pub append_latency_ms: f64,
    /// Transaction latency (start to completion, a group commit's wait included) of the
    /// transactions started in the measurement.
    pub transaction_latency_p50_ms: f64,
    pub transaction_latency_p95_ms: f64,
    pub transaction_latency_p99_ms: f64,
    /// The same three latencies as every command reports a latency (`{count, p50, p95,
    /// p99, p99_9, max}`, µs).
    pub read_latency_us: Percentiles,
    pub write_latency_us: Percentiles,
    pub transaction_latency_us: Percentiles,
    /// Transaction latency per transaction type, keyed by the workload's names for them
    /// (TPC-C's `new_order`, …): the types run in the measurement; their counts sum to
    /// `transaction_latency_us`'s.
    pub transaction_latency_us_by_type: BTreeMap<&'static str, Percentiles>,
    pub net_changed_bytes: u64,
    pub gross_written_bytes: u64,
    pub dbms_write_amplification: f64,
    pub log_page_writes: u64,
    /// Every page program on the device (host pages, appends, log, catalog, GC and merge
    /// copies, translation pages), and every erase.
    pub flash_programs: u64,
    pub flash_erases: u64,
    /// Flash programs per page write the database sent to the device (all regions:
    /// data, log and catalog, appends included).
    pub write_amplification: f64,
    /// On a conventional FTL: its device-wide counters (merges, translation pages);
    /// `gc_page_migrations` and `gc_erases` above are then the FTL's, device-wide.
    pub ftl: Option<FtlCounters>,
    /// Writes sent to an In-Page Logging store as log records (the page not written).
    pub logged_writes: u64,
    /// On an In-Page Logging store: its counters over all regions (log sectors read and
    /// written, merges); its merges also show as GC above (pages programmed, erases).
    pub ipl: Option<IplCounters>,
    /// Each region's counters (data regions, `log`, `system`): flash pages read and
    /// written by the host, appends, GC.
    pub regions: BTreeMap<String, RegionCounters>,
    /// On an In-Page Logging store: its counters per region, so that the data regions'
    /// merges, erases and log reads stand apart from the log and system regions'.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub ipl_regions: BTreeMap<String, IplCounters>,
    pub time_per_transaction_ms: TimeBreakdown,
    pub page_writes_by_cause: WritesByCause,
    /// Simulated seconds the switch DDL took, when it ran in the measured window. Its
    /// I/O counts with the run's; its waits are left out of `time_per_transaction_ms`
    /// (they belong to no transaction of the workload).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub switch_ddl_seconds: Option<f64>,
    /// Page updates by net changed bytes, all objects (buckets as in
    /// `engine::store::ObjectCounters::update_size_writes`).
    pub update_size_writes: [u64; engine::store::UPDATE_SIZE_BUCKETS],
    /// The first LSN of the measurement (the log's end when the warm-up ended): the log
    /// records from it on are the measured run's, those before it the load's and the
    /// warm-up's (the advisor keeps them apart). Absent without a log.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub measured_from_lsn: Option<u64>,
    pub objects: Vec<ObjectResult>,
    pub intervals: Vec<Interval>,
}

/// Latency percentiles of a window (an interval or the measurement), in milliseconds.
#[derive(Clone, Copy, Debug)]
struct WindowLatencies {
    read_p50: f64,
    read_p99: f64,
    write_p50: f64,
    write_p99: f64,
    transaction_p50: f64,
    transaction_p95: f64,
    transaction_p99: f64,
    /// Page reads, page writes and transactions, in µs.
    us: [Percentiles; 3],
}

impl WindowLatencies {
    fn of(reads: &LatencyHistogram, writes: &LatencyHistogram, transactions: &LatencyHistogram) -> WindowLatencies {
        WindowLatencies {
            read_p50: reads.quantile_ms(0.5),
            read_p99: reads.quantile_ms(0.99),
            write_p50: writes.quantile_ms(0.5),
            write_p99: writes.quantile_ms(0.99),
            transaction_p50: transactions.quantile_ms(0.5),
            transaction_p95: transactions.quantile_ms(0.95),
            transaction_p99: transactions.quantile_ms(0.99),
            us: [reads, writes, transactions].map(LatencyHistogram::percentiles),
        }
    }
}

/// The driver's latency histograms: the measurement's page reads, page writes and
/// transactions (all, and per transaction type), and the transactions of the interval
/// in progress. The interval's page I/O is in the engine's histograms until
/// [`Latencies::close_window`].
#[derive(Default)]
struct Latencies {
    reads: LatencyHistogram,
    writes: LatencyHistogram,
    transactions: LatencyHistogram,
    interval_transactions: LatencyHistogram,
    transactions_by_type: BTreeMap<&'static str, LatencyHistogram>,
}

impl Latencies {
    /// A measured transaction of type `kind` took `ns`.
    fn record_transaction(&mut self, kind: &'static str, ns: SimTime) {
        self.interval_transactions.record(ns);
        self.transactions_by_type.entry(kind).or_default().record(ns);
    }

    /// Ends a window: the percentiles of the interval's histograms (the engine's page
    /// I/O and the driver's transactions), which are folded into the measurement's and
    /// emptied.
    fn close_window(&mut self, db: &mut Database) -> WindowLatencies {
        let io = db.io_latencies_mut();
        let p = WindowLatencies::of(io.reads(), io.writes(), &self.interval_transactions);
        self.reads.add(io.reads());
        self.writes.add(io.writes());
        self.transactions.add(&self.interval_transactions);
        io.reset();
        self.interval_transactions.reset();
        p
    }

    /// The measurement's percentiles.
    fn measured(&self) -> WindowLatencies {
        WindowLatencies::of(&self.reads, &self.writes, &self.transactions)
    }

    /// The measurement's transaction percentiles per transaction type.
    fn measured_by_type(&self) -> BTreeMap<&'static str, Percentiles> {
        self.transactions_by_type.iter().map(|(&kind, h)| (kind, h.percentiles())).collect()
    }
}

fn data_regions(s: &Snapshot) -> impl Iterator<Item = (&String, &RegionCounters)> {
    s.regions.iter().filter(|(name, _)| engine::db::is_data_region(name))
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

/// What the switch DDL cost, when it ran in the measured window: its simulated time
/// and the pool's counters before and after it.
struct SwitchCost {
    nanos: SimTime,
    before: engine::buffer::PoolStats,
    after: engine::buffer::PoolStats,
}

fn breakdown(a: &Snapshot, b: &Snapshot, terminals: usize, switch: Option<&SwitchCost>) -> TimeBreakdown {
    let n = (b.transactions - a.transactions).max(1) as f64;
    let per_txn = |x: u64, y: u64| (y - x) as f64 / 1e6 / n;
    let (pa, pb) = (&a.pool, &b.pool);
    // The waits of the switch DDL, left out.
    let ddl = |wait: fn(&engine::buffer::PoolStats) -> u64| switch.map_or(0, |s| wait(&s.after) - wait(&s.before));
    let waits = |wait: fn(&engine::buffer::PoolStats) -> u64| per_txn(wait(pa) + ddl(wait), wait(pb));
    let mut t = TimeBreakdown {
        response: per_txn(a.time, b.time) * terminals as f64,
        reads: waits(|p| p.read_latency_ns),
        evictions: waits(|p| p.eviction_wait_ns),
        commits: waits(|p| p.commit_wait_ns),
        checkpoints: waits(|p| p.checkpoint_wait_ns),
        other: 0.0,
    };
    t.other = t.response - t.reads - t.evictions - t.commits - t.checkpoints;
    t
}

fn metrics(
    a: &Snapshot,
    b: &Snapshot,
    terminals: usize,
    intervals: Vec<Interval>,
    p: WindowLatencies,
    by_type: BTreeMap<&'static str, Percentiles>,
    switch: Option<&SwitchCost>,
) -> Metrics {
    let mut objects = Vec::new();
    let mut total = ObjectCounters::default();
    for (name, end) in &b.objects {
        let c = end.since(&a.objects.get(name).copied().unwrap_or_default());
        total.add(&c);
        objects.push(ObjectResult {
            name: name.clone(),
            counters: c,
            dbms_write_amplification: c.write_amplification(),
        });
    }
    let region_delta = |f: fn(&RegionCounters) -> u64| -> u64 {
        data_regions(b).map(|(n, c)| f(c) - a.regions.get(n).map_or(0, f)).sum()
    };
    let ftl = b.ftl.zip(a.ftl).map(|(b, a)| b.since(&a));
    let (gc_page_migrations, gc_erases) = match &ftl {
        Some(f) => (f.gc_page_migrations, f.gc_erases),
        None => (region_delta(|c| c.gc_page_migrations), region_delta(|c| c.gc_erases)),
    };
    let programs = |d: &DeviceCounters| d.page_programs + d.reprograms + d.copybacks;
    let flash_programs = programs(&b.device) - programs(&a.device);
    let sent = |s: &Snapshot| s.regions.values().map(|c| c.host_writes + c.host_write_deltas).sum::<u64>();
    let host_writes = total.host_writes();
    let sim_seconds = (b.time - a.time) as f64 / 1e9;
    let log = |s: &Snapshot| match s.regions.get(engine::db::LOG) {
        Some(c) => c.host_writes,
        None => s.log_pages_written.unwrap_or(0),
    };
    Metrics {
        transactions: b.transactions - a.transactions,
        committed_transactions: b.committed - a.committed,
        sim_seconds,
        throughput_tps: (b.committed - a.committed) as f64 / sim_seconds.max(1e-9),
        host_reads: total.reads,
        host_writes,
        out_of_place_writes: total.out_of_place_writes,
        in_place_appends: total.in_place_appends,
        gc_page_migrations,
        gc_erases,
        gc_migrations_per_host_write: ratio(gc_page_migrations, host_writes),
        gc_erases_per_host_write: ratio(gc_erases, host_writes),
        buffer_hits: b.pool.hits - a.pool.hits,
        buffer_misses: b.pool.misses - a.pool.misses,
        read_latency_ms: ratio(b.pool.read_latency_ns - a.pool.read_latency_ns, b.pool.page_reads - a.pool.page_reads)
            / 1e6,
        read_latency_p50_ms: p.read_p50,
        read_latency_p99_ms: p.read_p99,
        write_latency_ms: ratio(
            b.pool.write_latency_ns - a.pool.write_latency_ns,
            b.pool.page_writes - a.pool.page_writes,
        ) / 1e6,
        write_latency_p50_ms: p.write_p50,
        write_latency_p99_ms: p.write_p99,
        out_of_place_write_latency_ms: ratio(
            b.pool.out_of_place_latency_ns - a.pool.out_of_place_latency_ns,
            b.pool.out_of_place_writes - a.pool.out_of_place_writes,
        ) / 1e6,
        append_latency_ms: ratio(
            b.pool.append_latency_ns - a.pool.append_latency_ns,
            b.pool.in_place_appends - a.pool.in_place_appends,
        ) / 1e6,
        transaction_latency_p50_ms: p.transaction_p50,
        transaction_latency_p95_ms: p.transaction_p95,
        transaction_latency_p99_ms: p.transaction_p99,
        read_latency_us: p.us[0],
        write_latency_us: p.us[1],
        transaction_latency_us: p.us[2],
        transaction_latency_us_by_type: by_type,
        net_changed_bytes: total.net_changed_bytes,
        gross_written_bytes: total.gross_written_bytes,
        dbms_write_amplification: total.write_amplification(),
        log_page_writes: log(b) - log(a),
        flash_programs,
        flash_erases: b.device.erases - a.device.erases,
        write_amplification: ratio(flash_programs, sent(b) - sent(a)),
        ftl,
        logged_writes: total.logged_writes,
        ipl: b.ipl.zip(a.ipl).map(|(b, a)| b.since(&a)),
        regions: b
            .regions
            .iter()
            .map(|(n, c)| (n.clone(), c.since(&a.regions.get(n).copied().unwrap_or_default())))
            .collect(),
        ipl_regions: b
            .ipl_regions
            .iter()
            .map(|(n, c)| (n.clone(), c.since(&a.ipl_regions.get(n).copied().unwrap_or_default())))
            .collect(),
        time_per_transaction_ms: breakdown(a, b, terminals, switch),
        page_writes_by_cause: writes_by_cause(&a.pool, &b.pool),
        switch_ddl_seconds: switch.map(|s| s.nanos as f64 / 1e9),
        update_size_writes: total.update_size_writes,
        measured_from_lsn: a.log_end_lsn,
        objects,
        intervals,
    }
}

/// The terminals' clocks and, for each, the log end its commit waits for and, if its
/// transaction is measured, when it started and its type.
struct Terminals {
    clocks: Vec<SimTime>,
    waiting: Vec<Option<u64>>,
    started: Vec<Option<(SimTime, &'static str)>>,
}

impl Terminals {
    /// Lets the terminals whose commits the log has made durable go on from when it
    /// did, counting their wait as commit time; a measured transaction's latency ends then.
    fn release(&mut self, db: &mut Database, latencies: &mut Latencies) {
        let (durable, at) = (db.durable_lsn(), db.durable_at());
        for ((clock, wait), started) in self.clocks.iter_mut().zip(&mut self.waiting).zip(&mut self.started) {
            if wait.is_some_and(|lsn| lsn <= durable) {
                db.add_commit_wait(at.saturating_sub(*clock));
                *clock = (*clock).max(at);
                *wait = None;
                if let Some((start, kind)) = started.take() {
                    latencies.record_transaction(kind, clock.saturating_sub(start));
                }
            }
        }
    }
}

/// Transactions in a row that start at one simulated instant, after which a run with
/// no transaction cap stops with an error: its clock would never reach the end.
const STALL_LIMIT: u64 = 100_000;

/// Runs the workload's terminals for the warm-up and the measured time; `on_event`
/// sees the ticks and interval lines and may stop the run.
pub fn run(
    db: &mut Database,
    workload: &mut dyn Workload,
    config: &DriverConfig,
    rng: &mut ChaCha8Rng,
    on_event: &mut dyn FnMut(Event) -> Control,
) -> Result<Metrics, RunError> {
    let start = db.now();
    let warm_end = start + (config.warmup_s * 1e9) as SimTime;
    let end = warm_end + (config.duration_s * 1e9) as SimTime;
    let step = (config.progress_s * 1e9) as SimTime;
    let n = config.terminals.max(1);
    // Group commit: a terminal whose commit is not durable yet waits for its group's
    // log flush (the log end after its transaction).
    let mut terms = Terminals { clocks: vec![start; n], waiting: vec![None; n], started: vec![None; n] };
    let mut lat = Latencies::default();
    let (mut transactions, mut committed) = (0u64, 0u64);
    // Transactions in a row that started at the same instant (the time of the terminal
    // scheduled next: it moves with transactions and with log flushes alike).
    let (mut stalled, mut last_start) = (0u64, None);
    let mut warm: Option<Snapshot> = None;
    let mut last_interval: Option<Snapshot> = None;
    let mut next_interval = warm_end + step;
    let mut intervals = Vec::new();
    let mut switch = config.switch.as_ref().map(|(at, ddl)| (warm_end + (at * 1e9) as SimTime, ddl));
    let mut switch_cost = None;
    let finish = loop {
        let next =
            terms.clocks.iter().enumerate().filter(|&(t, _)| terms.waiting[t].is_none()).min_by_key(|&(_, &c)| c);
        let next = next.map(|(t, &c)| (t, c));
        if let Some(deadline) = db.group_deadline() {
            if next.is_none_or(|(_, c)| deadline <= c) {
                db.flush_group().map_err(|e| RunError::Failed(e.into()))?;
                terms.release(db, &mut lat);
                continue;
            }
        }
        let Some((terminal, now)) = next else {
            return Err(RunError::Failed("every terminal waits for a commit, but no log flush is due".into()));
        };
        if warm.is_none() && now >= warm_end {
            let s = snapshot(db, now, transactions, committed);
            last_interval = Some(s.clone());
            warm = Some(s);
            db.io_latencies_mut().reset();
        }
        if step > 0 && warm.is_some() && now >= next_interval {
            let s = snapshot(db, now, transactions, committed);
            if let Some(prev) = &last_interval {
                let p = lat.close_window(db);
                let m = metrics(prev, &s, config.terminals, Vec::new(), p, BTreeMap::new(), None);
                let line = Interval {
                    sim_seconds: (now - warm_end) as f64 / 1e9,
                    throughput_tps: m.throughput_tps,
                    read_latency_ms: m.read_latency_ms,
                    read_latency_p50_ms: p.read_p50,
                    read_latency_p99_ms: p.read_p99,
                    write_latency_ms: m.write_latency_ms,
                    write_latency_p50_ms: p.write_p50,
                    write_latency_p99_ms: p.write_p99,
                    transaction_latency_p50_ms: p.transaction_p50,
                    transaction_latency_p99_ms: p.transaction_p99,
                    gc_erases_so_far: s
                        .ftl
                        .map_or_else(|| data_regions(&s).map(|(_, c)| c.gc_erases).sum(), |f| f.gc_erases),
                    out_of_place_writes: m.out_of_place_writes,
                    in_place_appends: m.in_place_appends,
                    gc_page_migrations: m.gc_page_migrations,
                };
                let control = on_event(Event::Interval(&line));
                intervals.push(line);
                if control == Control::Stop {
                    return Err(RunError::Stopped { sim_seconds: (now - start) as f64 / 1e9 });
                }
            }
            last_interval = Some(s);
            next_interval += step;
        }
        let capped =
            warm.as_ref().zip(config.max_transactions).is_some_and(|(w, cap)| transactions - w.transactions >= cap);
        if now >= end || capped {
            break now.min(end);
        }
        db.set_now(now);
        if let Some((_, ddl)) = switch.take_if(|(at, _)| now >= *at) {
            let before = db.pool_stats();
            db.execute(ddl).map_err(RunError::SwitchDdl)?;
            if warm.is_some() {
                switch_cost = Some(SwitchCost { nanos: db.now() - now, before, after: db.pool_stats() });
            }
        }
        let logged_from = db.log_end_lsn();
        let outcome = workload.transaction(db, terminal, rng).map_err(RunError::Failed)?;
        transactions += 1;
        committed += u64::from(outcome.committed);
        let done = db.now().max(now) + outcome.operations as SimTime * config.cpu_ns_per_operation;
        terms.clocks[terminal] = done;
        stalled = if last_start == Some(now) { stalled + 1 } else { 0 };
        last_start = Some(now);
        if stalled == STALL_LIMIT && (config.max_transactions.is_none() || warm.is_none()) {
            return Err(RunError::Failed(
                format!(
                    "{STALL_LIMIT} transactions in a row started at the same simulated instant, so the \
                 run would never reach its end; its transactions take no time (no operation costs \
                 CPU time and none does I/O)"
                )
                .into(),
            ));
        }
        let measured = warm.is_some().then_some((now, outcome.kind));
        let end = db.log_end_lsn();
        if outcome.committed && db.group_deadline().is_some() && end > logged_from && db.durable_lsn() < end {
            terms.waiting[terminal] = Some(end);
            terms.started[terminal] = measured;
        } else if let Some((started, kind)) = measured {
            lat.record_transaction(kind, done - started);
        }
        terms.release(db, &mut lat);
        if transactions % 256 == 0 {
            let sim_seconds = (now - start) as f64 / 1e9;
            if on_event(Event::Tick { sim_seconds, transactions, committed }) == Control::Stop {
                return Err(RunError::Stopped { sim_seconds });
            }
        }
    };
    if warm.is_none() {
        // The warm-up never ended: nothing was measured.
        db.io_latencies_mut().reset();
    }
    let warm = warm.unwrap_or_else(|| snapshot(db, warm_end, 0, 0));
    let last = snapshot(db, finish.max(warm.time + 1), transactions, committed);
    lat.close_window(db);
    Ok(metrics(&warm, &last, config.terminals, intervals, lat.measured(), lat.measured_by_type(), switch_cost.as_ref()))
}
