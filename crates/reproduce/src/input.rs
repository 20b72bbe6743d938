//! What a run is: its input, one of several kinds (an engine experiment, an index
//! benchmark, a SQLite workload on emulated flash), each a serialisable config that alone reproduces the run, and how a
//! run of each kind is checked, described and executed.
//!
//! The store keys a run on its input's JSON ([`RunInput::key_text`]): an engine run on
//! its `ExperimentConfig` alone (so output directories written before there were other
//! kinds are reused), any other kind on its tagged JSON (`{"kind": …, "config": …}`),
//! so two kinds never share a key.
//!
//! Adding a kind of run:
//! 1. a variant of [`RunInput`] holding the kind's config (serde-serialisable);
//! 2. one arm in [`RunInput::kind`] returning that config as a [`RunKind`];
//! 3. `impl RunKind` for the config (in this module or the experiment module that
//!    uses it): `check` without running, `conditions` in one line for the report,
//!    `execute` to a result JSON with a top-level `wall_seconds`.
//!
//! [`RunInput::execute`] adds `cpu_seconds` to every kind's result: the CPU time of the
//! thread that made the run (each run is single-threaded), so a report can give what an
//! experiment costs apart from what else the machine was doing.
//!
//! Nothing else changes: planning, the store, the reports and the progress lines take
//! any kind.

use crate::model_version::{self, Family};
use index::bench::{self, IndexBenchConfig};
use index::Storage;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use workloads::config::StorageConfig;
use workloads::experiment::GIT_COMMIT;
use workloads::sqlite::flash::{FlashJournal, FlashRunConfig};
use workloads::{Control, Experiment, ExperimentConfig, Progress};

/// Where a run sends its progress lines (the runner prefixes and prints them).
pub type Log<'a> = &'a (dyn Fn(String) + Sync);

/// The input of one run. Not boxed: an invocation holds a few hundred at most, and a
/// variant constructs from its config as is.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "config", rename_all = "snake_case")]
pub enum RunInput {
    /// A workload on the engine (`workloads::Experiment`), as `bench` runs it.
    Engine(ExperimentConfig),
    /// A flash-aware B+-tree benchmark (`index::bench`), as `index-bench` runs it.
    Index(IndexBenchConfig),
    /// A SQLite workload on a fresh emulated device (`bench --engine sqlite --storage
    /// ftl:KIND`): journal, FTL, device, `synchronous`, aging, host I/O stack, seed.
    Sqlite(FlashRunConfig),
}

/// How runs of one kind are checked and made.
pub trait RunKind {
    /// Checks the config as the run would, without running; the error names the problem.
    fn check(&self) -> Result<(), String>;
    /// The run's conditions in one line, for the report beside its label.
    fn conditions(&self) -> String;
    /// Makes the run. `tag` prefixes every line sent to `log` (start, progress, end).
    /// The result's JSON has the run's wall-clock seconds as `wall_seconds`.
    fn execute(&self, tag: &str, log: Log) -> Result<Value, String>;
}

impl RunInput {
    /// Which family of runs it is, for its model version ([`crate::model_version`]).
    pub fn family(&self) -> Family {
        match self {
            RunInput::Engine(_) => Family::Engine,
            RunInput::Index(_) => Family::Index,
            RunInput::Sqlite(c) if c.journal == FlashJournal::SwWal => Family::SqliteSwWal,
            RunInput::Sqlite(_) => Family::Sqlite,
        }
    }

    /// The current model's version for this run.
    pub fn model_version(&self) -> u32 {
        model_version::version_of(self.family())
    }

    /// The kind's config behind the common interface.
    pub fn kind(&self) -> &dyn RunKind {
        match self {
            RunInput::Engine(config) => config,
            RunInput::Index(config) => config,
            RunInput::Sqlite(config) => config,
        }
    }

    /// The text the store hashes into the run's key: the typed serialisation (field
    /// order as declared, which a `Value` would sort), of the config alone for an
    /// engine run, else of the tagged input.
    pub fn key_text(&self) -> String {
        let text = match self {
            RunInput::Engine(config) => serde_json::to_string(config),
            tagged => serde_json::to_string(tagged),
        };
        text.unwrap_or_default()
    }

    /// [`RunInput::key_text`] as JSON: the store keeps it beside the result and reuses
    /// a run only where it is equal.
    pub fn key_json(&self) -> Value {
        serde_json::from_str(&self.key_text()).unwrap_or(Value::Null)
    }

    /// The input back from its [`RunInput::key_json`], as a kept run records it
    /// (`input_config`): tagged with its `kind`, or an engine run's config alone. The
    /// error says what does not parse.
    pub fn from_key_json(value: &Value) -> Result<RunInput, String> {
        let input = match value.get("kind") {
            Some(_) => RunInput::deserialize(value),
            None => ExperimentConfig::deserialize(value).map(RunInput::Engine),
        };
        input.map_err(|e| workloads::limits::cut_quoted(&e.to_string()))
    }

    pub fn check(&self) -> Result<(), String> {
        self.kind().check()
    }

    pub fn conditions(&self) -> String {
        self.kind().conditions()
    }

    /// Makes the run on this thread; the result gets the thread's CPU seconds spent on
    /// it as `cpu_seconds`, beside the kind's `wall_seconds`.
    pub fn execute(&self, tag: &str, log: Log) -> Result<Value, String> {
        let start = thread_cpu_seconds();
        let mut value = self.kind().execute(tag, log)?;
        if let Some(map) = value.as_object_mut() {
            map.insert("cpu_seconds".into(), Value::from(thread_cpu_seconds() - start));
        }
        Ok(value)
    }
}

/// The CPU time this thread has used, in seconds (`CLOCK_THREAD_CPUTIME_ID`).
pub fn thread_cpu_seconds() -> f64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    t.tv_sec as f64 + t.tv_nsec as f64 * 1e-9
}

impl RunKind for ExperimentConfig {
    fn check(&self) -> Result<(), String> {
        Experiment::new(self.clone()).map(drop).map_err(|e| e.to_string())
    }

    fn conditions(&self) -> String {
        let params: Vec<String> = self.workload.params.iter().map(|(k, v)| format!("{k} {v}")).collect();
        let storage = match &self.storage {
            StorageConfig::Ipl(c) => {
                format!("ipl ({} B log region per unit, {} B sectors)", c.log_region_bytes, c.sector_bytes)
            }
            other => serde_json::to_string(other).unwrap_or_default(),
        };
        let blocks = self.device.blocks_per_chip.map_or(String::new(), |b| format!(", {b} blocks per chip"));
        let log = self.engine.log_device_mib.map_or(String::new(), |mib| {
            format!(", the log on a {mib} MiB device of {} chips", self.engine.log_chips.unwrap_or(1))
        });
        format!(
            "{} ({}) on {}{blocks}; storage {}{log}; IPA [{}] {}; buffer {}%; {} s warm-up, {} s measured; seed {}",
            self.workload.name,
            params.join(", "),
            self.device.preset,
            storage.trim_matches('"'),
            self.engine.ipa,
            self.engine.ipa_mode,
            self.engine.buffer_share * 100.0,
            self.driver.warmup_s,
            self.driver.sim_time_s,
            self.seed
        )
    }

    /// Logs the start, each quarter of the simulated time, and the end.
    fn execute(&self, tag: &str, log: Log) -> Result<Value, String> {
        let run = Experiment::new(self.clone()).map_err(|e| e.to_string())?;
        log(format!("{tag}: running ({})", run.size()));
        let mut quarter = 0;
        let r = run
            .run(&mut |progress| {
                if let Progress::Running { sim_seconds, total_sim_seconds, throughput_tps, .. } = progress {
                    let reached = (sim_seconds / total_sim_seconds.max(f64::MIN_POSITIVE) * 4.0) as u32;
                    if reached > quarter && reached < 4 {
                        quarter = reached;
                        log(format!(
                            "{tag}: {}% of {total_sim_seconds:.0} simulated s, {throughput_tps:.0} tps",
                            quarter * 25
                        ));
                    }
                }
                Control::Continue
            })
            .map_err(|e| e.to_string())?;
        log(format!("{tag}: done in {:.1} wall s, {:.0} tps", r.wall_seconds, r.metrics.throughput_tps));
        Ok(r.to_json())
    }
}

impl RunKind for IndexBenchConfig {
    fn check(&self) -> Result<(), String> {
        IndexBenchConfig::check(self)
    }

    fn conditions(&self) -> String {
        let lower = |v: &dyn std::fmt::Debug| format!("{v:?}").to_lowercase();
        let logs = match (self.storage, self.log_block_count) {
            (Storage::Native, _) => String::new(),
            (_, Some(n)) => format!(" ({n} log blocks)"),
            (_, None) => format!(" (log blocks {}% of the data blocks)", self.log_blocks_percent),
        };
        format!(
            "{} on {}{logs}, {} B nodes, {} {} inserts, {} queries, {} scans, {} frames, {}; seed {}",
            lower(&self.index),
            lower(&self.storage),
            self.node_bytes,
            self.inserts,
            lower(&self.order),
            self.queries,
            self.scans,
            self.buffer_frames,
            self.device,
            self.seed
        )
    }

    /// Logs the start, each quarter of each phase, and the end.
    fn execute(&self, tag: &str, log: Log) -> Result<Value, String> {
        log(format!("{tag}: running ({} inserts, {} frames)", self.inserts, self.buffer_frames));
        let mut quarter = 0;
        let r = bench::run(self, &mut |p| {
            let reached = (p.done * 4 / p.total.max(1)) as u32;
            if p.done == 0 {
                quarter = 0;
            } else if reached > quarter && reached < 4 {
                quarter = reached;
                log(format!("{tag}: {} {}% of {}", p.phase, quarter * 25, p.total));
            }
        })?;
        log(format!("{tag}: done in {:.1} wall s, {:.0} simulated I/O s inserting", r.wall_seconds, r.insert.sim_io_s));
        Ok(r.to_json(GIT_COMMIT))
    }
}

impl RunKind for FlashRunConfig {
    fn check(&self) -> Result<(), String> {
        FlashRunConfig::check(self).map(drop)
    }

    fn conditions(&self) -> String {
        format!(
            "{} on {} ({} journal, {} FTL); seed {}",
            self.workload.name,
            serde_json::to_string(&self.device).unwrap_or_default(),
            self.journal.name(),
            self.ftl,
            self.seed
        )
    }

    /// Logs the start, each quarter of the transactions, and the end; the result is
    /// `bench --engine sqlite --json`'s, with `wall_seconds`.
    fn execute(&self, tag: &str, log: Log) -> Result<Value, String> {
        log(format!("{tag}: running {} ({}, {} FTL)", self.workload.name, self.journal.name(), self.ftl));
        let mut quarter = 0;
        let r = self.run(&mut |done, total| {
            let reached = (done * 4).checked_div(total).unwrap_or(0);
            if reached > quarter && reached < 4 {
                quarter = reached;
                log(format!("{tag}: {}% of {total} transactions", quarter * 25));
            }
            Control::Continue
        })?;
        log(format!("{tag}: done in {:.1} wall s, {:.0} tps", r.run_wall_seconds, r.throughput_tps));
        let mut value = serde_json::to_value(&r).map_err(|e| format!("json: {e}"))?;
        if let Some(map) = value.as_object_mut() {
            map.insert("wall_seconds".into(), Value::from(r.run_wall_seconds));
        }
        Ok(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_engine_run_is_keyed_on_its_config_alone() {
        let config = ExperimentConfig::default();
        let input = RunInput::Engine(config.clone());
        assert_eq!(input.key_text(), serde_json::to_string(&config).unwrap());
        assert_eq!(input.key_json(), serde_json::to_value(&config).unwrap());
        let tagged = serde_json::to_value(&input).unwrap();
        assert_eq!(tagged["kind"], "engine");
        assert_eq!(serde_json::from_value::<RunInput>(tagged).unwrap(), input);
    }

    #[test]
    fn a_run_records_the_cpu_seconds_of_its_thread() {
        let e = crate::catalogue::find("demo:table1").expect("listed");
        let run = (e.implementation.as_ref().expect("implemented").runs)(crate::Scale::Smoke).remove(0);
        let before = thread_cpu_seconds();
        let result = run.input.execute("t", &|_| {}).expect("runs");
        let spent = thread_cpu_seconds() - before;
        let cpu = result["cpu_seconds"].as_f64().expect("cpu_seconds is recorded");
        assert!(cpu > 0.0 && cpu <= spent, "{cpu} of {spent}");
        assert!(result["wall_seconds"].as_f64().is_some());
    }

    #[test]
    fn an_input_reads_back_from_its_key_json() {
        let engine = RunInput::Engine(ExperimentConfig::default());
        let index = RunInput::Index(IndexBenchConfig::new(index::IndexKind::Ipl));
        for input in [engine, index] {
            assert_eq!(RunInput::from_key_json(&input.key_json()), Ok(input.clone()));
        }
        let e = RunInput::from_key_json(&serde_json::json!({"kind": "sqlite", "config": {"seed": "x"}})).unwrap_err();
        assert!(e.contains("invalid type"), "{e}");
        let e = RunInput::from_key_json(&serde_json::json!({"seed": 1, "disk": "y"})).unwrap_err();
        assert!(e.contains("unknown field `disk`"), "{e}");
    }

    #[test]
    fn another_kind_is_keyed_on_its_tagged_json() {
        let input = RunInput::Index(IndexBenchConfig::new(index::IndexKind::Ipl));
        assert!(input.key_text().starts_with(r#"{"kind":"index","config":{"index":"ipl","#), "{}", input.key_text());
        assert_eq!(input.key_json(), serde_json::to_value(&input).unwrap());
    }
}
