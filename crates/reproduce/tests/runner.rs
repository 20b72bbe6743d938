//! The runner on made-up experiments: a run that cannot start is reported as failed, on
//! the log and in the experiment's report, and nothing is kept; a run kept by an output
//! directory of the layout before CPU times were recorded is reused; a run kept by an
//! older model version is made again and counted stale; a run whose database would
//! outgrow its device is refused before it starts, and `plan` says so without running;
//! a run that outgrows its memory budget fails with the budget's message; headline runs
//! are made before any ablation variant's.

use reproduce::experiment::{Experiment, Implementation, Ours, Results, RunSpec, Scale, Variant};
use reproduce::input::RunInput;
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

/// An experiment of `runs` whose runs give no cells.
fn experiment(id: &'static str, runs: fn(Scale) -> Vec<RunSpec>) -> Experiment {
    Experiment { id, description: "d", implementation: Some(Implementation::new(runs, no_cells)) }
}

/// One run at a time at the smoke scale into `out`.
fn smoke(out: &std::path::Path) -> Options {
    Options { scale: Scale::Smoke, jobs: 1, out: out.to_path_buf(), overwrite: false }
}

/// `runs` made as the one experiment `id` at smoke scale into a fresh output directory:
/// the outcome, the log's lines, and the directory (inside the returned temporary one).
fn reproduce_alone(
    id: &'static str,
    runs: fn(Scale) -> Vec<RunSpec>,
) -> (reproduce::Outcome, Vec<String>, tempfile::TempDir, std::path::PathBuf) {
    let experiment = experiment(id, runs);
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let options = smoke(&out);
    let lines = Mutex::new(Vec::new());
    let log = |line: String| lines.lock().unwrap().push(line);
    let outcome = reproduce(&[&experiment], &options, &log).expect("the invocation itself completes");
    (outcome, lines.into_inner().unwrap(), tmp, out)
}

#[test]
fn a_run_that_cannot_start_is_logged_and_reported_as_failed() {
    let (outcome, lines, _tmp, out) = reproduce_alone("test:unrunnable", unrunnable);
    assert_eq!((outcome.executed, outcome.reused, outcome.failed), (0, 0, 1));
    assert!(
        lines.iter().any(|l| l.starts_with("[1/1] test:unrunnable negative time: FAILED: driver.sim_time_s")),
        "{lines:?}"
    );
    let md = std::fs::read_to_string(out.join("test-unrunnable.md")).unwrap();
    assert!(md.contains("| negative time | tpcb (") && md.contains("| runs/"), "{md}");
    assert!(md.contains("FAILED: driver.sim_time_s"), "{md}");
    assert_eq!(std::fs::read_dir(out.join("runs")).unwrap().count(), 0, "nothing kept for a failed run");
}

/// SQLite on NoLgn-FTL whose page images get 2 MiB of memory: more than that it writes.
fn over_its_budget(_: Scale) -> Vec<RunSpec> {
    use workloads::sqlite::flash::{FlashJournal, FlashRunConfig};
    let mut c = FlashRunConfig { ftl: "nolgn".into(), journal: FlashJournal::Nolgn, ..FlashRunConfig::default() };
    let params = serde_json::json!({"num": 4_000, "value_size": 1_024, "batch": 10});
    c.workload.params = params.as_object().cloned().unwrap_or_default();
    (c.device.chips, c.device.blocks_per_chip) = (Some(4), Some(72));
    let bookkeeping = workloads::limits::bookkeeping_bytes(&c.device.geometry().unwrap(), true);
    c.device.max_memory_bytes = Some(bookkeeping + (2 << 20));
    vec![RunSpec { label: "budget".into(), input: RunInput::Sqlite(c) }]
}

#[test]
fn a_run_that_outgrows_its_page_budget_fails_with_the_budgets_message() {
    let (outcome, lines, _tmp, out) = reproduce_alone("test:budget", over_its_budget);
    assert_eq!((outcome.executed, outcome.failed), (0, 1));
    let failed = lines.iter().find(|l| l.starts_with("[1/1] test:budget budget: FAILED: ")).expect("a FAILED line");
    assert!(failed.contains("needs a new page image") && failed.contains("--max-memory"), "{failed}");
    let md = std::fs::read_to_string(out.join("test-budget.md")).unwrap();
    assert!(md.contains("needs a new page image"), "{md}");
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
    let experiment = experiment("test:kept", engine_run);
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    std::fs::create_dir_all(out.join("runs")).unwrap();
    std::fs::write(out.join(reproduce::store::MARKER), "deltaflash reproduce output directory\n").unwrap();
    let input = &engine_run(Scale::Smoke)[0].input;
    let stored = serde_json::json!({
        "input_config": input.key_json(),
        "model_version": input.model_version(),
        "result": { "wall_seconds": 3.2 }
    });
    let file = out.join("runs").join(format!("{}.json", reproduce::store::Store::key(input)));
    std::fs::write(&file, serde_json::to_string_pretty(&stored).unwrap()).unwrap();

    let options = smoke(&out);
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

/// A short TPC-B run (a fraction of a simulated second on a small device).
fn short_run(_: Scale) -> Vec<RunSpec> {
    let mut config = ExperimentConfig { seed: 7, ..ExperimentConfig::default() };
    config.device.blocks_per_chip = Some(96);
    config.driver.warmup_s = 0.0;
    config.driver.sim_time_s = 0.2;
    vec![RunSpec::engine("short".into(), config)]
}

/// A run kept before runs carried a model version (the layout output directories had:
/// FNV-1a of the input's JSON as the key, no version in the file; written here by hand)
/// is not reused: the invocation makes it again and counts it stale; the next
/// invocation reuses the new one.
#[test]
fn a_run_kept_by_an_older_model_is_made_again() {
    let experiment = experiment("test:short", short_run);
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    std::fs::create_dir_all(out.join("runs")).unwrap();
    std::fs::write(out.join(reproduce::store::MARKER), "deltaflash reproduce output directory\n").unwrap();
    let input = &short_run(Scale::Smoke)[0].input;
    let key = format!("{:016x}", reproduce::store::fnv1a(&input.key_text()));
    let stored = serde_json::json!({ "input_config": input.key_json(), "result": { "wall_seconds": 3.2 } });
    std::fs::write(out.join("runs").join(format!("{key}.json")), stored.to_string()).unwrap();

    let options = smoke(&out);
    let lines = Mutex::new(Vec::new());
    let log = |line: String| lines.lock().unwrap().push(line);
    let outcome = reproduce(&[&experiment], &options, &log).expect("the invocation completes");
    assert_eq!((outcome.executed, outcome.reused, outcome.failed, outcome.stale), (1, 0, 0, 1));
    let lines = lines.into_inner().unwrap();
    assert!(lines.iter().any(|l| l.starts_with("1 runs kept in ") && l.ends_with("older model version: made again")));
    let again = reproduce(&[&experiment], &options, &|_| {}).expect("the invocation completes");
    assert_eq!((again.executed, again.reused, again.stale), (0, 1, 0));
}

/// [`short_run`] and the same run with another seed.
fn two_short_runs(scale: Scale) -> Vec<RunSpec> {
    let mut runs = short_run(scale);
    let RunInput::Engine(mut config) = runs[0].input.clone() else { unreachable!("short_run is an engine run") };
    config.seed = 8;
    runs.push(RunSpec::engine("other seed".into(), config));
    runs
}

/// An invocation that makes nothing (`reproduce --kept`) reports from the runs kept:
/// the one kept is reused, the other is neither made nor kept, and its report says so.
#[test]
fn an_invocation_that_makes_nothing_reports_the_kept_runs_and_names_the_others() {
    let first = experiment("test:one", short_run);
    let both = experiment("test:two", two_short_runs);
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let options = smoke(&out);
    reproduce(&[&first], &options, &|_| {}).expect("the invocation completes");
    let outcome = reproduce::reproduce_on(&[&both], &options, reproduce::Make::Nothing, &|_| {}).unwrap();
    assert_eq!((outcome.executed, outcome.reused, outcome.not_made, outcome.failed), (0, 1, 1, 0));
    assert_eq!(std::fs::read_dir(out.join("runs")).unwrap().count(), 1, "nothing made");
    let md = std::fs::read_to_string(out.join("test-two.md")).unwrap();
    assert!(md.contains("| other seed | ") && md.contains(reproduce::report::NOT_MADE), "{md}");
    assert!(!md.contains("FAILED"), "{md}");
}

/// TPC-C with ten warehouses on 48 blocks per chip: its database outgrows the device.
fn outgrowing(_: Scale) -> Vec<RunSpec> {
    let mut config = ExperimentConfig::default();
    config.workload.name = "tpcc".into();
    config.workload.params.insert("warehouses".into(), 10.into());
    config.device.blocks_per_chip = Some(48);
    config.driver.sim_time_s = 7200.0;
    vec![RunSpec::engine("too small".into(), config)]
}

#[test]
fn a_run_that_outgrows_its_device_is_refused_before_it_starts() {
    let experiment = experiment("test:outgrowing", outgrowing);
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let options = smoke(&out);

    let rows = reproduce::runner::plan(&[&experiment], &options, None);
    assert_eq!(rows.len(), 1);
    assert!(matches!(&rows[0].state, reproduce::runner::State::Refused(why) if why.contains("its database grows to")));
    assert!(!out.exists(), "a plan writes nothing");
    let text = reproduce::plan::markdown(&rows, 2);
    assert!(
        text.contains("| test:outgrowing too small | tpcc | ") && text.contains("REFUSED: refused before starting")
    );
    assert!(text.contains("| test:outgrowing | 1 | 0 | 0 | 1 |"), "{text}");

    let lines = Mutex::new(Vec::new());
    let log = |line: String| lines.lock().unwrap().push(line);
    let started = std::time::Instant::now();
    let outcome = reproduce(&[&experiment], &options, &log).expect("the invocation completes");
    assert!(started.elapsed().as_secs() < 60, "refused, not run");
    assert_eq!((outcome.executed, outcome.failed, outcome.refused), (0, 1, 1));
    let lines = lines.into_inner().unwrap();
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("test:outgrowing too small: refused before starting: its database grows to")),
        "{lines:?}"
    );
    let md = std::fs::read_to_string(out.join("test-outgrowing.md")).unwrap();
    assert!(md.contains("refused before starting"), "{md}");
}

fn failing(seed: u64, label: &str) -> RunSpec {
    let mut config = ExperimentConfig { seed, ..ExperimentConfig::default() };
    config.driver.sim_time_s = -1.0;
    RunSpec::engine(label.into(), config)
}

fn first_failing(_: Scale) -> Vec<RunSpec> {
    vec![failing(1, "one"), failing(2, "two")]
}

fn second_failing(_: Scale) -> Vec<RunSpec> {
    vec![failing(3, "three")]
}

fn other_seed(input: &RunInput) -> Option<RunInput> {
    match input {
        RunInput::Engine(config) => {
            Some(RunInput::Engine(ExperimentConfig { seed: config.seed + 100, ..config.clone() }))
        }
        _ => None,
    }
}

const OTHER_SEED: Variant = Variant { name: "other seed", component: "the seed", apply: other_seed };

/// An interrupted invocation should have made every experiment's headline runs before
/// any ablation variant's: the runs are taken headline first, whatever the order of the
/// experiments and their variants.
#[test]
fn headline_runs_are_made_before_any_variant_run() {
    let first = Experiment {
        id: "test:first",
        description: "d",
        implementation: Some(Implementation::new(first_failing, no_cells).ablation(&[OTHER_SEED])),
    };
    let second = Experiment {
        id: "test:second",
        description: "d",
        implementation: Some(Implementation::new(second_failing, no_cells).ablation(&[OTHER_SEED])),
    };
    let tmp = tempfile::tempdir().unwrap();
    let options = Options { scale: Scale::Smoke, jobs: 1, out: tmp.path().join("out"), overwrite: false };
    let lines = Mutex::new(Vec::new());
    let log = |line: String| lines.lock().unwrap().push(line);
    let outcome = reproduce(&[&first, &second], &options, &log).expect("the invocation completes");
    assert_eq!(outcome.failed, 6);
    let made: Vec<String> = lines
        .into_inner()
        .unwrap()
        .into_iter()
        .filter(|l| l.contains(": FAILED: "))
        .map(|l| l.split(": FAILED").next().unwrap().to_string())
        .collect();
    let variant_at = made.iter().position(|l| l.contains("[other seed]")).expect("a variant run");
    assert_eq!(variant_at, 3, "three headline runs first: {made:?}");
    assert!(made[..3].iter().all(|l| !l.contains("[other seed]")), "{made:?}");
    assert!(made[0].starts_with("[1/6] "), "the progress counts in the order made: {made:?}");
}
