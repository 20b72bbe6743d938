//! The runner on made-up experiments: a run that cannot start is reported as failed, on
//! the log and in the experiment's report, and nothing is kept; a run kept by an output
//! directory of the layout before CPU times were recorded is reused.

use reproduce::experiment::{Experiment, Implementation, Ours, Results, RunSpec, Scale};
use reproduce::{reproduce, Options};
use std::sync::Mutex;
use workloads::ExperimentConfig;

fn unrunnable(_: Scale) -> Vec<RunSpec> {
    let mut config = ExperimentConfig::default();
    config.driver.sim_time_s = -1.0;
    vec![RunSpec::engine("negative time".into(), config)]
}

fn no_cells(_: &Results) -> Vec<Ours> {
    Vec::new()
}

#[test]
fn a_run_that_cannot_start_is_logged_and_reported_as_failed() {
    let experiment = Experiment {
        id: "test:unrunnable",
        description: "d",
        implementation: Some(Implementation::new(unrunnable, no_cells)),
    };
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let options = Options { scale: Scale::Smoke, jobs: 1, out: out.clone(), overwrite: false };
    let lines = Mutex::new(Vec::new());
    let log = |line: String| lines.lock().unwrap().push(line);
    let outcome = reproduce(&[&experiment], &options, &log).expect("the invocation itself completes");
    assert_eq!((outcome.executed, outcome.reused, outcome.failed), (0, 0, 1));
    let lines = lines.into_inner().unwrap();
    assert!(
        lines.iter().any(|l| l.starts_with("[1/1] test:unrunnable negative time: FAILED: driver.sim_time_s")),
        "{lines:?}"
    );
    let md = std::fs::read_to_string(out.join("test-unrunnable.md")).unwrap();
    assert!(md.contains("| negative time | tpcb (") && md.contains("| runs/"), "{md}");
    assert!(md.contains("FAILED: driver.sim_time_s"), "{md}");
    assert_eq!(std::fs::read_dir(out.join("runs")).unwrap().count(), 0, "nothing kept for a failed run");
}

fn engine_run(_: Scale) -> Vec<RunSpec> {
    let config = ExperimentConfig { seed: 7, ..ExperimentConfig::default() };
    vec![RunSpec::engine("kept".into(), config)]
}

/// An output directory written before runs recorded their CPU time: its run file (the
/// layout `{"input_config": …, "result": …}`, no `cpu_seconds`, written here by hand) is
/// reused, and the reports say its CPU time is not known instead of counting it as 0.
#[test]
fn a_directory_written_before_cpu_times_were_recorded_is_reused() {
    let experiment = Experiment {
        id: "test:kept",
        description: "d",
        implementation: Some(Implementation::new(engine_run, no_cells)),
    };
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    std::fs::create_dir_all(out.join("runs")).unwrap();
    std::fs::write(out.join(reproduce::store::MARKER), "deltaflash reproduce output directory\n").unwrap();
    let input = &engine_run(Scale::Smoke)[0].input;
    let stored = serde_json::json!({ "input_config": input.key_json(), "result": { "wall_seconds": 3.2 } });
    let file = out.join("runs").join(format!("{}.json", reproduce::store::Store::key(input)));
    std::fs::write(&file, serde_json::to_string_pretty(&stored).unwrap()).unwrap();

    let options = Options { scale: Scale::Smoke, jobs: 1, out: out.clone(), overwrite: false };
    let outcome = reproduce(&[&experiment], &options, &|_| {}).expect("the invocation completes");
    assert_eq!((outcome.executed, outcome.reused, outcome.failed), (0, 1, 0));
    assert_eq!((outcome.costs[0].runs, outcome.costs[0].runs_without_cpu), (1, 1));
    let md = std::fs::read_to_string(out.join("test-kept.md")).unwrap();
    assert!(md.contains("| kept | ") && md.contains(" | 3.2 | – |\n"), "{md}");
    assert!(md.contains("CPU: 0.0 s over 1 runs (1 without a recorded CPU time)."), "{md}");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["experiments"][0]["runs_without_cpu"], 1, "{summary}");
    assert!(out.join("results.md").is_file());
}
