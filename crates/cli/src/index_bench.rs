//! `deltaflash index-bench`: one flash-aware B+-tree (IPL B+-tree, a traditional
//! B+-tree on an FTL, BFTL, μ-Tree) on the IPL paper's Table 1 chip: N inserts in random
//! or sequential key order, then point queries and range scans; flash reads (node reads
//! and additional log/page reads), writes, erases, merges, blocks used and simulated
//! I/O time per phase (ipl-btree-in-page-logging.txt §4.2–4.3, Fig. 6, Tables 3–4).

use crate::output::OverwriteArg;
use crate::table::{print_table, Row};
use clap::{Args, ValueEnum};
use index::{build, BTree, IndexKind, IndexSpec, NodeStore, Storage};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::json;
use std::path::PathBuf;
use std::time::Instant;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum IndexArg {
    Ipl,
    Btree,
    Bftl,
    Mutree,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum StorageArg {
    Page,
    Bast,
    Fast,
    Native,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Order {
    Random,
    Sequential,
}

#[derive(Args)]
pub struct IndexBenchArgs {
    /// Which index: ipl, btree (traditional, on an FTL), bftl, mutree.
    #[arg(long, value_enum)]
    index: IndexArg,
    /// What it stands on: page, bast, fast (btree, bftl) or native (ipl, mutree);
    /// default fast for btree and bftl, native otherwise.
    #[arg(long, value_enum)]
    storage: Option<StorageArg>,
    /// BAST/FAST log blocks (page FTL: spare blocks) as a percentage of the data blocks
    /// the tree is expected to fill (random inserts fill nodes to ln 2 ≈ 69%).
    #[arg(long, default_value_t = 11.0, value_parser = percent)]
    log_blocks: f64,
    /// BAST/FAST log blocks as a count (overrides --log-blocks; the paper's Fig. 6 uses 16 and 32).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1 << 20))]
    log_block_count: Option<u32>,
    /// Node bytes: a whole number of flash pages (2048 or 8192 on the IPL chip).
    #[arg(long, default_value_t = 8192, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(512..=65536))]
    node_bytes: usize,
    /// Entries inserted (keys 1..=N, each once), ≥ 1.
    #[arg(long, default_value_t = 1_000_000, value_parser = clap::value_parser!(u32).range(1..=1 << 30))]
    inserts: u32,
    /// Nodes the LRU node buffer holds, ≥ 1.
    #[arg(long, default_value_t = 100, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=1 << 24))]
    buffer_frames: usize,
    /// Key order of the inserts.
    #[arg(long, value_enum, default_value_t = Order::Random)]
    order: Order,
    /// Point queries after the inserts (random inserted keys).
    #[arg(long, default_value_t = 100_000, value_parser = clap::value_parser!(u32).range(0..=1 << 30))]
    queries: u32,
    /// Range scans after the queries, each over `--scan-keys` consecutive keys.
    #[arg(long, default_value_t = 1_000, value_parser = clap::value_parser!(u32).range(0..=1 << 30))]
    scans: u32,
    /// Keys per range scan, ≥ 1.
    #[arg(long, default_value_t = 1_000, value_parser = clap::value_parser!(u32).range(1..=1 << 30))]
    scan_keys: u32,
    /// BFTL: NTT pages per node before a compaction (default 4 for one-page nodes, else 32).
    #[arg(long, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=4096))]
    compaction_threshold: Option<usize>,
    /// IPL: bytes of each erase unit's log region (whole flash pages).
    #[arg(long, default_value_t = 8192, value_parser = clap::value_parser!(u32).range(1..=1 << 24))]
    log_region_bytes: u32,
    /// IPL: bytes of a log sector (one partial program).
    #[arg(long, default_value_t = 512, value_parser = clap::value_parser!(u32).range(1..=65536))]
    sector_bytes: u32,
    /// Device blocks: data blocks for btree/bftl (default: the most the index can need),
    /// all blocks for native indexes.
    #[arg(long, value_parser = clap::value_parser!(u32).range(3..=1 << 24))]
    blocks: Option<u32>,
    /// Device preset (its chip shape and latencies; the size is set for the index).
    #[arg(long, default_value = "ipl-slc")]
    device: String,
    /// Seed of the key order, values and queries.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Write the results as JSON to this file (a new file; see --overwrite).
    #[arg(long)]
    json: Option<PathBuf>,
    #[command(flatten)]
    overwrite: OverwriteArg,
}

fn percent(text: &str) -> Result<f64, String> {
    let v: f64 = text.parse().map_err(|_| format!("`{text}` is not a number"))?;
    if !(0.0..=1000.0).contains(&v) {
        return Err(format!("{v} is not a percentage in [0, 1000]"));
    }
    Ok(v)
}

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

    /// The phase from `self` to `end` as a JSON object.
    fn phase(&self, end: &Snapshot, operations: u64) -> serde_json::Value {
        let reads = end.reads - self.reads;
        let node_reads = end.node_reads - self.node_reads;
        let extra_reads = end.extra_reads - self.extra_reads;
        json!({
            "operations": operations,
            "flash_reads": reads,
            "node_reads": node_reads,
            "additional_reads": extra_reads,
            "internal_reads": reads - node_reads - extra_reads,
            "flash_writes": end.writes - self.writes,
            "erases": end.erases - self.erases,
            "merges": end.merges - self.merges,
            "compactions": end.compactions - self.compactions,
            "sim_io_s": (end.sim_ns - self.sim_ns) as f64 / 1e9,
            "wall_s": end.wall.duration_since(self.wall).as_secs_f64(),
        })
    }
}

/// One phase's operation latencies in simulated nanoseconds (an HDR histogram, as the
/// engine keeps its page I/O's: `engine::latency`).
struct OpLatency(hdrhistogram::Histogram<u64>);

impl OpLatency {
    fn new() -> OpLatency {
        OpLatency(engine::latency::histogram())
    }

    fn record(&mut self, ns: u64) {
        self.0.saturating_record(ns.max(1));
    }

    /// `p50`, `p95`, `p99`, `p99_9` and `max` in µs; 0 for a phase without operations.
    fn percentiles_us(&self) -> [(&'static str, f64); 5] {
        let q = |q: f64| if self.0.is_empty() { 0.0 } else { self.0.value_at_quantile(q) as f64 / 1e3 };
        [("p50", q(0.5)), ("p95", q(0.95)), ("p99", q(0.99)), ("p99_9", q(0.999)), ("max", self.0.max() as f64 / 1e3)]
    }
}

pub fn run(args: IndexBenchArgs) -> Result<(), String> {
    let json = args.overwrite.check("--json", args.json.as_deref())?;
    let kind = match args.index {
        IndexArg::Ipl => IndexKind::Ipl,
        IndexArg::Btree => IndexKind::Btree,
        IndexArg::Bftl => IndexKind::Bftl,
        IndexArg::Mutree => IndexKind::MuTree,
    };
    let storage = match args.storage {
        Some(StorageArg::Page) => Storage::Page,
        Some(StorageArg::Bast) => Storage::Bast,
        Some(StorageArg::Fast) => Storage::Fast,
        Some(StorageArg::Native) => Storage::Native,
        None if matches!(kind, IndexKind::Btree | IndexKind::Bftl) => Storage::Fast,
        None => Storage::Native,
    };
    let base = nand::Geometry::preset(&args.device)?;
    let spec = IndexSpec {
        index: kind,
        storage,
        log_share: args.log_blocks / 100.0,
        log_block_count: args.log_block_count,
        node_bytes: args.node_bytes,
        buffer_frames: args.buffer_frames,
        entries: args.inserts as u64,
        compaction_threshold: args.compaction_threshold.unwrap_or(0),
        ipl_log_region_bytes: args.log_region_bytes,
        ipl_sector_bytes: args.sector_bytes,
        blocks: args.blocks,
    };
    let err = |e: index::Error| e.to_string();
    let mut tree = build(&spec, &base).map_err(err)?;
    eprintln!(
        "{} on {} blocks, {} frames",
        tree.store().describe(),
        tree.store().device().geometry().total_blocks(),
        args.buffer_frames
    );

    let mut rng = ChaCha8Rng::seed_from_u64(args.seed);
    let mut keys: Vec<u32> = (1..=args.inserts).collect();
    if args.order == Order::Random {
        keys.shuffle(&mut rng);
    }
    // What building the index cost (formatting: an FTL's or the IPL store's erases of
    // every block) is reported apart; the phases count from here, as the paper does.
    let start = Snapshot::of(&tree);
    let mut done = 0usize;
    let mut latencies = [OpLatency::new(), OpLatency::new(), OpLatency::new()];
    crate::with_progress(keys.len() as u64, "insert", || {
        let key = keys[done];
        done += 1;
        let t0 = tree.store().now();
        tree.insert(key, key.wrapping_mul(2_654_435_761)).map_err(err)?;
        latencies[0].record(tree.store().now() - t0);
        Ok(())
    })?;
    tree.flush().map_err(err)?;
    let inserted = Snapshot::of(&tree);
    let usage = tree.store().usage();
    let height = tree.height();

    let mut missing = 0u64;
    crate::with_progress(args.queries as u64, "query", || {
        let key = rng.gen_range(1..=args.inserts);
        let t0 = tree.store().now();
        missing += u64::from(tree.search(key).map_err(err)?.is_none());
        latencies[1].record(tree.store().now() - t0);
        Ok(())
    })?;
    if missing > 0 {
        return Err(format!("{missing} point queries did not find a key that was inserted"));
    }
    let queried = Snapshot::of(&tree);

    let mut scanned = 0u64;
    crate::with_progress(args.scans as u64, "scan", || {
        let lo = rng.gen_range(1..=args.inserts);
        let hi = lo.saturating_add(args.scan_keys - 1);
        let t0 = tree.store().now();
        tree.range(lo, hi, |_, _| scanned += 1).map_err(err)?;
        latencies[2].record(tree.store().now() - t0);
        Ok(())
    })?;
    let scanned_at = Snapshot::of(&tree);

    let mut phases = [
        ("insert", start.phase(&inserted, args.inserts as u64)),
        ("query", inserted.phase(&queried, args.queries as u64)),
        ("scan", queried.phase(&scanned_at, args.scans as u64)),
    ];
    let mut latency_rows =
        vec![Row::new(["phase", "p50 µs", "p95 µs", "p99 µs", "p99.9 µs", "max µs"].map(String::from).to_vec())];
    for ((name, p), latency) in phases.iter_mut().zip(&latencies) {
        let percentiles = latency.percentiles_us();
        let mut row = vec![name.to_string()];
        row.extend(percentiles.iter().map(|(_, v)| format!("{v:.1}")));
        latency_rows.push(Row::new(row));
        p["latency_us"] = percentiles.into_iter().map(|(k, v)| (k.to_string(), json!(v))).collect();
    }
    let mut rows = vec![Row::new(
        [
            "phase",
            "ops",
            "reads",
            "node reads",
            "add. reads",
            "internal reads",
            "writes",
            "erases",
            "merges",
            "sim I/O s",
            "wall s",
        ]
        .map(String::from)
        .to_vec(),
    )];
    for (name, p) in &phases {
        let n = |k: &str| p[k].as_u64().unwrap_or(0).to_string();
        let f = |k: &str| format!("{:.2}", p[k].as_f64().unwrap_or(0.0));
        rows.push(Row::new(vec![
            name.to_string(),
            n("operations"),
            n("flash_reads"),
            n("node_reads"),
            n("additional_reads"),
            n("internal_reads"),
            n("flash_writes"),
            n("erases"),
            n("merges"),
            f("sim_io_s"),
            f("wall_s"),
        ]));
    }
    print_table(&rows);
    print_table(&latency_rows);
    println!(
        "  height {height}; blocks used {} data + {} log of {} total; {} entries scanned; \
         format (not in the phases): {} erases, {} writes",
        usage.used_blocks, usage.log_blocks, usage.total_blocks, scanned, start.erases, start.writes
    );
    if kind == IndexKind::MuTree && args.scans > 0 {
        println!("  μ-Tree range scan is our extension (one descent per leaf; the paper's μ-Tree has none)");
    }
    if let Some(file) = &json {
        let mut value = json!({
            "command": "index-bench",
            "config": {
                "index": format!("{:?}", args.index).to_lowercase(),
                "storage": format!("{storage:?}").to_lowercase(),
                "describe": tree.store().describe(),
                "log_blocks_percent": args.log_blocks,
                "log_block_count": args.log_block_count,
                "node_bytes": args.node_bytes,
                "inserts": args.inserts,
                "buffer_frames": args.buffer_frames,
                "order": format!("{:?}", args.order).to_lowercase(),
                "queries": args.queries,
                "scans": args.scans,
                "scan_keys": args.scan_keys,
                "compaction_threshold": spec.compaction_threshold,
                "log_region_bytes": args.log_region_bytes,
                "sector_bytes": args.sector_bytes,
                "blocks": args.blocks,
                "seed": args.seed,
                "device": args.device,
                "geometry": tree.store().device().geometry(),
                "command_line": crate::rerun::command_line(),
            },
            "height": height,
            "used_blocks": usage.used_blocks,
            "log_blocks": usage.log_blocks,
            "total_blocks": usage.total_blocks,
            "format": json!({ "erases": start.erases, "flash_writes": start.writes, "flash_reads": start.reads }),
            "phases": phases.iter().map(|(n, p)| (n.to_string(), p.clone())).collect::<serde_json::Map<_, _>>(),
        });
        for (key, v) in crate::rerun::build_info() {
            value[key] = v;
        }
        let text = serde_json::to_string_pretty(&value).map_err(|e| e.to_string())?;
        file.write((text + "\n").as_bytes())?;
    }
    Ok(())
}
