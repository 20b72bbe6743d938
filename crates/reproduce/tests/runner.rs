//! One invocation of the runner on a made-up experiment: a run that cannot start is
//! reported as failed, on the log and in the experiment's report, and nothing is kept.

use reproduce::catalogue::{Experiment, Implementation, Ours, Results, RunSpec, Scale};
use reproduce::{reproduce, Options};
use std::sync::Mutex;
use workloads::ExperimentConfig;

fn unrunnable(_: Scale) -> Vec<RunSpec> {
    let mut config = ExperimentConfig::default();
    config.driver.sim_time_s = -1.0;
    vec![RunSpec { label: "negative time".into(), config }]
}

fn no_cells(_: &Results) -> Vec<Ours> {
    Vec::new()
}

#[test]
fn a_run_that_cannot_start_is_logged_and_reported_as_failed() {
    let experiment = Experiment {
        id: "test:unrunnable",
        description: "d",
        implementation: Some(Implementation {
            runs: unrunnable,
            cells: no_cells,
            notes: &["Not stated, assumed: a negative run time."],
        }),
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
    assert!(md.contains("| negative time | runs/"), "{md}");
    assert!(md.contains("FAILED: driver.sim_time_s"), "{md}");
    assert!(md.contains("Conditions and assumptions:\n\n- Not stated, assumed: a negative run time.\n"), "{md}");
    let json = std::fs::read_to_string(out.join("test-unrunnable.json")).unwrap();
    assert!(json.contains("\"notes\": [\n    \"Not stated, assumed: a negative run time.\"\n  ]"), "{json}");
    assert_eq!(std::fs::read_dir(out.join("runs")).unwrap().count(), 0, "nothing kept for a failed run");
}
