//! workloads — transactions run against the engine's API, the driver that runs them in
//! simulated time, and the experiment API every front end calls.
//!
//! [`experiment`]: one run from a serialisable [`config`] with a progress callback and a
//! result struct. [`registry`]: the workloads by name, with their parameters.
//! [`workload`]: the trait a workload implements. [`driver`]: K closed-loop terminals,
//! warm-up, metrics as in the IPA paper. [`precondition`]: the device filled and aged to
//! GC steady state before the measurement. [`limits`]: the range of every number.
//! [`tpcb`]: TPC-B. [`tpcc`]: TPC-C. [`tatp`]: TATP. [`linkbench`]: LinkBench. [`bank`]: the
//! power-cut torture test. [`sqlite`]: sqlite-bench, YCSB and TPC-C on real SQLite, behind a host trait.
//! [`blocktrace`]: block traces (MSR Cambridge, blkparse, fio iologs, SPC) read as requests.

#![forbid(unsafe_code)]

pub mod bank;
pub mod blocktrace;
pub mod build_info;
pub mod config;
pub mod config_error;
pub mod driver;
pub mod experiment;
pub mod limits;
pub mod linkbench;
pub mod params;
pub mod precondition;
pub mod registry;
pub mod sqlite;
pub mod tatp;
pub mod tpcb;
pub mod tpcc;
pub mod workload;

pub use config::{ConfigError, ExperimentConfig};
pub use driver::Control;
pub use experiment::{Experiment, ExperimentError, ExperimentResult, Progress};
pub use workload::{Workload, WorkloadError};

use engine::types::Value;

/// An engine error as a workload error, its variant kept.
pub(crate) fn err(e: engine::Error) -> workload::WorkloadError {
    workload::WorkloadError::Engine(e)
}

/// An integer column's value (a DECIMAL's scaled integer); 0 for anything else.
pub(crate) fn int(v: &Value) -> i64 {
    match v {
        Value::Int(i) => *i,
        Value::Decimal { scaled, .. } => *scaled,
        _ => 0,
    }
}
