//! Shared by the binary's end-to-end tests: running `deltaflash`, reading what it wrote,
//! and the small devices and short runs the tests use.
// Each test file is its own crate and uses only part of this module.
#![allow(dead_code)]

use std::path::Path;
use std::process::{Command, Output};

/// Four chips of 32 × 16 pages: enough for the SQL shell and the small tools.
pub const SMALL: &[&str] = &["--chips", "4", "--blocks-per-chip", "32", "--pages-per-block", "16"];

/// Four chips of 64 × 64 pages, for a short OLTP run.
pub const FOUR_CHIPS: &[&str] = &["--chips", "4", "--blocks-per-chip", "64", "--pages-per-block", "64"];

/// Half a simulated second after a warm-up of 0.2 s.
pub const SHORT_RUN: &[&str] = &["--sim-time", "0.5", "--warmup", "0.2"];

/// Wall-time and peak-memory fields of a `bench` JSON: the only ones that differ between
/// two runs with one seed.
pub const BENCH_WALL_FIELDS: [&str; 6] = [
    "wall_seconds",
    "run_wall_seconds",
    "simulated_seconds_per_wall_second",
    "memory_peak_rss_bytes",
    "memory_peak_rss_per_device_byte",
    "memory_peak_rss_per_kept_byte",
];

pub fn deltaflash(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_deltaflash")).args(args).output().expect("binary runs")
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Runs the binary, insists that it succeeded and returns its standard output.
pub fn ok(args: &[&str]) -> String {
    let out = deltaflash(args);
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The JSON file at `path` without the given fields, each of which must be there.
pub fn json_without(path: &Path, fields: &[&str]) -> serde_json::Value {
    let mut v = json(path);
    let o = v.as_object_mut().unwrap();
    for key in fields {
        assert!(o.remove(*key).is_some(), "{key} missing");
    }
    v
}

/// `bench --check --json PATH ARGS…`: insists the run and its consistency check passed and
/// returns the JSON without its wall-time fields.
pub fn checked_bench_json(path: &Path, args: &[&str]) -> serde_json::Value {
    let p = path.to_str().unwrap();
    let out = ok(&[&["bench", "--check", "--json", p], args].concat());
    assert!(out.contains("consistency check passed"), "{out}");
    json_without(path, &BENCH_WALL_FIELDS)
}
