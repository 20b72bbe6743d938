//! One metric vocabulary: every key of every command's JSON result is a name listed in
//! `docs/metrics.md`. The keys of the run's `config` (documented with the config in
//! `docs/experiments.md`) and of the maps keyed by names (regions, transaction kinds and
//! types, phases) are left out.

mod common;
use common::{ok, SMALL};
use std::collections::BTreeSet;
use std::path::Path;

/// The names `docs/metrics.md` lists: every `code span` that is one identifier.
fn documented() -> BTreeSet<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/metrics.md");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.split('`')
        .skip(1)
        .step_by(2)
        .filter(|s| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
        .map(str::to_string)
        .collect()
}

/// Every key of `v`, but those under `config`, `params` and `run` (config fields) and
/// the names that key `regions`, `ipl_regions`, `kinds`, `transaction_latency_us_by_type`
/// and `phases`.
fn keys(v: &serde_json::Value, keyed_by_name: bool, out: &mut BTreeSet<String>) {
    match v {
        serde_json::Value::Object(map) => {
            for (k, item) in map {
                if !keyed_by_name {
                    out.insert(k.clone());
                }
                if matches!(k.as_str(), "config" | "params" | "run") && !keyed_by_name {
                    continue;
                }
                let names = !keyed_by_name
                    && matches!(
                        k.as_str(),
                        "regions" | "ipl_regions" | "kinds" | "transaction_latency_us_by_type" | "phases"
                    );
                keys(item, names && item.is_object(), out);
            }
        }
        serde_json::Value::Array(items) => items.iter().for_each(|i| keys(i, false, out)),
        _ => {}
    }
}

#[test]
fn every_key_of_every_command_is_in_the_vocabulary() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace.txt");
    std::fs::write(&trace, "W 1\nR 1\nD 1 20 8\n").unwrap();
    let trace = trace.to_str().unwrap();
    let tatp = ["bench", "--workload", "tatp", "--subscribers", "300", "--sim-time", "0.2", "--warmup", "0.1"];
    let device = ["--chips", "4", "--blocks-per-chip", "64", "--pages-per-block", "64", "--check", "--progress", "0.1"];
    let bench = [&tatp[..], &device[..]].concat();
    let ftl = ["ftl-bench", "--writes", "500", "--warmup", "50", "--chips", "4", "--blocks-per-chip", "64"];
    let ftl = [&ftl[..], &["--pages-per-block", "16"]].concat();
    let runs: Vec<Vec<&str>> = vec![
        bench.clone(),
        [&bench[..], &["--storage", "ftl:dftl"]].concat(),
        [&bench[..], &["--storage", "ipl"]].concat(),
        vec!["bench", "--engine", "sqlite", "--workload", "ycsb", "--records", "100", "--operations", "100", "--check"],
        vec![
            "bench",
            "--engine",
            "sqlite",
            "--workload",
            "tpcb",
            "--transactions",
            "30",
            "--storage",
            "ftl:page",
            "--chips",
            "4",
            "--blocks-per-chip",
            "256",
            "--pages-per-block",
            "64",
        ],
        [&ftl[..], &["--delta-share", "0.2"]].concat(),
        [&ftl[..], &["--ftl", "bast", "--log-blocks", "8"]].concat(),
        [&["replay", "--trace", trace], SMALL].concat(),
        vec!["index-bench", "--index", "bftl", "--inserts", "300", "--queries", "10", "--scans", "1"],
        vec!["engine-bench", "--rows", "300", "--ops", "300"],
        [&["recovery-bench", "--rows", "300", "--transactions", "20"], SMALL].concat(),
        vec!["sqlite-compare", "--transactions", "50", "--chips", "4", "--blocks-per-chip", "64"],
        vec!["torture", "--cuts", "4", "--accounts", "100", "--transfers", "60"],
        vec!["torture", "--engine", "sqlite", "--cuts", "4", "--accounts", "50", "--transfers", "40"],
    ];
    let vocabulary = documented();
    let mut missing = BTreeSet::new();
    for (i, args) in runs.iter().enumerate() {
        let file = dir.path().join(format!("{i}.json"));
        ok(&[&args[..], &["--json", file.to_str().unwrap()]].concat());
        let mut found = BTreeSet::new();
        keys(&common::json(&file), false, &mut found);
        missing.extend(found.difference(&vocabulary).map(|k| format!("{k} ({})", args[0])));
    }
    assert!(missing.is_empty(), "keys not in docs/metrics.md: {missing:?}");
}
