//! The output directory: what `reproduce` keeps between invocations.
//!
//! Layout: `DIR/.deltaflash-reproduce` (the marker that says the tool made this
//! directory), `DIR/runs/KEY.json` (one finished run: its input's key JSON as
//! `input_config`, the `model_version` that made it and its `result`, KEY a hash of
//! that JSON and version; see [`RunInput::key_text`] and [`crate::model_version`]; the
//! result carries the run's `wall_seconds` and, for runs made since they are recorded,
//! `cpu_seconds`), the reports (`DIR/ID.md`,
//! `DIR/ID.json`, `DIR/summary.json`, `DIR/results.md`, and `DIR/ID.svg` for an
//! experiment with a figure), and with `--ray` the runs handed to Ray and their results
//! (`DIR/ray/`, see [`crate::ray`]).
//! A run whose file exists, with the same input and model version in it, is reused, so
//! an interrupted `reproduce` resumes where it stopped. A run kept for the same input by
//! an older model version is stale ([`Store::stale`]): not reused, made again under the
//! current version's key (the old file stays until the directory is removed). Every file is written to a temporary name and
//! renamed, so an interruption never leaves a half-written run behind.
//!
//! The tool writes only into a directory it made (or an empty one); any other existing
//! directory is refused unless the caller allows overwriting.

use crate::input::RunInput;
use serde_json::{json, Value};
use std::fs;
use std::path::{Path, PathBuf};

/// The file that marks a directory as `reproduce`'s.
pub const MARKER: &str = ".deltaflash-reproduce";
const RUNS: &str = "runs";

/// An opened output directory.
pub struct Store {
    dir: PathBuf,
}

impl Store {
    /// Opens `dir`, creating it if it does not exist. An existing directory must carry
    /// the marker or be empty, unless `overwrite`.
    pub fn open(dir: &Path, overwrite: bool) -> Result<Store, String> {
        let shown = dir.display();
        if dir.exists() {
            if !dir.is_dir() {
                return Err(format!("--out {shown}: exists and is not a directory"));
            }
            let marked = dir.join(MARKER).is_file();
            let empty = fs::read_dir(dir).map_err(|e| format!("--out {shown}: {e}"))?.next().is_none();
            if !marked && !empty && !overwrite {
                return Err(format!(
                    "--out {shown}: exists and is not a reproduce output directory (it has no {MARKER}); \
                     choose another --out, or pass --overwrite to write into it"
                ));
            }
        }
        fs::create_dir_all(dir.join(RUNS)).map_err(|e| format!("--out {shown}: {e}"))?;
        let store = Store { dir: dir.to_path_buf() };
        store.write(MARKER, "deltaflash reproduce output directory\n")?;
        Ok(store)
    }

    /// `dir` as an output directory to read, if it is one (it carries the marker);
    /// nothing is created or written.
    pub fn existing(dir: &Path) -> Option<Store> {
        dir.join(MARKER).is_file().then(|| Store { dir: dir.to_path_buf() })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The key of a run under the current model (its family's version, see
    /// [`crate::model_version`]): see [`Store::key_under`].
    pub fn key(input: &RunInput) -> String {
        Self::key_under(input, input.model_version())
    }

    /// The key of a run made by model `version`: a 64-bit FNV-1a hash, in hex, of its
    /// input's key JSON followed by the version (version 0, runs kept before versions:
    /// of the JSON alone). The stored file keeps that JSON and version, so a collision
    /// is detected, not reused.
    pub fn key_under(input: &RunInput, version: u32) -> String {
        let mut text = input.key_text();
        if version > 0 {
            text.push_str(&format!("\nmodel version {version}"));
        }
        format!("{:016x}", fnv1a(&text))
    }

    fn run_file(&self, key: &str) -> PathBuf {
        self.dir.join(RUNS).join(format!("{key}.json"))
    }

    /// The stored file of the run of `input` by model `version`, if one was kept for
    /// exactly that input and version.
    fn stored(&self, input: &RunInput, version: u32) -> Option<Value> {
        let text = fs::read_to_string(self.run_file(&Self::key_under(input, version))).ok()?;
        let stored: Value = serde_json::from_str(&text).ok()?;
        let kept_version = stored.get("model_version").map_or(Some(0), Value::as_u64);
        let same = stored.get("input_config") == Some(&input.key_json()) && kept_version == Some(u64::from(version));
        same.then_some(stored)
    }

    /// The stored result of the run of `input`, if one was kept for exactly it by the
    /// current model.
    pub fn load(&self, input: &RunInput) -> Option<Value> {
        self.stored(input, input.model_version())?.get_mut("result").map(Value::take)
    }

    /// Whether a run of `input` is kept only by an older model version: it will be made
    /// again, not reused.
    pub fn stale(&self, input: &RunInput) -> bool {
        (0..input.model_version()).any(|version| self.stored(input, version).is_some())
    }

    /// Keeps a finished run's result, under the current model version.
    pub fn save(&self, input: &RunInput, result: &Value) -> Result<(), String> {
        let stored =
            json!({ "input_config": input.key_json(), "model_version": input.model_version(), "result": result });
        let text = serde_json::to_string_pretty(&stored).map_err(|e| e.to_string())? + "\n";
        self.write(&format!("{RUNS}/{}.json", Self::key(input)), &text)
    }

    /// Writes `name` (relative to the directory) through a temporary file and a rename.
    pub fn write(&self, name: &str, text: &str) -> Result<(), String> {
        let path = self.dir.join(name);
        let temporary = self.dir.join(format!("{name}.partial"));
        fs::write(&temporary, text).map_err(|e| format!("{}: {e}", temporary.display()))?;
        fs::rename(&temporary, &path).map_err(|e| format!("{}: {e}", path.display()))
    }
}

/// The 64-bit FNV-1a hash of `text`: run keys, and the digest of the `same_results`
/// fixtures that [`crate::model_version`] records.
pub fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3))
}

#[cfg(test)]
mod tests {
    use super::*;
    use workloads::ExperimentConfig;

    #[test]
    fn a_foreign_directory_is_refused_an_empty_or_own_one_is_not() {
        let tmp = tempfile::tempdir().unwrap();
        let foreign = tmp.path().join("foreign");
        fs::create_dir(&foreign).unwrap();
        fs::write(foreign.join("notes.txt"), "mine").unwrap();
        let e = Store::open(&foreign, false).err().expect("refused");
        assert!(e.contains("not a reproduce output directory"), "{e}");
        assert!(!foreign.join(MARKER).exists(), "nothing written into a refused directory");
        Store::open(&foreign, true).expect("--overwrite writes into it");
        assert_eq!(fs::read_to_string(foreign.join("notes.txt")).unwrap(), "mine");

        let empty = tmp.path().join("empty");
        fs::create_dir(&empty).unwrap();
        Store::open(&empty, false).expect("an empty directory is taken");
        Store::open(&empty, false).expect("and again, now marked");
        let file = tmp.path().join("file");
        fs::write(&file, "x").unwrap();
        assert!(Store::open(&file, true).err().unwrap().contains("not a directory"));
    }

    #[test]
    fn a_run_is_found_by_its_input_only() {
        let tmp = tempfile::tempdir().unwrap();
        let store = Store::open(&tmp.path().join("out"), false).unwrap();
        let config = ExperimentConfig::default();
        let input = RunInput::Engine(config.clone());
        assert_eq!(store.load(&input), None);
        store.save(&input, &json!({"throughput_tps": 5.0})).unwrap();
        assert_eq!(store.load(&input), Some(json!({"throughput_tps": 5.0})));
        let mut changed = config.clone();
        changed.seed = 2;
        let other = RunInput::Engine(changed);
        assert_ne!(Store::key(&input), Store::key(&other));
        assert_eq!(store.load(&other), None);
        // A file under the key whose input differs (a collision) is not reused.
        let path = store.run_file(&Store::key(&other));
        fs::write(&path, serde_json::to_string(&json!({"input_config": config, "result": {}})).unwrap()).unwrap();
        assert_eq!(store.load(&other), None);
    }

    /// The key and file of an engine run as output directories kept them before runs
    /// carried a model version: FNV-1a of the config's JSON, the config itself as
    /// `input_config`; written here by hand, not through the store. Such a run is stale:
    /// not reused, and saving the run again keeps it beside the old file.
    #[test]
    fn a_run_kept_before_model_versions_is_stale_not_reused() {
        let tmp = tempfile::tempdir().unwrap();
        let store = Store::open(&tmp.path().join("out"), false).unwrap();
        let mut config = ExperimentConfig::default();
        config.workload.name = "tpcc".into();
        config.device.blocks_per_chip = Some(48);
        let text = serde_json::to_string(&config).unwrap();
        let hash =
            text.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3));
        let file = tmp.path().join("out").join(RUNS).join(format!("{hash:016x}.json"));
        let stored = json!({ "input_config": config, "result": { "throughput_tps": 7.0 } });
        fs::write(&file, serde_json::to_string_pretty(&stored).unwrap()).unwrap();
        let input = RunInput::Engine(config);
        assert_eq!(store.load(&input), None, "a run of an unknown model is not reused");
        assert!(store.stale(&input));
        store.save(&input, &json!({ "throughput_tps": 8.0 })).unwrap();
        assert_eq!(store.load(&input), Some(json!({ "throughput_tps": 8.0 })));
        assert!(file.is_file(), "the old run is left where it was");
    }

    /// A run kept by the previous model version (its file under that version's key,
    /// with that version in it) is stale; one under the current version is not.
    #[test]
    fn a_run_of_an_older_model_version_is_stale() {
        let tmp = tempfile::tempdir().unwrap();
        let store = Store::open(&tmp.path().join("out"), false).unwrap();
        let input = RunInput::Engine(ExperimentConfig::default());
        let older = input.model_version() - 1;
        let stored = json!({ "input_config": input.key_json(), "model_version": older, "result": {} });
        fs::write(store.run_file(&Store::key_under(&input, older)), stored.to_string()).unwrap();
        assert_ne!(Store::key_under(&input, older), Store::key(&input));
        assert_eq!(store.load(&input), None);
        assert!(store.stale(&input));
        // The current key holding another version's file (a forged or mixed-up file)
        // is not reused either.
        fs::write(store.run_file(&Store::key(&input)), stored.to_string()).unwrap();
        assert_eq!(store.load(&input), None);
        store.save(&input, &json!({ "throughput_tps": 1.0 })).unwrap();
        assert_eq!(store.load(&input), Some(json!({ "throughput_tps": 1.0 })));
        let saved: Value =
            serde_json::from_str(&fs::read_to_string(store.run_file(&Store::key(&input))).unwrap()).unwrap();
        assert_eq!(saved["model_version"], input.model_version());
    }
}
