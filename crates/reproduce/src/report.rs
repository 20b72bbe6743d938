//! The reports: one experiment as Markdown and JSON, and the summary (counts per
//! verdict, `summary.json`).

use crate::compare::Cell;
use crate::experiment::{Experiment, Scale};
use crate::verdict::Verdict;
use serde::Serialize;
use serde_json::{json, Value};

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
    let variants = e.implementation.as_ref().map_or(&[][..], |i| i.variants);
    if !variants.is_empty() {
        out += "Ablation: every run again under each variant; a cell not within is explained by the variant that \
                takes it within, or at least half way to the paper's value.\n\n";
        for v in variants {
            out += &format!("- {}: {}\n", v.name, v.component);
        }
        out += "\n";
    }
    if !runs.is_empty() {
        out += "| run | conditions | file | wall s |\n|---|---|---|---|\n";
        for r in runs {
            let wall = match (&r.error, r.wall_seconds) {
                (Some(e), _) => format!("FAILED: {e}"),
                (None, w) => show(w.map(|w| (w * 10.0).round() / 10.0)),
            };
            out += &format!("| {} | {} | runs/{}.json | {wall} |\n", r.label, r.conditions, r.key);
        }
        out += "\n";
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
    out + "\n" + &counts_markdown(cells)
}

/// The experiment's JSON.
pub fn experiment_json(e: &Experiment, scale: Scale, notes: &[String], runs: &[RunRecord], cells: &[Cell]) -> Value {
    json!({
        "experiment": e.id,
        "description": e.description,
        "implemented": e.implemented(),
        "scale": scale.name(),
        "notes": notes,
        "ablation": e.implementation.as_ref().map_or(&[][..], |i| i.variants).iter()
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
        "{within_pct:.0}% of the {comparable} comparable cells are within ±15; {} cells not within have no reason yet (unexplained).\n",
        counts.unexplained
    );
    out
}

/// Cells per verdict for each experiment, in the order the cells come.
pub fn experiments_markdown(cells: &[Cell]) -> String {
    let mut out =
        String::from("| experiment | within | direction | opposite | n/a | unexplained |\n|---|---|---|---|---|---|\n");
    let mut rest = cells;
    while let Some(first) = rest.first() {
        let n = rest.iter().take_while(|c| c.experiment == first.experiment).count();
        let c = Counts::of(&rest[..n]);
        out += &format!(
            "| {} | {} | {} | {} | {} | {} |\n",
            first.experiment, c.within, c.direction, c.opposite, c.not_comparable, c.unexplained
        );
        rest = &rest[n..];
    }
    out
}

/// `summary.json`: every cell of the experiments run, and the counts.
pub fn summary_json(scale: Scale, cells: &[Cell]) -> Value {
    json!({ "scale": scale.name(), "counts": Counts::of(cells), "cells": cells })
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
        }
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
        let table = experiments_markdown(&cells);
        assert!(table.ends_with("| a | 1 | 0 | 1 | 0 | 1 |\n| b | 0 | 1 | 0 | 1 | 1 |\n"), "{table}");
        let summary = counts_markdown(&cells);
        assert!(summary.contains("33% of the 3 comparable cells are within ±15; 2 cells not within"), "{summary}");
    }
}
