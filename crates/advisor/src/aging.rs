//! The run a layout's GC prediction replays, on all of the layout's regions at once:
//! the writes before the measurement, then the measured ones.
//!
//! Why the layout's own aging: `--precondition steady` ages the device with the
//! workload window by window until GC's migrations per host write pass the SNIA
//! steady-state criterion (`workloads::precondition`), so how long a run ages depends
//! on its own GC. A layout whose appends leave fewer out-of-place writes per host write
//! has GC's rate settle more slowly, ages more windows, and has greedy sort more of its
//! unwritten pages out of the written pages' blocks before it measures: taking the
//! baseline's aging for it over-predicts its GC (TPC-B scale 16: 6 windows for the
//! baseline, 14 for the advised layout). So the aging is replayed as the preconditioner
//! runs it: windows of [`WINDOW_CAPACITY_SHARE`] of the layout's logical capacity in
//! host writes (out-of-place writes and appends, each region taking its share),
//! each window's migrations per host write over all regions,
//! evaluated from the first window with migrations, until the last five pass
//! [`steady_state`] or [`MAX_WINDOWS`] have run. Then the warm-up's writes, then the
//! measured ones, whose migrations are the prediction.

use crate::greedy_sim::{Done, RegionReplay};
use workloads::precondition::{steady_state, MAX_WINDOWS, WINDOW_CAPACITY_SHARE};

/// A region in the run: its replay and its page writes (out-of-place writes and
/// appends) in the measured run.
pub struct RegionRun {
    pub replay: RegionReplay,
    pub measured: f64,
}

/// What comes before the measured writes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Before {
    /// `--precondition steady`: the aging's windows, then the warm-up.
    Steady {
        /// The layout's logical capacity in DB pages (a window is
        /// [`WINDOW_CAPACITY_SHARE`] of it in host writes).
        logical_pages: f64,
        /// Page writes of the measured run over all regions.
        host_writes: f64,
        /// Warm-up writes per measured write.
        warmup_per_measured: f64,
    },
    /// A device not aged: `fills` times each region's `valid` DB pages of writes, long
    /// enough for GC's rate to settle (the free pages are the caller's business).
    Settle { fills: f64 },
}

/// The replay's result.
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    /// Per region: what its measured writes did.
    pub measured: Vec<Done>,
    /// Windows of aging replayed (0 when not aged to steady state).
    pub aging_windows: usize,
}

/// Replays `regions` through `before` and their measured writes; `valid` is each
/// region's valid DB pages (for [`Before::Settle`]).
pub fn replay(regions: &mut [RegionRun], valid: &[f64], before: Before) -> Outcome {
    let mut aging_windows = 0;
    match before {
        Before::Steady { logical_pages, host_writes, warmup_per_measured } => {
            let window = (logical_pages * WINDOW_CAPACITY_SHARE).max(1.0);
            let per_host_write: Vec<f64> =
                regions.iter().map(|r| if host_writes > 0.0 { r.measured / host_writes } else { 0.0 }).collect();
            let mut values: Vec<f64> = Vec::new();
            while aging_windows < MAX_WINDOWS && per_host_write.iter().any(|&s| s > 0.0) {
                let migrations: f64 = regions
                    .iter_mut()
                    .zip(&per_host_write)
                    .map(|(r, share)| r.replay.write(window * share).migrations)
                    .sum();
                aging_windows += 1;
                if values.is_empty() && migrations == 0.0 {
                    continue;
                }
                values.push(migrations / window);
                if steady_state(&values) {
                    break;
                }
            }
            for r in regions.iter_mut() {
                r.replay.write(r.measured * warmup_per_measured);
            }
        }
        Before::Settle { fills } => {
            for (r, v) in regions.iter_mut().zip(valid) {
                r.replay.write(fills * v);
            }
        }
    }
    let measured = regions.iter_mut().map(|r| r.replay.write(r.measured)).collect();
    Outcome { measured, aging_windows }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gc;
    use crate::greedy_sim::{Appends, Page, Region};
    use workloads::precondition::WINDOWS;

    const REGION: Region = Region {
        chips: 2,
        blocks_per_chip: 100,
        pages_per_block: 64,
        static_pages: 0,
        flash_pages_per_db_page: 1,
        db_pages_per_page: 1.0,
        min_free_blocks: 2,
    };
    const LOGICAL: f64 = 2.0 * 100.0 * 64.0 * 0.9;

    /// Of every eight pages five written, three not: the load interleaves them.
    fn mixed(n: u64) -> Vec<Page> {
        (0..n).map(|k| Page { order: k, rate: if k % 8 < 5 { 1.0 } else { 0.0 }, kind: 0 }).collect()
    }

    fn steady(host_writes: f64) -> Before {
        Before::Steady { logical_pages: LOGICAL, host_writes, warmup_per_measured: 0.0 }
    }

    fn run(pages: &[Page], appends: &Appends, measured: f64) -> RegionRun {
        RegionRun { replay: RegionReplay::new(pages, REGION, appends), measured }
    }

    #[test]
    fn aging_runs_windows_until_the_snia_criterion_holds() {
        // Uniform writes over 80% of the room: GC's rate settles quickly, and the
        // replay stops at the criterion well before the cap.
        let n = (0.8 * 2.0 * 98.0 * 64.0) as u64;
        let pages: Vec<Page> = (0..n).map(|k| Page { order: k, rate: 1.0, kind: 0 }).collect();
        let none = Appends::default();
        let out = replay(&mut [run(&pages, &none, 5_000.0)], &[n as f64], steady(5_000.0));
        assert!(out.aging_windows >= WINDOWS && out.aging_windows < MAX_WINDOWS, "{out:?}");
        let closed = gc::migrations_per_write(0.8);
        let per_write = out.measured[0].migrations_per_write();
        assert!((per_write / closed - 1.0).abs() < 0.2, "{out:?} against {closed}");
        // The same input, the same result.
        assert_eq!(replay(&mut [run(&pages, &none, 5_000.0)], &[n as f64], steady(5_000.0)), out);
    }

    #[test]
    fn appends_slow_the_aging() {
        // The same region and pages; in the second run every eviction needs one record
        // of three: three of four page writes are appends (after the first evictions
        // after the load, which all append), a window of host writes makes a quarter
        // of the out-of-place writes, and GC's rate settles later: more windows.
        let pages = mixed((0.8 * 2.0 * 98.0 * 64.0) as u64);
        let ipa = Appends { n: 3, records: vec![vec![1.0, 0.0, 0.0]], lsb_share: 1.0 };
        let go = |appends: &Appends| replay(&mut [run(&pages, appends, 8_000.0)], &[0.0], steady(8_000.0));
        let (plain, appending) = (go(&Appends::default()), go(&ipa));
        assert!(appending.aging_windows > plain.aging_windows, "{plain:?} {appending:?}");
        assert_eq!(plain.measured[0].out_of_place_writes, 8_000.0);
        let share = appending.measured[0].out_of_place_writes / 8_000.0;
        assert!((share - 0.25).abs() < 0.03, "{appending:?}");
    }

    #[test]
    fn a_device_not_aged_settles_for_the_fills_given() {
        let pages = mixed(6_000);
        let none = Appends::default();
        let out = replay(&mut [run(&pages, &none, 1_000.0)], &[6_000.0], Before::Settle { fills: 20.0 });
        assert_eq!(out.aging_windows, 0);
        assert!(out.measured[0].migrations > 0.0, "{out:?}");
        // A region without measured writes: no rate.
        let idle = replay(&mut [run(&pages, &none, 0.0)], &[6_000.0], steady(0.0));
        assert_eq!(idle.measured[0], Done::default());
    }
}
