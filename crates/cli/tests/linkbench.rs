//! LinkBench through the binary: `bench --workload linkbench --nodes N` and `compare`,
//! its consistency check, its objects in the results, and `--nodes` refused out of range.

mod common;
use common::{checked_bench_json, deltaflash, stderr, FOUR_CHIPS, SHORT_RUN};

/// 3,000 nodes (about 2 MiB with links and counts).
const LINKBENCH: &[&str] = &["--workload", "linkbench", "--nodes", "3000"];

fn small_linkbench() -> Vec<&'static str> {
    [LINKBENCH, FOUR_CHIPS, SHORT_RUN].concat()
}

#[test]
fn bench_runs_linkbench_checks_it_and_reports_its_objects() {
    let dir = tempfile::tempdir().unwrap();
    let run =
        |name: &str| checked_bench_json(&dir.path().join(name), &[&["--ipa", "2x3"], &small_linkbench()[..]].concat());
    let a = run("a.json");
    assert_eq!(a["config"]["workload"]["name"], "linkbench");
    assert_eq!(a["config"]["workload"]["nodes"], 3000);
    let objects: Vec<&str> = a["objects"].as_array().unwrap().iter().map(|o| o["name"].as_str().unwrap()).collect();
    for name in ["nodetable", "linktable", "link_id1_type", "counttable"] {
        assert!(objects.contains(&name), "{name} missing from {objects:?}");
    }
    assert!(a["transactions"].as_u64().unwrap() > 100);
    assert!(a["in_place_appends"].as_u64().unwrap() > 0, "[2x3] appends in place");
    let sizes = a["update_size_writes"].as_array().unwrap();
    assert!(sizes.iter().map(|n| n.as_u64().unwrap()).sum::<u64>() > 0, "update sizes recorded");
    assert_eq!(a, run("b.json"), "same seed, same metrics");
}

#[test]
fn compare_runs_linkbench_on_both_schemes() {
    let out = deltaflash(
        &[&["compare", "--schemes", "0x0,2x3", "--check", "--format", "json"], &small_linkbench()[..]].concat(),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("consistency check passed"), "{}", stderr(&out));
    let runs: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let runs = runs.as_array().unwrap();
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[0]["in_place_appends"], 0, "[0x0] writes out of place only");
    assert!(runs[1]["in_place_appends"].as_u64().unwrap() > 0, "[2x3] appends");
}

#[test]
fn nodes_out_of_range_or_on_another_workload_is_refused() {
    let out = deltaflash(&["bench", "--workload", "linkbench", "--nodes", "1"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("--nodes") && stderr(&out).contains("2..=1000000000"), "{}", stderr(&out));
    let out = deltaflash(&["bench", "--workload", "tatp", "--nodes", "100"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("tatp takes no parameter `nodes`"), "{}", stderr(&out));
}
