//! The `Workload` trait: what the driver runs. A workload creates its schema and loads
//! it, runs one transaction at a time for a terminal, and checks its consistency
//! conditions. It draws every random choice from the generator it is handed, so the
//! same seed gives the same transactions. How a workload is named and configured is
//! [`crate::registry`].

use engine::Database;
use rand_chacha::ChaCha8Rng;

/// What one transaction did.
pub struct TxOutcome {
    pub committed: bool,
    /// Record operations (reads, updates, inserts, deletes), for the CPU cost.
    pub operations: u32,
}

/// A workload: its schema and load, its transactions, its consistency check.
pub trait Workload {
    fn name(&self) -> &'static str;
    /// Creates the schema (in the tablespaces `placement` names per table) and loads.
    fn load(
        &mut self,
        db: &mut Database,
        placement: &dyn Fn(&str) -> String,
        rng: &mut ChaCha8Rng,
    ) -> Result<(), String>;
    fn transaction(&mut self, db: &mut Database, terminal: usize, rng: &mut ChaCha8Rng) -> Result<TxOutcome, String>;
    /// The workload's consistency conditions; `Err` names the first that fails.
    fn check(&mut self, db: &mut Database) -> Result<(), String>;
    /// Table names (for `ipa_objects`).
    fn tables(&self) -> Vec<&'static str>;
}
