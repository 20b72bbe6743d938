//! What a run is: its input, one of several kinds (an engine experiment, a SQLite
//! workload on emulated flash), each a
//! serialisable config that alone reproduces the run, and how a run of each kind is
//! checked and executed.
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
//!    uses it): `check` without running, `execute` to a result JSON with a top-level
//!    `wall_seconds`.
//!
//! Nothing else changes: planning, the store, the reports and the progress lines take
//! any kind.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use workloads::sqlite::flash::FlashRunConfig;
use workloads::{Control, Experiment, ExperimentConfig, Progress};

/// Where a run sends its progress lines (the runner prefixes and prints them).
pub type Log<'a> = &'a (dyn Fn(String) + Sync);

/// The input of one run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "config", rename_all = "snake_case")]
// A plan holds tens of inputs: boxing the engine's config would save nothing worth its noise.
#[allow(clippy::large_enum_variant)]
pub enum RunInput {
    /// A workload on the engine (`workloads::Experiment`), as `bench` runs it.
    Engine(ExperimentConfig),
    /// A SQLite workload on a fresh emulated device (`bench --engine sqlite --storage
    /// ftl:KIND`): journal, FTL, device, `synchronous`, aging, host I/O stack, seed.
    Sqlite(FlashRunConfig),
}

/// How runs of one kind are checked and made.
pub trait RunKind {
    /// Checks the config as the run would, without running; the error names the problem.
    fn check(&self) -> Result<(), String>;
    /// Makes the run. `tag` prefixes every line sent to `log` (start, progress, end).
    /// The result's JSON has the run's wall-clock seconds as `wall_seconds`.
    fn execute(&self, tag: &str, log: Log) -> Result<Value, String>;
}

impl RunInput {
    /// The kind's config behind the common interface.
    pub fn kind(&self) -> &dyn RunKind {
        match self {
            RunInput::Engine(config) => config,
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

    pub fn check(&self) -> Result<(), String> {
        self.kind().check()
    }

    pub fn execute(&self, tag: &str, log: Log) -> Result<Value, String> {
        self.kind().execute(tag, log)
    }
}

impl RunKind for ExperimentConfig {
    fn check(&self) -> Result<(), String> {
        Experiment::new(self.clone()).map(drop).map_err(|e| e.to_string())
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

impl RunKind for FlashRunConfig {
    fn check(&self) -> Result<(), String> {
        FlashRunConfig::check(self).map(drop)
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
    fn a_sqlite_run_is_keyed_on_its_tagged_config_and_checked_before_running() {
        let config = FlashRunConfig::default();
        let input = RunInput::Sqlite(config.clone());
        let tagged: Value = serde_json::from_str(&input.key_text()).unwrap();
        assert_eq!(tagged["kind"], "sqlite");
        assert_eq!(serde_json::from_value::<RunInput>(tagged).unwrap(), input);
        let bad =
            FlashRunConfig { ftl: "page".into(), journal: workloads::sqlite::flash::FlashJournal::Nolgn, ..config };
        assert!(RunInput::Sqlite(bad).check().unwrap_err().contains("needs the nolgn FTL"));
    }
}
