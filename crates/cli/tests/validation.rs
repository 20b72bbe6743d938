//! Bad command-line values are refused before any work: a non-zero exit and a message
//! that names the flag (and, for ranges, what is allowed). One table row per case.

use std::process::Command;

/// (arguments, text the error must contain).
const CASES: &[(&[&str], &str)] = &[
    // ftl-bench and replay (main.rs)
    (&["ftl-bench", "--writes", "0"], "--writes"),
    (&["ftl-bench", "--writes", "-5"], "--writes"),
    (&["ftl-bench", "--warmup", "-1"], "--warmup"),
    (&["ftl-bench", "--delta-bytes", "0"], "--delta-bytes"),
    (&["ftl-bench", "--delta-bytes", "100000"], "--delta-bytes"),
    (&["ftl-bench", "--delta-share", "0.5", "--delta-bytes", "4000"], "--delta-bytes 4000"),
    (&["ftl-bench", "--delta-share", "1.5"], "--delta-share"),
    (&["ftl-bench", "--delta-share", "NaN"], "--delta-share"),
    (&["ftl-bench", "--hot-share", "-0.1"], "--hot-share"),
    (&["ftl-bench", "--hot-fraction", "2"], "--hot-fraction"),
    (&["ftl-bench", "--theta", "0"], "--theta"),
    (&["ftl-bench", "--theta", "1"], "--theta"),
    (&["ftl-bench", "--theta", "inf"], "--theta"),
    (&["ftl-bench", "--queue-depth", "0"], "--queue-depth"),
    (&["replay", "--trace", "x.trace", "--queue-depth", "0"], "--queue-depth"),
    // the shared device and region flags (setup.rs)
    (&["ftl-bench", "--chips", "0"], "--chips"),
    (&["ftl-bench", "--chips", "17"], "--chips 17: the paper-emulator preset has at most 16"),
    (&["ftl-bench", "--device", "ipl-slc", "--chips", "2"], "at most 1 chips"),
    (&["ftl-bench", "--blocks-per-chip", "0"], "--blocks-per-chip"),
    (&["ftl-bench", "--pages-per-block", "0"], "--pages-per-block"),
    (&["ftl-bench", "--page-bytes", "100"], "--page-bytes"),
    (&["ftl-bench", "--host-queue-depth", "-1"], "--host-queue-depth"),
    (&["ftl-bench", "--over-provisioning", "1"], "--over-provisioning"),
    (&["ftl-bench", "--over-provisioning", "-0.1"], "--over-provisioning"),
    (&["ftl-bench", "--gc-fg-blocks", "0"], "--gc-fg-blocks"),
    (&["ftl-bench", "--gc-bg-blocks", "0"], "--gc-bg-blocks"),
    (&["ftl-bench", "--static-wl", "0"], "--static-wl"),
    (&["ftl-bench", "--max-memory", "0"], "--max-memory"),
    (&["ftl-bench", "--max-memory", "lots"], "--max-memory"),
    // The footprint is refused before anything is allocated.
    (&["ftl-bench", "--blocks-per-chip", "4000000"], "--blocks-per-chip"),
    (&["ftl-bench", "--max-memory", "64M"], "more than --max-memory (64.0 MiB)"),
    (&["ftl-bench", "--no-data", "--blocks-per-chip", "100000", "--max-memory", "1G"], "for its metadata"),
    // torture, engine-bench, recovery-bench, sqlite-compare
    (&["torture", "--cuts", "0"], "--cuts"),
    (&["torture", "--accounts", "1"], "--accounts"),
    (&["torture", "--transfers", "0"], "--transfers"),
    (&["torture", "--buffer-pages", "0"], "--buffer-pages"),
    (&["torture", "--group-commit-us", "-3"], "--group-commit-us"),
    (&["engine-bench", "--rows", "0"], "--rows"),
    (&["engine-bench", "--ops", "0"], "--ops"),
    (&["engine-bench", "--buffer-pages", "1"], "--buffer-pages"),
    (&["recovery-bench", "--rows", "0"], "--rows"),
    (&["recovery-bench", "--transactions", "10,0"], "--transactions"),
    (&["sqlite-compare", "--scale", "0"], "--scale"),
    (&["sqlite-compare", "--transactions", "0"], "--transactions"),
    (&["sqlite-compare", "--buffer", "0"], "--buffer"),
    (&["sqlite-compare", "--buffer", "1.5"], "--buffer"),
    // sql
    (&["sql", "--image", "never-created.img", "--db-page-bytes", "1000"], "--db-page-bytes"),
    (&["sql", "--image", "never-created.img", "--buffer-pages", "0"], "--buffer-pages"),
    (&["sql", "--image", "never-created.img", "--mode", "xml"], "--mode"),
    (
        &["sql", "--image", "never-created.img", "--device", "openssd-mlc", "--db-page-bytes", "4096"],
        "sizes that fit: 8192, 16384",
    ),
    (&["sql", "--image", "never-created.img", "--chips", "1"], "needs at least 2 chips"),
];

#[test]
fn every_bad_value_is_refused_naming_the_flag() {
    let dir = tempfile::tempdir().unwrap();
    let mut failed = Vec::new();
    for (args, expected) in CASES {
        let out = Command::new(env!("CARGO_BIN_EXE_deltaflash")).args(*args).current_dir(dir.path()).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        if out.status.success() || !stderr.contains(expected) || stderr.contains("panicked") {
            failed.push(format!("{args:?}: exit {:?}, wanted `{expected}` in: {stderr}", out.status.code()));
        }
    }
    assert!(failed.is_empty(), "{} of {} cases:\n{}", failed.len(), CASES.len(), failed.join("\n"));
    assert!(!dir.path().join("never-created.img").exists(), "a refused sql run left an image behind");
}

#[test]
fn range_errors_say_what_is_allowed() {
    let run = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_deltaflash")).args(args).output().unwrap();
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    assert!(run(&["ftl-bench", "--theta", "1"]).contains("outside the allowed range (0, 1)"));
    assert!(run(&["ftl-bench", "--over-provisioning", "1"]).contains("[0, 1)"));
    assert!(run(&["ftl-bench", "--writes", "0"]).contains("0 is not in 1..="));
    let memory = run(&["ftl-bench", "--blocks-per-chip", "4000000"]);
    assert!(memory.contains("GiB") && memory.contains("--no-data"), "{memory}");
}

#[test]
fn a_replay_delta_past_the_page_end_names_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.trace");
    std::fs::write(&trace, "W 1\nD 1 100 8\n# next runs past a 4096-byte page\nD 1 4090 8\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_deltaflash"))
        .args(["replay", "--chips", "2", "--blocks-per-chip", "32", "--pages-per-block", "16", "--trace"])
        .arg(&trace)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("t.trace:4: a delta of 8 bytes at offset 4090 runs past the end"), "{stderr}");
}
