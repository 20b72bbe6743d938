//! `deltaflash rerun RESULT.json`: runs a recorded result again from the config it
//! records, and says whether the simulated metrics came out the same.
//!
//! A result is what a command's `--json` wrote (`bench`, engine or SQLite; `ftl-bench`,
//! `replay`, `index-bench`, `engine-bench`, `recovery-bench`, `sqlite-compare`,
//! `torture`), an array of them (`compare --format json`, engines and SQLite alike), a
//! sweep's JSON-lines file (each line's `result`), or a run `reproduce --out DIR` kept
//! (`DIR/runs/KEY.json`: its `input_config`, `model_version` and `result`; a kept run
//! re-runs with `deltaflash rerun DIR/runs/KEY.json`). A kept run is made again in this
//! process from its input, as `reproduce` made it ([`Recorded::run_again`]); the others
//! in a child process of this binary: a `bench` result from its `config` (the resolved
//! experiment, written to a scratch file and given as `--config`), the others from
//! `config.command_line` (the flags the run was given; their resolved values are in the
//! rest of `config`), without the flags that name a new file (`--image`,
//! `--sqlite-path`: the re-run keeps those in memory or a scratch directory). The new
//! JSON is compared with the recorded one value by value, except what depends on the
//! machine or the build ([`machine_dependent`]): every key holding `wall` (wall-clock
//! time and speed per wall-second, such as all of `sqlite-compare`'s and
//! `engine-bench`'s throughputs), `rss` or `memory_` (the process's memory), the
//! version and commit, `engine-bench`'s wall-clock page write cost and the CPU seconds
//! `reproduce` records for a run. The keys left out are named on standard error.
//!
//! Invariants: a result without a config is refused, naming what is missing; a result of
//! another version, or a kept run of another model version, is run with a warning
//! (defaults or the model may have changed); the recorded file is only read, and
//! `--json` is written as every command writes it (a new file unless `--overwrite`), a
//! kept run in its file's shape. Exit status: 0 when every compared value is identical.

use crate::output::OverwriteArg;
use clap::Args;
use reproduce::RunInput;
use serde_json::{json, Map, Value};
use std::path::{Path, PathBuf};
use std::process::Command;

#[derive(Args)]
pub struct RerunArgs {
    /// A result written by --json (bench, ftl-bench, replay, index-bench, engine-bench,
    /// recovery-bench, sqlite-compare, torture), the output of compare --format json, a
    /// sweep's results file, or a run kept by reproduce (a kept run re-runs with
    /// `deltaflash rerun DIR/runs/KEY.json`). Wall-clock values (keys holding `wall`),
    /// CPU seconds, memory and the build are not compared; the rest is simulated or
    /// follows from the seed.
    result: PathBuf,
    /// Write the new result as JSON to this file (a new file; see --overwrite); several
    /// runs (compare, sweep) as an array, a kept run in its file's shape
    /// (`input_config`, `model_version`, `result`).
    #[arg(long)]
    json: Option<PathBuf>,
    #[command(flatten)]
    overwrite: OverwriteArg,
}

/// Keys that depend on the machine or the build, not on the simulation: wall time and
/// speed per wall-second, the process's memory, the build, the wall-clock page write
/// cost of `engine-bench`, and the CPU seconds of a run `reproduce` kept.
pub fn machine_dependent(key: &str) -> bool {
    key.contains("wall")
        || key.contains("rss")
        || key.starts_with("memory_")
        || matches!(
            key,
            "git_commit" | "version" | "page_write_ns_without_ipa" | "page_write_ns_with_ipa" | "cpu_seconds"
        )
}

/// The flags this process was given after its command, without `--json FILE` and
/// `--overwrite` (which name where a result goes, not what the run is): what a result
/// records as `config.command_line` for `rerun`.
pub fn command_line() -> Vec<String> {
    let mut args = std::env::args().skip(2);
    let mut kept = Vec::new();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--json" => {
                args.next();
            }
            "--overwrite" => {}
            a if a.starts_with("--json=") => {}
            _ => kept.push(arg),
        }
    }
    kept
}

/// The `version` and `git_commit` every result carries at its top level.
pub fn build_info() -> [(&'static str, Value); 2] {
    [("version", json!(workloads::experiment::VERSION)), ("git_commit", json!(workloads::experiment::GIT_COMMIT))]
}

/// One run a file records, and how it is made again.
enum Recorded {
    /// A command's result, made again in a child process from the config it records.
    Result(Value),
    /// A run `reproduce` kept: its input, the model version that made it, its result.
    Kept { input: Box<RunInput>, model_version: u64, result: Value },
}

impl Recorded {
    /// A kept run from its file's object; `at` names the file in the error when its
    /// `input_config` or `model_version` does not parse. A file without a
    /// `model_version` was kept before there were versions: version 0, as the store
    /// reads it.
    fn kept(mut file: Map<String, Value>, at: &str) -> Result<Recorded, String> {
        let input = RunInput::from_key_json(&file.remove("input_config").unwrap_or_default())
            .map_err(|e| format!("{at}: input_config is not a run's input: {e}"))?;
        let model_version = match file.get("model_version") {
            None => 0,
            Some(v) => v
                .as_u64()
                .ok_or_else(|| format!("{at}: model_version is not a whole number: {}", cut(&v.to_string())))?,
        };
        let Some(result) = file.remove("result").filter(Value::is_object) else {
            return Err(format!("{at}: the kept run has no \"result\" object to compare with"));
        };
        Ok(Recorded::Kept { input: Box::new(input), model_version, result })
    }

    /// The recorded result, which the new one is compared with.
    fn result(&self) -> &Value {
        match self {
            Recorded::Result(result) | Recorded::Kept { result, .. } => result,
        }
    }

    /// Makes the run again (with a warning where another version recorded it) and
    /// returns the new result. A kept run is made in this process by
    /// [`RunInput::execute`], the call `reproduce` made it with: its input is the whole
    /// run, and a SQLite or index input has no command line to give a child.
    fn run_again(&self, at: &str) -> Result<Value, String> {
        match self {
            Recorded::Result(result) => {
                warn_version(result, at);
                let scratch = tempfile::tempdir().map_err(|e| format!("a scratch directory: {e}"))?;
                let argv = arguments(result, scratch.path(), at)?;
                run_child(&argv, scratch.path(), at)
            }
            Recorded::Kept { input, model_version, .. } => {
                let ours = input.model_version();
                if *model_version != u64::from(ours) {
                    eprintln!(
                        "warning: {at}: the model has changed since this run was recorded: differences are \
                         expected (recorded by model version {model_version}, re-run by {ours})"
                    );
                }
                input.execute(at, &|line| eprintln!("{line}")).map_err(|e| format!("{at}: the re-run failed: {e}"))
            }
        }
    }

    /// The new result as `--json` writes it: a kept run in its file's shape, under the
    /// model version that made it again, so the file re-runs in turn.
    fn as_recorded(&self, new: Value) -> Value {
        match self {
            Recorded::Result(_) => new,
            Recorded::Kept { input, .. } => {
                json!({"input_config": input.key_json(), "model_version": input.model_version(), "result": new})
            }
        }
    }
}

/// The runs a result file holds, as they were recorded: one object, an array, or JSON
/// lines; an entry with an `input_config` is a run `reproduce` kept, and an entry
/// `{"result": …}` (compare --engines, sweep) stands for its result.
fn recorded(path: &Path) -> Result<Vec<Recorded>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let values = match serde_json::from_str::<Value>(&text) {
        Ok(Value::Array(items)) => items,
        Ok(v) => vec![v],
        Err(whole) => {
            let lines = text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty());
            let parsed: Result<Vec<Value>, String> = lines
                .map(|(n, line)| {
                    serde_json::from_str(line).map_err(|e| {
                        workloads::limits::cut_quoted(&format!("{}:{}: not JSON: {e}", path.display(), n + 1))
                    })
                })
                .collect();
            match parsed {
                Ok(items) if items.len() > 1 => items,
                _ => return Err(workloads::limits::cut_quoted(&format!("{}: not JSON: {whole}", path.display()))),
            }
        }
    };
    if values.is_empty() {
        return Err(format!("{}: holds no result", path.display()));
    }
    let several = values.len() > 1;
    values
        .into_iter()
        .enumerate()
        .map(|(i, v)| match v {
            Value::Object(o) if o.contains_key("input_config") => {
                let at =
                    if several { format!("{} (entry {})", path.display(), i + 1) } else { path.display().to_string() };
                Recorded::kept(o, &at)
            }
            Value::Object(mut o) if o.contains_key("result") => {
                let mut result = o.remove("result").unwrap_or_default();
                // A sweep adds the compare table's rows, which `bench` does not write.
                if let Some(r) = result.as_object_mut().filter(|_| o.contains_key("point")) {
                    r.remove("table_rows");
                }
                Ok(Recorded::Result(result))
            }
            v @ Value::Object(_) => Ok(Recorded::Result(v)),
            _ => Err(format!("{}: entry {} is not a result object", path.display(), i + 1)),
        })
        .collect()
}

/// The child's command line for one recorded result, the scratch directory given for
/// its config file.
fn arguments(result: &Value, scratch: &Path, at: &str) -> Result<Vec<String>, String> {
    let Some(config) = result.get("config").filter(|c| c.is_object()) else {
        return Err(format!(
            "{at}: the result has no \"config\", so it cannot be run again (a result written before results \
             recorded their config, or not a result of a run)"
        ));
    };
    // `bench` results name their command; so do the SQLite runs' configs
    // (`engine = "sqlite"`); an engine result in a compare or sweep has no `command`.
    let command = result.get("command").and_then(Value::as_str).unwrap_or("bench");
    if command == "bench" {
        let mut config = config.clone();
        if let Some(device) = config.get_mut("device").and_then(Value::as_object_mut) {
            if device.remove("image").is_some() {
                device.remove("image_sync");
                eprintln!("{at}: the run wrote a device image; the re-run keeps its device in memory");
            }
        }
        if let Some(file) = config.pointer("/storage/file").cloned() {
            eprintln!("{at}: the run's SQLite file was {file}; the re-run keeps its database in memory");
            config["storage"] = json!("host");
        }
        let path = scratch.join("config.json");
        let text = serde_json::to_string_pretty(&config).map_err(|e| format!("{at}: {e}"))?;
        std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
        return Ok(vec!["bench".into(), "--config".into(), path.display().to_string()]);
    }
    let flags = config.get("command_line").and_then(Value::as_array).ok_or_else(|| {
        format!("{at}: the {command} result's config has no \"command_line\", so it cannot be run again")
    })?;
    let mut argv = vec![command.to_string()];
    let mut flags = flags.iter();
    while let Some(flag) = flags.next() {
        let flag = flag.as_str().ok_or_else(|| format!("{at}: config.command_line holds a non-string"))?;
        let (name, inline) = flag.split_once('=').map_or((flag, None), |(n, v)| (n, Some(v.to_string())));
        if NEW_FILE_FLAGS.contains(&name) {
            let value = inline.or_else(|| flags.next().and_then(Value::as_str).map(str::to_string));
            eprintln!("{at}: the run's {name} was {}; the re-run creates no such file", value.unwrap_or_default());
            continue;
        }
        argv.push(flag.to_string());
    }
    Ok(argv)
}

/// Flags of a recorded command line that name a file the run created: left out of the
/// re-run, which keeps that device or database in memory or a scratch directory.
const NEW_FILE_FLAGS: [&str; 2] = ["--image", "--sqlite-path"];

/// The keys of `v`, at any depth, that are not compared ([`machine_dependent`]).
fn not_compared(v: &Value, out: &mut std::collections::BTreeSet<String>) {
    match v {
        Value::Object(map) => {
            for (k, item) in map {
                if machine_dependent(k) {
                    out.insert(k.clone());
                } else {
                    not_compared(item, out);
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|item| not_compared(item, out)),
        _ => {}
    }
}

/// Every leaf of `v` as (dotted path, value), machine-dependent keys left out.
fn leaves(v: &Value, path: String, out: &mut Vec<(String, Value)>) {
    let join = |key: &str| if path.is_empty() { key.to_string() } else { format!("{path}.{key}") };
    match v {
        Value::Object(map) => {
            for (k, item) in map.iter().filter(|(k, _)| !machine_dependent(k)) {
                leaves(item, join(k), out);
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                leaves(item, join(&i.to_string()), out);
            }
        }
        leaf => out.push((path, leaf.clone())),
    }
}

/// The recorded values the new result does not reproduce: (path, recorded, new; `None`
/// where it has no such value), and the number of values compared.
pub fn differences(recorded: &Value, new: &Value) -> (Vec<(String, Value, Option<Value>)>, usize) {
    let (mut old_leaves, mut new_leaves) = (Vec::new(), Vec::new());
    leaves(recorded, String::new(), &mut old_leaves);
    leaves(new, String::new(), &mut new_leaves);
    let new_map: Map<String, Value> = new_leaves.into_iter().collect();
    let compared = old_leaves.len();
    let differ = old_leaves
        .into_iter()
        .filter_map(|(path, old)| match new_map.get(&path) {
            Some(v) if *v == old => None,
            other => Some((path, old, other.cloned())),
        })
        .collect();
    (differ, compared)
}

/// Runs `argv` in a child process of this binary with `--json` into `scratch`, and
/// returns the JSON it wrote.
fn run_child(argv: &[String], scratch: &Path, at: &str) -> Result<Value, String> {
    let out = scratch.join("rerun.json");
    let exe = std::env::current_exe().map_err(|e| format!("this program's path: {e}"))?;
    eprintln!("{at}: deltaflash {}", argv.join(" "));
    let status = Command::new(exe)
        .args(argv)
        .arg("--json")
        .arg(&out)
        .status()
        .map_err(|e| format!("{at}: running deltaflash {}: {e}", argv[0]))?;
    // A run whose consistency check failed exits non-zero but writes its result.
    let text =
        std::fs::read_to_string(&out).map_err(|_| format!("{at}: the re-run failed ({status}) and wrote no result"))?;
    serde_json::from_str(&text).map_err(|e| format!("{at}: the re-run's JSON: {e}"))
}

/// Warns when the result was recorded by another version (defaults may differ).
fn warn_version(result: &Value, at: &str) {
    let ours = workloads::experiment::VERSION;
    match result.get("version").and_then(Value::as_str) {
        Some(v) if v == ours => {}
        Some(v) => eprintln!("warning: {at}: recorded by version {v}, re-run by {ours}; defaults may differ"),
        None => eprintln!("warning: {at}: records no version (written before results did); re-run by {ours}"),
    }
}

pub fn run(args: RerunArgs) -> Result<bool, String> {
    let json = args.overwrite.check("--json", args.json.as_deref())?;
    let runs = recorded(&args.result)?;
    let name = args.result.display().to_string();
    let mut new_results = Vec::new();
    let mut identical = true;
    for (i, run) in runs.iter().enumerate() {
        let at = if runs.len() == 1 { name.clone() } else { format!("{name} (run {})", i + 1) };
        let new = run.run_again(&at)?;
        let result = run.result();
        let (differ, compared) = differences(result, &new);
        let mut skipped = std::collections::BTreeSet::new();
        not_compared(result, &mut skipped);
        if !skipped.is_empty() {
            let names: Vec<String> = skipped.into_iter().collect();
            eprintln!("{at}: not compared (wall-clock, memory or build): {}", names.join(", "));
        }
        if differ.is_empty() {
            println!("{at}: identical: the {compared} recorded simulated values are reproduced");
        } else {
            identical = false;
            println!("{at}: DIFFERENT: {} of {compared} recorded values are not reproduced:", differ.len());
            for (path, old, new) in &differ {
                let new = new.as_ref().map_or("(missing)".to_string(), Value::to_string);
                println!("  {path}: recorded {}, re-run {}", cut(&old.to_string()), cut(&new));
            }
        }
        new_results.push(run.as_recorded(new));
    }
    if let Some(file) = json {
        let value = if new_results.len() == 1 { new_results.remove(0) } else { Value::Array(new_results) };
        file.write((serde_json::to_string_pretty(&value).expect("json") + "\n").as_bytes())?;
    }
    Ok(identical)
}

/// A value as printed in a difference: at most 80 characters.
fn cut(text: &str) -> String {
    match text.char_indices().nth(workloads::limits::QUOTED_CHARS) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn differences_list_changed_and_missing_values_but_not_machine_ones() {
        let recorded = json!({"a": 1, "b": {"c": [1.5, 2]}, "wall_seconds": 3, "cpu_seconds": 2.5, "git_commit": "x", "gone": true});
        let new =
            json!({"a": 1, "b": {"c": [1.5, 3]}, "wall_seconds": 9, "cpu_seconds": 4.0, "git_commit": "y", "extra": 1});
        let (differ, compared) = differences(&recorded, &new);
        assert_eq!(compared, 4);
        assert_eq!(
            differ,
            vec![("b.c.1".to_string(), json!(2), Some(json!(3))), ("gone".to_string(), json!(true), None)]
        );
        assert!(differences(&recorded, &recorded).0.is_empty());
    }

    #[test]
    fn a_result_without_a_config_is_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let e = arguments(&json!({"transactions": 3}), dir.path(), "r.json").unwrap_err();
        assert!(e.starts_with("r.json: the result has no \"config\""), "{e}");
        let e = arguments(&json!({"command": "ftl-bench", "config": {}}), dir.path(), "r.json").unwrap_err();
        assert!(e.contains("no \"command_line\""), "{e}");
        let argv =
            arguments(&json!({"command": "replay", "config": {"command_line": ["--trace", "t"]}}), dir.path(), "r")
                .unwrap();
        assert_eq!(argv, ["replay", "--trace", "t"]);
    }
}
