//! Every command that creates a file leaves a user's file alone: an existing file with
//! known content stays byte-identical and the command fails before any work, naming the
//! path; with `--overwrite` (output files only) it is replaced. Paths that cannot be
//! written are refused before the run, and special files are refused by `inspect`.

mod common;
use common::{deltaflash, json, stderr, FOUR_CHIPS, SHORT_RUN, SMALL};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const PRECIOUS: &[u8] = b"a user's file, not to be touched\n";

/// TATP with 1,000 subscribers on a 4-chip device, for half a simulated second.
fn tiny_bench() -> Vec<&'static str> {
    [&["--workload", "tatp", "--subscribers", "1000"], FOUR_CHIPS, SHORT_RUN].concat()
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A file with known content at `dir/name`.
fn precious(dir: &Path, name: &str) -> PathBuf {
    let p = dir.join(name);
    fs::write(&p, PRECIOUS).unwrap();
    p
}

fn assert_untouched(p: &Path) {
    let now = fs::read(p).unwrap();
    assert!(now == PRECIOUS, "{} was changed: {}", p.display(), String::from_utf8_lossy(&now[..now.len().min(200)]));
}

/// Runs `args`, insists that it failed with `says` in its error and did none of the
/// work whose progress line is `work`; returns stderr.
fn refused(args: &[&str], says: &str, work: &str) -> String {
    let out = deltaflash(args);
    let err = stderr(&out);
    assert!(!out.status.success(), "{args:?} succeeded");
    assert_ne!(out.status.code(), Some(101), "{args:?} panicked: {err}");
    assert!(err.contains(says), "{args:?}: `{says}` not in: {err}");
    assert!(!err.contains(work), "{args:?} did work (`{work}`) before refusing: {err}");
    err
}

/// Runs `args` and insists that it succeeded.
fn succeeds(args: &[&str]) {
    let out = deltaflash(args);
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
}

const EXISTS: &str = "the file exists; pass --overwrite";

#[test]
fn ftl_bench_and_replay_json_is_never_replaced_without_overwrite() {
    let dir = tempfile::tempdir().unwrap();
    let out = precious(dir.path(), "out.json");
    let trace = dir.path().join("t.trace");
    fs::write(&trace, "W 1\nW 2\n").unwrap();
    let ftl = [&["ftl-bench", "--writes", "100", "--warmup", "0", "--json", path(&out)], SMALL].concat();
    let replay = [&["replay", "--trace", path(&trace), "--json", path(&out)], SMALL].concat();
    for args in [&ftl, &replay] {
        let err = refused(args, EXISTS, "filling");
        assert!(err.contains(path(&out)), "{err}");
        assert_untouched(&out);
    }
    for args in [ftl, replay] {
        succeeds(&[&args[..], &["--overwrite"]].concat());
        assert!(json(&out)["command"].is_string(), "replaced by the result");
    }
}

#[test]
fn bench_json_and_image_are_checked_before_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let out = precious(dir.path(), "out.json");
    let image = precious(dir.path(), "db.img");
    refused(&[&["bench", "--json", path(&out)], &tiny_bench()[..]].concat(), EXISTS, "loaded");
    assert_untouched(&out);
    // An image is a database: --overwrite does not replace it.
    let with_image = [&["bench", "--image", path(&image), "--overwrite"], &tiny_bench()[..]].concat();
    refused(&with_image, "a new one is created here and nothing is replaced", "loaded");
    assert_untouched(&image);
    succeeds(&[&["bench", "--json", path(&out), "--overwrite"], &tiny_bench()[..]].concat());
    assert!(json(&out)["throughput_tps"].as_f64().unwrap() > 0.0);
}

#[test]
fn bench_on_sqlite_never_replaces_a_database_or_its_journal() {
    let dir = tempfile::tempdir().unwrap();
    let db = precious(dir.path(), "user.db");
    let sqlite = ["bench", "--engine", "sqlite", "--num", "50"];
    let err = refused(&[&sqlite[..], &["--sqlite-file", path(&db)]].concat(), "the file exists", "loading");
    assert!(err.contains("no file is replaced"), "{err}");
    assert_untouched(&db);
    // A -wal beside a new path belongs to another database: SQLite would replay it.
    let wal = precious(dir.path(), "new.db-wal");
    let fresh = dir.path().join("new.db");
    refused(&[&sqlite[..], &["--sqlite-file", path(&fresh)]].concat(), "the journal of another database", "loading");
    assert_untouched(&wal);
    assert!(!fresh.exists());
    let out = precious(dir.path(), "out.json");
    refused(&[&sqlite[..], &["--json", path(&out)]].concat(), EXISTS, "loading");
    assert_untouched(&out);
    // A new path is created and kept.
    let kept = dir.path().join("kept.db");
    succeeds(&[&sqlite[..], &["--sqlite-file", path(&kept)]].concat());
    assert!(fs::metadata(&kept).unwrap().len() > 0);
}

#[test]
fn sqlite_compare_never_replaces_its_sqlite_path() {
    let dir = tempfile::tempdir().unwrap();
    let db = precious(dir.path(), "tpcb.sqlite");
    let compare = ["sqlite-compare", "--transactions", "10", "--sqlite-path"];
    refused(&[&compare[..], &[path(&db)]].concat(), "the file exists", "SQLite: loading");
    assert_untouched(&db);
    let shm = precious(dir.path(), "other.sqlite-shm");
    refused(
        &[&compare[..], &[path(&dir.path().join("other.sqlite"))]].concat(),
        "the journal of another",
        "DeltaFlash",
    );
    assert_untouched(&shm);
}

#[test]
fn advise_and_demo_outputs_are_checked_before_the_baseline_runs() {
    let dir = tempfile::tempdir().unwrap();
    let out = precious(dir.path(), "advice.json");
    let ddl = precious(dir.path(), "layout.sql");
    let plots = dir.path().join("plots");
    fs::create_dir(&plots).unwrap();
    let skew = precious(&plots, "skew.svg");
    for (flag, file) in [("--json", &out), ("--ddl", &ddl), ("--plots", &plots)] {
        refused(&[&["advise", flag, path(file)], &tiny_bench()[..]].concat(), EXISTS, "baseline:");
    }
    let not_a_dir = precious(dir.path(), "plots-file");
    refused(&[&["advise", "--plots", path(&not_a_dir)], &tiny_bench()[..]].concat(), "not a directory", "baseline:");
    refused(&[&["demo", "--json", path(&out)], &tiny_bench()[..]].concat(), EXISTS, "scenario");
    for file in [&out, &ddl, &skew, &not_a_dir] {
        assert_untouched(file);
    }
    let all = ["advise", "--json", path(&out), "--ddl", path(&ddl), "--plots", path(&plots), "--overwrite"];
    succeeds(&[&all[..], &tiny_bench()[..]].concat());
    assert!(json(&out)["recommendation"].is_object());
    assert!(fs::read_to_string(&ddl).unwrap().contains("CREATE REGION"));
    assert!(fs::read_to_string(&skew).unwrap().starts_with("<svg"));
    // A --plots directory that does not exist yet is created.
    let new_plots = dir.path().join("new-plots");
    succeeds(&[&["advise", "--plots", path(&new_plots)], &tiny_bench()[..]].concat());
    assert!(fs::read_to_string(new_plots.join("skew.svg")).unwrap().starts_with("<svg"));
}

#[test]
fn engine_bench_and_index_bench_json_need_overwrite() {
    let dir = tempfile::tempdir().unwrap();
    let out = precious(dir.path(), "out.json");
    let engine = ["engine-bench", "--rows", "500", "--ops", "500", "--json", path(&out)];
    let index =
        ["index-bench", "--index", "ipl", "--inserts", "300", "--queries", "10", "--scans", "1", "--json", path(&out)];
    for (args, work) in [(&engine[..], "loading"), (&index[..], "B+-tree")] {
        fs::write(&out, PRECIOUS).unwrap();
        refused(args, EXISTS, work);
        assert_untouched(&out);
        succeeds(&[args, &["--overwrite"]].concat());
        assert!(json(&out)["command"].is_string(), "{args:?}: replaced by the result");
    }
}

#[test]
fn images_are_created_new_and_a_dangling_link_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let image = precious(dir.path(), "dev.img");
    let ftl = [&["ftl-bench", "--writes", "100", "--warmup", "0", "--image", path(&image)], SMALL].concat();
    refused(&ftl, "nothing is replaced", "filling");
    assert_untouched(&image);
    let link = dir.path().join("link.img");
    std::os::unix::fs::symlink(dir.path().join("gone"), &link).unwrap();
    for args in [
        &["sql", "--image", path(&link), "-c", "SELECT 1;"][..],
        &["sqlite", "--image", path(&link), "-c", "SELECT 1;"][..],
        &[&["bench", "--image", path(&link)], &tiny_bench()[..]].concat()[..],
    ] {
        let err = refused(args, "is a symbolic link to", "loaded");
        assert!(err.contains("which does not exist"), "{err}");
        assert!(!dir.path().join("gone").exists(), "nothing is created through the link");
    }
}

#[test]
fn a_missing_directory_is_found_before_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let nowhere = dir.path().join("no-such-dir/out.json");
    let err = refused(
        &[&["ftl-bench", "--writes", "100", "--json", path(&nowhere)], SMALL].concat(),
        "does not exist",
        "filling",
    );
    assert!(err.contains("no-such-dir"), "{err}");
    let file = precious(dir.path(), "plain");
    let under_a_file = file.join("out.json");
    refused(&[&["bench", "--json", path(&under_a_file)], &tiny_bench()[..]].concat(), "not a directory", "loaded");
    refused(&[&["bench", "--json", path(dir.path())], &tiny_bench()[..]].concat(), "is a directory", "loaded");
}

#[test]
fn inspect_refuses_a_fifo_and_a_directory_instead_of_blocking() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let mut child = Command::new(env!("CARGO_BIN_EXE_deltaflash"))
        .args(["inspect", path(&fifo)])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(20) {
            child.kill().unwrap();
            panic!("inspect blocked on a FIFO");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    assert!(!out.status.success());
    assert!(stderr(&out).contains("is a FIFO"), "{}", stderr(&out));
    let out = deltaflash(&["inspect", path(dir.path())]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("is a directory"), "{}", stderr(&out));
}

/// A load that runs out of space leaves no half-loaded image for `check` to report as
/// inconsistent: the image the run created is removed.
#[test]
fn a_failed_bench_load_removes_the_image_it_created() {
    let dir = tempfile::tempdir().unwrap();
    let image = dir.path().join("full.img");
    let tpcc = ["bench", "--workload", "tpcc", "--warehouses", "1", "--warmup", "0", "--blocks-per-chip", "48"];
    let out = deltaflash(&[&tpcc[..], &["--image", path(&image)]].concat());
    assert!(!out.status.success());
    assert!(stderr(&out).contains("loading stopped"), "{}", stderr(&out));
    assert!(!image.exists(), "the half-loaded image is left behind");
}

/// `sweep` appends to its results file and resumes from it; a file of the user's that
/// holds no sweep result is not appended to.
#[test]
fn sweep_appends_only_to_a_results_file() {
    let dir = tempfile::tempdir().unwrap();
    let grid = dir.path().join("grid.toml");
    fs::write(&grid, "[base]\nseed = 2\n[grid]\n\"engine.ipa\" = [\"0x0\"]\n").unwrap();
    let out = precious(dir.path(), "notes.txt");
    refused(&["sweep", "--grid", path(&grid), "--out", path(&out)], "not a sweep results file", "points,");
    assert_untouched(&out);
}

/// `sqlite-compare` checks the DeltaFlash device before SQLite runs, so neither runs
/// (nor creates its file) when the device is refused.
#[test]
fn sqlite_compare_checks_the_device_before_either_run() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("tpcb.sqlite");
    refused(&["sqlite-compare", "--max-memory", "1K", "--sqlite-path", path(&db)], "--max-memory", "SQLite: loading");
    assert!(!db.exists());
}
