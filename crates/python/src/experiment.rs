//! Experiments: a JSON `ExperimentConfig` in, the `ExperimentResult` JSON and the
//! Table-7 rows out (`workloads::Experiment`). The run itself happens without the GIL.

use crate::{Cancelled, ConfigError};
use flash::ftl::{FtlConfig, FtlKind};
use pyo3::prelude::*;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use workloads::config::{IplStorageConfig, StorageConfig};
use workloads::experiment::Progress;
use workloads::registry::REGISTRY;
use workloads::{Control, Experiment, ExperimentConfig, ExperimentError};

/// How often a run looks for signals and reports progress, in wall time.
const POLL: Duration = Duration::from_millis(100);

/// A flag that stops the runs it is passed to (from another thread: a sweep's worker
/// pool on Ctrl-C). Runs notice within one progress step.
#[pyclass(module = "deltaflash._deltaflash")]
#[derive(Default)]
pub struct CancelToken {
    flag: Arc<AtomicBool>,
}

#[pymethods]
impl CancelToken {
    #[new]
    fn new() -> Self {
        CancelToken::default()
    }

    /// Stops every run holding this token.
    fn cancel(&self) {
        self.flag.store(true, Ordering::Relaxed);
    }

    #[getter]
    fn cancelled(&self) -> bool {
        self.flag.load(Ordering::Relaxed)
    }
}

fn experiment_error(e: ExperimentError) -> PyErr {
    match e {
        ExperimentError::Config(_) => ConfigError::new_err(e.to_string()),
        ExperimentError::Stopped { .. } => Cancelled::new_err(e.to_string()),
        ExperimentError::Failed { .. } => crate::failure(e),
    }
}

fn checked(config_json: &str) -> PyResult<Experiment> {
    let config = ExperimentConfig::from_json(config_json).map_err(|e| ConfigError::new_err(format!("config: {e}")))?;
    Experiment::new(config).map_err(experiment_error)
}

/// The config with its defaults filled in, as JSON; raises ConfigError if it cannot run.
#[pyfunction]
pub fn resolve_config(config_json: &str) -> PyResult<String> {
    let experiment = checked(config_json)?;
    serde_json::to_string(experiment.config()).map_err(crate::failure)
}

/// `storage`'s config as JSON: `noftl`, `ipl` or `ftl:KIND` (page, dftl, block, bast,
/// fast) with the defaults of that store.
#[pyfunction]
pub fn storage_config(text: &str) -> PyResult<String> {
    let storage = match text.to_ascii_lowercase().as_str() {
        "noftl" => StorageConfig::Noftl,
        "ipl" => StorageConfig::Ipl(IplStorageConfig::default()),
        other => match other.strip_prefix("ftl:").and_then(FtlKind::parse) {
            Some(kind) => StorageConfig::Ftl(FtlConfig::new(kind)),
            None => {
                return Err(ConfigError::new_err(format!(
                    "storage: {} is not noftl, ipl, ftl:page, ftl:dftl, ftl:block, ftl:bast or ftl:fast",
                    workloads::limits::quote(text)
                )))
            }
        },
    };
    serde_json::to_string(&storage).map_err(crate::failure)
}

/// Raises ConfigError for a grid of more than 10,000 points unless `yes` (the command
/// line's check and message, `yes=True` for `--yes`).
#[pyfunction]
pub fn check_grid_points(points: u128, yes: bool) -> PyResult<()> {
    workloads::limits::check_grid_points(u64::try_from(points).ok(), yes, "yes=True").map_err(ConfigError::new_err)
}

/// The registered workloads: (name, about, default parameters as JSON).
#[pyfunction]
pub fn registered_workloads() -> Vec<(String, String, String)> {
    REGISTRY
        .iter()
        .map(|w| (w.name.to_string(), w.about.to_string(), serde_json::Value::from(w.defaults()).to_string()))
        .collect()
}

/// Runs one experiment. Returns the result JSON and the Table-7 rows (label, value).
/// `on_progress(sim_seconds, total_sim_seconds, throughput_tps)` is called at most every
/// 100 ms; an exception it raises, or a signal's (Ctrl-C: KeyboardInterrupt), stops the
/// run and is raised here; `cancel` stops it with Cancelled.
#[pyfunction]
#[pyo3(signature = (config_json, cancel = None, on_progress = None))]
pub fn run_experiment(
    py: Python<'_>,
    config_json: &str,
    cancel: Option<PyRef<'_, CancelToken>>,
    on_progress: Option<PyObject>,
) -> PyResult<(String, Vec<(String, f64)>)> {
    let experiment = checked(config_json)?;
    let flag = cancel.map(|c| c.flag.clone());
    let mut raised: Option<PyErr> = None;
    let result = py.allow_threads(|| {
        let mut polled = Instant::now();
        experiment.run(&mut |progress| {
            if flag.as_ref().is_some_and(|f| f.load(Ordering::Relaxed)) {
                return Control::Stop;
            }
            let (sim_seconds, total_sim_seconds, throughput_tps) = match progress {
                Progress::Running { sim_seconds, total_sim_seconds, throughput_tps, .. } => {
                    (sim_seconds, total_sim_seconds, throughput_tps)
                }
                _ => (0.0, 0.0, 0.0),
            };
            if polled.elapsed() < POLL {
                return Control::Continue;
            }
            polled = Instant::now();
            Python::with_gil(|py| {
                let reported = py.check_signals().and_then(|()| match &on_progress {
                    Some(f) if total_sim_seconds > 0.0 => {
                        f.call1(py, (sim_seconds, total_sim_seconds, throughput_tps)).map(drop)
                    }
                    _ => Ok(()),
                });
                match reported {
                    Ok(()) => Control::Continue,
                    Err(e) => {
                        raised = Some(e);
                        Control::Stop
                    }
                }
            })
        })
    });
    if let Some(e) = raised {
        return Err(e);
    }
    let result = result.map_err(experiment_error)?;
    let rows = result.table_rows().into_iter().map(|(label, v)| (label.to_string(), v)).collect();
    let json = serde_json::to_string(&result.to_json()).map_err(crate::failure)?;
    Ok((json, rows))
}
