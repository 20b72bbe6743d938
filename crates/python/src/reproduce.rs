//! `reproduce`'s runs from Python: the planned runs of experiments (their keys and
//! input JSON), and one run executed from its input JSON, so a Ray task can make a run
//! that `deltaflash reproduce --ray` hands out. The run itself happens without the GIL.

use crate::ConfigError;
use pyo3::prelude::*;
use reproduce::store::Store;
use reproduce::{RunInput, Scale};

/// The runs of the experiments `ids` at `scale` (`smoke`, `quick`, `full`), each once:
/// (key, label, input JSON), in the order `deltaflash reproduce` plans them.
#[pyfunction]
pub fn reproduce_runs(ids: Vec<String>, scale: &str) -> PyResult<Vec<(String, String, String)>> {
    let scale = match scale {
        "smoke" => Scale::Smoke,
        "quick" => Scale::Quick,
        "full" => Scale::Full,
        other => {
            let shown = workloads::limits::quote(other);
            return Err(ConfigError::new_err(format!("scale: {shown} is not smoke, quick or full")));
        }
    };
    let mut runs: Vec<(String, String, String)> = Vec::new();
    for id in &ids {
        let e = reproduce::catalogue::find(id)
            .ok_or_else(|| ConfigError::new_err(format!("{} is not an experiment id", workloads::limits::quote(id))))?;
        for spec in e.implementation.as_ref().map_or_else(Vec::new, |i| reproduce::ablation::all_runs(i, scale)) {
            let key = Store::key(&spec.input);
            if runs.iter().all(|(k, _, _)| *k != key) {
                let json = serde_json::to_string(&spec.input).map_err(crate::failure)?;
                runs.push((key, format!("{id} {}", spec.label), json));
            }
        }
    }
    Ok(runs)
}

/// Makes one run from its input JSON (`{"kind": …, "config": …}`, as
/// `reproduce_runs` gives it) and returns its result JSON, with `wall_seconds` and
/// `cpu_seconds`. Raises ConfigError for an input that cannot run.
#[pyfunction]
pub fn run_input(py: Python<'_>, input_json: &str) -> PyResult<String> {
    let input: RunInput = serde_json::from_str(input_json)
        .map_err(|e| ConfigError::new_err(format!("run input: {}", workloads::limits::cut_quoted(&e.to_string()))))?;
    input.check().map_err(ConfigError::new_err)?;
    let result = py.allow_threads(|| input.execute("", &|_| {})).map_err(crate::failure)?;
    serde_json::to_string(&result).map_err(crate::failure)
}
