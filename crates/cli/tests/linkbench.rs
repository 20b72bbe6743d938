//! LinkBench through the binary: `bench --workload linkbench --nodes N` and `compare`,
//! its consistency check, its objects in the results, and `--nodes` refused out of range.

use std::process::{Command, Output};

fn deltaflash(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_deltaflash")).args(args).output().expect("binary runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// 3,000 nodes (about 2 MiB with links and counts) on four small chips.
const SMALL_LINKBENCH: &[&str] = &[
    "--workload",
    "linkbench",
    "--nodes",
    "3000",
    "--chips",
    "4",
    "--blocks-per-chip",
    "64",
    "--pages-per-block",
    "64",
    "--sim-time",
    "0.5",
    "--warmup",
    "0.2",
];

#[test]
fn bench_runs_linkbench_checks_it_and_reports_its_objects() {
    let dir = tempfile::tempdir().unwrap();
    let run = |name: &str| {
        let path = dir.path().join(name);
        let p = path.to_str().unwrap().to_string();
        let out = deltaflash(&[&["bench", "--ipa", "2x3", "--check", "--json", &p], SMALL_LINKBENCH].concat());
        assert!(out.status.success(), "{}", stderr(&out));
        assert!(String::from_utf8_lossy(&out.stdout).contains("consistency check passed"));
        let mut v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        for key in ["wall_seconds", "run_wall_seconds", "simulated_seconds_per_wall_second"] {
            v.as_object_mut().unwrap().remove(key).expect(key);
        }
        v
    };
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
    let out =
        deltaflash(&[&["compare", "--schemes", "0x0,2x3", "--check", "--format", "json"], SMALL_LINKBENCH].concat());
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
