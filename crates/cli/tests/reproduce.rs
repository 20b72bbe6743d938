//! `deltaflash reproduce`: the catalogue listing, one experiment end to end at the smoke
//! scale (reports, summary, resumption without re-running), and the output directory's
//! safety.

mod common;

use common::{deltaflash, ok, stderr};
use serde_json::Value;
use std::fs;

#[test]
fn the_list_names_every_experiment_and_whether_it_is_implemented() {
    let out = ok(&["reproduce", "--list"]);
    for id in ["ipa:table1", "ipa:table10", "ipa:fig6", "ipa:appendix-a", "demo:table1", "ipl:fig6", "ipl:table3"] {
        assert!(out.contains(&format!("| {id} |")), "{id} missing:\n{out}");
    }
    for id in ["ipl:table4", "nolgn:fig6", "nolgn:fig11"] {
        assert!(out.contains(&format!("| {id} |")), "{id} missing:\n{out}");
    }
    assert!(out.contains("| ipa:table7 | yes | IPA Table 7: TPC-B"), "{out}");
    assert!(out.contains("| nolgn:fig7 | yes |") && !out.contains("| no |"), "{out}");
}

fn summary(dir: &std::path::Path) -> Value {
    serde_json::from_str(&fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap()
}

#[test]
fn a_smoke_experiment_reports_every_cell_and_a_second_run_reuses_its_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let out_arg = out.to_str().unwrap();
    let args = ["reproduce", "demo:table1", "--smoke", "--jobs", "2", "--out", out_arg];
    let first = deltaflash(&args);
    assert!(first.status.success(), "{}", stderr(&first));
    let text = String::from_utf8_lossy(&first.stdout).into_owned();
    assert!(text.contains("| verdict | cells |") && text.contains("| opposite |"), "{text}");
    assert!(text.contains("| experiment | within | direction | opposite | n/a | unexplained |\n|---|---|---|---|---|---|\n| demo:table1 |"), "{text}");
    assert!(text.contains("runs: 2 executed, 0 reused, 0 failed"), "{text}");
    let log = stderr(&first);
    assert!(log.contains("[1/2] demo:table1 [0x0]: running") && log.contains("done in"), "{log}");

    let md = fs::read_to_string(out.join("demo-table1.md")).unwrap();
    assert!(md.contains("| GC erases | [2x3] with regions Δ% | change % | -53 |"), "{md}");
    let experiment: Value = serde_json::from_str(&fs::read_to_string(out.join("demo-table1.json")).unwrap()).unwrap();
    assert_eq!(experiment["runs"].as_array().unwrap().len(), 2);
    let s = summary(&out);
    let cells = s["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 23, "the reference gives Table I 23 cells");
    for c in cells {
        for field in ["experiment", "row", "column", "unit", "verdict", "reason", "ablation"] {
            assert!(c[field].is_string(), "{field} of {c}");
        }
        assert!(c["paper"].is_number(), "{c}");
        assert!(c["ours"].is_number() || c["ours"].is_null(), "{c}");
    }
    let throughput = cells.iter().find(|c| c["row"] == "Transactional throughput" && c["column"] == "[0x0]").unwrap();
    assert_eq!(throughput["paper"], 277.0);
    assert!(throughput["ours"].as_f64().unwrap() > 0.0);

    let run_files = |dir: &std::path::Path| {
        let mut files: Vec<(String, String)> = fs::read_dir(dir.join("runs"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .map(|p| (p.file_name().unwrap().to_string_lossy().into_owned(), fs::read_to_string(&p).unwrap()))
            .collect();
        files.sort();
        files
    };
    let before = run_files(&out);
    assert_eq!(before.len(), 2);
    let second = ok(&args);
    assert!(second.contains("runs: 0 executed, 2 reused, 0 failed"), "{second}");
    assert_eq!(run_files(&out), before, "no run was made again");
    assert_eq!(summary(&out), s, "the same cells from the kept runs");
}

#[test]
fn a_directory_reproduce_did_not_make_is_refused_unless_overwrite() {
    let tmp = tempfile::tempdir().unwrap();
    let foreign = tmp.path().join("mine");
    fs::create_dir(&foreign).unwrap();
    fs::write(foreign.join("summary.json"), "my own file").unwrap();
    let dir = foreign.to_str().unwrap();
    let refused = deltaflash(&["reproduce", "nolgn:fig7", "--smoke", "--out", dir]);
    assert!(!refused.status.success());
    assert!(stderr(&refused).contains("is not a reproduce output directory"), "{}", stderr(&refused));
    assert_eq!(fs::read_to_string(foreign.join("summary.json")).unwrap(), "my own file");
    assert_eq!(fs::read_dir(&foreign).unwrap().count(), 1, "nothing written");
    ok(&["reproduce", "nolgn:fig7", "--smoke", "--out", dir, "--overwrite"]);
    assert!(summary(&foreign)["cells"].is_array());
}

#[test]
fn an_unknown_id_is_refused_by_name() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let o = deltaflash(&["reproduce", "ipa:table99", "--out", out.to_str().unwrap()]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("`ipa:table99` is not an experiment id"), "{}", stderr(&o));
    assert!(!out.exists(), "no directory made for a refused command");
}
