//! The NoLgn experiments at `Scale::Smoke`: every run executes, every cell gets a value,
//! and each cell's ablation text names the host stack's variants. Fig. 11's TPC-C runs
//! need a 2 GiB device each (one warehouse is a ~300 MB database), so its smoke test
//! checks the plan and the cells on results made up for it instead.

use reproduce::catalogue::find;
use reproduce::Scale;
use reproduce::{reproduce, Options, RunInput};
use serde_json::json;

fn smoke(id: &str) {
    let dir = tempfile::tempdir().unwrap();
    let options = Options { scale: Scale::Smoke, jobs: 2, out: dir.path().join("out"), overwrite: false };
    let outcome = reproduce(&[find(id).unwrap()], &options, &|line| eprintln!("{line}")).unwrap();
    assert_eq!(outcome.failed, 0, "{id}");
    assert!(!outcome.cells.is_empty());
    for c in &outcome.cells {
        assert!(c.ours.is_some(), "{id} {} {}: no value", c.row, c.column);
        for variant in ["no host stack:", "CPU 50%:", "CPU 150%:", "no clean pages cached:", "device 25% free:"] {
            assert!(c.ablation.contains(variant), "{id} {}: {}", c.row, c.ablation);
        }
    }
    let md = std::fs::read_to_string(dir.path().join("out").join(format!("{}.md", id.replace(':', "-")))).unwrap();
    assert!(md.contains("Conditions from §4.1") && md.contains("no host stack: "), "{md}");
}

#[test]
fn fig6_to_fig9_run_at_smoke_scale() {
    // One invocation shares the sweep's runs among the four figures.
    let dir = tempfile::tempdir().unwrap();
    let options = Options { scale: Scale::Smoke, jobs: 2, out: dir.path().join("out"), overwrite: false };
    let ids = ["nolgn:fig6", "nolgn:fig7", "nolgn:fig8", "nolgn:fig9"];
    let experiments: Vec<_> = ids.iter().map(|id| find(id).unwrap()).collect();
    let outcome = reproduce(&experiments, &options, &|line| eprintln!("{line}")).unwrap();
    assert_eq!(outcome.failed, 0);
    // 2 value sizes × 2 syncs × 3 journals × (the headline and 5 ablation variants);
    // Fig. 9's are among them.
    assert_eq!(outcome.executed, 72);
    for c in &outcome.cells {
        assert!(c.ours.is_some(), "{} {} {}: no value", c.experiment, c.row, c.column);
        assert!(c.ablation.contains("no host stack: ") && c.ablation.contains("CPU 150%: "), "{}", c.ablation);
    }
}

#[test]
fn fig10_runs_at_smoke_scale() {
    smoke("nolgn:fig10");
}

#[test]
fn fig11_plans_its_runs_and_computes_its_cells() {
    let e = find("nolgn:fig11").unwrap();
    let i = e.implementation.as_ref().unwrap();
    let runs = reproduce::ablation::all_runs(i, Scale::Smoke);
    // 3 journals × 3 free-space levels × (the headline and 4 of the 5 ablation
    // variants): the free-space variant leaves Fig. 11's own free-space axis alone,
    // changes none of its runs and is left out.
    assert_eq!(i.variants.len(), 5);
    assert_eq!(runs.len(), 45);
    assert!(!i.variants_at(Scale::Smoke).iter().any(|v| v.name == "device 25% free"), "the free-space variant");
    for r in &runs {
        r.input.check().unwrap();
        assert!(matches!(r.input, RunInput::Sqlite(_)));
    }
    // Base-WAL 100 tpmC, SW-WAL 120, NoLgn 150 at every level, in every variant but
    // the first, where NoLgn gets 200 at 25% free.
    let results: Vec<serde_json::Value> = (0..36)
        .map(|k| {
            let (variant, journal, free) = (k / 9, k / 3 % 3, k % 3);
            let tpmc = [100.0, 120.0, if variant == 0 && free == 2 { 200.0 } else { 150.0 }][journal];
            json!({ "tpmc": tpmc })
        })
        .collect();
    let refs: Vec<Option<&serde_json::Value>> = results.iter().map(Some).collect();
    let cells = (i.cells)(&refs[..9]);
    let value = |row: &str, column: &str| cells.iter().find(|c| c.row == row && c.column == column).unwrap().value;
    let close = |v: Option<f64>, want: f64| v.is_some_and(|v| (v - want).abs() < 1e-9);
    assert!(close(value("Throughput, SW-WAL against Base-WAL", "average over free space"), 20.0));
    let nolgn_avg = value("Throughput, NoLgn-FTL against Base-WAL", "average over free space").unwrap();
    assert!((nolgn_avg - (50.0 + 50.0 + 100.0) / 3.0).abs() < 1e-9);
    assert!(close(value("Throughput, NoLgn-FTL against Base-WAL", "25% free space"), 100.0));
    // Every variant's runs give their own cells: the stack off halves the 25% effect.
    let no_stack = (i.cells)(&refs[9..18]);
    let at_25 =
        no_stack.iter().find(|c| c.row == "Throughput, NoLgn-FTL against Base-WAL" && c.column == "25% free space");
    assert!(close(at_25.unwrap().value, 50.0));
}
