//! `deltaflash compare`: IPA schemes side by side on the same seed (`--schemes`, each
//! run as `bench` runs it), or, with `--engines deltaflash:0x0,deltaflash:2x3,sqlite`,
//! our engine and real SQLite on the same emulated flash. Every engine runs the same
//! workload (TPC-B or TPC-C, `--workload`) at the same scale, on the same device preset
//! and size, from the same seed, for the same number of measured transactions
//! (`--transactions`), and one table puts them side by side: host writes, flash
//! programs and erases per transaction, simulated throughput and latency.
//!
//! Equal footing: one terminal for the engine (SQLite runs one connection), no
//! warm-up on either side (SQLite's runner has none), commits durable at once on both
//! (SQLite `synchronous=FULL` unless `--sync normal`; the engine forces its log at every
//! commit unless `--group-commit-us`), and the same buffer share: the engine's pool is
//! `--buffer` of the loaded database's pages, and SQLite's page cache is set after its
//! load to the same share of its own database's pages (`PRAGMA cache_size`). The
//! simulated CPU cost `--cpu-us` is charged per record operation by the engine and per
//! SQL statement by SQLite. `docs/results-sqlite-compare.md` explains what still
//! differs.
//!
//! Engines: `deltaflash:NxM` is the engine with IPA scheme NxM on `--storage` (default
//! noftl), `deltaflash:NxM@STORAGE` on that storage instead; `sqlite` is SQLite through
//! its VFS on the page-mapping FTL, `sqlite@ftl:KIND` on another FTL; the FTL flags
//! (`--over-provisioning`, `--gc`, the knobs) apply to every FTL of the comparison,
//! SQLite's too, and a knob of another kind than an FTL's is refused. Fault model: a
//! bad engine name, a workload SQLite lacks or a flag the comparison sets itself is
//! refused before anything runs; a failed run ends the command with its error.
//!
//! Every result of `--format json` carries its resolved config: the engine's experiment,
//! and SQLite's run as a `bench --engine sqlite` config (`command = "bench"`, its page
//! cache share under `run.cache_share`), so `deltaflash rerun` runs each again.

use crate::bench::{self, BenchArgs, Format, StorageChoice};
use crate::ftl_args::FtlArgs;
use clap::Args;
use engine::IpaScheme;
use flash::ftl::{FtlConfig, FtlKind};
use indicatif::{MultiProgress, ProgressBar, ProgressStyle};
use workloads::config::StorageConfig;
use workloads::experiment::Consistency;
use workloads::limits::{cut_quoted, quote};
use workloads::sqlite::config::{SqliteConfig, SqliteStorageConfig};
use workloads::sqlite::{SqliteResult, SqliteRunConfig, Synchronous};
use workloads::{Experiment, ExperimentConfig, ExperimentResult};

/// The workloads both engines have.
const WORKLOADS: [&str; 2] = ["tpcb", "tpcc"];

/// One engine of `--engines`.
#[derive(Clone, Debug, PartialEq)]
pub enum EngineSpec {
    /// The DeltaFlash engine with this IPA scheme, on `--storage` or the storage given.
    Deltaflash { scheme: IpaScheme, storage: Option<(String, StorageChoice)> },
    /// SQLite through its VFS on this FTL.
    Sqlite { ftl: FtlKind },
}

fn engine_spec(text: &str) -> Result<EngineSpec, String> {
    let (name, storage) = match text.split_once('@') {
        Some((name, storage)) => (name, Some(storage)),
        None => (text, None),
    };
    if name.eq_ignore_ascii_case("sqlite") {
        let ftl = match storage {
            None => FtlKind::Page,
            Some(s) => s.strip_prefix("ftl:").and_then(FtlKind::parse).ok_or_else(|| {
                format!(
                    "{}: SQLite needs a block device: sqlite@ftl:page, ftl:dftl, ftl:block, ftl:bast or ftl:fast",
                    quote(text)
                )
            })?,
        };
        return Ok(EngineSpec::Sqlite { ftl });
    }
    let scheme = name
        .strip_prefix("deltaflash:")
        .ok_or_else(|| format!("{} is not an engine: deltaflash:NxM[@STORAGE] or sqlite[@ftl:KIND]", quote(text)))?;
    let scheme: IpaScheme = scheme.parse().map_err(|e: String| format!("{}: {}", quote(text), cut_quoted(&e)))?;
    let storage = storage.map(|s| bench::storage_kind(s).map(|c| (s.to_string(), c))).transpose()?;
    Ok(EngineSpec::Deltaflash { scheme, storage })
}

#[derive(Args)]
pub struct CompareCommand {
    #[command(flatten)]
    pub(crate) common: BenchArgs,
    /// Schemes to run on the same seed; the first is the baseline.
    #[arg(long, value_delimiter = ',', value_parser = bench::scheme, default_value = "0x0,2x4")]
    pub(crate) schemes: Vec<IpaScheme>,
    /// Output format of the table.
    #[arg(long, value_enum, default_value_t = Format::Markdown)]
    pub(crate) format: Format,
    #[command(flatten)]
    pub(crate) engines: EngineArgs,
    /// Runs at once, on threads of this machine; each run stays single-threaded and
    /// seeded, so the results are those of `--jobs 1` [default: the cores].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub(crate) jobs: Option<u32>,
}

/// `deltaflash compare`: IPA schemes on the same seed, or engines (`--engines`).
pub fn compare(cmd: CompareCommand) -> Result<bool, String> {
    if !cmd.engines.engines.is_empty() {
        return compare_engines(&cmd.common, &cmd.engines, cmd.format, bench::jobs(cmd.jobs));
    }
    let (config, spelling) = cmd.common.config(None)?;
    if cmd.schemes.len() > 1 && config.engine.schema.as_ref().is_some_and(|s| !s.contains("${IPA}")) {
        let source =
            cmd.common.schema.as_ref().map_or("engine.schema".to_string(), |p| format!("--schema {}", p.display()));
        return Err(format!(
            "{source} has no ${{IPA}} placeholder, so every scheme would run on the same regions and identical runs \
             would be labelled as different schemes; put ${{IPA}} in the options of the region to vary, or run one scheme"
        ));
    }
    let runs = bench::run_schemes(&config, &spelling, &cmd.schemes, bench::jobs(cmd.jobs))?;
    let mut ok = true;
    for (line, passed) in runs.iter().filter_map(bench::check_line) {
        eprintln!("{line}");
        ok &= passed;
    }
    let (header, lines) = bench::compare_table(&runs);
    match cmd.format {
        Format::Markdown | Format::Csv => {
            bench::print_grid(cmd.format, &header, &lines);
            if let Format::Markdown = cmd.format {
                println!("\n{}", bench::legend(&header[1]));
            }
        }
        Format::Json => {
            let all: Vec<_> = runs.iter().map(ExperimentResult::to_json).collect();
            println!("{}", serde_json::to_string_pretty(&all).expect("json"));
        }
    }
    Ok(ok)
}

/// The flags of `compare --engines`.
#[derive(Args, Clone, Default)]
pub struct EngineArgs {
    /// Compare engines instead of IPA schemes, on the same device, seed and workload
    /// (tpcb or tpcc): `deltaflash:NxM[@STORAGE]` (our engine with IPA scheme NxM, on
    /// --storage unless STORAGE is given) and `sqlite[@ftl:KIND]` (SQLite through its VFS,
    /// on the page-mapping FTL unless KIND is given). E.g.
    /// deltaflash:0x0,deltaflash:2x3,deltaflash:0x0@ftl:page,sqlite
    #[arg(long, value_delimiter = ',', value_parser = engine_spec)]
    pub engines: Vec<EngineSpec>,
    /// With --engines: measured transactions every engine runs [default: 10000].
    #[arg(long, requires = "engines", value_parser = |t: &str| workloads::limits::TRANSACTIONS.parse(t))]
    pub transactions: Option<u64>,
    /// With --engines: SQLite's `synchronous`, normal or full [default: full, durable
    /// at every commit as the engine's log force].
    #[arg(long, requires = "engines", value_parser = Synchronous::parse)]
    pub sync: Option<Synchronous>,
}

/// One engine's run.
pub enum Outcome {
    Engine(Box<ExperimentResult>),
    /// SQLite's result and the resolved config it ran (as `bench --config` runs it).
    Sqlite(Box<SqliteResult>, Box<SqliteConfig>),
}

pub struct EngineRun {
    /// `deltaflash [2x3]` or `sqlite`.
    pub engine: String,
    /// `noftl`, `ftl:page`, …
    pub storage: String,
    pub requested: u64,
    pub outcome: Outcome,
}

impl EngineRun {
    /// The run as `compare --engines --format json` prints it: each result with its
    /// resolved config, so `deltaflash rerun` runs it again (SQLite's as `bench`).
    pub fn to_json(&self) -> serde_json::Value {
        let result = match &self.outcome {
            Outcome::Engine(e) => e.to_json(),
            Outcome::Sqlite(s, config) => {
                let mut v = serde_json::to_value(s).unwrap_or_default();
                v["command"] = "bench".into();
                v["config"] = serde_json::to_value(config).unwrap_or_default();
                v
            }
        };
        serde_json::json!({"engine": self.engine, "storage": self.storage, "result": result})
    }
}

fn storage_name(s: &StorageConfig) -> String {
    match s {
        StorageConfig::Noftl => "noftl".into(),
        StorageConfig::Ftl(f) => format!("ftl:{}", f.kind.name()),
        StorageConfig::Ipl(_) => "ipl".into(),
    }
}

/// Refuses what the comparison cannot honour, before anything runs.
fn refuse(common: &BenchArgs, base: &ExperimentConfig, engines: &[EngineSpec]) -> Result<(), String> {
    let set_here = [
        ("--terminals", common.terminals.is_some(), "the engine runs one terminal, as SQLite runs one connection"),
        ("--warmup", common.warmup.is_some(), "neither engine warms up (SQLite's runner measures from the load)"),
        ("--sim-time", common.sim_time.is_some(), "every engine runs --transactions instead"),
    ];
    if let Some((flag, _, why)) = set_here.iter().find(|(_, given, _)| *given) {
        return Err(format!("{flag} does not go with --engines: {why}"));
    }
    if base.device.image.is_some() {
        return Err("--image does not go with --engines: each engine needs a fresh device".into());
    }
    if base.driver.switch_ddl.is_some() {
        return Err("--switch-ddl does not go with --engines: SQLite has no online layout change".into());
    }
    let sqlite = engines.iter().any(|e| matches!(e, EngineSpec::Sqlite { .. }));
    if sqlite && !WORKLOADS.contains(&base.workload.name.as_str()) {
        return Err(format!(
            "--workload {}: SQLite runs {} in --engines; drop sqlite or pick one of those",
            base.workload.name,
            WORKLOADS.join(" or ")
        ));
    }
    Ok(())
}

/// The engine's config for one run: one terminal, no warm-up, `transactions` measured.
fn engine_config(mut c: ExperimentConfig, scheme: IpaScheme, transactions: u64) -> ExperimentConfig {
    c.engine.ipa = scheme.to_string();
    c.driver.terminals = 1;
    c.driver.warmup_s = 0.0;
    c.driver.sim_time_s = workloads::limits::SIM_TIME_S.max;
    c.driver.transactions = Some(transactions);
    c
}

/// SQLite's run as a `bench --engine sqlite` config, resolved: a fresh FTL over the
/// device `c` describes (with the FTL flags, as every FTL of the comparison), the
/// engine's workload parameters, seed, CPU cost and buffer share (SQLite's page cache
/// after the load).
fn sqlite_config(
    c: &ExperimentConfig,
    ftl: FtlKind,
    flags: &FtlArgs,
    args: &EngineArgs,
    transactions: u64,
) -> Result<SqliteConfig, String> {
    let at = |e: String| format!("sqlite@ftl:{}: {e}", ftl.name());
    let mut ftl_config = FtlConfig::new(ftl);
    flags.apply(&mut ftl_config).map_err(at)?;
    let mut workload = c.workload.clone();
    workload.params.insert("transactions".into(), transactions.into());
    let config = SqliteConfig {
        device: c.device.clone(),
        storage: SqliteStorageConfig::Ftl(ftl_config),
        workload,
        run: SqliteRunConfig {
            seed: c.seed,
            cpu_ns_per_statement: (c.driver.cpu_per_operation_us * 1000.0).round() as u64,
            synchronous: args.sync.unwrap_or_default(),
            free_space: None,
            check: c.driver.check,
            cache_share: Some(c.engine.buffer_share),
        },
        ..SqliteConfig::default()
    };
    crate::sqlite_bench::resolve(&config, None).map_err(at)
}

/// Runs a resolved SQLite config with a progress bar among `bars`.
fn run_sqlite_on(config: &SqliteConfig, bars: &MultiProgress) -> Result<SqliteResult, String> {
    let mut host = crate::sqlite_bench::open_host(config)?;
    let bar = bars.add(ProgressBar::new(0));
    let style =
        ProgressStyle::with_template("{prefix:>7} [{bar:30}] {pos}/{len} transactions").expect("valid template");
    bar.set_style(style.progress_chars("=> "));
    bar.set_prefix("[sqlite]");
    crate::sqlite_bench::run_with_bar(host.as_mut(), config, &bar)
}

/// One engine's run, checked and ready to start.
enum Prepared {
    Engine { experiment: Box<Experiment>, spelling: bench::Spelling },
    Sqlite { ftl: FtlKind, config: Box<SqliteConfig> },
}

/// Runs every engine, `jobs` at once (each run single-threaded and seeded, so the
/// results do not depend on `jobs`); the runs in `--engines` order. Every engine's
/// config is checked before any runs.
pub fn run_engines(common: &BenchArgs, args: &EngineArgs, jobs: usize) -> Result<Vec<EngineRun>, String> {
    let transactions = args.transactions.unwrap_or(10_000);
    let (base, spelling) = common.config(None)?;
    refuse(common, &base, &args.engines)?;
    let mut prepared = Vec::new();
    for spec in &args.engines {
        prepared.push(match spec {
            EngineSpec::Deltaflash { scheme, storage } => {
                let (config, spelling) = match storage {
                    Some((_, choice)) => common.on_storage(*choice).config(Some(*scheme))?,
                    None => (base.clone(), spelling.clone()),
                };
                let experiment = Box::new(
                    Experiment::new(engine_config(config, *scheme, transactions)).map_err(|e| spelling.error(&e))?,
                );
                Prepared::Engine { experiment, spelling }
            }
            EngineSpec::Sqlite { ftl } => {
                let config = sqlite_config(&base, *ftl, &common.ftl, args, transactions)?;
                Prepared::Sqlite { ftl: *ftl, config: Box::new(config) }
            }
        });
    }
    let bars = MultiProgress::new();
    let run = |i: usize| -> Result<EngineRun, String> {
        Ok(match &prepared[i] {
            Prepared::Engine { experiment, spelling } => {
                let result = bench::run_with_bar(experiment, &bars).map_err(|e| spelling.error(&e))?;
                EngineRun {
                    engine: format!("deltaflash [{}]", result.ipa),
                    storage: storage_name(&experiment.config().storage),
                    requested: transactions,
                    outcome: Outcome::Engine(Box::new(result)),
                }
            }
            Prepared::Sqlite { ftl, config } => {
                let result = run_sqlite_on(config, &bars)?;
                EngineRun {
                    engine: "sqlite".into(),
                    storage: format!("ftl:{}", ftl.name()),
                    requested: transactions,
                    outcome: Outcome::Sqlite(Box::new(result), config.clone()),
                }
            }
        })
    };
    bench::in_parallel(prepared.len(), jobs, run).into_iter().collect()
}

/// The numbers of one run the table shows; `None` where the engine has no such number.
struct Column {
    requested: u64,
    transactions: u64,
    committed: u64,
    sim_seconds: f64,
    tps: f64,
    host_reads: u64,
    host_writes: u64,
    log_writes: Option<u64>,
    appends: Option<u64>,
    flash_programs: u64,
    flash_erases: u64,
    gc_migrations: u64,
    latency_mean_us: f64,
    latency_p50_us: f64,
    latency_p99_us: f64,
    database_mib: f64,
    buffer_pages: u64,
}

fn column(run: &EngineRun) -> Result<Column, String> {
    Ok(match &run.outcome {
        Outcome::Engine(r) => {
            let m = &r.metrics;
            let page_bytes = r.config.engine.db_page_bytes.unwrap_or(4096) as f64;
            let database_pages = r.fill.database_mib * 1024.0 * 1024.0 / page_bytes;
            Column {
                requested: run.requested,
                transactions: m.transactions,
                committed: m.committed_transactions,
                sim_seconds: m.sim_seconds,
                tps: m.throughput_tps,
                host_reads: m.host_reads,
                // Data pages and log pages: everything the engine sent to the flash.
                host_writes: m.host_writes + m.log_page_writes,
                log_writes: Some(m.log_page_writes),
                appends: Some(m.in_place_appends),
                flash_programs: m.flash_programs,
                flash_erases: m.flash_erases,
                gc_migrations: m.gc_page_migrations,
                // One terminal: the response time is the time per transaction.
                latency_mean_us: m.time_per_transaction_ms.response * 1000.0,
                latency_p50_us: m.transaction_latency_p50_ms * 1000.0,
                latency_p99_us: m.transaction_latency_p99_ms * 1000.0,
                database_mib: r.fill.database_mib,
                buffer_pages: (database_pages * r.config.engine.buffer_share).ceil() as u64,
            }
        }
        Outcome::Sqlite(r, _) => {
            let f = r.flash.as_ref().ok_or("sqlite: the run on flash has no flash counters")?;
            let size = r.cache.ok_or("sqlite: the run has no page cache size")?;
            Column {
                requested: run.requested,
                transactions: r.transactions,
                committed: r.committed,
                sim_seconds: r.sim_seconds,
                tps: r.throughput_tps,
                host_reads: f.counters.host_reads,
                host_writes: f.counters.host_writes,
                log_writes: None,
                appends: None,
                flash_programs: f.counters.flash_programs,
                flash_erases: f.counters.flash_erases,
                gc_migrations: f.counters.gc_page_migrations,
                latency_mean_us: r.transaction_latency_us_mean,
                latency_p50_us: r.transaction_latency_us.p50,
                latency_p99_us: r.transaction_latency_us.p99,
                database_mib: (size.database_pages * size.page_bytes) as f64 / (1024.0 * 1024.0),
                buffer_pages: size.cache_pages,
            }
        }
    })
}

fn per(x: u64, transactions: u64) -> String {
    format!("{:.3}", x as f64 / transactions.max(1) as f64)
}

fn opt(v: Option<String>) -> String {
    v.unwrap_or_else(|| "–".into())
}

/// The header (metric, then one column per engine) and the rows.
pub fn engine_table(runs: &[EngineRun]) -> Result<(Vec<String>, Vec<Vec<String>>), String> {
    let columns: Vec<Column> = runs.iter().map(column).collect::<Result<_, _>>()?;
    let mut header = vec!["metric".to_string()];
    header.extend(runs.iter().map(|r| format!("{} on {}", r.engine, r.storage)));
    type Cell = fn(&Column) -> String;
    let metrics: [(&str, Cell); 21] = [
        ("Transactions requested", |c| c.requested.to_string()),
        ("Transactions run", |c| c.transactions.to_string()),
        ("Committed", |c| c.committed.to_string()),
        ("Simulated seconds", |c| format!("{:.3}", c.sim_seconds)),
        ("Throughput [tps]", |c| format!("{:.1}", c.tps)),
        ("Latency mean [µs]", |c| format!("{:.1}", c.latency_mean_us)),
        ("Latency p50 [µs]", |c| format!("{:.1}", c.latency_p50_us)),
        ("Latency p99 [µs]", |c| format!("{:.1}", c.latency_p99_us)),
        ("Host reads", |c| c.host_reads.to_string()),
        ("Host writes", |c| c.host_writes.to_string()),
        ("  of them log pages", |c| opt(c.log_writes.map(|v| v.to_string()))),
        ("  of them in-place appends (IPA)", |c| opt(c.appends.map(|v| v.to_string()))),
        ("Host writes per transaction", |c| per(c.host_writes, c.transactions)),
        ("Flash programs", |c| c.flash_programs.to_string()),
        ("Flash programs per transaction", |c| per(c.flash_programs, c.transactions)),
        ("Flash erases", |c| c.flash_erases.to_string()),
        ("Erases per 1000 transactions", |c| per(c.flash_erases * 1000, c.transactions)),
        ("GC page migrations", |c| c.gc_migrations.to_string()),
        ("Device write amplification", |c| per(c.flash_programs, c.host_writes)),
        ("Database after load [MiB]", |c| format!("{:.1}", c.database_mib)),
        ("Buffer / page cache [pages]", |c| c.buffer_pages.to_string()),
    ];
    let lines = metrics
        .iter()
        .map(|(label, cell)| std::iter::once(label.to_string()).chain(columns.iter().map(cell)).collect())
        .collect();
    Ok((header, lines))
}

/// `compare --engines`: runs them, prints the table in `format`; `Ok(false)` when a
/// consistency check failed.
pub fn compare_engines(common: &BenchArgs, args: &EngineArgs, format: Format, jobs: usize) -> Result<bool, String> {
    let runs = run_engines(common, args, jobs)?;
    let mut ok = true;
    for run in &runs {
        let check = match &run.outcome {
            Outcome::Engine(r) => r.consistency_check.as_ref(),
            Outcome::Sqlite(r, _) => r.consistency_check.as_ref(),
        };
        match check {
            Some(Consistency::Passed) => eprintln!("[{} on {}] consistency check passed", run.engine, run.storage),
            Some(Consistency::Failed(e)) => {
                eprintln!("[{} on {}] consistency check FAILED: {e}", run.engine, run.storage);
                ok = false;
            }
            None => {}
        }
    }
    let (header, lines) = engine_table(&runs)?;
    match format {
        Format::Markdown | Format::Csv => bench::print_grid(format, &header, &lines),
        Format::Json => {
            let all: Vec<serde_json::Value> = runs.iter().map(EngineRun::to_json).collect();
            println!("{}", serde_json::to_string_pretty(&all).map_err(|e| format!("json: {e}"))?);
        }
    }
    Ok(ok)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::FromArgMatches;

    fn parse(args: &[&str]) -> Result<CompareCommand, String> {
        let command = CompareCommand::augment_args(clap::Command::new("compare"));
        let matches = command.try_get_matches_from(std::iter::once("compare").chain(args.iter().copied()));
        matches.and_then(|m| CompareCommand::from_arg_matches(&m)).map_err(|e| e.to_string())
    }

    #[test]
    fn engines_parse_and_bad_ones_are_named() {
        let cmd = parse(&["--engines", "deltaflash:0x0,deltaflash:2x3@ftl:page,sqlite,sqlite@ftl:dftl"]).unwrap();
        let e = &cmd.engines.engines;
        assert_eq!(e[0], EngineSpec::Deltaflash { scheme: IpaScheme::NONE, storage: None });
        assert!(matches!(&e[1], EngineSpec::Deltaflash { storage: Some((s, StorageChoice::Ftl(FtlKind::Page))), .. }
                         if s == "ftl:page"));
        assert_eq!(e[2], EngineSpec::Sqlite { ftl: FtlKind::Page });
        assert_eq!(e[3], EngineSpec::Sqlite { ftl: FtlKind::Dftl });
        assert!(engine_spec("postgres").unwrap_err().contains("deltaflash:NxM[@STORAGE] or sqlite[@ftl:KIND]"));
        assert!(engine_spec("sqlite@noftl").unwrap_err().contains("SQLite needs a block device"));
        assert!(engine_spec("deltaflash:9x9x9").unwrap_err().starts_with("`deltaflash:9x9x9`: "));
        assert!(parse(&["--transactions", "5"]).err().is_some_and(|e| e.contains("--engines")), "it needs --engines");
    }

    #[test]
    fn flags_the_comparison_sets_itself_are_refused() {
        for (flags, want) in [
            (&["--terminals", "4"][..], "--terminals does not go with --engines"),
            (&["--sim-time", "3"][..], "--sim-time does not go with --engines"),
            (&["--workload", "tatp"][..], "--workload tatp: SQLite runs tpcb or tpcc"),
        ] {
            let mut args = vec!["--engines", "deltaflash:0x0,sqlite"];
            args.extend(flags);
            let cmd = parse(&args).unwrap();
            let e = run_engines(&cmd.common, &cmd.engines, 1).err().unwrap();
            assert!(e.starts_with(want), "{flags:?}: {e}");
        }
    }

    /// A tiny TPC-B comparison: the rows agree with each other, and the same seed gives
    /// the same table.
    #[test]
    fn a_tiny_tpcb_comparison_is_consistent_and_deterministic() {
        let args = [
            "--engines",
            "deltaflash:0x0,deltaflash:2x3,sqlite",
            "--blocks-per-chip",
            "48",
            "--transactions",
            "120",
            "--seed",
            "4",
            "--check",
        ];
        let cmd = parse(&args).unwrap();
        let runs = run_engines(&cmd.common, &cmd.engines, 1).unwrap();
        let (header, lines) = engine_table(&runs).unwrap();
        assert_eq!(header[1..], ["deltaflash [0x0] on noftl", "deltaflash [2x3] on noftl", "sqlite on ftl:page"]);
        let row = |label: &str| -> Vec<f64> {
            let line = lines.iter().find(|l| l[0] == label).unwrap_or_else(|| panic!("no row {label}"));
            line[1..].iter().map(|v| v.parse().unwrap_or(f64::NAN)).collect()
        };
        assert_eq!(row("Transactions requested"), [120.0; 3]);
        assert_eq!(row("Transactions run"), [120.0; 3], "the engine stops at the count, as SQLite does");
        assert_eq!(row("Committed"), [120.0; 3]);
        for (programs, writes) in row("Flash programs").into_iter().zip(row("Host writes")) {
            assert!(writes > 0.0 && programs >= writes, "programs {programs} < host writes {writes}");
        }
        let log = row("  of them log pages");
        assert!(log[0] >= 120.0 && log[1] >= 120.0, "the engine forces a log page per commit: {log:?}");
        assert!(log[2].is_nan(), "SQLite's column has no log split");
        // Every engine has percentiles now; a median is at most twice the mean (Markov).
        let (p50, p99) = (row("Latency p50 [µs]"), row("Latency p99 [µs]"));
        for (k, mean) in row("Latency mean [µs]").into_iter().enumerate() {
            assert!(
                0.0 < p50[k] && p50[k] <= p99[k] && p50[k] <= 2.02 * mean,
                "engine {k}: {p50:?} {p99:?} mean {mean}"
            );
        }
        let buffer = row("Buffer / page cache [pages]");
        let database = row("Database after load [MiB]");
        for k in 0..3 {
            // 10% of the loaded database in 4 KiB pages, on both engines.
            let share = buffer[k] / (database[k] * 256.0);
            assert!((share - 0.1).abs() < 0.01, "engine {k}: buffer share {share}");
        }
        for r in &runs {
            let check = match &r.outcome {
                Outcome::Engine(e) => e.consistency_check.clone(),
                Outcome::Sqlite(s, _) => s.consistency_check.clone(),
            };
            assert_eq!(check, Some(Consistency::Passed), "{}", r.engine);
        }
        // On three threads: the same runs in the same order, the same JSON.
        let again = run_engines(&cmd.common, &cmd.engines, 3).unwrap();
        assert_eq!(engine_table(&again).unwrap(), (header, lines), "same seed, same table");
        let json = |runs: &[EngineRun]| -> Vec<serde_json::Value> {
            runs.iter()
                .map(|r| {
                    let mut v = r.to_json();
                    v["result"] = crate::bench::tests::simulated_only(v["result"].take());
                    v
                })
                .collect()
        };
        assert_eq!(json(&again), json(&runs), "a parallel run gives the serial JSON");
    }
}
