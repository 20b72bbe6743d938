//! `bench`, `compare` and `check` refuse bad input before running anything, each time
//! naming the flag (or the config file's field and position) and the allowed range;
//! `compare --format markdown` writes a markdown table with its legend and nothing else.

mod common;
use common::{deltaflash, stderr, FOUR_CHIPS, SHORT_RUN};

/// (arguments, what the error must contain: the flag, then the range or the problem).
const REFUSED: &[(&[&str], &[&str])] = &[
    (&["bench", "--sim-time", "0"], &["--sim-time", "(0, 1000000000]"]),
    (&["bench", "--sim-time", "-1"], &["--sim-time", "(0, 1000000000]", "got -1"]),
    (&["bench", "--sim-time", "NaN"], &["--sim-time", "(0, 1000000000]"]),
    (&["bench", "--sim-time", "1e400"], &["--sim-time", "got inf"]),
    (&["bench", "--sim-time", "5e9"], &["--sim-time", "(0, 1000000000]"]),
    (&["bench", "--warmup", "-0.5"], &["--warmup", "[0, 1000000000]"]),
    (&["bench", "--terminals", "0"], &["--terminals", "1..=65536"]),
    (&["bench", "--terminals", "-2"], &["--terminals", "1..=65536"]),
    (&["bench", "--workload", "tpcc", "--warehouses", "0"], &["--warehouses", "at least 1"]),
    (&["bench", "--scale", "0"], &["--scale", "at least 1"]),
    (&["bench", "--workload", "tatp", "--subscribers", "0"], &["--subscribers", "at least 1"]),
    (&["bench", "--buffer", "0"], &["--buffer", "(0, 1]"]),
    (&["bench", "--buffer", "-0.1"], &["--buffer", "(0, 1]"]),
    (&["bench", "--buffer", "1.01"], &["--buffer", "(0, 1]"]),
    (&["bench", "--v", "-1"], &["--v", "0..=125"]),
    (&["bench", "--v", "200"], &["--v", "0..=125"]),
    (&["bench", "--checkpoint-log-share", "1"], &["--checkpoint-log-share", "(0, 1)"]),
    (&["bench", "--checkpoint-log-share", "0"], &["--checkpoint-log-share", "(0, 1)"]),
    (&["bench", "--group-commit-us", "-1"], &["--group-commit-us", "[0, 1000000]"]),
    (&["bench", "--group-commit-us", "inf"], &["--group-commit-us", "[0, 1000000]"]),
    (&["bench", "--log-buffer-bytes", "-1"], &["--log-buffer-bytes", "0..=1073741824", "got -1"]),
    (&["bench", "--log-buffer-bytes", "2GiB"], &["--log-buffer-bytes", "not a whole number"]),
    (&["bench", "--log-buffer-bytes", "2147483648"], &["--log-buffer-bytes", "0..=1073741824"]),
    (
        &["bench", "--storage", "ftl:nolgn", "--group-commit-us", "100"],
        &["--group-commit-us", "does not keep on NoLgn-FTL"],
    ),
    (
        &["bench", "--storage", "ftl:nolgn", "--log-buffer-bytes", "0"],
        &["--log-buffer-bytes", "does not keep on NoLgn-FTL"],
    ),
    (&["bench", "--cpu-us", "-1"], &["--cpu-us", "[0, 1000000]"]),
    (&["bench", "--cpu-us", "nan"], &["--cpu-us", "[0, 1000000]"]),
    (&["bench", "--progress", "-1"], &["--progress", "[0, 1000000000]"]),
    (&["bench", "--log-chips", "0"], &["--log-chips", "at least 1"]),
    (&["bench", "--log-chips", "15"], &["--log-chips", "1..=14 on this device"]),
    (&["bench", "--workload", "tpcc", "--mix", "1,2"], &["--mix", "length 5"]),
    (&["bench", "--workload", "tpcc", "--mix", "0,0,0,0,0"], &["--mix", "sum to 0"]),
    (&["bench", "--workload", "tpcc", "--mix", "101,0,0,0,0"], &["--mix", "0..=100"]),
    (&["bench", "--warehouses", "2"], &["--warehouses", "tpcb takes no parameter"]),
    (&["bench", "--param", "depth=3"], &["--param depth", "tpcb takes no parameter"]),
    (&["bench", "--workload", "tpcd"], &["--workload", "tpcb, tpcc, tatp"]),
    (&["bench", "--ipa", "2y4"], &["--ipa", "not an IPA scheme"]),
    (&["bench", "--ipa-objects", "nosuch"], &["--ipa-objects", "has no table nosuch"]),
    (&["bench", "--seed", "-1"], &["--seed"]),
    (&["compare", "--sim-time", "0"], &["--sim-time", "(0, 1000000000]"]),
    (&["compare", "--terminals", "0"], &["--terminals", "1..=65536"]),
    (&["compare", "--schemes", "0x0,2x"], &["--schemes", "not an IPA scheme"]),
    (&["compare", "--buffer", "2"], &["--buffer", "(0, 1]"]),
    (&["check", "--image", "no.img", "--warehouses", "0"], &["--warehouses", "at least 1"]),
    (&["check", "--image", "no.img", "--workload", "tpcb", "--warehouses", "1"], &["--warehouses", "tpcb takes"]),
];

#[test]
fn bad_values_are_refused_naming_the_flag_and_the_range() {
    for (args, needles) in REFUSED {
        let out = deltaflash(args);
        let err = stderr(&out);
        assert!(!out.status.success(), "{args:?} accepted");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        for needle in *needles {
            assert!(err.contains(needle), "{args:?}: `{needle}` missing from: {err}");
        }
    }
}

#[test]
fn a_config_file_error_names_the_file_position_or_field() {
    let dir = tempfile::tempdir().unwrap();
    let file = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path.to_str().unwrap().to_string()
    };
    let malformed = file("malformed.toml", "seed = 1\n[driver]\nterminals = 8\nwarmup_s = = 2\n");
    let err = stderr(&deltaflash(&["bench", "--config", &malformed]));
    assert!(err.contains("malformed.toml:4:"), "{err}");
    let typo = file("typo.toml", "[driver]\nsim_time = 5\n");
    let err = stderr(&deltaflash(&["bench", "--config", &typo]));
    assert!(err.contains("typo.toml:2:1: unknown field `sim_time`"), "{err}");
    let range = file("range.toml", "[driver]\nsim_time_s = 0\n");
    let err = stderr(&deltaflash(&["bench", "--config", &range]));
    assert!(err.contains("driver.sim_time_s in ") && err.contains("range.toml: must be in (0,"), "{err}");
    let out = deltaflash(&["bench", "--config", &range, "--device", "femu"]);
    assert!(stderr(&out).contains("'--config <FILE>' cannot be used with '--device <DEVICE>'"), "{}", stderr(&out));
}

#[test]
fn help_lists_every_registered_workload() {
    let help = String::from_utf8_lossy(&deltaflash(&["bench", "--help"]).stdout).into_owned();
    for w in workloads::registry::REGISTRY {
        // clap pads the names to the longest one.
        let listed = help
            .lines()
            .any(|l| l.trim().strip_prefix(&format!("- {}:", w.name)).is_some_and(|rest| rest.trim_start() == w.about));
        assert!(listed, "{} missing from:\n{help}", w.name);
    }
    assert!(!help.contains("TPC-B only") && !help.contains("(TPC-B)"), "{help}");
}

#[test]
fn a_schema_without_the_ipa_placeholder_cannot_compare_schemes() {
    let dir = tempfile::tempdir().unwrap();
    let schema = dir.path().join("fixed.sql");
    std::fs::write(&schema, "CREATE REGION r (IPA_MODE=slc, IPA=2x4);\nCREATE TABLESPACE ts_data (REGION=r);\n")
        .unwrap();
    let out = deltaflash(&["compare", "--schemes", "0x0,2x4", "--schema", schema.to_str().unwrap()]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("fixed.sql has no ${IPA} placeholder"), "{err}");
    assert!(out.stdout.is_empty(), "nothing ran");
}

/// A small TATP database (on four chips: a compare of two schemes in seconds).
const TATP: &[&str] = &["--workload", "tatp", "--subscribers", "2000"];

#[test]
fn compare_markdown_is_one_table_and_its_legend() {
    let out = deltaflash(
        &[&["compare", "--schemes", "0x0,2x4", "--check", "--format", "markdown"], TATP, FOUR_CHIPS, SHORT_RUN]
            .concat(),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout.clone()).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let table: Vec<Vec<&str>> = lines
        .iter()
        .take_while(|l| l.starts_with('|'))
        .map(|l| l.trim_matches('|').split('|').map(str::trim).collect())
        .collect();
    assert_eq!(table[0], ["metric", "[0x0]", "[2x4]", "[2x4] Δ%"], "{text}");
    assert!(table[1].iter().all(|c| *c == "---"), "separator: {text}");
    assert!(table.iter().all(|row| row.len() == 4), "every row has every column: {text}");
    let throughput = table.iter().find(|r| r[0] == "Throughput [tps]").unwrap();
    assert!(throughput[1].parse::<f64>().unwrap() > 0.0 && throughput[3].starts_with(['+', '-']), "{throughput:?}");
    // After the table: one blank line and the legend, nothing else.
    let rest = &lines[table.len()..];
    assert_eq!(rest.len(), 2, "{text}");
    assert!(rest[0].is_empty() && rest[1].contains("`[NxM] Δ%`") && rest[1].contains("baseline [0x0]"), "{text}");
    // The logs and the check lines, each naming its scheme, went to stderr.
    let err = stderr(&out);
    for scheme in ["[0x0]", "[2x4]"] {
        assert!(err.contains(&format!("{scheme} consistency check passed")), "{err}");
        assert!(err.contains(&format!("loaded tatp (2000 subscribers) for {scheme}")), "{err}");
    }
}
