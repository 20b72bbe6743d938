//! The DeltaFlash web dashboard behind `deltaflash serve`: an HTTP server (axum on
//! tokio) that serves a single page embedded in the binary and a JSON API over the
//! experiment API of the `workloads` crate.
//!
//! - [`Dashboard::open`] reads the run history from the data directory and starts a
//!   bounded pool of worker threads ([`pool`]): at most `jobs` runs at once, a queue of at
//!   most `queue_max` beyond that, each run cancellable.
//! - [`Dashboard::router`] is the API ([`api`]) and the page ([`web`]).
//! - [`Dashboard::shutdown`] cancels queued and running runs, waits for the workers and
//!   stores every run's record; finished runs were stored as they finished. The data
//!   directory stays locked against a second server until then.
//!
//! Invariants: the client never names a path; only run ids (digits) reach the file
//! system, as `runs/ID.json` under the data directory. Every request is checked
//! ([`validate`]) before it is queued: the body is size-limited, the device, the times
//! and the schema are bounded, and any refusal names the field. Handlers return errors,
//! never panic, on bad input.
//!
//! Fault model: a record file that does not parse is skipped at start with a message
//! naming it (the rest load); a run's records are written to a temporary file and
//! renamed, so a crash mid-write leaves the old record or none, never half of one.

pub mod api;
pub mod device;
pub mod pool;
pub mod store;
pub mod validate;
pub mod web;

use pool::Pool;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use workloads::ExperimentConfig;

/// The analyzer: given a finished baseline run (its config, its device image and its
/// result JSON), the advisor's statistics and recommendation as JSON with the keys
/// `objects`, `recommendation`, `ddl`, `cdf_svg`, `skew_svg`, `global_config` and
/// `selective_config`. The command line supplies it (the advisor's log reading lives
/// there); without it runs have no analysis.
pub type AnalyzeFn = dyn Fn(&ExperimentConfig, &Path, &Value) -> Result<Value, String> + Send + Sync;

/// How the dashboard runs.
#[derive(Clone, Debug)]
pub struct Options {
    /// Run records (`runs/`) and scratch device images (`tmp/`).
    pub data_dir: PathBuf,
    /// Runs at once (worker threads).
    pub jobs: usize,
    /// Runs waiting beyond those; more are refused.
    pub queue_max: usize,
}

impl Options {
    pub fn new(data_dir: impl Into<PathBuf>) -> Options {
        Options { data_dir: data_dir.into(), jobs: 1, queue_max: 32 }
    }
}

/// The running dashboard: the worker pool and the run history.
#[derive(Clone)]
pub struct Dashboard {
    pool: Arc<Pool>,
}

impl Dashboard {
    /// Opens (creating) the data directory, loads the history and starts the workers.
    pub fn open(options: Options, analyze: Option<Arc<AnalyzeFn>>) -> Result<Dashboard, String> {
        if options.jobs == 0 || options.jobs > validate::MAX_JOBS {
            return Err(format!("--jobs {}: must be 1..={}", options.jobs, validate::MAX_JOBS));
        }
        let (store, history, skipped) = store::Store::open(&options.data_dir)?;
        for problem in skipped {
            eprintln!("warning: {problem} (skipped)");
        }
        Ok(Dashboard { pool: Pool::start(store, history, options.jobs, options.queue_max, analyze) })
    }

    /// The page and the API.
    pub fn router(&self) -> axum::Router {
        api::router(self.pool.clone()).merge(web::router())
    }

    /// Cancels what is queued or running, waits for the workers and stores every
    /// record. Blocks: call it off the async runtime (`spawn_blocking`).
    pub fn shutdown(&self) {
        self.pool.shutdown();
    }
}
