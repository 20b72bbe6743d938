//! Workloads on real SQLite: `sqlite-bench` (fillrandom,
//! overwrite, readrandom), YCSB core workloads A–F, TPC-C and TPC-B in SQL, run one
//! transaction at a time on one connection, timed in simulated time.
//!
//! SQLite runs on a [`SqliteHost`]: the connection plus a simulated clock, a CPU-cost
//! charge and the flash counters. [`host::HostSqlite`] is plain SQLite (in memory or on a
//! host file) whose clock advances by the charged CPU time only; the SQLite VFS over the
//! emulated flash implements the same trait, and there the clock also advances by every
//! I/O's device latency. Nothing here depends on which host it is.
//!
//! Invariants: every random choice comes from the run's seeded ChaCha generator and time
//! is the host's simulated clock, so the same seed on the same host gives the same
//! result apart from wall-clock fields. Fault model: an SQLite error (including one the
//! VFS raises for a failed device operation) ends the run with an error naming the
//! workload and the statement; nothing here panics on what SQLite returns.

pub mod config;
pub mod flash;
pub mod host;
pub mod kv;
pub mod runner;
pub mod tpcb;
pub mod tpcc;
pub mod ycsb;
pub mod zipf;

use crate::config_error::ConfigError;
use crate::params::{parse_params, Params};
use latency::Percentiles;
use nand::SimTime;
use rand_chacha::ChaCha8Rng;
use rusqlite::{Connection, Params as SqlParams, Row};
use serde::de::DeserializeOwned;
use serde::Serialize;

pub use host::HostSqlite;
pub use runner::{run, FreeSpace, SqliteResult, SqliteRunConfig, Synchronous};

/// Flash counters of the device under SQLite, as `bench` names them (docs/benchmarks.md).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct FlashSnapshot {
    /// Logical page reads and writes the file layer sent to the FTL.
    pub host_reads: u64,
    pub host_writes: u64,
    /// Every page program and block erase on the device (host pages, GC copies, metadata).
    pub flash_programs: u64,
    pub flash_erases: u64,
    /// Valid pages the FTL's GC copied, and the erases that GC did.
    pub gc_page_migrations: u64,
    pub gc_erases: u64,
    /// SW-WAL: database pages a checkpoint remapped onto WAL frames instead of
    /// programming them (each a program saved; the remap records are in the programs).
    pub remaps: u64,
    /// NoLgn-FTL: GC copies beyond the policy's own victim's because lock bits passed
    /// over it (the NoLgn paper's "additional migrations due to locking").
    pub gc_lock_migrations: u64,
}

impl FlashSnapshot {
    /// The counts from `earlier` to `self` (saturating: counters only grow).
    pub fn since(&self, earlier: &FlashSnapshot) -> FlashSnapshot {
        FlashSnapshot {
            host_reads: self.host_reads.saturating_sub(earlier.host_reads),
            host_writes: self.host_writes.saturating_sub(earlier.host_writes),
            flash_programs: self.flash_programs.saturating_sub(earlier.flash_programs),
            flash_erases: self.flash_erases.saturating_sub(earlier.flash_erases),
            gc_page_migrations: self.gc_page_migrations.saturating_sub(earlier.gc_page_migrations),
            gc_erases: self.gc_erases.saturating_sub(earlier.gc_erases),
            remaps: self.remaps.saturating_sub(earlier.remaps),
            gc_lock_migrations: self.gc_lock_migrations.saturating_sub(earlier.gc_lock_migrations),
        }
    }

    fn add(&mut self, d: &FlashSnapshot) {
        self.host_reads += d.host_reads;
        self.host_writes += d.host_writes;
        self.flash_programs += d.flash_programs;
        self.flash_erases += d.flash_erases;
        self.gc_page_migrations += d.gc_page_migrations;
        self.gc_erases += d.gc_erases;
        self.remaps += d.remaps;
        self.gc_lock_migrations += d.gc_lock_migrations;
    }
}

/// What SQLite runs on: one connection, a simulated clock, and the device's counters.
///
/// The VFS host (crate `sqlite_flash`) implements it for `FlashSqlite`; [`HostSqlite`]
/// implements it for plain SQLite with a CPU-only clock.
pub trait SqliteHost {
    /// The one connection every statement runs on.
    fn connection(&self) -> &Connection;
    /// Simulated time now, in nanoseconds: CPU charged so far plus, on flash, device time.
    fn now(&self) -> SimTime;
    /// Advances the simulated clock by CPU work (the runner charges a cost per statement).
    fn charge_cpu_ns(&mut self, ns: u64);
    /// The device's counters; `None` when SQLite is not on emulated flash. The runner
    /// reads them around every transaction, so this should be a copy of counters.
    fn flash(&self) -> Option<FlashSnapshot>;
    /// Ages the device before the database is created, as the NoLgn-FTL paper does (§4.1):
    /// random whole-page overwrites of logical pages outside SQLite's files (their
    /// payload is never read, so no data need be kept) until `free_share` of the
    /// device's logical space is free and GC has reached its steady state. It needs the
    /// FTL (to write logical pages and see its free space) and the file layer (to keep
    /// those pages apart from the files'); the VFS host implements it. A host without
    /// flash refuses with an error.
    fn precondition(&mut self, free_share: f64, rng: &mut ChaCha8Rng) -> Result<(), String>;
    /// Bytes the emulated device keeps in memory; `None` when SQLite is not on flash.
    fn device_memory_bytes(&self) -> Option<u64> {
        None
    }
    /// Heap bytes of the FTL's maps and tables; `None` when SQLite is not on flash.
    fn mapping_memory_bytes(&self) -> Option<u64> {
        None
    }
    /// Starts the page I/O latencies afresh (the runner calls it where the measured
    /// transactions start); nothing to do without flash.
    fn reset_io_latency(&self) {}
    /// The latency of SQLite's page reads and writes on the device since the last
    /// [`SqliteHost::reset_io_latency`], in µs; `None` when SQLite is not on flash.
    fn io_latency(&self) -> Option<(Percentiles, Percentiles)> {
        None
    }
}

/// A transaction's kind, as an index into [`SqliteWorkload::kinds`].
pub type Kind = usize;

/// A workload on SQLite: its schema and load, a fixed number of measured transactions,
/// its consistency conditions.
pub trait SqliteWorkload {
    fn name(&self) -> &'static str;
    /// The names of its transaction kinds (the per-kind results are keyed by them).
    fn kinds(&self) -> &'static [&'static str];
    /// Creates the schema and loads the initial data (not measured).
    fn load(&mut self, s: &mut Session<'_>, rng: &mut ChaCha8Rng) -> Result<(), String>;
    /// How many measured transactions the run has.
    fn transactions(&self) -> u64;
    /// Runs transaction number `n` (0-based): its kind, and whether it committed.
    fn transaction(&mut self, s: &mut Session<'_>, n: u64, rng: &mut ChaCha8Rng) -> Result<(Kind, bool), String>;
    /// Committed NewOrder transactions (TPC-C only: the basis of tpmC).
    fn new_orders(&self) -> Option<u64> {
        None
    }
    /// The workload's consistency conditions; `Err` names the first that fails.
    fn check(&mut self, s: &mut Session<'_>) -> Result<(), String>;
}

/// The connection as a workload sees it: every statement charges the host the CPU cost
/// per statement before it runs, and every error names the statement.
pub struct Session<'h> {
    host: &'h mut dyn SqliteHost,
    cpu_ns_per_statement: u64,
    statements: u64,
}

fn sql_error(sql: &str, e: rusqlite::Error) -> String {
    let first_line = sql.trim().lines().next().unwrap_or("");
    format!("sqlite: {e} (in `{first_line}`)")
}

impl<'h> Session<'h> {
    pub fn new(host: &'h mut dyn SqliteHost, cpu_ns_per_statement: u64) -> Session<'h> {
        Session { host, cpu_ns_per_statement, statements: 0 }
    }

    /// Statements run so far.
    pub fn statements(&self) -> u64 {
        self.statements
    }

    pub fn host(&self) -> &dyn SqliteHost {
        &*self.host
    }

    fn charge(&mut self) {
        self.statements += 1;
        self.host.charge_cpu_ns(self.cpu_ns_per_statement);
    }

    /// Runs one statement (cached prepared) and returns the rows it changed.
    pub fn exec<P: SqlParams>(&mut self, sql: &str, params: P) -> Result<usize, String> {
        self.charge();
        let conn = self.host.connection();
        conn.prepare_cached(sql).and_then(|mut st| st.execute(params)).map_err(|e| sql_error(sql, e))
    }

    /// Runs statements without parameters (schema, BEGIN, COMMIT), one charge each.
    pub fn batch(&mut self, sql: &str) -> Result<(), String> {
        let statements = sql.split(';').filter(|s| !s.trim().is_empty()).count() as u64;
        self.statements += statements;
        self.host.charge_cpu_ns(self.cpu_ns_per_statement * statements);
        self.host.connection().execute_batch(sql).map_err(|e| sql_error(sql, e))
    }

    /// The first row's mapping, `None` when there is no row.
    pub fn row<T, P: SqlParams>(
        &mut self,
        sql: &str,
        params: P,
        f: impl FnOnce(&Row<'_>) -> rusqlite::Result<T>,
    ) -> Result<Option<T>, String> {
        self.charge();
        let conn = self.host.connection();
        let mut st = conn.prepare_cached(sql).map_err(|e| sql_error(sql, e))?;
        let mut rows = st.query(params).map_err(|e| sql_error(sql, e))?;
        match rows.next().map_err(|e| sql_error(sql, e))? {
            Some(r) => f(r).map(Some).map_err(|e| sql_error(sql, e)),
            None => Ok(None),
        }
    }

    /// The first row's mapping; no row is an error naming `what`.
    pub fn one<T, P: SqlParams>(
        &mut self,
        what: &str,
        sql: &str,
        params: P,
        f: impl FnOnce(&Row<'_>) -> rusqlite::Result<T>,
    ) -> Result<T, String> {
        self.row(sql, params, f)?.ok_or_else(|| format!("{what}: no such row"))
    }

    /// Every row's mapping.
    pub fn rows<T, P: SqlParams>(
        &mut self,
        sql: &str,
        params: P,
        mut f: impl FnMut(&Row<'_>) -> rusqlite::Result<T>,
    ) -> Result<Vec<T>, String> {
        self.charge();
        let conn = self.host.connection();
        let mut st = conn.prepare_cached(sql).map_err(|e| sql_error(sql, e))?;
        let mapped = st.query_map(params, |r| f(r)).map_err(|e| sql_error(sql, e))?;
        mapped.collect::<rusqlite::Result<Vec<T>>>().map_err(|e| sql_error(sql, e))
    }

    /// One integer from a query with one row and one column.
    pub fn int<P: SqlParams>(&mut self, sql: &str, params: P) -> Result<i64, String> {
        self.one(sql, sql, params, |r| r.get::<_, Option<i64>>(0)).map(|v| v.unwrap_or(0))
    }
}

/// A SQLite workload's parameters (serde, defaults, unknown names refused), as
/// [`crate::params::WorkloadParams`] is for the engine's workloads.
pub trait SqliteParams: Serialize + DeserializeOwned + Default + std::fmt::Debug + 'static {
    const NAME: &'static str;
    const ABOUT: &'static str;
    fn check(&self) -> Result<(), (&'static str, String)>;
    fn build(&self) -> Box<dyn SqliteWorkload>;
}

/// A SQLite workload's checked parameters, their type forgotten.
pub trait ConfiguredSqlite: std::fmt::Debug {
    /// Every parameter, defaults filled in.
    fn params(&self) -> Params;
    fn build(&self) -> Box<dyn SqliteWorkload>;
}

impl<P: SqliteParams> ConfiguredSqlite for P {
    fn params(&self) -> Params {
        match serde_json::to_value(self) {
            Ok(serde_json::Value::Object(map)) => map,
            other => panic!("{}: parameters must serialise to a map, got {other:?}", P::NAME),
        }
    }

    fn build(&self) -> Box<dyn SqliteWorkload> {
        SqliteParams::build(self)
    }
}

/// One registered SQLite workload.
#[derive(Debug)]
pub struct RegisteredSqlite {
    pub name: &'static str,
    pub about: &'static str,
    configure: fn(&Params) -> Result<Box<dyn ConfiguredSqlite>, ConfigError>,
}

impl RegisteredSqlite {
    const fn of<P: SqliteParams>() -> RegisteredSqlite {
        RegisteredSqlite { name: P::NAME, about: P::ABOUT, configure: configure::<P> }
    }

    /// Parses and checks `params` (missing ones take their defaults).
    pub fn configure(&self, params: &Params) -> Result<Box<dyn ConfiguredSqlite>, ConfigError> {
        (self.configure)(params)
    }

    /// Every parameter with its default value.
    pub fn defaults(&self) -> Params {
        match self.configure(&Params::new()) {
            Ok(c) => c.params(),
            Err(e) => panic!("{}: the default parameters are refused: {e}", self.name),
        }
    }
}

fn configure<P: SqliteParams>(params: &Params) -> Result<Box<dyn ConfiguredSqlite>, ConfigError> {
    Ok(Box::new(parse_params::<P>(P::NAME, params, &[], P::check)?))
}

/// Every workload that runs on SQLite (`bench --engine sqlite --workload NAME`).
pub static SQLITE_REGISTRY: &[RegisteredSqlite] = &[
    RegisteredSqlite::of::<kv::SqliteBenchParams>(),
    RegisteredSqlite::of::<ycsb::YcsbParams>(),
    RegisteredSqlite::of::<tpcc::TpccSqlParams>(),
    RegisteredSqlite::of::<tpcb::TpcbSqlParams>(),
];

/// The registered SQLite workload of this name.
pub fn find(name: &str) -> Result<&'static RegisteredSqlite, ConfigError> {
    SQLITE_REGISTRY.iter().find(|w| w.name == name).ok_or_else(|| {
        let names: Vec<&str> = SQLITE_REGISTRY.iter().map(|w| w.name).collect();
        ConfigError::field(
            "workload.name",
            format!("unknown SQLite workload `{name}` (registered: {})", names.join(", ")),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_sqlite_workload_builds_from_its_defaults() {
        let names: Vec<&str> = SQLITE_REGISTRY.iter().map(|w| w.name).collect();
        assert_eq!(names, ["sqlite-bench", "ycsb", "tpcc", "tpcb"]);
        for w in SQLITE_REGISTRY {
            let defaults = w.defaults();
            let c = w.configure(&defaults).unwrap();
            assert_eq!(c.params(), defaults, "{}: defaults are a fixed point", w.name);
            assert_eq!(c.build().name(), w.name);
            assert!(!c.build().kinds().is_empty());
        }
    }

    #[test]
    fn bad_parameters_are_named() {
        let params = |v: serde_json::Value| v.as_object().unwrap().clone();
        let e = find("ycsb").unwrap().configure(&params(json!({"num": 3}))).unwrap_err().to_string();
        assert!(e.starts_with("workload.num: ycsb takes no parameter `num`"), "{e}");
        let e = find("ycsb").unwrap().configure(&params(json!({"mix": "g"}))).unwrap_err().to_string();
        assert!(e.starts_with("workload.mix"), "{e}");
        let e = find("sqlite-bench").unwrap().configure(&params(json!({"value_size": 100}))).unwrap_err().to_string();
        assert!(e.starts_with("workload.value_size: must be in 256..=16384, got 100"), "{e}");
        let e = find("sqlite-bench").unwrap().configure(&params(json!({"ops": ["fill"]}))).unwrap_err().to_string();
        assert!(e.starts_with("workload.ops"), "{e}");
        assert!(find("tatp").unwrap_err().to_string().contains("sqlite-bench, ycsb, tpcc, tpcb"));
    }
}
