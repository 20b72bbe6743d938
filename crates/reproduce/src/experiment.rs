//! What an experiment is: its runs at a [`Scale`] (each a [`RunSpec`]), the cells it
//! computes from their results ([`Ours`]), its notes and figure. The papers' modules
//! (`ipa`, `ipl`, …) implement experiments; the catalogue lists them.

use crate::compare::Cell;
pub use crate::compare::Ours;
use crate::input::RunInput;
use crate::reference::ReferenceCell;
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

/// An experiment's explanation of its cells from its runs' results (see
/// [`Implementation::explain`]).
pub type Explain = fn(&Results, &[ReferenceCell], &mut [Cell]);

/// One variant of an experiment's ablation: every run of the experiment again with one
/// model component switched or one uncertain constant changed. The report gives each
/// cell's value under every variant, and a cell that is not `within` is explained by the
/// variant that moves it furthest towards the paper (see the `ablation` module).
#[derive(Clone, Copy, Debug)]
pub struct Variant {
    /// The label in the ablation column (`no host stack`, `fresh device`).
    pub name: &'static str,
    /// What the variant changes and why that can differ from the paper's setup, in the
    /// words a reason quotes (`the host I/O stack (Ext4 ordered mode), which the paper's
    /// SQLite runs pass through`).
    pub component: &'static str,
    /// The run under the variant; `None` where the variant does not change the run (the
    /// headline run is then shared, not made twice).
    pub apply: fn(&RunInput) -> Option<RunInput>,
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
    /// The ablation's variants: each adds a copy of the runs with one switch or
    /// constant changed; the cells come from the runs as `runs` gives them.
    pub variants: &'static [Variant],
    /// Reasons from evidence other than a variant, for the cells not within that the
    /// ablation left without one: the papers' own numbers (every reference cell is
    /// given) against what our runs measured, or a cell that follows from others.
    pub explain: Explain,
}

impl Implementation {
    /// Runs and cells, no notes, no figure.
    pub const fn new(runs: fn(Scale) -> Vec<RunSpec>, cells: fn(&Results) -> Vec<Ours>) -> Implementation {
        Implementation { runs, cells, notes: no_notes, plot: None, variants: &[], explain: no_explanation }
    }

    pub const fn notes(self, notes: fn(Scale) -> Vec<String>) -> Implementation {
        Implementation { notes, ..self }
    }

    pub const fn plot(self, plot: fn(&Results, &[Cell]) -> Plot) -> Implementation {
        Implementation { plot: Some(plot), ..self }
    }

    pub const fn ablation(self, variants: &'static [Variant]) -> Implementation {
        Implementation { variants, ..self }
    }

    pub const fn explain(self, explain: Explain) -> Implementation {
        Implementation { explain, ..self }
    }

    /// The variants that change some run at `scale`: one that changes none (a variant
    /// for the quick scale's devices at full scale, say) would only repeat the
    /// headline's values under its name.
    pub fn variants_at(&self, scale: Scale) -> Vec<Variant> {
        let headline = (self.runs)(scale);
        self.variants.iter().copied().filter(|v| headline.iter().any(|s| (v.apply)(&s.input).is_some())).collect()
    }
}

fn no_notes(_: Scale) -> Vec<String> {
    Vec::new()
}

fn no_explanation(_: &Results, _: &[ReferenceCell], _: &mut [Cell]) {}

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
