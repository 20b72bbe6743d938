//! One run of a SQLite workload on a [`SqliteHost`]: optional device aging, WAL mode and
//! `synchronous`, the load (not measured), then the workload's transactions one after
//! another on the one connection. Each transaction's latency is the host's simulated
//! clock across it, kept in an HDR histogram (overall and per kind); the flash counters
//! are read around every transaction so each kind gets its own share.
//!
//! Invariants: the result depends only on the host, the workload's parameters and the
//! [`SqliteRunConfig`] (seed included), except `run_wall_seconds`. Fault model: a failed
//! statement or device operation ends the run with an error naming the stage.

use super::{FlashSnapshot, Session, SqliteHost, SqliteWorkload};
use crate::build_info::{GIT_COMMIT, VERSION};
use crate::params::Params;
use crate::workload::Consistency;
use crate::Control;
use latency::{LatencyHistogram, Percentiles};
use nand::SimTime;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Instant;

/// SQLite's `synchronous` setting: NORMAL syncs the WAL at checkpoints only, FULL at
/// every commit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Synchronous {
    Normal,
    #[default]
    Full,
}

impl Synchronous {
    pub fn parse(text: &str) -> Result<Synchronous, String> {
        match text.to_ascii_lowercase().as_str() {
            "normal" => Ok(Synchronous::Normal),
            "full" => Ok(Synchronous::Full),
            _ => Err(format!("`{text}` is not a synchronous setting: normal or full")),
        }
    }

    fn pragma(self) -> &'static str {
        match self {
            Synchronous::Normal => "PRAGMA synchronous = NORMAL",
            Synchronous::Full => "PRAGMA synchronous = FULL",
        }
    }
}

/// How much of the device is left free by aging before the run (NoLgn-FTL §4.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum FreeSpace {
    #[serde(rename = "75%")]
    Pct75,
    #[serde(rename = "50%")]
    Pct50,
    #[serde(rename = "25%")]
    Pct25,
}

impl FreeSpace {
    /// `75%`, `50%` or `25%` (the sign may be left off).
    pub fn parse(text: &str) -> Result<FreeSpace, String> {
        match text.trim().trim_end_matches('%') {
            "75" => Ok(FreeSpace::Pct75),
            "50" => Ok(FreeSpace::Pct50),
            "25" => Ok(FreeSpace::Pct25),
            _ => Err(format!("`{text}` is not a free-space share: 75%, 50% or 25%")),
        }
    }

    /// The share of the device left free, in (0, 1).
    pub fn share(self) -> f64 {
        match self {
            FreeSpace::Pct75 => 0.75,
            FreeSpace::Pct50 => 0.50,
            FreeSpace::Pct25 => 0.25,
        }
    }
}

/// How a run is done, apart from the workload's own parameters and where SQLite runs
/// (the `run` table of a SQLite experiment, `crate::config::SqliteConfig`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SqliteRunConfig {
    pub seed: u64,
    /// Simulated CPU time charged for each SQL statement.
    pub cpu_ns_per_statement: u64,
    pub synchronous: Synchronous,
    /// Age the device first (flash hosts only).
    pub free_space: Option<FreeSpace>,
    /// Check the workload's consistency conditions after the run.
    pub check: bool,
    /// SQLite's page cache, set after the load to this share of the loaded database's
    /// pages (`compare --engines`: the engine's buffer share); `None`: SQLite's default.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_share: Option<f64>,
}

impl Default for SqliteRunConfig {
    fn default() -> Self {
        SqliteRunConfig {
            seed: 1,
            cpu_ns_per_statement: 10_000,
            synchronous: Synchronous::Full,
            free_space: None,
            check: false,
            cache_share: None,
        }
    }
}

/// SQLite's database after the load and the page cache [`SqliteRunConfig::cache_share`]
/// set for it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct CacheSize {
    pub database_pages: u64,
    pub page_bytes: u64,
    pub cache_pages: u64,
}

/// Sets the page cache to `share` of the database's pages (at least one page).
fn set_cache_share(s: &mut Session<'_>, share: f64) -> Result<CacheSize, String> {
    let database_pages = s.int("PRAGMA page_count", [])?.max(0) as u64;
    let page_bytes = s.int("PRAGMA page_size", [])?.max(0) as u64;
    let cache_pages = ((database_pages as f64 * share).ceil() as u64).max(1);
    s.batch(&format!("PRAGMA cache_size = {cache_pages}"))?;
    Ok(CacheSize { database_pages, page_bytes, cache_pages })
}

/// The mean of `total_ns` over `count` latencies, in microseconds (exact: from the sum,
/// not the histogram); 0 when there are none.
fn mean_us(total_ns: SimTime, count: u64) -> f64 {
    if count == 0 {
        0.0
    } else {
        total_ns as f64 / count as f64 / 1e3
    }
}

/// Flash counters over the measured run, with the ratios `bench` reports.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FlashMetrics {
    #[serde(flatten)]
    pub counters: FlashSnapshot,
    pub host_writes_per_transaction: f64,
    pub flash_programs_per_transaction: f64,
    /// Flash programs / host writes.
    pub write_amplification: f64,
}

impl FlashMetrics {
    fn of(counters: FlashSnapshot, transactions: u64) -> FlashMetrics {
        let per = |x: u64| x as f64 / transactions.max(1) as f64;
        FlashMetrics {
            counters,
            host_writes_per_transaction: per(counters.host_writes),
            flash_programs_per_transaction: per(counters.flash_programs),
            write_amplification: counters.flash_programs as f64 / counters.host_writes.max(1) as f64,
        }
    }
}

/// One kind of transaction's results.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct KindResult {
    pub transactions: u64,
    pub committed: u64,
    /// Simulated seconds its transactions took, and its committed transactions per one.
    pub sim_seconds: f64,
    pub throughput_tps: f64,
    /// Its transactions' latency: percentiles, and the exact mean, in µs.
    pub transaction_latency_us: Percentiles,
    pub transaction_latency_us_mean: f64,
    pub flash: Option<FlashMetrics>,
}

/// A run's results: `bench`'s metric names, plus latency percentiles per transaction.
#[derive(Clone, Debug, Serialize)]
pub struct SqliteResult {
    pub engine: &'static str,
    pub workload: String,
    /// The workload's parameters, defaults filled in.
    pub params: Params,
    pub run: SqliteRunConfig,
    /// The journal mode SQLite reports after asking for WAL (`memory` for an in-memory
    /// database).
    pub journal_mode: String,
    pub load_sim_seconds: f64,
    /// Simulated seconds of the measured transactions.
    pub sim_seconds: f64,
    pub transactions: u64,
    pub committed: u64,
    pub statements: u64,
    /// Committed transactions per simulated second.
    pub throughput_tps: f64,
    /// TPC-C: committed NewOrders per simulated minute.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tpmc: Option<f64>,
    /// Transaction latency (the simulated clock across each transaction): percentiles,
    /// and the exact mean, in µs.
    pub transaction_latency_us: Percentiles,
    pub transaction_latency_us_mean: f64,
    /// On flash: the latency of SQLite's page reads and writes on the FTL over the
    /// measured transactions (`sqlite_flash::IoLatency`), in µs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_latency_us: Option<Percentiles>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub write_latency_us: Option<Percentiles>,
    /// `None` when SQLite is not on emulated flash.
    pub flash: Option<FlashMetrics>,
    /// The page cache set after the load, when [`SqliteRunConfig::cache_share`] asks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache: Option<CacheSize>,
    pub kinds: BTreeMap<String, KindResult>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub consistency_check: Option<Consistency>,
    pub run_wall_seconds: f64,
    pub version: &'static str,
    pub git_commit: &'static str,
}

impl SqliteResult {
    /// The result as JSON, without the wall-clock field (what determinism compares).
    pub fn deterministic_json(&self) -> serde_json::Value {
        let mut v = serde_json::to_value(self).unwrap_or_default();
        if let Some(map) = v.as_object_mut() {
            map.remove("run_wall_seconds");
        }
        v
    }
}

fn seconds(ns: SimTime) -> f64 {
    ns as f64 / 1e9
}

/// Per-kind accumulators.
struct KindAcc {
    transactions: u64,
    committed: u64,
    time_ns: SimTime,
    histogram: LatencyHistogram,
    flash: FlashSnapshot,
}

/// Runs `workload` on `host`. `progress(done, total)` is called every 256 transactions;
/// answering [`Control::Stop`] ends the run with an error.
pub fn run(
    host: &mut dyn SqliteHost,
    workload: &mut dyn SqliteWorkload,
    params: Params,
    config: &SqliteRunConfig,
    progress: &mut dyn FnMut(u64, u64) -> Control,
) -> Result<SqliteResult, String> {
    let name = workload.name();
    let mut rng = ChaCha8Rng::seed_from_u64(config.seed);
    if let Some(free) = config.free_space {
        host.precondition(free.share(), &mut rng).map_err(|e| format!("{name}: aging: {e}"))?;
    }
    let mut s = Session::new(host, config.cpu_ns_per_statement);
    let journal_mode: String =
        s.one("journal mode", "PRAGMA journal_mode = WAL", [], |r| r.get(0)).map_err(|e| format!("{name}: {e}"))?;
    s.batch(config.synchronous.pragma()).map_err(|e| format!("{name}: {e}"))?;
    let load_start = s.host().now();
    workload.load(&mut s, &mut rng).map_err(|e| format!("{name}: loading: {e}"))?;
    let cache = config.cache_share.map(|share| set_cache_share(&mut s, share)).transpose();
    let cache = cache.map_err(|e| format!("{name}: sizing the page cache: {e}"))?;
    let start = s.host().now();
    let start_flash = s.host().flash();
    let start_statements = s.statements();
    s.host().reset_io_latency();
    let total = workload.transactions();
    let wall = Instant::now();
    let mut all = LatencyHistogram::new();
    let mut all_ns: SimTime = 0;
    let mut kinds: Vec<KindAcc> = workload
        .kinds()
        .iter()
        .map(|_| KindAcc {
            transactions: 0,
            committed: 0,
            time_ns: 0,
            histogram: LatencyHistogram::new(),
            flash: Default::default(),
        })
        .collect();
    let mut committed = 0;
    for n in 0..total {
        if n.is_multiple_of(256) && progress(n, total) == Control::Stop {
            return Err(format!("{name}: stopped after {n} of {total} transactions"));
        }
        let (t0, f0) = (s.host().now(), s.host().flash());
        let (kind, ok) =
            workload.transaction(&mut s, n, &mut rng).map_err(|e| format!("{name}: transaction {n}: {e}"))?;
        let latency_ns = s.host().now() - t0;
        let acc =
            kinds.get_mut(kind).ok_or_else(|| format!("{name}: transaction kind {kind} is not one of its kinds"))?;
        all.record(latency_ns);
        all_ns += latency_ns;
        acc.histogram.record(latency_ns);
        acc.transactions += 1;
        acc.committed += u64::from(ok);
        acc.time_ns += latency_ns;
        committed += u64::from(ok);
        if let (Some(f0), Some(f1)) = (f0, s.host().flash()) {
            acc.flash.add(&f1.since(&f0));
        }
    }
    let run_wall_seconds = wall.elapsed().as_secs_f64();
    let end = s.host().now();
    let io_latency = s.host().io_latency();
    let statements = s.statements() - start_statements;
    let flash = match (start_flash, s.host().flash()) {
        (Some(a), Some(b)) => Some(FlashMetrics::of(b.since(&a), total)),
        _ => None,
    };
    let consistency_check = if config.check {
        Some(match workload.check(&mut s) {
            Ok(()) => Consistency::Passed,
            Err(e) => Consistency::Failed(e),
        })
    } else {
        None
    };
    let sim_seconds = seconds(end - start);
    let tps = |committed: u64, secs: f64| if secs > 0.0 { committed as f64 / secs } else { 0.0 };
    let has_flash = flash.is_some();
    let kinds = workload
        .kinds()
        .iter()
        .zip(kinds)
        .filter(|(_, acc)| acc.transactions > 0)
        .map(|(kind, acc)| {
            let secs = seconds(acc.time_ns);
            let result = KindResult {
                transactions: acc.transactions,
                committed: acc.committed,
                sim_seconds: secs,
                throughput_tps: tps(acc.committed, secs),
                transaction_latency_us: acc.histogram.percentiles(),
                transaction_latency_us_mean: mean_us(acc.time_ns, acc.transactions),
                flash: has_flash.then(|| FlashMetrics::of(acc.flash, acc.transactions)),
            };
            (kind.to_string(), result)
        })
        .collect();
    Ok(SqliteResult {
        engine: "sqlite",
        workload: name.to_string(),
        params,
        run: config.clone(),
        journal_mode,
        load_sim_seconds: seconds(start - load_start),
        sim_seconds,
        transactions: total,
        committed,
        statements,
        throughput_tps: tps(committed, sim_seconds),
        tpmc: workload.new_orders().map(|n| if sim_seconds > 0.0 { n as f64 * 60.0 / sim_seconds } else { 0.0 }),
        transaction_latency_us: all.percentiles(),
        transaction_latency_us_mean: mean_us(all_ns, total),
        read_latency_us: io_latency.map(|(reads, _)| reads),
        write_latency_us: io_latency.map(|(_, writes)| writes),
        flash,
        cache,
        kinds,
        consistency_check,
        run_wall_seconds,
        version: VERSION,
        git_commit: GIT_COMMIT,
    })
}

/// Builds the registered workload `name` from `params` and runs it on `host`.
pub fn run_registered(
    host: &mut dyn SqliteHost,
    name: &str,
    params: &Params,
    config: &SqliteRunConfig,
    progress: &mut dyn FnMut(u64, u64) -> Control,
) -> Result<SqliteResult, String> {
    let configured = super::find(name).and_then(|w| w.configure(params)).map_err(|e| e.to_string())?;
    let mut workload = configured.build();
    run(host, workload.as_mut(), configured.params(), config, progress)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn free_space_and_synchronous_parse_and_refuse() {
        assert_eq!(FreeSpace::parse("75%"), Ok(FreeSpace::Pct75));
        assert_eq!(FreeSpace::parse("25").map(FreeSpace::share), Ok(0.25));
        assert!(FreeSpace::parse("60%").unwrap_err().contains("75%, 50% or 25%"));
        assert_eq!(Synchronous::parse("NORMAL"), Ok(Synchronous::Normal));
        assert!(Synchronous::parse("off").unwrap_err().contains("normal or full"));
    }

    /// A host whose "device" programs two pages per statement and reads one, and
    /// which records the aging asked for.
    struct CountingHost {
        inner: crate::sqlite::HostSqlite,
        statements: u64,
        aged_to: Option<f64>,
    }

    impl SqliteHost for CountingHost {
        fn connection(&self) -> &rusqlite::Connection {
            self.inner.connection()
        }
        fn now(&self) -> SimTime {
            self.inner.now()
        }
        fn charge_cpu_ns(&mut self, ns: u64) {
            self.statements += 1;
            self.inner.charge_cpu_ns(ns);
        }
        fn flash(&self) -> Option<FlashSnapshot> {
            let n = self.statements;
            Some(FlashSnapshot { host_reads: n, host_writes: n, flash_programs: 2 * n, ..Default::default() })
        }
        fn precondition(&mut self, free_share: f64, _rng: &mut ChaCha8Rng) -> Result<(), String> {
            assert_eq!(self.statements, 0, "aging comes before any statement");
            self.aged_to = Some(free_share);
            Ok(())
        }
    }

    #[test]
    fn flash_counters_are_measured_per_run_and_per_kind_after_aging() {
        use crate::sqlite::kv::{Op, SqliteBench, SqliteBenchParams};
        let mut host =
            CountingHost { inner: crate::sqlite::HostSqlite::in_memory().unwrap(), statements: 0, aged_to: None };
        let p = SqliteBenchParams { ops: vec![Op::Overwrite, Op::Readrandom], num: 100, value_size: 256, batch: 5 };
        let config = SqliteRunConfig { free_space: Some(FreeSpace::Pct25), ..Default::default() };
        let params = crate::sqlite::ConfiguredSqlite::params(&p);
        let r = run(&mut host, &mut SqliteBench::new(p), params, &config, &mut |_, _| Control::Continue).unwrap();
        assert_eq!(host.aged_to, Some(0.25));
        let f = r.flash.as_ref().unwrap();
        // Setup and load statements are not counted; every measured one is.
        assert_eq!(f.counters.host_writes, r.statements);
        assert_eq!(f.counters.host_writes, 2 * (20 * 7));
        assert_eq!(f.write_amplification, 2.0);
        assert_eq!(f.flash_programs_per_transaction, 14.0);
        let per_kind: u64 = r.kinds.values().map(|k| k.flash.as_ref().unwrap().counters.flash_programs).sum();
        assert_eq!(per_kind, f.counters.flash_programs);
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(json["flash"]["flash_programs"], 2 * 280, "counters sit flat in the JSON, as in bench's");
        assert_eq!(json["run"]["free_space"], "25%");
    }

    #[test]
    fn a_stop_ends_the_run() {
        use crate::sqlite::kv::{SqliteBench, SqliteBenchParams};
        let mut host = crate::sqlite::HostSqlite::in_memory().unwrap();
        let p = SqliteBenchParams { num: 1000, value_size: 256, ..Default::default() };
        let params = crate::sqlite::ConfiguredSqlite::params(&p);
        let mut seen = 0;
        let e = run(&mut host, &mut SqliteBench::new(p), params, &SqliteRunConfig::default(), &mut |done, total| {
            seen = total;
            if done >= 512 {
                Control::Stop
            } else {
                Control::Continue
            }
        })
        .unwrap_err();
        assert_eq!(seen, 3000);
        assert_eq!(e, "sqlite-bench: stopped after 512 of 3000 transactions");
    }

    #[test]
    fn the_mean_latency_is_exact_and_zero_without_transactions() {
        assert!((mean_us(3_000_001, 3) - 1_000.000_333_333).abs() < 1e-9);
        assert_eq!(mean_us(0, 0), 0.0);
    }
}
