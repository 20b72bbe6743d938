//! No result changes: short seeded runs of `ftl-bench` (NoFTL, page FTL, DFTL; greedy
//! and cost-benefit GC), `bench` (TPC-B, TPC-C, TATP) and `bench --engine sqlite` give
//! the JSON recorded in `tests/fixtures/` value for value, wall-time, memory and
//! commit fields aside. Speed work must keep this green; a deliberate change of results re-records the
//! fixtures (`DELTAFLASH_BLESS=1 cargo test -p deltaflash-cli --test same_results`) and
//! says why in its commit.

use serde_json::Value;
use std::path::PathBuf;
use std::process::Command;

/// A small device (4 chips, 32 blocks of 16 pages) for NoFTL runs.
const SMALL: &[&str] = &["--chips", "4", "--blocks-per-chip", "32", "--pages-per-block", "16"];
/// Twice that for the FTLs, which keep more spare blocks per chip.
const SMALL_FTL: &[&str] = &["--chips", "4", "--blocks-per-chip", "64", "--pages-per-block", "16"];
/// Room for TPC-B at scale 1 (about 15 MiB) in a two-chip data region.
const TPCB_DEVICE: &[&str] = &["--chips", "4", "--blocks-per-chip", "96", "--pages-per-block", "64"];

/// Keys that depend on the machine or the build, not on the simulation: wall time,
/// speed per wall-second, the process's memory, the commit built.
fn machine_dependent(key: &str) -> bool {
    key.contains("wall") || key.contains("rss") || key.starts_with("memory_") || key == "git_commit" || key == "version"
}

fn strip(v: &mut Value) {
    match v {
        Value::Object(map) => {
            map.retain(|k, _| !machine_dependent(k));
            map.values_mut().for_each(strip);
        }
        Value::Array(items) => items.iter_mut().for_each(strip),
        _ => {}
    }
}

/// Runs `deltaflash ARGS --json FILE` and returns the JSON without machine-dependent keys.
fn run(args: &[&str]) -> Value {
    let dir = tempfile::tempdir().expect("temporary directory");
    let json = dir.path().join("run.json");
    let out = Command::new(env!("CARGO_BIN_EXE_deltaflash"))
        .args(args)
        .arg("--json")
        .arg(&json)
        .output()
        .expect("the binary runs");
    assert!(out.status.success(), "deltaflash {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    let text = std::fs::read_to_string(&json).unwrap_or_else(|e| panic!("{}: {e}", json.display()));
    let mut v: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", json.display()));
    strip(&mut v);
    v
}

/// Compares a run with its fixture, or records the fixture when `DELTAFLASH_BLESS` is set.
fn check(name: &str, args: &[&str]) {
    let got = run(args);
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(format!("{name}.json"));
    if std::env::var_os("DELTAFLASH_BLESS").is_some() {
        let text = serde_json::to_string_pretty(&got).expect("JSON renders") + "\n";
        std::fs::write(&path, text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        return;
    }
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let want: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    if got != want {
        let got = serde_json::to_string_pretty(&got).expect("JSON renders");
        let first = got.lines().zip(text.lines()).position(|(a, b)| a != b);
        panic!("{name}: the run's JSON differs from {} (first differing line {first:?}):\n{got}", path.display());
    }
}

fn ftl_bench<'a>(device: &[&'a str], extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["ftl-bench", "--writes", "20000", "--warmup", "20000", "--seed", "7"];
    args.extend_from_slice(device);
    args.extend_from_slice(extra);
    args
}

#[test]
fn ftl_bench_noftl_greedy_with_appends() {
    check("ftl_bench_noftl_greedy", &ftl_bench(SMALL, &["--delta-share", "0.3", "--gc", "greedy"]));
}

#[test]
fn ftl_bench_noftl_cost_benefit_no_data() {
    check(
        "ftl_bench_noftl_cost_benefit",
        &ftl_bench(SMALL, &["--gc", "cost-benefit", "--no-data", "--pattern", "zipf"]),
    );
}

#[test]
fn ftl_bench_page_ftl_greedy_and_cost_benefit() {
    check("ftl_bench_page_greedy", &ftl_bench(SMALL_FTL, &["--ftl", "page", "--gc", "greedy"]));
    check(
        "ftl_bench_page_cost_benefit",
        &ftl_bench(SMALL_FTL, &["--ftl", "page", "--gc", "cost-benefit", "--pattern", "zipf"]),
    );
}

#[test]
fn ftl_bench_dftl() {
    check("ftl_bench_dftl", &ftl_bench(SMALL_FTL, &["--ftl", "dftl", "--gc", "greedy"]));
}

#[test]
fn bench_tpcb() {
    let mut args =
        vec!["bench", "--workload", "tpcb", "--sim-time", "2", "--warmup", "1", "--ipa", "2x4", "--seed", "3"];
    args.extend_from_slice(TPCB_DEVICE);
    check("bench_tpcb", &args);
}

#[test]
fn bench_tpcc() {
    let args = [
        "bench",
        "--workload",
        "tpcc",
        "--warehouses",
        "1",
        "--buffer",
        "0.1",
        "--sim-time",
        "1",
        "--warmup",
        "0.5",
        "--ipa",
        "2x3",
        "--blocks-per-chip",
        "64",
        "--seed",
        "5",
    ];
    check("bench_tpcc", &args);
}

#[test]
fn bench_tatp() {
    let args = [
        "bench",
        "--workload",
        "tatp",
        "--subscribers",
        "1000",
        "--chips",
        "4",
        "--blocks-per-chip",
        "64",
        "--pages-per-block",
        "64",
        "--sim-time",
        "1",
        "--warmup",
        "0.5",
        "--seed",
        "2",
    ];
    check("bench_tatp", &args);
}

#[test]
fn bench_sqlite_on_an_aged_page_ftl() {
    let args = [
        "bench",
        "--engine",
        "sqlite",
        "--workload",
        "sqlite-bench",
        "--ops",
        "fillrandom,overwrite",
        "--num",
        "500",
        "--value-size",
        "1024",
        "--storage",
        "ftl:page",
        "--free-space",
        "25%",
        "--chips",
        "2",
        "--blocks-per-chip",
        "64",
        "--seed",
        "4",
    ];
    check("bench_sqlite_aged", &args);
}
