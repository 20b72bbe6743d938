//! The IPA advisor on a finished baseline run (`advisor::baseline`): the run's database
//! image and result JSON in; the per-object statistics, the recommendation and the
//! layout's DDL out, as JSON. The Python package runs the baseline itself.

use pyo3::prelude::*;
use serde_json::json;
use std::path::PathBuf;

/// Analyses the baseline run whose image is at `image` and whose result JSON (as
/// `run_experiment` returns it) is `result_json`; `title` heads the DDL. Returns JSON
/// with `objects`, `recommendation`, `ddl`, `log_records` and `sources`. Raises
/// DeltaflashError naming the image or the run.
#[pyfunction]
pub fn advise_baseline(py: Python<'_>, image: PathBuf, result_json: &str, title: &str) -> PyResult<String> {
    let result: serde_json::Value =
        serde_json::from_str(result_json).map_err(|e| crate::failure(format!("the baseline run's result: {e}")))?;
    py.allow_threads(|| {
        let from_image = advisor::baseline::read_image(&image)?;
        let analysis = advisor::baseline::analyze(from_image, &result, "the baseline run")?;
        let ddl = advisor::render::ddl(&analysis.recommendation, title);
        let sources: Vec<_> = advisor::SOURCES.iter().map(|(f, s)| json!({"figure": f, "source": s})).collect();
        Ok::<_, String>(
            json!({
                "objects": analysis.stats,
                "recommendation": analysis.recommendation,
                "ddl": ddl,
                "log_records": analysis.log_records,
                "sources": sources,
            })
            .to_string(),
        )
    })
    .map_err(crate::failure)
}
