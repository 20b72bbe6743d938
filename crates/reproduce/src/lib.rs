//! reproduce — the papers' tables and figures as experiments, compared cell by cell.
//!
//! [`catalogue`]: every experiment by id (`ipa:table7`) and, once implemented, its runs
//! and how its cells follow from their results, its notes and its figure ([`ipa`]: the
//! IPA papers' tables; [`ipa_ipl`]: IPA against In-Page Logging; [`linkbench`]: the IPA
//! paper's Fig. 6; [`ipl`]: the IPL B+-tree paper's tables and figure).
//! [`input`]: what a run is (an engine experiment, …) and how each kind is executed.
//! `reference`: the papers' values, read from the reference file by the comparison only.
//! [`ablation`]: an experiment's runs under its variants, and the reasons they show.
//! [`verdict`]: ours against the paper's: difference and verdict. [`compare`]: an
//! experiment's cells joined with the reference. [`store`]: the output directory, where
//! finished runs are kept and reused, under the [`model_version`] that made them.
//! [`cost`]: a run's estimated CPU time and peak memory, and whether it fits this
//! machine; [`plan`]: those estimates for every run of an invocation (`--plan`);
//! [`run_length`]: how long a full-scale run measures.
//! [`report`]: Markdown, JSON and the summary.
//! [`results_page`]: `results.md`, the invocation's experiments per paper on one page;
//! [`publish`]: that page, the reports and figures copied into the docs.
//! [`ray`]: the runs made as Ray tasks through the Python package.
//! [`svg`]: a figure as SVG ([`buffer_plot`]: the figure of a table by buffer size). [`runner`]: one invocation, from ids to reports.
//!
//! Engine runs go through the experiment API of `workloads` (the same as `bench` and
//! `compare`), index runs through `index::bench` (the same as `index-bench`); nothing
//! here changes the model.

#![forbid(unsafe_code)]

pub mod ablation;
pub mod buffer_plot;
pub mod catalogue;
pub mod compare;
pub mod cost;
pub mod experiment;
pub mod input;
pub mod ipa;
pub mod ipa_ipl;
pub mod ipl;
pub mod linkbench;
pub mod memory_gate;
pub mod model_version;
pub mod nolgn;
pub mod plan;
pub mod publish;
pub mod ray;
pub mod reference;
pub mod report;
pub mod results_page;
pub mod run_length;
pub mod runner;
pub mod store;
pub mod svg;
pub mod verdict;

pub use catalogue::CATALOGUE;
pub use experiment::{Experiment, RunSpec, Scale};
pub use input::RunInput;
pub use runner::{reproduce, reproduce_on, Make, Options, Outcome};
