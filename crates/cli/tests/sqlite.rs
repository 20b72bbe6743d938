//! `deltaflash sqlite` (SQLite shell on emulated flash) and `torture --engine sqlite`.

mod common;

use common::deltaflash;

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A device small enough that SQLite's writes make the FTL collect garbage.
const SMALL: [&str; 6] = ["--chips", "2", "--blocks-per-chip", "16", "--pages-per-block", "16"];

#[test]
fn sqlite_torture_survives_200_power_cuts_in_wal_mode() {
    let mut args = vec!["torture", "--engine", "sqlite", "--cuts", "200", "--seed", "9", "--accounts", "200"];
    args.extend(["--transfers", "150"]);
    args.extend(SMALL);
    let out = deltaflash(&args);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    assert!(stdout.contains("200 passed, 0 failed"), "{stdout}");
    assert!(stdout.contains("cuts hit: ") && stdout.contains("50 restarts cut again"), "{stdout}");
}

/// No log at all: each commit is one NoLgn-FTL transaction; a cut anywhere (GC
/// erases included) leaves the last acknowledged commit.
#[test]
fn sqlite_torture_survives_120_power_cuts_with_no_log_on_nolgn() {
    let mut args = vec!["torture", "--engine", "sqlite", "--journal", "nolgn", "--cuts", "120", "--seed", "9"];
    args.extend(["--accounts", "200", "--transfers", "400"]);
    args.extend(SMALL);
    let out = deltaflash(&args);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    assert!(stdout.contains("120 passed, 0 failed"), "{stdout}");
    assert!(text(&out.stderr).contains("(nolgn journal, nolgn FTL)"), "{}", text(&out.stderr));
}

#[test]
fn sqlite_torture_survives_100_power_cuts_with_sw_wal() {
    // Checkpoints every 64 frames remap database pages onto WAL frames; cuts land in
    // frame writes, remap records and GC.
    let mut args = vec!["torture", "--engine", "sqlite", "--journal", "sw-wal", "--cuts", "100", "--seed", "9"];
    args.extend(["--accounts", "200", "--transfers", "150"]);
    args.extend(SMALL);
    let out = deltaflash(&args);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    assert!(stdout.contains("100 passed, 0 failed"), "{stdout}");
    assert!(text(&out.stderr).contains("sw-wal journal"), "{}", text(&out.stderr));
}

#[test]
fn sqlite_torture_with_a_rollback_journal() {
    let mut args = vec!["torture", "--engine", "sqlite", "--journal", "delete", "--cuts", "40", "--seed", "3"];
    args.extend(["--accounts", "100", "--transfers", "80"]);
    args.extend(SMALL);
    let out = deltaflash(&args);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    assert!(stdout.contains("40 passed, 0 failed"), "{stdout}");
}

#[test]
fn sqlite_shell_persists_to_its_image_and_shows_flash_counters() {
    let dir = tempfile::tempdir().unwrap();
    let image = dir.path().join("s.img");
    let image = image.to_str().unwrap();
    let mut args = vec!["sqlite", "--image", image, "--over-provisioning", "0.3"];
    args.extend(SMALL);
    args.extend([
        "-c",
        "PRAGMA journal_mode=WAL; CREATE TABLE t(k INTEGER PRIMARY KEY, v BLOB);
         INSERT INTO t VALUES (1, randomblob(9000)), (2, 'two');",
        "-c",
        ".stats",
    ]);
    let out = deltaflash(&args);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    assert!(stdout.contains("2 rows changed"), "{stdout}");
    for counter in ["host write bytes", "flash programs", "syncs", "erases", "GC page migrations"] {
        assert!(stdout.contains(counter), "{counter} missing: {stdout}");
    }
    // Reopened: the rows are there, the database is whole; csv output.
    let out = deltaflash(&[
        "sqlite",
        "--image",
        image,
        "--mode",
        "csv",
        "-c",
        "SELECT k, length(v) FROM t ORDER BY k; PRAGMA integrity_check;",
    ]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    assert_eq!(stdout, "k,length(v)\n1,9000\n2,3\nintegrity_check\nok\n");
}

#[test]
fn sqlite_torture_refuses_bad_options() {
    for (args, names) in [
        (&["torture", "--engine", "sqlite", "--sqlite-ftl", "noftl"][..], "ftl"),
        (&["torture", "--engine", "sqlite", "--journal", "memory"][..], "journal"),
        (&["torture", "--engine", "sqlite", "--no-data"][..], "--no-data"),
    ] {
        let out = deltaflash(args);
        assert!(!out.status.success(), "{args:?}");
        assert!(text(&out.stderr).contains(names), "{args:?}: {}", text(&out.stderr));
    }
}

#[test]
fn sqlite_shell_reports_errors_and_refuses_noftl() {
    let out = deltaflash(&["sqlite", "-c", "SELECT * FROM missing;", "--chips", "2", "--blocks-per-chip", "64"]);
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("no such table: missing"), "{}", text(&out.stderr));
    let out = deltaflash(&["sqlite", "--storage", "noftl", "-c", "SELECT 1;"]);
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("ftl:page"), "{}", text(&out.stderr));
}

/// `bench --engine sqlite` on the page FTL, aged to 25% free: the JSON counts the
/// flash's work, GC included, and the same seed gives the same counters.
#[test]
fn sqlite_bench_on_an_aged_ftl_reports_flash_work_deterministically() {
    let dir = tempfile::tempdir().unwrap();
    let run = |name: &str| {
        let json = dir.path().join(name);
        let json_arg = json.to_str().unwrap().to_string();
        let mut args =
            vec!["bench", "--engine", "sqlite", "--workload", "sqlite-bench", "--ops", "fillrandom,overwrite"];
        args.extend(["--num", "500", "--value-size", "1024", "--storage", "ftl:page", "--free-space", "25%"]);
        args.extend(["--chips", "2", "--blocks-per-chip", "64", "--seed", "4", "--json", &json_arg]);
        let out = deltaflash(&args);
        assert!(out.status.success(), "{}\n{}", text(&out.stdout), text(&out.stderr));
        let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
        v
    };
    let a = run("a.json");
    let flash = |v: &serde_json::Value, key: &str| v.pointer(&format!("/flash/{key}")).and_then(|x| x.as_u64());
    let programs = flash(&a, "flash_programs").unwrap_or_else(|| panic!("flash_programs in {a}"));
    assert!(programs > 0, "{a}");
    assert!(flash(&a, "gc_erases").unwrap_or(0) > 0, "an aged device collects garbage: {a}");
    let b = run("b.json");
    for key in ["flash_programs", "flash_erases", "gc_page_migrations", "host_writes"] {
        assert_eq!(flash(&a, key), flash(&b, key), "{key}");
    }
}
