//! A layout's predicted effect: which tables sit in an IPA region under which scheme,
//! and what that does to appends, GC work, space, throughput and latency.
//!
//! The data chips hold one region (every table in it, or none in IPA) or two: `ipa`
//! (the chosen tables, in the layout's IPA mode) and `plain` (the rest, no IPA). Per
//! region: its state when the measured interval starts ([`RegionState`]: pages in GC's
//! circulation, valid pages with the fill's on a preconditioned device, static pages);
//! its tables' page writes per transaction as in the baseline, of which the layout's
//! run replayed ([`crate::aging`], [`crate::greedy_sim`]) gives the appends (from
//! steady state; else the append model's long-run share, [`crate::model`]) and GC's
//! migrations per out-of-place write. In steady state that is the prediction; from a
//! fresh or only filled device the free pages take the
//! first writes without GC and the result is scaled to the baseline's measured
//! migrations. Time: [`crate::io_time`], with the busiest region's work per chip as the
//! device's busy time; counts are over the measured time, so they grow with the
//! predicted throughput. The eviction stream (which pages are written when) is taken as
//! the baseline's. `gc_reduction` and `flash_program_reduction` compare steady states:
//! the long-run effect, defined also when the baseline ran no GC.

use crate::aging::{self, RegionRun};
use crate::greedy_sim::{self, Page, RegionReplay};
use crate::io_time::{self, OpTimes, PredictedTime, RegionWork, Service};
use crate::{model, space, DeviceState, Input, ObjectInput};
use engine::IpaScheme;
use nand::CellType;
use serde::Serialize;

/// Per table, the sum of its objects (placement is per table: indexes follow).
pub struct Table<'a> {
    pub name: &'a str,
    pub pages: u64,
    /// Pages allocated to its objects in the measured run (its growth).
    pub allocated_pages: u64,
    pub reads: u64,
    pub writes: u64,
    pub objects: Vec<&'a ObjectInput>,
}

/// The tables of `input`, in the order their first object appears.
pub fn tables(input: &Input) -> Vec<Table<'_>> {
    let mut out: Vec<Table> = Vec::new();
    for o in &input.objects {
        let i = match out.iter().position(|t| t.name == o.table) {
            Some(i) => i,
            None => {
                out.push(Table {
                    name: &o.table,
                    pages: 0,
                    allocated_pages: 0,
                    reads: 0,
                    writes: 0,
                    objects: Vec::new(),
                });
                out.len() - 1
            }
        };
        out[i].pages += o.pages;
        out[i].allocated_pages += o.allocated_pages;
        out[i].reads += o.reads;
        out[i].writes += o.writes;
        out[i].objects.push(o);
    }
    out
}

/// Share of flash pages that take appends in `mode` on `cell` flash.
pub fn lsb_share(mode: &str, cell: CellType) -> f64 {
    match (mode, cell) {
        ("odd-mlc", CellType::Mlc) => 0.5,
        ("odd-mlc", CellType::Tlc) => 1.0 / 3.0,
        _ => 1.0,
    }
}

/// Bits per cell.
pub fn bits(cell: CellType) -> u32 {
    match cell {
        CellType::Slc => 1,
        CellType::Mlc => 2,
        CellType::Tlc => 3,
    }
}

/// Predicted appends of each table under `scheme` in `mode`.
pub fn appends(input: &Input, tables: &[Table], scheme: IpaScheme, mode: &str) -> Vec<f64> {
    let lsb = lsb_share(mode, input.device.cell);
    tables
        .iter()
        .map(|t| t.objects.iter().map(|o| model::predicted_appends(&evictions(o), o.writes, scheme, lsb)).sum())
        .collect()
}

/// An object's evictions as the append model takes them: its histogram of changed body
/// bytes, and the slot-changing share (the log's slot-adding or -removing updates per
/// write of a page on flash, at most 1) with their metadata bytes.
pub fn evictions(o: &ObjectInput) -> model::Evictions<'_> {
    let on_flash = model::total(&o.write_sizes);
    let slot_share = if on_flash == 0 { 0.0 } else { (o.slot_updates as f64 / on_flash as f64).min(1.0) };
    model::Evictions { body: &o.write_sizes, slot_share, slot_meta: &o.slot_update_meta_sizes }
}

/// The pages of a region's objects, where the load put them and how often the
/// measured run writes them, for [`crate::greedy_sim`]; each entry of `objects` is
/// (its table's place in the catalog, the object, its page writes), and a page's
/// `kind` is its object's place in `objects`. The load's order is
/// the page numbers (the order the catalog's extents were taken); an object whose
/// extents are not known follows the known ones, table by table.
///
/// An object's writes spread over its pages by each page's rate of updates (a write is
/// an eviction of a page made dirty by updates), estimated from the log's update
/// counts of the measured run. A count is a sample: a short run sees a page of a
/// uniformly updated table 0, 1 or 2 times (TPC-B scale 1, 2 s: 2,471 account updates
/// on 2,632 pages), and taking the counts as the rates would leave the third of the
/// pages it missed cold (TATP at 200,000 subscribers, 10 s: GC under-predicted by 10%
/// that way, +3% with the estimate below). So the rate of a page with count c is the empirical-Bayes
/// (Poisson counts, gamma-distributed rates) posterior mean, ∝ c + α with
/// α = m² / (s² − m) from the counts' mean m and variance s² over the object's pages
/// (Robbins, "An empirical Bayes approach to statistics", 1956; the gamma prior's
/// moments): counts no more spread than Poisson noise (s² ≤ m) give every page the
/// same rate, widely spread counts (an insert point, a hot set) keep their shape, and
/// a page seen 0 times keeps a small rate. An object written with no update in the log
/// (a ring that lost the run's start) has its writes spread evenly; an object never
/// written has rate 0.
pub fn region_pages(objects: &[(usize, &ObjectInput, f64)]) -> Vec<Page> {
    let mut out = Vec::new();
    let unknown = |table: usize, k: u64| (1u64 << 48) + ((table as u64) << 32) + k;
    for (kind, &(table, o, writes)) in objects.iter().enumerate() {
        let numbers: Vec<u64> = if o.page_numbers.is_empty() {
            (0..o.pages).map(|k| unknown(table, k)).collect()
        } else {
            o.page_numbers.iter().map(|&p| p as u64).collect()
        };
        let mut count: std::collections::HashMap<u64, f64> = std::collections::HashMap::new();
        let known = !o.page_numbers.is_empty() && o.updated_pages.len() == o.page_updates.len();
        for (k, &c) in o.page_updates.iter().enumerate() {
            // Without page numbers, the updated pages take the object's first places.
            let at = if known { o.updated_pages[k] as u64 } else { numbers.get(k).copied().unwrap_or_default() };
            *count.entry(at).or_default() += c as f64;
        }
        let counts: Vec<f64> = numbers.iter().map(|n| count.get(n).copied().unwrap_or(0.0)).collect();
        let kind = kind as u32;
        let rates = page_rates(&counts, writes);
        out.extend(numbers.iter().zip(rates).map(|(&n, rate)| Page { order: n, rate, kind }));
    }
    out
}

/// The pages `o`'s last extent holds unused (0 when its extents are not known).
fn extent_tail(o: &ObjectInput) -> u64 {
    let extent = o.extent_pages as u64;
    if extent == 0 {
        return 0;
    }
    let used = if o.page_numbers.is_empty() { o.pages } else { o.page_numbers.len() as u64 };
    (extent - used % extent) % extent
}

/// `writes` spread over pages updated `counts` times, by the empirical-Bayes rate of
/// each (see [`region_pages`]).
fn page_rates(counts: &[f64], writes: f64) -> Vec<f64> {
    let pages = counts.len().max(1) as f64;
    let total: f64 = counts.iter().sum();
    let mean = total / pages;
    let variance = counts.iter().map(|c| (c - mean) * (c - mean)).sum::<f64>() / pages;
    if writes <= 0.0 {
        return vec![0.0; counts.len()];
    }
    if total <= 0.0 || variance <= mean {
        return vec![writes / pages; counts.len()];
    }
    let alpha = mean * mean / (variance - mean);
    counts.iter().map(|c| writes * (c + alpha) / (total + alpha * pages)).collect()
}

/// One layout: the scheme and mode of the IPA region, its tables and chips.
#[derive(Clone, Debug)]
pub struct Layout {
    pub scheme: IpaScheme,
    pub mode: String,
    /// Per table (as [`tables`] orders them): in the IPA region?
    pub in_ipa: Vec<bool>,
    /// Per table: predicted appends under `scheme` in `mode`.
    pub appends: Vec<f64>,
    pub ipa_chips: u32,
}

/// One region of a layout as predicted.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RegionPrediction {
    pub name: String,
    pub mode: String,
    pub chips: u32,
    /// Valid flash pages over those in GC's circulation, when the measured interval
    /// starts.
    pub utilisation: f64,
    /// The same for the written pages, static pages taken out ([`RegionState`]).
    pub written_utilisation: f64,
    /// GC's migrations per out-of-place write, the run's writes replayed on the region's
    /// greedy GC ([`crate::aging::replay`]), before any calibration.
    pub model_migrations_per_write: f64,
    pub state: RegionState,
    #[serde(flatten)]
    pub work: RegionWork,
}

/// What a layout is predicted to do over the baseline's measured run (same
/// transactions): counts, GC work, time, space.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Prediction {
    /// Share of all data page writes that become in-place appends.
    pub ipa_share: f64,
    pub out_of_place_writes: f64,
    pub in_place_appends: f64,
    pub gc_page_migrations: f64,
    pub gc_erases: f64,
    pub gc_migrations_per_host_write: f64,
    pub gc_erases_per_host_write: f64,
    /// 1 − the layout's GC migrations per transaction over the baseline's in steady
    /// state (out-of-place writes × (WA(u) − 1) per region, uncalibrated, so it is
    /// defined when the baseline ran no GC).
    pub gc_reduction: f64,
    /// 1 − the layout's flash programs per transaction over the baseline's in steady
    /// state: out-of-place writes × WA(u) per region (host programs and GC's). What
    /// the layouts are weighed by: where GC is negligible (a nearly empty device) it is
    /// the out-of-place writes saved, where GC dominates the migrations saved.
    pub flash_program_reduction: f64,
    /// Windows of `--precondition steady`'s aging the layout's run is predicted to take
    /// ([`crate::aging`]; 0 when the baseline was not aged).
    pub aging_windows: usize,
    #[serde(flatten)]
    pub time: PredictedTime,
    /// Delta area per page of the IPA region, in percent of the page.
    pub space_overhead_page_pct: f64,
    /// Pages the IPA region's tables take more ([`space::growth`]: fewer rows or
    /// entries fit a page), in percent of the loaded database's pages (the baseline's
    /// `database_mib`; the tables' pages where not known).
    pub space_overhead_db_pct: f64,
    pub regions: Vec<RegionPrediction>,
}

/// Out-of-place writes of a measured window that GC has to make room for: the region
/// starts with `free` flash pages, which the `before` writes (warm-up) and then the
/// window's `during` writes fill; every write past them is an update in steady state.
pub fn gc_writes(free: f64, before: f64, during: f64) -> f64 {
    (before + during - free).max(0.0) - (before - free).max(0.0)
}

/// Flash pages of `chips` chips in `mode` (pslc keeps one bit per cell).
fn capacity(input: &Input, chips: u32, mode: &str) -> f64 {
    chips.max(1) as f64 * input.device.pages_per_chip.max(1) as f64 / stride(input, mode)
}

/// Flash pages per programmed page in `mode`: pslc programs one page per wordline.
fn stride(input: &Input, mode: &str) -> f64 {
    if mode == "pslc" {
        bits(input.device.cell) as f64
    } else {
        1.0
    }
}

/// What GC works against in a region when the measured interval starts.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct RegionState {
    /// Flash pages in GC's circulation: the region's usable pages less the free blocks
    /// its GC keeps on each chip (it collects while a chip has fewer than
    /// `gc_background_free_blocks`, `flash::GcConfig`).
    pub circulating_pages: f64,
    /// Valid flash pages: the tables' (grown by the delta area in an IPA region) and,
    /// on a preconditioned device, the fill's up to its target.
    pub valid_pages: f64,
    /// Of those, the fill's: written after the load, never written again.
    pub static_pages: f64,
    /// Of the tables' pages, those of objects no write of the measured run touches:
    /// they share blocks with written pages and GC moves them with those
    /// ([`crate::greedy_sim`]).
    pub unwritten_pages: f64,
    /// Free pages the first out-of-place writes take before GC must run (none in steady
    /// state).
    pub free_pages: f64,
    /// Pages programmed per block in the region's mode.
    pub pages_per_block: f64,
}

impl RegionState {
    /// The state of a region of `chips` chips in `mode` whose tables take `valid` flash
    /// pages, `unwritten` of them not written in the measured run. The fill target is
    /// `workloads::precondition::fill_target_pages`: (1 − over-provisioning) of the
    /// usable pages outside GC's reserve of (`gc_foreground_free_blocks` + 1) blocks per
    /// chip; a table that grows past the fill takes the fill's pages, so the valid pages
    /// are the larger of the two.
    ///
    /// The fill writes the region's pages outside every object's extents
    /// (`engine::Database::fill_free_pages`), so the pages an object's last extent
    /// holds unused (`extent_tails`) stay unwritten: the valid pages fall short of the
    /// fill's target by them (TPC-B scale 1 on two chips of 40 blocks: 4,090 valid
    /// pages by `deltaflash inspect` against a target of 4,262; the tails, 201).
    pub fn of(input: &Input, chips: u32, mode: &str, valid: f64, unwritten: f64, extent_tails: f64) -> RegionState {
        let d = &input.device;
        let usable = capacity(input, chips, mode);
        let per_block = d.pages_per_block as f64 / stride(input, mode);
        let blocks = |per_chip: u32| chips.max(1) as f64 * per_chip as f64 * per_block;
        let circulating = (usable - blocks(d.gc_background_free_blocks)).max(1.0);
        let fill_target = (1.0 - d.over_provisioning) * (usable - blocks(d.gc_foreground_free_blocks + 1)).max(0.0);
        let valid_pages = match input.baseline.device_state {
            DeviceState::Loaded => valid,
            DeviceState::Filled | DeviceState::Steady => valid.max(fill_target - extent_tails),
        };
        let free_pages = match input.baseline.device_state {
            DeviceState::Steady => 0.0,
            DeviceState::Loaded | DeviceState::Filled => (circulating - valid_pages).max(0.0),
        };
        RegionState {
            circulating_pages: circulating,
            valid_pages,
            static_pages: valid_pages - valid,
            unwritten_pages: unwritten.min(valid),
            free_pages,
            pages_per_block: per_block,
        }
    }

    /// Valid pages over the pages in circulation.
    pub fn utilisation(&self) -> f64 {
        self.valid_pages / self.circulating_pages
    }

    /// The tables' pages over the room the fill's static blocks leave them.
    pub fn written_utilisation(&self) -> f64 {
        let room = self.circulating_pages - self.static_pages;
        if room <= 0.0 {
            return 1.0;
        }
        (self.valid_pages - self.static_pages) / room
    }

    /// In steady state: erases per programmed page, one per block (0 when the log did
    /// not say how many pages a block has).
    pub fn erases_per_program(&self) -> f64 {
        if self.pages_per_block > 0.0 {
            1.0 / self.pages_per_block
        } else {
            0.0
        }
    }

    /// The region's greedy GC as the load left it: the tables' pages ([`region_pages`],
    /// `growth` DB pages each, of `flash_per_db` flash pages) on its `chips` of
    /// `pages_per_chip` flash pages ([`crate::greedy_sim`]), the fill's pages laid down
    /// after them, a chip collecting below `min_free_blocks` free blocks. No GC when the
    /// log did not say how many pages a block has.
    pub fn replay(
        &self,
        pages: &[Page],
        (flash_per_db, growth): (u32, f64),
        (chips, pages_per_chip): (u32, f64),
        min_free_blocks: u32,
        appends: &greedy_sim::Appends,
    ) -> RegionReplay {
        let pages = if self.pages_per_block < 1.0 { &[][..] } else { pages };
        let chips = chips.max(1);
        let region = greedy_sim::Region {
            chips,
            blocks_per_chip: (pages_per_chip / self.pages_per_block.max(1.0)) as u32,
            pages_per_block: self.pages_per_block as u32,
            static_pages: self.static_pages.round() as u64,
            flash_pages_per_db_page: flash_per_db,
            db_pages_per_page: growth,
            min_free_blocks,
        };
        RegionReplay::new(pages, region, appends)
    }
}

/// The baseline's single region (all tables, no IPA, every data chip) and, before
/// GC's steady state, its calibration: the measured migrations over the fill-and-update
/// model's.
struct Calibration {
    /// Migrations per modelled migration (1 in steady state: the model as it stands).
    factor: f64,
    /// Steady-state modelled migrations and flash programs of the baseline (the bases of
    /// `gc_reduction` and `flash_program_reduction`).
    steady_migrations: f64,
    steady_programs: f64,
    /// Erases per programmed flash page (a DB page's out-of-place write programs each
    /// of its flash pages), the baseline's measured ratio; `None` in steady state, where
    /// a region erases one block per block's worth of programmed pages (each erased
    /// block is programmed full before its next erase).
    erases_per_program: Option<f64>,
    work: RegionWork,
    /// Warm-up writes per measured write.
    warmup_per_measured: f64,
    /// Whether free pages fill before GC: not when the baseline ran GC that its free
    /// pages should have postponed (pages left stale by the load take room the model
    /// does not see), then every write is an update.
    fill: bool,
}

/// A region of a layout as GC's replay takes it: its tables (indexes into `tables`),
/// `growth` DB pages per page as the baseline holds them (the delta area's growth in an
/// IPA region, else 1), taking appends under `scheme` (none in a plain region), on
/// `chips` chips in `mode`.
struct RegionGc<'a> {
    members: &'a [usize],
    scheme: IpaScheme,
    growth: f64,
    chips: u32,
    mode: &'a str,
}

/// Each region's state and GC's migrations per out-of-place write over the measured
/// run, the layout's run replayed by [`aging::replay`] (from steady state: its own
/// aging; from a device not aged: long enough for GC to settle, the fill-and-calibrate
/// path of `predict` accounting for the free pages); and the aging windows replayed.
fn layout_gc(input: &Input, tables: &[Table], regions: &[RegionGc]) -> (Vec<RegionState>, aging::Outcome) {
    let (mut states, mut runs, mut valid) = (Vec::new(), Vec::new(), Vec::new());
    let parts = input.device.flash_pages_per_db_page();
    let flash_per_db = parts as f64;
    for r in regions {
        let objects: Vec<_> =
            r.members.iter().flat_map(|&i| tables[i].objects.iter().map(move |&o| (i, o, o.writes as f64))).collect();
        let pages = region_pages(&objects);
        let appends = if r.scheme.enabled() {
            greedy_sim::Appends {
                n: r.scheme.n as u32,
                records: objects.iter().map(|(_, o, _)| model::records_distribution(&evictions(o), r.scheme)).collect(),
                lsb_share: lsb_share(r.mode, input.device.cell),
            }
        } else {
            greedy_sim::Appends::default()
        };
        let db_pages = pages.len() as f64 * r.growth;
        let valid_pages = db_pages * flash_per_db;
        let unwritten = pages.iter().filter(|p| p.rate == 0.0).count() as f64 * r.growth * flash_per_db;
        let tails: f64 = objects.iter().map(|(_, o, _)| extent_tail(o) as f64).sum::<f64>() * flash_per_db;
        let state = RegionState::of(input, r.chips, r.mode, valid_pages, unwritten, tails);
        let chip = (r.chips, capacity(input, 1, r.mode));
        let shape = (parts, r.growth);
        let replay = state.replay(&pages, shape, chip, input.device.gc_background_free_blocks, &appends);
        runs.push(RegionRun { replay, measured: objects.iter().map(|(_, _, w)| w).sum() });
        states.push(state);
        valid.push(db_pages);
    }
    let b = &input.baseline;
    let before = match b.device_state {
        DeviceState::Steady => {
            let flash: f64 = regions.iter().map(|r| capacity(input, r.chips, r.mode)).sum();
            aging::Before::Steady {
                logical_pages: (flash * (1.0 - input.device.over_provisioning)).floor() / flash_per_db,
                host_writes: tables.iter().map(|t| t.writes as f64).sum(),
                warmup_per_measured: if b.measured_s > 0.0 { b.warmup_s / b.measured_s } else { 0.0 },
            }
        }
        DeviceState::Loaded | DeviceState::Filled => aging::Before::Settle { fills: SETTLE_FILLS },
    };
    (states, aging::replay(&mut runs, &valid, before))
}

/// Writes before the measured ones, in region fills, when the baseline was not aged to
/// steady state: enough for GC's rate to settle on the replay.
const SETTLE_FILLS: f64 = 20.0;

fn calibration(input: &Input, tables: &[Table]) -> Calibration {
    let flash_per_db = input.device.flash_pages_per_db_page() as f64;
    let all: Vec<usize> = (0..tables.len()).collect();
    let region =
        RegionGc { members: &all, scheme: IpaScheme::NONE, growth: 1.0, chips: input.device.data_chips, mode: "none" };
    let (states, outcome) = layout_gc(input, tables, &[region]);
    let (state, per_write) = (states[0], outcome.measured[0].migrations_per_write());
    let work = RegionWork {
        reads: tables.iter().map(|t| t.reads).sum::<u64>() as f64,
        out_of_place_writes: tables.iter().map(|t| t.writes).sum::<u64>() as f64,
        in_place_appends: 0.0,
        gc_page_migrations: input.baseline.gc_page_migrations as f64,
        gc_erases: input.baseline.gc_erases as f64,
    };
    let b = &input.baseline;
    let warmup_per_measured = if b.measured_s > 0.0 { b.warmup_s / b.measured_s } else { 0.0 };
    let writes = work.out_of_place_writes;
    let steady = (writes * per_write, writes * (flash_per_db + per_write));
    if b.device_state == DeviceState::Steady {
        return Calibration {
            factor: 1.0,
            steady_migrations: steady.0,
            steady_programs: steady.1,
            erases_per_program: None,
            work,
            warmup_per_measured,
            fill: false,
        };
    }
    let filled = gc_writes(state.free_pages, writes * warmup_per_measured, writes);
    let fill = filled > 0.0 || work.gc_page_migrations == 0.0;
    let modelled = if fill { filled } else { writes } * per_write;
    let programs = writes * flash_per_db + work.gc_page_migrations;
    Calibration {
        factor: if modelled > 0.0 { work.gc_page_migrations / modelled } else { 0.0 },
        steady_migrations: steady.0,
        steady_programs: steady.1,
        erases_per_program: Some(if programs > 0.0 { work.gc_erases / programs } else { 0.0 }),
        work,
        warmup_per_measured,
        fill,
    }
}

/// Mean read and write service of regions' work, and the busy time per transaction
/// (`per` transactions) of the busiest region's chips: its work over its chips, since a
/// region whose tables take most of the I/O on part of the chips is the bottleneck.
fn service(parts: &[(RegionWork, OpTimes, u32)], per: f64) -> Service {
    let reads: f64 = parts.iter().map(|(w, ..)| w.reads).sum();
    let writes: f64 = parts.iter().map(|(w, ..)| w.out_of_place_writes + w.in_place_appends).sum();
    let (first_read, first_write) = parts.first().map_or((0.0, 0.0), |(_, t, _)| (t.read_ns, t.program_ns));
    let read_ns =
        if reads > 0.0 { parts.iter().map(|(w, t, _)| w.reads * t.read_ns).sum::<f64>() / reads } else { first_read };
    let write_ns = if writes > 0.0 {
        parts.iter().map(|(w, t, _)| w.write_service_ns(t) * (w.out_of_place_writes + w.in_place_appends)).sum::<f64>()
            / writes
    } else {
        first_write
    };
    let busiest = parts.iter().map(|(w, t, chips)| w.busy_ns(t) / (*chips).max(1) as f64).fold(0.0, f64::max);
    Service { busy_ns: busiest / per.max(f64::MIN_POSITIVE), read_ns, write_ns }
}

/// A region of a layout: its name, mode, chips, and whether it is the IPA region.
struct Group {
    name: &'static str,
    mode: String,
    chips: u32,
    ipa: bool,
}

/// The layout's regions.
fn groups(input: &Input, tables: &[Table], layout: &Layout) -> Vec<Group> {
    let ipa_tables = layout.in_ipa.iter().filter(|&&b| b).count();
    let group = |name, mode: &str, chips, ipa| Group { name, mode: mode.to_string(), chips, ipa };
    if ipa_tables == 0 {
        vec![group("data", "none", input.device.data_chips, false)]
    } else if ipa_tables == tables.len() {
        vec![group("ipa", &layout.mode, input.device.data_chips, true)]
    } else {
        let plain_chips = input.device.data_chips.saturating_sub(layout.ipa_chips).max(1);
        vec![group("ipa", &layout.mode, layout.ipa_chips, true), group("plain", "none", plain_chips, false)]
    }
}

/// Pages `table` takes with a delta area of `area` bytes per page it takes without:
/// its objects' ([`space::growth`]), weighted by their pages.
pub fn table_growth(input: &Input, table: &Table, area: usize) -> f64 {
    let grown: f64 = table
        .objects
        .iter()
        .map(|o| o.pages as f64 * space::growth(o, input.device.page_bytes, area, input.baseline.heap_space))
        .sum();
    if table.pages == 0 {
        1.0
    } else {
        grown / table.pages as f64
    }
}

/// The growth of a region of the tables `members`, weighted by their pages.
fn mean_growth(tables: &[Table], members: &[usize], growth: &[f64]) -> f64 {
    let pages: f64 = members.iter().map(|&i| tables[i].pages as f64).sum();
    if pages == 0.0 {
        return 1.0;
    }
    members.iter().map(|&i| tables[i].pages as f64 * growth[i]).sum::<f64>() / pages
}

/// Rounds of the throughput ↔ counts iteration at most (it settles in a few dozen).
const ROUNDS: usize = 200;

/// The layout's prediction.
pub fn predict(input: &Input, tables: &[Table], layout: &Layout) -> Prediction {
    let parts = input.device.flash_pages_per_db_page();
    let flash_per_db = parts as f64;
    let area = layout.scheme.area_bytes();
    // Pages each table takes in the IPA region per page it takes in the baseline.
    let growth: Vec<f64> = tables.iter().map(|t| table_growth(input, t, area)).collect();
    let times = |mode: &str| {
        let record = if layout.scheme.n > 0 { area / layout.scheme.n as usize } else { 0 };
        let d = &input.device;
        OpTimes::of(&d.latencies, d.cell, mode, (d.flash_page_bytes, parts), record)
    };
    let base = calibration(input, tables);
    let baseline_service = service(&[(base.work, times("none"), input.device.data_chips)], 1.0);
    let groups = groups(input, tables, layout);
    // Counts over the measured time: the baseline's per transaction × the transactions
    // the layout runs in it (its throughput over the baseline's, from the time model,
    // which needs the counts: a damped fixed-point iteration).
    let (mut scale, mut regions, mut time) = (1.0, Vec::new(), PredictedTime::default());
    let (mut steady_migrations, mut steady_programs) = (0.0, 0.0);
    // Per region: its members, state and GC's migrations per write (no function of
    // the throughput).
    let members: Vec<Vec<usize>> =
        groups.iter().map(|g| (0..tables.len()).filter(|&i| layout.in_ipa[i] == g.ipa).collect()).collect();
    let gc_regions: Vec<RegionGc> = groups
        .iter()
        .zip(&members)
        .map(|(g, members)| RegionGc {
            members,
            scheme: if g.ipa { layout.scheme } else { IpaScheme::NONE },
            growth: if g.ipa { mean_growth(tables, members, &growth) } else { 1.0 },
            chips: g.chips,
            mode: &g.mode,
        })
        .collect();
    let (states, outcome) = layout_gc(input, tables, &gc_regions);
    let models: Vec<_> = members.iter().zip(states).zip(&outcome.measured).map(|((m, s), &d)| (m, s, d)).collect();
    let steady = input.baseline.device_state == DeviceState::Steady;
    for _ in 0..ROUNDS {
        let mut parts = Vec::new();
        (regions, steady_migrations, steady_programs) = (Vec::new(), 0.0, 0.0);
        for (g, (members, state, done)) in groups.iter().zip(&models) {
            let (state, per_write) = (*state, done.migrations_per_write());
            let writes: f64 = members.iter().map(|&i| tables[i].writes as f64).sum();
            let long_run: f64 = if g.ipa { members.iter().map(|&i| layout.appends[i]).sum() } else { 0.0 };
            // From steady state, the appends of the replay's measured writes (delta
            // areas as the aging left them); else the renewal model's long run.
            let appends = if steady && writes > 0.0 { writes - done.out_of_place_writes } else { long_run };
            let out_of_place = (writes - appends) * scale;
            steady_migrations += (writes - long_run) * per_write;
            steady_programs += (writes - long_run) * (flash_per_db + per_write);
            let free = if base.fill { state.free_pages } else { 0.0 };
            let updated = gc_writes(free, out_of_place * base.warmup_per_measured, out_of_place);
            let migrations = base.factor * updated * per_write;
            let work = RegionWork {
                reads: members.iter().map(|&i| tables[i].reads as f64).sum::<f64>() * scale,
                out_of_place_writes: out_of_place,
                in_place_appends: appends * scale,
                gc_page_migrations: migrations,
                gc_erases: (out_of_place * flash_per_db + migrations)
                    * base.erases_per_program.unwrap_or(state.erases_per_program()),
            };
            parts.push((work, times(&g.mode), g.chips));
            regions.push(RegionPrediction {
                name: g.name.to_string(),
                mode: g.mode.clone(),
                chips: g.chips,
                utilisation: state.utilisation(),
                written_utilisation: state.written_utilisation(),
                model_migrations_per_write: per_write,
                state,
                work,
            });
        }
        time = io_time::predict(&input.baseline.time, &baseline_service, &service(&parts, scale));
        let b = input.baseline.time.throughput_tps;
        let next = if b > 0.0 { time.throughput_tps / b } else { 1.0 };
        if (next - scale).abs() < 1e-6 * scale {
            break;
        }
        scale = (scale + next) / 2.0;
    }
    let sum = |f: fn(&RegionWork) -> f64| regions.iter().map(|r| f(&r.work)).sum::<f64>();
    let (out_of_place, appends) = (sum(|w| w.out_of_place_writes), sum(|w| w.in_place_appends));
    let (migrations, erases) = (sum(|w| w.gc_page_migrations), sum(|w| w.gc_erases));
    let host_writes = (out_of_place + appends).max(1.0);
    let gc_reduction = if base.steady_migrations > 0.0 {
        1.0 - steady_migrations / base.steady_migrations
    } else {
        1.0 - out_of_place / base.work.out_of_place_writes.max(1.0) / scale
    };
    let flash_program_reduction = 1.0 - steady_programs / base.steady_programs.max(f64::MIN_POSITIVE);
    let total_pages: u64 = tables.iter().map(|t| t.pages).sum();
    let ipa = (0..tables.len()).filter(|&i| layout.in_ipa[i]);
    let added_pages: f64 = ipa.clone().map(|i| tables[i].pages as f64 * (growth[i] - 1.0)).sum();
    // Over the loaded database, as `bench` measures it; the IPA tables' pages are the
    // baseline's at its end (a table the run grows counts that growth too).
    let loaded = input.baseline.loaded_pages;
    let database_pages = if loaded > 0.0 { loaded } else { total_pages.max(1) as f64 };
    let page_pct = area as f64 * 100.0 / input.device.page_bytes as f64;
    Prediction {
        ipa_share: appends / host_writes,
        out_of_place_writes: out_of_place,
        in_place_appends: appends,
        gc_page_migrations: migrations,
        gc_erases: erases,
        gc_migrations_per_host_write: migrations / host_writes,
        gc_erases_per_host_write: erases / host_writes,
        gc_reduction,
        flash_program_reduction,
        aging_windows: outcome.aging_windows,
        time,
        space_overhead_page_pct: if ipa.count() == 0 { 0.0 } else { page_pct },
        space_overhead_db_pct: added_pages * 100.0 / database_pages,
        regions,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests_support::input;

    fn layout(input: &Input, scheme: IpaScheme, in_ipa: Vec<bool>, ipa_chips: u32) -> Layout {
        let t = tables(input);
        Layout { scheme, mode: "slc".into(), appends: appends(input, &t, scheme, "slc"), in_ipa, ipa_chips }
    }

    #[test]
    fn free_pages_take_the_first_writes_without_gc() {
        assert_eq!(gc_writes(100.0, 30.0, 50.0), 0.0);
        assert_eq!(gc_writes(100.0, 30.0, 90.0), 20.0);
        assert_eq!(gc_writes(100.0, 130.0, 90.0), 90.0);
        assert_eq!(gc_writes(0.0, 0.0, 90.0), 90.0);
    }

    #[test]
    fn no_ipa_reproduces_the_baseline() {
        let i = input();
        let t = tables(&i);
        let p = predict(&i, &t, &layout(&i, IpaScheme::NONE, vec![false, false], 1));
        assert_eq!(p.ipa_share, 0.0);
        assert!((p.gc_page_migrations - i.baseline.gc_page_migrations as f64).abs() < 1e-6);
        assert!((p.gc_erases - i.baseline.gc_erases as f64).abs() < 1e-6);
        assert!((p.time.throughput_tps - i.baseline.time.throughput_tps).abs() < 1e-9);
        assert_eq!(p.gc_reduction, 0.0);
        assert_eq!(p.regions.len(), 1);
    }

    #[test]
    fn update_counts_are_a_sample_of_the_pages_rates() {
        let object = |counts: &[u64]| ObjectInput {
            pages: counts.len() as u64,
            page_numbers: (0..counts.len() as u32).collect(),
            updated_pages: (0..counts.len() as u32).collect(),
            page_updates: counts.to_vec(),
            ..Default::default()
        };
        let rates = |o: &ObjectInput| region_pages(&[(0, o, 80.0)]).iter().map(|p| p.rate).collect::<Vec<_>>();
        // Counts no more spread than Poisson noise (mean 1, variance 0.75): a uniformly
        // updated table seen briefly; every page gets the same rate, the unseen too.
        let uniform = object(&[0, 1, 0, 2, 1, 2, 1, 1]);
        assert_eq!(rates(&uniform), vec![10.0; 8]);
        // A hot set (mean 2.5, variance 18.75): the shape stays, and a page seen 0 times
        // keeps a small rate, α = 2.5² / (18.75 − 2.5) ≈ 0.38 updates' worth.
        let hot = rates(&object(&[10, 10, 0, 0, 0, 0, 0, 0]));
        let alpha = 6.25 / 16.25;
        assert!((hot[0] - 80.0 * (10.0 + alpha) / (20.0 + 8.0 * alpha)).abs() < 1e-9, "{hot:?}");
        assert!(hot[2] > 0.0 && hot[2] < hot[0] / 20.0, "{hot:?}");
        assert!((hot.iter().sum::<f64>() - 80.0).abs() < 1e-9);
        // An object never written has no rate; one written without a logged update is
        // written evenly.
        assert!(region_pages(&[(0, &uniform, 0.0)]).iter().all(|p| p.rate == 0.0));
        assert_eq!(rates(&object(&[0, 0, 0, 0])), vec![20.0; 4]);
    }

    #[test]
    fn steady_state_gc_is_the_mixed_model_of_the_filled_region_without_calibration() {
        let mut i = input();
        i.baseline.device_state = DeviceState::Steady;
        let none = |i: &Input| predict(i, &tables(i), &layout(i, IpaScheme::NONE, vec![false, false], 1));
        let p = none(&i);
        // 10 chips of 20 blocks of 50 pages: GC keeps 4 blocks a chip free (8,000 pages
        // circulate); the fill brings the valid pages to 90% of the pages outside 3
        // blocks a chip, 7,650: the 6,110 table pages and the fill's 1,540, static.
        // Of the tables' pages hot_pk's 10 are never written; the log shows 20 of hot's
        // and 600 of cold's pages updated, the others at a small rate (see
        // `update_counts_are_a_sample_of_the_pages_rates`).
        let r = &p.regions[0];
        let state = &r.state;
        assert_eq!((state.circulating_pages, state.valid_pages, state.static_pages), (8000.0, 7650.0, 1540.0));
        assert_eq!(state.unwritten_pages, 10.0);
        assert!((r.written_utilisation - 6110.0 / (8000.0 - 1540.0)).abs() < 1e-12);
        // The replay's migrations per write, uncalibrated: the unwritten pages share
        // blocks with the written ones, so GC moves them.
        let per_write = r.model_migrations_per_write;
        assert!(per_write > 0.0, "{r:?}");
        // Per out-of-place write (the counts follow the predicted throughput).
        assert!((p.gc_migrations_per_host_write - per_write).abs() < 1e-9, "{p:?}");
        assert!((p.gc_erases / p.out_of_place_writes - (1.0 + per_write) / 50.0).abs() < 1e-9);
        // The baseline's measured GC work enters only the time model's busy time.
        i.baseline.gc_page_migrations *= 7;
        i.baseline.gc_erases += 1;
        assert!((none(&i).gc_migrations_per_host_write - per_write).abs() < 1e-9);
    }

    #[test]
    fn the_device_state_sets_the_valid_and_free_pages_gc_starts_from() {
        let mut i = input();
        let state = |i: &Input| RegionState::of(i, 10, "none", 6110.0, 10.0, 0.0);
        // As loaded: the tables' pages; the rest of the 8,000 in circulation is free.
        assert_eq!((state(&i).valid_pages, state(&i).free_pages), (6110.0, 1890.0));
        // Filled: the fill's target, 7,650; 350 pages free before GC must run.
        i.baseline.device_state = DeviceState::Filled;
        assert_eq!((state(&i).valid_pages, state(&i).free_pages), (7650.0, 350.0));
        // Steady: GC runs from the first write.
        i.baseline.device_state = DeviceState::Steady;
        assert_eq!((state(&i).valid_pages, state(&i).free_pages), (7650.0, 0.0));
        // Tables past the fill's target keep their pages; pslc halves an MLC region.
        assert_eq!(RegionState::of(&i, 10, "none", 7900.0, 7900.0, 0.0).valid_pages, 7900.0);
        // The unused pages of the objects' last extents stay unwritten by the fill.
        i.baseline.device_state = DeviceState::Steady;
        assert_eq!(RegionState::of(&i, 10, "none", 6110.0, 10.0, 50.0).valid_pages, 7600.0);
        i.device.cell = CellType::Mlc;
        assert_eq!(RegionState::of(&i, 10, "pslc", 10.0, 10.0, 0.0).circulating_pages, 4000.0);
    }

    /// One table of `pages` DB pages of `page_bytes`, written `writes` times, evenly,
    /// each write changing one byte, on the hand-built device (10 chips of 20 blocks of
    /// 50 flash pages of 4 KiB) with 30% over-provisioning, from steady state.
    fn one_table(page_bytes: usize, pages: u64, writes: u64) -> Input {
        let mut i = input();
        let mut sizes = crate::model::Histogram::default();
        sizes[0] = writes;
        let table = ObjectInput {
            name: "t".into(),
            kind: "table".into(),
            table: "t".into(),
            pages,
            reads: writes,
            writes,
            write_sizes: sizes,
            ..Default::default()
        };
        i.objects = vec![table];
        i.device.page_bytes = page_bytes;
        i.device.over_provisioning = 0.3;
        i.baseline.device_state = DeviceState::Steady;
        i
    }

    #[test]
    fn a_db_page_of_two_flash_pages_is_written_and_migrated_as_two() {
        // The same flash pages written as often: 4,000 DB pages of 4 KiB written 40,000
        // times, and 2,000 of 8 KiB, two flash pages each, written 20,000 times.
        let (small, large) = (one_table(4096, 4_000, 40_000), one_table(8192, 2_000, 20_000));
        let none = |i: &Input| predict(i, &tables(i), &layout(i, IpaScheme::NONE, vec![false], 1));
        let (s, l) = (none(&small), none(&large));
        assert_eq!(s.regions[0].state.valid_pages, l.regions[0].state.valid_pages);
        // GC moves about as many flash pages for as many flash pages written: per DB
        // page written, twice as many.
        let per_write = |p: &Prediction| p.regions[0].model_migrations_per_write;
        assert!(per_write(&s) > 0.5, "{s:?}");
        assert!((per_write(&l) / per_write(&s) / 2.0 - 1.0).abs() < 0.1, "{} against {}", per_write(&l), per_write(&s));
        assert!((l.gc_migrations_per_host_write - per_write(&l)).abs() < 1e-9);
        // Each out-of-place write programs both flash pages, a block erased per 50
        // flash pages programmed.
        assert!((l.gc_erases / l.out_of_place_writes - (2.0 + per_write(&l)) / 50.0).abs() < 1e-9, "{l:?}");
        // Appends program the last flash page only: a write turned into an append saves
        // two flash pages' programs and their GC, so IPA saves more flash programs on
        // the 8 KiB pages than on the 4 KiB ones.
        let scheme = IpaScheme::new(2, 3, IpaScheme::DEFAULT_V).unwrap();
        let ipa = |i: &Input| predict(i, &tables(i), &layout(i, scheme, vec![true], 10));
        let (s_ipa, l_ipa) = (ipa(&small), ipa(&large));
        assert!((s_ipa.ipa_share - l_ipa.ipa_share).abs() < 0.05, "{s_ipa:?} {l_ipa:?}");
        assert!(l_ipa.flash_program_reduction > 0.0);
    }

    #[test]
    fn a_heap_takes_whole_rows_fewer_per_page_under_the_delta_area() {
        // 300-byte rows: 13 a 4 KiB page, 12 once [3×8]'s 183-byte area takes its end.
        // The database grows by 1/12 of the table's pages, not by 183 / 4,096 of them,
        // and the IPA region's GC replay holds that many more valid pages.
        let mut i = one_table(4096, 4_000, 40_000);
        i.objects[0].row_bytes = vec![(300, 52_000)];
        let scheme = IpaScheme::new(3, 8, IpaScheme::DEFAULT_V).unwrap();
        let p = predict(&i, &tables(&i), &layout(&i, scheme, vec![true], 10));
        assert!((p.space_overhead_db_pct - 100.0 / 12.0).abs() < 0.05, "{}", p.space_overhead_db_pct);
        let none = predict(&i, &tables(&i), &layout(&i, IpaScheme::NONE, vec![false], 10));
        let tables_valid = |p: &Prediction| p.regions[0].state.valid_pages - p.regions[0].state.static_pages;
        assert!((tables_valid(&p) / tables_valid(&none) - 13.0 / 12.0).abs() < 1e-3, "{p:?}");
    }

    #[test]
    fn appends_cut_gc_and_global_pays_space_where_appends_do_not() {
        let i = input();
        let t = tables(&i);
        let scheme = IpaScheme::new(2, 3, IpaScheme::DEFAULT_V).unwrap();
        let selective = predict(&i, &t, &layout(&i, scheme, vec![true, false], 1));
        let global = predict(&i, &t, &layout(&i, scheme, vec![true, true], 10));
        assert!(selective.gc_reduction > 0.0 && selective.gc_page_migrations < i.baseline.gc_page_migrations as f64);
        // The hot table's I/O on 1 of the 10 chips: that region is the bottleneck, so
        // the selective layout is predicted slower than global IPA on every chip.
        assert!(selective.time.throughput_tps < global.time.throughput_tps);
        assert!(global.time.throughput_tps > i.baseline.time.throughput_tps);
        // The cold table's large updates never append: global takes the same appends,
        // more space, and a fuller region (its delta areas on the cold pages too).
        let per_transaction = |p: &Prediction| p.in_place_appends / p.time.throughput_tps;
        assert!((per_transaction(&global) / per_transaction(&selective) - 1.0).abs() < 1e-4);
        assert!(global.space_overhead_db_pct > selective.space_overhead_db_pct);
        assert!(global.regions[0].utilisation > i.objects.iter().map(|o| o.pages).sum::<u64>() as f64 / 10_000.0);
        assert_eq!(selective.regions.len(), 2);
    }
}
