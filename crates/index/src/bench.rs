//! The index benchmark (`deltaflash index-bench`, the IPL paper's §4.2–4.3 runs) as a
//! library: N inserts in random or sequential key order into one index on a device
//! sized for it, a flush, then point queries and range scans, with the flash
//! operations and simulated I/O time of each phase.
//!
//! Deterministic: one seed orders the keys and picks the queries and scans; the
//! counts, simulated times and latencies of a config are always the same (only the
//! `wall_s` fields and `wall_seconds` vary). Formatting the device (an FTL's or the IPL
//! store's erases of every block) happens before the first phase and is reported apart,
//! as the paper leaves it out of its counts.

use crate::{build, BTree, Error, IndexKind, IndexSpec, NodeStore, Storage};
use latency::LatencyHistogram;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::time::Instant;

/// Key order of the inserts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Order {
    Random,
    Sequential,
}

/// Everything a benchmark run depends on; the same config gives the same counts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IndexBenchConfig {
    pub index: IndexKind,
    pub storage: Storage,
    /// BAST/FAST log blocks (page FTL: spare blocks) as a percentage of the data blocks
    /// the tree is expected to fill.
    pub log_blocks_percent: f64,
    /// Log blocks as a count (overrides `log_blocks_percent`).
    pub log_block_count: Option<u32>,
    /// Node bytes: a whole number of flash pages.
    pub node_bytes: usize,
    /// Entries inserted: keys 1..=N, each once.
    pub inserts: u32,
    /// Nodes the LRU node buffer holds.
    pub buffer_frames: usize,
    pub order: Order,
    /// Point queries of random inserted keys after the inserts.
    pub queries: u32,
    /// Range scans after the queries, each over `scan_keys` consecutive keys.
    pub scans: u32,
    pub scan_keys: u32,
    /// BFTL: NTT pages per node before a compaction (`None`: 4 for one-page nodes, else 32).
    pub compaction_threshold: Option<usize>,
    /// IPL: bytes of each erase unit's log region, and of a log sector.
    pub log_region_bytes: u32,
    pub sector_bytes: u32,
    /// Device blocks (data blocks for FTL-based indexes, all blocks for native ones);
    /// `None`: the most the index can need.
    pub blocks: Option<u32>,
    /// Device preset: its chip shape and latencies (the size is set for the index).
    pub device: String,
    pub seed: u64,
    /// FTL-based indexes: the FTL's spare factor (`None`: the spare blocks sized from
    /// the log share).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub over_provisioning: Option<f64>,
    /// FTL-based indexes: the GC victim policy (`None`: the FTL's default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gc: Option<flash::VictimPolicy>,
}

/// The defaults of `index-bench`: the IPL paper's Tables 3–4 run (§4.2: 1,000,000
/// inserts, 8 KB nodes, the `ipl-slc` chip of its Table 1), with 100 buffer frames.
impl IndexBenchConfig {
    pub fn new(index: IndexKind) -> IndexBenchConfig {
        IndexBenchConfig {
            index,
            storage: default_storage(index),
            log_blocks_percent: 11.0,
            log_block_count: None,
            node_bytes: 8192,
            inserts: 1_000_000,
            buffer_frames: 100,
            order: Order::Random,
            queries: 100_000,
            scans: 1_000,
            scan_keys: 1_000,
            compaction_threshold: None,
            log_region_bytes: 8192,
            sector_bytes: 512,
            blocks: None,
            device: "ipl-slc".into(),
            seed: 1,
            over_provisioning: None,
            gc: None,
        }
    }
}

/// What an index stands on unless told: FAST for those on an FTL, raw flash otherwise.
pub fn default_storage(index: IndexKind) -> Storage {
    match index {
        IndexKind::Btree | IndexKind::Bftl => Storage::Fast,
        IndexKind::Ipl | IndexKind::MuTree => Storage::Native,
    }
}

/// Flash operations of one phase (or of formatting the device).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Phase {
    pub operations: u64,
    /// Page reads, copybacks included (a copyback is a read and a program on the chip).
    pub flash_reads: u64,
    /// Reads that fetch node images.
    pub node_reads: u64,
    /// IPL log pages and BFTL index-unit pages read to rebuild a node.
    pub additional_reads: u64,
    /// The rest: FTL merges, IPL block merges, μ-Tree GC.
    pub internal_reads: u64,
    pub flash_writes: u64,
    pub erases: u64,
    pub merges: u64,
    pub compactions: u64,
    pub sim_io_s: f64,
    pub wall_s: f64,
}

/// Simulated latency of one operation kind, in milliseconds (from a [`LatencyHistogram`],
/// within 1 % of the exact quantiles). `index-bench`'s JSON keeps these `_ms` names.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Latency {
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub p99_9_ms: f64,
    pub max_ms: f64,
}

impl Latency {
    /// Of a histogram of simulated nanoseconds; all 0 when it is empty.
    fn of(h: &LatencyHistogram) -> Latency {
        let ms = |q: f64| h.quantile_ms(q);
        Latency { p50_ms: ms(0.5), p95_ms: ms(0.95), p99_ms: ms(0.99), p99_9_ms: ms(0.999), max_ms: ms(1.0) }
    }
}

/// One run's outcome.
#[derive(Clone, Debug, PartialEq)]
pub struct IndexBenchResult {
    pub config: IndexBenchConfig,
    /// The store as it describes itself ("IPL B+-tree, 15 data + 4 log pages per unit").
    pub describe: String,
    pub geometry: nand::Geometry,
    pub height: u8,
    pub usage: crate::Usage,
    /// Formatting the device, before the first phase (not in the phases).
    pub format: Phase,
    pub insert: Phase,
    pub query: Phase,
    pub scan: Phase,
    /// Entries the range scans visited.
    pub scanned: u64,
    pub insert_latency: Latency,
    pub query_latency: Latency,
    pub wall_seconds: f64,
}

/// Where a run is: the phase and operations done of its total.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BenchProgress {
    pub phase: &'static str,
    pub done: u64,
    pub total: u64,
}

/// Operations between progress reports.
const PROGRESS_BATCH: u64 = 16_384;

/// Counters at one moment, to subtract.
#[derive(Clone, Copy)]
struct Snapshot {
    reads: u64,
    writes: u64,
    erases: u64,
    node_reads: u64,
    extra_reads: u64,
    merges: u64,
    compactions: u64,
    sim_ns: u64,
    wall: Instant,
}

impl Snapshot {
    fn of(tree: &BTree<Box<dyn NodeStore>>) -> Snapshot {
        let s = tree.store();
        let d = s.device().counters();
        let c = s.counters();
        // A copyback (FTL merges) is a page read and a page program on the chip.
        Snapshot {
            reads: d.page_reads + d.copybacks,
            writes: d.page_programs + d.reprograms + d.copybacks,
            erases: d.erases,
            node_reads: c.node_reads,
            extra_reads: c.extra_reads,
            merges: c.merges,
            compactions: c.compactions,
            sim_ns: s.now(),
            wall: Instant::now(),
        }
    }

    /// The phase from `self` to `end`.
    fn phase(&self, end: &Snapshot, operations: u64) -> Phase {
        let flash_reads = end.reads - self.reads;
        let node_reads = end.node_reads - self.node_reads;
        let additional_reads = end.extra_reads - self.extra_reads;
        Phase {
            operations,
            flash_reads,
            node_reads,
            additional_reads,
            internal_reads: flash_reads - node_reads - additional_reads,
            flash_writes: end.writes - self.writes,
            erases: end.erases - self.erases,
            merges: end.merges - self.merges,
            compactions: end.compactions - self.compactions,
            sim_io_s: (end.sim_ns - self.sim_ns) as f64 / 1e9,
            wall_s: end.wall.duration_since(self.wall).as_secs_f64(),
        }
    }
}

/// Calls `op` `total` times, reporting progress every [`PROGRESS_BATCH`] operations
/// and at the end; returns the calls' simulated latencies.
fn timed(
    tree: &mut BTree<Box<dyn NodeStore>>,
    phase: &'static str,
    total: u64,
    progress: &mut dyn FnMut(BenchProgress),
    mut op: impl FnMut(&mut BTree<Box<dyn NodeStore>>) -> Result<(), String>,
) -> Result<LatencyHistogram, String> {
    let mut latencies = LatencyHistogram::new();
    for done in 0..total {
        if done % PROGRESS_BATCH == 0 {
            progress(BenchProgress { phase, done, total });
        }
        let before = tree.store().now();
        op(tree)?;
        latencies.record(tree.store().now() - before);
    }
    progress(BenchProgress { phase, done: total, total });
    Ok(latencies)
}

impl IndexBenchConfig {
    /// The index's spec and the device preset's geometry, checked.
    fn spec(&self) -> Result<(IndexSpec, nand::Geometry), String> {
        let base = nand::Geometry::preset(&self.device)?;
        let spec = IndexSpec {
            index: self.index,
            storage: self.storage,
            log_share: self.log_blocks_percent / 100.0,
            log_block_count: self.log_block_count,
            node_bytes: self.node_bytes,
            buffer_frames: self.buffer_frames,
            entries: u64::from(self.inserts),
            compaction_threshold: self.compaction_threshold.unwrap_or(0),
            ipl_log_region_bytes: self.log_region_bytes,
            ipl_sector_bytes: self.sector_bytes,
            blocks: self.blocks,
            over_provisioning: self.over_provisioning,
            gc: self.gc,
        };
        Ok((spec, base))
    }

    /// Checks the config as [`run`] would, building the (empty) index: a bad preset,
    /// size or combination of index and storage is an error naming it.
    pub fn check(&self) -> Result<(), String> {
        if self.inserts == 0 || self.scan_keys == 0 || self.buffer_frames == 0 {
            return Err("index bench: inserts, scan_keys and buffer_frames must each be at least 1".into());
        }
        let (spec, base) = self.spec()?;
        build(&spec, &base).map(drop).map_err(|e| e.to_string())
    }
}

/// Runs the benchmark. `progress` sees each phase start, every 16,384 operations and
/// each phase end.
pub fn run(config: &IndexBenchConfig, progress: &mut dyn FnMut(BenchProgress)) -> Result<IndexBenchResult, String> {
    let wall = Instant::now();
    if config.inserts == 0 || config.scan_keys == 0 || config.buffer_frames == 0 {
        return Err("index bench: inserts, scan_keys and buffer_frames must each be at least 1".into());
    }
    let (spec, base) = config.spec()?;
    let err = |e: Error| e.to_string();
    let mut tree = build(&spec, &base).map_err(err)?;

    let mut rng = ChaCha8Rng::seed_from_u64(config.seed);
    let mut keys: Vec<u32> = (1..=config.inserts).collect();
    if config.order == Order::Random {
        keys.shuffle(&mut rng);
    }
    let format_end = Snapshot::of(&tree);
    let format = Phase {
        erases: format_end.erases,
        flash_writes: format_end.writes,
        flash_reads: format_end.reads,
        ..Phase::default()
    };

    let mut next = keys.iter();
    let insert_latencies = timed(&mut tree, "insert", keys.len() as u64, progress, |tree| {
        let key = *next.next().unwrap_or(&0);
        tree.insert(key, key.wrapping_mul(2_654_435_761)).map(drop).map_err(err)
    })?;
    tree.flush().map_err(err)?;
    let inserted = Snapshot::of(&tree);
    let usage = tree.store().usage();
    let height = tree.height();

    let mut missing = 0u64;
    let query_latencies = timed(&mut tree, "query", u64::from(config.queries), progress, |tree| {
        let key = rng.gen_range(1..=config.inserts);
        missing += u64::from(tree.search(key).map_err(err)?.is_none());
        Ok(())
    })?;
    if missing > 0 {
        return Err(format!("{missing} point queries did not find a key that was inserted"));
    }
    let queried = Snapshot::of(&tree);

    let mut scanned = 0u64;
    timed(&mut tree, "scan", u64::from(config.scans), progress, |tree| {
        let lo = rng.gen_range(1..=config.inserts);
        let hi = lo.saturating_add(config.scan_keys - 1);
        tree.range(lo, hi, |_, _| scanned += 1).map_err(err)
    })?;
    let scanned_at = Snapshot::of(&tree);

    Ok(IndexBenchResult {
        config: config.clone(),
        describe: tree.store().describe(),
        geometry: tree.store().device().geometry().clone(),
        height,
        usage,
        format,
        insert: format_end.phase(&inserted, u64::from(config.inserts)),
        query: inserted.phase(&queried, u64::from(config.queries)),
        scan: queried.phase(&scanned_at, u64::from(config.scans)),
        scanned,
        insert_latency: Latency::of(&insert_latencies),
        query_latency: Latency::of(&query_latencies),
        wall_seconds: wall.elapsed().as_secs_f64(),
    })
}

impl IndexBenchResult {
    /// The result as `index-bench --json` writes it, stamped with the commit of the
    /// build (`git_commit`; the caller knows it, this crate does not).
    pub fn to_json(&self, git_commit: &str) -> Value {
        let c = &self.config;
        let lower = |v: &dyn std::fmt::Debug| format!("{v:?}").to_lowercase();
        json!({
            "command": "index-bench",
            "git_commit": git_commit,
            "config": c,
            "index": lower(&c.index),
            "storage": lower(&c.storage),
            "describe": self.describe,
            "log_blocks_percent": c.log_blocks_percent,
            "node_bytes": c.node_bytes,
            "inserts": c.inserts,
            "buffer_frames": c.buffer_frames,
            "order": lower(&c.order),
            "seed": c.seed,
            "device": c.device,
            "geometry": self.geometry,
            "height": self.height,
            "used_blocks": self.usage.used_blocks,
            "log_blocks": self.usage.log_blocks,
            "total_blocks": self.usage.total_blocks,
            "format": json!({ "erases": self.format.erases, "flash_writes": self.format.flash_writes, "flash_reads": self.format.flash_reads }),
            "phases": { "insert": self.insert, "query": self.query, "scan": self.scan },
            "scanned_entries": self.scanned,
            "insert_latency": self.insert_latency,
            "query_latency": self.query_latency,
            "wall_seconds": self.wall_seconds,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latency_quantiles_are_in_milliseconds_and_zero_when_empty() {
        let mut h = LatencyHistogram::new();
        assert_eq!(Latency::of(&h), Latency::default());
        (1..=1000).for_each(|v| h.record(v * 1_000_000));
        let l = Latency::of(&h);
        let want = [500.0, 950.0, 990.0, 999.0, 1000.0];
        for (got, want) in [l.p50_ms, l.p95_ms, l.p99_ms, l.p99_9_ms, l.max_ms].into_iter().zip(want) {
            assert!((got - want).abs() <= want * 0.01, "{got} ms, nearest rank {want} ms");
        }
    }
}
