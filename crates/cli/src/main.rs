//! `deltaflash` — the DeltaFlash command line.

#![forbid(unsafe_code)]

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `println!` for every command: standard output that went away (`deltaflash … | head`)
/// ends the output, not the command, so its work and files are unaffected (std's macro
/// panics on a broken pipe).
macro_rules! println {
    () => {
        $crate::write_to(&mut std::io::stdout(), format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::write_to(&mut std::io::stdout(), format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// `eprintln!` that, like [`println!`], never panics when standard error is closed.
macro_rules! eprintln {
    ($($arg:tt)*) => {
        $crate::write_to(&mut std::io::stderr(), format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// What [`println!`] and [`eprintln!`] write, one line at a time; a reader that is gone
/// is not an error of the command.
fn write_to(out: &mut dyn std::io::Write, line: std::fmt::Arguments) {
    let _ = out.write_fmt(line);
}

mod advise;
mod bench;
mod compare;
mod demo;
mod engine_bench;
mod ftl_args;
mod index_bench;
mod inspect;
mod log_export;
mod memory;
mod mount;
mod output;
mod power_cuts;
mod recovery_bench;
mod replay;
mod reproduce;
mod rerun;
mod runner;
mod serve;
mod setup;
mod shell;
mod sql;
mod sqlite_bench;
mod sqlite_compare;
mod sqlite_shell;
mod sqlite_torture;
mod sweep;
mod table;
mod torture;
mod trace;
mod workload;

use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use runner::{Measured, Runner, Target};
use serde_json::json;
use std::collections::VecDeque;
use std::path::PathBuf;
use std::process::ExitCode;
use table::{print_table, Row};
use workload::{Pattern, PatternKind};

#[derive(Parser)]
#[command(name = "deltaflash", version, about = "DeltaFlash: in-place appends on emulated native flash")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Drive one NoFTL region (with appends) or a conventional FTL over the whole device
    /// (--ftl KIND) with synthetic page writes; report write amplification, GC work,
    /// latency and simulator speed.
    FtlBench(FtlBenchArgs),
    /// Replay a trace against one region or an FTL: our page traces (W/R/D/T lines) or
    /// block traces (MSR Cambridge, blkparse, fio iolog, SPC), closed or open timing;
    /// reports latency percentiles. docs/traces.md describes the formats.
    Replay(replay::ReplayArgs),
    /// An SQL shell on a database image (created if new): DDL (CREATE REGION /
    /// TABLESPACE / TABLE / INDEX, DROP), INSERT, SELECT, UPDATE, DELETE, BEGIN/COMMIT,
    /// and the dot commands .help .tables .schema .stats .mode .quit. Interactive on a
    /// terminal; from a pipe or file each statement runs as soon as its `;` arrives.
    Sql(sql::SqlArgs),
    /// Real SQLite on emulated flash: an SQLite shell whose files live on a conventional
    /// FTL (--storage ftl:page …), persisted to --image; .stats shows flash counters.
    Sqlite(sqlite_shell::SqliteArgs),
    /// Run a registered OLTP workload (--workload) on the emulated device in simulated
    /// time and report the IPA paper's metrics; --config FILE.toml describes a whole run.
    /// With --engine sqlite: sqlite-bench, ycsb, tpcc or tpcb on real SQLite.
    Bench(bench::BenchCommand),
    /// Run a workload under several [N×M] schemes on the same seed; print a table shaped
    /// like the paper's Table 7. With --engines: our engine and SQLite on the same flash.
    Compare(compare::CompareCommand),
    /// The IPA advisor: run a baseline without IPA (or read one: --analyze), report per
    /// table and index its update sizes, skew and read/write ratio, and recommend an IPA
    /// region layout ([N×M], V, mode, tables) with the predicted effect.
    Advise(advise::AdviseArgs),
    /// The ARIES log of a database image: `log export IMAGE --out FILE` writes it as
    /// JSON lines (the catalog's objects, then one record a line), which `advise --log`
    /// reads.
    Log(log_export::LogArgs),
    /// The IPA demo's scenarios on one seed: baseline, advisor, global IPA, selective
    /// IPA in the advised regions, side by side.
    Demo(demo::DemoArgs),
    /// Check a workload's consistency conditions (TPC-C 1–4, TPC-B balances) on a
    /// database image written by `bench --image`.
    Check(bench::CheckCommand),
    /// The TPC-B transaction on SQLite (WAL, tmpfs) and on DeltaFlash: transactions per
    /// wall-second for both.
    SqliteCompare(sqlite_compare::SqliteCompareArgs),
    /// Engine CPU speed: point lookups, updates and inserts per wall-second, and the
    /// cost of a page write with and without IPA bookkeeping.
    EngineBench(engine_bench::EngineBenchArgs),
    /// Log bytes and writes per transaction, and restart time against the log a
    /// restart has to read.
    RecoveryBench(recovery_bench::RecoveryBenchArgs),
    /// Power-cut torture: a bank workload cut at N random flash operations, each followed
    /// by restart recovery and consistency checks. Exits non-zero on any failure.
    ///
    /// The device is small unless given (4 chips × 32 blocks × 16 pages of the preset;
    /// 64 blocks for ftl:bast and ftl:fast), so GC and the log's wrap-around are cut too.
    Torture(torture::TortureArgs),
    /// Flash-aware B+-trees (IPL B+-tree, B+-tree on an FTL, BFTL, μ-Tree): inserts,
    /// point queries and range scans with their flash reads, writes, erases and merges.
    IndexBench(index_bench::IndexBenchArgs),
    /// The web dashboard: new runs (the IPA demo's four scenarios), live throughput and
    /// flash counters, compare, analyzer and device views, run history under --data.
    Serve(serve::ServeArgs),
    /// Run every point of a parameter grid (grid.toml: `[base]` config, `[grid]` fields →
    /// values) as independent seeded experiments, in parallel; results are written as
    /// JSON lines as they finish, and a sweep resumes from its file. --ray: on Ray,
    /// through the Python package.
    Sweep(sweep::SweepArgs),
    /// Run a recorded result again from the config in its JSON (bench, compare, sweep,
    /// ftl-bench, replay, index-bench, engine-bench, recovery-bench, sqlite-compare,
    /// torture) and say whether the simulated and seeded values are identical (wall-clock
    /// values, those under keys holding `wall`, are not compared); exits non-zero if any
    /// differ. A run reproduce kept re-runs with `deltaflash rerun DIR/runs/KEY.json`.
    Rerun(rerun::RerunArgs),
    /// Run the papers' tables and figures and compare every cell with the paper's value
    /// (within, direction, opposite, n/a); --list names the experiments.
    Reproduce(reproduce::ReproduceArgs),
    /// Serve a storage (NoFTL region or any FTL) as MOUNTPOINT/disk through FUSE, so
    /// unmodified programs run on emulated flash; live counters in MOUNTPOINT/stats.json.
    /// --fs ext4 --at DIR also attaches a loop device and mounts ext4 at DIR.
    Mount(mount::MountArgs),
    /// End a `deltaflash mount` session (given its mount point or its --at directory):
    /// unmount, detach, flush and close the image.
    Unmount(mount::UnmountArgs),
    /// Show geometry, regions, wear and page states of a device image.
    Inspect {
        /// Device image file (a regular file: a FIFO, device or directory is refused).
        image: PathBuf,
    },
}

/// Options every run command takes: the device, its region, and the run itself.
#[derive(Args)]
struct CommonArgs {
    #[command(flatten)]
    device: setup::DeviceArgs,
    #[command(flatten)]
    region: setup::RegionArgs,
    #[command(flatten)]
    run: RunArgs,
}

#[derive(Args)]
struct RunArgs {
    /// Operations kept in flight (the device queues them per chip and channel), ≥ 1.
    #[arg(long, default_value_t = 32, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=65536))]
    queue_depth: usize,
    /// Seed of every random choice; the same seed gives the same result.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Write the metrics as JSON to this file (a new file; see --overwrite).
    #[arg(long)]
    json: Option<PathBuf>,
    #[command(flatten)]
    overwrite: output::OverwriteArg,
    /// What to drive: one NoFTL region (`noftl`, with appends) or a conventional FTL
    /// over the whole device (`page`, `dftl`, `block`, `bast`, `fast`; an FTL refuses
    /// appends, which then go out of place). `--over-provisioning` and `--gc*` apply to
    /// both.
    #[arg(long, default_value = "noftl", value_parser = ftl_kind)]
    ftl: FtlChoice,
    #[command(flatten)]
    ftl_knobs: ftl_args::FtlKnobArgs,
}

/// `--ftl`: a NoFTL region (`None`) or a conventional FTL.
#[derive(Clone, Copy, Debug)]
struct FtlChoice(Option<flash::ftl::FtlKind>);

fn ftl_kind(text: &str) -> Result<FtlChoice, String> {
    if text.eq_ignore_ascii_case("noftl") {
        return Ok(FtlChoice(None));
    }
    flash::ftl::FtlKind::parse(text)
        .map(|kind| FtlChoice(Some(kind)))
        .ok_or_else(|| format!("`{text}` is not one of noftl, page, dftl, block, bast, fast, nolgn"))
}

/// The device formatted as the runner's target: region 0 of NoFTL, or the FTL asked for.
fn target(common: &CommonArgs, wants_deltas: bool) -> Result<Target, String> {
    let FtlChoice(Some(kind)) = common.run.ftl else {
        if let Some(flag) = common.run.ftl_knobs.given().first() {
            return Err(format!("{flag} is an FTL setting; a NoFTL region has no FTL: add --ftl KIND"));
        }
        return Ok(Target::Region(Box::new(setup::format(&common.device, &common.region, wants_deltas)?)));
    };
    let region = &common.region;
    let mut config = flash::ftl::FtlConfig::new(kind);
    config.over_provisioning = region.over_provisioning;
    common.run.ftl_knobs.check_kind(kind)?;
    common.run.ftl_knobs.apply(&mut config);
    config.gc = flash::GcConfig {
        policy: region.gc,
        foreground_free_blocks: region.gc_fg_blocks,
        background_free_blocks: region.gc_bg_blocks,
    };
    let device = common.device.create()?;
    flash::ftl::format(device, &config).map(Target::Ftl).map_err(|e| {
        // Leave no unformatted image behind.
        if let Some(path) = &common.device.image {
            let _ = std::fs::remove_file(path);
        }
        e.to_string()
    })
}

#[derive(Args)]
struct FtlBenchArgs {
    #[command(flatten)]
    common: CommonArgs,
    /// Logical page access pattern.
    #[arg(long, value_enum, default_value_t = PatternKind::Uniform)]
    pattern: PatternKind,
    /// Zipf skew, 0 < theta < 1.
    #[arg(long, default_value_t = 0.99, value_parser = setup::open_unit)]
    theta: f64,
    /// hotcold: share of accesses that go to the hot pages, in [0, 1].
    #[arg(long, default_value_t = 0.8, value_parser = setup::share)]
    hot_share: f64,
    /// hotcold: share of the logical pages that are hot, in [0, 1].
    #[arg(long, default_value_t = 0.2, value_parser = setup::share)]
    hot_fraction: f64,
    /// Host operations (page writes and appends) to measure after warm-up, ≥ 1.
    #[arg(long, default_value_t = 1_000_000, value_parser = clap::value_parser!(u64).range(1..=1 << 40))]
    writes: u64,
    /// Warm-up operations after the fill (0 = none); default 4× the logical capacity.
    #[arg(long, value_parser = clap::value_parser!(u64).range(0..=1 << 40))]
    warmup: Option<u64>,
    /// Share of operations that are appends (write_delta) instead of page writes, in [0, 1].
    #[arg(long, default_value_t = 0.0, value_parser = setup::share)]
    delta_share: f64,
    /// Bytes per append, 1 to the flash page size.
    #[arg(long, default_value_t = 16, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=nand::geometry::MAX_PAGE_BYTES as u64))]
    delta_bytes: usize,
}

/// The command line; `-5` after a numeric flag is its value (refused by the flag's
/// range, naming the flag), not an unknown option.
fn parse_command_line() -> Cli {
    let command = Cli::command().mut_subcommands(|sub| sub.allow_negative_numbers(true));
    let matches = command.try_get_matches().unwrap_or_else(|e| exit_quoting(e));
    Cli::from_arg_matches(&matches).unwrap_or_else(|e| exit_quoting(e))
}

/// Exits with clap's message for `e`, a quoted value in it cut to 80 characters (clap
/// quotes a refused value whole).
fn exit_quoting(e: clap::Error) -> ! {
    use clap::error::ErrorKind;
    if matches!(
        e.kind(),
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        e.exit()
    }
    eprint!("{}", workloads::limits::cut_quoted(&e.render().to_string()));
    std::process::exit(e.exit_code())
}

fn main() -> ExitCode {
    let cli = parse_command_line();
    let result = match cli.command {
        Command::FtlBench(args) => ftl_bench(args),
        Command::Replay(args) => replay::run(args),
        Command::Sql(args) => sql::run(args),
        Command::Sqlite(args) => sqlite_shell::run(args),
        Command::Bench(cmd) => exit_on(bench::bench(cmd)),
        Command::Compare(cmd) => exit_on(compare::compare(cmd)),
        Command::Check(cmd) => exit_on(bench::check(cmd)),
        Command::Advise(args) => exit_on(advise::advise_command(args)),
        Command::Log(args) => exit_on(log_export::run(args)),
        Command::Demo(args) => exit_on(demo::run(args)),
        Command::EngineBench(args) => engine_bench::run(args),
        Command::SqliteCompare(args) => sqlite_compare::run(args),
        Command::RecoveryBench(args) => recovery_bench::run(args),
        Command::Torture(args) => exit_on(torture::run(args)),
        Command::IndexBench(args) => index_bench::run(args),
        Command::Serve(args) => serve::run(args),
        Command::Sweep(args) => exit_on(sweep::run(args)),
        Command::Rerun(args) => exit_on(rerun::run(args)),
        Command::Reproduce(args) => exit_on(reproduce::run(args)),
        Command::Mount(args) => mount::run(args),
        Command::Unmount(args) => mount::unmount(args),
        Command::Inspect { image } => inspect::run(&image),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.is_empty() => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// A command that reports its own failures: `Ok(false)` becomes a silent failure exit.
fn exit_on(result: Result<bool, String>) -> Result<(), String> {
    match result {
        Ok(true) => Ok(()),
        Ok(false) => Err(String::new()),
        Err(e) => Err(e),
    }
}

fn progress(len: u64, message: &str) -> ProgressBar {
    let bar = ProgressBar::new(len);
    bar.set_style(
        ProgressStyle::with_template("{msg:>10} [{bar:40}] {human_pos}/{human_len} ({per_sec}, eta {eta})")
            .expect("valid template")
            .progress_chars("=> "),
    );
    bar.set_message(message.to_string());
    bar
}

/// Calls `op` `count` times with a progress bar updated in batches.
fn with_progress(count: u64, message: &str, mut op: impl FnMut() -> Result<(), String>) -> Result<(), String> {
    const BATCH: u64 = 16_384;
    let bar = progress(count, message);
    let mut done = 0;
    while done < count {
        let n = BATCH.min(count - done);
        for _ in 0..n {
            op()?;
        }
        done += n;
        bar.inc(n);
    }
    bar.finish_and_clear();
    Ok(())
}

/// Writes every logical page once.
fn fill(runner: &mut Runner) -> Result<(), String> {
    let logical = runner.logical_pages();
    eprintln!("filling the logical space: {logical} pages of {} bytes", runner.page_bytes());
    let resident_gib = logical as f64 * runner.page_bytes() as f64 / (1u64 << 30) as f64;
    if runner.target.device().storage().keeps_data() && resident_gib > 8.0 {
        eprintln!(
            "note: this keeps about {resident_gib:.0} GiB of page data in memory; --no-data or a smaller --blocks-per-chip avoids that"
        );
    }
    let mut lpn = 0;
    with_progress(logical as u64, "fill", || {
        lpn += 1;
        runner.write(lpn - 1).map_err(|e| e.to_string())
    })
}

/// Operations between the stages of `ftl-bench`'s write-ahead hints
/// ([`flash::WriteHint`]): long enough for one stage's load to arrive before the next
/// stage reads it (a miss to memory takes about as long as a few host writes).
const HINT_SPACING: usize = 6;
/// How far ahead the first hint for a write is given.
const HINT_FAR: usize = HINT_SPACING * flash::WriteHint::STAGES.len();

impl RunArgs {
    /// `--json`, checked before the run.
    fn json_file(&self) -> Result<Option<output::OutputFile>, String> {
        self.overwrite.check("--json", self.json.as_deref())
    }
}

fn ftl_bench(args: FtlBenchArgs) -> Result<(), String> {
    let json = args.common.run.json_file()?;
    let wants_deltas = args.delta_share > 0.0;
    let geometry = args.common.device.geometry()?;
    let nop = geometry.nop as usize;
    let area = if wants_deltas { args.delta_bytes * nop.saturating_sub(1).max(1) } else { 0 };
    // Appends go after a 16-byte stamp, NOP − 1 of them per page.
    let room = geometry.page_bytes as usize - 16;
    if area > room {
        return Err(format!(
            "--delta-bytes {}: {} appends of it do not fit the {}-byte page after its 16-byte stamp; pass at most {}",
            args.delta_bytes,
            nop.saturating_sub(1).max(1),
            geometry.page_bytes,
            room / nop.saturating_sub(1).max(1)
        ));
    }
    let mut runner = Runner::new(target(&args.common, wants_deltas)?, args.common.run.queue_depth, area);
    let logical = runner.logical_pages();
    let pattern = Pattern::new(args.pattern, logical, args.theta, args.hot_share, args.hot_fraction)?;
    let mut rng = ChaCha8Rng::seed_from_u64(args.common.run.seed);
    let err = |e: flash::Error| e.to_string();

    fill(&mut runner)?;
    let warmup = args.warmup.unwrap_or(4 * logical as u64);
    eprintln!(
        "warming up: {warmup} operations ({:.1}× the logical capacity) so GC is in steady state",
        warmup as f64 / logical as f64
    );
    // Operations are drawn `HINT_FAR` ahead of their turn (the draws stay in the same
    // order, so the run is the same), so the device can be told what comes next.
    let mut ahead: VecDeque<(u32, Option<Vec<u8>>)> = VecDeque::with_capacity(HINT_FAR + 1);
    // Delta buffers of operations done, for the next ones drawn.
    let mut spare: Vec<Vec<u8>> = Vec::new();
    let mut step = |runner: &mut Runner| -> Result<(), String> {
        while ahead.len() <= HINT_FAR {
            let lpn = pattern.next(&mut rng);
            let delta = (wants_deltas && rng.gen_bool(args.delta_share)).then(|| {
                let mut delta = spare.pop().unwrap_or_else(|| vec![0u8; args.delta_bytes]);
                rng.fill(&mut delta[..]);
                delta
            });
            ahead.push_back((lpn, delta));
        }
        for (i, &stage) in flash::WriteHint::STAGES.iter().enumerate() {
            runner.prefetch_write(ahead[HINT_FAR - i * HINT_SPACING].0, stage);
        }
        match ahead.pop_front().expect("drawn above") {
            (lpn, Some(delta)) => {
                let done = runner.append(lpn, &delta).map_err(err);
                spare.push(delta);
                done
            }
            (lpn, None) => runner.write(lpn).map_err(err),
        }
    };
    with_progress(warmup, "warm-up", || step(&mut runner))?;
    eprintln!("measuring: {} operations", args.writes);
    let start = runner.start_measurement();
    with_progress(args.writes, "measure", || step(&mut runner))?;
    let measured = runner.measure(&start);

    let config = config(
        &args.common,
        &runner,
        json!({
            "pattern": args.pattern,
            "theta": args.theta,
            "hot_share": args.hot_share,
            "hot_fraction": args.hot_fraction,
            "delta_share": args.delta_share,
            "delta_bytes": args.delta_bytes,
            "writes": args.writes,
            "warmup": warmup,
        }),
    );
    report("ftl-bench", config, logical, warmup, &measured, &[], json.as_ref())?;
    runner.finish().map_err(err)
}

/// The run's configuration for the JSON file: the common options plus `specific`.
fn config(common: &CommonArgs, runner: &Runner, mut specific: serde_json::Value) -> serde_json::Value {
    let object = specific.as_object_mut().expect("config is an object");
    object.insert("device".into(), json!(common.device.device));
    object.insert("geometry".into(), json!(runner.target.device().geometry()));
    if let Some(o) = runner.target.describe().as_object() {
        object.extend(o.clone());
    }
    object.insert("queue_depth".into(), json!(common.run.queue_depth));
    object.insert("seed".into(), json!(common.run.seed));
    object.insert("no_data".into(), json!(common.device.no_data));
    object.insert("command_line".into(), json!(rerun::command_line()));
    specific
}

/// Prints the table and writes the JSON file; `extra` are the command's own counts
/// (table label, JSON key, value).
fn report(
    command: &str,
    config: serde_json::Value,
    logical: u32,
    warmup: u64,
    m: &Measured,
    extra: &[(&str, &str, u64)],
    json_file: Option<&output::OutputFile>,
) -> Result<(), String> {
    let mut rows: Vec<Row> = m.rows().into_iter().map(|(k, v)| Row::kv(&k, v)).collect();
    rows.extend(extra.iter().map(|(label, _, v)| Row::kv(label, v)));
    print_table(&rows);
    if let Some(file) = json_file {
        let mut value = serde_json::to_value(m).expect("metrics serialize");
        let object = value.as_object_mut().expect("metrics are an object");
        object.insert("command".into(), json!(command));
        object.insert("config".into(), config);
        object.insert("logical_pages".into(), json!(logical));
        object.insert("warmup_operations".into(), json!(warmup));
        for (_, key, v) in extra {
            object.insert((*key).into(), json!(v));
        }
        object.extend(rerun::build_info().map(|(k, v)| (k.to_string(), v)));
        let text = serde_json::to_string_pretty(&value).expect("json");
        file.write((text + "\n").as_bytes())?;
        eprintln!("metrics written to {}", file.path().display());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn every_flag_has_help_text() {
        let mut missing = Vec::new();
        for sub in Cli::command().get_subcommands() {
            for arg in sub.get_arguments() {
                let builtin = matches!(arg.get_id().as_str(), "help" | "version");
                if !builtin && arg.get_help().is_none() {
                    missing.push(format!("{} --{}", sub.get_name(), arg.get_id()));
                }
            }
        }
        assert!(missing.is_empty(), "flags without help: {missing:?}");
    }
}
