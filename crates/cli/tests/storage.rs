//! `bench --storage`: the engine on NoFTL regions and on every conventional FTL, same
//! workload and seed, one metric vocabulary.

use std::process::Command;

const SMALL: &[&str] = &["--chips", "4", "--blocks-per-chip", "128", "--pages-per-block", "32"];

fn bench(storage: &str, dir: &std::path::Path) -> serde_json::Value {
    let json = dir.join(format!("{}.json", storage.replace(':', "-")));
    let out = Command::new(env!("CARGO_BIN_EXE_deltaflash"))
        .args([
            "bench",
            "--workload",
            "tpcb",
            "--sim-time",
            "2",
            "--warmup",
            "0.5",
            "--ipa",
            "2x4",
            "--storage",
            storage,
        ])
        .args(["--json", json.to_str().unwrap(), "--check"])
        .args(SMALL)
        .output()
        .expect("binary runs");
    assert!(out.status.success(), "{storage}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap()
}

#[test]
fn tpcb_runs_consistently_on_noftl_and_every_ftl() {
    let dir = tempfile::tempdir().unwrap();
    for storage in ["noftl", "ftl:page", "ftl:dftl", "ftl:block", "ftl:bast", "ftl:fast"] {
        let r = bench(storage, dir.path());
        assert_eq!(r["consistency_check"]["outcome"], "passed", "{storage}: {}", r["consistency_check"]);
        assert!(r["transactions"].as_u64().unwrap() > 0, "{storage}");
        let programs = r["flash_programs"].as_u64().unwrap();
        assert!(programs >= r["host_writes"].as_u64().unwrap(), "{storage}: programs {programs}");
        assert!(r["write_amplification"].as_f64().unwrap() >= 1.0, "{storage}");
        if storage == "noftl" {
            assert!(r["in_place_appends"].as_u64().unwrap() > 0, "IPA appends on NoFTL");
            assert!(r["ftl"].is_null());
        } else {
            // An FTL has no in-place append: every IPA eviction is refused and written out of place.
            assert_eq!(r["in_place_appends"].as_u64(), Some(0), "{storage}");
            assert!(r["ftl"]["host_writes"].as_u64().unwrap() > 0, "{storage}: {}", r["ftl"]);
            assert_eq!(r["config"]["storage"]["ftl"]["kind"], storage.trim_start_matches("ftl:"));
        }
    }
}

#[test]
fn a_bad_storage_is_refused_with_the_choices() {
    let out = Command::new(env!("CARGO_BIN_EXE_deltaflash")).args(["bench", "--storage", "ftl:nope"]).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--storage") && err.contains("ftl:fast"), "{err}");
}

#[test]
fn an_ftl_image_opened_as_noftl_regions_says_what_it_holds() {
    let dir = tempfile::tempdir().unwrap();
    let image = dir.path().join("ftl.img");
    let image = image.to_str().unwrap();
    let run = |args: &[&str]| Command::new(env!("CARGO_BIN_EXE_deltaflash")).args(args).args(SMALL).output().unwrap();
    let made = run(&["bench", "--workload", "tpcb", "--sim-time", "1", "--storage", "ftl:page", "--image", image]);
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    let sql = Command::new(env!("CARGO_BIN_EXE_deltaflash"))
        .args(["sql", "--image", image, "-c", "SELECT 1"])
        .output()
        .unwrap();
    assert!(!sql.status.success());
    let err = String::from_utf8_lossy(&sql.stderr);
    assert!(err.contains("the device holds a conventional FTL (page), not NoFTL regions"), "{err}");
    assert!(!err.contains("corrupt"), "{err}");
    let inspect = Command::new(env!("CARGO_BIN_EXE_deltaflash")).args(["inspect", image]).output().unwrap();
    assert!(inspect.status.success(), "{}", String::from_utf8_lossy(&inspect.stderr));
    assert!(String::from_utf8_lossy(&inspect.stdout).contains("holds a conventional FTL (page)"));
}

/// DFTL's mount rewrites stale translation pages, so a restart cut can land in it; the
/// torture then powers on and opens again (it used to report "the cut restart failed
/// before recovery" at the first such cut, seed 11's 80 cuts holding one).
#[test]
fn torture_on_dftl_cuts_restarts_inside_the_mount() {
    let out = Command::new(env!("CARGO_BIN_EXE_deltaflash"))
        .args(["torture", "--storage", "ftl:dftl", "--cuts", "80", "--seed", "11"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && stdout.contains("80 passed, 0 failed"), "{stdout}");
}

/// DB pages of two and four flash pages on every conventional FTL: the FTL writes the
/// parts one by one, so cuts land between them and leave pages half new, half old; the
/// log's full-page images repair them at restart. Each seed tore pages that restart
/// could not repair before the images (e.g. "B+-tree page 10 entry 281: empty slot").
/// More cuts per configuration in `make long`.
#[test]
fn torture_on_every_ftl_repairs_db_pages_torn_between_their_flash_pages() {
    let runs = [("page", 2), ("dftl", 3), ("block", 1), ("bast", 1), ("fast", 4)];
    for (kind, seed) in runs {
        for db_page_bytes in ["8192", "16384"] {
            let storage = format!("ftl:{kind}");
            let seed = seed.to_string();
            let out = Command::new(env!("CARGO_BIN_EXE_deltaflash"))
                .args(["torture", "--storage", &storage, "--db-page-bytes", db_page_bytes])
                .args(["--cuts", "10", "--seed", &seed])
                .output()
                .unwrap();
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert!(
                out.status.success() && stdout.contains("10 passed, 0 failed"),
                "{storage} --db-page-bytes {db_page_bytes} --seed {seed}: {stdout}{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}
