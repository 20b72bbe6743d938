//! How one cell of ours compares with the paper's: the difference and a verdict.
//!
//! What a difference means depends on the cell's unit ([`Kind`]):
//! - a relative effect in percent (`change %`, e.g. "GC erases −55%") or a share in
//!   percent (`share %`, e.g. "67% of host writes are appends"): the difference is in
//!   points, and the direction is the sign (a share is an effect against the scheme
//!   without IPA, whose share is 0);
//! - a factor (`times`, e.g. "write amplification reduced 2.03×"): the difference is in
//!   percent, and the direction is the side of 1;
//! - an absolute value (a count, tps, ms, a per-host-write ratio): the difference is in
//!   percent; it has no direction of its own, and depends on the device and the run's
//!   length, so it is `within` or `n/a`.
//!
//! `within`: at most [`TOLERANCE`] points (or percent) apart. `direction`: further apart
//! but the same direction. `opposite`: no effect, or the other way, where the paper
//! has one (or an effect where the paper has none). `n/a`: not comparable.

use serde::Serialize;
use std::fmt;

/// The tolerance of `within`: points for effects and shares, percent otherwise.
pub const TOLERANCE: f64 = 15.0;

/// What kind of quantity a cell holds, from its unit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A relative change in percent against a baseline (0: no effect).
    Change,
    /// A share in percent whose baseline is 0.
    Share,
    /// A factor whose baseline is 1 ("reduced 2.03×").
    Factor,
    /// An absolute value: count, rate, latency.
    Absolute,
}

impl Kind {
    /// The kind of a reference unit: `change %`, `share %`, `times`, anything else absolute.
    pub fn of_unit(unit: &str) -> Kind {
        match unit {
            "change %" => Kind::Change,
            "share %" => Kind::Share,
            "times" => Kind::Factor,
            _ => Kind::Absolute,
        }
    }

    /// The difference's unit: points or percent.
    pub fn difference_unit(self) -> &'static str {
        match self {
            Kind::Change | Kind::Share => "points",
            Kind::Factor | Kind::Absolute => "%",
        }
    }
}

/// A cell's verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum Verdict {
    #[serde(rename = "within")]
    Within,
    #[serde(rename = "direction")]
    Direction,
    #[serde(rename = "opposite")]
    Opposite,
    #[serde(rename = "n/a")]
    NotComparable,
}

impl Verdict {
    pub const ALL: [Verdict; 4] = [Verdict::Within, Verdict::Direction, Verdict::Opposite, Verdict::NotComparable];

    pub fn name(self) -> &'static str {
        match self {
            Verdict::Within => "within",
            Verdict::Direction => "direction",
            Verdict::Opposite => "opposite",
            Verdict::NotComparable => "n/a",
        }
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The comparison of one cell.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Comparison {
    /// Ours minus the paper's, in points or percent of the paper's ([`Kind::difference_unit`]);
    /// `None` where it cannot be computed.
    pub difference: Option<f64>,
    pub verdict: Verdict,
}

/// Compares ours with the paper's value of a cell of `kind`. `ours` is `None` where our
/// run cannot give the cell (e.g. a change against a baseline of 0).
pub fn compare(kind: Kind, paper: f64, ours: Option<f64>) -> Comparison {
    let not_comparable = Comparison { difference: None, verdict: Verdict::NotComparable };
    let Some(ours) = ours.filter(|v| v.is_finite()) else {
        return not_comparable;
    };
    if !paper.is_finite() {
        return not_comparable;
    }
    let difference = match kind {
        Kind::Change | Kind::Share => ours - paper,
        Kind::Factor | Kind::Absolute if paper == 0.0 => return not_comparable,
        Kind::Factor | Kind::Absolute => (ours - paper) / paper.abs() * 100.0,
    };
    let verdict = if difference.abs() <= TOLERANCE {
        Verdict::Within
    } else {
        match kind {
            Kind::Change | Kind::Share => same_side(paper, ours, 0.0),
            Kind::Factor if ours <= 0.0 => Verdict::NotComparable,
            Kind::Factor => same_side(paper, ours, 1.0),
            Kind::Absolute => Verdict::NotComparable,
        }
    };
    Comparison { difference: Some(difference), verdict }
}

/// `direction` if both lie strictly on the same side of `neutral`, else `opposite`
/// (one of them at `neutral` is no effect against an effect).
fn same_side(paper: f64, ours: f64, neutral: f64) -> Verdict {
    let side = |v: f64| (v - neutral).partial_cmp(&0.0).map(|o| o as i8).unwrap_or(0);
    if side(paper) != 0 && side(paper) == side(ours) {
        Verdict::Direction
    } else {
        Verdict::Opposite
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verdict(kind: Kind, paper: f64, ours: f64) -> Verdict {
        compare(kind, paper, Some(ours)).verdict
    }

    #[test]
    fn a_change_within_fifteen_points_is_within_at_the_edge_too() {
        assert_eq!(verdict(Kind::Change, -34.0, -19.0), Verdict::Within);
        assert_eq!(verdict(Kind::Change, -34.0, -49.0), Verdict::Within);
        assert_eq!(verdict(Kind::Change, -34.0, -18.9), Verdict::Direction);
        assert_eq!(compare(Kind::Change, -34.0, Some(-19.0)).difference, Some(15.0));
    }

    #[test]
    fn a_change_of_the_other_sign_or_none_is_opposite() {
        assert_eq!(verdict(Kind::Change, -83.0, 188.0), Verdict::Opposite);
        assert_eq!(verdict(Kind::Change, -34.0, 0.0), Verdict::Opposite);
        assert_eq!(verdict(Kind::Change, 0.0, 40.0), Verdict::Opposite);
        assert_eq!(verdict(Kind::Change, 31.0, 11.0), Verdict::Direction);
        // A small effect against none is within, whatever its sign.
        assert_eq!(verdict(Kind::Change, 0.21, -3.0), Verdict::Within);
    }

    #[test]
    fn a_factor_is_compared_in_percent_around_one() {
        assert_eq!(verdict(Kind::Factor, 2.0, 2.3), Verdict::Within);
        assert_eq!(verdict(Kind::Factor, 2.0, 2.31), Verdict::Direction);
        assert_eq!(verdict(Kind::Factor, 2.0, 0.8), Verdict::Opposite);
        assert_eq!(verdict(Kind::Factor, 2.0, 1.0), Verdict::Opposite);
        assert_eq!(verdict(Kind::Factor, 2.0, 0.0), Verdict::NotComparable);
        let d = compare(Kind::Factor, 2.0, Some(2.5)).difference.unwrap();
        assert!((d - 25.0).abs() < 1e-9, "{d}");
    }

    #[test]
    fn an_absolute_value_is_within_or_not_comparable() {
        assert_eq!(verdict(Kind::Absolute, 4956.0, 5500.0), Verdict::Within);
        assert_eq!(verdict(Kind::Absolute, 4956.0, 9000.0), Verdict::NotComparable);
        assert_eq!(verdict(Kind::Absolute, 0.0, 0.0), Verdict::NotComparable);
    }

    #[test]
    fn a_missing_or_infinite_value_is_not_comparable() {
        assert_eq!(compare(Kind::Change, 10.0, None), Comparison { difference: None, verdict: Verdict::NotComparable });
        assert_eq!(verdict(Kind::Change, 10.0, f64::INFINITY), Verdict::NotComparable);
        assert_eq!(verdict(Kind::Change, f64::NAN, 1.0), Verdict::NotComparable);
    }

    #[test]
    fn units_name_their_kind() {
        assert_eq!(Kind::of_unit("change %"), Kind::Change);
        assert_eq!(Kind::of_unit("share %"), Kind::Share);
        assert_eq!(Kind::of_unit("times"), Kind::Factor);
        assert_eq!(Kind::of_unit("tps"), Kind::Absolute);
    }
}
