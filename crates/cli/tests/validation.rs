//! Bad command-line values are refused before any work: a non-zero exit and a message
//! that names the flag (and, for ranges, what is allowed). One table row per case.

use std::process::Command;

/// (arguments, text the error must contain).
const CASES: &[(&[&str], &str)] = &[
    // ftl-bench and replay (main.rs)
    (&["ftl-bench", "--writes", "0"], "--writes"),
    (&["ftl-bench", "--writes", "-5"], "--writes"),
    (&["ftl-bench", "--warmup", "-1"], "--warmup"),
    (&["ftl-bench", "--delta-bytes", "0"], "--delta-bytes"),
    (&["ftl-bench", "--delta-bytes", "100000"], "--delta-bytes"),
    (&["ftl-bench", "--delta-share", "0.5", "--delta-bytes", "4000"], "--delta-bytes 4000"),
    (&["ftl-bench", "--delta-share", "1.5"], "--delta-share"),
    (&["ftl-bench", "--delta-share", "NaN"], "--delta-share"),
    (&["ftl-bench", "--hot-share", "-0.1"], "--hot-share"),
    (&["ftl-bench", "--hot-fraction", "2"], "--hot-fraction"),
    (&["ftl-bench", "--theta", "0"], "--theta"),
    (&["ftl-bench", "--theta", "1"], "--theta"),
    (&["ftl-bench", "--theta", "inf"], "--theta"),
    (&["ftl-bench", "--queue-depth", "0"], "--queue-depth"),
    (&["replay", "--trace", "x.trace", "--queue-depth", "0"], "--queue-depth"),
    // the shared device and region flags (setup.rs)
    (&["ftl-bench", "--chips", "0"], "--chips"),
    (&["ftl-bench", "--chips", "17"], "--chips: must be in 1..=16 on the paper-emulator preset"),
    (&["ftl-bench", "--device", "ipl-slc", "--chips", "2"], "--chips: must be in 1..=1 on the ipl-slc preset"),
    (&["ftl-bench", "--blocks-per-chip", "0"], "--blocks-per-chip"),
    (&["ftl-bench", "--pages-per-block", "0"], "--pages-per-block"),
    (&["ftl-bench", "--page-bytes", "100"], "--page-bytes"),
    (&["ftl-bench", "--host-queue-depth", "-1"], "--host-queue-depth"),
    (&["ftl-bench", "--over-provisioning", "1"], "--over-provisioning"),
    (&["ftl-bench", "--over-provisioning", "-0.1"], "--over-provisioning"),
    (&["ftl-bench", "--gc-fg-blocks", "0"], "--gc-fg-blocks"),
    (&["ftl-bench", "--gc-bg-blocks", "0"], "--gc-bg-blocks"),
    (&["ftl-bench", "--static-wl", "0"], "--static-wl"),
    (&["ftl-bench", "--max-memory", "0"], "--max-memory"),
    (&["ftl-bench", "--max-memory", "lots"], "--max-memory"),
    // The footprint is refused before anything is allocated.
    (&["ftl-bench", "--blocks-per-chip", "4000000"], "--blocks-per-chip"),
    (&["ftl-bench", "--max-memory", "64M"], "more than --max-memory (64.0 MiB)"),
    (&["ftl-bench", "--no-data", "--blocks-per-chip", "100000", "--max-memory", "1G"], "for its metadata"),
    // torture, engine-bench, recovery-bench, sqlite-compare
    (&["torture", "--cuts", "0"], "--cuts"),
    (&["torture", "--accounts", "1"], "--accounts"),
    (&["torture", "--transfers", "0"], "--transfers"),
    (&["torture", "--buffer-pages", "0"], "--buffer-pages"),
    (&["torture", "--group-commit-us", "-3"], "--group-commit-us"),
    (&["engine-bench", "--rows", "0"], "--rows"),
    (&["engine-bench", "--ops", "0"], "--ops"),
    (&["engine-bench", "--buffer-pages", "1"], "--buffer-pages"),
    (&["recovery-bench", "--rows", "0"], "--rows"),
    (&["recovery-bench", "--transactions", "10,0"], "--transactions"),
    (&["sqlite-compare", "--scale", "0"], "--scale"),
    (&["sqlite-compare", "--transactions", "0"], "--transactions"),
    (&["sqlite-compare", "--buffer", "0"], "--buffer"),
    (&["sqlite-compare", "--buffer", "1.5"], "--buffer"),
    // sql
    (&["sql", "--image", "never-created.img", "--db-page-bytes", "1000"], "--db-page-bytes"),
    (&["sql", "--image", "never-created.img", "--buffer-pages", "0"], "--buffer-pages"),
    (&["sql", "--image", "never-created.img", "--mode", "xml"], "--mode"),
    (
        &["sql", "--image", "never-created.img", "--device", "openssd-mlc", "--db-page-bytes", "4096"],
        "sizes that fit: 8192, 16384",
    ),
    (&["sql", "--image", "never-created.img", "--chips", "1"], "needs at least 2 chips"),
];

#[test]
fn every_bad_value_is_refused_naming_the_flag() {
    let dir = tempfile::tempdir().unwrap();
    let mut failed = Vec::new();
    for (args, expected) in CASES {
        let out = Command::new(env!("CARGO_BIN_EXE_deltaflash")).args(*args).current_dir(dir.path()).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        if out.status.success() || !stderr.contains(expected) || stderr.contains("panicked") {
            failed.push(format!("{args:?}: exit {:?}, wanted `{expected}` in: {stderr}", out.status.code()));
        }
    }
    assert!(failed.is_empty(), "{} of {} cases:\n{}", failed.len(), CASES.len(), failed.join("\n"));
    assert!(!dir.path().join("never-created.img").exists(), "a refused sql run left an image behind");
}

/// The commands that take the device flags, each with what else it needs to get as far
/// as its device (a small run, so that a value wrongly accepted ends soon).
fn device_commands() -> Vec<Vec<&'static str>> {
    let small_run = ["--sim-time", "0.01", "--warmup", "0", "--scale", "1"];
    vec![
        [&["bench"][..], &small_run].concat(),
        [&["compare", "--schemes", "0x0"][..], &small_run].concat(),
        vec!["sql", "--image", "never-created.img", "-c", "SELECT 1;"],
        vec!["sqlite", "-c", "SELECT 1;"],
        vec!["ftl-bench", "--writes", "10"],
        vec!["torture", "--cuts", "1", "--accounts", "10", "--transfers", "10", "--pages-per-block", "64"],
    ]
}

/// What the device check says, whichever front-end asks (the flag spelled as the
/// command line spells it).
const CHIPS_OVER_PRESET: &str = "must be in 1..=16 on the paper-emulator preset (8 channels × 2 chips), got 40";
const OVER_MAX_MEMORY: &str = "more than --max-memory (1.0 KiB); pass a smaller --blocks-per-chip";
const HUGE_BLOCKS: &str = "blocks × 64 pages of 4096 bytes) needs about";

/// `value`'s first 80 characters as an error quotes a value of 100,000.
fn quoted_long(c: char, length: usize) -> String {
    format!("`{}…` ({length} characters)", c.to_string().repeat(80))
}

/// Every front-end refuses the same bad device values with the same words: chips over
/// the preset, a footprint over `--max-memory`, a huge `--blocks-per-chip`, and a long
/// value quoted at most 80 characters (flags, config files and grid files).
#[test]
fn every_front_end_refuses_bad_devices_in_the_same_words() {
    let dir = tempfile::tempdir().unwrap();
    let arg = "x".repeat(100_000); // an argument of the command line holds at most 128 KiB
    let file_value = "x".repeat(10 << 20);
    std::fs::write(dir.path().join("long.toml"), format!("[device]\npreset = \"{file_value}\"\n")).unwrap();
    let grid = |name: &str, device: &str| {
        let text =
            format!("[base.device]\n{device}\n[base.driver]\nsim_time_s = 0.01\nwarmup_s = 0\n[grid]\nseed = [1]\n");
        std::fs::write(dir.path().join(name), text).unwrap();
    };
    grid("chips.toml", "chips = 40\nblocks_per_chip = 16");
    grid("memory.toml", "max_memory_bytes = 1024");
    grid("blocks.toml", "blocks_per_chip = 1000000");
    grid("long-grid.toml", &format!("preset = \"{file_value}\""));
    let long_flag = format!("--device: unknown device preset {}", quoted_long('x', 100_000));
    let mut cases: Vec<(Vec<String>, String)> = Vec::new();
    for command in device_commands() {
        let with = |extra: &[&str]| command.iter().chain(extra).map(|a| a.to_string()).collect::<Vec<_>>();
        cases.push((with(&["--chips", "40", "--blocks-per-chip", "16"]), format!("--chips: {CHIPS_OVER_PRESET}")));
        cases.push((with(&["--max-memory", "1K"]), OVER_MAX_MEMORY.into()));
        // `sql` keeps its pages in the image: only 22 GiB of metadata at 1,000,000 blocks
        // (4,000,000 keeps the pages addressable: at most 2^32 - 2).
        if command[0] != "sql" {
            cases.push((with(&["--blocks-per-chip", "1000000"]), format!("× 1000000 {HUGE_BLOCKS}")));
        }
        cases.push((with(&["--blocks-per-chip", "4000000"]), format!("× 4000000 {HUGE_BLOCKS}")));
        cases.push((with(&["--device", &arg]), long_flag.clone()));
    }
    let sweep = |grid: &str| vec!["sweep".to_string(), "--grid".into(), grid.into()];
    cases.extend([
        (sweep("chips.toml"), format!("device.chips: {CHIPS_OVER_PRESET}")),
        (
            sweep("memory.toml"),
            "more than device.max_memory_bytes (1.0 KiB); pass a smaller device.blocks_per_chip".into(),
        ),
        (sweep("blocks.toml"), format!("× 1000000 {HUGE_BLOCKS}")),
        (sweep("long-grid.toml"), format!("device.preset: unknown device preset {}", quoted_long('x', 10 << 20))),
    ]);
    let bench = |extra: &[&str]| ["bench"].iter().chain(extra).map(|a| a.to_string()).collect::<Vec<_>>();
    cases.extend([
        (
            bench(&["--config", "long.toml"]),
            format!("device.preset in long.toml: unknown device preset {}", quoted_long('x', 10 << 20)),
        ),
        (bench(&["--sim-time", &arg]), format!("{} is not a number", quoted_long('x', 100_000))),
        (bench(&["--workload", &arg]), format!("'{}…' (100000 characters)", "x".repeat(80))),
        (bench(&["--storage", &arg]), format!("{} is not a storage", quoted_long('x', 100_000))),
        (bench(&["--param", &arg]), format!("{} is not NAME=VALUE", quoted_long('x', 100_000))),
        (bench(&["--ipa", &arg]), format!("{} is not an IPA scheme", quoted_long('x', 100_000))),
    ]);
    let mut failed = Vec::new();
    for (args, expected) in &cases {
        let out = Command::new(env!("CARGO_BIN_EXE_deltaflash")).args(args).current_dir(dir.path()).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        let shown: Vec<String> = args.iter().map(|a| a.chars().take(30).collect()).collect();
        if out.status.success() || !stderr.contains(expected.as_str()) || stderr.contains("panicked") {
            let head: String = stderr.chars().take(600).collect();
            failed.push(format!("{shown:?}: exit {:?}, wanted `{expected}` in: {head}", out.status.code()));
        } else if stderr.contains(&"x".repeat(81)) || stderr.len() > 2000 {
            failed.push(format!("{shown:?}: {} bytes of stderr quote more than 80 characters", stderr.len()));
        }
    }
    assert!(failed.is_empty(), "{} of {} cases:\n{}", failed.len(), cases.len(), failed.join("\n"));
    assert!(!dir.path().join("never-created.img").exists(), "a refused sql run left an image behind");
}

#[test]
fn range_errors_say_what_is_allowed() {
    let run = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_deltaflash")).args(args).output().unwrap();
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    assert!(run(&["ftl-bench", "--theta", "1"]).contains("outside the allowed range (0, 1)"));
    assert!(run(&["ftl-bench", "--over-provisioning", "1"]).contains("[0, 1)"));
    assert!(run(&["ftl-bench", "--writes", "0"]).contains("0 is not in 1..="));
    let memory = run(&["ftl-bench", "--blocks-per-chip", "4000000"]);
    assert!(memory.contains("GiB for its metadata") && memory.contains("--no-data"), "{memory}");
}

/// `--max-memory` above the device's metadata (162 MiB) but below its 4 GiB of pages:
/// ftl-bench starts, and its fill stops at the page images' budget with the budget's
/// words and a non-zero exit, never a panic.
#[test]
fn a_run_whose_pages_outgrow_max_memory_stops_with_the_budget() {
    let out =
        Command::new(env!("CARGO_BIN_EXE_deltaflash")).args(["ftl-bench", "--max-memory", "200M"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && !stderr.contains("panicked"), "{stderr}");
    assert!(stderr.contains("needs a new page image, but the page images in memory already take"), "{stderr}");
    assert!(stderr.contains("(device: 16 chips × 1024 blocks × 64 pages of 4096 bytes)"), "{stderr}");
}

#[test]
fn a_replay_delta_past_the_page_end_names_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.trace");
    std::fs::write(&trace, "W 1\nD 1 100 8\n# next runs past a 4096-byte page\nD 1 4090 8\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_deltaflash"))
        .args(["replay", "--chips", "2", "--blocks-per-chip", "32", "--pages-per-block", "16", "--trace"])
        .arg(&trace)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("t.trace:4: a delta of 8 bytes at offset 4090 runs past the end"), "{stderr}");
}
