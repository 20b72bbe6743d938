//! Latency histograms of the buffer pool's page I/O: every page read on a miss and
//! every page write (out-of-place, append or logged) records its simulated latency, so
//! that a caller can ask for percentiles, not only the means in [`PoolStats`].
//!
//! Invariants: the histograms are HDR histograms of nanoseconds with fixed bounds
//! (1 ns to [`MAX_LATENCY_NS`]) and two significant digits, allocated once: recording
//! allocates nothing, a value above the bound counts as the bound, and any quantile is
//! within 1 % of the exact one. The caller decides the window: [`IoLatencies::reset`]
//! starts a new one (the workload driver resets at each interval line).
//!
//! [`PoolStats`]: crate::buffer::PoolStats

use hdrhistogram::Histogram;

/// The largest latency told apart: an hour of simulated time.
pub const MAX_LATENCY_NS: u64 = 3_600_000_000_000;

/// An empty histogram of nanoseconds with the bounds above.
pub fn histogram() -> Histogram<u64> {
    match Histogram::new_with_bounds(1, MAX_LATENCY_NS, 2) {
        Ok(h) => h,
        Err(e) => panic!("constant histogram bounds are valid: {e}"),
    }
}

/// The `q` quantile (0..=1) of a histogram of nanoseconds, in milliseconds; 0 when empty.
pub fn quantile_ms(h: &Histogram<u64>, q: f64) -> f64 {
    if h.is_empty() {
        0.0
    } else {
        h.value_at_quantile(q) as f64 / 1e6
    }
}

/// The percentiles every command reports for a latency (`read_latency_us`,
/// `write_latency_us`, …), in microseconds; all 0 for an empty histogram. `count` is
/// the number of latencies recorded.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Percentiles {
    pub count: u64,
    pub p50: f64,
    pub p95: f64,
    pub p99: f64,
    pub p99_9: f64,
    pub max: f64,
}

impl Percentiles {
    /// The percentiles of a histogram of nanoseconds.
    pub fn of_ns(h: &Histogram<u64>) -> Percentiles {
        if h.is_empty() {
            return Percentiles::default();
        }
        let us = |ns: u64| ns as f64 / 1e3;
        Percentiles {
            count: h.len(),
            p50: us(h.value_at_quantile(0.50)),
            p95: us(h.value_at_quantile(0.95)),
            p99: us(h.value_at_quantile(0.99)),
            p99_9: us(h.value_at_quantile(0.999)),
            max: us(h.max()),
        }
    }

    /// `p50 / p95 / p99 / p99.9 / max` for a table cell, one decimal.
    pub fn cell(&self) -> String {
        format!("{:.1} / {:.1} / {:.1} / {:.1} / {:.1}", self.p50, self.p95, self.p99, self.p99_9, self.max)
    }
}

/// Page read and page write latencies since the last reset.
#[derive(Clone, Debug)]
pub struct IoLatencies {
    reads: Histogram<u64>,
    writes: Histogram<u64>,
}

impl Default for IoLatencies {
    fn default() -> IoLatencies {
        IoLatencies { reads: histogram(), writes: histogram() }
    }
}

impl IoLatencies {
    pub(crate) fn record_read(&mut self, ns: u64) {
        self.reads.saturating_record(ns.max(1));
    }
    pub(crate) fn record_write(&mut self, ns: u64) {
        self.writes.saturating_record(ns.max(1));
    }
    pub fn reads(&self) -> &Histogram<u64> {
        &self.reads
    }
    pub fn writes(&self) -> &Histogram<u64> {
        &self.writes
    }
    /// Empties both histograms (keeps their memory).
    pub fn reset(&mut self) {
        self.reads.reset();
        self.writes.reset();
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
        let mut l = IoLatencies::default();
        // Log-uniform from 10 µs to 10 s: the range of page reads queued behind GC.
        let mut values: Vec<u64> = (0..20_000).map(|_| 10f64.powf(rng.gen_range(4.0..10.0)) as u64).collect();
        for &v in &values {
            l.record_read(v);
        }
        values.sort_unstable();
        for q in [0.5, 0.9, 0.99, 0.999] {
            let (got, want) = (quantile_ms(l.reads(), q), exact(&values, q) as f64 / 1e6);
            assert!((got - want).abs() <= want * 0.01, "q {q}: {got} ms, exact {want} ms");
        }
        assert_eq!(quantile_ms(l.writes(), 0.5), 0.0, "no writes recorded");
        l.reset();
        assert_eq!(quantile_ms(l.reads(), 0.99), 0.0, "reset empties");
    }

    #[test]
    fn percentiles_are_in_microseconds_and_zero_when_empty() {
        let mut h = histogram();
        assert_eq!(Percentiles::of_ns(&h), Percentiles::default());
        for us in 1..=1000u64 {
            h.record(us * 1000).expect("within bounds");
        }
        let p = Percentiles::of_ns(&h);
        assert_eq!(p.count, 1000);
        for (got, want) in [(p.p50, 500.0), (p.p95, 950.0), (p.p99, 990.0), (p.p99_9, 999.0), (p.max, 1000.0)] {
            assert!((got - want).abs() <= want * 0.01, "{got} µs, want {want}");
        }
        assert!(p.cell().starts_with("50"), "{}", p.cell());
    }

    #[test]
    fn a_latency_beyond_the_bound_counts_as_the_bound() {
        let mut l = IoLatencies::default();
        l.record_write(u64::MAX);
        l.record_write(0);
        let top = quantile_ms(l.writes(), 1.0);
        assert!((top - MAX_LATENCY_NS as f64 / 1e6).abs() <= MAX_LATENCY_NS as f64 / 1e6 * 0.01, "{top}");
        assert_eq!(l.writes().len(), 2);
    }
}
