//! The `deltaflash` binary end to end, on small devices.

mod common;
use common::{checked_bench_json, deltaflash, json_without, ok, stderr, BENCH_WALL_FIELDS, FOUR_CHIPS, SMALL};
use std::path::Path;

/// An `ftl-bench` JSON without its wall-time fields.
fn json_without_wall_time(path: &Path) -> serde_json::Value {
    json_without(
        path,
        &[
            "wall_seconds",
            "host_writes_per_wall_second",
            "flash_programs_per_wall_second",
            "memory_peak_rss_bytes",
            "memory_device_bytes",
            "memory_mapping_bytes",
            "memory_peak_rss_per_device_byte",
            "memory_peak_rss_per_kept_byte",
        ],
    )
}

#[test]
fn ftl_bench_same_seed_same_json_and_required_fields() {
    let dir = tempfile::tempdir().unwrap();
    let run = |name: &str, seed: &str| {
        let path = dir.path().join(name);
        let mut args = vec!["ftl-bench", "--writes", "20000", "--delta-share", "0.3", "--seed", seed, "--json"];
        let p = path.to_str().unwrap().to_string();
        args.push(&p);
        args.extend_from_slice(SMALL);
        let out = deltaflash(&args);
        assert!(out.status.success(), "{}", stderr(&out));
        assert!(stderr(&out).contains("warming up"), "says it warms up");
        json_without_wall_time(&path)
    };
    let a = run("a.json", "7");
    let b = run("b.json", "7");
    assert_eq!(a, b);
    let c = run("c.json", "8");
    assert_ne!(a, c, "another seed gives another run");
    for key in [
        "host_writes",
        "host_write_deltas",
        "gc_page_migrations",
        "gc_erases",
        "write_amplification",
        "erases_per_host_write",
        "sim_seconds",
    ] {
        assert!(a.get(key).is_some(), "{key} missing");
    }
    assert!(a["host_write_deltas"].as_u64().unwrap() > 0);
    assert!(a["gc_erases"].as_u64().unwrap() > 0, "GC is in steady state");
    let wa = a["write_amplification"].as_f64().unwrap();
    assert!(wa > 1.0, "write amplification {wa}");
}

#[test]
fn no_data_mode_counts_the_same_as_data_mode() {
    let dir = tempfile::tempdir().unwrap();
    let run = |name: &str, extra: &[&str]| {
        let path = dir.path().join(name);
        let p = path.to_str().unwrap().to_string();
        let mut args = vec!["ftl-bench", "--writes", "20000", "--pattern", "zipf", "--json", &p];
        args.extend_from_slice(SMALL);
        args.extend_from_slice(extra);
        let out = deltaflash(&args);
        assert!(out.status.success(), "{}", stderr(&out));
        let mut v = json_without_wall_time(&path);
        v.as_object_mut().unwrap().remove("config");
        v
    };
    assert_eq!(run("data.json", &[]), run("nodata.json", &["--no-data"]));
}

#[test]
fn replay_reports_malformed_lines_and_runs_good_traces() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.trace");
    std::fs::write(&bad, "# a trace\nW 1\nD 1 4000\n").unwrap();
    let mut args = vec!["replay", "--trace", bad.to_str().unwrap()];
    args.extend_from_slice(SMALL);
    let out = deltaflash(&args);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("bad.trace:3: missing len"), "{}", stderr(&out));

    let good = dir.path().join("good.trace");
    std::fs::write(&good, "W 1\nD 1 4000 8\nD 1 4008 8\nR 1\nT 1\nR 1\nR 2\n").unwrap();
    let json = dir.path().join("r.json");
    let mut args = vec!["replay", "--trace", good.to_str().unwrap(), "--json", json.to_str().unwrap()];
    args.extend_from_slice(SMALL);
    let out = deltaflash(&args);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["host_writes"], 1);
    assert_eq!(v["host_write_deltas"], 2);
    assert_eq!(v["host_reads"], 1);
    assert_eq!(v["host_trims"], 1);

    let far = dir.path().join("far.trace");
    std::fs::write(&far, "W 99999999\n").unwrap();
    let mut args = vec!["replay", "--trace", far.to_str().unwrap()];
    args.extend_from_slice(SMALL);
    let out = deltaflash(&args);
    assert!(stderr(&out).contains("far.trace:1: lpn 99999999 is beyond"), "{}", stderr(&out));
}

#[test]
fn image_then_inspect() {
    let dir = tempfile::tempdir().unwrap();
    let image = dir.path().join("dev.img");
    let mut args = vec!["ftl-bench", "--writes", "5000", "--warmup", "0", "--image", image.to_str().unwrap()];
    args.extend_from_slice(SMALL);
    let out = deltaflash(&args);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = deltaflash(&["inspect", image.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    for needle in ["region bench", "valid pages", "wear histogram", "logical pages", "page states per chip of bench"] {
        assert!(text.contains(needle), "{needle} missing in:\n{text}");
    }
    std::fs::write(&image, b"garbage, certainly not a device image").unwrap();
    let out = deltaflash(&["inspect", image.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("not a DeltaFlash device image"), "{}", stderr(&out));
}

#[test]
fn bad_flags_are_named() {
    let out = deltaflash(&["ftl-bench", "--device", "floppy"]);
    assert!(stderr(&out).contains("unknown device preset `floppy`"), "{}", stderr(&out));
    let out = deltaflash(&["ftl-bench", "--over-provisioning", "1.5"]);
    assert!(stderr(&out).contains("'1.5' for '--over-provisioning"), "{}", stderr(&out));
    let out = deltaflash(&["ftl-bench", "--gc", "lru"]);
    assert!(stderr(&out).contains("unknown GC policy `lru`"), "{}", stderr(&out));
    let out = deltaflash(&["ftl-bench", "--ipa-mode", "pslc"]);
    assert!(stderr(&out).contains("IPA mode pslc needs MLC or TLC cells"), "{}", stderr(&out));
    let out = deltaflash(&["ftl-bench", "--help"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("Spare factor (physical − logical) / physical"));
}

#[test]
fn sql_creates_queries_reopens_and_shows_ipa_at_work() {
    let dir = tempfile::tempdir().unwrap();
    let image = dir.path().join("db.img");
    let image = image.to_str().unwrap();
    let schema = dir.path().join("schema.sql");
    let mut text = String::from(
        "CREATE REGION rgIPA (MAX_CHIPS=2, IPA_MODE=SLC, IPA=2x4, V=4);\n\
         CREATE TABLESPACE tsIPA (REGION=rgIPA, EXTENT SIZE 128K);\n\
         CREATE TABLE acct (id INT PRIMARY KEY, bal BIGINT, name CHAR(40)) TABLESPACE tsIPA;\n\
         CREATE INDEX acct_bal ON acct(bal) TABLESPACE tsIPA;\n",
    );
    for i in 0..400 {
        text += &format!("INSERT INTO acct VALUES ({i}, 100, 'holder {i}');\n");
    }
    std::fs::write(&schema, text).unwrap();
    let mut args = vec!["sql", "--image", image, schema.to_str().unwrap()];
    args.extend_from_slice(SMALL);
    let out = deltaflash(&args);
    assert!(out.status.success(), "{}", stderr(&out));

    let mut updates = String::new();
    for round in 0..3 {
        for i in (0..400).step_by(37) {
            updates += &format!("UPDATE acct SET bal = bal + {} WHERE id = {i};\n", round + 1);
        }
    }
    updates += ".stats\nSELECT id, bal, name FROM acct WHERE id BETWEEN 37 AND 38;\n.schema\n";
    let script = dir.path().join("updates.sql");
    std::fs::write(&script, updates).unwrap();
    let out = deltaflash(&["sql", "--image", image, "--buffer-pages", "8", script.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let acct = stdout.lines().find(|l| l.trim_start().starts_with("acct ")).expect("stats row for acct");
    let cells: Vec<&str> = acct.split_whitespace().collect();
    let appends: u64 = cells[6].parse().unwrap();
    assert!(appends > 0, "no in-place appends: {acct}");
    assert!(stdout.contains("37  106  holder 37"), "{stdout}");
    assert!(stdout.contains("CREATE INDEX acct_bal ON acct (bal) TABLESPACE tsIPA;"));

    let out = deltaflash(&["sql", "--image", image, "-e", "SELECT * FROM acct WHERE bal = 999"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("(0 rows)"));
    let out = deltaflash(&["sql", "--image", image, "-e", "SELECT * FROM acct WHERE\n  id > 3"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("line 2, column 6: expected `=` or BETWEEN (at `>`)"), "{}", stderr(&out));
    let out = deltaflash(&["sql", "-e", "SELECT 1"]);
    assert!(stderr(&out).contains("needs --image"), "{}", stderr(&out));
}

#[test]
fn torture_reports_every_cut_and_a_summary() {
    let out = deltaflash(&["torture", "--cuts", "12", "--seed", "5", "--accounts", "500", "--transfers", "300"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(stdout.lines().last(), Some("12 passed, 0 failed"), "{stdout}");
    assert!(stdout.contains("cuts hit:"), "{stdout}");
    let bad = deltaflash(&["torture", "--cuts", "1", "--ipa", "2y4"]);
    assert!(!bad.status.success());
    assert!(stderr(&bad).contains("2y4"), "{}", stderr(&bad));
    // The log-block FTLs run on torture's default device too (it once had too few blocks).
    for storage in ["ftl:bast", "ftl:fast"] {
        let out = deltaflash(&["torture", "--cuts", "3", "--seed", "5", "--storage", storage, "--transfers", "200"]);
        assert!(out.status.success(), "{storage}: {}", stderr(&out));
    }
}

/// Room for TPC-B at scale 1 (about 15 MiB) in a two-chip data region.
const TPCB_DEVICE: &[&str] = &["--chips", "4", "--blocks-per-chip", "96", "--pages-per-block", "64"];

#[test]
fn bench_same_seed_same_json_and_compare_renders() {
    let dir = tempfile::tempdir().unwrap();
    let run = |name: &str| {
        checked_bench_json(&dir.path().join(name), &[&["--sim-time", "2", "--warmup", "1"], TPCB_DEVICE].concat())
    };
    let a = run("a.json");
    for key in [
        "host_reads",
        "host_writes",
        "out_of_place_writes",
        "in_place_appends",
        "gc_page_migrations",
        "gc_erases",
        "gc_migrations_per_host_write",
        "gc_erases_per_host_write",
        "read_latency_ms",
        "write_latency_ms",
        "throughput_tps",
        "dbms_write_amplification",
        "space_overhead_pct",
        "sim_seconds",
        "transactions",
        "objects",
        "intervals",
    ] {
        assert!(a.get(key).is_some(), "{key} missing from the bench JSON");
    }
    assert!(a["transactions"].as_u64().unwrap() > 0);
    assert_eq!(a, run("b.json"), "same seed, same metrics");

    let mut args = vec!["compare", "--schemes", "0x0,2x4", "--sim-time", "1", "--warmup", "0.5"];
    args.extend_from_slice(TPCB_DEVICE);
    let out = deltaflash(&args);
    assert!(out.status.success(), "{}", stderr(&out));
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(table.contains("| metric | [0x0] | [2x4] | [2x4] Δ% |"), "{table}");
    assert!(table.contains("| Out-of-place : IPA | – |"), "{table}");
    let bad = deltaflash(&["bench", "--ipa-objects", "nosuch", "--sim-time", "1"]);
    assert!(stderr(&bad).contains("has no table nosuch"), "{}", stderr(&bad));
}

#[test]
fn bench_schema_places_tables_and_reports_where_time_goes() {
    let dir = tempfile::tempdir().unwrap();
    let schema = dir.path().join("schema.sql");
    std::fs::write(
        &schema,
        "CREATE REGION hot (${IPA}, MAX_CHIPS=1);\nCREATE TABLESPACE ts_data (REGION=hot);\n\
         CREATE REGION cold (IPA_MODE=none);\nCREATE TABLESPACE ts_history (REGION=cold);\n",
    )
    .unwrap();
    let json = dir.path().join("run.json");
    let mut args = vec!["bench", "--sim-time", "2", "--warmup", "1", "--ipa", "2x4", "--log-chips", "1"];
    args.extend_from_slice(&["--schema", schema.to_str().unwrap(), "--json", json.to_str().unwrap()]);
    args.extend_from_slice(TPCB_DEVICE);
    let out = deltaflash(&args);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("% full)"), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let object = |name: &str| v["objects"].as_array().unwrap().iter().find(|o| o["name"] == name).unwrap().clone();
    // History sits in the region without IPA; the account table appends in place.
    assert_eq!(object("history")["in_place_appends"], 0);
    assert!(object("account")["in_place_appends"].as_u64().unwrap() > 0);
    let t = &v["time_per_transaction_ms"];
    let part = |k: &str| t[k].as_f64().unwrap();
    assert!(part("commits") > 0.0 && part("reads") > 0.0, "{t}");
    let named = part("reads") + part("evictions") + part("commits") + part("checkpoints");
    assert!(named <= part("response") + 1e-9, "{t}");
    assert!(v["database_mib"].as_f64().unwrap() > 0.0);

    std::fs::write(&schema, "CREATE REGION hot (${IPA};\n").unwrap();
    let mut args = vec!["compare", "--sim-time", "1", "--schema", schema.to_str().unwrap()];
    args.extend_from_slice(TPCB_DEVICE);
    let bad = deltaflash(&args);
    assert!(!bad.status.success());
    assert!(stderr(&bad).contains("schema.sql: line 1"), "{}", stderr(&bad));
}

/// `--log-buffer-bytes` reaches the engine: with 0, TPC-C's transactions, whose log
/// spans pages, write their full pages ahead of the commit, which moves the log's page
/// programs in time and so changes the run. The JSON's config carries the value (and
/// leaves it out when not given), and a config file with it runs as the flag ran.
#[test]
fn bench_log_buffer_bytes_reaches_the_engine_and_the_config() {
    let dir = tempfile::tempdir().unwrap();
    let run = |name: &str, extra: &[&str]| {
        let path = dir.path().join(name);
        let tpcc = ["bench", "--workload", "tpcc", "--warehouses", "1", "--blocks-per-chip", "64", "--seed", "5"];
        ok(&[&tpcc[..], &["--sim-time", "0.5", "--warmup", "0.2", "--json", path.to_str().unwrap()], extra].concat());
        let mut v = json_without(&path, &BENCH_WALL_FIELDS);
        let config = v.as_object_mut().unwrap().remove("config").unwrap();
        (config, v)
    };
    let (config, default) = run("default.json", &[]);
    assert!(config["engine"].get("log_buffer_bytes").is_none(), "{config}");
    let (config, ahead) = run("ahead.json", &["--log-buffer-bytes", "0"]);
    assert_eq!(config["engine"]["log_buffer_bytes"], 0, "{config}");
    assert_ne!(ahead, default, "writing the log ahead changes the run");
    let file = dir.path().join("ahead-config.json");
    std::fs::write(&file, config.to_string()).unwrap();
    let again = run("again.json", &["--config", file.to_str().unwrap()]);
    assert_eq!(again, (config, ahead), "the config file runs as the flag did");
}

/// `bench --eviction innodb` runs MySQL InnoDB's page cleaner (from 75% of the frames
/// dirty), records it in the config, and writes fewer pages than Shore-MT's eager one;
/// `shore-non-eager`, Shore-MT's cleaner at the same threshold, writes the same pages.
#[test]
fn bench_eviction_innodb_reaches_the_engine_and_the_config() {
    let dir = tempfile::tempdir().unwrap();
    let run = |name: &str, eviction: &str| {
        let path = dir.path().join(name);
        let tpcb = ["bench", "--workload", "tpcb", "--blocks-per-chip", "32", "--buffer", "0.5", "--seed", "3"];
        ok(&[
            &tpcb[..],
            &["--sim-time", "1", "--warmup", "0.2", "--eviction", eviction, "--json", path.to_str().unwrap()],
        ]
        .concat());
        json_without(&path, &BENCH_WALL_FIELDS)
    };
    let (innodb, eager) = (run("innodb.json", "innodb"), run("eager.json", "eager"));
    assert_eq!(innodb["config"]["engine"]["eviction"], "innodb", "{}", innodb["config"]);
    let per_tx = |v: &serde_json::Value| v["host_writes"].as_f64().unwrap() / v["transactions"].as_f64().unwrap();
    assert!(per_tx(&innodb) < per_tx(&eager), "a later cleaner writes fewer pages per transaction");
    let shore = run("shore.json", "shore-non-eager");
    assert_eq!(shore["config"]["engine"]["eviction"], "shore-non-eager", "{}", shore["config"]);
    assert_eq!(shore["host_writes"], innodb["host_writes"], "the same cleaner at 75%");
}

/// `bench` prints a latency row per transaction type under the transactions' row, with
/// the counts and percentiles its JSON holds in `transaction_latency_us_by_type`.
#[test]
fn bench_prints_and_records_latency_per_transaction_type() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tpcc.json");
    let tpcc = ["bench", "--workload", "tpcc", "--warehouses", "1", "--blocks-per-chip", "64", "--seed", "5"];
    let out = ok(&[&tpcc[..], &["--sim-time", "0.5", "--warmup", "0.2", "--json", path.to_str().unwrap()]].concat());
    let v = common::json(&path);
    let by_type = v["transaction_latency_us_by_type"].as_object().unwrap();
    assert_eq!(by_type.len(), 5, "{by_type:?}");
    let lines: Vec<&str> = out.lines().collect();
    let overall = lines.iter().position(|l| l.trim_start().starts_with("transaction ")).expect("a transaction row");
    for (row, (kind, p)) in lines[overall + 1..].iter().zip(by_type) {
        let cells: Vec<&str> = row.split_whitespace().collect();
        let want = [kind.clone(), p["count"].to_string(), format!("{:.1}", p["p50"].as_f64().unwrap())];
        assert_eq!(cells[..3], want, "{out}");
    }
}

/// A device too small for the database stops the bench with what ran out and what to
/// change, during loading and during the run.
#[test]
fn bench_on_a_full_device_says_how_far_it_got_and_what_to_change() {
    let tpcc = ["bench", "--workload", "tpcc", "--warehouses", "1", "--buffer", "0.1", "--warmup", "0"];
    let out = deltaflash(&[&tpcc[..], &["--blocks-per-chip", "48", "--sim-time", "1"]].concat());
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("loading stopped") && err.contains("--blocks-per-chip, now 48"), "{err}");
    assert!(err.contains("load a smaller database"), "{err}");
    let out = deltaflash(&[&tpcc[..], &["--blocks-per-chip", "64", "--sim-time", "300"]].concat());
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("the run stopped after") && err.contains("no free extent"), "{err}");
    assert!(err.contains("run for less simulated time"), "{err}");
}

#[test]
fn a_host_queue_depth_of_one_serialises_reads() {
    let dir = tempfile::tempdir().unwrap();
    let read_latency = |depth: &str| {
        let path = dir.path().join(format!("qd{depth}.json"));
        let args = [
            "bench",
            "--device",
            "openssd-mlc",
            "--blocks-per-chip",
            "32",
            "--host-queue-depth",
            depth,
            "--sim-time",
            "1",
            "--warmup",
            "0.5",
            "--json",
            path.to_str().unwrap(),
        ];
        let out = deltaflash(&args);
        assert!(out.status.success(), "{}", stderr(&out));
        let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        v["read_latency_ms"].as_f64().unwrap()
    };
    // Eight terminals' reads queue behind each other when only one is served at a time.
    let (serial, parallel) = (read_latency("1"), read_latency("0"));
    assert!(serial > 1.5 * parallel, "one at a time {serial} ms, no limit {parallel} ms");

    let image = dir.path().join("board.img");
    let mut args = vec!["ftl-bench", "--device", "openssd-mlc", "--writes", "100", "--warmup", "0"];
    args.extend_from_slice(&["--blocks-per-chip", "32", "--image", image.to_str().unwrap()]);
    let out = deltaflash(&args);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = deltaflash(&["inspect", image.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stdout);
    let row = text.lines().find(|l| l.contains("host queue depth")).unwrap_or_else(|| panic!("no depth in:\n{text}"));
    assert_eq!(row.split_whitespace().last(), Some("1"), "{row}");
}

/// Every subcommand that prints, its standard output a pipe whose reader is gone (as
/// in `deltaflash … | head -1`): no panic (exit status 101, "panicked"), and the files
/// it writes are still written. `serve` is left out: it serves until stopped.
#[test]
fn every_command_survives_a_closed_standard_output() {
    let dir = tempfile::tempdir().unwrap();
    let at = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    let (image, db_image, trace, grid) = (at("dev.img"), at("db.img"), at("t.trace"), at("grid.toml"));
    std::fs::write(&trace, "W 1\nR 1\n").unwrap();
    std::fs::write(
        &grid,
        "[base]\nseed = 2\n[base.workload]\nname = \"tatp\"\nsubscribers = 1000\n[base.device]\nchips = 4\n\
         blocks_per_chip = 64\npages_per_block = 64\n[base.driver]\nsim_time_s = 0.2\nwarmup_s = 0.1\n\
         [grid]\n\"engine.ipa\" = [\"0x0\"]\n",
    )
    .unwrap();
    ok(&[&["ftl-bench", "--writes", "200", "--warmup", "0", "--image", &image], SMALL].concat());
    let tatp = ["--workload", "tatp", "--subscribers", "1000", "--sim-time", "0.2", "--warmup", "0.1"];
    let tatp: Vec<&str> = [&tatp[..], FOUR_CHIPS].concat();
    ok(&[&["bench", "--image", &db_image], &tatp[..]].concat());
    let json = at("bench.json");
    let commands: Vec<Vec<&str>> = vec![
        vec!["--help"],
        [&["ftl-bench", "--writes", "200", "--warmup", "0"], SMALL].concat(),
        [&["replay", "--trace", &trace], SMALL].concat(),
        vec!["sql", "-c", "SELECT 1;"],
        vec!["sqlite", "-c", "SELECT hex(zeroblob(40000));"],
        [&["bench", "--json", &json], &tatp[..]].concat(),
        vec!["bench", "--engine", "sqlite", "--num", "50"],
        [&["compare", "--schemes", "0x0,2x4"], &tatp[..]].concat(),
        [&["advise"], &tatp[..]].concat(),
        [&["demo"], &tatp[..]].concat(),
        vec!["check", "--image", &db_image, "--workload", "tatp", "--subscribers", "1000"],
        vec!["sqlite-compare", "--transactions", "10"],
        vec!["engine-bench", "--rows", "500", "--ops", "500"],
        vec!["recovery-bench", "--rows", "500", "--transactions", "10"],
        vec!["torture", "--cuts", "2", "--accounts", "100", "--transfers", "50"],
        vec!["index-bench", "--index", "ipl", "--inserts", "300", "--queries", "10", "--scans", "1"],
        vec!["sweep", "--grid", &grid, "--jobs", "1"],
        vec!["inspect", &image],
    ];
    for args in commands {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_deltaflash"))
            .args(&args)
            .stdin(std::process::Stdio::null())
            .stdout(writer)
            .output()
            .unwrap();
        let err = stderr(&out);
        assert_ne!(out.status.code(), Some(101), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
    assert!(common::json(Path::new(&json))["throughput_tps"].is_number(), "bench wrote its file");
}
