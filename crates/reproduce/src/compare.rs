//! Joins an experiment's cells with the paper's: for every reference cell of the
//! experiment, ours, the difference, the verdict, and why where it is known.

use crate::reference::ReferenceCell;
use crate::verdict::{self, Kind, Verdict};
use serde::Serialize;

/// One cell as our runs give it; `value` is `None` where a run failed or the cell
/// cannot be computed (a change against a baseline of 0).
#[derive(Clone, Debug, PartialEq)]
pub struct Ours {
    pub row: String,
    pub column: String,
    pub value: Option<f64>,
}

/// One compared cell, as `summary.json` lists it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Cell {
    pub experiment: String,
    pub row: String,
    pub column: String,
    pub unit: String,
    pub paper: f64,
    /// `None` (null) where our runs do not give the cell.
    pub ours: Option<f64>,
    /// Ours minus the paper's, in `difference_unit`.
    pub difference: Option<f64>,
    pub difference_unit: &'static str,
    pub verdict: Verdict,
    /// Why the cell is not `within`; empty where not known yet ("unexplained").
    pub reason: String,
    /// The ablation that shows the reason; empty where none was run yet.
    pub ablation: String,
    /// Where in the paper's text the value stands.
    pub source: String,
    /// The cell's verdict under each variant of its experiment's ablation, by the
    /// variant's name (`ablation` shows them in `summary.json`).
    #[serde(skip)]
    pub under: Vec<(&'static str, Verdict)>,
}

impl Cell {
    /// Not `within`, and no reason given.
    pub fn unexplained(&self) -> bool {
        self.verdict != Verdict::Within && self.reason.is_empty()
    }
}

/// Why an experiment's cells lack our values, when they do.
#[derive(Clone, Copy, Debug)]
pub enum Missing<'a> {
    /// The experiment has no implementation yet.
    NotImplemented,
    /// Some runs failed; the first failure's message.
    RunFailed(&'a str),
    /// Some runs are neither kept nor made (an invocation that makes none).
    NotMade,
}

/// The reason stated for a magnitude of the run or the machine ([`Kind::Magnitude`]),
/// which is never compared.
pub const MAGNITUDE_REASON: &str = "a count, time, throughput or latency: it depends on the device's size, the run's \
     length and the machine, so it is not compared, however near; the relative effects beside it compare the schemes";

/// The cells of `experiment`: one per reference cell, in the reference file's order.
pub fn join(experiment: &str, reference: &[ReferenceCell], ours: &[Ours], missing: Option<Missing>) -> Vec<Cell> {
    reference
        .iter()
        .filter(|r| r.experiment == experiment)
        .map(|r| {
            let value = ours.iter().find(|o| o.row == r.row && o.column == r.column).and_then(|o| o.value);
            let kind = Kind::of_unit(&r.unit);
            let c = verdict::compare(kind, r.value, value);
            let reason = match (c.verdict, value, missing) {
                (Verdict::Within, _, _) => String::new(),
                (_, None, Some(Missing::NotImplemented)) => "not implemented yet".to_string(),
                (_, None, Some(Missing::RunFailed(e))) => format!("a run failed: {e}"),
                (_, None, Some(Missing::NotMade)) => "its runs are not made yet".to_string(),
                (_, None, None) => "our runs do not give this cell".to_string(),
                (Verdict::NotComparable, Some(_), _) if kind == Kind::Magnitude => MAGNITUDE_REASON.to_string(),
                _ => String::new(),
            };
            Cell {
                experiment: experiment.to_string(),
                row: r.row.clone(),
                column: r.column.clone(),
                unit: r.unit.clone(),
                paper: r.value,
                ours: value,
                difference: c.difference,
                difference_unit: kind.difference_unit(),
                verdict: c.verdict,
                reason,
                ablation: String::new(),
                source: r.source.clone(),
                under: Vec::new(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference(row: &str, value: f64, unit: &str) -> ReferenceCell {
        ReferenceCell {
            experiment: "x:t".into(),
            row: row.into(),
            column: "c".into(),
            value,
            unit: unit.into(),
            source: "s".into(),
        }
    }

    #[test]
    fn each_reference_cell_gets_ours_a_verdict_and_a_reason_where_known() {
        let refs = [
            reference("effect", -34.0, "change %"),
            reference("count", 1000.0, "count"),
            reference("missing", 5.0, "change %"),
            reference("other", 1.0, "tps"),
        ];
        let ours = [
            Ours { row: "effect".into(), column: "c".into(), value: Some(1.0) },
            Ours { row: "count".into(), column: "c".into(), value: Some(10.0) },
        ];
        let cells = join("x:t", &refs[..3], &ours, None);
        assert_eq!(cells.len(), 3);
        assert_eq!((cells[0].verdict, cells[0].reason.as_str()), (Verdict::Opposite, ""));
        assert!(cells[0].unexplained());
        assert_eq!((cells[1].verdict, cells[1].reason.as_str()), (Verdict::NotComparable, MAGNITUDE_REASON));
        assert_eq!(cells[2].ours, None);
        assert!(cells[2].reason.contains("do not give"));
        let failed = join("x:t", &refs[2..3], &[], Some(Missing::RunFailed("out of space")));
        assert_eq!(failed[0].reason, "a run failed: out of space");
        let waiting = join("x:t", &refs[2..3], &[], Some(Missing::NotMade));
        assert_eq!(waiting[0].reason, "its runs are not made yet");
        assert!(join("y:t", &refs, &ours, None).is_empty());
    }
}
