//! The model version moves with the model: the `same_results` fixtures
//! (`crates/cli/tests/fixtures/*.json`, what the simulator gives for short seeded runs)
//! must have the digest the newest entry of `MODEL_VERSIONS` records. A deliberate model
//! change re-blesses those fixtures, this test then fails, and the change appends an
//! entry: runs an output directory kept under the old model are no longer reused.

use reproduce::model_version::MODEL_VERSIONS;
use reproduce::store::fnv1a;
use std::path::PathBuf;

/// FNV-1a over each fixture's file name and its JSON in canonical form (parsed and
/// printed again, so layout and line endings do not count), in name order.
fn fixtures_digest() -> String {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../cli/tests/fixtures");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| path.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no fixtures in {}", dir.display());
    let mut text = String::new();
    for path in files {
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())))
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        text.push_str(&format!("{}\n{json}\n", path.file_name().expect("a file name").to_string_lossy()));
    }
    format!("{:016x}", fnv1a(&text))
}

#[test]
fn the_model_version_records_the_same_results_fixtures() {
    let digest = fixtures_digest();
    let newest = MODEL_VERSIONS.last().expect("at least one model version");
    assert_eq!(
        newest.fixtures_digest,
        digest,
        "the same_results fixtures (crates/cli/tests/fixtures) are not those of model entry {}: \
         a model change that re-blessed them appends ModelEntry {{ fixtures_digest: \"{digest}\", change: \"…\", \
         reaches: … }} \
         to MODEL_VERSIONS in crates/reproduce/src/model_version.rs (never edit an entry), so that runs kept \
         under the old model are not reused",
        MODEL_VERSIONS.len()
    );
    assert!(MODEL_VERSIONS.iter().all(|m| !m.change.is_empty()), "every model version says what changed");
    // An entry that reaches no family re-blessed the fixtures for a field the results
    // gained: its digest must differ from the entry before, or it had no reason to be.
    for pair in MODEL_VERSIONS.windows(2) {
        assert!(
            !pair[1].reaches.is_empty() || pair[1].fixtures_digest != pair[0].fixtures_digest,
            "an entry reaching no runs records new fixtures: {}",
            pair[1].change
        );
    }
}
