//! The `Workload` trait: what the driver runs. A workload creates its schema and loads
//! it, runs one transaction at a time for a terminal, and checks its consistency
//! conditions. It draws every random choice from the generator it is handed, so the
//! same seed gives the same transactions. How a workload is named and configured is
//! [`crate::registry`].

use engine::Database;
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

/// What one transaction did.
#[derive(Clone, Copy, Debug)]
pub struct TxOutcome {
    pub committed: bool,
    /// Record operations (reads, updates, inserts, deletes), for the CPU cost.
    pub operations: u32,
    /// The transaction's type, as the workload names it (TPC-C's `new_order`): the
    /// driver reports latency per type under this name.
    pub kind: &'static str,
}

/// What a workload's transaction returns.
pub type TxResult = Result<TxOutcome, WorkloadError>;

/// A workload: its schema and load, its transactions, its consistency check.
pub trait Workload {
    fn name(&self) -> &'static str;
    /// Creates the schema (in the tablespaces `placement` names per table) and loads.
    fn load(
        &mut self,
        db: &mut Database,
        placement: &dyn Fn(&str) -> String,
        rng: &mut ChaCha8Rng,
    ) -> Result<(), WorkloadError>;
    fn transaction(&mut self, db: &mut Database, terminal: usize, rng: &mut ChaCha8Rng) -> TxResult;
    /// The workload's consistency conditions; `Err` names the first that fails.
    fn check(&mut self, db: &mut Database) -> Result<(), String>;
    /// Table names (for `ipa_objects`).
    fn tables(&self) -> Vec<&'static str>;
}

/// Why a workload's load or transaction failed. An engine error is kept whole, so the
/// driver and the experiment decide on its variant (a region out of extents), never on
/// its text.
#[derive(Debug)]
pub enum WorkloadError {
    /// The engine refused or failed an operation.
    Engine(engine::Error),
    /// The workload's own finding (a row that should exist and does not, a stalled run).
    Failed(String),
}

impl WorkloadError {
    /// A data region had no free extent left for an object to grow into.
    pub fn is_no_free_extent(&self) -> bool {
        matches!(self, WorkloadError::Engine(engine::Error::NoFreeExtent { .. }))
    }
}

impl std::fmt::Display for WorkloadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WorkloadError::Engine(e) => write!(f, "{e}"),
            WorkloadError::Failed(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for WorkloadError {}

impl From<engine::Error> for WorkloadError {
    fn from(e: engine::Error) -> Self {
        WorkloadError::Engine(e)
    }
}

impl From<String> for WorkloadError {
    fn from(m: String) -> Self {
        WorkloadError::Failed(m)
    }
}

impl From<&str> for WorkloadError {
    fn from(m: &str) -> Self {
        WorkloadError::Failed(m.to_string())
    }
}

/// A consistency check reports text: it names a problem, nothing decides on it.
impl From<WorkloadError> for String {
    fn from(e: WorkloadError) -> Self {
        e.to_string()
    }
}

/// The problem with the smallest key a consistency check has met so far: rows reach a
/// check in storage order ([`engine::Database::for_each_row`]), and it names the one a
/// scan in key order would meet first.
#[derive(Default)]
pub(crate) struct FirstProblem(Option<((i64, i64, i64), String)>);

impl FirstProblem {
    pub(crate) fn note(&mut self, key: (i64, i64, i64), describe: impl FnOnce() -> String) {
        if self.0.as_ref().is_none_or(|(first, _)| key < *first) {
            self.0 = Some((key, describe()));
        }
    }

    /// The first problem as an error, if any; starts over.
    pub(crate) fn result(&mut self) -> Result<(), String> {
        self.0.take().map_or(Ok(()), |(_, problem)| Err(problem))
    }
}

/// The outcome of the consistency check.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "lowercase", tag = "outcome", content = "detail")]
pub enum Consistency {
    Passed,
    /// The first condition that fails.
    Failed(String),
}
