//! Every run can be run again from its JSON: each command's result goes through
//! `deltaflash rerun` and comes back identical; an edited result is reported, value by
//! value, with a non-zero exit. A SQLite run is an experiment file of its own
//! (`engine = "sqlite"`), every FTL knob is a flag wherever that FTL runs (and refused
//! where there is none), and the engine's `none` journal is one flag away.

mod common;
use common::{deltaflash, ok, stderr, SMALL};
use std::path::Path;

fn path(p: &Path) -> &str {
    p.to_str().expect("UTF-8 temporary path")
}

/// `ARGS --json DIR/NAME`, then `rerun DIR/NAME`: insists both succeed and that rerun
/// says the values are identical; returns the recorded JSON.
fn round_trip(dir: &Path, name: &str, args: &[&str]) -> serde_json::Value {
    let file = dir.join(name);
    ok(&[args, &["--json", path(&file)]].concat());
    let recorded = common::json(&file);
    assert!(recorded["config"].is_object(), "{name}: no config in {recorded}");
    assert!(recorded["version"].is_string() && recorded["git_commit"].is_string(), "{name}");
    let again = dir.join(format!("again-{name}"));
    let out = ok(&["rerun", path(&file), "--json", path(&again)]);
    assert!(out.contains("identical"), "{name}: {out}");
    let mut rerun = common::json(&again);
    let mut first = recorded.clone();
    for v in [&mut first, &mut rerun] {
        strip(v);
    }
    assert_eq!(first, rerun, "{name}: the re-run's JSON");
    recorded
}

/// Leaves out what depends on the machine (as `rerun` does).
fn strip(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Object(map) => {
            map.retain(|k, _| {
                !(k.contains("wall") || k.contains("rss") || k.starts_with("memory_") || k.starts_with("page_write_ns"))
            });
            map.values_mut().for_each(strip);
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(strip),
        _ => {}
    }
}

const SHORT_BENCH: &[&str] = &[
    "bench",
    "--workload",
    "tatp",
    "--subscribers",
    "500",
    "--chips",
    "4",
    "--blocks-per-chip",
    "64",
    "--pages-per-block",
    "64",
    "--sim-time",
    "0.2",
    "--warmup",
    "0.1",
    "--seed",
    "3",
];

#[test]
fn every_command_round_trips_through_rerun() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let bench = round_trip(d, "bench.json", SHORT_BENCH);
    for name in ["read_latency_us", "write_latency_us", "transaction_latency_us"] {
        let l = &bench[name];
        let order = ["p50", "p95", "p99", "p99_9", "max"].map(|q| l[q].as_f64().unwrap_or(-1.0));
        assert!(order.windows(2).all(|w| 0.0 <= w[0] && w[0] <= w[1]) && order[4] > 0.0, "{name}: {l}");
    }
    let p50_ms = bench["transaction_latency_p50_ms"].as_f64().unwrap();
    assert!((bench["transaction_latency_us"]["p50"].as_f64().unwrap() - p50_ms * 1e3).abs() < 1e-6);
    let sqlite = round_trip(
        d,
        "sqlite.json",
        &["bench", "--engine", "sqlite", "--num", "60", "--value-size", "256", "--seed", "2"],
    );
    assert_eq!(sqlite["config"]["engine"], "sqlite");
    let sw_wal = round_trip(
        d,
        "sw-wal.json",
        &[
            "bench",
            "--engine",
            "sqlite",
            "--num",
            "40",
            "--value-size",
            "256",
            "--storage",
            "ftl:page",
            "--journal",
            "sw-wal",
            "--chips",
            "2",
            "--blocks-per-chip",
            "64",
        ],
    );
    assert_eq!(sw_wal["config"]["journal"], "sw-wal", "SW-WAL is told from Base-WAL");
    let mut ftl = vec!["ftl-bench", "--writes", "3000", "--warmup", "1000", "--ftl", "dftl", "--cmt-entries", "64"];
    ftl.extend_from_slice(&["--chips", "4", "--blocks-per-chip", "64", "--pages-per-block", "16"]);
    let f = round_trip(d, "ftl.json", &ftl);
    assert_eq!(f["config"]["ftl"]["cmt_entries"], 64);
    let trace = d.join("trace.txt");
    std::fs::write(&trace, "W 1\nW 2\nR 1\nT 2\nW 3\n").unwrap();
    round_trip(d, "replay.json", &[&["replay", "--trace", path(&trace)], SMALL].concat());
    let index = round_trip(
        d,
        "index.json",
        &["index-bench", "--index", "ipl", "--inserts", "300", "--queries", "10", "--scans", "1"],
    );
    for phase in ["insert_latency", "query_latency"] {
        let l = &index[phase];
        assert!(
            l["p50_ms"].as_f64() <= l["p99_9_ms"].as_f64() && l["p99_9_ms"].as_f64() <= l["max_ms"].as_f64(),
            "{phase}: {l}"
        );
        // 300 inserts fit the buffer: an operation may cost no simulated I/O at all.
        assert!(l["max_ms"].as_f64() >= Some(0.0), "{phase}: {l}");
    }
    round_trip(d, "engine.json", &["engine-bench", "--rows", "300", "--ops", "300"]);
    round_trip(d, "recovery.json", &[&["recovery-bench", "--rows", "300", "--transactions", "50"], SMALL].concat());
}

#[test]
fn a_compare_and_a_sweep_round_trip_run_by_run() {
    let dir = tempfile::tempdir().unwrap();
    let compare = dir.path().join("compare.json");
    let mut args = SHORT_BENCH.to_vec();
    args[0] = "compare";
    let out = ok(&[&args[..], &["--schemes", "0x0,2x4", "--format", "json", "--jobs", "1"]].concat());
    std::fs::write(&compare, out).unwrap();
    let out = ok(&["rerun", path(&compare)]);
    assert_eq!(out.matches("identical").count(), 2, "{out}");
    let grid = dir.path().join("grid.toml");
    std::fs::write(
        &grid,
        "[base]\nseed = 2\n[base.device]\nchips = 4\nblocks_per_chip = 64\npages_per_block = 64\n\
         [base.workload]\nname = \"tatp\"\nsubscribers = 500\n[base.driver]\nsim_time_s = 0.2\nwarmup_s = 0.1\n\
         [base.storage.ftl]\nkind = \"dftl\"\n[grid]\n\"storage.ftl.cmt_entries\" = [256]\n",
    )
    .unwrap();
    let results = dir.path().join("grid.jsonl");
    ok(&["sweep", "--grid", path(&grid), "--out", path(&results), "--jobs", "1"]);
    let out = ok(&["rerun", path(&results)]);
    assert!(out.contains("identical"), "{out}");
}

#[test]
fn an_edited_result_is_reported_value_by_value_and_fails() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("r.json");
    ok(&[SHORT_BENCH, &["--json", path(&file)]].concat());
    let mut v = common::json(&file);
    let programs = v["flash_programs"].as_u64().unwrap();
    v["flash_programs"] = (programs + 1).into();
    v["wall_seconds"] = 1e9.into();
    std::fs::write(&file, v.to_string()).unwrap();
    let out = deltaflash(&["rerun", path(&file)]);
    assert!(!out.status.success(), "an edited metric must fail the re-run");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("DIFFERENT: 1 of"), "{text}");
    assert!(text.contains(&format!("flash_programs: recorded {}, re-run {programs}", programs + 1)), "{text}");
    assert!(!text.contains("wall_seconds"), "wall-clock fields are not compared: {text}");

    v.as_object_mut().unwrap().remove("config");
    std::fs::write(&file, v.to_string()).unwrap();
    let out = deltaflash(&["rerun", path(&file)]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("the result has no \"config\""), "{}", stderr(&out));

    std::fs::write(&file, "{\"config\": ").unwrap();
    let out = deltaflash(&["rerun", path(&file)]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("not JSON"), "{}", stderr(&out));
}

#[test]
fn another_version_is_run_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("r.json");
    ok(&["bench", "--engine", "sqlite", "--num", "30", "--value-size", "256", "--json", path(&file)]);
    let mut v = common::json(&file);
    v["version"] = "0.0.1".into();
    std::fs::write(&file, v.to_string()).unwrap();
    let out = deltaflash(&["rerun", path(&file)]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("recorded by version 0.0.1"), "{}", stderr(&out));
}

#[test]
fn a_config_file_with_engine_sqlite_runs_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("run.toml");
    std::fs::write(
        &config,
        "engine = \"sqlite\"\njournal = \"nolgn\"\n[storage.ftl]\nkind = \"nolgn\"\np2p_entries = 500\n\
         [device]\nchips = 2\nblocks_per_chip = 64\n[workload]\nname = \"sqlite-bench\"\nnum = 40\nvalue_size = 256\n\
         [run]\nseed = 6\nsynchronous = \"normal\"\n",
    )
    .unwrap();
    let out = dir.path().join("out.json");
    ok(&["bench", "--config", path(&config), "--json", path(&out)]);
    let v = common::json(&out);
    assert_eq!(v["config"]["storage"]["ftl"]["p2p_entries"], 500);
    assert_eq!(v["config"]["group_pages"], 1000, "the resolved config fills in the defaults");
    assert_eq!(v["run"]["seed"], 6);
    // Flags override the file, as they do the engine's.
    let out2 = dir.path().join("out2.json");
    ok(&["bench", "--config", path(&config), "--p2p-entries", "700", "--seed", "7", "--json", path(&out2)]);
    let v = common::json(&out2);
    assert_eq!(
        (v["config"]["storage"]["ftl"]["p2p_entries"].as_u64(), v["run"]["seed"].as_u64()),
        (Some(700), Some(7))
    );
    // A field the file cannot have is named with its place.
    std::fs::write(&config, "engine = \"sqlite\"\n[run]\nsede = 6\n").unwrap();
    let e = deltaflash(&["bench", "--config", path(&config)]);
    assert!(!e.status.success());
    assert!(stderr(&e).contains("unknown field `sede`"), "{}", stderr(&e));
    std::fs::write(&config, "engine = \"sqlite\"\njournal = \"sw-wal\"\n").unwrap();
    let e = deltaflash(&["bench", "--config", path(&config)]);
    assert!(
        stderr(&e).contains(&format!("journal in {}: applies to SQLite on flash", path(&config))),
        "{}",
        stderr(&e)
    );
}

/// Each FTL knob on each command that runs an FTL: accepted with its FTL, refused with a
/// clear error where it would do nothing.
#[test]
fn every_ftl_knob_is_a_flag_wherever_an_ftl_runs() {
    let ftl_bench = ["ftl-bench", "--writes", "200", "--warmup", "0", "--chips", "4", "--blocks-per-chip", "64"];
    let ftl_bench = [&ftl_bench[..], &["--pages-per-block", "16"]].concat();
    let sqlite = ["bench", "--engine", "sqlite", "--num", "20", "--value-size", "256", "--chips", "2"];
    let sqlite = [&sqlite[..], &["--blocks-per-chip", "64"]].concat();
    let accepted: &[(&[&str], &[&str])] = &[
        (&ftl_bench, &["--ftl", "dftl", "--cmt-entries", "100"]),
        (&ftl_bench, &["--ftl", "bast", "--log-blocks", "8"]),
        (&ftl_bench, &["--ftl", "nolgn", "--p2p-entries", "300", "--over-provisioning", "0.2", "--gc", "cost-benefit"]),
        (&sqlite, &["--storage", "ftl:dftl", "--cmt-entries", "100", "--over-provisioning", "0.2"]),
        (&sqlite, &["--storage", "ftl:fast", "--log-blocks", "8"]),
        (&sqlite, &["--storage", "ftl:page", "--gc", "cost-benefit"]),
        (&sqlite, &["--storage", "ftl:nolgn", "--p2p-entries", "300"]),
    ];
    for (base, flags) in accepted {
        let args = [base, *flags].concat();
        let out = deltaflash(&args);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    }
    let refused: &[(&[&str], &[&str], &str)] = &[
        (&ftl_bench, &["--p2p-entries", "300"], "--p2p-entries is an FTL setting; a NoFTL region has no FTL"),
        (
            &ftl_bench,
            &["--ftl", "page", "--cmt-entries", "9"],
            "--cmt-entries is a knob of ftl:dftl; this run's FTL is ftl:page",
        ),
        (&sqlite, &["--gc", "greedy"], "--gc is an FTL setting; SQLite on --storage host runs on no FTL"),
        (&sqlite, &["--storage", "ftl:page", "--p2p-entries", "3"], "--p2p-entries is a knob of ftl:nolgn"),
        (
            &["bench", "--over-provisioning", "0.2"],
            &[],
            "--over-provisioning is an FTL setting; --storage noftl runs on no FTL",
        ),
        (
            &["bench", "--storage", "ftl:dftl", "--log-blocks", "4"],
            &[],
            "--log-blocks is a knob of ftl:bast and ftl:fast",
        ),
        (&["compare", "--storage", "ipl", "--cmt-entries", "4"], &[], "--cmt-entries is an FTL setting; --storage ipl"),
    ];
    for (base, flags, message) in refused {
        let args = [base, *flags].concat();
        let out = deltaflash(&args);
        assert!(!out.status.success(), "{args:?} must be refused");
        assert!(stderr(&out).contains(message), "{args:?}: {}", stderr(&out));
    }
}

#[test]
fn bench_runs_the_engine_without_a_log_with_journal_none() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("none.json");
    ok(&[SHORT_BENCH, &["--journal", "none", "--json", path(&out)]].concat());
    let v = common::json(&out);
    assert_eq!(v["config"]["engine"]["journal"], "none");
    assert_eq!(v["log_page_writes"], 0, "no log, no log pages");
    let refused = deltaflash(&[SHORT_BENCH, &["--journal", "none", "--group-commit-us", "5"]].concat());
    assert!(stderr(&refused).contains("which the none journal does not keep"), "{}", stderr(&refused));
    let refused = deltaflash(&[SHORT_BENCH, &["--journal", "sw-wal"]].concat());
    assert!(stderr(&refused).contains("--journal sw-wal: a journal of SQLite on flash"), "{}", stderr(&refused));
    let refused = deltaflash(&[SHORT_BENCH, &["--journal", "nolgn"]].concat());
    assert!(stderr(&refused).contains("--journal: nolgn is NoLgn-FTL's transactions"), "{}", stderr(&refused));
}

/// `index-bench` takes the FTL flags where its index stands on an FTL, records them in
/// its config, and `rerun` reproduces a run with a knob away from its default.
#[test]
fn index_bench_takes_the_ftl_flags_and_reruns_a_knob() {
    let dir = tempfile::tempdir().unwrap();
    let base = ["index-bench", "--index", "btree", "--inserts", "300", "--queries", "10", "--scans", "1"];
    let spare = round_trip(
        dir.path(),
        "spare.json",
        &[&base[..], &["--storage", "page", "--over-provisioning", "0.3", "--gc", "cost-benefit"]].concat(),
    );
    assert_eq!(
        (spare["config"]["over_provisioning"].as_f64(), spare["config"]["gc"].as_str()),
        (Some(0.3), Some("cost-benefit"))
    );
    let default = dir.path().join("default.json");
    ok(&[&base[..], &["--storage", "page", "--json", path(&default)]].concat());
    let default = common::json(&default);
    assert!(default["config"].get("over_provisioning").is_none(), "no knob given, none recorded: {default}");
    assert!(
        spare["total_blocks"].as_u64() > default["total_blocks"].as_u64(),
        "30% spare takes more blocks than the sized default: {} vs {}",
        spare["total_blocks"],
        default["total_blocks"]
    );
    let logs = round_trip(dir.path(), "logs.json", &[&base[..], &["--storage", "bast", "--log-blocks", "4"]].concat());
    assert_eq!((logs["config"]["log_block_count"].as_u64(), logs["log_blocks"].as_u64()), (Some(4), Some(4)));
    let refused: &[(&[&str], &str)] = &[
        (
            &["--index", "ipl", "--gc", "greedy"],
            "--gc is an FTL setting; --index ipl on --storage native runs on no FTL: btree and bftl run on an FTL",
        ),
        (&["--index", "mutree", "--over-provisioning", "0.2"], "--over-provisioning is an FTL setting"),
        (
            &["--index", "btree", "--storage", "page", "--log-blocks", "4"],
            "--log-blocks is a knob of ftl:bast and ftl:fast",
        ),
        (&["--index", "bftl", "--cmt-entries", "9"], "--cmt-entries is a knob of ftl:dftl; this run's FTL is ftl:fast"),
    ];
    for (flags, message) in refused {
        let out = deltaflash(&[&["index-bench", "--inserts", "300"], *flags].concat());
        assert!(!out.status.success(), "{flags:?} must be refused");
        assert!(stderr(&out).contains(message), "{flags:?}: {}", stderr(&out));
    }
}

/// `sqlite-compare --json`: the resolved config and both systems' results; `rerun`
/// compares what the seed decides and names the wall-clock values it leaves out.
#[test]
fn sqlite_compare_writes_its_config_and_reruns_what_is_deterministic() {
    let dir = tempfile::tempdir().unwrap();
    let args = ["sqlite-compare", "--transactions", "200", "--chips", "4", "--blocks-per-chip", "64", "--seed", "5"];
    let v = round_trip(dir.path(), "sc.json", &args);
    let c = &v["config"];
    assert_eq!((c["scale"].as_u64(), c["transactions"].as_u64(), c["seed"].as_u64()), (Some(1), Some(200), Some(5)));
    assert_eq!((c["buffer"].as_f64(), c["device"]["chips"].as_u64()), (Some(0.1), Some(4)));
    assert_eq!(v["command"], "sqlite-compare");
    assert!(v["sqlite"]["wall_seconds"].as_f64().is_some() && v["deltaflash"]["transactions_per_wall_second"].is_f64());
    assert_eq!(v["sqlite"]["history_rows"], 200, "{v}");
    assert!(
        v["deltaflash"]["flash_programs"].as_u64() > Some(0) && v["deltaflash"]["sim_seconds"].as_f64() > Some(0.0)
    );
    let out = deltaflash(&["rerun", path(&dir.path().join("sc.json"))]);
    let named = stderr(&out);
    assert!(
        named.contains("not compared (wall-clock, memory or build): deltaflash_over_sqlite_per_wall_second")
            && named.contains("transactions_per_wall_second")
            && named.contains("wall_seconds"),
        "{named}"
    );
    // The file is never replaced without --overwrite.
    let again = deltaflash(&[&args[..], &["--json", path(&dir.path().join("sc.json"))]].concat());
    assert!(stderr(&again).contains("the file exists; pass --overwrite"), "{}", stderr(&again));
    ok(&[&args[..], &["--json", path(&dir.path().join("sc.json")), "--overwrite"]].concat());
}

/// The tortures' `--json` summaries: the same seed makes the same cuts at the same
/// points, and `rerun` says so.
#[test]
fn torture_summaries_round_trip_with_the_same_cut_points() {
    let dir = tempfile::tempdir().unwrap();
    let bank = round_trip(
        dir.path(),
        "bank.json",
        &["torture", "--cuts", "8", "--seed", "3", "--accounts", "100", "--transfers", "60"],
    );
    let sqlite = round_trip(
        dir.path(),
        "sqlite.json",
        &[
            "torture",
            "--engine",
            "sqlite",
            "--cuts",
            "8",
            "--seed",
            "3",
            "--accounts",
            "50",
            "--transfers",
            "40",
            "--chips",
            "2",
            "--blocks-per-chip",
            "16",
            "--pages-per-block",
            "16",
        ],
    );
    for (v, engine, storage) in [(&bank, "deltaflash", "noftl"), (&sqlite, "sqlite", "ftl:page")] {
        let c = &v["config"];
        assert_eq!((c["engine"].as_str(), c["storage"].as_str()), (Some(engine), Some(storage)), "{c}");
        assert_eq!(
            (c["seed"].as_u64(), c["cuts"].as_u64(), c["geometry"]["page_bytes"].as_u64()),
            (Some(3), Some(8), Some(4096))
        );
        let points = v["cut_points"].as_array().unwrap();
        assert_eq!(points.len(), 8);
        assert!(points.iter().all(|p| p["operation"].as_u64() > Some(0)), "{points:?}");
        assert_eq!(points.iter().filter(|p| !p["restart_cut"].is_null()).count(), 2, "every fourth restart is cut");
        assert_eq!((v["cuts_made"].as_u64(), v["recoveries"].as_u64()), (Some(8), Some(10)));
        assert_eq!(
            (v["invariant_checks"].as_u64(), v["passed"].as_u64(), v["failed"].as_u64()),
            (Some(8), Some(8), Some(0))
        );
        assert!(v["first_failure"].is_null() && v["acknowledged_transfers"].as_u64() > Some(0), "{v}");
    }
    assert_eq!(sqlite["config"]["journal"], "base-wal");
    assert_eq!(bank["config"]["ipa"], "2x4");
    // The FTL flags apply to the torture's FTL, and are refused where there is none.
    let dftl = round_trip(
        dir.path(),
        "dftl.json",
        &[
            "torture",
            "--storage",
            "ftl:dftl",
            "--cmt-entries",
            "64",
            "--over-provisioning",
            "0.3",
            "--cuts",
            "4",
            "--accounts",
            "100",
            "--transfers",
            "60",
        ],
    );
    let ftl = &dftl["config"]["ftl"];
    assert_eq!((ftl["cmt_entries"].as_u64(), ftl["over_provisioning"].as_f64()), (Some(64), Some(0.3)), "{ftl}");
    let args = ["torture", "--engine", "sqlite", "--sqlite-ftl", "dftl", "--cmt-entries", "50", "--cuts", "2"];
    let out = dir.path().join("sqlite-dftl.json");
    ok(&[&args[..], &["--accounts", "50", "--transfers", "40", "--json", path(&out)]].concat());
    assert_eq!(common::json(&out)["config"]["ftl"]["cmt_entries"], 50);
    let refused = deltaflash(&["torture", "--gc", "greedy", "--cuts", "1"]);
    assert!(
        stderr(&refused).contains("--gc is an FTL setting; --storage noftl runs on no FTL"),
        "{}",
        stderr(&refused)
    );
    let refused = deltaflash(&["torture", "--storage", "ftl:page", "--log-blocks", "4", "--cuts", "1"]);
    assert!(stderr(&refused).contains("--log-blocks is a knob of ftl:bast and ftl:fast"), "{}", stderr(&refused));
}

/// `compare --engines` with SQLite: each result carries its resolved config (SQLite's
/// as a `bench --engine sqlite` run) and `rerun` reproduces each.
#[test]
fn a_compare_of_engines_with_sqlite_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("engines.json");
    let args = ["compare", "--engines", "deltaflash:0x0,sqlite", "--blocks-per-chip", "48", "--transactions", "60"];
    let out = ok(&[&args[..], &["--seed", "4", "--format", "json", "--jobs", "1"]].concat());
    std::fs::write(&file, &out).unwrap();
    let runs: serde_json::Value = serde_json::from_str(&out).unwrap();
    let sqlite = &runs[1]["result"];
    assert_eq!((sqlite["command"].as_str(), sqlite["config"]["engine"].as_str()), (Some("bench"), Some("sqlite")));
    assert_eq!(sqlite["config"]["run"]["cache_share"], 0.1, "the engine's buffer share, as SQLite's page cache");
    assert_eq!(sqlite["config"]["workload"]["transactions"], 60);
    assert!(sqlite["cache"]["cache_pages"].as_u64() > Some(0), "{sqlite}");
    let out = ok(&["rerun", path(&file)]);
    assert_eq!(out.matches("identical").count(), 2, "{out}");
    // The FTL flags apply to SQLite's FTL as to the engine's.
    let spare = ["--storage", "ftl:page", "--over-provisioning", "0.2", "--format", "json", "--jobs", "1"];
    let out = ok(&[&args[..], &spare[..]].concat());
    let runs: serde_json::Value = serde_json::from_str(&out).unwrap();
    for run in runs.as_array().unwrap() {
        let storage = &run["result"]["config"]["storage"]["ftl"];
        assert_eq!(
            (storage["kind"].as_str(), storage["over_provisioning"].as_f64()),
            (Some("page"), Some(0.2)),
            "{run}"
        );
    }
}

/// `bench --engine sqlite --host-stack ext4`: the Ext4 host stack model on flash,
/// recorded in the config and re-run from it; refused without flash.
#[test]
fn bench_sqlite_selects_the_host_stack() {
    let dir = tempfile::tempdir().unwrap();
    let args = ["bench", "--engine", "sqlite", "--num", "40", "--value-size", "256", "--storage", "ftl:page"];
    let args = [&args[..], &["--chips", "2", "--blocks-per-chip", "64"]].concat();
    let ext4 = round_trip(dir.path(), "ext4.json", &[&args[..], &["--host-stack", "ext4"]].concat());
    let none = round_trip(dir.path(), "none.json", &args);
    assert_eq!(
        (ext4["config"]["host_stack"].as_str(), none["config"]["host_stack"].as_str()),
        (Some("ext4"), Some("none"))
    );
    assert!(
        ext4["sim_seconds"].as_f64() > none["sim_seconds"].as_f64()
            && ext4["flash"]["flash_programs"].as_u64() > none["flash"]["flash_programs"].as_u64(),
        "system calls and journal commits cost time and programs: {} vs {}",
        ext4["sim_seconds"],
        none["sim_seconds"]
    );
    let refused = deltaflash(&["bench", "--engine", "sqlite", "--num", "40", "--host-stack", "ext4"]);
    assert!(stderr(&refused).contains("--host-stack: applies to SQLite on flash"), "{}", stderr(&refused));
    let refused = deltaflash(&["bench", "--host-stack", "ext4"]);
    assert!(stderr(&refused).contains("--host-stack is a setting of SQLite runs"), "{}", stderr(&refused));
}

#[test]
fn bench_sqlite_keeps_clean_pages_unless_told_not_to() {
    let dir = tempfile::tempdir().unwrap();
    // Past one WAL checkpoint (1,000 frames), so frames are rewritten after it.
    let args = ["bench", "--engine", "sqlite", "--num", "1500", "--value-size", "256", "--storage", "ftl:page"];
    let args = [&args[..], &["--sync", "normal", "--chips", "2", "--blocks-per-chip", "64"]].concat();
    let kept = round_trip(dir.path(), "kept.json", &args);
    let none = round_trip(dir.path(), "none.json", &[&args[..], &["--clean-cache-pages", "0"]].concat());
    assert_eq!(
        (kept["config"]["clean_cache_pages"].as_u64(), none["config"]["clean_cache_pages"].as_u64()),
        (Some(16_384), Some(0))
    );
    let reads = |v: &serde_json::Value| v["flash"]["host_reads"].as_u64().unwrap();
    assert!(
        reads(&none) > reads(&kept),
        "without clean pages the rewritten frames are read from flash: {} vs {}",
        reads(&none),
        reads(&kept)
    );
    let refused = deltaflash(&["bench", "--engine", "sqlite", "--num", "40", "--clean-cache-pages", "0"]);
    assert!(stderr(&refused).contains("--clean-cache-pages: applies to SQLite on flash"), "{}", stderr(&refused));
}
