//! `--ray ADDRESS`: the runs an output directory does not hold yet, made as Ray tasks by
//! the Python package (`python3 -m deltaflash reproduce-runs`, `pip install
//! ./python[ray]`), since Ray's scheduler is Python's.
//!
//! Files, in `DIR/ray/`: `inputs.jsonl`, one run a line (`{"key", "label", "input"}`,
//! the input as [`RunInput`]'s tagged JSON), and `results.jsonl`, appended to by the
//! Python side as each run finishes (`{"key", "result"}` or `{"key", "error"}`). Every
//! result is then kept in the store like a local run's; a results file left by an
//! interrupted invocation is read again, and the Python side skips the runs it holds,
//! so an invocation resumes where it stopped.

use crate::input::RunInput;
use crate::store::Store;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::Path;

/// Where and on how many workers.
#[derive(Clone, Debug)]
pub struct Ray {
    /// `local` (Ray started on this machine), `auto`, or a cluster's address.
    pub address: String,
    /// CPUs of a local Ray started for the invocation (default: all of the machine's).
    pub workers: Option<usize>,
    /// The Python interpreter that has the package (`python3`).
    pub python: String,
}

/// A run to make on Ray: its key, its label for the log, its input.
pub type Job<'a> = (&'a str, &'a str, &'a RunInput);

const INPUTS: &str = "ray/inputs.jsonl";
const RESULTS: &str = "ray/results.jsonl";

/// Makes `jobs` on Ray and keeps each result in `store`; returns each job's result or
/// why it has none, by key.
pub fn run(
    store: &Store,
    jobs: &[Job],
    ray: &Ray,
    log: &(dyn Fn(String) + Sync),
) -> HashMap<String, Result<Value, String>> {
    let mut outcomes = HashMap::new();
    if jobs.is_empty() {
        return outcomes;
    }
    let status = hand_out(store, jobs, ray, log);
    let results = read_results(&store.dir().join(RESULTS));
    for (key, _, input) in jobs {
        let outcome = match results.get(*key) {
            Some(Ok(result)) => store.save(input, result).map(|()| result.clone()),
            Some(Err(e)) => Err(e.clone()),
            None => {
                Err(format!("not made on Ray ({})", status.as_ref().err().map_or("no result line", String::as_str)))
            }
        };
        outcomes.insert(key.to_string(), outcome);
    }
    outcomes
}

/// Writes the inputs and runs the Python side; `Err` says why it did not finish.
fn hand_out(store: &Store, jobs: &[Job], ray: &Ray, log: &(dyn Fn(String) + Sync)) -> Result<(), String> {
    std::fs::create_dir_all(store.dir().join("ray")).map_err(|e| format!("{}: {e}", store.dir().display()))?;
    let lines: String = jobs
        .iter()
        .map(|(key, label, input)| json!({"key": key, "label": label, "input": input}).to_string() + "\n")
        .collect();
    store.write(INPUTS, &lines)?;
    let python = &ray.python;
    log(format!("{} runs to Ray at {} through `{python} -m deltaflash reproduce-runs`", jobs.len(), ray.address));
    let mut command = std::process::Command::new(python);
    command.args(["-m", "deltaflash", "reproduce-runs", "--inputs"]);
    command.arg(store.dir().join(INPUTS)).arg("--results").arg(store.dir().join(RESULTS));
    command.args(["--ray", &ray.address]);
    if let Some(n) = ray.workers {
        command.args(["--workers", &n.to_string()]);
    }
    let status = command
        .status()
        .map_err(|e| format!("--ray runs `{python} -m deltaflash reproduce-runs` (pip install ./python[ray]): {e}"))?;
    if status.success() {
        Ok(())
    } else {
        let why = format!("`{python} -m deltaflash reproduce-runs` ended with {status}");
        log(why.clone());
        Err(why)
    }
}

/// The last entry per key of a results file; lines that do not parse (cut by a kill)
/// are skipped.
fn read_results(path: &Path) -> HashMap<String, Result<Value, String>> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut results = HashMap::new();
    for line in text.lines() {
        let Ok(mut entry) = serde_json::from_str::<Value>(line) else { continue };
        let Some(key) = entry.get("key").and_then(Value::as_str).map(String::from) else { continue };
        let outcome = match entry.get_mut("result") {
            Some(result) => Ok(result.take()),
            None => Err(entry.get("error").and_then(Value::as_str).unwrap_or("no result").to_string()),
        };
        // A result is never replaced by a later error of the same run.
        if !matches!(results.get(&key), Some(Ok(_))) {
            results.insert(key, outcome);
        }
    }
    results
}

#[cfg(test)]
mod tests {
    use super::*;
    use workloads::ExperimentConfig;

    /// The Python side is a stand-in script here (the pytest suite runs the real one on
    /// Ray): it has written one result and one error, and a line cut by a kill.
    #[test]
    fn results_are_kept_in_the_store_and_missing_ones_named() {
        let tmp = tempfile::tempdir().unwrap();
        let store = Store::open(&tmp.path().join("out"), false).unwrap();
        let inputs: Vec<RunInput> =
            (1..=3).map(|seed| RunInput::Engine(ExperimentConfig { seed, ..ExperimentConfig::default() })).collect();
        let keys: Vec<String> = inputs.iter().map(Store::key).collect();
        std::fs::create_dir_all(store.dir().join("ray")).unwrap();
        let lines = [
            json!({"key": keys[0], "error": "RayError: worker died"}).to_string(),
            json!({"key": keys[0], "result": {"wall_seconds": 1.0, "cpu_seconds": 0.5}}).to_string(),
            json!({"key": keys[1], "error": "DeltaflashError: full"}).to_string(),
            r#"{"key": "cut"#.to_string(),
        ];
        std::fs::write(store.dir().join(RESULTS), lines.join("\n")).unwrap();
        let fake = tmp.path().join("python");
        std::fs::write(&fake, "#!/bin/sh\nexit 3\n").unwrap();
        std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        let jobs: Vec<Job> = keys.iter().zip(&inputs).map(|(k, i)| (k.as_str(), "run", i)).collect();
        let ray = Ray { address: "local".into(), workers: Some(2), python: fake.display().to_string() };
        let out = run(&store, &jobs, &ray, &|_| {});
        assert_eq!(out[&keys[0]], Ok(json!({"wall_seconds": 1.0, "cpu_seconds": 0.5})));
        assert_eq!(store.load(&inputs[0]), Some(json!({"wall_seconds": 1.0, "cpu_seconds": 0.5})), "kept");
        assert_eq!(out[&keys[1]], Err("DeltaflashError: full".into()));
        let e = out[&keys[2]].as_ref().unwrap_err();
        assert!(e.starts_with("not made on Ray (`") && e.contains("ended with exit status: 3"), "{e}");
        let written = std::fs::read_to_string(store.dir().join(INPUTS)).unwrap();
        let first: Value = serde_json::from_str(written.lines().next().unwrap()).unwrap();
        assert_eq!(serde_json::from_value::<RunInput>(first["input"].clone()).unwrap(), inputs[0]);
    }
}
