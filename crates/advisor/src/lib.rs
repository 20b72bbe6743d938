//! advisor — the IPA advisor (the IPA demo paper's log analyzer): per-object update
//! statistics from a baseline run, and a recommended IPA region layout with the
//! predicted effect.
//!
//! Pure analysis: the caller passes in what it read ([`Input`]): per object its pages
//! (catalog), the engine's counters over the baseline's measured run (reads, page
//! writes, writes by changed body bytes: eviction granularity) and, from the ARIES log's
//! records of the measured run, its updates per page and their sizes (the log has no
//! evictions, so skew is measured on updates); the device (geometry, operation times)
//! and the baseline's measured GC work and time. [`analyze`] gives the statistics,
//! [`recommend`] the layout with its predicted effect ([`layout`]: appends by
//! [`model`], GC and appends from steady state by the replay of [`aging`] and
//! [`greedy_sim`], time by [`io_time`]), [`render`] the table, DDL and SVG
//! plots. Every figure names its source. The analysis does no I/O; its one replay
//! ([`greedy_sim`]) draws from a fixed seed, so the same input gives the same advice;
//! [`baseline`] reads a finished run's image and result into an [`Input`].

#![forbid(unsafe_code)]

pub mod aging;
pub mod baseline;
pub mod chips;
pub mod gc;
pub mod greedy_sim;
pub mod io_time;
pub mod layout;
pub mod log_file;
pub mod model;
pub mod render;
pub mod space;

use engine::IpaScheme;
use io_time::MeasuredTime;
use layout::{Layout, Prediction, Table};
use model::Histogram;
use nand::geometry::CellType;
use nand::Latencies;
use serde::{Deserialize, Serialize};

/// One table or index as the caller read it.
#[derive(Clone, Debug, Default)]
pub struct ObjectInput {
    pub name: String,
    /// "table" or "index".
    pub kind: String,
    /// The table it belongs to (itself for a table): placement is per table.
    pub table: String,
    /// Pages it holds (catalog), and its extents' pages (it grows by whole extents; 0
    /// where not known).
    pub pages: u64,
    pub extent_pages: u32,
    /// Engine counters over the baseline's measured run: pages read from flash,
    /// pages written (dirty evictions and cleaner writes), and the writes of pages
    /// already on flash by changed body bytes.
    pub reads: u64,
    pub writes: u64,
    pub write_sizes: Histogram,
    /// From the log's records of the measured run: updates of each page it shows
    /// updated, in any order, and those pages' numbers (in the same order; empty where
    /// not known).
    pub page_updates: Vec<u64>,
    pub updated_pages: Vec<u32>,
    /// Its pages' numbers in the order the object took them (catalog extents; empty
    /// where not known): the order the load wrote them.
    pub page_numbers: Vec<u32>,
    /// From the log's records of the measured run: changed bytes of each update.
    pub update_bytes: Vec<u64>,
    /// Update records the log still holds from before the measurement (the load and
    /// the warm-up): reported apart, used for nothing else.
    pub updates_before_measurement: u64,
    /// From the log's records of the measured run: pages allocated to it (its growth).
    pub allocated_pages: u64,
    /// From the log's records of the measured run: updates that add or remove a slot,
    /// and their header and slot-directory bytes (bucketed like `write_sizes`), which
    /// IPA's eviction rule counts against V.
    pub slot_updates: u64,
    pub slot_update_meta_sizes: Histogram,
    /// A table's rows by their stored bytes, (bytes, rows), from the image (empty for an
    /// index or where not known): how many rows a page holds with a delta area.
    pub row_bytes: Vec<(u64, u64)>,
}

/// Everything the advisor reads.
#[derive(Clone, Debug)]
pub struct Input {
    pub objects: Vec<ObjectInput>,
    pub device: DeviceFacts,
    pub baseline: Baseline,
}

/// The device as the advisor models it: page sizes, the data regions' flash and their
/// operation times, and how the baseline's data region keeps room for GC. One
/// description for the exported log's header ([`log_file::Header`], the serialized
/// field names are the header's keys) and the advisor's [`Input`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DeviceFacts {
    /// DB page bytes and the flash page bytes (the delta area must fit half of one).
    pub page_bytes: usize,
    pub flash_page_bytes: usize,
    pub cell: CellType,
    /// Chips the data regions may use (all but the system and log regions').
    pub data_chips: u32,
    /// Flash pages per chip (blocks × pages per block).
    pub pages_per_chip: u64,
    /// The device's array and transfer times.
    pub latencies: Latencies,
    /// Flash pages per block (0: not known, in logs exported without it; then GC's free
    /// blocks are not counted).
    #[serde(default)]
    pub pages_per_block: u32,
    /// The baseline data region's over-provisioning share and GC thresholds in free
    /// blocks per chip (`flash::RegionSpec`; logs exported without them read the
    /// region defaults).
    #[serde(default = "default_over_provisioning")]
    pub over_provisioning: f64,
    #[serde(default = "default_foreground_free_blocks")]
    pub gc_foreground_free_blocks: u32,
    #[serde(default = "default_background_free_blocks")]
    pub gc_background_free_blocks: u32,
}

impl DeviceFacts {
    /// Flash pages a DB page spans (at least 1): the engine writes a DB page out of
    /// place as that many flash pages and keeps its delta area in the last one
    /// (`engine::store::PageStore`).
    pub fn flash_pages_per_db_page(&self) -> u32 {
        (self.page_bytes / self.flash_page_bytes.max(1)).max(1) as u32
    }
}

fn default_over_provisioning() -> f64 {
    flash::RegionSpec::new("data", flash::IpaMode::None).over_provisioning
}

fn default_foreground_free_blocks() -> u32 {
    flash::GcConfig::default().foreground_free_blocks
}

fn default_background_free_blocks() -> u32 {
    flash::GcConfig::default().background_free_blocks
}

/// The device's state when the baseline's warm-up began (`driver.precondition`): what
/// GC has to work against in the measured interval.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DeviceState {
    /// As the load left it: the pages no table holds are erased, and the first writes
    /// take them without GC.
    #[default]
    Loaded,
    /// The free space written once (`--precondition fill`), not yet aged by the workload.
    Filled,
    /// Filled and aged by the workload until GC is in steady state (`--precondition
    /// steady`).
    Steady,
}

impl DeviceState {
    /// From the result's `config.driver.precondition` (none, fill, steady; absent: none).
    pub fn of_precondition(name: Option<&str>) -> Result<DeviceState, String> {
        match name {
            None | Some("none") => Ok(DeviceState::Loaded),
            Some("fill") => Ok(DeviceState::Filled),
            Some("steady") => Ok(DeviceState::Steady),
            Some(other) => Err(format!("precondition `{}` (expected none, fill or steady)", quote(other))),
        }
    }
}

/// What the baseline's measured run did besides the per-object counters.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Baseline {
    pub gc_page_migrations: u64,
    pub gc_erases: u64,
    pub time: MeasuredTime,
    /// Simulated seconds of the warm-up and of the measurement (its writes before the
    /// measured ones fill free flash pages too).
    pub warmup_s: f64,
    pub measured_s: f64,
    /// Page writes of the aging before the warm-up (`--precondition steady`, the
    /// result's `precondition.windows[].host_writes`), 0 without it.
    pub aging_writes: f64,
    /// The device's state before the warm-up.
    pub device_state: DeviceState,
    /// How heap pages take inserts (`config.engine.heap_space`): packed to the brim, or
    /// InnoDB's 1/16 left free.
    pub heap_space: engine::heap::HeapSpace,
    /// Pages of the loaded database (the result's `database_mib`, before the aging and
    /// the run grew it; 0 where not known): what the space overhead is a share of.
    pub loaded_pages: f64,
}

/// At most 80 characters of `value`, for a message quoting an offending value.
pub fn quote(value: &str) -> String {
    if value.chars().count() <= 80 {
        value.to_string()
    } else {
        format!("{}…", value.chars().take(80).collect::<String>())
    }
}

/// Where a figure comes from.
pub const SOURCES: [(&str, &str); 9] = [
    ("pages", "catalog: the object's extents"),
    (
        "updates, update sizes, skew",
        "ARIES log: update records of the measured run still in the log region (from the result's measured_from_lsn)",
    ),
    ("updates before", "ARIES log: update records from before the measurement (load, warm-up), not analysed"),
    ("evictions, write-size histogram", "engine counters over the measured run (update_size_writes)"),
    ("read/write ratio", "engine counters: pages read from flash / pages written"),
    ("fits [NxM]", "write-size histogram, uniform within each power-of-two bucket"),
    ("appends", "renewal model over the write-size histogram (docs/advisor.md)"),
    (
        "space overhead",
        "the image's rows by stored bytes, laid down on pages with and without the delta area (indexes: their body's \
         share)",
    ),
    (
        "GC, throughput, latency",
        "the run's writes replayed on each region's greedy GC (scaled to the baseline's GC unless it ran from steady \
         state) and the I/O-time model",
    ),
];

/// The skew of updates over an object's pages.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Skew {
    /// Share of the updates on the hottest 1%, 10% and 20% of the object's pages.
    pub hottest_1_pct: f64,
    pub hottest_10_pct: f64,
    pub hottest_20_pct: f64,
}

/// The candidate schemes whose fit share the report lists.
pub const FIT_SCHEMES: [(u8, u8); 6] = [(1, 4), (2, 3), (2, 4), (2, 8), (3, 4), (4, 8)];

/// An object's statistics.
#[derive(Clone, Debug, Serialize)]
pub struct ObjectStats {
    pub name: String,
    pub kind: String,
    pub table: String,
    pub pages: u64,
    /// Update records of the measured run.
    pub updates: u64,
    /// Update records from before the measurement (load, warm-up).
    pub updates_before_measurement: u64,
    pub evictions: u64,
    /// Evictions of pages already on flash that changed something, by changed body
    /// bytes (bucket 0: 0–1 byte, bucket k: [2^k, 2^(k+1)), the last: 8 KiB or more).
    pub write_sizes: Histogram,
    /// Cumulative share of `write_sizes` up to each bucket.
    pub write_size_cdf: Vec<f64>,
    /// Net changed bytes per eviction: the mean of the exact counts below 32 bytes
    /// (where recorded) and of the buckets' midpoints above.
    pub changed_bytes_per_eviction_mean: f64,
    /// Log update records by changed bytes, bucketed like `write_sizes`.
    pub update_sizes: Histogram,
    /// Share of evictions changing at most N×M body bytes, per `FIT_SCHEMES` ("2x3").
    pub fits: Vec<(String, f64)>,
    pub skew: Option<Skew>,
    /// Updates per page, hottest first (for the skew curve).
    #[serde(skip)]
    pub page_updates_sorted: Vec<u64>,
    pub reads: u64,
    /// Reads per write (∞ shows as null for objects never written).
    pub read_write_ratio: Option<f64>,
}

/// The statistics of every object.
pub fn analyze(input: &Input) -> Vec<ObjectStats> {
    input.objects.iter().map(stats).collect()
}

fn stats(o: &ObjectInput) -> ObjectStats {
    let all = model::total(&o.write_sizes);
    let mut cumulative = 0;
    let write_size_cdf = o
        .write_sizes
        .iter()
        .map(|&c| {
            cumulative += c;
            if all == 0 {
                0.0
            } else {
                cumulative as f64 / all as f64
            }
        })
        .collect();
    let weighted = model::bytes_sum(&o.write_sizes);
    let mut update_sizes = Histogram::default();
    for &b in &o.update_bytes {
        update_sizes.record(b);
    }
    let mut sorted = o.page_updates.clone();
    sorted.sort_unstable_by(|a, b| b.cmp(a));
    let updates: u64 = sorted.iter().sum();
    ObjectStats {
        name: o.name.clone(),
        kind: o.kind.clone(),
        table: o.table.clone(),
        pages: o.pages,
        updates,
        updates_before_measurement: o.updates_before_measurement,
        evictions: o.writes,
        write_sizes: o.write_sizes,
        write_size_cdf,
        changed_bytes_per_eviction_mean: if all == 0 { 0.0 } else { weighted / all as f64 },
        update_sizes,
        fits: FIT_SCHEMES
            .iter()
            .map(|&(n, m)| (format!("{n}x{m}"), model::share_at_most(&o.write_sizes, n as u64 * m as u64)))
            .collect(),
        skew: skew(&sorted, o.pages),
        page_updates_sorted: sorted,
        reads: o.reads,
        read_write_ratio: (o.writes > 0).then(|| o.reads as f64 / o.writes as f64),
    }
}

/// The share of updates on the hottest 1/10/20% of `pages` pages (at least one page
/// each); `sorted` holds the updated pages' counts, hottest first.
fn skew(sorted: &[u64], pages: u64) -> Option<Skew> {
    let all: u64 = sorted.iter().sum();
    let pages = pages.max(sorted.len() as u64);
    if all == 0 {
        return None;
    }
    let top = |share: f64| {
        let k = ((pages as f64 * share).ceil() as usize).max(1);
        sorted.iter().take(k).sum::<u64>() as f64 / all as f64
    };
    Some(Skew { hottest_1_pct: top(0.01), hottest_10_pct: top(0.10), hottest_20_pct: top(0.20) })
}

/// Thresholds of the recommendation.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Policy {
    /// A table goes to the IPA region if at least this share of its writes is
    /// predicted to become appends …
    pub min_table_append_share: f64,
    /// … and it takes at least this share of all writes.
    pub min_table_write_share: f64,
    /// Among layouts predicted to save at least this share of the best one's flash
    /// programs (host and GC, in steady state), the one with the least space overhead
    /// wins.
    pub tolerance: f64,
}

impl Default for Policy {
    fn default() -> Self {
        Policy { min_table_append_share: 0.25, min_table_write_share: 0.02, tolerance: 0.9 }
    }
}

/// Schemes the recommendation weighs (V is the paper's default, 12).
const CANDIDATE_N: [u8; 4] = [1, 2, 3, 4];
const CANDIDATE_M: [u8; 11] = [1, 2, 3, 4, 5, 6, 8, 10, 12, 16, 24];

/// Per table: writes and predicted appends under the chosen scheme.
#[derive(Clone, Debug, Serialize)]
pub struct TableChoice {
    pub table: String,
    pub pages: u64,
    pub writes: u64,
    pub predicted_appends: f64,
    pub in_ipa_region: bool,
    pub why: String,
}

/// One layout the recommendation weighed.
#[derive(Clone, Debug, Serialize)]
pub struct Candidate {
    pub scheme: String,
    /// "selective" (the tables that gain, in an IPA region) or "global" (every table).
    pub layout: String,
    pub mode: String,
    pub ipa_tables: usize,
    pub ipa_share: f64,
    pub gc_reduction: f64,
    pub flash_program_reduction: f64,
    pub space_overhead_db_pct: f64,
}

/// The predictions side by side: the baseline as the model reproduces it (its
/// measurement, by calibration), the advised layout, and global IPA under the
/// advised scheme.
#[derive(Clone, Debug, Serialize)]
pub struct Predicted {
    pub baseline: Prediction,
    pub advised: Prediction,
    pub global: Prediction,
}

/// The advisor's recommendation.
#[derive(Clone, Debug, Serialize)]
pub struct Recommendation {
    pub scheme: String,
    pub n: u8,
    pub m: u8,
    pub v: u8,
    /// slc, pslc or odd-mlc.
    pub mode: String,
    /// The mode global IPA runs in: odd-mlc on MLC/TLC, as pslc would take half or
    /// two thirds of the whole database's capacity.
    pub global_mode: String,
    /// Chips of the IPA region (the plain region takes the rest).
    pub ipa_chips: u32,
    /// The split's need and capacity per region, and whether it holds the growth.
    pub chip_split: chips::ChipSplit,
    pub tables: Vec<TableChoice>,
    pub predicted: Predicted,
    /// Every layout weighed: each candidate scheme, selective and global.
    pub candidates: Vec<Candidate>,
    pub reasoning: Vec<String>,
}

impl Recommendation {
    pub fn scheme(&self) -> IpaScheme {
        IpaScheme { n: self.n, m: self.m, v: self.v }
    }

    /// Tables in the IPA region.
    pub fn ipa_tables(&self) -> Vec<&str> {
        self.tables.iter().filter(|t| t.in_ipa_region).map(|t| t.table.as_str()).collect()
    }
}

/// A layout with its prediction.
struct Evaluated {
    layout: Layout,
    global: bool,
    prediction: Prediction,
    split: chips::ChipSplit,
}

impl Evaluated {
    /// Least space first, then the smaller delta area, then the smaller N, selective
    /// before global.
    fn cost(&self) -> (f64, usize, u8, bool) {
        (self.prediction.space_overhead_db_pct, self.layout.scheme.area_bytes(), self.layout.scheme.n, self.global)
    }

    fn candidate(&self) -> Candidate {
        Candidate {
            scheme: self.layout.scheme.to_string(),
            layout: if self.global { "global" } else { "selective" }.into(),
            mode: self.layout.mode.clone(),
            ipa_tables: self.layout.in_ipa.iter().filter(|&&b| b).count(),
            ipa_share: self.prediction.ipa_share,
            gc_reduction: self.prediction.gc_reduction,
            flash_program_reduction: self.prediction.flash_program_reduction,
            space_overhead_db_pct: self.prediction.space_overhead_db_pct,
        }
    }
}

/// The tables a selective layout takes: enough of their writes predicted as appends,
/// and enough of all writes.
fn chosen(tables: &[Table], appends: &[f64], policy: &Policy) -> Vec<bool> {
    let total_writes: u64 = tables.iter().map(|t| t.writes).sum();
    tables
        .iter()
        .zip(appends)
        .map(|(t, &a)| {
            t.writes > 0
                && a / t.writes as f64 >= policy.min_table_append_share
                && t.writes as f64 >= policy.min_table_write_share * total_writes as f64
        })
        .collect()
}

/// The candidate schemes: every N × M whose delta area fits half a flash page.
fn schemes(input: &Input) -> Vec<IpaScheme> {
    let mut out = Vec::new();
    for n in CANDIDATE_N {
        for m in CANDIDATE_M {
            let Ok(scheme) = IpaScheme::new(n, m, IpaScheme::DEFAULT_V) else { continue };
            if scheme.area_bytes() <= input.device.flash_page_bytes / 2 {
                out.push(scheme);
            }
        }
    }
    out
}

/// The selective layout of `scheme` in `mode`, its chips split by what each region
/// needs by the run's end ([`chips::split`]): first at the baseline's throughput, then
/// at the layout's predicted one.
fn selective(input: &Input, tables: &[Table], scheme: IpaScheme, mode: &str, policy: &Policy) -> Evaluated {
    let appends = layout::appends(input, tables, scheme, mode);
    let in_ipa = chosen(tables, &appends, policy);
    evaluate(input, tables, Layout { scheme, mode: mode.to_string(), in_ipa, appends, ipa_chips: 0 }, false)
}

/// Global IPA: `scheme` on every table, one region on every data chip.
fn global(input: &Input, tables: &[Table], scheme: IpaScheme, mode: &str) -> Evaluated {
    let appends = layout::appends(input, tables, scheme, mode);
    let in_ipa = vec![true; tables.len()];
    evaluate(input, tables, Layout { scheme, mode: mode.to_string(), in_ipa, appends, ipa_chips: 0 }, true)
}

/// `layout` with its chips split and its prediction.
fn evaluate(input: &Input, tables: &[Table], mut layout: Layout, global: bool) -> Evaluated {
    let split = |layout: &Layout, ratio: f64| {
        chips::split(input, tables, &layout.in_ipa, layout.scheme.area_bytes(), &layout.mode, ratio)
    };
    let first = split(&layout, 1.0);
    layout.ipa_chips = first.ipa_chips;
    let mut prediction = layout::predict(input, tables, &layout);
    let baseline_tps = input.baseline.time.throughput_tps;
    let ratio = if baseline_tps > 0.0 { prediction.time.throughput_tps / baseline_tps } else { 1.0 };
    let split = split(&layout, ratio);
    if split.ipa_chips != layout.ipa_chips {
        layout.ipa_chips = split.ipa_chips;
        prediction = layout::predict(input, tables, &layout);
    }
    Evaluated { layout, global, prediction, split }
}

/// Recommends a layout: the scheme, the mode, the tables in the IPA region, with the
/// predictions and the reasoning. `None` without any page writes to go on.
pub fn recommend(input: &Input, policy: &Policy) -> Option<Recommendation> {
    let tables = layout::tables(input);
    let total_writes: u64 = tables.iter().map(|t| t.writes).sum();
    let total_pages: u64 = tables.iter().map(|t| t.pages).sum();
    if total_writes == 0 {
        return None;
    }
    let mut reasoning = Vec::new();
    let bits = layout::bits(input.device.cell);
    let schemes = schemes(input);
    let global_mode = if bits == 1 { "slc" } else { "odd-mlc" };
    // The mode: SLC takes appends on every page. On MLC/TLC, pSLC keeps that at the
    // cost of the region's capacity, odd-MLC keeps the capacity but appends only on
    // LSB pages; choose pSLC when the tables that gain are a small part of the
    // database (the paper's demo region is pSLC).
    let mode = if bits == 1 {
        reasoning.push("SLC flash: IPA_MODE=slc, every page takes appends".to_string());
        "slc"
    } else {
        let hot_pages = schemes
            .iter()
            .map(|&s| {
                let in_ipa = chosen(&tables, &layout::appends(input, &tables, s, "pslc"), policy);
                tables.iter().zip(&in_ipa).filter(|(_, &c)| c).map(|(t, _)| t.pages).sum::<u64>()
            })
            .max()
            .unwrap_or(0);
        let hot_share = hot_pages as f64 / total_pages.max(1) as f64;
        let lost = if bits == 2 { "half" } else { "two thirds" };
        if hot_share <= 0.25 {
            reasoning.push(format!(
                "{bits}-bit cells: IPA_MODE=pslc — the tables that gain hold {:.0}% of the database's pages, so giving \
                 up {lost} of their region's capacity costs little, and every page then takes appends (odd-mlc would \
                 take them on LSB pages only)",
                hot_share * 100.0
            ));
            "pslc"
        } else {
            reasoning.push(format!(
                "{bits}-bit cells: IPA_MODE=odd-mlc — the tables that gain hold {:.0}% of the database's pages, too \
                 many to give up {lost} of their region's capacity to pslc; appends go to LSB pages only, which the \
                 model counts",
                hot_share * 100.0
            ));
            "odd-mlc"
        }
    };
    let mut evaluated = Vec::new();
    for &s in &schemes {
        evaluated.push(selective(input, &tables, s, mode, policy));
        evaluated.push(global(input, &tables, s, global_mode));
    }
    // Layouts whose regions hold their growth, if any does.
    if evaluated.iter().any(|e| e.split.fits) {
        evaluated.retain(|e| e.split.fits);
    }
    let benefit = |e: &Evaluated| e.prediction.flash_program_reduction;
    let best = evaluated.iter().map(benefit).fold(0.0, f64::max);
    let pick = evaluated
        .iter()
        .filter(|e| benefit(e) >= best * policy.tolerance)
        .min_by(|a, b| a.cost().partial_cmp(&b.cost()).unwrap_or(std::cmp::Ordering::Equal))?;
    let top = evaluated.iter().max_by(|a, b| benefit(a).total_cmp(&benefit(b)))?;
    let scheme = pick.layout.scheme;
    let p = &pick.prediction;
    reasoning.push(format!(
        "[{scheme}] with V = {} (the paper's bound on metadata changes per eviction under OLTP, §6.1), {}: \
         predicted to turn {:.1}% of the data page writes into appends and to save {:.1}% of the flash programs \
         (host and GC, steady state; {:.1}% of the GC migrations) at {:.2}% space overhead over the database; the \
         best of the {} layouts weighed, {} [{}], saves {:.1}% at {:.2}% — within {:.0}% of it the least space wins",
        scheme.v,
        if pick.global { "on every table (global)" } else { "on the tables that gain (selective)" },
        p.ipa_share * 100.0,
        p.flash_program_reduction * 100.0,
        p.gc_reduction * 100.0,
        p.space_overhead_db_pct,
        evaluated.len(),
        if top.global { "global" } else { "selective" },
        top.layout.scheme,
        top.prediction.flash_program_reduction * 100.0,
        top.prediction.space_overhead_db_pct,
        (1.0 - policy.tolerance) * 100.0
    ));
    let global_same = global(input, &tables, scheme, global_mode);
    reasoning.push(space_against_global(pick, &global_same, &evaluated));
    let mut choices = Vec::new();
    for ((t, &appends), &in_ipa) in tables.iter().zip(&pick.layout.appends).zip(&pick.layout.in_ipa) {
        let why = table_reason(t, appends, in_ipa, pick.global, total_writes, policy);
        reasoning.push(format!("{}: {why}", t.name));
        choices.push(TableChoice {
            table: t.name.to_string(),
            pages: t.pages,
            writes: t.writes,
            predicted_appends: appends,
            in_ipa_region: in_ipa,
            why,
        });
    }
    let ipa_chips = pick.layout.ipa_chips;
    let split = pick.split;
    if !pick.global && choices.iter().any(|c| c.in_ipa_region) {
        reasoning.push(format!(
            "the IPA region gets {ipa_chips} of the {} data chips: the split that leaves the fuller region least \
             full by the run's end, its tables' pages and their growth counted (the pages allocated per measured \
             second over the warm-up and measurement, at the predicted throughput; delta areas{}): the IPA region \
             needs {:.0} flash pages of its {:.0}, the plain region {:.0} of its {:.0}",
            input.device.data_chips,
            if pick.layout.mode == "pslc" { format!(", × {bits} for pslc's lost capacity") } else { String::new() },
            split.ipa_needed_pages,
            split.ipa_capacity_pages,
            split.plain_needed_pages,
            split.plain_capacity_pages
        ));
    }
    if let Some(warning) = split.warning(input.device.data_chips) {
        reasoning.push(warning);
    }
    reasoning.push(gc_reason(input, p));
    let no_ipa = Layout {
        scheme: IpaScheme::NONE,
        mode: "none".into(),
        in_ipa: vec![false; tables.len()],
        appends: vec![0.0; tables.len()],
        ipa_chips: input.device.data_chips,
    };
    Some(Recommendation {
        scheme: scheme.to_string(),
        n: scheme.n,
        m: scheme.m,
        v: scheme.v,
        mode: pick.layout.mode.clone(),
        global_mode: global_mode.to_string(),
        ipa_chips,
        chip_split: split,
        tables: choices,
        predicted: Predicted {
            baseline: layout::predict(input, &tables, &no_ipa),
            advised: pick.prediction.clone(),
            global: global_same.prediction,
        },
        candidates: evaluated.iter().map(Evaluated::candidate).collect(),
        reasoning,
    })
}

/// Why the advised layout costs no more space than global IPA for its benefit.
fn space_against_global(pick: &Evaluated, global_same: &Evaluated, evaluated: &[Evaluated]) -> String {
    let (p, g) = (&pick.prediction, &global_same.prediction);
    let cheaper_global = evaluated.iter().filter(|e| e.global).find(|e| {
        e.prediction.flash_program_reduction >= p.flash_program_reduction
            && e.prediction.space_overhead_db_pct < p.space_overhead_db_pct
    });
    if let Some(e) = cheaper_global {
        // The least-space rule keeps this from happening; said plainly if it does.
        return format!(
            "global [{}] would save {:.1}% of the flash programs at {:.2}% space, less space than the advised \
             layout's {:.2}% for as much: the tolerance rule picked the advised layout nonetheless",
            e.layout.scheme,
            e.prediction.flash_program_reduction * 100.0,
            e.prediction.space_overhead_db_pct,
            p.space_overhead_db_pct
        );
    }
    if pick.global {
        return format!(
            "global IPA wins: no selective layout saves within the tolerance of it for less space ({:.2}% space \
             for {:.1}% fewer flash programs; a split gives each region fewer chips, so a fuller one)",
            p.space_overhead_db_pct,
            p.flash_program_reduction * 100.0
        );
    }
    format!(
        "global [{}] (every table) is predicted to save {:.1}% of the flash programs at {:.2}% space, the advised \
         layout {:.1}% at {:.2}%: no global layout saves as much for less space — the tables left out take no \
         appends worth their delta area",
        global_same.layout.scheme,
        g.flash_program_reduction * 100.0,
        g.space_overhead_db_pct,
        p.flash_program_reduction * 100.0,
        p.space_overhead_db_pct
    )
}

/// Why a table is where the layout puts it.
fn table_reason(t: &Table, appends: f64, in_ipa: bool, global: bool, total_writes: u64, policy: &Policy) -> String {
    let share = if t.writes == 0 { 0.0 } else { appends / t.writes as f64 };
    let write_share = t.writes as f64 / total_writes.max(1) as f64;
    if in_ipa && global {
        format!(
            "IPA (global layout): {:.0}% of its writes predicted as appends, {:.1}% of all writes",
            share * 100.0,
            write_share * 100.0
        )
    } else if in_ipa {
        format!(
            "IPA: {:.0}% of its writes predicted as appends, {:.1}% of all writes",
            share * 100.0,
            write_share * 100.0
        )
    } else if t.writes == 0 {
        "plain: never written in the measured run".to_string()
    } else if share < policy.min_table_append_share {
        format!(
            "plain: only {:.0}% of its writes would be appends (updates too large or pages new), below {:.0}%",
            share * 100.0,
            policy.min_table_append_share * 100.0
        )
    } else {
        format!(
            "plain: {:.1}% of all writes, below {:.0}% — the delta area would cost space for little GC saving",
            write_share * 100.0,
            policy.min_table_write_share * 100.0
        )
    }
}

/// The GC and time prediction in words, with the regions' utilisation.
fn gc_reason(input: &Input, p: &Prediction) -> String {
    let regions: Vec<String> = p
        .regions
        .iter()
        .map(|r| {
            format!(
                "{} ({}, {} chips) {:.0}% full, its tables' pages {:.0}% of the room the fill leaves them, {:.0} of \
                 them unwritten, {:.3} migrations per write",
                r.name,
                r.mode,
                r.chips,
                r.utilisation * 100.0,
                r.written_utilisation * 100.0,
                r.state.unwritten_pages,
                r.model_migrations_per_write
            )
        })
        .collect();
    let calibration = if input.baseline.device_state == DeviceState::Steady {
        format!("from steady state after {} aging windows of its own, as the model stands", p.aging_windows)
    } else if input.baseline.gc_page_migrations == 0 {
        "the baseline ran no GC in its measured time, so none is predicted".to_string()
    } else {
        format!("scaled to the baseline's {} measured migrations", input.baseline.gc_page_migrations)
    };
    format!(
        "GC: the run's writes replayed on each region's greedy GC — {} — {calibration}: {:.0} migrations, {:.0} erases; time: {:.1} tps \
         predicted against the baseline's {:.1}",
        regions.join("; "),
        p.gc_page_migrations,
        p.gc_erases,
        p.time.throughput_tps,
        input.baseline.time.throughput_tps
    )
}

#[cfg(test)]
pub(crate) mod tests_support {
    use super::*;

    /// A hand-built baseline: a hot table with 1-byte updates, its index never
    /// written, and a large table with large updates on half its pages, on 10 SLC chips
    /// of 1,000 pages; the baseline ran GC.
    pub fn input() -> Input {
        let mut hot = Histogram::default();
        hot[0] = 900; // every write changes 0–1 byte
        let mut cold = Histogram::default();
        cold[10] = 100; // 1–2 KiB changed per write
        let obj = |name: &str, kind: &str, table: &str, pages, reads, writes, write_sizes, page_updates: Vec<u64>| {
            ObjectInput {
                name: name.into(),
                kind: kind.into(),
                table: table.into(),
                pages,
                reads,
                writes,
                write_sizes,
                update_bytes: vec![4; page_updates.iter().sum::<u64>() as usize],
                page_updates,
                updates_before_measurement: 7,
                ..Default::default()
            }
        };
        // 100 pages; page 0 takes 50 updates, pages 1..=9 take 5, pages 10..=19 take 1.
        let mut updates = vec![50];
        updates.extend([5; 9]);
        updates.extend([1; 10]);
        // 600 of cold's 6,000 pages updated, 5 times each: a hot set, more spread than
        // the Poisson noise of a uniformly updated table.
        let cold_updates = vec![5; 600];
        Input {
            objects: vec![
                obj("hot", "table", "hot", 100, 2000, 1000, hot, updates),
                obj("hot_pk", "index", "hot", 10, 500, 0, Histogram::default(), vec![]),
                obj("cold", "table", "cold", 6000, 100, 100, cold, cold_updates),
            ],
            device: DeviceFacts {
                page_bytes: 4096,
                flash_page_bytes: 4096,
                cell: CellType::Slc,
                data_chips: 10,
                pages_per_chip: 1000,
                latencies: Latencies::slc_typical(),
                pages_per_block: 50,
                over_provisioning: 0.1,
                gc_foreground_free_blocks: 2,
                gc_background_free_blocks: 4,
            },
            baseline: Baseline {
                gc_page_migrations: 500,
                gc_erases: 30,
                time: MeasuredTime {
                    throughput_tps: 100.0,
                    transaction_ms: 10.0,
                    cpu_ms: 4.0,
                    commit_ms: 1.0,
                    read_latency_ms: 0.2,
                    write_latency_ms: 0.5,
                    measured_s: 10.0,
                },
                warmup_s: 1.0,
                measured_s: 10.0,
                aging_writes: 0.0,
                device_state: DeviceState::Loaded,
                heap_space: Default::default(),
                loaded_pages: 0.0,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::tests_support::input;
    use super::*;

    #[test]
    fn statistics_have_the_known_answers() {
        let s = analyze(&input());
        let hot = &s[0];
        assert_eq!((hot.pages, hot.updates, hot.evictions, hot.reads), (100, 105, 1000, 2000));
        assert_eq!(hot.updates_before_measurement, 7);
        assert_eq!(hot.read_write_ratio, Some(2.0));
        assert_eq!(hot.write_size_cdf[0], 1.0);
        assert_eq!(hot.changed_bytes_per_eviction_mean, 1.0);
        // Hottest 1% = 1 page: 50 of 105; 10% = 10 pages: 95; 20%: all 105.
        let skew = hot.skew.as_ref().unwrap();
        assert!((skew.hottest_1_pct - 50.0 / 105.0).abs() < 1e-12);
        assert!((skew.hottest_10_pct - 95.0 / 105.0).abs() < 1e-12);
        assert_eq!(skew.hottest_20_pct, 1.0);
        assert_eq!(hot.update_sizes[2], 105);
        assert!(hot.fits.iter().all(|(_, share)| *share == 1.0));
        assert_eq!(s[1].skew, None);
        assert_eq!(s[1].read_write_ratio, None);
        let cold = &s[2];
        assert_eq!(cold.write_size_cdf[9], 0.0);
        assert_eq!(cold.write_size_cdf[10], 1.0);
        assert!(cold.fits.iter().all(|(_, share)| *share == 0.0));
        // Cold: 6000 pages, hottest 1% = 60 pages hold 300 of the 3,000 updates.
        assert!((cold.skew.as_ref().unwrap().hottest_1_pct - 0.1).abs() < 1e-12);
    }

    #[test]
    fn the_hot_small_update_table_goes_to_the_ipa_region() {
        let r = recommend(&input(), &Policy::default()).unwrap();
        assert_eq!(r.ipa_tables(), vec!["hot"]);
        assert_eq!(r.mode, "slc");
        let p = &r.predicted.advised;
        // 1-byte writes need one record each: N records give N/(N+1) appends, per
        // transaction of the baseline's 100 tps; the counts are over the measured time.
        let (n, transactions) = (r.n as f64, p.time.throughput_tps / 100.0);
        let appends = p.in_place_appends / transactions;
        assert!((appends / (900.0 * n / (n + 1.0)) - 1.0).abs() < 1e-4, "{appends}");
        assert!((p.ipa_share - 900.0 * n / (n + 1.0) / 1100.0).abs() < 1e-9);
        let area = r.scheme().area_bytes() as f64;
        assert!((p.space_overhead_page_pct - area * 100.0 / 4096.0).abs() < 1e-9);
        // hot's 110 pages, rows not known, grow as the body less the header shrinks.
        let grown = 110.0 * (4064.0 / (4064.0 - area) - 1.0);
        assert!((p.space_overhead_db_pct - grown * 100.0 / 6110.0).abs() < 1e-9);
        assert!(r.predicted.global.space_overhead_db_pct > p.space_overhead_db_pct);
        // The GC prediction is not the IPA share: it follows the regions' utilisation.
        assert!(p.gc_reduction > 0.0 && (p.gc_reduction - p.ipa_share).abs() > 0.01, "{p:?}");
        assert_ne!(p.time.throughput_tps, input().baseline.time.throughput_tps);
        // 110 of 6110 pages on 10 chips: 1 chip for the IPA region.
        assert_eq!(r.ipa_chips, 1);
        assert_eq!(r.global_mode, "slc");
        assert!(r.reasoning.iter().any(|l| l.starts_with("cold: plain")));
        assert!(r.reasoning.iter().any(|l| l.starts_with("GC: the run's writes replayed on each region's greedy GC")));
        assert_eq!(r.candidates.len(), 2 * schemes(&input()).len());
    }

    #[test]
    fn the_advised_layout_never_costs_more_space_than_a_global_one_saving_as_much() {
        for cold_bytes_bucket in [0, 3, 10] {
            let mut i = input();
            i.objects[2].write_sizes = Histogram::default();
            i.objects[2].write_sizes[cold_bytes_bucket] = 100;
            let r = recommend(&i, &Policy::default()).unwrap();
            let p = &r.predicted.advised;
            for c in r.candidates.iter().filter(|c| c.layout == "global") {
                assert!(
                    c.flash_program_reduction < p.flash_program_reduction
                        || c.space_overhead_db_pct >= p.space_overhead_db_pct,
                    "bucket {cold_bytes_bucket}: {c:?} against {p:?}"
                );
            }
        }
    }

    #[test]
    fn mlc_picks_pslc_for_a_small_hot_set_and_odd_mlc_for_a_large_one() {
        let mut i = input();
        i.device.cell = CellType::Mlc;
        i.device.latencies = Latencies::mlc_typical();
        let r = recommend(&i, &Policy::default()).unwrap();
        assert_eq!(r.mode, "pslc");
        assert_eq!(r.global_mode, "odd-mlc");
        assert!(r.predicted.global.ipa_share < r.predicted.advised.ipa_share);
        i.objects[0].pages = 3_000;
        let r = recommend(&i, &Policy::default()).unwrap();
        assert_eq!(r.mode, "odd-mlc");
    }

    #[test]
    fn the_chip_split_holds_each_regions_growth_over_the_run() {
        // hot in the IPA region, cold in the plain one. As loaded, hot's 110 pages take
        // one chip (900 pages: 1,000 less 10% over-provisioning) beside cold's 6,000 on
        // nine. Allocating 2,000 pages in the 10 measured seconds, hot needs 2,200 more
        // by the end of a run as long as the warm-up and measurement: three chips.
        let mut i = input();
        let scheme = IpaScheme::new(2, 3, IpaScheme::DEFAULT_V).unwrap();
        let split = |i: &Input| chips::split(i, &layout::tables(i), &[true, false], scheme.area_bytes(), "slc", 1.0);
        assert_eq!(split(&i).ipa_chips, 1);
        i.objects[0].allocated_pages = 2_000;
        let s = split(&i);
        // An object whose rows are not known grows as its body less the header shrinks.
        let growth = 4064.0 / (4064 - scheme.area_bytes()) as f64;
        // hot's 100 pages and 2,200 new, hot_pk's 10, each grown by the delta area and
        // rounded up to whole extents (of 1 page, the input knowing none).
        let needed = (2_300.0 * growth).ceil() + (10.0 * growth).ceil();
        assert_eq!(s.ipa_needed_pages, needed, "{s:?}");
        assert_eq!((s.ipa_chips, s.ipa_capacity_pages, s.plain_capacity_pages), (3, 2_700.0, 6_300.0));
        assert!(s.fits && s.plain_needed_pages == 6_000.0);
        // The advised layout holds its growth, and says how.
        let r = recommend(&i, &Policy::default()).unwrap();
        assert!(r.chip_split.fits, "{:?}", r.chip_split);
        assert!(!r.reasoning.iter().any(|l| l.starts_with("WARNING")));
    }

    #[test]
    fn a_layout_no_split_can_hold_is_advised_with_a_warning() {
        // hot grows past the whole device's 9,000 pages: no layout fits.
        let mut i = input();
        i.objects[0].allocated_pages = 100_000;
        let r = recommend(&i, &Policy::default()).unwrap();
        assert!(!r.chip_split.fits);
        let warning = r.reasoning.iter().find(|l| l.starts_with("WARNING: no split of the 10 data chips")).unwrap();
        assert!(warning.contains("would run out of extents"), "{warning}");
    }

    #[test]
    fn nothing_written_gives_no_recommendation() {
        let mut i = input();
        for o in &mut i.objects {
            o.writes = 0;
        }
        assert!(recommend(&i, &Policy::default()).is_none());
    }
}
