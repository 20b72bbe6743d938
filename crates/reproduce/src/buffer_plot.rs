//! The figure of a table whose columns sweep the DB buffer (IPA Tables 9 and 10): each
//! row's relative effect against the baseline (`buffer 10% [2x3] Δ%`) by buffer size,
//! ours as a line per row and the paper's as diamonds at the same buffer sizes.
//!
//! Built from the compared cells alone (they hold ours and the paper's value), so it
//! follows the reference rows whatever runs the table has.

use crate::compare::Cell;
use crate::experiment::Results;
use crate::svg::{PaperPoint, Plot, Series};

/// The buffer share in percent of a column `buffer 10% [2x3] Δ%`; `None` for any other.
fn buffer_of_effect(column: &str) -> Option<f64> {
    let rest = column.strip_prefix("buffer ")?;
    let (share, scheme) = rest.split_once("% ")?;
    scheme.ends_with(" Δ%").then_some(())?;
    share.parse().ok()
}

/// Each row's `change %` cells by buffer.
pub fn effects_by_buffer(_: &Results, cells: &[Cell]) -> Plot {
    let mut series: Vec<Series> = Vec::new();
    let mut paper = Vec::new();
    for c in cells.iter().filter(|c| c.unit == "change %") {
        let Some(x) = buffer_of_effect(&c.column) else { continue };
        paper.push(PaperPoint { label: format!("{} {}", c.row, c.column), x, y: c.paper });
        let Some(y) = c.ours else { continue };
        match series.iter_mut().find(|s| s.name == c.row) {
            Some(s) => s.points.push((x, y)),
            None => series.push(Series { name: c.row.clone(), points: vec![(x, y)] }),
        }
    }
    for s in &mut series {
        s.points.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    let id = cells.first().map_or("", |c| c.experiment.as_str());
    Plot::new(
        &format!("{id}: effect of IPA against [0x0] by buffer"),
        "DB buffer (% of the database)",
        "change against [0x0] (%)",
        series,
    )
    .with_paper(paper)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verdict::Verdict;

    fn cell(row: &str, column: &str, unit: &str, paper: f64, ours: Option<f64>) -> Cell {
        Cell {
            experiment: "ipa:table9".into(),
            row: row.into(),
            column: column.into(),
            unit: unit.into(),
            paper,
            ours,
            difference: None,
            difference_unit: "points",
            verdict: Verdict::NotComparable,
            reason: String::new(),
            ablation: String::new(),
            source: "s".into(),
            under: Vec::new(),
        }
    }

    #[test]
    fn effects_become_a_line_per_row_and_a_paper_marker_per_cell() {
        let cells = [
            cell("GC erases", "buffer 20% [2x3] Δ%", "change %", -40.0, Some(-30.0)),
            cell("GC erases", "buffer 10% [2x10] Δ%", "change %", -50.0, Some(-45.0)),
            cell("GC erases", "buffer 10% [0x0]", "count", 1000.0, Some(900.0)),
            cell("Host reads", "buffer 10% [2x3] Δ%", "change %", 1.0, None),
        ];
        let p = effects_by_buffer(&[], &cells);
        assert_eq!(p.series.len(), 1, "{:?}", p.series);
        assert_eq!(p.series[0].points, vec![(10.0, -45.0), (20.0, -30.0)]);
        assert_eq!(p.paper.len(), 3, "the absolute cell is not plotted; a cell without ours still is");
        assert_eq!(p.to_svg().matches(r#"class="paper-point""#).count(), 3);
        assert_eq!(buffer_of_effect("buffer 12.5% [2x4] Δ%"), Some(12.5));
        assert_eq!(buffer_of_effect("buffer 10% [0x0]"), None);
    }
}
