//! What an experiment is: its runs at a [`Scale`] (each a [`RunSpec`]), the cells it
//! computes from their results ([`Ours`]), its notes and figure. The papers' modules
//! (`ipa`, `ipl`, …) implement experiments; the catalogue lists them.

use crate::compare::Cell;
pub use crate::compare::Ours;
use crate::input::RunInput;
use crate::svg::Plot;
use serde_json::Value;
use workloads::ExperimentConfig;

/// How large the runs are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scale {
    /// Seconds per run: checks the plumbing, not the results (tests).
    Smoke,
    /// Minutes for the whole catalogue: small databases, short runs.
    Quick,
    /// The paper's scale as far as its text states it (see each experiment's runs).
    Full,
}

impl Scale {
    pub fn name(self) -> &'static str {
        match self {
            Scale::Smoke => "smoke",
            Scale::Quick => "quick",
            Scale::Full => "full",
        }
    }
}

/// One run an experiment needs: a label for the report, and the input alone that
/// reproduces it (a run of any kind, see [`RunInput`]).
#[derive(Clone, Debug)]
pub struct RunSpec {
    pub label: String,
    pub input: RunInput,
}

impl RunSpec {
    /// An engine run.
    pub fn engine(label: String, config: ExperimentConfig) -> RunSpec {
        RunSpec { label, input: RunInput::Engine(config) }
    }
}

/// The results of an experiment's runs, in the order of its [`RunSpec`]s; `None` for a
/// run that failed.
pub type Results<'a> = [Option<&'a Value>];

/// One cell's values under an experiment's ablation variants, as text for the report's
/// `ablation` column (`variant: value; …`).
#[derive(Clone, Debug, PartialEq)]
pub struct AblationCell {
    pub row: String,
    pub column: String,
    pub text: String,
}

/// How an implemented experiment runs.
pub struct Implementation {
    /// The runs at a scale.
    pub runs: fn(Scale) -> Vec<RunSpec>,
    /// The cells from the runs' results (one per [`RunSpec`], in order).
    pub cells: fn(&Results) -> Vec<Ours>,
    /// The conditions and assumptions its report states where the paper's text is
    /// silent (each run's own conditions are listed beside it anyway).
    pub notes: fn(Scale) -> Vec<String>,
    /// The figure (`ID.svg`) of a figure or of a table with a numeric axis: ours from
    /// the results, the paper's from the compared cells.
    pub plot: Option<fn(&Results, &[Cell]) -> Plot>,
    /// Each cell's values under the experiment's ablation variants (runs among its own,
    /// with one model switch or constant changed), if it has one.
    pub ablation: Option<fn(&Results) -> Vec<AblationCell>>,
}

impl Implementation {
    /// Runs and cells, no notes, no figure.
    pub const fn new(runs: fn(Scale) -> Vec<RunSpec>, cells: fn(&Results) -> Vec<Ours>) -> Implementation {
        Implementation { runs, cells, notes: no_notes, plot: None, ablation: None }
    }

    pub const fn notes(self, notes: fn(Scale) -> Vec<String>) -> Implementation {
        Implementation { notes, ..self }
    }

    pub const fn plot(self, plot: fn(&Results, &[Cell]) -> Plot) -> Implementation {
        Implementation { plot: Some(plot), ..self }
    }

    pub const fn ablation(self, ablation: fn(&Results) -> Vec<AblationCell>) -> Implementation {
        Implementation { ablation: Some(ablation), ..self }
    }
}

fn no_notes(_: Scale) -> Vec<String> {
    Vec::new()
}

/// One table or figure of a paper.
pub struct Experiment {
    pub id: &'static str,
    pub description: &'static str,
    /// `None`: listed with its reference values, not run yet.
    pub implementation: Option<Implementation>,
}

impl Experiment {
    pub fn implemented(&self) -> bool {
        self.implementation.is_some()
    }

    /// The id as a file name: `ipa:table7` → `ipa-table7`.
    pub fn file_stem(&self) -> String {
        self.id.replace(':', "-")
    }
}
