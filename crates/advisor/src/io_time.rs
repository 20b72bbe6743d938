//! The I/O-time model: a layout's throughput and page latencies from its predicted
//! flash operations, timed with the device's array and transfer times, and the
//! baseline's measured CPU share.
//!
//! A region's busy time is Σ reads·t_read + out-of-place writes·t_program +
//! appends·t_append + migrations·(t_read + t_program) + erases·t_erase (with the page
//! types its mode programs). A DB page of k flash pages is read and written out of
//! place as k flash pages (`engine::store::PageStore`), on k chips (the region's round
//! robin), so its device time is k flash pages' and its latency one array time plus k
//! transfers (consecutive chips share a channel: `nand::Geometry::channel_of_chip`);
//! an append programs the last flash page only, and GC migrates flash pages. The
//! device's busy time B is that of the busiest region per
//! chip (the caller's `Service`), the bottleneck of a layout that puts the hot tables on
//! part of the chips. A transaction's time is its CPU part (the
//! baseline's `time_per_transaction_ms.other`) and its wait for the log at commit
//! (`.commits`: the ARIES log's forces, on the log region's chips of their own), both
//! taken as unchanged, plus its waits for data pages, which scale with B:
//! T' = cpu + commit + (T − cpu − commit)·B'/B. (The commit wait is no function of
//! the data chips' load: measured, from the [0×0] baseline to the advised layout at
//! 1.17 to 1.47 times its throughput, 0.421 → 0.434 ms on TPC-B and 0.224 → 0.222 ms
//! on LinkBench while the data page reads' wait fell by 15–45%; docs/advisor.md.)
//! Closed-loop terminals give throughput ∝ 1/T. A page latency is its service time
//! plus a queueing delay (the baseline's measured latency less its service time). A
//! read's delay scales with B'/B, as the transaction's waits do: a read is issued at its
//! terminal's clock and takes the gaps the chip's later bookings leave
//! (`nand::timing`). A write's delay follows the chips' busy time per second: the page
//! cleaner and the evictions write at the pool's clock, right behind the garbage
//! collection the chip's previous write started (`flash::region::gc::background_gc`),
//! so the queue a write finds is the chips' work per unit of time, utilisation ρ, and
//! it grows as ρ / (1 − ρ) (M/M/1). Measured (docs/advisor.md): on TPC-B scale 2,
//! 1,290 of the baseline's 46,871 writes waited more than 1 ms, 10.5 ms on average, a
//! collection's copies and erase, which is all of its 0.29 ms of queueing; the advised
//! layout's writes queued 0.81 times as long at 0.83 times the busy time per second
//! (B'/B 0.57, throughput ×1.47); on TPC-B scale 1 on two chips 85% busy, 0.37 times
//! as long at 0.83 times the busy time per second, near saturation.

use nand::{CellType, Latencies};
use serde::Serialize;

/// Mean times of one operation in a region, in nanoseconds: a DB page's read and
/// out-of-place write as the latency a transaction waits (`read_ns`, `program_ns`)
/// and as device time summed over the chips it occupies (`*_busy_ns`); an append; a
/// GC migration of one flash page; an erase.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OpTimes {
    pub read_ns: f64,
    pub read_busy_ns: f64,
    pub program_ns: f64,
    pub program_busy_ns: f64,
    pub append_ns: f64,
    pub migration_ns: f64,
    pub erase_ns: f64,
}

impl OpTimes {
    /// The times in a region of `mode` (none, slc, pslc, odd-mlc) on `cell` flash, for
    /// DB pages of `parts` flash pages of `flash_page_bytes`: array time averaged over
    /// the page types the mode programs, plus the transfer of each flash page; the
    /// parts' array times overlap (k chips), their transfers are counted one after the
    /// other (a shared channel, the bound). An append transfers `delta_bytes` and
    /// programs the last flash page, an LSB or SLC page.
    pub fn of(
        latencies: &Latencies,
        cell: CellType,
        mode: &str,
        (flash_page_bytes, parts): (usize, u32),
        delta_bytes: usize,
    ) -> Self {
        let types: &[usize] = match (cell, mode) {
            (CellType::Slc, _) | (_, "pslc") => &[0],
            (CellType::Mlc, _) => &[0, 2],
            (CellType::Tlc, _) => &[0, 1, 2],
        };
        let mean = |times: &[u64; 3]| types.iter().map(|&t| times[t] as f64).sum::<f64>() / types.len() as f64;
        let page = latencies.transfer_ns(flash_page_bytes) as f64;
        let k = parts.max(1) as f64;
        let (read, program) = (mean(&latencies.read_ns), mean(&latencies.program_ns));
        OpTimes {
            read_ns: read + k * page,
            read_busy_ns: k * (read + page),
            program_ns: program + k * page,
            program_busy_ns: k * (program + page),
            append_ns: latencies.program_ns[0] as f64 + latencies.transfer_ns(delta_bytes) as f64,
            migration_ns: read + program + 2.0 * page,
            erase_ns: latencies.erase_ns as f64,
        }
    }
}

/// Flash operations of one region over a run: DB page reads, out-of-place writes and
/// appends, flash page migrations, block erases.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct RegionWork {
    pub reads: f64,
    pub out_of_place_writes: f64,
    pub in_place_appends: f64,
    pub gc_page_migrations: f64,
    pub gc_erases: f64,
}

impl RegionWork {
    /// Device busy time of the work, in nanoseconds.
    pub fn busy_ns(&self, t: &OpTimes) -> f64 {
        self.reads * t.read_busy_ns
            + self.out_of_place_writes * t.program_busy_ns
            + self.in_place_appends * t.append_ns
            + self.gc_page_migrations * t.migration_ns
            + self.gc_erases * t.erase_ns
    }

    /// Mean service time of a page write (out-of-place or append), in nanoseconds.
    pub fn write_service_ns(&self, t: &OpTimes) -> f64 {
        let writes = self.out_of_place_writes + self.in_place_appends;
        if writes == 0.0 {
            return t.program_ns;
        }
        (self.out_of_place_writes * t.program_ns + self.in_place_appends * t.append_ns) / writes
    }
}

/// What the baseline measured of time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct MeasuredTime {
    pub throughput_tps: f64,
    /// Mean response time per transaction, its part outside the page I/O and log
    /// waits (CPU) and its wait for the log at commit, in milliseconds
    /// (`time_per_transaction_ms.response`, `.other` and `.commits`).
    pub transaction_ms: f64,
    pub cpu_ms: f64,
    pub commit_ms: f64,
    pub read_latency_ms: f64,
    pub write_latency_ms: f64,
    /// Simulated seconds of the measurement: the baseline's busy time over them is its
    /// chips' utilisation.
    pub measured_s: f64,
}

/// Predicted throughput and latencies.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct PredictedTime {
    pub throughput_tps: f64,
    pub transaction_ms: f64,
    pub read_latency_ms: f64,
    pub write_latency_ms: f64,
}

/// Service times of a layout: device busy time, mean read and mean write service.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Service {
    pub busy_ns: f64,
    pub read_ns: f64,
    pub write_ns: f64,
}

/// Utilisation a chip's queue is taken to reach at most (a chip is busy at most all the
/// time; below 1 the M/M/1 wait stays finite).
const MAX_UTILISATION: f64 = 0.99;

/// The layout's time from the baseline's measurement and both service times.
pub fn predict(measured: &MeasuredTime, baseline: &Service, layout: &Service) -> PredictedTime {
    let load = if baseline.busy_ns > 0.0 { layout.busy_ns / baseline.busy_ns } else { 1.0 };
    let fixed_ms = (measured.cpu_ms.max(0.0) + measured.commit_ms.max(0.0)).min(measured.transaction_ms);
    let transaction_ms = fixed_ms + (measured.transaction_ms - fixed_ms) * load;
    let throughput_tps =
        if transaction_ms > 0.0 { measured.throughput_tps * measured.transaction_ms / transaction_ms } else { 0.0 };
    let latency = |measured_ms: f64, base_ns: f64, new_ns: f64, scale: f64| {
        let queueing_ms = (measured_ms - base_ns / 1e6).max(0.0);
        new_ns / 1e6 + queueing_ms * scale
    };
    // A write's queue: the chips' utilisation ρ (busy time per second) as a single
    // server's, whose mean wait grows as ρ / (1 − ρ) (M/M/1; Kleinrock, "Queueing
    // Systems", vol. 1, 1975, §3.2), the baseline's ρ from its busy time over the
    // measurement and the layout's from its busy time per transaction at its
    // throughput. A chip is busy at most all the time: ρ is bounded below 1.
    let per_second = if measured.throughput_tps > 0.0 { load * throughput_tps / measured.throughput_tps } else { load };
    let rho_base = if measured.measured_s > 0.0 { baseline.busy_ns / (measured.measured_s * 1e9) } else { 0.0 };
    let waits = |rho: f64| {
        let rho = rho.clamp(0.0, MAX_UTILISATION);
        rho / (1.0 - rho)
    };
    let write_queue = if rho_base > 0.0 { waits(rho_base * per_second) / waits(rho_base) } else { per_second };
    PredictedTime {
        throughput_tps,
        transaction_ms,
        read_latency_ms: latency(measured.read_latency_ms, baseline.read_ns, layout.read_ns, load),
        write_latency_ms: latency(measured.write_latency_ms, baseline.write_ns, layout.write_ns, write_queue),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn op_times_follow_the_mode_and_the_page_types() {
        let l = Latencies::mlc_typical();
        let odd = OpTimes::of(&l, CellType::Mlc, "odd-mlc", (4096, 1), 100);
        let pslc = OpTimes::of(&l, CellType::Mlc, "pslc", (4096, 1), 100);
        let page = l.transfer_ns(4096) as f64;
        assert_eq!(odd.program_ns, 1_000_000.0 + page);
        assert_eq!((odd.program_busy_ns, odd.read_busy_ns), (odd.program_ns, odd.read_ns));
        assert_eq!(pslc.program_ns, 500_000.0 + page);
        assert_eq!(odd.migration_ns, odd.read_ns + odd.program_ns);
        assert_eq!(odd.append_ns, pslc.append_ns);
        assert!(odd.append_ns < pslc.program_ns);
    }

    #[test]
    fn a_db_page_of_two_flash_pages_occupies_two_chips_and_appends_to_one() {
        let l = Latencies::slc_typical();
        let (one, two) = (
            OpTimes::of(&l, CellType::Slc, "slc", (4096, 1), 100),
            OpTimes::of(&l, CellType::Slc, "slc", (4096, 2), 100),
        );
        let page = l.transfer_ns(4096) as f64;
        // Device time: two flash pages read or programmed; latency: the array times
        // overlap on two chips, the transfers do not.
        assert_eq!((two.read_busy_ns, two.program_busy_ns), (2.0 * one.read_ns, 2.0 * one.program_ns));
        assert_eq!((two.read_ns, two.program_ns), (one.read_ns + page, one.program_ns + page));
        // An append programs the last flash page; GC migrates flash pages.
        assert_eq!((two.append_ns, two.migration_ns), (one.append_ns, one.migration_ns));
        let work = RegionWork {
            reads: 1.0,
            out_of_place_writes: 1.0,
            in_place_appends: 1.0,
            gc_page_migrations: 1.0,
            gc_erases: 0.0,
        };
        assert_eq!(work.busy_ns(&two) - work.busy_ns(&one), one.read_ns + one.program_ns);
    }

    /// A baseline of 100 tps, 10 ms a transaction (2 of them CPU), reads of 1 ms and
    /// writes of 2 ms, measured over `measured_s` seconds.
    fn measured(measured_s: f64) -> MeasuredTime {
        MeasuredTime {
            throughput_tps: 100.0,
            transaction_ms: 10.0,
            cpu_ms: 2.0,
            commit_ms: 0.0,
            read_latency_ms: 1.0,
            write_latency_ms: 2.0,
            measured_s,
        }
    }

    #[test]
    fn a_writes_queue_follows_the_chips_utilisation() {
        // Half the busy time per transaction; the transaction's page waits halve, and
        // 10 / 6 times as many transactions a second keep the chips 5/6 as busy. A read
        // waits half as long in the queue; a write as a single server's queue at that
        // utilisation: from ρ = 0.5 (1 s of busy time in 2 s) to 5/12, the wait
        // ρ / (1 − ρ) falls from 1 to 5/7.
        let m = measured(2.0);
        let base = Service { busy_ns: 1e9, read_ns: 500_000.0, write_ns: 1_000_000.0 };
        let half = Service { busy_ns: 5e8, read_ns: 500_000.0, write_ns: 600_000.0 };
        let p = predict(&m, &base, &half);
        assert!((p.read_latency_ms - (0.5 + 0.5 * 0.5)).abs() < 1e-12);
        assert!((p.write_latency_ms - (0.6 + 1.0 * 5.0 / 7.0)).abs() < 1e-12, "{p:?}");
        // Near saturation the queue falls faster than the busy time: ρ from 0.9 to 0.75,
        // the wait from 9 to 3.
        let busy = MeasuredTime { measured_s: 1.0 / 0.9, ..m };
        assert!((predict(&busy, &base, &half).write_latency_ms - (0.6 + 1.0 / 3.0)).abs() < 1e-9);
        // A measurement of unknown length: the busy time per second.
        let unknown = MeasuredTime { measured_s: 0.0, ..m };
        assert!((predict(&unknown, &base, &half).write_latency_ms - (0.6 + 5.0 / 6.0)).abs() < 1e-12);
    }

    #[test]
    fn half_the_io_time_speeds_up_only_the_data_page_waits() {
        let m = measured(0.0);
        let base = Service { busy_ns: 1e9, read_ns: 500_000.0, write_ns: 1_000_000.0 };
        let half = Service { busy_ns: 5e8, read_ns: 500_000.0, write_ns: 600_000.0 };
        let p = predict(&m, &base, &half);
        assert!((p.transaction_ms - 6.0).abs() < 1e-12);
        assert!((p.throughput_tps - 100.0 * 10.0 / 6.0).abs() < 1e-9);
        assert!((p.read_latency_ms - 0.75).abs() < 1e-12);
        assert_eq!(predict(&m, &base, &base).throughput_tps, 100.0);
        // The wait for the log at commit is on the log's chips: it stays.
        let m = MeasuredTime { commit_ms: 2.0, ..m };
        assert!((predict(&m, &base, &half).transaction_ms - 7.0).abs() < 1e-12);
    }
}
