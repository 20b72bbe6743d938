//! The reports: one experiment as Markdown and JSON, the summary (counts per verdict
//! and CPU seconds per experiment, `summary.json`), and `results.md`, every experiment
//! of an invocation per paper in one page.
//!
//! CPU seconds: an experiment's are those of its distinct runs, a run shared with
//! another experiment counted in each (so each experiment's figure is what it costs
//! alone); the invocation's total counts every run once.

use crate::compare::Cell;
use crate::experiment::{Experiment, Scale, Variant};
use crate::verdict::Verdict;
use serde::Serialize;
use serde_json::{json, Value};

/// The error of a run an invocation that makes none did not find kept.
pub const NOT_MADE: &str = "not made yet (--kept reports from the runs kept only)";

/// What an invocation did.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// Every cell of the experiments, in catalogue order.
    pub cells: Vec<Cell>,
    /// Runs made now, taken from the output directory, and failed (refused ones
    /// included).
    pub executed: usize,
    pub reused: usize,
    pub failed: usize,
    /// Runs neither kept nor made: an invocation that makes none ([`crate::Make::Nothing`]).
    pub not_made: usize,
    /// Runs the directory kept only from an older model version (made again), and runs
    /// refused before starting (see [`crate::cost`]).
    pub stale: usize,
    pub refused: usize,
    /// Each experiment's runs and CPU seconds, in the order given.
    pub costs: Vec<Cost>,
    /// The ids of the experiments that wrote a figure (`ID.svg`).
    pub figures: Vec<String>,
    /// CPU seconds of all the invocation's runs, each counted once.
    pub cpu_seconds: f64,
}

/// One run of an experiment as its report names it.
#[derive(Clone, Debug, Serialize)]
pub struct RunRecord {
    pub label: String,
    /// What the run is, in one line (its input's conditions).
    pub conditions: String,
    /// The run's file: `runs/KEY.json`.
    pub key: String,
    /// Wall seconds of the run when it was made; `None` if it failed.
    pub wall_seconds: Option<f64>,
    /// CPU seconds of the run's thread when it was made; `None` if it failed or was kept
    /// from before runs recorded it.
    pub cpu_seconds: Option<f64>,
    /// Why it failed, if it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A number as the tables show it: integers without decimals, one decimal from 100 up,
/// else at most four.
fn show(v: Option<f64>) -> String {
    match v {
        None => "–".into(),
        Some(v) if v.fract() == 0.0 && v.abs() < 1e15 => format!("{v:.0}"),
        Some(v) if v.abs() >= 100.0 => format!("{v:.1}"),
        Some(v) => format!("{:.4}", v).trim_end_matches('0').trim_end_matches('.').to_string(),
    }
}

fn show_difference(c: &Cell) -> String {
    c.difference.map_or("–".into(), |d| format!("{d:+.1} {}", c.difference_unit))
}

/// The experiment's Markdown: what it is, its notes (conditions and assumptions), its
/// runs, and a row per cell.
pub fn experiment_markdown(
    e: &Experiment,
    scale: Scale,
    notes: &[String],
    variants: &[Variant],
    runs: &[RunRecord],
    cells: &[Cell],
) -> String {
    let mut out = format!("# {}\n\n{}\n\nScale: {}.", e.id, e.description, scale.name());
    let mut sources: Vec<&str> = cells.iter().map(|c| c.source.as_str()).collect();
    sources.dedup();
    for source in sources {
        out += &format!(" Paper: {source}.");
    }
    if !e.implemented() {
        out += " Not implemented yet: the paper's values only.";
    }
    out += "\n\n";
    for note in notes {
        out += &format!("- {note}\n");
    }
    if !notes.is_empty() {
        out += "\n";
    }
    if !variants.is_empty() {
        out += "Ablation: every run again under each variant; a cell not within is explained by the variant that \
                takes it within, or at least half way to the paper's value.\n\n";
        for v in variants {
            out += &format!("- {}: {}\n", v.name, v.component);
        }
        out += "\n";
    }
    if !runs.is_empty() {
        out += "| run | conditions | file | wall s | CPU s |\n|---|---|---|---|---|\n";
        for r in runs {
            let (wall, cpu) = match (&r.error, r.wall_seconds) {
                (Some(e), _) if e == NOT_MADE => (e.clone(), show(None)),
                (Some(e), _) => (format!("FAILED: {e}"), show(None)),
                (None, w) => (show_seconds(w), show_seconds(r.cpu_seconds)),
            };
            out += &format!("| {} | {} | runs/{}.json | {wall} | {cpu} |\n", r.label, r.conditions, r.key);
        }
        let cost = Cost::of(e.id, runs);
        out += &format!("\nCPU: {}.\n\n", cost.sentence());
    }
    out += "| row | column | unit | paper | ours | difference | verdict | reason | ablation |\n";
    out += "|---|---|---|---|---|---|---|---|---|\n";
    for c in cells {
        out += &format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
            c.row,
            c.column,
            c.unit,
            show(Some(c.paper)),
            show(c.ours),
            show_difference(c),
            c.verdict,
            c.reason,
            c.ablation
        );
    }
    out + "\n" + &counts_and_variants_markdown(cells)
}

/// Seconds to one decimal.
fn show_seconds(s: Option<f64>) -> String {
    show(s.map(|s| (s * 10.0).round() / 10.0))
}

/// What an experiment's runs cost (see the module's doc for shared runs).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Cost {
    pub experiment: String,
    /// Its distinct runs (a variant's run equal to the headline's counts once).
    pub runs: usize,
    /// CPU seconds of those with a recorded CPU time.
    pub cpu_seconds: f64,
    /// Runs without one: failed, or kept from an output directory written before runs
    /// recorded their CPU time.
    pub runs_without_cpu: usize,
}

impl Cost {
    pub fn of(experiment: &str, runs: &[RunRecord]) -> Cost {
        let mut cost = Cost { experiment: experiment.into(), ..Cost::default() };
        let mut seen = std::collections::HashSet::new();
        for r in runs.iter().filter(|r| seen.insert(r.key.as_str())) {
            cost.runs += 1;
            match r.cpu_seconds {
                Some(cpu) if r.error.is_none() => cost.cpu_seconds += cpu,
                _ => cost.runs_without_cpu += 1,
            }
        }
        cost
    }

    /// `12.3 s over 4 runs (1 without a recorded CPU time)`.
    pub fn sentence(&self) -> String {
        let mut out = format!("{:.1} s over {} runs", self.cpu_seconds, self.runs);
        if self.runs_without_cpu > 0 {
            out += &format!(" ({} without a recorded CPU time)", self.runs_without_cpu);
        }
        out
    }
}

/// The experiment's JSON.
pub fn experiment_json(
    e: &Experiment,
    scale: Scale,
    notes: &[String],
    variants: &[Variant],
    runs: &[RunRecord],
    cells: &[Cell],
) -> Value {
    let cost = Cost::of(e.id, runs);
    json!({
        "cpu_seconds": cost.cpu_seconds,
        "runs_without_cpu": cost.runs_without_cpu,
        "experiment": e.id,
        "description": e.description,
        "implemented": e.implemented(),
        "scale": scale.name(),
        "notes": notes,
        "ablation": variants.iter()
            .map(|v| json!({"variant": v.name, "component": v.component})).collect::<Vec<_>>(),
        "runs": runs,
        "cells": cells,
    })
}

/// Cells per verdict, and how many of those not `within` have no reason.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Counts {
    pub within: usize,
    pub direction: usize,
    pub opposite: usize,
    #[serde(rename = "n/a")]
    pub not_comparable: usize,
    pub unexplained: usize,
}

impl Counts {
    pub fn of(cells: &[Cell]) -> Counts {
        let mut c = Counts::default();
        for cell in cells {
            *match cell.verdict {
                Verdict::Within => &mut c.within,
                Verdict::Direction => &mut c.direction,
                Verdict::Opposite => &mut c.opposite,
                Verdict::NotComparable => &mut c.not_comparable,
            } += 1;
            c.unexplained += usize::from(cell.unexplained());
        }
        c
    }

    fn of_verdict(&self, v: Verdict) -> usize {
        match v {
            Verdict::Within => self.within,
            Verdict::Direction => self.direction,
            Verdict::Opposite => self.opposite,
            Verdict::NotComparable => self.not_comparable,
        }
    }
}

/// The summary table: cells per verdict, the share of comparable cells within, and
/// the unexplained ones.
pub fn counts_markdown(cells: &[Cell]) -> String {
    let counts = Counts::of(cells);
    let mut out = String::from("| verdict | cells |\n|---|---|\n");
    for v in Verdict::ALL {
        out += &format!("| {v} | {} |\n", counts.of_verdict(v));
    }
    let comparable = cells.len() - counts.not_comparable;
    let within_pct = if comparable == 0 { 0.0 } else { counts.within as f64 / comparable as f64 * 100.0 };
    out += &format!("| all | {} |\n\n", cells.len());
    out += &format!(
        "{within_pct:.1}% of the {comparable} comparable cells are within ±15; {} cells not within have no reason yet (unexplained).\n",
        counts.unexplained
    );
    out
}

/// [`counts_markdown`], then [`variants_markdown`] where any cell was ablated.
pub fn counts_and_variants_markdown(cells: &[Cell]) -> String {
    let mut out = counts_markdown(cells);
    let by_variant = variants_markdown(cells);
    if !by_variant.is_empty() {
        out += &format!("\n{by_variant}");
    }
    out
}

/// Each variant's verdicts beside the headline's, over the cells comparable under both
/// (variants of one name pooled across experiments, in the order first met): how many
/// are within under each, and how many the variant takes within or out of it. It shows
/// whether another stated assumption would fit the papers better as a whole, not just
/// in the cells it explains. Empty where no cell was ablated.
pub fn variants_markdown(cells: &[Cell]) -> String {
    // (name, compared, within under the headline, within under the variant, taken in, taken out)
    let mut rows: Vec<(&str, [usize; 5])> = Vec::new();
    for cell in cells.iter().filter(|c| c.verdict != Verdict::NotComparable) {
        for &(name, under) in cell.under.iter().filter(|(_, v)| *v != Verdict::NotComparable) {
            let at = match rows.iter().position(|(n, _)| *n == name) {
                Some(at) => at,
                None => {
                    rows.push((name, [0; 5]));
                    rows.len() - 1
                }
            };
            let (headline, variant) = (cell.verdict == Verdict::Within, under == Verdict::Within);
            let counts = &mut rows[at].1;
            counts[0] += 1;
            counts[1] += usize::from(headline);
            counts[2] += usize::from(variant);
            counts[3] += usize::from(variant && !headline);
            counts[4] += usize::from(headline && !variant);
        }
    }
    if rows.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "Each variant against the headline, over the cells comparable under both:\n\n\
         | variant | cells | within | within under the variant | taken within | taken out of within |\n\
         |---|---|---|---|---|---|\n",
    );
    for (name, [compared, headline, variant, gained, lost]) in rows {
        out += &format!("| {name} | {compared} | {headline} | {variant} | {gained} | {lost} |\n");
    }
    out
}

/// Cells per verdict and CPU seconds for each experiment of `costs`, in their order.
pub fn experiments_markdown(cells: &[Cell], costs: &[Cost]) -> String {
    let mut out = String::from(
        "| experiment | within | direction | opposite | n/a | unexplained | CPU s |\n|---|---|---|---|---|---|---|\n",
    );
    for cost in costs {
        let own: Vec<Cell> = cells.iter().filter(|c| c.experiment == cost.experiment).cloned().collect();
        let c = Counts::of(&own);
        let cpu = match cost.runs_without_cpu {
            0 => format!("{:.1}", cost.cpu_seconds),
            n => format!("{:.1} ({n} of {} runs unknown)", cost.cpu_seconds, cost.runs),
        };
        out += &format!(
            "| {} | {} | {} | {} | {} | {} | {cpu} |\n",
            cost.experiment, c.within, c.direction, c.opposite, c.not_comparable, c.unexplained
        );
    }
    out
}

/// `summary.json`: every cell of the experiments run, the counts, each experiment's
/// CPU seconds, and the invocation's (every run once).
pub fn summary_json(scale: Scale, cells: &[Cell], costs: &[Cost], cpu_seconds: f64) -> Value {
    json!({
        "scale": scale.name(),
        "counts": Counts::of(cells),
        "cpu_seconds": cpu_seconds,
        "experiments": costs,
        "cells": cells,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(experiment: &str, verdict: Verdict, reason: &str) -> Cell {
        Cell {
            experiment: experiment.into(),
            row: "r".into(),
            column: "c".into(),
            unit: "change %".into(),
            paper: 1.0,
            ours: Some(1.0),
            difference: Some(0.0),
            difference_unit: "points",
            verdict,
            reason: reason.into(),
            ablation: String::new(),
            source: "s".into(),
            under: Vec::new(),
        }
    }

    fn record(key: &str, cpu_seconds: Option<f64>, error: Option<&str>) -> RunRecord {
        RunRecord {
            label: key.into(),
            conditions: String::new(),
            key: key.into(),
            wall_seconds: cpu_seconds,
            cpu_seconds,
            error: error.map(String::from),
        }
    }

    #[test]
    fn an_experiment_costs_its_distinct_runs_and_names_those_without_cpu() {
        let runs = [
            record("k1", Some(2.0), None),
            record("k2", Some(0.5), None),
            // A variant's run equal to the headline's: the same run, counted once.
            record("k1", Some(2.0), None),
            record("k3", None, None),
            record("k4", None, Some("failed")),
        ];
        let cost = Cost::of("x", &runs);
        assert_eq!((cost.runs, cost.cpu_seconds, cost.runs_without_cpu), (4, 2.5, 2));
        assert_eq!(cost.sentence(), "2.5 s over 4 runs (2 without a recorded CPU time)");
    }

    #[test]
    fn counts_per_verdict_and_per_experiment_name_the_unexplained() {
        let cells = [
            cell("a", Verdict::Within, ""),
            cell("a", Verdict::Opposite, ""),
            cell("b", Verdict::NotComparable, "absolute"),
            cell("b", Verdict::Direction, ""),
        ];
        let c = Counts::of(&cells);
        assert_eq!((c.within, c.direction, c.opposite, c.not_comparable, c.unexplained), (1, 1, 1, 1, 2));
        let costs = [
            Cost { experiment: "a".into(), runs: 2, cpu_seconds: 1.25, runs_without_cpu: 0 },
            Cost { experiment: "b".into(), runs: 3, cpu_seconds: 4.0, runs_without_cpu: 1 },
        ];
        let table = experiments_markdown(&cells, &costs);
        assert!(
            table.ends_with("| a | 1 | 0 | 1 | 0 | 1 | 1.2 |\n| b | 0 | 1 | 0 | 1 | 1 | 4.0 (1 of 3 runs unknown) |\n"),
            "{table}"
        );
        let summary = counts_markdown(&cells);
        assert!(summary.contains("33.3% of the 3 comparable cells are within ±15; 2 cells not within"), "{summary}");
    }

    #[test]
    fn each_variant_counts_the_cells_it_takes_within_and_out_over_those_comparable_both_ways() {
        let mut cells = [
            cell("a", Verdict::Within, ""),
            cell("a", Verdict::Direction, ""),
            cell("b", Verdict::Opposite, ""),
            cell("b", Verdict::NotComparable, "absolute"),
        ];
        cells[0].under = vec![("fresh", Verdict::Direction), ("empty", Verdict::Within)];
        cells[1].under = vec![("fresh", Verdict::Within), ("empty", Verdict::NotComparable)];
        cells[2].under = vec![("fresh", Verdict::Within)];
        cells[3].under = vec![("fresh", Verdict::Within)];
        let table = variants_markdown(&cells);
        assert!(table.ends_with("| fresh | 3 | 1 | 2 | 2 | 1 |\n| empty | 1 | 1 | 1 | 0 | 0 |\n"), "{table}");
        assert_eq!(variants_markdown(&cells[..0]), "");
    }
}
