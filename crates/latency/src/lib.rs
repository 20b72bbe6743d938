//! Latency histograms of simulated time, and the percentiles every command reports for a
//! latency (`read_latency_us`, `transaction_latency_us`, a mounted disk's `stats.json` …).
//! One type for the whole workspace, in a leaf crate so that the engine, the workloads,
//! the indexes and the mount all use it without depending on one another.
//!
//! Invariants: a [`LatencyHistogram`] is an HDR histogram of nanoseconds with fixed
//! bounds (1 ns to [`MAX_LATENCY_NS`]) and two significant digits, allocated once:
//! recording allocates nothing, 0 ns counts as 1 ns, a value above the bound counts as
//! the bound, and any quantile is within 1 % of the exact (nearest-rank) one. The caller
//! decides the window ([`LatencyHistogram::reset`], [`LatencyHistogram::add`]).

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// The largest latency told apart: an hour of simulated time.
pub const MAX_LATENCY_NS: u64 = 3_600_000_000_000;

/// Two significant digits: quantiles within 1 %, in 4,608 counters of 8 bytes (36 KiB) per
/// histogram; three digits would take 33,792 (264 KiB), much for a histogram per
/// transaction type (HdrHistogram's layout: 128 or 1,024 counters per power of two).
const SIGNIFICANT_DIGITS: u8 = 2;

/// Latencies in nanoseconds, with the bounds and precision above.
#[derive(Clone, Debug)]
pub struct LatencyHistogram(Histogram<u64>);

impl Default for LatencyHistogram {
    fn default() -> LatencyHistogram {
        match Histogram::new_with_bounds(1, MAX_LATENCY_NS, SIGNIFICANT_DIGITS) {
            Ok(h) => LatencyHistogram(h),
            Err(e) => panic!("constant histogram bounds are valid: {e}"),
        }
    }
}

impl LatencyHistogram {
    /// An empty histogram.
    pub fn new() -> LatencyHistogram {
        LatencyHistogram::default()
    }

    /// Records one latency; 0 counts as 1 ns and a value above the bound as the bound.
    pub fn record(&mut self, ns: u64) {
        self.0.saturating_record(ns.max(1));
    }

    /// Adds every latency `other` recorded (folds a window into a longer one).
    pub fn add(&mut self, other: &LatencyHistogram) {
        // Both have the same bounds and precision, so each recorded bucket lands in the
        // same bucket here; recording bucket by bucket cannot fail, unlike `Histogram::add`.
        for v in other.0.iter_recorded() {
            self.0.saturating_record_n(v.value_iterated_to(), v.count_at_value());
        }
    }

    /// Empties the histogram (keeps its memory).
    pub fn reset(&mut self) {
        self.0.reset();
    }

    /// The number of latencies recorded.
    pub fn len(&self) -> u64 {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The `q` quantile (0..=1) in milliseconds; 0 when empty.
    pub fn quantile_ms(&self, q: f64) -> f64 {
        self.quantile_ns(q) as f64 / 1e6
    }

    fn quantile_ns(&self, q: f64) -> u64 {
        if self.0.is_empty() {
            0
        } else {
            self.0.value_at_quantile(q)
        }
    }

    /// The percentiles a result reports, in microseconds.
    pub fn percentiles(&self) -> Percentiles {
        let us = |q: f64| self.quantile_ns(q) as f64 / 1e3;
        let max = if self.0.is_empty() { 0.0 } else { self.0.max() as f64 / 1e3 };
        Percentiles { count: self.len(), p50: us(0.50), p95: us(0.95), p99: us(0.99), p99_9: us(0.999), max }
    }
}

/// A latency as every result's JSON carries it: how many were recorded, the 50th, 95th,
/// 99th and 99.9th percentiles and the maximum, in microseconds; all 0 when none were.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Percentiles {
    pub count: u64,
    pub p50: f64,
    pub p95: f64,
    pub p99: f64,
    pub p99_9: f64,
    pub max: f64,
}

impl Percentiles {
    /// `p50 / p95 / p99 / p99.9 / max` for a table cell, one decimal.
    pub fn cell(&self) -> String {
        format!("{:.1} / {:.1} / {:.1} / {:.1} / {:.1}", self.p50, self.p95, self.p99, self.p99_9, self.max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// The exact `q` quantile of sorted values, by the nearest-rank rule.
    fn exact(sorted: &[u64], q: f64) -> u64 {
        let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
        sorted[rank - 1]
    }

    #[test]
    fn quantiles_are_within_one_percent_of_the_exact_ones() {
        let mut rng = ChaCha8Rng::seed_from_u64(19);
        let mut h = LatencyHistogram::new();
        // Log-uniform from 10 µs to 10 s: the range of page reads queued behind GC.
        let mut values: Vec<u64> = (0..20_000).map(|_| 10f64.powf(rng.gen_range(4.0..10.0)) as u64).collect();
        for &v in &values {
            h.record(v);
        }
        values.sort_unstable();
        for q in [0.5, 0.9, 0.99, 0.999, 1.0] {
            let (got, want) = (h.quantile_ms(q), exact(&values, q) as f64 / 1e6);
            assert!((got - want).abs() <= want * 0.01, "q {q}: {got} ms, exact {want} ms");
        }
        h.reset();
        assert!(h.is_empty());
        assert_eq!(h.quantile_ms(0.99), 0.0, "reset empties");
    }

    #[test]
    fn percentiles_are_in_microseconds_and_zero_when_empty() {
        let mut h = LatencyHistogram::new();
        assert_eq!(h.percentiles(), Percentiles::default());
        for us in 1..=1000u64 {
            h.record(us * 1000);
        }
        let p = h.percentiles();
        assert_eq!(p.count, 1000);
        for (got, want) in [(p.p50, 500.0), (p.p95, 950.0), (p.p99, 990.0), (p.p99_9, 999.0), (p.max, 1000.0)] {
            assert!((got - want).abs() <= want * 0.01, "{got} µs, want {want}");
        }
        assert!(p.cell().starts_with("50"), "{}", p.cell());
    }

    #[test]
    fn a_latency_beyond_the_bound_counts_as_the_bound_and_zero_as_one_nanosecond() {
        let mut h = LatencyHistogram::new();
        h.record(u64::MAX);
        h.record(0);
        let top = h.quantile_ms(1.0);
        assert!((top - MAX_LATENCY_NS as f64 / 1e6).abs() <= MAX_LATENCY_NS as f64 / 1e6 * 0.01, "{top}");
        assert_eq!(h.quantile_ms(0.0), 1e-6);
        assert_eq!(h.len(), 2);
    }

    #[test]
    fn adding_a_window_gives_the_percentiles_of_recording_both_in_one() {
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let (mut whole, mut first, mut second) =
            (LatencyHistogram::new(), LatencyHistogram::new(), LatencyHistogram::new());
        for n in 0..5_000 {
            let ns = rng.gen_range(1_000..50_000_000);
            whole.record(ns);
            if n % 3 == 0 { &mut first } else { &mut second }.record(ns);
        }
        first.add(&second);
        assert_eq!(first.percentiles(), whole.percentiles());
    }
}
