//! The allowed range of every number an experiment takes, defined once: the config
//! check ([`crate::config`]) and the command line's value parsers both use these, so a
//! flag and its config field refuse the same values with the same words.
//!
//! A refusal says the range and the value: "must be in (0, 1], got 0". Non-finite
//! floats (NaN, infinities, and decimal text too large for an f64) are always refused.

use std::fmt;

/// An interval of floats; each end open or closed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FloatRange {
    pub min: f64,
    pub min_open: bool,
    pub max: f64,
    pub max_open: bool,
    /// What the number counts, for the message ("simulated seconds"); may be empty.
    pub unit: &'static str,
}

impl FloatRange {
    const fn closed(min: f64, max: f64, unit: &'static str) -> FloatRange {
        FloatRange { min, min_open: false, max, max_open: false, unit }
    }

    const fn above(min: f64, max: f64, unit: &'static str) -> FloatRange {
        FloatRange { min, min_open: true, max, max_open: false, unit }
    }

    pub fn contains(self, v: f64) -> bool {
        let low = if self.min_open { v > self.min } else { v >= self.min };
        let high = if self.max_open { v < self.max } else { v <= self.max };
        v.is_finite() && low && high
    }

    /// `v`, or what is wrong with it.
    pub fn check(self, v: f64) -> Result<f64, String> {
        if self.contains(v) {
            Ok(v)
        } else {
            Err(format!("must be in {self}, got {v}"))
        }
    }

    /// Parses a decimal number and checks it.
    pub fn parse(self, text: &str) -> Result<f64, String> {
        let v: f64 = text.trim().parse().map_err(|_| format!("`{text}` is not a number; must be in {self}"))?;
        self.check(v)
    }
}

impl fmt::Display for FloatRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (open, close) = (if self.min_open { '(' } else { '[' }, if self.max_open { ')' } else { ']' });
        write!(f, "{open}{}, {}{close}", self.min, self.max)?;
        if !self.unit.is_empty() {
            write!(f, " {}", self.unit)?;
        }
        Ok(())
    }
}

/// A closed interval of whole numbers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CountRange {
    pub min: u64,
    pub max: u64,
}

impl CountRange {
    const fn at_least(min: u64, max: u64) -> CountRange {
        CountRange { min, max }
    }

    pub fn check(self, v: u64) -> Result<u64, String> {
        if (self.min..=self.max).contains(&v) {
            Ok(v)
        } else {
            Err(format!("must be {self}, got {v}"))
        }
    }

    /// Parses a whole number (a sign is refused with the range, not as a parse error).
    pub fn parse(self, text: &str) -> Result<u64, String> {
        let t = text.trim();
        match t.parse::<u64>() {
            Ok(v) => self.check(v),
            Err(_) if t.parse::<i128>().is_ok() => Err(format!("must be {self}, got {t}")),
            Err(_) => Err(format!("`{text}` is not a whole number; must be {self}")),
        }
    }
}

impl fmt::Display for CountRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.max == u32::MAX as u64 || self.max == u64::MAX {
            write!(f, "at least {}", self.min)
        } else {
            write!(f, "in {}..={}", self.min, self.max)
        }
    }
}

/// The longest warm-up or measured time: simulated nanoseconds of both still fit a u64
/// (which holds 1.8e10 seconds).
const MAX_SIM_SECONDS: f64 = 1e9;

/// Measured simulated seconds.
pub const SIM_TIME_S: FloatRange = FloatRange::above(0.0, MAX_SIM_SECONDS, "simulated seconds");
/// Warm-up simulated seconds.
pub const WARMUP_S: FloatRange = FloatRange::closed(0.0, MAX_SIM_SECONDS, "simulated seconds");
/// Simulated seconds between interval lines (0: none).
pub const PROGRESS_INTERVAL_S: FloatRange = FloatRange::closed(0.0, MAX_SIM_SECONDS, "simulated seconds");
/// Simulated CPU time per record operation.
pub const CPU_PER_OPERATION_US: FloatRange = FloatRange::closed(0.0, 1e6, "simulated µs");
/// Group commit window.
pub const GROUP_COMMIT_US: FloatRange = FloatRange::closed(0.0, 1e6, "simulated µs");
/// Buffer pool size as a share of the loaded database.
pub const BUFFER_SHARE: FloatRange = FloatRange::above(0.0, 1.0, "of the database");
/// Log fill at which a checkpoint is taken.
pub const CHECKPOINT_LOG_SHARE: FloatRange =
    FloatRange { min: 0.0, min_open: true, max: 1.0, max_open: true, unit: "of the log region" };
/// Closed-loop terminals (each keeps its own clock; the bound keeps that small).
pub const TERMINALS: CountRange = CountRange::at_least(1, 65_536);
/// Measured transactions (`driver.transactions`, SQLite's TPC-B).
pub const TRANSACTIONS: CountRange = CountRange::at_least(1, 1 << 40);
/// V, the metadata pairs per delta-record (the page format's limit).
pub const V: CountRange = CountRange::at_least(1, engine::delta::MAX_PAIRS as u64);
/// Chips of the log region (the device's chip count bounds it further).
pub const LOG_CHIPS: CountRange = CountRange::at_least(1, u32::MAX as u64);
/// Unforced log bytes past which full log pages are written ahead (0: every full page
/// at once); `bench` and `torture` both take up to 1 GiB.
pub const LOG_BUFFER_BYTES: CountRange = CountRange::at_least(0, 1 << 30);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float_ranges_refuse_ends_nan_and_overflow_with_the_range() {
        assert_eq!(SIM_TIME_S.parse("2.5"), Ok(2.5));
        for bad in ["0", "-1", "NaN", "inf", "1e400", "2e9"] {
            let e = SIM_TIME_S.parse(bad).unwrap_err();
            assert!(e.contains("(0, 1000000000] simulated seconds"), "{bad}: {e}");
        }
        assert!(SIM_TIME_S.parse("ten").unwrap_err().contains("not a number"));
        assert!(CHECKPOINT_LOG_SHARE.check(1.0).is_err() && CHECKPOINT_LOG_SHARE.check(0.5).is_ok());
        assert!(BUFFER_SHARE.check(1.0).is_ok() && BUFFER_SHARE.check(0.0).is_err());
        assert!(WARMUP_S.check(0.0).is_ok());
    }

    #[test]
    fn count_ranges_name_the_range_for_signs_and_zero() {
        assert_eq!(TERMINALS.parse("8"), Ok(8));
        assert_eq!(TERMINALS.parse("0").unwrap_err(), "must be in 1..=65536, got 0");
        assert_eq!(TERMINALS.parse("-3").unwrap_err(), "must be in 1..=65536, got -3");
        assert!(TERMINALS.parse("1.5").unwrap_err().contains("not a whole number"));
        assert_eq!(LOG_CHIPS.parse("0").unwrap_err(), "must be at least 1, got 0");
        assert!(V.check(126).is_err() && V.check(125).is_ok());
    }
}
