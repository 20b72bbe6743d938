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
//! The flags (or `bench --config FILE` with `engine = "sqlite"`, which flags override)
//! become one `workloads::sqlite::config::SqliteConfig`, checked by [`resolve`] and recorded,
//! resolved, as the JSON's `config`, so `deltaflash rerun` runs it again.
//!
//! Storage: `host` (the default) is plain SQLite, in memory or on `--sqlite-file`, with a
//! CPU-only clock; `ftl:KIND` is SQLite through the VFS (`sqlite_flash`) on that FTL over
//! the device the device flags describe, with the FTL flags (`--cmt-entries`, …).
//! [`open_host`] is the one place that builds the `SqliteHost`. `--journal`
//! ([`JournalChoice`], flash storage only) picks the `sqlite_flash::Journal`: `base-wal`
//! (SQLite's WAL, the default), `sw-wal` (with `--storage ftl:page`) or `nolgn` (no log
//! on NoLgn-FTL, with `--storage ftl:nolgn`; `--group-pages` per FTL commit under `--sync
//! normal`). `--page-cache-pages` sizes the file layer's write-back page cache;
//! `--host-stack ext4` charges the Ext4 host I/O stack model (docs/host-stack.md).

use crate::memory::{Kept, MemoryReport};
use crate::table::{print_table, Row};
use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use sqlite_flash::{FlashSqlite, FlashSqliteOptions, Journal};
use std::path::PathBuf;
use workloads::params::Params;
use workloads::sqlite::config::{SqliteConfig, SqliteHostStack, SqliteJournal as ConfigJournal, SqliteStorageConfig};
use workloads::sqlite::kv::{BATCH, NUM, VALUE_SIZE};
use workloads::sqlite::runner::run_registered;
use workloads::sqlite::ycsb::{OPERATIONS, RECORDS};
use workloads::sqlite::{FreeSpace, HostSqlite, SqliteHost, SqliteResult, Synchronous};
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

/// Who keeps SQLite's transactions atomic on flash: `--journal` of `torture --engine
/// sqlite`.
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

/// `--journal` of `bench`: the engine's journals (`aries`, `none`, `nolgn`) and those of
/// SQLite on flash (`base-wal`, `sw-wal`, `nolgn`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum JournalChoice {
    /// The engine: an ARIES write-ahead log (its default, except on ftl:nolgn).
    Aries,
    /// The engine: no log; commits write their pages and sync.
    None,
    /// The engine on ftl:nolgn, or SQLite on ftl:nolgn: no log, NoLgn-FTL's transactions.
    Nolgn,
    /// SQLite on flash: SQLite's write-ahead log through the file layer (its default).
    #[value(alias = "wal")]
    BaseWal,
    /// SQLite on ftl:page: WAL frames page-aligned on flash, checkpoints by remapping.
    SwWal,
}

impl JournalChoice {
    /// The flag's value.
    pub fn name(self) -> &'static str {
        match self {
            JournalChoice::Aries => "aries",
            JournalChoice::None => "none",
            JournalChoice::Nolgn => "nolgn",
            JournalChoice::BaseWal => "base-wal",
            JournalChoice::SwWal => "sw-wal",
        }
    }

    /// The engine's journal; SQLite's are refused.
    pub fn engine(self) -> Result<engine::JournalKind, String> {
        match self {
            JournalChoice::Aries => Ok(engine::JournalKind::Aries),
            JournalChoice::None => Ok(engine::JournalKind::None),
            JournalChoice::Nolgn => Ok(engine::JournalKind::Nolgn),
            JournalChoice::BaseWal | JournalChoice::SwWal => Err(format!(
                "--journal {}: a journal of SQLite on flash; it needs --engine sqlite (the engine's: aries, none, nolgn)",
                self.name()
            )),
        }
    }

    /// SQLite's journal on flash; the engine's are refused.
    pub fn sqlite(self) -> Result<ConfigJournal, String> {
        match self {
            JournalChoice::BaseWal => Ok(ConfigJournal::BaseWal),
            JournalChoice::SwWal => Ok(ConfigJournal::SwWal),
            JournalChoice::Nolgn => Ok(ConfigJournal::Nolgn),
            JournalChoice::Aries | JournalChoice::None => Err(format!(
                "--journal {}: a journal of the DeltaFlash engine; SQLite on flash takes base-wal, sw-wal or nolgn",
                self.name()
            )),
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
    /// Who keeps transactions atomic. The engine: aries (a write-ahead log), none (no
    /// log) or nolgn (ftl:nolgn) [default: nolgn on ftl:nolgn, else aries]. SQLite on
    /// flash: base-wal (SQLite's WAL through the file layer), sw-wal (WAL frames
    /// page-aligned on flash, checkpoints by remapping; ftl:page) or nolgn (no log;
    /// ftl:nolgn) [default: base-wal].
    #[arg(long, value_enum)]
    journal: Option<JournalChoice>,
    /// --journal nolgn with --sync normal: SQLite page writes per FTL commit [default: 1000].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    group_pages: Option<u32>,
    /// SQLite on flash: the file layer's write-back page cache in logical pages (dirty
    /// pages held until xSync, as Ext4's page cache; 0 writes through) [default: 16384,
    /// 64 MiB of 4 KB pages].
    #[arg(long)]
    page_cache_pages: Option<usize>,
    /// SQLite on flash: clean pages the file layer keeps in RAM after a write-back or a
    /// read, as Linux's page cache does (least recently used evicted first; 0 keeps none,
    /// so every other read goes to flash) [default: 16384].
    #[arg(long)]
    clean_cache_pages: Option<usize>,
    /// SQLite on flash: the host I/O stack charged under its files: none, or ext4 (a
    /// system call, the VFS and Ext4 data=ordered's journal commits; docs/host-stack.md)
    /// [default: none].
    #[arg(long, value_parser = SqliteHostStack::parse)]
    host_stack: Option<SqliteHostStack>,
}

impl SqliteArgs {
    /// `--journal`, if given.
    pub fn journal(&self) -> Option<JournalChoice> {
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
            ("--clean-cache-pages", self.clean_cache_pages.is_some()),
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

impl SqliteArgs {
    /// Applies the SQLite flags to `config`, whose storage is already the run's.
    pub fn apply_to(&self, config: &mut SqliteConfig) -> Result<(), String> {
        self.apply(&mut config.workload.params);
        if let Some(sync) = self.sync {
            config.run.synchronous = sync;
        }
        if self.free_space.is_some() {
            config.run.free_space = self.free_space;
        }
        if let Some(path) = &self.sqlite_file {
            if matches!(config.storage, SqliteStorageConfig::Ftl(_)) {
                return Err("--sqlite-file is a host file; SQLite on flash keeps its files on the device".into());
            }
            config.storage = SqliteStorageConfig::File(path.clone());
        }
        if let Some(journal) = self.journal {
            config.journal = Some(journal.sqlite()?);
        }
        if self.group_pages.is_some() {
            config.group_pages = self.group_pages;
        }
        if self.page_cache_pages.is_some() {
            config.page_cache_pages = self.page_cache_pages;
        }
        if self.clean_cache_pages.is_some() {
            config.clean_cache_pages = self.clean_cache_pages;
        }
        if self.host_stack.is_some() {
            config.host_stack = self.host_stack;
        }
        Ok(())
    }
}

/// How errors name a SQLite run's config fields: as the flags that set them, or as
/// fields of the file given with `--config`.
pub fn spell(field: &str, file: Option<&str>) -> String {
    if let Some(file) = file {
        return format!("{field} in {file}");
    }
    if let Some(flag) = crate::setup::device_flag(field) {
        return flag.to_string();
    }
    match field {
        "journal" => "--journal".into(),
        "group_pages" => "--group-pages".into(),
        "page_cache_pages" => "--page-cache-pages".into(),
        "clean_cache_pages" => "--clean-cache-pages".into(),
        "host_stack" => "--host-stack".into(),
        "run.free_space" => "--free-space".into(),
        "run.synchronous" => "--sync".into(),
        "storage" => "--storage".into(),
        _ => match field.strip_prefix("workload.") {
            Some("name") => "--workload".into(),
            Some(
                p @ ("ops" | "num" | "value_size" | "batch" | "records" | "operations" | "distribution"
                | "transactions" | "warehouses" | "mix" | "scale"),
            ) => format!("--{}", p.replace('_', "-")),
            Some(p) => format!("--param {p}"),
            None => field.to_string(),
        },
    }
}

/// The host a resolved `config` runs on: plain SQLite (in memory or in a new host
/// file), or SQLite through the VFS on a fresh FTL over the config's device (the runner
/// charges the per-statement CPU cost, so the instance charges none of its own).
pub(crate) fn open_host(config: &SqliteConfig) -> Result<Box<dyn SqliteHost>, String> {
    match &config.storage {
        SqliteStorageConfig::Host => Ok(Box::new(HostSqlite::in_memory()?)),
        SqliteStorageConfig::File(path) => {
            Ok(Box::new(HostSqlite::create(path).map_err(|e| format!("--sqlite-file: {e}"))?))
        }
        SqliteStorageConfig::Ftl(ftl) => {
            let geometry = config.device.fitting_geometry().map_err(|e| crate::setup::device_error(&e))?;
            if let Some(path) = &config.device.image {
                crate::output::check_new("--image", path)?;
            }
            let device = config.device.create(geometry).map_err(|e| crate::setup::device_error(&e))?;
            let journal = config.journal.unwrap_or_default();
            let defaults = FlashSqliteOptions::default();
            let options = FlashSqliteOptions {
                statement_cpu_ns: 0,
                journal: match journal {
                    ConfigJournal::BaseWal => Journal::Sqlite,
                    ConfigJournal::SwWal => Journal::SwWal,
                    ConfigJournal::Nolgn => Journal::Nolgn {
                        group_pages: config.group_pages.unwrap_or(workloads::sqlite::config::DEFAULT_GROUP_PAGES),
                    },
                },
                page_cache_pages: config.page_cache_pages.unwrap_or(defaults.page_cache_pages),
                clean_cache_pages: config.clean_cache_pages.unwrap_or(defaults.clean_cache_pages),
                host_stack: config.host_stack.unwrap_or_default().stack(),
                ..defaults
            };
            let sqlite = FlashSqlite::create(device, ftl, options)
                .map_err(|e| format!("--storage ftl:{}: {e}", ftl.kind.name()))?;
            Ok(Box::new(sqlite))
        }
    }
}

/// `config` checked and completed ([`SqliteConfig::resolve`]; the page cache of SQLite on
/// flash is the file layer's default unless given), its errors spelled by `file`'s
/// fields or the flags.
pub fn resolve(config: &SqliteConfig, file: Option<&str>) -> Result<SqliteConfig, String> {
    let mut resolved = config.resolve().map_err(|e| e.message(&|field| spell(field, file)))?;
    if matches!(resolved.storage, SqliteStorageConfig::Ftl(_)) {
        resolved.page_cache_pages.get_or_insert(sqlite_flash::DEFAULT_CACHE_PAGES);
        resolved.clean_cache_pages.get_or_insert(sqlite_flash::DEFAULT_CACHE_PAGES);
    }
    Ok(resolved)
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
        Row::kv("transaction latency mean [µs]", us(r.transaction_latency_us_mean)),
        Row::kv("transaction latency p50 / p95 / p99 / p99.9 / max [µs]", r.transaction_latency_us.cell()),
    ]);
    for (name, latency) in [("page read", &r.read_latency_us), ("page write", &r.write_latency_us)] {
        if let Some(l) = latency {
            rows.push(Row::kv(&format!("flash {name} latency p50 / p95 / p99 / p99.9 / max [µs]"), l.cell()));
        }
    }
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
        ["kind", "transactions", "committed", "tps", "p50 µs", "p95 µs", "p99 µs", "p99.9 µs", "max µs"]
            .map(String::from)
            .into(),
    )];
    for (name, k) in &r.kinds {
        kinds.push(Row::new(vec![
            name.clone(),
            k.transactions.to_string(),
            k.committed.to_string(),
            format!("{:.1}", k.throughput_tps),
            us(k.transaction_latency_us.p50),
            us(k.transaction_latency_us.p95),
            us(k.transaction_latency_us.p99),
            us(k.transaction_latency_us.p99_9),
            us(k.transaction_latency_us.max),
        ]));
    }
    print_table(&kinds);
}

/// Runs `config`'s workload on `host`, `bar` following its transactions (cleared when
/// the run ends).
pub(crate) fn run_with_bar(
    host: &mut dyn SqliteHost,
    config: &SqliteConfig,
    bar: &ProgressBar,
) -> Result<SqliteResult, String> {
    let (name, params) = (&config.workload.name, &config.workload.params);
    let result = run_registered(host, name, params, &config.run, &mut |done, total| {
        bar.set_length(total);
        bar.set_position(done);
        Control::Continue
    });
    bar.finish_and_clear();
    result
}

/// Runs a resolved config ([`resolve`]); `Ok(false)` when the consistency check failed.
/// The JSON holds the result, the config under `config`, and `command`.
pub fn run(config: &SqliteConfig, json: Option<&crate::output::OutputFile>) -> Result<bool, String> {
    let mut host = open_host(config)?;
    let bar = ProgressBar::new(0);
    let style = ProgressStyle::with_template("[sqlite] [{bar:30}] {pos}/{len} transactions").expect("valid template");
    bar.set_style(style.progress_chars("=> "));
    eprintln!("loading {} on SQLite", config.workload.name);
    let r = run_with_bar(host.as_mut(), config, &bar)?;
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
    if let Some(file) = json {
        let mut value = serde_json::to_value(&r).map_err(|e| format!("json: {e}"))?;
        memory.insert_into(&mut value);
        if let Some(object) = value.as_object_mut() {
            if let Some(pages) = config.page_cache_pages {
                object.insert("page_cache_pages".into(), serde_json::json!(pages));
            }
            object.insert("command".into(), serde_json::json!("bench"));
            object.insert("config".into(), serde_json::to_value(config).map_err(|e| format!("json: {e}"))?);
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

    fn kv_config() -> SqliteConfig {
        let params = serde_json::json!({"num": 300, "value_size": 512, "batch": 4});
        let mut c = SqliteConfig::default();
        c.workload.params = params.as_object().cloned().unwrap_or_default();
        c.run.seed = 5;
        c.run.cpu_ns_per_statement = 3000;
        c.run.check = true;
        c
    }

    #[test]
    fn the_json_is_the_same_for_the_same_seed_apart_from_wall_time() {
        let dir = tempfile::tempdir().unwrap();
        let read = |name: &str| {
            let args = SqliteArgs { sync: Some(Synchronous::Normal), ..Default::default() };
            let mut config = kv_config();
            args.apply_to(&mut config).unwrap();
            let config = resolve(&config, None).unwrap();
            let file = crate::output::OutputFile::check("--json", &dir.path().join(name), false).unwrap();
            assert_eq!(run(&config, Some(&file)), Ok(true));
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
        assert_eq!(a["config"]["engine"], "sqlite");
        assert_eq!(a["config"]["workload"]["num"], 300);
        for p in ["p50", "p95", "p99", "p99_9", "max"] {
            assert!(a["transaction_latency_us"][p].as_f64().is_some_and(|v| v > 0.0), "{p}");
        }
        assert!(a["transaction_latency_us_mean"].as_f64().is_some_and(|v| v > 0.0));
    }

    #[test]
    fn flags_become_parameters_and_errors_name_the_flag() {
        let mut config = kv_config();
        SqliteArgs { records: Some(10), ..Default::default() }.apply_to(&mut config).unwrap();
        let e = resolve(&config, None).unwrap_err();
        assert!(e.starts_with("--records: sqlite-bench takes no parameter `records`"), "{e}");
        let e = resolve(&config, Some("run.toml")).unwrap_err();
        assert!(e.starts_with("workload.records in run.toml: sqlite-bench takes no parameter"), "{e}");
        assert_eq!(spell("workload.value_size", None), "--value-size");
        assert_eq!(spell("workload.field_bytes", None), "--param field_bytes");
        let mut params = Params::new();
        SqliteArgs { ops: vec!["overwrite".into()], num: Some(9), ..Default::default() }.apply(&mut params);
        assert_eq!(serde_json::Value::Object(params), serde_json::json!({"ops": ["overwrite"], "num": 9}));
    }

    #[test]
    fn sqlite_needs_a_block_device_for_its_flash_settings() {
        let on = |kind, args: SqliteArgs| {
            let mut c = SqliteConfig::default();
            if let Some(kind) = kind {
                c.storage = SqliteStorageConfig::Ftl(flash::ftl::FtlConfig::new(kind));
            }
            args.apply_to(&mut c).and_then(|()| resolve(&c, None))
        };
        let file = SqliteArgs { sqlite_file: Some(PathBuf::from("x.db")), ..Default::default() };
        let e = on(Some(flash::ftl::FtlKind::Page), file).unwrap_err();
        assert!(e.starts_with("--sqlite-file is a host file"), "{e}");
        let sw = || SqliteArgs { journal: Some(JournalChoice::SwWal), ..Default::default() };
        let e = on(None, sw()).unwrap_err();
        assert!(e.starts_with("--journal: applies to SQLite on flash; it needs storage ftl:KIND"), "{e}");
        let e = on(Some(flash::ftl::FtlKind::Dftl), sw()).unwrap_err();
        assert!(e.contains("only the page FTL"), "{e}");
        let nolgn = SqliteArgs { journal: Some(JournalChoice::Nolgn), ..Default::default() };
        let e = on(Some(flash::ftl::FtlKind::Page), nolgn).unwrap_err();
        assert!(e.contains("storage ftl:nolgn"), "{e}");
        let e = on(None, SqliteArgs { page_cache_pages: Some(64), ..Default::default() }).unwrap_err();
        assert!(e.starts_with("--page-cache-pages: applies to SQLite on flash"), "{e}");
        let e = on(None, SqliteArgs { journal: Some(JournalChoice::None), ..Default::default() }).unwrap_err();
        assert!(e.starts_with("--journal none: a journal of the DeltaFlash engine"), "{e}");
        let grouped = SqliteArgs { group_pages: Some(8), ..Default::default() };
        let e = on(Some(flash::ftl::FtlKind::Page), grouped).unwrap_err();
        assert!(e.starts_with("--group-pages: applies to the nolgn journal only"), "{e}");
        let resolved = on(
            Some(flash::ftl::FtlKind::Nolgn),
            SqliteArgs { journal: Some(JournalChoice::Nolgn), ..Default::default() },
        );
        let resolved = resolved.unwrap();
        assert_eq!((resolved.group_pages, resolved.page_cache_pages), (Some(1000), Some(16_384)));
    }
}
