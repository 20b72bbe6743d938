//! `deltaflash index-bench`: one flash-aware B+-tree (IPL B+-tree, a traditional
//! B+-tree on an FTL, BFTL, μ-Tree) on the IPL paper's Table 1 chip: N inserts in random
//! or sequential key order, then point queries and range scans; flash reads (node reads
//! and additional log/page reads), writes, erases, merges, blocks used and simulated
//! I/O time per phase (ipl-btree-in-page-logging.txt §4.2–4.3, Fig. 6, Tables 3–4).
//! The indexes on an FTL take the FTL flags (`FtlArgs`: --log-blocks, --over-provisioning,
//! --gc; the knobs of DFTL and NoLgn-FTL are refused, neither is an index storage here),
//! recorded in the JSON's `config`.

use crate::ftl_args::FtlArgs;
use crate::output::OverwriteArg;
use crate::table::{print_table, Row};
use clap::{Args, ValueEnum};
use flash::ftl::FtlKind;
use index::bench::{self, BenchProgress, IndexBenchConfig, Phase};
use index::{IndexKind, Storage};
use indicatif::ProgressBar;
use std::path::PathBuf;

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
pub enum OrderArg {
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
    /// the tree is expected to fill (random inserts fill nodes to ln 2 ≈ 69%); --log-blocks
    /// (a count; the paper's Fig. 6 uses 16 and 32) and --over-provisioning override it.
    #[arg(long, default_value_t = 11.0, value_parser = percent)]
    log_blocks_percent: f64,
    /// The FTL's knobs (btree and bftl, on page, bast or fast; refused on native storage).
    #[command(flatten)]
    ftl: FtlArgs,
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
    #[arg(long, value_enum, default_value_t = OrderArg::Random)]
    order: OrderArg,
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

impl IndexBenchArgs {
    /// The library's config of these arguments; an FTL flag is refused where the index
    /// stands on no FTL or the FTL has no such knob.
    fn config(&self) -> Result<IndexBenchConfig, String> {
        let index = match self.index {
            IndexArg::Ipl => IndexKind::Ipl,
            IndexArg::Btree => IndexKind::Btree,
            IndexArg::Bftl => IndexKind::Bftl,
            IndexArg::Mutree => IndexKind::MuTree,
        };
        let storage = match self.storage {
            Some(StorageArg::Page) => Storage::Page,
            Some(StorageArg::Bast) => Storage::Bast,
            Some(StorageArg::Fast) => Storage::Fast,
            Some(StorageArg::Native) => Storage::Native,
            None => bench::default_storage(index),
        };
        let kind = match storage {
            Storage::Page => FtlKind::Page,
            Storage::Bast => FtlKind::Bast,
            Storage::Fast => FtlKind::Fast,
            Storage::Native => {
                let index = self.index.to_possible_value().map(|v| v.get_name().to_string()).unwrap_or_default();
                let what = format!("--index {index} on --storage native");
                self.ftl.refuse_without(&what, "btree and bftl run on an FTL: --storage page, bast or fast")?;
                FtlKind::Page
            }
        };
        self.ftl.knobs.check_kind(kind)?;
        Ok(IndexBenchConfig {
            index,
            storage,
            log_blocks_percent: self.log_blocks_percent,
            log_block_count: self.ftl.knobs.log_blocks,
            node_bytes: self.node_bytes,
            inserts: self.inserts,
            buffer_frames: self.buffer_frames,
            order: match self.order {
                OrderArg::Random => bench::Order::Random,
                OrderArg::Sequential => bench::Order::Sequential,
            },
            queries: self.queries,
            scans: self.scans,
            scan_keys: self.scan_keys,
            compaction_threshold: self.compaction_threshold,
            log_region_bytes: self.log_region_bytes,
            sector_bytes: self.sector_bytes,
            blocks: self.blocks,
            device: self.device.clone(),
            seed: self.seed,
            over_provisioning: self.ftl.over_provisioning,
            gc: self.ftl.gc,
        })
    }
}

pub fn run(args: IndexBenchArgs) -> Result<(), String> {
    let json = args.overwrite.check("--json", args.json.as_deref())?;
    let config = args.config()?;
    let mut bar: Option<(&str, ProgressBar)> = None;
    let r = bench::run(&config, &mut |p: BenchProgress| {
        if bar.as_ref().is_none_or(|(phase, _)| *phase != p.phase) {
            if let Some((_, old)) = bar.take() {
                old.finish_and_clear();
            }
            bar = Some((p.phase, crate::progress(p.total, p.phase)));
        }
        if let Some((_, b)) = &bar {
            b.set_position(p.done);
        }
    });
    if let Some((_, b)) = bar {
        b.finish_and_clear();
    }
    let r = r?;
    eprintln!("{} on {} blocks, {} frames", r.describe, r.geometry.total_blocks(), config.buffer_frames);
    print_phases(&[("insert", &r.insert), ("query", &r.query), ("scan", &r.scan)]);
    println!(
        "  height {}; blocks used {} data + {} log of {} total; {} entries scanned; \
         format (not in the phases): {} erases, {} writes",
        r.height,
        r.usage.used_blocks,
        r.usage.log_blocks,
        r.usage.total_blocks,
        r.scanned,
        r.format.erases,
        r.format.flash_writes
    );
    if config.index == IndexKind::MuTree && config.scans > 0 {
        println!("  μ-Tree range scan is our extension (one descent per leaf; the paper's μ-Tree has none)");
    }
    if let Some(file) = &json {
        let mut value = r.to_json(workloads::experiment::GIT_COMMIT);
        if let Some(object) = value.as_object_mut() {
            object.extend(crate::rerun::build_info().map(|(k, v)| (k.to_string(), v)));
        }
        // `deltaflash rerun` runs a flag-configured command from its config's command line.
        if let Some(config) = value.get_mut("config").and_then(|c| c.as_object_mut()) {
            config.insert("command_line".into(), serde_json::json!(crate::rerun::command_line()));
        }
        let text = serde_json::to_string_pretty(&value).map_err(|e| e.to_string())?;
        file.write((text + "\n").as_bytes())?;
    }
    Ok(())
}

fn print_phases(phases: &[(&str, &Phase)]) {
    let header = [
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
    ];
    let mut rows = vec![Row::new(header.map(String::from).to_vec())];
    for (name, p) in phases {
        let counts = [
            p.operations,
            p.flash_reads,
            p.node_reads,
            p.additional_reads,
            p.internal_reads,
            p.flash_writes,
            p.erases,
            p.merges,
        ];
        let mut row = vec![name.to_string()];
        row.extend(counts.iter().map(u64::to_string));
        row.extend([p.sim_io_s, p.wall_s].iter().map(|v| format!("{v:.2}")));
        rows.push(Row::new(row));
    }
    print_table(&rows);
}
