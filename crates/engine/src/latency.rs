//! Latency histograms of the buffer pool's page I/O: every page read on a miss and
//! every page write (out-of-place, append or logged) records its simulated latency, so
//! that a caller can ask for percentiles, not only the means in [`PoolStats`].
//!
//! Invariants: the histograms are [`LatencyHistogram`]s (within 1 %, allocated once,
//! recording allocates nothing). The caller decides the window: [`IoLatencies::reset`]
//! starts a new one (the workload driver resets at each interval line).
//!
//! [`PoolStats`]: crate::buffer::PoolStats

use latency::LatencyHistogram;

/// Page read and page write latencies since the last reset.
#[derive(Clone, Debug, Default)]
pub struct IoLatencies {
    reads: LatencyHistogram,
    writes: LatencyHistogram,
}

impl IoLatencies {
    pub(crate) fn record_read(&mut self, ns: u64) {
        self.reads.record(ns);
    }
    pub(crate) fn record_write(&mut self, ns: u64) {
        self.writes.record(ns);
    }
    pub fn reads(&self) -> &LatencyHistogram {
        &self.reads
    }
    pub fn writes(&self) -> &LatencyHistogram {
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

    #[test]
    fn reads_and_writes_are_kept_apart_until_a_reset() {
        let mut l = IoLatencies::default();
        l.record_read(80_000);
        l.record_write(200_000);
        l.record_write(400_000);
        assert_eq!((l.reads().len(), l.writes().len()), (1, 2));
        assert!((l.reads().quantile_ms(0.5) - 0.08).abs() <= 0.08 * 0.01);
        l.reset();
        assert!(l.reads().is_empty() && l.writes().is_empty(), "reset empties both");
    }
}
