//! How one cell of ours compares with the paper's: the difference and a verdict.
//!
//! What a difference means depends on the cell's unit ([`Kind`]):
//! - a relative effect in percent (`change %`, e.g. "GC erases −55%") or a share in
//!   percent (`share %`, e.g. "67% of host writes are appends"): the difference is in
//!   points, and the direction is the sign (a share is an effect against the scheme
//!   without IPA, whose share is 0);
//! - a factor (`times`, e.g. "write amplification reduced 2.03×"): the difference is in
//!   percent, and the direction is the side of 1;
//! - a rate, whose 0 means none of it (`per host write`, `% of database` of space
//!   overhead): the difference is in percent; it is set by the flash model, the
//!   workload and how full the device is kept (its fill and over-provisioning), not by
//!   the device's absolute size, the run's length or the machine, so it is compared like
//!   the others; its only side is that of 0: `direction` means both have
//!   it, more than [`TOLERANCE`] percent apart, `opposite` that one has none;
//! - a magnitude of the run or the machine (a count, minutes, tps, a latency in ms): the
//!   difference is in percent, but the value depends on the device's size, the run's
//!   length and the machine (the papers' latencies and throughput include their hosts'
//!   CPU and I/O stack), so it is `n/a` whichever way it falls, never counted as `within`
//!   either.
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
    /// A factor whose baseline is 1 ("reduced 2.03×", an I/O amplification).
    Factor,
    /// A rate whose 0 means none of it (GC migrations per host write, space overhead in
    /// % of the database).
    Rate,
    /// A magnitude of the run or the machine (a count, minutes, tps, ms).
    Magnitude,
}

impl Kind {
    /// Every unit a reference cell may have (the reference file refuses others).
    pub const UNITS: [&'static str; 10] =
        ["change %", "share %", "times", "ratio", "per host write", "% of database", "count", "tps", "ms", "min"];

    /// The kind of a reference cell's unit (one of [`Kind::UNITS`]); any other is a
    /// magnitude, never counted.
    pub fn of_unit(unit: &str) -> Kind {
        match unit {
            "change %" => Kind::Change,
            "share %" => Kind::Share,
            "times" | "ratio" => Kind::Factor,
            "per host write" | "% of database" => Kind::Rate,
            _ => Kind::Magnitude,
        }
    }

    /// The difference's unit: points or percent.
    pub fn difference_unit(self) -> &'static str {
        match self {
            Kind::Change | Kind::Share => "points",
            Kind::Factor | Kind::Rate | Kind::Magnitude => "%",
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
        // A rate of none: ours is within at none too, else the paper's none against ours.
        Kind::Rate if paper == 0.0 => {
            let verdict = if ours == 0.0 { Verdict::Within } else { Verdict::Opposite };
            return Comparison { difference: None, verdict };
        }
        Kind::Factor | Kind::Magnitude if paper == 0.0 => return not_comparable,
        Kind::Factor | Kind::Rate | Kind::Magnitude => (ours - paper) / paper.abs() * 100.0,
    };
    let verdict = match kind {
        Kind::Magnitude => Verdict::NotComparable,
        _ if difference.abs() <= TOLERANCE => Verdict::Within,
        Kind::Change | Kind::Share | Kind::Rate => same_side(paper, ours, 0.0),
        Kind::Factor if ours <= 0.0 => Verdict::NotComparable,
        Kind::Factor => same_side(paper, ours, 1.0),
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
    fn a_rate_is_compared_in_percent_and_its_side_is_that_of_zero() {
        assert_eq!(verdict(Kind::Rate, 0.66, 0.75), Verdict::Within);
        assert_eq!(verdict(Kind::Rate, 0.30, 0.01), Verdict::Direction);
        assert_eq!(verdict(Kind::Rate, 0.30, 0.0), Verdict::Opposite);
        assert_eq!(verdict(Kind::Rate, 0.0, 0.0), Verdict::Within);
        assert_eq!(verdict(Kind::Rate, 0.0, 0.5), Verdict::Opposite);
        let d = compare(Kind::Rate, 0.5, Some(0.4)).difference.unwrap();
        assert!((d + 20.0).abs() < 1e-9, "{d}");
    }

    /// A magnitude is `n/a` whether it falls near the paper's or far from it: counting
    /// the near ones alone would count its hits and not its misses.
    #[test]
    fn a_magnitude_is_never_compared_near_or_far() {
        assert_eq!(verdict(Kind::Magnitude, 4956.0, 5000.0), Verdict::NotComparable);
        assert_eq!(verdict(Kind::Magnitude, 4956.0, 9000.0), Verdict::NotComparable);
        assert_eq!(verdict(Kind::Magnitude, 0.0, 0.0), Verdict::NotComparable);
        let d = compare(Kind::Magnitude, 4956.0, Some(9912.0)).difference.unwrap();
        assert!((d - 100.0).abs() < 1e-9, "the difference is shown: {d}");
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
        assert_eq!(Kind::of_unit("ratio"), Kind::Factor);
        assert_eq!(Kind::of_unit("per host write"), Kind::Rate);
        assert_eq!(Kind::of_unit("% of database"), Kind::Rate);
        assert_eq!(Kind::of_unit("tps"), Kind::Magnitude);
        assert_eq!(Kind::of_unit("ms"), Kind::Magnitude);
        assert_eq!(Kind::of_unit("count"), Kind::Magnitude);
    }
}
