//! The SQL engine on a database image (`engine::Database`), for small experiments from
//! Python: `Database.open(path)` creates the image on a fresh device if the file does
//! not exist, else opens it (restart recovery included); `execute` runs statements;
//! `close` checkpoints and writes the image. Commits are durable against process death
//! (the image's sync mode is `normal`: synced at checkpoints).

use crate::failure;
use engine::db::BufferSize;
use engine::types::Value;
use engine::{DbOptions, QueryResult};
use nand::{MemoryStorage, SyncMode};
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use std::path::PathBuf;
use workloads::config::DeviceConfig;

/// An object's (name, kind, region, [NxM] scheme, I/O counters as JSON).
type ObjectRow = (String, String, String, String, String);

/// A database image, open.
#[pyclass(module = "deltaflash._deltaflash", unsendable)]
pub struct Database {
    /// None once closed.
    db: Option<engine::Database>,
    path: PathBuf,
}

fn value(py: Python<'_>, v: &Value) -> PyResult<PyObject> {
    Ok(match v {
        Value::Null => py.None(),
        Value::Int(i) => i.into_pyobject(py)?.into_any().unbind(),
        Value::Float(x) => x.into_pyobject(py)?.into_any().unbind(),
        Value::Text(s) => s.into_pyobject(py)?.into_any().unbind(),
        // Exact, as the engine holds it.
        Value::Decimal { .. } => py.import("decimal")?.getattr("Decimal")?.call1((v.to_string(),))?.unbind(),
    })
}

impl Database {
    fn open_db(&mut self) -> PyResult<&mut engine::Database> {
        let path = &self.path;
        self.db.as_mut().ok_or_else(|| failure(format!("{}: the database is closed", path.display())))
    }
}

#[pymethods]
impl Database {
    /// Opens the image at `path`, or creates it on a fresh device of `preset` (with
    /// `chips` and `blocks_per_chip` if given) when no such file exists.
    /// `buffer_pages`: buffer pool frames.
    #[staticmethod]
    #[pyo3(signature = (path, *, preset = "paper-emulator", chips = None, blocks_per_chip = None, db_page_bytes = 4096, buffer_pages = 1024))]
    fn open(
        path: PathBuf,
        preset: &str,
        chips: Option<u32>,
        blocks_per_chip: Option<u32>,
        db_page_bytes: usize,
        buffer_pages: usize,
    ) -> PyResult<Self> {
        let options =
            DbOptions { page_bytes: db_page_bytes, buffer: BufferSize::Pages(buffer_pages), ..DbOptions::default() };
        let at = |e: &dyn std::fmt::Display| failure(format!("{}: {e}", path.display()));
        let db = if path.exists() {
            let storage = MemoryStorage::open_image(&path).map_err(|e| at(&e))?;
            engine::Database::open(nand::Device::new(Box::new(storage)), options).map_err(|e| at(&e))?
        } else {
            let config = DeviceConfig { preset: preset.to_string(), chips, blocks_per_chip, ..DeviceConfig::default() };
            let geometry = config.geometry().map_err(|e| crate::ConfigError::new_err(e.to_string()))?;
            let storage =
                MemoryStorage::create_image_with(&path, geometry, true, SyncMode::Normal).map_err(|e| at(&e))?;
            engine::Database::create(nand::Device::new(Box::new(storage)), options).map_err(|e| {
                // Leave no half-made image behind.
                let _ = std::fs::remove_file(&path);
                at(&e)
            })?
        };
        Ok(Database { db: Some(db), path })
    }

    /// Runs the statements in `sql`; one tuple per statement: ("rows", columns, rows),
    /// ("count", verb, n) or ("done", message). The first error raises; inside BEGIN …
    /// COMMIT it fails the transaction (rolled back; later statements raise until
    /// ROLLBACK, and COMMIT raises saying nothing was committed), as the engine does.
    fn execute<'py>(&mut self, py: Python<'py>, sql: &str) -> PyResult<Vec<Bound<'py, PyTuple>>> {
        let results = self.open_db()?.execute(sql).map_err(failure)?;
        let mut out = Vec::with_capacity(results.len());
        for result in results {
            out.push(match result {
                QueryResult::Rows { columns, rows } => {
                    let rows: Vec<Vec<PyObject>> = rows
                        .iter()
                        .map(|row| row.iter().map(|v| value(py, v)).collect::<PyResult<_>>())
                        .collect::<PyResult<_>>()?;
                    ("rows", columns, rows).into_pyobject(py)?
                }
                QueryResult::Count { verb, rows } => ("count", verb, rows).into_pyobject(py)?,
                QueryResult::Done(message) => ("done", message, py.None()).into_pyobject(py)?,
            });
        }
        Ok(out)
    }

    /// Per-object I/O counters.
    fn object_stats(&mut self) -> PyResult<Vec<ObjectRow>> {
        let db = self.open_db()?;
        db.object_stats()
            .into_iter()
            .map(|s| {
                let counters = serde_json::to_string(&s.counters).map_err(failure)?;
                Ok((s.name, s.kind.to_string(), s.region, s.scheme.to_string(), counters))
            })
            .collect()
    }

    /// Checkpoints and writes the image; the object cannot be used after.
    fn close(&mut self) -> PyResult<()> {
        if let Some(db) = self.db.take() {
            db.close().map(drop).map_err(|e| failure(format!("saving {}: {e}", self.path.display())))?;
        }
        Ok(())
    }

    #[getter]
    fn closed(&self) -> bool {
        self.db.is_none()
    }

    /// Whether statements run inside a transaction BEGIN opened (failed or not).
    #[getter]
    fn in_transaction(&self) -> bool {
        self.db.as_ref().is_some_and(|db| db.in_transaction())
    }
}
