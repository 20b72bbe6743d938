//! reproduce — the papers' tables and figures as experiments, compared cell by cell.
//!
//! [`catalogue`]: every experiment by id (`ipa:table7`) and, once implemented, its runs
//! and how its cells follow from their results ([`ipa`]: the IPA papers' tables;
//! [`nolgn`]: the NoLgn-FTL paper's figures, with a host-stack ablation).
//! [`input`]: what a run is (an engine experiment, …) and how each kind is executed.
//! [`reference`]: the papers' values, read from the reference file by the comparison only.
//! [`verdict`]: ours against the paper's: difference and verdict. [`compare`]: an
//! experiment's cells joined with the reference. [`store`]: the output directory, where
//! finished runs are kept and reused. [`report`]: Markdown, JSON and the summary.
//! [`runner`]: one invocation, from ids to reports.
//!
//! Engine runs go through the experiment API of `workloads` (the same as `bench` and
//! `compare`); nothing here changes the model.

#![forbid(unsafe_code)]

pub mod catalogue;
pub mod compare;
pub mod input;
pub mod ipa;
pub mod nolgn;
pub mod reference;
pub mod report;
pub mod runner;
pub mod store;
pub mod verdict;

pub use catalogue::{Experiment, RunSpec, Scale, CATALOGUE};
pub use input::RunInput;
pub use runner::{reproduce, Options, Outcome};
