//! `deltaflash reproduce`: the catalogue listing, one experiment end to end at the smoke
//! scale (reports, CPU seconds, summary, results page, publishing into docs, resumption
//! without re-running, also after a kill), and the safety of the output and publish
//! directories.

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
    assert!(text.contains("| experiment | within | direction | opposite | n/a | unexplained | CPU s |\n|---|---|---|---|---|---|---|\n| demo:table1 |"), "{text}");
    // Its two runs, both again on a fresh and on an emptier device and on the preset's
    // typical flash channel, and the regions run with its IPA region odd-MLC (the ablation).
    assert!(text.contains("runs: 9 executed, 0 reused, 0 failed; "), "{text}");
    // Each of the demo's four variants against the headline, on the command line, in the
    // report and on the page.
    let table = "| variant | cells | within | within under the variant | taken within | taken out of within |";
    for variant in ["fresh device", "emptier device (15% free)", "IPA region odd-MLC", "typical 400 MB/s flash channel"]
    {
        assert!(text.contains(table) && text.contains(&format!("\n| {variant} | ")), "{variant}: {text}");
    }
    let log = stderr(&first);
    assert!(log.contains("[1/9] demo:table1 [0x0]: running") && log.contains("done in"), "{log}");

    let md = fs::read_to_string(out.join("demo-table1.md")).unwrap();
    assert!(md.contains("| GC erases | [2x3] with regions Δ% | change % | -53 |"), "{md}");
    assert!(md.contains("| run | conditions | file | wall s | CPU s |") && md.contains("\nCPU: "), "{md}");
    assert!(md.contains(table) && md.contains("\n| fresh device | "), "{md}");
    let experiment: Value = serde_json::from_str(&fs::read_to_string(out.join("demo-table1.json")).unwrap()).unwrap();
    // The report lists each variant's two runs; the odd-MLC variant shares the baseline.
    assert_eq!(experiment["runs"].as_array().unwrap().len(), 10);
    // The experiment's CPU seconds count each distinct run (key) once.
    let run_cpu: std::collections::BTreeMap<String, f64> = experiment["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["key"].as_str().unwrap().to_string(), r["cpu_seconds"].as_f64().unwrap()))
        .collect();
    assert_eq!(run_cpu.len(), 9);
    assert!(run_cpu.values().all(|&c| c > 0.0), "every run records its CPU seconds: {run_cpu:?}");
    let total: f64 = run_cpu.values().sum();
    assert!((experiment["cpu_seconds"].as_f64().unwrap() - total).abs() < 1e-9, "{total}");
    let s = summary(&out);
    assert_eq!(s["experiments"][0]["experiment"], "demo:table1");
    assert_eq!(s["experiments"][0]["cpu_seconds"], experiment["cpu_seconds"]);
    assert_eq!(s["cpu_seconds"], experiment["cpu_seconds"]);
    let page = fs::read_to_string(out.join("results.md")).unwrap();
    assert!(
        page.contains("\n## demo\n")
            && page.contains("\n### demo:table1\n")
            && page.contains("[Report](demo-table1.md)"),
        "{page}"
    );
    let paper = page.split("\n## demo\n").nth(1).unwrap_or_default();
    assert!(
        paper.starts_with("\n| verdict | cells |\n") && paper.contains("| all | 23 |"),
        "per paper, its counts: {page}"
    );
    assert!(page.contains("| GC erases | [2x3] with regions Δ% | change % | -53 | "), "{page}");
    assert!(page.contains(table), "{page}");
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
    assert_eq!(before.len(), 9);
    // The second invocation publishes: the docs get the reports and a results page
    // with the hand-written prose of the publish directory.
    let docs = tmp.path().join("docs");
    let published = docs.join("results");
    fs::create_dir_all(&published).unwrap();
    fs::write(published.join("prose.md"), "## demo — IPA demo: selective regions\n\nWhy the demo differs.\n").unwrap();
    let publish_args: Vec<&str> = args.iter().copied().chain(["--publish", published.to_str().unwrap()]).collect();
    let second = ok(&publish_args);
    assert!(second.contains("runs: 0 executed, 9 reused, 0 failed"), "{second}");
    assert_eq!(run_files(&out), before, "no run was made again");
    assert_eq!(summary(&out), s, "the same cells, and CPU seconds, from the kept runs");
    for f in ["summary.json", "demo-table1.md", "demo-table1.json"] {
        assert_eq!(fs::read(published.join(f)).unwrap(), fs::read(out.join(f)).unwrap(), "{f}");
    }
    let page = fs::read_to_string(docs.join("results.md")).unwrap();
    assert!(page.contains("\n## demo — IPA demo: selective regions\n\nWhy the demo differs.\n"), "{page}");
    assert!(page.contains("[Report](results/demo-table1.md)"), "{page}");
    // Publishing again replaces what it wrote; a page it did not write is refused.
    ok(&publish_args);
    fs::write(docs.join("results.md"), "hand-written").unwrap();
    let refused = deltaflash(&publish_args);
    assert!(
        !refused.status.success() && stderr(&refused).contains("is not a generated results page"),
        "{}",
        stderr(&refused)
    );
    assert_eq!(fs::read_to_string(docs.join("results.md")).unwrap(), "hand-written");
}

/// The number after `label` in the last line of a run's output: `runs: 3 executed`.
fn count(text: &str, label: &str) -> usize {
    let line = text.lines().rev().find(|l| l.starts_with("runs: ")).unwrap_or_default();
    let before = line.split(label).next().unwrap_or_default();
    before.split_whitespace().last().and_then(|n| n.parse().ok()).unwrap_or_else(|| panic!("no `{label}` in {text}"))
}

#[test]
fn an_invocation_killed_after_some_runs_resumes_with_only_the_rest() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let out_arg = out.to_str().unwrap();
    let args = ["reproduce", "nolgn:fig7", "--smoke", "--jobs", "1", "--out", out_arg];
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_deltaflash"))
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let stored = |dir: &std::path::Path| {
        fs::read_dir(dir.join("runs"))
            .map_or(0, |d| d.filter(|e| e.as_ref().unwrap().path().extension() == Some("json".as_ref())).count())
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(600);
    while stored(&out) == 0 {
        assert!(child.try_wait().unwrap().is_none(), "the first invocation ended before a run was stored");
        assert!(std::time::Instant::now() < deadline, "no run stored in 600 s");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let kept = stored(&out);
    let second = ok(&args);
    assert_eq!(count(&second, " reused"), kept, "{second}");
    assert!(count(&second, " executed") > 0, "the kill came before every run was stored: {second}");
    assert_eq!(count(&second, " failed"), 0, "{second}");
    let third = ok(&args);
    assert_eq!(count(&third, " executed"), 0, "{third}");
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

/// `--plan` lists the runs with their estimates: the full TPC-C runs measure the
/// paper's two hours in proportion to the database and have room to grow; it runs and
/// writes nothing.
#[test]
fn a_plan_lists_the_runs_with_their_costs_and_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let text = ok(&[
        "reproduce",
        "demo:table1",
        "ipa:table9",
        "--full",
        "--plan",
        "--jobs",
        "2",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(
        text.contains("| run | workload | size | simulated s | CPU s (est.) | peak GiB (est.) | status |"),
        "{text}"
    );
    assert!(text.contains("| demo:table1 [0x0] | tatp | ") && text.contains("| to make |"), "{text}");
    assert!(
        text.contains(
            "| ipa:table9 buffer 10% [0x0] | tpcc | warehouses 10 on paper-emulator, 1152 blocks per chip | 172 |"
        ),
        "{text}"
    );
    assert!(text.contains("| ipa:table9 | 60 | 0 | 60 | 0 |"), "{text}");
    assert!(text.contains(" CPU hours to make (") && text.contains("; 0 runs refused"), "{text}");
    assert!(!out.exists(), "a plan writes nothing");
}

/// `--kept` makes no run: on a directory that keeps none of the full runs it reports
/// every run as not made yet, and it cannot publish such a report.
#[test]
fn kept_reports_without_making_a_run() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let out_arg = out.to_str().unwrap();
    let text = ok(&["reproduce", "ipa:table9", "--full", "--kept", "--out", out_arg]);
    assert!(text.contains("runs: 0 executed, 0 reused, 0 failed, 60 not made yet;"), "{text}");
    let md = fs::read_to_string(out.join("ipa-table9.md")).unwrap();
    assert!(md.contains("| not made yet (--kept reports from the runs kept only) |"), "{md}");
    assert!(summary(&out)["cells"].as_array().unwrap().iter().any(|c| c["reason"] == "its runs are not made yet"));
    assert_eq!(fs::read_dir(out.join("runs")).unwrap().count(), 0, "nothing made");
    let publish = tmp.path().join("results");
    let o =
        deltaflash(&["reproduce", "ipa:table9", "--kept", "--out", out_arg, "--publish", publish.to_str().unwrap()]);
    assert!(!o.status.success() && stderr(&o).contains("--publish"), "{}", stderr(&o));
    assert!(!publish.exists());
}

/// An output directory inside the publish directory (`--out docs/results/full`, as
/// `make reproduce-full` does) publishes its kept runs with the reports: the reports'
/// run files become links into it.
#[test]
fn reports_published_beside_their_runs_link_to_them() {
    let tmp = tempfile::tempdir().unwrap();
    let published = tmp.path().join("results");
    let out = published.join("full");
    let (out_arg, published_arg) = (out.to_str().unwrap(), published.to_str().unwrap());
    ok(&["reproduce", "ipl:table4", "--smoke", "--out", out_arg, "--publish", published_arg]);
    let report = fs::read_to_string(published.join("ipl-table4.md")).unwrap();
    let linked: Vec<&str> = report.lines().filter(|l| l.contains("| [runs/")).collect();
    assert!(!linked.is_empty(), "{report}");
    for line in linked {
        let target = line.split("](full/").nth(1).and_then(|t| t.split(')').next()).expect(line);
        assert!(out.join(target).is_file(), "{target} is not a kept run");
    }
    assert!(
        !fs::read_to_string(out.join("ipl-table4.md")).unwrap().contains("](full/"),
        "the output's own report is as written"
    );
    // Into the output directory itself: refused before anything runs or is written.
    let summary_before = fs::read(out.join("summary.json")).unwrap();
    let o = deltaflash(&["reproduce", "ipl:table4", "--smoke", "--out", out_arg, "--publish", out_arg, "--overwrite"]);
    assert!(!o.status.success() && stderr(&o).contains("is the output directory itself"), "{}", stderr(&o));
    assert_eq!(fs::read(out.join("summary.json")).unwrap(), summary_before);
}
