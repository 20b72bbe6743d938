//! Preconditioning: the state of the device when the measurement starts.
//!
//! - `none`: the device as the load left it (the database's pages written once, the
//!   rest of the data regions erased). Free space costs GC nothing, so a short run
//!   barely collects.
//! - `fill`: the load, then the pages of the data regions that no object holds are
//!   written once ([`engine::Database::fill_free_pages`]) until valid data takes the
//!   share of the flash the paper's device had: all but the over-provisioning (10%,
//!   IPA paper §8.4) of the blocks GC may fill ([`fill_target_pages`]). GC keeps a
//!   reserve of free blocks on each chip; on the paper's devices (1,024 or 4,096
//!   blocks per chip) it is a fraction of a percent, on ours, cut to a few dozen
//!   blocks per chip, it would eat most of the over-provisioning if the whole logical
//!   capacity were filled, and GC would move nearly full blocks.
//! - `steady`: `fill`, then the workload's own transactions age the device, through
//!   the same driver and engine path as the measurement, window by window, until GC is
//!   in steady state by the criterion of [`steady_state`] or the cap of [`MAX_WINDOWS`]
//!   windows is reached (recorded as `reached: false`; the measurement then starts all
//!   the same).
//!
//! The criterion and the cap follow the SNIA Solid State Storage Performance Test
//! Specification (SSS PTS, Enterprise v1.1 and v2.0.2, "Steady State" definition,
//! <https://www.snia.org/tech_activities/standards/curr_standards/pts>): over a
//! measurement window of five rounds, the values stay within 20% of their average
//! (max − min, here: each within ±10% of the mean), and the excursion of the
//! least-squares line across the five rounds stays within 10% of the average (the line
//! within ±5% of the mean); a test that has not reached steady state after 25 rounds
//! proceeds and reports it. Our round is a window of host page writes (a tenth of the
//! data regions' logical capacity, [`WINDOW_CAPACITY_SHARE`]) and the tracked value is
//! GC page migrations per host write, the quantity the IPA tables compare.
//!
//! The windows are evaluated from the first one in which GC moved pages: before it,
//! the spare blocks left after the fill absorb the writes and zero migrations would
//! pass for a steady state.

use crate::driver::{self, Control, DriverConfig, Event, RunError};
use crate::workload::{Workload, WorkloadError};
use engine::Database;
use flash::{IpaMode, PageDevice, RegionId};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// How the device is prepared before the measured run (`driver.precondition`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Precondition {
    #[default]
    None,
    Fill,
    Steady,
}

impl Precondition {
    pub const NAMES: [&'static str; 3] = ["none", "fill", "steady"];

    pub fn is_none(&self) -> bool {
        *self == Precondition::None
    }
}

impl fmt::Display for Precondition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Precondition::None => "none",
            Precondition::Fill => "fill",
            Precondition::Steady => "steady",
        })
    }
}

impl FromStr for Precondition {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "none" => Ok(Precondition::None),
            "fill" => Ok(Precondition::Fill),
            "steady" => Ok(Precondition::Steady),
            other => Err(format!(
                "unknown precondition {} (expected one of: {})",
                crate::limits::quote(other),
                Precondition::NAMES.join(", ")
            )),
        }
    }
}

/// Rounds in the SNIA PTS measurement window.
pub const WINDOWS: usize = 5;
/// Each window's value within this share of the windows' mean (SNIA PTS: max − min
/// within 20% of the average).
pub const VALUE_TOLERANCE: f64 = 0.10;
/// The least-squares line's rise or fall across the windows within this share of the
/// mean (SNIA PTS: slope excursion within 10% of the average).
pub const LINE_EXCURSION_TOLERANCE: f64 = 0.10;
/// The SNIA PTS cap: a test not in steady state after 25 rounds proceeds.
pub const MAX_WINDOWS: usize = 25;
/// A window's host page writes as a share of the data regions' logical capacity. Our
/// choice (SNIA PTS rounds are time-based): five windows then span half the capacity
/// rewritten, and the cap of 25 windows two and a half times the capacity.
pub const WINDOW_CAPACITY_SHARE: f64 = 0.1;

/// Whether the last [`WINDOWS`] values are in steady state: each within
/// ±[`VALUE_TOLERANCE`] of their mean, and the least-squares line across them rising or
/// falling by at most [`LINE_EXCURSION_TOLERANCE`] of the mean. Fewer values: not yet.
pub fn steady_state(values: &[f64]) -> bool {
    let Some(last) = values.len().checked_sub(WINDOWS).map(|from| &values[from..]) else {
        return false;
    };
    let n = WINDOWS as f64;
    let mean = last.iter().sum::<f64>() / n;
    if last.iter().any(|v| (v - mean).abs() > VALUE_TOLERANCE * mean.abs()) {
        return false;
    }
    let x_mean = (n - 1.0) / 2.0;
    let (mut sxy, mut sxx) = (0.0, 0.0);
    for (i, v) in last.iter().enumerate() {
        let dx = i as f64 - x_mean;
        sxy += dx * (v - mean);
        sxx += dx * dx;
    }
    let slope = sxy / sxx;
    (slope * (n - 1.0)).abs() <= LINE_EXCURSION_TOLERANCE * mean.abs()
}

/// One window of the aging: the data regions' host page writes and GC migrations.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Window {
    pub transactions: u64,
    pub host_writes: u64,
    pub gc_page_migrations: u64,
    pub gc_migrations_per_host_write: f64,
}

/// What the preconditioning did (the result's `precondition`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Report {
    pub mode: Precondition,
    /// `steady`: the criterion held before the cap; `fill`: always (no criterion).
    pub reached: bool,
    /// DB pages the fill wrote into the data regions' free space.
    pub filled_pages: u64,
    /// Flash page programs (all regions: fill, host, log, GC) while preconditioning.
    pub device_writes: u64,
    /// Host page writes a window takes.
    pub window_host_writes: u64,
    /// Simulated seconds the preconditioning took.
    pub sim_seconds: f64,
    pub windows: Vec<Window>,
}

/// Transactions in the first chunk of a window, and the bounds of later chunks, whose
/// size follows the host writes per transaction seen so far.
const FIRST_CHUNK: u64 = 256;
const MIN_CHUNK: u64 = 16;
const MAX_CHUNK: u64 = 1 << 20;

/// Preconditions the loaded database's device by `mode`; `None` for `none`. The driver
/// runs the aging with `base`'s terminals and CPU cost; `on_tick` may stop it.
pub fn run(
    db: &mut Database,
    workload: &mut dyn Workload,
    mode: Precondition,
    base: &DriverConfig,
    rng: &mut ChaCha8Rng,
    on_tick: &mut dyn FnMut() -> Control,
) -> Result<Option<Report>, RunError> {
    if mode.is_none() {
        return Ok(None);
    }
    // Engine errors stay typed (a full region is told apart by its variant, not its text).
    let failed = |e: engine::Error| RunError::Failed(WorkloadError::Engine(e));
    let (start, programs_before) = (db.now(), flash_programs(db));
    let keep_free = fill_keep_free(db);
    let filled_pages = db.fill_free_pages(&|r| keep_free.get(r.0).copied().unwrap_or(0)).map_err(failed)?;
    let window_host_writes = ((data_capacity_db_pages(db) as f64 * WINDOW_CAPACITY_SHARE) as u64).max(1);
    let mut report = Report {
        mode,
        reached: mode == Precondition::Fill,
        filled_pages,
        device_writes: 0,
        window_host_writes,
        sim_seconds: 0.0,
        windows: Vec::new(),
    };
    if mode == Precondition::Steady {
        report.reached = age(db, workload, base, rng, on_tick, window_host_writes, &mut report.windows)?;
    }
    report.device_writes = flash_programs(db) - programs_before;
    report.sim_seconds = db.now().saturating_sub(start) as f64 / 1e9;
    Ok(Some(report))
}

/// Runs windows of the workload until the migrations per host write since GC began
/// are in steady state (true) or [`MAX_WINDOWS`] windows have run (false).
fn age(
    db: &mut Database,
    workload: &mut dyn Workload,
    base: &DriverConfig,
    rng: &mut ChaCha8Rng,
    on_tick: &mut dyn FnMut() -> Control,
    window_host_writes: u64,
    windows: &mut Vec<Window>,
) -> Result<bool, RunError> {
    let mut chunk = FIRST_CHUNK;
    let mut gc_began: Option<usize> = None;
    while windows.len() < MAX_WINDOWS {
        let mut w =
            Window { transactions: 0, host_writes: 0, gc_page_migrations: 0, gc_migrations_per_host_write: 0.0 };
        while w.host_writes < window_host_writes {
            let m = run_chunk(db, workload, base, rng, on_tick, chunk)?;
            w.transactions += m.transactions;
            w.host_writes += m.host_writes;
            w.gc_page_migrations += m.gc_page_migrations;
            if m.host_writes == 0 && chunk == MAX_CHUNK {
                // The workload does not write: there is no GC to bring to steady state.
                windows.push(w);
                return Ok(false);
            }
            chunk = next_chunk(
                chunk,
                m.transactions,
                m.host_writes,
                window_host_writes - w.host_writes.min(window_host_writes),
            );
        }
        w.gc_migrations_per_host_write = w.gc_page_migrations as f64 / w.host_writes as f64;
        if gc_began.is_none() && w.gc_page_migrations > 0 {
            gc_began = Some(windows.len());
        }
        windows.push(w);
        if let Some(first) = gc_began {
            let values: Vec<f64> = windows[first..].iter().map(|w| w.gc_migrations_per_host_write).collect();
            if steady_state(&values) {
                return Ok(true);
            }
        }
    }
    Ok(false)
}

/// The next chunk's transactions: enough for the window's `remaining` host writes at
/// the rate the last chunk wrote, within [`MIN_CHUNK`] and [`MAX_CHUNK`], and at most
/// twice the last chunk (or [`FIRST_CHUNK`]). The cap keeps a window near its size when
/// the last chunk's rate understates the writes to come: while a large buffer warms up
/// few pages are written, and TPC-C at a 75% buffer wrote 11 pages in its first 256
/// transactions, which sized the next chunk at 270,000 transactions: 76 windows' worth of
/// host writes, and rows enough to outgrow the device (measured).
fn next_chunk(chunk: u64, transactions: u64, host_writes: u64, remaining: u64) -> u64 {
    let at_most = (chunk * 2).clamp(FIRST_CHUNK, MAX_CHUNK);
    if host_writes == 0 {
        return at_most;
    }
    let per_write = transactions as f64 / host_writes as f64;
    ((remaining as f64 * per_write).ceil() as u64).clamp(MIN_CHUNK, at_most)
}

/// `transactions` transactions of the workload through the driver, no warm-up.
fn run_chunk(
    db: &mut Database,
    workload: &mut dyn Workload,
    base: &DriverConfig,
    rng: &mut ChaCha8Rng,
    on_tick: &mut dyn FnMut() -> Control,
    transactions: u64,
) -> Result<driver::Metrics, RunError> {
    let config = DriverConfig {
        terminals: base.terminals,
        warmup_s: 0.0,
        duration_s: crate::limits::SIM_TIME_S.max,
        cpu_ns_per_operation: base.cpu_ns_per_operation,
        progress_s: 0.0,
        switch: None,
        max_transactions: Some(transactions),
    };
    driver::run(db, workload, &config, rng, &mut |event| match event {
        Event::Tick { .. } => on_tick(),
        Event::Interval(_) => Control::Continue,
    })
    .map_err(|e| match e {
        RunError::Failed(WorkloadError::Failed(m)) => {
            RunError::Failed(WorkloadError::Failed(format!("preconditioning: {m}")))
        }
        other => other,
    })
}

/// The flash pages of NoFTL region `r` that hold valid data after the fill:
/// (1 − over-provisioning) of its usable pages outside GC's reserve of free blocks
/// (`foreground_free_blocks` + 1 per chip, the region's own minimum). `None` for a
/// region whose blocks are not its own (an FTL partition, the IPL store): those are
/// filled to their logical capacity.
pub fn fill_target_pages(dev: &dyn PageDevice, r: RegionId) -> Option<u64> {
    dev.wear(r)?;
    let (spec, geometry) = (dev.region_spec(r), dev.device().geometry());
    let stride = if spec.ipa_mode == IpaMode::Pslc { geometry.cell.bits_per_cell() } else { 1 };
    let usable_per_block = u64::from(geometry.pages_per_block / stride);
    let chips = dev.chips(r).len() as u64;
    let usable = chips * u64::from(geometry.blocks_per_chip) * usable_per_block;
    let reserve = chips * u64::from(spec.gc.foreground_free_blocks + 1) * usable_per_block;
    Some(((1.0 - spec.over_provisioning) * usable.saturating_sub(reserve) as f64) as u64)
}

/// Per region index: the DB pages of the logical space the fill leaves unwritten.
fn fill_keep_free(db: &Database) -> Vec<u32> {
    let dev = db.page_device();
    let per_db_page = (db.catalog().page_bytes / dev.page_bytes()).max(1) as u64;
    dev.region_ids()
        .map(|r| {
            let logical = u64::from(dev.logical_pages(r)) / per_db_page;
            let target = fill_target_pages(dev, r).map_or(logical, |t| t / per_db_page);
            logical.saturating_sub(target) as u32
        })
        .collect()
}

/// Every page program on the device so far.
fn flash_programs(db: &Database) -> u64 {
    let c = db.page_device().device().counters();
    c.page_programs + c.reprograms + c.copybacks
}

/// The data regions' logical capacity in DB pages.
fn data_capacity_db_pages(db: &Database) -> u64 {
    let dev = db.page_device();
    let per_db_page = (db.catalog().page_bytes / dev.page_bytes()).max(1) as u64;
    let flash_pages: u64 = dev
        .region_ids()
        .filter(|&r| engine::db::is_data_region(dev.region_name(r)))
        .map(|r| dev.logical_pages(r) as u64)
        .sum();
    flash_pages / per_db_page
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steady_state_needs_five_windows_close_to_their_mean_and_a_flat_line() {
        // Reached: within ±10% and the line nearly flat.
        assert!(steady_state(&[0.9, 0.31, 0.30, 0.29, 0.30, 0.31]));
        assert!(steady_state(&[0.5, 0.5, 0.5, 0.5, 0.5]));
        // Too few windows.
        assert!(!steady_state(&[0.3, 0.3, 0.3, 0.3]));
        // One window 15% off the mean.
        assert!(!steady_state(&[0.30, 0.30, 0.30, 0.30, 0.36]));
        // Each within ±10% of the mean, but a steady rise: the line climbs 16% of the
        // mean across the windows.
        assert!(!steady_state(&[0.276, 0.288, 0.300, 0.312, 0.324]));
        // The same rise at half the rate: 8% of the mean, within.
        assert!(steady_state(&[0.288, 0.294, 0.300, 0.306, 0.312]));
        // No GC at all is a steady state of zero.
        assert!(steady_state(&[0.0; 5]));
    }

    #[test]
    fn modes_parse_and_print_by_name() {
        for name in Precondition::NAMES {
            assert_eq!(name.parse::<Precondition>().unwrap().to_string(), name);
        }
        assert!("warm".parse::<Precondition>().unwrap_err().contains("none, fill, steady"));
    }

    #[test]
    fn chunks_follow_the_write_rate_within_bounds() {
        assert_eq!(next_chunk(256, 256, 512, 1000), 500);
        assert_eq!(next_chunk(256, 256, 0, 1000), 512);
        assert_eq!(next_chunk(MAX_CHUNK, 1, 0, 1000), MAX_CHUNK);
        assert_eq!(next_chunk(256, 256, 256, 1), MIN_CHUNK);
        // The last chunk of a window is small; the next window's first may grow to the
        // first chunk's size at once.
        assert_eq!(next_chunk(MIN_CHUNK, MIN_CHUNK, 50, 12_165), FIRST_CHUNK);
    }

    #[test]
    fn a_chunk_that_wrote_little_does_not_size_the_next_beyond_twice_its_own() {
        // A large buffer warming up: 11 host writes in 256 transactions would size the
        // next chunk for the window's 12,154 remaining writes at 23 transactions each.
        assert_eq!(next_chunk(256, 256, 11, 12_154), 512);
        assert_eq!(next_chunk(4096, 4096, 100, 1_000_000), 8192);
    }
}
