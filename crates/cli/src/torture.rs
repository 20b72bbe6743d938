//! `deltaflash torture`: the bank workload cut at N random flash operations; after each
//! cut the database restarts and is checked (`workloads::bank`). `--engine sqlite` runs
//! the SQLite torture ([`crate::sqlite_torture`]) instead; both make their cuts and
//! write their `--json` summary through [`crate::power_cuts`].

use crate::ftl_args::FtlArgs;
use crate::output::OverwriteArg;
use crate::power_cuts::{cut_loop, Torture};
use crate::setup::DeviceArgs;
use clap::Args;
use flash::ftl::{FtlConfig, FtlKind};
use serde_json::json;
use std::path::PathBuf;
use workloads::bank::{count_operations, run_cut, BankConfig, CutKinds};
use workloads::config::IplStorageConfig;

#[derive(Args)]
pub struct TortureArgs {
    /// The device; unless given, 4 chips × 32 blocks (64 for the log-block FTLs) × 16
    /// pages of the preset.
    #[command(flatten)]
    device: DeviceArgs,
    /// Power cuts to run, each at a random flash operation of the workload (≥ 1).
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    cuts: u32,
    /// Seed of every random choice (cut points, transfers).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// IPA scheme NxM of the bank's region (0x0: none) [default: 2x4, or 0x0 with
    /// --storage ipl, which takes no other].
    #[arg(long)]
    ipa: Option<String>,
    /// What the database is written through: `noftl` (regions on raw flash), `ipl`
    /// (In-Page Logging over the whole device: 1-block units, 8 KiB log region, 512 B
    /// sectors) or `ftl:KIND` (a conventional FTL, 25% spare; `ftl:nolgn` runs the
    /// engine with no log, its commits NoLgn-FTL transactions).
    #[arg(long, default_value = "noftl")]
    storage: String,
    /// IPA mode of the bank's region: slc, pslc or odd-mlc (the device's cells must fit).
    #[arg(long, default_value = "auto")]
    ipa_mode: String,
    /// Bank accounts (at least 2, so a transfer has two ends).
    #[arg(long, default_value_t = 2000, value_parser = clap::value_parser!(u32).range(2..=10_000_000))]
    accounts: u32,
    /// Transfers per run (a cut ends the run sooner), ≥ 1.
    #[arg(long, default_value_t = 800, value_parser = clap::value_parser!(u32).range(1..=10_000_000))]
    transfers: u32,
    /// Buffer pool frames (small, so pages are evicted mid-transaction), 4 to 1,048,576.
    #[arg(long, default_value_t = 16, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(4..=1 << 20))]
    buffer_pages: usize,
    /// Group-commit window in simulated µs (transfers start 20 µs apart); 0 forces the
    /// log at every commit. At most 10 s.
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u64).range(0..=10_000_000))]
    group_commit_us: u64,
    /// Unforced log bytes past which full log pages are written ahead of the commit
    /// (default: the engine's 4 MiB; 0 writes every full page as soon as it fills, so
    /// the cuts land among pages written ahead too). At most 1 GiB.
    #[arg(long, value_parser = clap::value_parser!(u64).range(0..=workloads::limits::LOG_BUFFER_BYTES.max))]
    log_buffer_bytes: Option<u64>,
    /// DB page size: 4096, 8192 or 16384, a multiple of the flash page (default: 4096,
    /// or the flash page where that is larger). A DB page of several flash pages is
    /// written as one atomic group on noftl and ipl; an FTL writes its parts one by one,
    /// and the log's full-page images repair a page a cut tears between them. The cuts
    /// land between the parts too.
    #[arg(long, value_parser = crate::sql::db_page_size)]
    db_page_bytes: Option<usize>,
    #[command(flatten)]
    sqlite: crate::sqlite_torture::SqliteTortureArgs,
    /// The FTL's knobs, over the torture's defaults (25% spare; the SQLite torture's 8
    /// log blocks) with --storage ftl:KIND or --engine sqlite; refused on noftl and ipl.
    #[command(flatten)]
    ftl_flags: FtlArgs,
    /// Write the summary (config, cut points, checks, failures) as JSON to this file (a
    /// new file; see --overwrite).
    #[arg(long)]
    json: Option<PathBuf>,
    #[command(flatten)]
    overwrite: OverwriteArg,
}

pub fn run(args: TortureArgs) -> Result<bool, String> {
    let json = args.overwrite.check("--json", args.json.as_deref())?;
    // A small device unless told otherwise, so GC and the log's wrap-around are cut too;
    // twice the blocks for the log-block FTLs, whose log blocks and merge spares would
    // not fit beside the data blocks of 128.
    let mut device = args.device.clone();
    device.chips = device.chips.or(Some(4));
    let log_block_ftl = matches!(args.storage.as_str(), "ftl:bast" | "ftl:fast");
    device.blocks_per_chip = device.blocks_per_chip.or(Some(if log_block_ftl { 64 } else { 32 }));
    device.pages_per_block = device.pages_per_block.or(Some(16));
    let geometry = device.geometry()?;
    device.check_memory(&geometry)?;
    if args.device.no_data || args.device.image.is_some() {
        return Err("torture runs on in-memory devices with data; drop --no-data and --image".into());
    }
    if args.sqlite.engine == crate::sqlite_torture::Engine::Sqlite {
        let (cuts, seed) = (args.cuts, args.seed);
        let sqlite = &args.sqlite;
        let mut torture =
            crate::sqlite_torture::run(sqlite, &args.ftl_flags, geometry, cuts, seed, args.accounts, args.transfers)?;
        torture.config["device"] = json!(device.device);
        return torture.finish(json.as_ref());
    }
    let ipa_mode = match args.ipa_mode.as_str() {
        "auto" if geometry.cell == nand::CellType::Slc => "slc".to_string(),
        "auto" => "odd-mlc".to_string(),
        m => m.to_string(),
    };
    let ipl = (args.storage == "ipl").then(IplStorageConfig::default);
    let ftl = match args.storage.strip_prefix("ftl:") {
        Some(kind) => {
            let kind = FtlKind::parse(kind).ok_or_else(|| {
                format!("--storage {}: no such FTL (page, dftl, block, bast, fast or nolgn)", args.storage)
            })?;
            // A quarter spare: GC's free blocks per chip on the small default device.
            let mut config = FtlConfig { over_provisioning: 0.25, ..FtlConfig::new(kind) };
            args.ftl_flags.apply(&mut config)?;
            Some(config)
        }
        None if ipl.is_none() && args.storage != "noftl" => {
            return Err(format!("--storage {}: expected noftl, ipl or ftl:KIND", args.storage))
        }
        None => {
            args.ftl_flags.refuse_without_ftl(&format!("--storage {}", args.storage))?;
            None
        }
    };
    let whole_device = ipl.is_some() || ftl.is_some();
    let ipa = args.ipa.clone().unwrap_or_else(|| if whole_device { "0x0" } else { "2x4" }.to_string());
    if whole_device && ipa != "0x0" {
        return Err(format!(
            "--ipa {ipa}: --storage {} has no in-place appends (In-Page Logging logs page changes itself, an FTL \
             refuses them); it takes --ipa 0x0 only",
            args.storage
        ));
    }
    let config = BankConfig {
        geometry,
        accounts: args.accounts,
        transfers: args.transfers,
        abort_share: 0.1,
        ipa: ipa.clone(),
        ipa_mode,
        buffer_pages: args.buffer_pages,
        group_commit_ns: args.group_commit_us * 1000,
        log_buffer_bytes: args.log_buffer_bytes,
        db_page_bytes: args.db_page_bytes,
        ipl,
        ftl,
    };
    let (load_ops, run_ops) = count_operations(&config, args.seed)?;
    eprintln!(
        "bank on {}: {} accounts, {} transfers ({run_ops} flash operations after a {load_ops}-operation load), IPA [{ipa}]; {} cuts",
        args.storage, args.accounts, args.transfers, args.cuts
    );
    let mut kinds = CutKinds::default();
    let tally = cut_loop(args.cuts, args.seed, run_ops, |cut_after, restart_cut| {
        let result = run_cut(&config, args.seed, load_ops, cut_after, restart_cut, &mut kinds);
        result.outcome.map(|()| result.acknowledged)
    });
    println!(
        "cuts hit: {} out-of-place writes, {} write_deltas, {} GC migrations, {} erases, {} log writes, {} missed; {} restarts cut again",
        kinds.out_of_place_writes,
        kinds.write_deltas,
        kinds.gc_migrations,
        kinds.erases,
        kinds.log_writes,
        kinds.missed,
        kinds.restarts_cut
    );
    let g = &config.geometry;
    let torture = Torture {
        config: json!({
            "engine": "deltaflash",
            "storage": args.storage,
            "ftl": config.ftl,
            "ipl": config.ipl,
            "journal": if config.ftl.as_ref().is_some_and(|f| f.kind == FtlKind::Nolgn) { "nolgn" } else { "aries" },
            "device": device.device,
            "geometry": g,
            "db_page_bytes": config.db_page_bytes.unwrap_or((g.page_bytes as usize).max(4096)),
            "seed": args.seed,
            "cuts": args.cuts,
            "accounts": config.accounts,
            "transfers": config.transfers,
            "abort_share": config.abort_share,
            "ipa": config.ipa,
            "ipa_mode": config.ipa_mode,
            "buffer_pages": config.buffer_pages,
            "group_commit_us": args.group_commit_us,
            "log_buffer_bytes": config.log_buffer_bytes,
        }),
        load_operations: load_ops,
        run_operations: run_ops,
        tally,
        cuts_hit: json!(kinds),
    };
    torture.finish(json.as_ref())
}
