//! A run `reproduce --out DIR` kept re-runs from its file: `deltaflash rerun
//! DIR/runs/KEY.json` makes it again from its `input_config` and finds its recorded
//! result (engine, SQLite and index runs alike), and `--json` writes the new run in the
//! same shape, which re-runs in turn; an edited value is reported with a non-zero exit,
//! an input that does not parse is refused naming the file, and a run kept by another
//! model version is made with a warning.

mod common;
use common::{deltaflash, ok, stderr};
use reproduce::store::Store;
use std::path::{Path, PathBuf};

fn path(p: &Path) -> &str {
    p.to_str().expect("UTF-8 temporary path")
}

/// `reproduce ID… --smoke --out DIR`: nolgn:fig9 keeps twelve SQLite runs and ipl:table3
/// ten index runs, both in about a second.
fn reproduce(dir: &Path, ids: &[&str]) {
    ok(&[&["reproduce"], ids, &["--smoke", "--jobs", "1", "--out", path(dir)]].concat());
}

/// Keeps in DIR, as `reproduce` keeps a run, the engine run of ipa:table7 at `--smoke`
/// that is estimated cheapest: every engine experiment at `--smoke` takes 40 s or more,
/// one such run about a second.
fn keep_an_engine_run(dir: &Path) {
    let table7 = reproduce::catalogue::find("ipa:table7").expect("listed");
    let runs = (table7.implementation.as_ref().expect("implemented").runs)(reproduce::Scale::Smoke);
    let cost = |r: &&reproduce::RunSpec| reproduce::cost::estimate(&r.input).cpu_seconds;
    let run = runs.iter().min_by(|a, b| cost(a).total_cmp(&cost(b))).expect("a run");
    let result = run.input.execute("engine", &|_| {}).expect("runs");
    Store::open(dir, false).unwrap().save(&run.input, &result).unwrap();
}

/// The first kept run file of `kind` (`engine`, `sqlite`, `index`) in DIR/runs.
fn kept(dir: &Path, kind: &str) -> PathBuf {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir.join("runs")).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    files
        .into_iter()
        .find(|f| common::json(f)["input_config"]["kind"].as_str().unwrap_or("engine") == kind)
        .unwrap_or_else(|| panic!("no {kind} run kept in {}", dir.display()))
}

/// A SQLite run nolgn:fig9 keeps at `--smoke` in TMP/out, as JSON to edit.
fn a_kept_sqlite_run(tmp: &Path) -> serde_json::Value {
    let out = tmp.join("out");
    reproduce(&out, &["nolgn:fig9"]);
    common::json(&kept(&out, "sqlite"))
}

#[test]
fn kept_runs_of_every_kind_rerun_identical_and_their_new_file_reruns_too() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    reproduce(&out, &["nolgn:fig9", "ipl:table3"]);
    keep_an_engine_run(&out);
    for kind in ["engine", "sqlite", "index"] {
        let file = kept(&out, kind);
        let again = tmp.path().join(format!("again-{kind}.json"));
        let text = ok(&["rerun", path(&file), "--json", path(&again)]);
        assert!(text.contains(": identical: the "), "{kind}: {text}");
        let (recorded, new) = (common::json(&file), common::json(&again));
        assert_eq!(new["input_config"], recorded["input_config"], "{kind}");
        assert_eq!(new["model_version"], recorded["model_version"], "{kind}");
        assert!(new["result"]["cpu_seconds"].as_f64().is_some(), "{kind}: {new}");
        let text = ok(&["rerun", path(&again)]);
        assert!(text.contains(": identical: the "), "{kind}, the new file: {text}");
    }
}

#[test]
fn an_edited_kept_run_is_different_and_fails_and_a_bad_input_is_refused_by_name() {
    let tmp = tempfile::tempdir().unwrap();
    let mut run = a_kept_sqlite_run(tmp.path());
    let programs = run["result"]["flash"]["flash_programs"].as_u64().unwrap();
    run["result"]["flash"]["flash_programs"] = (programs + 1).into();
    run["result"]["cpu_seconds"] = 1e9.into();
    let edited = tmp.path().join("edited.json");
    std::fs::write(&edited, run.to_string()).unwrap();
    let o = deltaflash(&["rerun", path(&edited)]);
    assert!(!o.status.success(), "an edited value must fail the re-run");
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("DIFFERENT: 1 of"), "{text}");
    assert!(text.contains(&format!("flash.flash_programs: recorded {}, re-run {programs}", programs + 1)), "{text}");
    assert!(!text.contains("cpu_seconds"), "CPU seconds are not compared: {text}");

    run["input_config"]["config"]["seed"] = "x".into();
    std::fs::write(&edited, run.to_string()).unwrap();
    let o = deltaflash(&["rerun", path(&edited)]);
    assert!(!o.status.success());
    let e = stderr(&o);
    assert!(e.contains(&format!("{}: input_config is not a run's input: invalid type", path(&edited))), "{e}");
}

#[test]
fn a_kept_run_of_another_model_version_is_made_with_a_warning() {
    let tmp = tempfile::tempdir().unwrap();
    let mut run = a_kept_sqlite_run(tmp.path());
    let ours = run["model_version"].as_u64().unwrap();
    run["model_version"] = (ours + 1).into();
    let other = tmp.path().join("other.json");
    std::fs::write(&other, run.to_string()).unwrap();
    let o = deltaflash(&["rerun", path(&other)]);
    assert!(o.status.success(), "{}", stderr(&o));
    let warning = format!(
        "the model has changed since this run was recorded: differences are expected (recorded by model version {}, \
         re-run by {ours})",
        ours + 1
    );
    assert!(stderr(&o).contains(&warning), "{}", stderr(&o));
}
