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

/// TPC-B at scale 1 on a 4-chip device (as the same-results fixture runs it), shortly.
fn tiny_tpcb() -> Vec<&'static str> {
    [
        &["--workload", "tpcb", "--sim-time", "1", "--warmup", "0.5"][..],
        &["--chips", "4", "--blocks-per-chip", "96", "--pages-per-block", "64"],
    ]
    .concat()
}

/// A baseline run (`bench --ipa 0x0 --image --json`) in `dir`: its image and result.
fn baseline(dir: &Path, run: &[&str]) -> (std::path::PathBuf, std::path::PathBuf) {
    let (image, result) = (dir.join("base.img"), dir.join("base.json"));
    ok(&[&["bench", "--ipa", "0x0", "--image", path(&image), "--json", path(&result)], run].concat());
    (image, result)
}

/// `advise --analyze` on a baseline: the advice JSON.
fn analyze(dir: &Path, image: &Path, result: &Path) -> serde_json::Value {
    let report = dir.join("advice.json");
    ok(&["advise", "--analyze", path(image), "--baseline", path(result), "--json", path(&report)]);
    json(&report)
}

fn object<'a>(advice: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    advice["objects"].as_array().unwrap().iter().find(|o| o["name"] == name).unwrap_or_else(|| panic!("{name}"))
}

/// The advised layout costs no more space than any global layout predicted to save as
/// much GC work; selective and global differ where some table takes no appends.
fn check_space_against_global(advice: &serde_json::Value) {
    let r = &advice["recommendation"];
    let (advised, global) = (&r["predicted"]["advised"], &r["predicted"]["global"]);
    let f = |v: &serde_json::Value, k: &str| v[k].as_f64().unwrap_or_else(|| panic!("{k} in {v}"));
    for c in r["candidates"].as_array().unwrap().iter().filter(|c| c["layout"] == "global") {
        assert!(
            f(c, "flash_program_reduction") < f(advised, "flash_program_reduction")
                || f(c, "space_overhead_db_pct") >= f(advised, "space_overhead_db_pct"),
            "{c} saves as much for less space than {advised}"
        );
    }
    let tables = r["tables"].as_array().unwrap();
    if tables.iter().any(|t| t["in_ipa_region"] == false && t["writes"].as_u64().unwrap() > 0) {
        assert!(f(global, "space_overhead_db_pct") > f(advised, "space_overhead_db_pct"), "{r}");
        assert_ne!(f(global, "flash_program_reduction"), f(advised, "flash_program_reduction"), "{r}");
    }
    assert!(r["reasoning"].as_array().unwrap().iter().any(|l| l.as_str().unwrap().contains("global")), "{r}");
}

#[test]
fn tpcb_statistics_are_the_measured_runs_and_the_layout_costs_no_more_than_global() {
    let dir = tempfile::tempdir().unwrap();
    let (image, result) = baseline(dir.path(), &tiny_tpcb());
    assert!(json(&result)["measured_from_lsn"].as_u64().unwrap() > 0);
    let advice = analyze(dir.path(), &image, &result);
    // The run looks accounts up by key and never changes a key: the load's inserts are
    // counted apart, and the measured run shows no update of account_pkey.
    let pkey = object(&advice, "account_pkey");
    assert_eq!(pkey["updates"], 0, "{pkey}");
    assert!(pkey["updates_before_measurement"].as_u64().unwrap() > 0, "{pkey}");
    assert!(object(&advice, "account")["updates"].as_u64().unwrap() > 0);
    check_space_against_global(&advice);
    // The predictions are the model's, not copies of the baseline or of the IPA share.
    let p = &advice["recommendation"]["predicted"]["advised"];
    let base = json(&result);
    assert_ne!(p["throughput_tps"].as_f64(), base["throughput_tps"].as_f64(), "{p}");
    assert_ne!(p["gc_reduction"].as_f64(), p["ipa_share"].as_f64(), "{p}");
}

#[test]
fn tatp_layout_costs_no_more_space_than_global_for_the_same_benefit() {
    let dir = tempfile::tempdir().unwrap();
    let (image, result) = baseline(dir.path(), &tiny());
    check_space_against_global(&analyze(dir.path(), &image, &result));
}

#[test]
fn advise_reads_an_exported_log_as_it_reads_the_image() {
    let dir = tempfile::tempdir().unwrap();
    let (image, result) = baseline(dir.path(), &tiny());
    let log = dir.path().join("log.jsonl");
    ok(&["log", "export", path(&image), "--out", path(&log), "--baseline", path(&result)]);
    let text = std::fs::read_to_string(&log).unwrap();
    let header: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(header["format"], "deltaflash-log");
    assert_eq!(header["measured_from_lsn"], json(&result)["measured_from_lsn"]);
    assert!(text.lines().skip(1).any(|l| l.contains(r#""type":"update","object":"subscriber""#)));
    let (from_log, from_image) = (dir.path().join("log-advice.json"), analyze(dir.path(), &image, &result));
    ok(&["advise", "--log", path(&log), "--baseline", path(&result), "--json", path(&from_log)]);
    let from_log = json(&from_log);
    assert_eq!(from_log["objects"], from_image["objects"]);
    assert_eq!(from_log["recommendation"], from_image["recommendation"]);
    // The export never replaces a file, and a broken line is named.
    let again = deltaflash(&["log", "export", path(&image), "--out", path(&log)]);
    assert!(!again.status.success());
    std::fs::write(&log, format!("{}\n{{\"lsn\": \"x\"}}\n", text.lines().next().unwrap())).unwrap();
    let out = deltaflash(&["advise", "--log", path(&log), "--baseline", path(&result)]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && stderr.contains("log.jsonl line 2:"), "{stderr}");
}

/// `advise --verify --precondition steady` on TPC-B on a small device (two data chips
/// of 40 blocks): the predictions against the measured run of the advised layout,
/// within the tolerances docs/advisor.md states. In steady state the GC prediction is
/// the layout's own run replayed (its aging windows, the delta areas it appends to, each
/// region's greedy GC), uncalibrated, so the baseline's own migrations are a prediction
/// too. What the model achieves here (advised [3×8]): the baseline's migrations −3%; the
/// advised layout's migrations per host write −13%, its migrations −14%, its erases
/// −11%, its IPA share 70.5% against 70.8%, its throughput −1%; its aging 21 windows
/// against the run's 25, the cap, where the run never met the steady-state criterion.
/// The tolerances: 15% on the baseline's migrations, 25% on the advised layout's
/// migrations per host write, migrations and erases, 40% on throughput and host writes,
/// 5 points on the IPA share, 4 on the advised layout's aging windows. A GC prediction
/// of 0 fails.
#[test]
fn tpcb_predictions_meet_the_measured_layout_within_the_stated_tolerances() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("verify.json");
    let run = ["--workload", "tpcb", "--sim-time", "2", "--warmup", "0.5", "--chips", "4"];
    let device = ["--blocks-per-chip", "40", "--pages-per-block", "64", "--precondition", "steady"];
    let image = dir.path().join("base.img");
    ok(&[&["advise", "--verify", "--image", path(&image), "--json", path(&report)][..], &run, &device].concat());
    let v = json(&report);
    let predicted = &v["recommendation"]["predicted"];
    let (p, m) = (&predicted["advised"], &v["verify"]["result"]);
    let f = |v: &serde_json::Value, k: &str| v[k].as_f64().unwrap_or_else(|| panic!("{k} in {v}"));
    assert_eq!(v["baseline"]["precondition"]["mode"], "steady");
    assert_eq!(m["precondition"]["mode"], "steady", "--verify runs from the same device state");
    // The advised layout's aging is its own: the replay's windows against the run's.
    let windows = m["precondition"]["windows"].as_array().unwrap().len() as f64;
    assert!(
        (f(p, "aging_windows") - windows).abs() <= 4.0,
        "aging windows: predicted {}, measured {windows}",
        p["aging_windows"]
    );
    let within = |what: &str, predicted: f64, measured: f64, tolerance: f64| {
        assert!((predicted / measured - 1.0).abs() <= tolerance, "{what}: predicted {predicted}, measured {measured}");
    };
    let base = &v["baseline"];
    assert!(f(base, "gc_page_migrations") > 0.0, "the baseline runs GC");
    within(
        "baseline GC migrations",
        f(&predicted["baseline"], "gc_page_migrations"),
        f(base, "gc_page_migrations"),
        0.15,
    );
    within(
        "GC migrations per host write",
        f(p, "gc_migrations_per_host_write"),
        f(m, "gc_migrations_per_host_write"),
        0.25,
    );
    within("GC migrations", f(p, "gc_page_migrations"), f(m, "gc_page_migrations"), 0.25);
    within("GC erases", f(p, "gc_erases"), f(m, "gc_erases"), 0.25);
    within("throughput", f(p, "throughput_tps"), f(m, "throughput_tps"), 0.40);
    within("host writes", f(p, "out_of_place_writes") + f(p, "in_place_appends"), f(m, "host_writes"), 0.40);
    let measured_share = f(m, "in_place_appends") / f(m, "host_writes");
    assert!(
        (f(p, "ipa_share") - measured_share).abs() <= 0.05,
        "IPA share {} against {measured_share}",
        p["ipa_share"]
    );
    // From steady state the GC prediction is the model's, not the baseline's measured GC
    // scaled: the same baseline with its GC work doubled gives the same prediction.
    let mut doubled = v["baseline"].clone();
    for k in ["gc_page_migrations", "gc_erases"] {
        doubled[k] = (2 * v["baseline"][k].as_u64().unwrap()).into();
    }
    let (tampered, again) = (dir.path().join("doubled.json"), dir.path().join("again.json"));
    std::fs::write(&tampered, doubled.to_string()).unwrap();
    ok(&["advise", "--analyze", path(&image), "--baseline", path(&tampered), "--json", path(&again)]);
    let again = json(&again);
    let per_write =
        |v: &serde_json::Value| f(&v["recommendation"]["predicted"]["advised"], "gc_migrations_per_host_write");
    assert!((per_write(&again) / per_write(&v) - 1.0).abs() < 1e-9, "{} against {}", per_write(&again), per_write(&v));
}

/// TPC-B at scale 1 on two data chips of 32 blocks: the baseline fits, but no IPA layout
/// holds the tables with their delta areas, whole extents and growth over the run, so
/// `--verify` refuses the advised layout before running it, naming what each region
/// needs, instead of a run that stops when a region runs out of extents.
#[test]
fn advise_verify_refuses_a_layout_whose_regions_cannot_hold_the_tables_growth() {
    let dir = tempfile::tempdir().unwrap();
    let run = ["--workload", "tpcb", "--sim-time", "6", "--warmup", "0.5", "--chips", "4"];
    let device = ["--blocks-per-chip", "32", "--pages-per-block", "64"];
    let image = dir.path().join("base.img");
    let out = deltaflash(&[&["advise", "--verify", "--image", path(&image)][..], &run, &device].concat());
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(!out.status.success(), "{stdout}");
    assert!(stderr.contains("--verify: the advised layout would run out of extents: its IPA region needs"), "{stderr}");
    assert!(!stderr.contains("loading stopped"), "{stderr}");
    assert!(stdout.contains("WARNING: no split of the 2 data chips holds the tables' growth over the run"), "{stdout}");
}
