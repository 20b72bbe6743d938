//! The run history on disk: one JSON record per run, `DATA/runs/ID.json`, and scratch
//! device images under `DATA/tmp/`. Only numeric ids become file names.
//!
//! A record is written to `ID.json.tmp`, synced, and renamed over `ID.json`, so a crash
//! leaves the old record or none. At start every `ID.json` is read; one that does not
//! parse is reported (by file name) and skipped, and leftover scratch files are removed —
//! only names the store makes (`ID.json.tmp`, `tmp/ID.img`), and only in a directory that
//! is new, empty or already a data directory (it has the `lock` file): a directory of the
//! user's with a `tmp/` in it is refused, not cleaned.
//!
//! Every record the dashboard writes says so (`"written_by": "deltaflash serve"`); only
//! such a record is ever deleted ([`Store::delete`]), so a file put into `runs/` by hand
//! or by another tool stays. Tags and run sets live in the record ([`Store::annotate`]).

use serde::Serialize;
use serde_json::Value;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The `written_by` value of the records this dashboard writes.
pub const WRITTEN_BY: &str = "deltaflash serve";

/// What the run list shows of a run, kept in memory; the full record stays on disk.
#[derive(Clone, Debug, Serialize)]
pub struct Summary {
    pub id: u64,
    pub label: String,
    pub status: String,
    pub workload: String,
    /// The workload's parameters (scale, warehouses, …) without its name.
    pub params: Value,
    pub ipa: String,
    pub storage: String,
    pub seed: Option<u64>,
    pub warmup_s: Option<f64>,
    pub sim_time_s: Option<f64>,
    /// Wall seconds of the whole run (loading included), when it finished.
    pub wall_seconds: Option<f64>,
    pub submitted_unix_s: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub throughput_tps: Option<f64>,
    pub has_analysis: bool,
    pub has_device: bool,
    pub tags: Vec<String>,
    pub sets: Vec<String>,
    /// The record was written by this dashboard, so it may delete it.
    pub deletable: bool,
}

impl Summary {
    /// The summary of a stored record; `None` if it lacks the fields every record has.
    pub fn of(record: &Value) -> Option<Summary> {
        let text = |v: &Value| v.as_str().map(str::to_string);
        let names = |key: &str| -> Vec<String> {
            record.get(key).and_then(Value::as_array).map_or_else(Vec::new, |a| a.iter().filter_map(text).collect())
        };
        let config = record.get("config")?;
        let mut params = config.get("workload").cloned().unwrap_or_else(|| Value::Object(Default::default()));
        if let Some(map) = params.as_object_mut() {
            map.remove("name");
        }
        Some(Summary {
            id: record.get("id")?.as_u64()?,
            label: text(record.get("label")?)?,
            status: text(record.get("status")?)?,
            workload: config.pointer("/workload/name").and_then(text).unwrap_or_default(),
            params,
            ipa: config.pointer("/engine/ipa").and_then(text).unwrap_or_default(),
            storage: match config.get("storage") {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Object(m)) => m.keys().next().cloned().unwrap_or_default(),
                _ => String::new(),
            },
            seed: config.get("seed").and_then(Value::as_u64),
            warmup_s: config.pointer("/driver/warmup_s").and_then(Value::as_f64),
            sim_time_s: config.pointer("/driver/sim_time_s").and_then(Value::as_f64),
            wall_seconds: record.pointer("/result/wall_seconds").and_then(Value::as_f64),
            submitted_unix_s: record.get("submitted_unix_s")?.as_u64()?,
            throughput_tps: record.pointer("/result/throughput_tps").and_then(Value::as_f64),
            has_analysis: record.get("analysis").is_some_and(|a| !a.is_null()),
            has_device: record.get("device").is_some_and(|d| !d.is_null()),
            tags: names("tags"),
            sets: names("sets"),
            deletable: written_here(record),
        })
    }
}

pub struct Store {
    runs: PathBuf,
    tmp: PathBuf,
    /// Held for the lock: two servers on one directory would hand out the same ids.
    _lock: fs::File,
}

impl Store {
    /// Opens `dir`, creating it; returns the store, the summaries of the stored runs
    /// (by id) and a message for each record that was skipped.
    pub fn open(dir: &Path) -> Result<(Store, Vec<Summary>, Vec<String>), String> {
        refuse_foreign_directory(dir)?;
        let (runs, tmp) = (dir.join("runs"), dir.join("tmp"));
        for d in [&runs, &tmp] {
            fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
        }
        let lock_path = dir.join("lock");
        let lock = fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(|e| format!("{}: {e}", lock_path.display()))?;
        match rustix::fs::flock(&lock, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => {}
            Err(rustix::io::Errno::WOULDBLOCK) => {
                return Err(format!("{}: another deltaflash serve uses this data directory", dir.display()))
            }
            Err(e) => return Err(format!("{}: {e}", lock_path.display())),
        }
        let store = Store { runs, tmp, _lock: lock };
        let (mut summaries, mut skipped) = (Vec::new(), Vec::new());
        let entries = fs::read_dir(&store.runs).map_err(|e| format!("{}: {e}", store.runs.display()))?;
        for entry in entries {
            let path = entry.map_err(|e| format!("{}: {e}", store.runs.display()))?.path();
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
            if let Some(id) = name.strip_suffix(".json.tmp") {
                if parse_id(id).is_some() {
                    let _ = fs::remove_file(&path);
                }
                continue;
            }
            let Some(id) = name.strip_suffix(".json").and_then(parse_id) else { continue };
            let parsed = fs::read_to_string(&path)
                .map_err(|e| e.to_string())
                .and_then(|text| serde_json::from_str::<Value>(&text).map_err(|e| e.to_string()));
            match parsed.map(|record| Summary::of(&record)) {
                Ok(Some(s)) if s.id == id => summaries.push(s),
                Ok(_) => skipped.push(format!("{}: not a run record of run {id}", path.display())),
                Err(e) => skipped.push(format!("{}: {e}", path.display())),
            }
        }
        summaries.sort_by_key(|s| s.id);
        // Scratch images of runs that were under way when the process died.
        if let Ok(entries) = fs::read_dir(&store.tmp) {
            for entry in entries.flatten() {
                let name = entry.file_name();
                if name.to_str().and_then(|n| n.strip_suffix(".img")).and_then(parse_id).is_some() {
                    let _ = fs::remove_file(entry.path());
                }
            }
        }
        Ok((store, summaries, skipped))
    }

    fn record_path(&self, id: u64) -> PathBuf {
        self.runs.join(format!("{id}.json"))
    }

    /// A fresh path for run `id`'s device image.
    pub fn scratch_image(&self, id: u64) -> PathBuf {
        let path = self.tmp.join(format!("{id}.img"));
        let _ = fs::remove_file(&path);
        path
    }

    /// Writes run `id`'s record atomically.
    pub fn save(&self, id: u64, record: &Value) -> Result<(), String> {
        let path = self.record_path(id);
        let tmp = self.runs.join(format!("{id}.json.tmp"));
        let at = |e: std::io::Error| format!("{}: {e}", tmp.display());
        let text = serde_json::to_string_pretty(record).map_err(|e| e.to_string())? + "\n";
        let mut file = fs::File::create(&tmp).map_err(at)?;
        file.write_all(text.as_bytes()).map_err(at)?;
        file.sync_all().map_err(at)?;
        fs::rename(&tmp, &path).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Run `id`'s record, if stored.
    pub fn load(&self, id: u64) -> Result<Option<Value>, String> {
        let path = self.record_path(id);
        match fs::read_to_string(&path) {
            Ok(text) => serde_json::from_str(&text).map(Some).map_err(|e| format!("{}: {e}", path.display())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(format!("{}: {e}", path.display())),
        }
    }

    /// Deletes run `id`'s record, only if the dashboard wrote it.
    pub fn delete(&self, id: u64) -> Result<(), Untouched> {
        let record = self.load(id).map_err(Untouched::Io)?.ok_or(Untouched::NotFound)?;
        if !written_here(&record) {
            return Err(Untouched::Foreign);
        }
        let path = self.record_path(id);
        fs::remove_file(&path).map_err(|e| Untouched::Io(format!("{}: {e}", path.display())))
    }

    /// Replaces run `id`'s tags and run sets; the updated record.
    pub fn annotate(&self, id: u64, tags: &[String], sets: &[String]) -> Result<Value, Untouched> {
        let mut record = self.load(id).map_err(Untouched::Io)?.ok_or(Untouched::NotFound)?;
        if !written_here(&record) {
            return Err(Untouched::Foreign);
        }
        let map = record.as_object_mut().ok_or(Untouched::Foreign)?;
        map.insert("tags".into(), serde_json::json!(tags));
        map.insert("sets".into(), serde_json::json!(sets));
        self.save(id, &record).map_err(Untouched::Io)?;
        Ok(record)
    }
}

/// Whether the dashboard wrote `record` (its `written_by` mark).
fn written_here(record: &Value) -> bool {
    record.get("written_by").and_then(Value::as_str) == Some(WRITTEN_BY)
}

/// Why a stored record was not changed or deleted.
#[derive(Debug, PartialEq)]
pub enum Untouched {
    NotFound,
    /// The record was not written by this dashboard.
    Foreign,
    Io(String),
}

/// Refuses a `--data` directory that holds files but is not a data directory (no `lock`).
fn refuse_foreign_directory(dir: &Path) -> Result<(), String> {
    let mut entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(format!("{}: {e}", dir.display())),
    };
    if entries.next().is_none() || dir.join("lock").is_file() {
        return Ok(());
    }
    Err(format!(
        "{}: not a deltaflash data directory (it holds files but no `lock`); choose a new or empty directory",
        dir.display()
    ))
}

/// A run id: 1 to 18 decimal digits (so it fits u64 and names only a file of ours).
pub fn parse_id(text: &str) -> Option<u64> {
    if text.is_empty() || text.len() > 18 || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ids_are_digits_only() {
        assert_eq!(parse_id("42"), Some(42));
        for bad in ["", "../1", "1.json", "-1", "1e3", "1234567890123456789", "٣"] {
            assert_eq!(parse_id(bad), None, "{bad}");
        }
    }

    #[test]
    fn only_its_own_leftovers_are_removed_and_a_foreign_directory_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir(dir.path().join("tmp")).unwrap();
        fs::write(dir.path().join("tmp/notes.txt"), "mine").unwrap();
        let e = Store::open(dir.path()).err().unwrap();
        assert!(e.contains("not a deltaflash data directory"), "{e}");
        assert_eq!(fs::read_to_string(dir.path().join("tmp/notes.txt")).unwrap(), "mine");
        let data = dir.path().join("data");
        drop(Store::open(&data).unwrap());
        for name in ["tmp/7.img", "tmp/keep.img", "runs/8.json.tmp", "runs/x.json.tmp"] {
            fs::write(data.join(name), "x").unwrap();
        }
        drop(Store::open(&data).unwrap());
        let left = |name: &str| data.join(name).exists();
        assert!(!left("tmp/7.img") && !left("runs/8.json.tmp"), "its own leftovers go");
        assert!(left("tmp/keep.img") && left("runs/x.json.tmp"), "other names stay");
    }

    #[test]
    fn only_records_the_dashboard_wrote_are_deleted_or_tagged() {
        let dir = tempfile::tempdir().unwrap();
        let (store, _, _) = Store::open(dir.path()).unwrap();
        let record = |id: u64| {
            json!({"id": id, "label": "a", "status": "done", "submitted_unix_s": 5,
            "config": {"workload": {"name": "tpcb", "scale": 2}, "seed": 7}})
        };
        let mut ours = record(1);
        ours["written_by"] = json!(WRITTEN_BY);
        store.save(1, &ours).unwrap();
        let foreign = serde_json::to_string(&record(2)).unwrap();
        fs::write(dir.path().join("runs/2.json"), &foreign).unwrap();
        let tags = vec!["paper".to_string()];
        assert_eq!(store.annotate(2, &tags, &[]), Err(Untouched::Foreign));
        assert_eq!(store.delete(2), Err(Untouched::Foreign));
        assert_eq!(fs::read_to_string(dir.path().join("runs/2.json")).unwrap(), foreign, "left as it was");
        assert_eq!(store.delete(3), Err(Untouched::NotFound));
        let tagged = store.annotate(1, &tags, &["sweep".to_string()]).unwrap();
        let s = Summary::of(&tagged).unwrap();
        assert_eq!((s.tags, s.sets, s.deletable), (tags, vec!["sweep".to_string()], true));
        assert_eq!((s.seed, s.params), (Some(7), json!({"scale": 2})));
        assert_eq!(store.load(1).unwrap().unwrap(), tagged);
        store.delete(1).unwrap();
        assert!(!dir.path().join("runs/1.json").exists());
        assert!(!Summary::of(&record(2)).unwrap().deletable);
    }

    #[test]
    fn records_survive_reopening_and_broken_ones_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let (store, runs, _) = Store::open(dir.path()).unwrap();
        assert!(runs.is_empty());
        let record = json!({"id": 3, "label": "a", "status": "done", "submitted_unix_s": 5,
            "config": {"workload": {"name": "tpcb"}, "engine": {"ipa": "0x0"}, "storage": "noftl"},
            "result": {"throughput_tps": 12.5}});
        store.save(3, &record).unwrap();
        fs::write(dir.path().join("runs/4.json"), "{not json").unwrap();
        drop(store);
        let (store, runs, skipped) = Store::open(dir.path()).unwrap();
        assert_eq!(runs.len(), 1);
        assert_eq!((runs[0].id, runs[0].throughput_tps), (3, Some(12.5)));
        assert_eq!(runs[0].workload, "tpcb");
        assert_eq!(skipped.len(), 1);
        assert!(skipped[0].contains("4.json"), "{skipped:?}");
        assert_eq!(store.load(3).unwrap().unwrap(), record);
        assert_eq!(store.load(9).unwrap(), None);
        let e = Store::open(dir.path()).err().unwrap();
        assert!(e.contains("another deltaflash serve"), "{e}");
        drop(store);
        assert!(Store::open(dir.path()).is_ok(), "the lock goes with the store");
    }
}
