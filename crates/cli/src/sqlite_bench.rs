//! `deltaflash bench --engine sqlite`: a registered SQLite workload (`sqlite-bench`,
//! `ycsb`, `tpcc`, `tpcb`; `workloads::sqlite`) on one SQLite connection in simulated time.
//! Prints the run's metrics, per-kind latency percentiles, and writes the JSON with
//! `--json`.
//!
//! The flags here feed the workload's parameters (`--num`, `--value-size`, `--batch`,
//! `--ops`, `--records`, `--operations`, `--distribution`, `--transactions`) and the run
//! (`--sync`, `--free-space`, `--sqlite-file`); `bench`'s `--seed`, `--cpu-us` (per SQL
//! statement here), `--check`, `--warehouses`, `--mix` and `--param` apply too. Each of
//! these flags is refused with `--engine deltaflash`, and the engine's own flags with
//! `--engine sqlite`.
//!
//! Storage: `host` (the default) is plain SQLite, in memory or on `--sqlite-file`, with a
//! CPU-only clock; `ftl:KIND` is SQLite through the VFS (`sqlite_flash`) on that FTL over
//! the device the device flags describe. [`open_host`] is the one place that builds the
//! `SqliteHost`. `--journal` ([`SqliteJournal`], flash storage only) picks the
//! `sqlite_flash::Journal`: `base-wal` (SQLite's WAL, the default), `sw-wal` (with
//! `--storage ftl:page`) or `nolgn` (no log on NoLgn-FTL, with `--storage ftl:nolgn`;
//! `--group-pages` per FTL commit under `--sync normal`). `--page-cache-pages` sizes the
//! file layer's write-back page cache (recorded in the JSON as `page_cache_pages`);
//! `--host-stack ext4-ordered` charges the host I/O stack (docs/host-stack.md).

use crate::memory::{Kept, MemoryReport};
use crate::setup::DeviceArgs;
use crate::table::{print_table, Row};
use clap::{Args, ValueEnum};
use flash::ftl::FtlConfig;
use indicatif::{ProgressBar, ProgressStyle};
use sqlite_flash::{FlashSqlite, FlashSqliteOptions, HostStack, Journal};
use std::path::PathBuf;
use workloads::config::WorkloadConfig;
use workloads::params::Params;
use workloads::sqlite::kv::{BATCH, NUM, VALUE_SIZE};
use workloads::sqlite::runner::run_registered;
use workloads::sqlite::ycsb::{OPERATIONS, RECORDS};
use workloads::sqlite::{FreeSpace, HostSqlite, SqliteHost, SqliteResult, SqliteRunConfig, Synchronous};
use workloads::Control;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum Engine {
    /// The DeltaFlash engine (IPA, ARIES) on NoFTL regions or an FTL.
    #[default]
    Deltaflash,
    /// Real SQLite (WAL mode, one connection) running sqlite-bench, ycsb or tpcc.
    Sqlite,
}

fn count(range: workloads::limits::CountRange) -> impl Fn(&str) -> Result<u64, String> + Clone + Send + Sync + 'static {
    move |text| range.parse(text)
}

/// Who keeps SQLite's transactions atomic on flash: `--journal` of `bench --engine
/// sqlite` and of `torture --engine sqlite`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum SqliteJournal {
    /// SQLite's write-ahead log through the file layer.
    #[default]
    #[value(alias = "wal")]
    BaseWal,
    /// SW-WAL: WAL frames page-aligned on flash, checkpoints by remapping (page FTL).
    SwWal,
    /// No log: NoLgn-FTL's transactions (nolgn FTL).
    Nolgn,
    /// SQLite's rollback journal, deleted at commit (torture only: the workloads run WAL).
    Delete,
}

impl SqliteJournal {
    /// SQLite's `journal_mode` under it.
    pub fn mode(self) -> &'static str {
        match self {
            SqliteJournal::BaseWal | SqliteJournal::SwWal => "wal",
            SqliteJournal::Nolgn => "off",
            SqliteJournal::Delete => "delete",
        }
    }

    /// The flag's value.
    pub fn name(self) -> &'static str {
        match self {
            SqliteJournal::BaseWal => "base-wal",
            SqliteJournal::SwWal => "sw-wal",
            SqliteJournal::Nolgn => "nolgn",
            SqliteJournal::Delete => "delete",
        }
    }

    /// The instance's journal; `group_pages` is NoLgn's commit group under NORMAL.
    pub fn flash(self, group_pages: u32) -> Journal {
        match self {
            SqliteJournal::BaseWal | SqliteJournal::Delete => Journal::Sqlite,
            SqliteJournal::SwWal => Journal::SwWal,
            SqliteJournal::Nolgn => Journal::Nolgn { group_pages },
        }
    }
}

/// The flags of `bench --engine sqlite`.
#[derive(Args, Clone, Default)]
pub struct SqliteArgs {
    /// The engine that runs the workload.
    #[arg(long, value_enum, default_value_t = Engine::Deltaflash)]
    pub engine: Engine,
    /// sqlite-bench: the ops, in order [default: fillrandom,overwrite,readrandom].
    #[arg(long, value_delimiter = ',', value_parser = ["fillrandom", "overwrite", "readrandom"])]
    ops: Vec<String>,
    /// sqlite-bench: rows per op [default: 100000].
    #[arg(long, value_parser = count(NUM))]
    num: Option<u64>,
    /// sqlite-bench: bytes per value, 256 to 16384 [default: 4096].
    #[arg(long, value_parser = count(VALUE_SIZE))]
    value_size: Option<u64>,
    /// sqlite-bench: rows per transaction [default: 1].
    #[arg(long, value_parser = count(BATCH))]
    batch: Option<u64>,
    /// ycsb: records loaded [default: 100000].
    #[arg(long, value_parser = count(RECORDS))]
    records: Option<u64>,
    /// ycsb: operations measured [default: 100000].
    #[arg(long, value_parser = count(OPERATIONS))]
    operations: Option<u64>,
    /// ycsb: request distribution [default: the mix's: latest for d, else zipfian].
    #[arg(long, value_parser = ["zipfian", "latest", "uniform"])]
    distribution: Option<String>,
    /// tpcc on SQLite: transactions measured [default: 10000].
    #[arg(long, value_parser = count(workloads::sqlite::tpcc::TRANSACTIONS))]
    transactions: Option<u64>,
    /// SQLite's `synchronous`: normal or full [default: full].
    #[arg(long, value_parser = Synchronous::parse)]
    sync: Option<Synchronous>,
    /// Age the device first until this share of it is free: 75%, 50% or 25% (flash storage only).
    #[arg(long, value_parser = FreeSpace::parse)]
    free_space: Option<FreeSpace>,
    /// Host storage: the SQLite database file (its -wal beside it) instead of memory;
    /// created new, an existing file (or its -wal, -shm, -journal) is refused, never replaced.
    #[arg(long, value_name = "PATH")]
    sqlite_file: Option<PathBuf>,
    /// SQLite on flash: base-wal (SQLite's WAL through the file layer), sw-wal (WAL
    /// frames page-aligned on flash, checkpoints by remapping; ftl:page) or nolgn (no
    /// log; ftl:nolgn) [default: base-wal].
    #[arg(long, value_enum)]
    journal: Option<SqliteJournal>,
    /// --journal nolgn with --sync normal: SQLite page writes per FTL commit [default: 1000].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    group_pages: Option<u32>,
    /// SQLite on flash: the file layer's write-back page cache in logical pages (dirty
    /// pages held until xSync, as Ext4's page cache; 0 writes through) [default: 16384,
    /// 64 MiB of 4 KB pages].
    #[arg(long)]
    page_cache_pages: Option<usize>,
    /// SQLite on flash: the host I/O stack charged per write call and fsync: none or
    /// ext4-ordered (docs/host-stack.md) [default: none].
    #[arg(long, value_parser = HostStack::parse)]
    host_stack: Option<HostStack>,
}

impl SqliteArgs {
    /// `--journal`, if given (the engine takes `nolgn` too).
    pub fn journal(&self) -> Option<SqliteJournal> {
        self.journal
    }

    /// The flags given that only `--engine sqlite` takes.
    pub fn sqlite_only_flags(&self) -> Vec<&'static str> {
        let given = [
            ("--ops", !self.ops.is_empty()),
            ("--num", self.num.is_some()),
            ("--value-size", self.value_size.is_some()),
            ("--batch", self.batch.is_some()),
            ("--records", self.records.is_some()),
            ("--operations", self.operations.is_some()),
            ("--distribution", self.distribution.is_some()),
            ("--transactions", self.transactions.is_some()),
            ("--sync", self.sync.is_some()),
            ("--free-space", self.free_space.is_some()),
            ("--sqlite-file", self.sqlite_file.is_some()),
            ("--journal", self.journal.is_some()),
            ("--group-pages", self.group_pages.is_some()),
            ("--page-cache-pages", self.page_cache_pages.is_some()),
            ("--host-stack", self.host_stack.is_some()),
        ];
        given.into_iter().filter(|(_, g)| *g).map(|(f, _)| f).collect()
    }

    /// Adds the workload parameters given as flags.
    fn apply(&self, params: &mut Params) {
        use serde_json::Value;
        let flags = [
            ("ops", (!self.ops.is_empty()).then(|| Value::from(self.ops.clone()))),
            ("num", self.num.map(Value::from)),
            ("value_size", self.value_size.map(Value::from)),
            ("batch", self.batch.map(Value::from)),
            ("records", self.records.map(Value::from)),
            ("operations", self.operations.map(Value::from)),
            ("distribution", self.distribution.clone().map(Value::from)),
            ("transactions", self.transactions.map(Value::from)),
        ];
        for (name, value) in flags {
            if let Some(v) = value {
                params.insert(name.to_string(), v);
            }
        }
    }
}

/// Where SQLite runs.
#[derive(Clone, Copy, Debug)]
pub enum SqliteStorage {
    /// Plain SQLite on the host (memory or `--sqlite-file`), CPU-only clock.
    Host,
    /// NoFTL regions: SQLite needs a block device, so it is refused.
    Noftl,
    /// SQLite through the VFS on this FTL.
    Ftl(flash::ftl::FtlKind),
}

/// What `bench` hands over from its own flags.
pub struct SqliteRun {
    pub workload: WorkloadConfig,
    pub storage: SqliteStorage,
    pub seed: Option<u64>,
    pub cpu_us: Option<f64>,
    pub check: bool,
    pub json: Option<crate::output::OutputFile>,
    /// The emulated device (for SQLite on flash).
    pub device: DeviceArgs,
}

/// The host SQLite runs on: plain SQLite, or SQLite through the VFS on a fresh FTL over
/// the device `device` describes (the runner charges the per-statement CPU cost, so the
/// instance charges none of its own).
fn open_host(
    storage: SqliteStorage,
    file: Option<&PathBuf>,
    device: &DeviceArgs,
    journal: Option<Journal>,
    page_cache_pages: Option<usize>,
    host_stack: Option<HostStack>,
) -> Result<Box<dyn SqliteHost>, String> {
    let nolgn = matches!(journal, Some(Journal::Nolgn { .. }));
    if nolgn && !matches!(storage, SqliteStorage::Ftl(flash::ftl::FtlKind::Nolgn)) {
        return Err("--journal nolgn needs NoLgn-FTL: add --storage ftl:nolgn".into());
    }
    if journal.is_some() && !matches!(storage, SqliteStorage::Ftl(_)) {
        return Err("--journal chooses how SQLite on flash journals; it needs --storage ftl:KIND".into());
    }
    if page_cache_pages.is_some() && !matches!(storage, SqliteStorage::Ftl(_)) {
        return Err("--page-cache-pages sizes the page cache of SQLite on flash; it needs --storage ftl:KIND".into());
    }
    if host_stack.is_some() && !matches!(storage, SqliteStorage::Ftl(_)) {
        return Err("--host-stack models the I/O stack above emulated flash; it needs --storage ftl:KIND".into());
    }
    match storage {
        SqliteStorage::Host => Ok(Box::new(match file {
            Some(path) => HostSqlite::create(path).map_err(|e| format!("--sqlite-file: {e}"))?,
            None => HostSqlite::in_memory()?,
        })),
        SqliteStorage::Noftl => {
            Err("--storage noftl: SQLite needs a block device; use --storage host or an FTL (ftl:KIND)".into())
        }
        SqliteStorage::Ftl(kind) => {
            if file.is_some() {
                return Err("--sqlite-file is a host file; SQLite on flash keeps its files on the device".into());
            }
            let device = device.create()?;
            let defaults = FlashSqliteOptions::default();
            let options = FlashSqliteOptions {
                statement_cpu_ns: 0,
                journal: journal.unwrap_or_default(),
                page_cache_pages: page_cache_pages.unwrap_or(defaults.page_cache_pages),
                host_stack: host_stack.unwrap_or_default(),
                ..defaults
            };
            let sqlite = FlashSqlite::create(device, &FtlConfig::new(kind), options)
                .map_err(|e| format!("--storage ftl:{}: {e}", kind.name()))?;
            Ok(Box::new(sqlite))
        }
    }
}

/// `workload.PARAM` as the flag that sets it.
fn spell(field: &str) -> String {
    match field.strip_prefix("workload.") {
        Some("name") => "--workload".into(),
        Some(
            p @ ("ops" | "num" | "value_size" | "batch" | "records" | "operations" | "distribution" | "transactions"
            | "warehouses" | "mix" | "scale"),
        ) => format!("--{}", p.replace('_', "-")),
        Some(p) => format!("--param {p}"),
        None => field.to_string(),
    }
}

fn us(v: f64) -> String {
    format!("{v:.1}")
}

fn print_result(r: &SqliteResult) {
    let mut rows = vec![
        Row::kv("workload", &r.workload),
        Row::kv("journal mode", &r.journal_mode),
        Row::kv("transactions", r.transactions),
        Row::kv("committed", r.committed),
        Row::kv("statements", r.statements),
        Row::kv("simulated seconds", format!("{:.3}", r.sim_seconds)),
        Row::kv("throughput [tps]", format!("{:.1}", r.throughput_tps)),
    ];
    if let Some(tpmc) = r.tpmc {
        rows.push(Row::kv("tpmC", format!("{tpmc:.1}")));
    }
    rows.extend([
        Row::kv("latency p50 [µs]", us(r.latency.p50_us)),
        Row::kv("latency p95 [µs]", us(r.latency.p95_us)),
        Row::kv("latency p99 [µs]", us(r.latency.p99_us)),
    ]);
    match &r.flash {
        Some(f) => rows.extend([
            Row::kv("host reads", f.counters.host_reads),
            Row::kv("host writes", f.counters.host_writes),
            Row::kv("flash programs", f.counters.flash_programs),
            Row::kv("flash erases", f.counters.flash_erases),
            Row::kv("GC page migrations", f.counters.gc_page_migrations),
            Row::kv("GC erases", f.counters.gc_erases),
            Row::kv("remaps (programs saved)", f.counters.remaps),
            Row::kv("flash programs per transaction", format!("{:.3}", f.flash_programs_per_transaction)),
            Row::kv("device write amplification", format!("{:.3}", f.write_amplification)),
        ]),
        None => rows.push(Row::kv("flash", "none (host storage)")),
    }
    print_table(&rows);
    let mut kinds = vec![Row::new(
        ["kind", "transactions", "committed", "tps", "p50 µs", "p95 µs", "p99 µs"].map(String::from).into(),
    )];
    for (name, k) in &r.kinds {
        kinds.push(Row::new(vec![
            name.clone(),
            k.transactions.to_string(),
            k.committed.to_string(),
            format!("{:.1}", k.throughput_tps),
            us(k.latency.p50_us),
            us(k.latency.p95_us),
            us(k.latency.p99_us),
        ]));
    }
    print_table(&kinds);
}

/// Runs the workload; `Ok(false)` when the consistency check failed.
pub fn run(args: &SqliteArgs, run: SqliteRun) -> Result<bool, String> {
    let mut params = run.workload.params.clone();
    args.apply(&mut params);
    let defaults = SqliteRunConfig::default();
    let config = SqliteRunConfig {
        seed: run.seed.unwrap_or(defaults.seed),
        cpu_ns_per_statement: run.cpu_us.map_or(defaults.cpu_ns_per_statement, |us| (us * 1000.0).round() as u64),
        synchronous: args.sync.unwrap_or(defaults.synchronous),
        free_space: args.free_space,
        check: run.check,
    };
    let spelled = |e: workloads::ConfigError| {
        let text = e.to_string();
        match text.split_once(": ") {
            Some((field, problem)) => format!("{}: {problem}", spell(field)),
            None => text,
        }
    };
    // Refuse bad parameters before opening anything.
    workloads::sqlite::find(&run.workload.name).and_then(|w| w.configure(&params)).map_err(spelled)?;
    if args.group_pages.is_some() && args.journal != Some(SqliteJournal::Nolgn) {
        return Err("--group-pages applies to --journal nolgn only".into());
    }
    if args.journal == Some(SqliteJournal::Delete) {
        return Err("--journal delete is for the torture; the SQLite workloads run in WAL mode".into());
    }
    let journal = args.journal.map(|j| j.flash(args.group_pages.unwrap_or(1_000)));
    let mut host = open_host(
        run.storage,
        args.sqlite_file.as_ref(),
        &run.device,
        journal,
        args.page_cache_pages,
        args.host_stack,
    )?;
    let page_cache_pages = matches!(run.storage, SqliteStorage::Ftl(_))
        .then(|| args.page_cache_pages.unwrap_or(sqlite_flash::DEFAULT_CACHE_PAGES));
    let bar = ProgressBar::new(0);
    let style = ProgressStyle::with_template("[sqlite] [{bar:30}] {pos}/{len} transactions").expect("valid template");
    bar.set_style(style.progress_chars("=> "));
    eprintln!("loading {} on SQLite", run.workload.name);
    let result = run_registered(host.as_mut(), &run.workload.name, &params, &config, &mut |done, total| {
        bar.set_length(total);
        bar.set_position(done);
        Control::Continue
    });
    bar.finish_and_clear();
    let r = result?;
    print_result(&r);
    let memory = MemoryReport::now(Kept {
        device: host.device_memory_bytes().unwrap_or(0),
        mapping: host.mapping_memory_bytes().unwrap_or(0),
        buffer_pool: 0,
    });
    println!(
        "{} transactions in {:.3} simulated s ({:.3} loading); {:.1} wall s for the run; {}",
        r.transactions,
        r.sim_seconds,
        r.load_sim_seconds,
        r.run_wall_seconds,
        memory.line()
    );
    if let Some(file) = &run.json {
        let mut value = serde_json::to_value(&r).map_err(|e| format!("json: {e}"))?;
        memory.insert_into(&mut value);
        if let Some(object) = value.as_object_mut() {
            if let Some(pages) = page_cache_pages {
                object.insert("page_cache_pages".into(), serde_json::json!(pages));
            }
        }
        let text = serde_json::to_string_pretty(&value).map_err(|e| format!("json: {e}"))? + "\n";
        file.write(text.as_bytes())?;
    }
    Ok(match &r.consistency_check {
        Some(workloads::experiment::Consistency::Failed(e)) => {
            println!("[sqlite] consistency check FAILED: {e}");
            false
        }
        Some(workloads::experiment::Consistency::Passed) => {
            println!("[sqlite] consistency check passed");
            true
        }
        None => true,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kv_run(json: PathBuf) -> SqliteRun {
        let params = serde_json::json!({"num": 300, "value_size": 512, "batch": 4});
        SqliteRun {
            workload: WorkloadConfig {
                name: "sqlite-bench".into(),
                params: params.as_object().cloned().unwrap_or_default(),
            },
            storage: SqliteStorage::Host,
            seed: Some(5),
            cpu_us: Some(3.0),
            check: true,
            json: Some(crate::output::OutputFile::check("--json", &json, false).unwrap()),
            device: default_device(),
        }
    }

    /// The device flags as parsed from an empty command line.
    fn default_device() -> DeviceArgs {
        use clap::{Args, FromArgMatches};
        let matches = DeviceArgs::augment_args(clap::Command::new("t")).get_matches_from(["t"]);
        DeviceArgs::from_arg_matches(&matches).unwrap()
    }

    #[test]
    fn the_json_is_the_same_for_the_same_seed_apart_from_wall_time() {
        let dir = tempfile::tempdir().unwrap();
        let read = |name: &str| {
            let args = SqliteArgs { sync: Some(Synchronous::Normal), ..Default::default() };
            assert_eq!(run(&args, kv_run(dir.path().join(name))), Ok(true));
            let mut v: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(dir.path().join(name)).unwrap()).unwrap();
            assert!(v["run_wall_seconds"].as_f64().is_some());
            v.as_object_mut().unwrap().remove("run_wall_seconds");
            v.as_object_mut().unwrap().retain(|k, _| !k.starts_with("memory_"));
            v
        };
        let a = read("a.json");
        assert_eq!(a, read("b.json"));
        assert_eq!(a["run"]["cpu_ns_per_statement"], 3000);
        assert_eq!(a["run"]["synchronous"], "normal");
        assert_eq!(a["transactions"], 3 * 75);
        for p in ["p50_us", "p95_us", "p99_us"] {
            assert!(a["latency"][p].as_f64().is_some_and(|v| v > 0.0), "{p}");
        }
    }

    #[test]
    fn flags_become_parameters_and_errors_name_the_flag() {
        let dir = tempfile::tempdir().unwrap();
        let args = SqliteArgs { records: Some(10), ..Default::default() };
        let e = run(&args, kv_run(dir.path().join("x.json"))).unwrap_err();
        assert!(e.starts_with("--records: sqlite-bench takes no parameter `records`"), "{e}");
        assert_eq!(spell("workload.value_size"), "--value-size");
        assert_eq!(spell("workload.field_bytes"), "--param field_bytes");
        let mut params = Params::new();
        SqliteArgs { ops: vec!["overwrite".into()], num: Some(9), ..Default::default() }.apply(&mut params);
        assert_eq!(serde_json::Value::Object(params), serde_json::json!({"ops": ["overwrite"], "num": 9}));
    }

    #[test]
    fn sqlite_needs_a_block_device() {
        let device = default_device();
        let e = open_host(SqliteStorage::Noftl, None, &device, None, None, None).err().unwrap();
        assert!(e.contains("needs a block device"), "{e}");
        let file = PathBuf::from("x.db");
        let e = open_host(SqliteStorage::Ftl(flash::ftl::FtlKind::Page), Some(&file), &device, None, None, None)
            .err()
            .unwrap();
        assert!(e.starts_with("--sqlite-file is a host file"), "{e}");
        let e = open_host(SqliteStorage::Host, None, &device, Some(Journal::SwWal), None, None).err().unwrap();
        assert!(e.contains("needs --storage ftl"), "{e}");
        let e =
            open_host(SqliteStorage::Ftl(flash::ftl::FtlKind::Dftl), None, &device, Some(Journal::SwWal), None, None);
        assert!(e.err().unwrap().contains("only the page FTL"));
        let nolgn = Some(SqliteJournal::Nolgn.flash(10));
        let e =
            open_host(SqliteStorage::Ftl(flash::ftl::FtlKind::Page), None, &device, nolgn, None, None).err().unwrap();
        assert!(e.contains("add --storage ftl:nolgn"), "{e}");
        let e = open_host(SqliteStorage::Host, None, &device, None, Some(64), None).err().unwrap();
        assert!(e.starts_with("--page-cache-pages") && e.contains("needs --storage ftl"), "{e}");
        let e = open_host(SqliteStorage::Host, None, &device, None, None, Some(HostStack::EXT4_ORDERED)).err().unwrap();
        assert!(e.starts_with("--host-stack") && e.contains("needs --storage ftl"), "{e}");
    }
}
