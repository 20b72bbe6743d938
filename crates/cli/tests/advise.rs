//! `deltaflash advise` and `deltaflash demo` end to end on a tiny TATP.

mod common;
use common::{deltaflash, json, ok, FOUR_CHIPS};
use std::path::Path;

/// TATP with 1,000 subscribers on a 4-chip device: a second of simulated time.
fn tiny() -> Vec<&'static str> {
    [&["--workload", "tatp", "--subscribers", "1000", "--sim-time", "1", "--warmup", "0.5"], FOUR_CHIPS].concat()
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn advise_reads_a_baseline_run_and_its_ddl_runs_under_bench_schema() {
    let dir = tempfile::tempdir().unwrap();
    let (image, result) = (dir.path().join("base.img"), dir.path().join("base.json"));
    ok(&[&["bench", "--ipa", "0x0", "--image", path(&image), "--json", path(&result)], &tiny()[..]].concat());
    let (ddl, report, plots) =
        (dir.path().join("layout.sql"), dir.path().join("advice.json"), dir.path().join("plots"));
    let stdout = ok(&[
        "advise",
        "--analyze",
        path(&image),
        "--baseline",
        path(&result),
        "--ddl",
        path(&ddl),
        "--json",
        path(&report),
        "--plots",
        path(&plots),
    ]);
    assert!(stdout.contains("Recommendation: IPA ["), "{stdout}");
    let advice = json(&report);
    // Every TATP table and index is reported; the log was read; subscriber, the most
    // updated table with a few bytes per update, goes to the IPA region.
    assert_eq!(advice["objects"].as_array().unwrap().len(), 9);
    assert!(advice["log_records"].as_u64().unwrap() > 1000, "{}", advice["log_records"]);
    let subscriber = &advice["objects"][0];
    assert_eq!(subscriber["name"], "subscriber");
    assert!(subscriber["updates"].as_u64().unwrap() > 0 && subscriber["evictions"].as_u64().unwrap() > 0);
    let tables = advice["recommendation"]["tables"].as_array().unwrap();
    let chosen = |name: &str| tables.iter().any(|t| t["table"] == name && t["in_ipa_region"] == true);
    assert!(chosen("subscriber"), "{tables:?}");
    assert!(!chosen("access_info"), "access_info is never updated");
    for svg in ["update-size-cdf.svg", "skew.svg"] {
        let text = std::fs::read_to_string(plots.join(svg)).unwrap();
        assert!(text.starts_with("<svg") && text.contains("<polyline"), "{svg}");
    }
    // The DDL runs unchanged, and the layout takes appends.
    let layout = dir.path().join("layout.json");
    ok(&[&["bench", "--schema", path(&ddl), "--check", "--json", path(&layout)], &tiny()[..]].concat());
    assert!(json(&layout)["in_place_appends"].as_u64().unwrap() > 0);
}

#[test]
fn advise_verify_and_demo_run_end_to_end() {
    let dir = tempfile::tempdir().unwrap();
    let image = dir.path().join("base.img");
    let stdout = ok(&[&["advise", "--verify", "--image", path(&image)], &tiny()[..]].concat());
    assert!(stdout.contains("| IPA share of host writes |"), "{stdout}");
    assert!(stdout.contains("| GC erases per host write |"), "{stdout}");
    let demo = dir.path().join("demo.json");
    let stdout = ok(&[&["demo", "--json", path(&demo)], &tiny()[..]].concat());
    assert!(stdout.contains("| metric | baseline [0x0] | global ["), "{stdout}");
    let v = json(&demo);
    for run in ["baseline", "global", "selective"] {
        assert_eq!(v[run]["seed"], 1, "{run}");
        assert!(v[run]["transactions"].as_u64().unwrap() > 0, "{run}");
    }
    assert_eq!(v["baseline"]["in_place_appends"], 0);
    assert!(v["global"]["in_place_appends"].as_u64().unwrap() > 0);
    assert!(v["selective"]["in_place_appends"].as_u64().unwrap() > 0);
    assert!(v["selective"]["config"]["engine"]["schema"].as_str().unwrap().contains("CREATE REGION ipa"));
}

#[test]
fn advise_watch_switches_the_running_database_to_the_advised_layout() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("watch.json");
    let stdout = ok(&[
        &["advise", "--watch", "--watch-after", "0.5", "--progress", "0.1", "--json", path(&report)],
        &tiny()[..],
    ]
    .concat());
    assert!(stdout.contains("ALTER TABLE subscriber SET IPA = "), "{stdout}");
    assert!(stdout.contains("| **0.5 switch** |"), "{stdout}");
    assert!(stdout.contains("are those of the analysed run"), "{stdout}");
    let v = json(&report);
    let watch = &v["watch"];
    assert_eq!(watch["prefix_matches"], true);
    assert!(watch["alters"].as_str().unwrap().contains("ALTER INDEX subscriber_pkey SET IPA"));
    // The run started at 0x0 in a region that allows appends: no append before the
    // switch, appends in every interval after it.
    let result = &watch["result"];
    assert!(result["config"]["engine"]["schema"].as_str().unwrap().contains("IPA=0x0"));
    let lines = result["intervals"].as_array().unwrap();
    assert_eq!(lines.len(), 10);
    for l in lines {
        let appends = l["in_place_appends"].as_u64().unwrap();
        if l["sim_seconds"].as_f64().unwrap() < 0.55 {
            assert_eq!(appends, 0, "{l}");
        } else {
            assert!(appends > 0, "{l}");
        }
    }
}

#[test]
fn advise_watch_refuses_a_switch_outside_the_measured_time() {
    let out = deltaflash(&[&["advise", "--watch", "--watch-after", "1"], &tiny()[..]].concat());
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--watch-after 1: the switch must fall inside the measured time"), "{stderr}");
}
