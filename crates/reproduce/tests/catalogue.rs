//! The catalogue against the reference file: every experiment the papers have numbers
//! for is listed; every implemented experiment computes exactly the cells the reference
//! gives it, and every reference cell belongs to a listed experiment; every run's config
//! resolves at every scale (whatever memory the machine has free); only the comparison reads the reference file.

use reproduce::catalogue::{self, CATALOGUE};
use reproduce::reference;
use reproduce::{RunInput, Scale};
use serde_json::json;
use std::collections::BTreeSet;
use std::path::Path;

type Key = (String, String);

fn reference_keys(id: &str) -> BTreeSet<Key> {
    let cells = reference::load().expect("the reference file parses");
    cells.into_iter().filter(|c| c.experiment == id).map(|c| (c.row, c.column)).collect()
}

#[test]
fn the_papers_experiments_are_all_listed() {
    let mut wanted: Vec<String> = (1..=10).map(|t| format!("ipa:table{t}")).collect();
    wanted.extend(
        ["ipa:fig6", "ipa:appendix-a", "demo:table1", "ipl:fig6", "ipl:table3", "ipl:table4"].map(String::from),
    );
    wanted.extend((6..=11).map(|f| format!("nolgn:fig{f}")));
    for id in &wanted {
        assert!(catalogue::find(id).is_some(), "{id} is not in the catalogue");
    }
    let ids: BTreeSet<&str> = CATALOGUE.iter().map(|e| e.id).collect();
    assert_eq!(ids.len(), CATALOGUE.len(), "an id is listed twice");
}

#[test]
fn every_reference_cell_belongs_to_a_listed_experiment() {
    for cell in reference::load().expect("the reference file parses") {
        assert!(
            catalogue::find(&cell.experiment).is_some(),
            "reference cell of unknown experiment {}",
            cell.experiment
        );
        assert!(!cell.source.is_empty(), "{} has no source", cell.experiment);
    }
}

#[test]
fn an_implemented_experiment_computes_exactly_its_reference_cells() {
    let fake = json!({
        "host_reads": 10.0, "host_writes": 8.0, "in_place_appends": 2.0, "gc_page_migrations": 3.0,
        "gc_erases": 1.0, "gc_migrations_per_host_write": 0.5, "gc_erases_per_host_write": 0.1,
        "read_latency_ms": 0.2, "write_latency_ms": 0.3, "throughput_tps": 100.0, "dbms_write_amplification": 4.0,
    });
    for e in CATALOGUE {
        let Some(implementation) = &e.implementation else { continue };
        let n = (implementation.runs)(Scale::Quick).len();
        assert!(n > 0, "{} has no runs", e.id);
        for results in [vec![None; n], vec![Some(&fake); n]] {
            let ours: Vec<_> = (implementation.cells)(&results);
            let keys: BTreeSet<Key> = ours.iter().map(|o| (o.row.clone(), o.column.clone())).collect();
            assert_eq!(keys.len(), ours.len(), "{} computes a cell twice", e.id);
            let wanted = reference_keys(e.id);
            let missing: Vec<_> = wanted.difference(&keys).collect();
            let extra: Vec<_> = keys.difference(&wanted).collect();
            assert!(
                missing.is_empty() && extra.is_empty(),
                "{}: not computed {missing:?}; not in the reference {extra:?}",
                e.id
            );
        }
    }
}

#[test]
fn every_run_config_resolves_at_every_scale() {
    for e in CATALOGUE {
        let Some(implementation) = &e.implementation else { continue };
        for scale in [Scale::Smoke, Scale::Quick, Scale::Full] {
            for run in (implementation.runs)(scale) {
                if let Err(err) = with_any_memory(run.input).check() {
                    panic!("{} {} at {}: {err}", e.id, run.label, scale.name());
                }
            }
        }
    }
}

/// The run with no memory limit on its device: whether a full-scale device fits in the
/// memory this machine has free at the moment is the planner's refusal to make
/// (`runner.rs`'s tests), not a fault of the config.
fn with_any_memory(mut input: RunInput) -> RunInput {
    match &mut input {
        RunInput::Engine(config) => config.device.max_memory_bytes = Some(u64::MAX),
        RunInput::Sqlite(config) => config.device.max_memory_bytes = Some(u64::MAX),
        RunInput::Index(_) => {}
    }
    input
}

/// Source files under `dir`, recursively.
fn sources(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() && path.file_name() != Some("target".as_ref()) {
            sources(&path, out);
        } else if path.extension().is_some_and(|x| x == "rs" || x == "py") {
            out.push(path);
        }
    }
}

#[test]
fn only_the_comparison_reads_the_reference_file() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files = Vec::new();
    sources(&root.join("crates"), &mut files);
    sources(&root.join("python"), &mut files);
    let allowed = [Path::new("crates/reproduce/src/reference.rs"), Path::new("crates/reproduce/tests/catalogue.rs")];
    let readers: Vec<String> = files
        .iter()
        .filter(|f| std::fs::read_to_string(f).is_ok_and(|t| t.contains("reference.toml")))
        .map(|f| f.strip_prefix(&root).unwrap_or(f).display().to_string())
        .filter(|f| !allowed.iter().any(|a| Path::new(f) == *a))
        .collect();
    assert!(readers.is_empty(), "files that name the reference file outside the comparison: {readers:?}");
}
