//! Ablations: an experiment's runs again under its variants ([`Variant`]: one model
//! component switched or one uncertain constant changed), each cell's value under every
//! variant, and the reason for a cell that is not `within` where a variant shows it.
//!
//! A variant *explains* a cell when ours under it is `within`, or at most half as far
//! from the paper's value as the headline (for an effect in the other direction: when it
//! takes the paper's direction). The reason then names the variant's component and the
//! value it gives. A cell no variant moves that far keeps an empty reason, so it counts
//! as unexplained; its ablation text still shows how little each component moved it.

use crate::compare::{Cell, Ours};
use crate::experiment::{Implementation, RunSpec, Scale, Variant};
use crate::verdict::{self, Kind, Verdict};

/// Every run of an experiment at a scale: its headline runs, then each variant's.
pub fn all_runs(implementation: &Implementation, scale: Scale) -> Vec<RunSpec> {
    runs(&(implementation.runs)(scale), &implementation.variants_at(scale))
}

/// The headline runs, then each variant's (variant-major, the runs in order within
/// each); a variant that leaves a run unchanged gives the same input, so the runner
/// makes that run once.
pub fn runs(headline: &[RunSpec], variants: &[Variant]) -> Vec<RunSpec> {
    let mut all = headline.to_vec();
    for v in variants {
        all.extend(headline.iter().map(|s| RunSpec {
            label: format!("{} [{}]", s.label, v.name),
            input: (v.apply)(&s.input).unwrap_or_else(|| s.input.clone()),
        }));
    }
    all
}

/// How many of `total` results (laid out as [`runs`] makes them) are the headline's.
pub fn headline_len(total: usize, variants: usize) -> usize {
    total / (variants + 1)
}

/// Sets every cell's ablation text (`variant: value (verdict); …`) and, for a cell not
/// `within` that has no reason yet, the reason a variant shows. `per_variant[i]` holds
/// the cells computed from variant `i`'s runs.
pub fn annotate(cells: &mut [Cell], variants: &[Variant], per_variant: &[Vec<Ours>]) {
    for cell in cells.iter_mut() {
        let kind = Kind::of_unit(&cell.unit);
        let under: Vec<(&Variant, Option<f64>)> = variants
            .iter()
            .zip(per_variant)
            .map(|(v, ours)| {
                let value = ours.iter().find(|o| o.row == cell.row && o.column == cell.column).and_then(|o| o.value);
                (v, value)
            })
            .collect();
        cell.under =
            under.iter().map(|(v, value)| (v.name, verdict::compare(kind, cell.paper, *value).verdict)).collect();
        cell.ablation = under
            .iter()
            .zip(&cell.under)
            .map(|((v, value), (_, verdict))| {
                format!("{}: {} ({verdict})", v.name, value.map_or("–".into(), |x| show(kind, x)))
            })
            .collect::<Vec<_>>()
            .join("; ");
        if cell.verdict == Verdict::Within || !cell.reason.is_empty() {
            continue;
        }
        if let Some((v, value)) = explaining(cell, kind, &under) {
            let c = verdict::compare(kind, cell.paper, Some(value));
            cell.reason = format!(
                "{}: under \u{201c}{}\u{201d} ours is {} ({}, {:+.1} {} from the paper's)",
                v.component,
                v.name,
                show(kind, value),
                c.verdict,
                c.difference.unwrap_or(f64::NAN),
                kind.difference_unit()
            );
        }
    }
}

/// The variant that moves the cell furthest towards the paper, if it moves it far enough
/// to explain the gap (see the module's doc).
fn explaining<'a>(cell: &Cell, kind: Kind, under: &[(&'a Variant, Option<f64>)]) -> Option<(&'a Variant, f64)> {
    let gap = cell.difference?.abs();
    let mut best: Option<(&Variant, f64, f64)> = None;
    for (v, value) in under {
        let Some(value) = *value else { continue };
        let c = verdict::compare(kind, cell.paper, Some(value));
        let Some(d) = c.difference else { continue };
        let explains = c.verdict == Verdict::Within
            || d.abs() <= gap / 2.0
            // The right side explains an opposite effect; a rate's only side is that of
            // 0, which any value of it has, so it is explained by its size alone.
            || (cell.verdict == Verdict::Opposite && c.verdict == Verdict::Direction && kind != Kind::Rate);
        if explains && best.is_none_or(|(_, _, b)| d.abs() < b) {
            best = Some((v, value, d.abs()));
        }
    }
    best.map(|(v, value, _)| (v, value))
}

/// A value as the ablation column shows it: effects and shares signed to 0.1, others
/// to 3 significant digits.
fn show(kind: Kind, x: f64) -> String {
    match kind {
        Kind::Change | Kind::Share => format!("{x:+.1}"),
        Kind::Factor | Kind::Rate | Kind::Magnitude => {
            let magnitude = if x == 0.0 { 0 } else { x.abs().log10().floor() as i32 };
            let digits = 2i32.saturating_sub(magnitude).clamp(0, 6) as usize;
            format!("{x:.digits$}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::RunInput;

    fn cell(paper: f64, ours: f64, unit: &str) -> Cell {
        let kind = Kind::of_unit(unit);
        let c = verdict::compare(kind, paper, Some(ours));
        Cell {
            experiment: "x:t".into(),
            row: "r".into(),
            column: "c".into(),
            unit: unit.into(),
            paper,
            ours: Some(ours),
            difference: c.difference,
            difference_unit: kind.difference_unit(),
            verdict: c.verdict,
            reason: String::new(),
            ablation: String::new(),
            source: String::new(),
            under: Vec::new(),
        }
    }

    fn unchanged(_: &RunInput) -> Option<RunInput> {
        None
    }

    const A: Variant = Variant { name: "no stack", component: "the host stack", apply: unchanged };
    const B: Variant = Variant { name: "slow", component: "the latency", apply: unchanged };

    fn ours(v: f64) -> Vec<Ours> {
        vec![Ours { row: "r".into(), column: "c".into(), value: Some(v) }]
    }

    #[test]
    fn the_variant_closest_to_the_paper_explains_a_cell_it_moves_half_way() {
        // Paper −40, ours +10 (opposite); A gives −5 (direction, 35 points off: less than
        // half of 50, explains), B gives −30 (within): B is the reason.
        let mut cells = vec![cell(-40.0, 10.0, "change %")];
        annotate(&mut cells, &[A, B], &[ours(-5.0), ours(-30.0)]);
        assert_eq!(cells[0].ablation, "no stack: -5.0 (direction); slow: -30.0 (within)");
        assert_eq!(cells[0].under, [("no stack", Verdict::Direction), ("slow", Verdict::Within)]);
        assert!(
            cells[0].reason.starts_with("the latency: under \u{201c}slow\u{201d} ours is -30.0 (within"),
            "{}",
            cells[0].reason
        );
    }

    #[test]
    fn a_variant_that_barely_moves_a_cell_leaves_it_unexplained() {
        let mut cells = vec![cell(-40.0, 10.0, "change %")];
        annotate(&mut cells, &[A], &[ours(5.0)]);
        assert!(cells[0].reason.is_empty());
        assert!(cells[0].unexplained());
        assert_eq!(cells[0].ablation, "no stack: +5.0 (opposite)");
    }

    #[test]
    fn within_cells_and_cells_with_a_reason_keep_theirs() {
        let mut cells = vec![cell(-40.0, -35.0, "change %"), cell(100.0, 10.0, "tps")];
        cells[1].reason = "stated".into();
        annotate(&mut cells, &[A], &[vec![Ours { row: "r".into(), column: "c".into(), value: Some(-40.0) }]]);
        assert_eq!(cells[0].reason, "");
        assert_eq!(cells[1].reason, "stated");
    }

    #[test]
    fn a_zero_shows_without_overflow() {
        assert_eq!(show(Kind::Magnitude, 0.0), "0.00");
        assert_eq!(show(Kind::Factor, 1234.5), "1234");
    }

    #[test]
    fn runs_are_the_headline_then_each_variant_in_order() {
        let spec = |l: &str| RunSpec { label: l.into(), input: RunInput::Engine(Default::default()) };
        let all = runs(&[spec("a"), spec("b")], &[A, B]);
        let labels: Vec<&str> = all.iter().map(|s| s.label.as_str()).collect();
        assert_eq!(labels, ["a", "b", "a [no stack]", "b [no stack]", "a [slow]", "b [slow]"]);
        assert_eq!(headline_len(all.len(), 2), 2);
    }
}
