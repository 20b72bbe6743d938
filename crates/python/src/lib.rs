//! `deltaflash._deltaflash`: the native module under the Python package `deltaflash`
//! (python/). A thin binding with no logic of its own: experiments go through the
//! `workloads` experiment API as JSON configs and results, the device through
//! `flash::Flash`, SQL through `engine::Database`, the IPA advisor through
//! `advisor::baseline`, `reproduce`'s runs through `reproduce::RunInput`. The Python package turns the JSON into dicts and DataFrames.
//!
//! Invariants: a run releases the GIL (`allow_threads`) and takes it back only to look
//! for signals and to call the progress callback, at most every 100 ms of wall time, so
//! Ctrl-C stops a run within about that long and parallel threads run in parallel.
//! Every Rust error reaches Python as an exception carrying the Rust message:
//! [`ConfigError`] for a config that cannot run, [`Cancelled`] for a run stopped by its
//! `CancelToken`, [`DeltaflashError`] for everything else; nothing here panics on
//! bad input.

mod advice;
mod database;
mod device;
mod experiment;
mod reproduce;

use pyo3::create_exception;
use pyo3::prelude::*;

create_exception!(
    _deltaflash,
    DeltaflashError,
    pyo3::exceptions::PyException,
    "An error of the DeltaFlash engine, device or workload; the message is the Rust one."
);
create_exception!(
    _deltaflash,
    ConfigError,
    DeltaflashError,
    "An experiment config that cannot run: the message names the field."
);
create_exception!(_deltaflash, Cancelled, DeltaflashError, "A run stopped by its CancelToken.");

/// A Rust error as a [`DeltaflashError`] with its message.
pub(crate) fn failure(error: impl std::fmt::Display) -> PyErr {
    DeltaflashError::new_err(error.to_string())
}

#[pymodule]
fn _deltaflash(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("DeltaflashError", py.get_type::<DeltaflashError>())?;
    m.add("ConfigError", py.get_type::<ConfigError>())?;
    m.add("Cancelled", py.get_type::<Cancelled>())?;
    m.add("GIT_COMMIT", workloads::experiment::GIT_COMMIT)?;
    m.add("PRESETS", nand::PRESET_NAMES.to_vec())?;
    m.add_class::<experiment::CancelToken>()?;
    m.add_function(wrap_pyfunction!(experiment::run_experiment, m)?)?;
    m.add_function(wrap_pyfunction!(experiment::resolve_config, m)?)?;
    m.add_function(wrap_pyfunction!(experiment::registered_workloads, m)?)?;
    m.add_function(wrap_pyfunction!(experiment::storage_config, m)?)?;
    m.add_function(wrap_pyfunction!(experiment::check_grid_points, m)?)?;
    m.add_function(wrap_pyfunction!(advice::advise_baseline, m)?)?;
    m.add_function(wrap_pyfunction!(reproduce::reproduce_runs, m)?)?;
    m.add_function(wrap_pyfunction!(reproduce::run_input, m)?)?;
    m.add_class::<device::Device>()?;
    m.add_class::<database::Database>()?;
    Ok(())
}
