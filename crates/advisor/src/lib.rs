//! advisor — the IPA advisor (the IPA demo paper's log analyzer): per-object update
//! statistics from a baseline run, and a recommended IPA region layout with the
//! predicted effect.
//!
//! Pure analysis: the caller passes in what it read ([`Input`]): per object its pages
//! (catalog), the engine's counters over the baseline's measured run (reads, page
//! writes, writes by changed body bytes: eviction granularity) and, from the ARIES log,
//! its updates per page and their sizes (the log has no evictions, so skew is measured
//! on updates). [`analyze`] gives the statistics, [`recommend`] the layout, [`render`]
//! the table, DDL and SVG plots. Every figure names its source. The analysis does no
//! I/O and draws no random numbers; [`baseline`] reads a finished run's image and
//! result into an [`Input`].

#![forbid(unsafe_code)]

pub mod baseline;
pub mod model;
pub mod render;

use engine::store::update_size_bucket;
use engine::IpaScheme;
use model::Histogram;
use nand::geometry::CellType;
use serde::Serialize;

/// One table or index as the caller read it.
#[derive(Clone, Debug, Default)]
pub struct ObjectInput {
    pub name: String,
    /// "table" or "index".
    pub kind: String,
    /// The table it belongs to (itself for a table): placement is per table.
    pub table: String,
    /// Pages it holds (catalog).
    pub pages: u64,
    /// Engine counters over the baseline's measured run: pages read from flash,
    /// pages written (dirty evictions and cleaner writes), and the writes of pages
    /// already on flash by changed body bytes.
    pub reads: u64,
    pub writes: u64,
    pub write_sizes: Histogram,
    /// From the log: updates of each page it shows updated, in any order.
    pub page_updates: Vec<u64>,
    /// From the log: changed bytes of each update record.
    pub update_bytes: Vec<u64>,
}

/// Everything the advisor reads.
#[derive(Clone, Debug)]
pub struct Input {
    pub objects: Vec<ObjectInput>,
    /// DB page bytes and the flash page bytes (the delta area must fit half of one).
    pub page_bytes: usize,
    pub flash_page_bytes: usize,
    pub cell: CellType,
    /// Chips the data regions may use (all but the system and log regions').
    pub data_chips: u32,
}

/// Where a figure comes from.
pub const SOURCES: [(&str, &str); 6] = [
    ("pages", "catalog: the object's extents"),
    ("updates, update sizes, skew", "ARIES log: update records still in the log region (the run's tail)"),
    ("evictions, write-size histogram", "engine counters over the measured run (update_size_writes)"),
    ("read/write ratio", "engine counters: pages read from flash / pages written"),
    ("fits [NxM]", "write-size histogram, uniform within each power-of-two bucket"),
    ("predictions", "renewal model over the write-size histogram (docs/advisor.md)"),
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
    pub updates: u64,
    pub evictions: u64,
    /// Evictions of pages already on flash that changed something, by changed body
    /// bytes (bucket 0: 0–1 byte, bucket k: [2^k, 2^(k+1)), the last: 8 KiB or more).
    pub write_sizes: Histogram,
    /// Cumulative share of `write_sizes` up to each bucket.
    pub write_size_cdf: Vec<f64>,
    /// Net changed bytes per eviction, mean over the histogram's bucket midpoints.
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
    let weighted: f64 = o
        .write_sizes
        .iter()
        .enumerate()
        .map(|(k, &c)| c as f64 * model::bucket_bytes(k).map_or(8192.0, |(lo, hi)| (lo + hi) as f64 / 2.0))
        .sum();
    let mut update_sizes = Histogram::default();
    for &b in &o.update_bytes {
        update_sizes[update_size_bucket(b)] += 1;
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
    /// Among schemes predicted to save at least this share of the best one's
    /// out-of-place writes, the one with the least space overhead wins.
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

/// What a layout is predicted to do.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Prediction {
    /// Share of all data page writes that become in-place appends.
    pub ipa_share: f64,
    /// Reduction of GC page migrations and erases: the share of out-of-place writes
    /// (page invalidations) saved, which is `ipa_share` (docs/advisor.md).
    pub gc_reduction: f64,
    /// Delta area per page of the IPA region, in percent of the page.
    pub space_overhead_page_pct: f64,
    /// Delta area over the whole database, in percent of its bytes.
    pub space_overhead_db_pct: f64,
}

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
    pub tables: Vec<TableChoice>,
    /// The selective layout: the chosen tables in an IPA region.
    pub selective: Prediction,
    /// The same scheme on every object (global IPA), for comparison.
    pub global: Prediction,
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

/// Per table, the sum of its objects.
struct Table<'a> {
    name: &'a str,
    pages: u64,
    writes: u64,
    objects: Vec<&'a ObjectInput>,
}

fn tables(input: &Input) -> Vec<Table<'_>> {
    let mut out: Vec<Table> = Vec::new();
    for o in &input.objects {
        let i = match out.iter().position(|t| t.name == o.table) {
            Some(i) => i,
            None => {
                out.push(Table { name: &o.table, pages: 0, writes: 0, objects: Vec::new() });
                out.len() - 1
            }
        };
        out[i].pages += o.pages;
        out[i].writes += o.writes;
        out[i].objects.push(o);
    }
    out
}

/// Share of flash pages that take appends in `mode` on `cell` flash.
fn lsb_share(mode: &str, cell: CellType) -> f64 {
    match (mode, cell) {
        ("odd-mlc", CellType::Mlc) => 0.5,
        ("odd-mlc", CellType::Tlc) => 1.0 / 3.0,
        _ => 1.0,
    }
}

/// One candidate scheme evaluated on every table.
struct Evaluated {
    scheme: IpaScheme,
    appends: Vec<f64>,
    chosen: Vec<bool>,
    selective: Prediction,
    global: Prediction,
}

fn evaluate(input: &Input, tables: &[Table], scheme: IpaScheme, lsb: f64, policy: &Policy) -> Evaluated {
    let total_writes: u64 = tables.iter().map(|t| t.writes).sum();
    let total_pages: u64 = tables.iter().map(|t| t.pages).sum();
    let appends: Vec<f64> = tables
        .iter()
        .map(|t| t.objects.iter().map(|o| model::predicted_appends(&o.write_sizes, o.writes, scheme, lsb)).sum())
        .collect();
    let chosen: Vec<bool> = tables
        .iter()
        .zip(&appends)
        .map(|(t, &a)| {
            t.writes > 0
                && a / t.writes as f64 >= policy.min_table_append_share
                && t.writes as f64 >= policy.min_table_write_share * total_writes as f64
        })
        .collect();
    let page_pct = scheme.area_bytes() as f64 * 100.0 / input.page_bytes as f64;
    let predict = |take: &dyn Fn(usize) -> bool| {
        let saved: f64 = (0..tables.len()).filter(|&i| take(i)).map(|i| appends[i]).sum();
        let pages: u64 = (0..tables.len()).filter(|&i| take(i)).map(|i| tables[i].pages).sum();
        let share = saved / total_writes.max(1) as f64;
        Prediction {
            ipa_share: share,
            gc_reduction: share,
            space_overhead_page_pct: page_pct,
            space_overhead_db_pct: page_pct * pages as f64 / total_pages.max(1) as f64,
        }
    };
    let selective = predict(&|i| chosen[i]);
    let global = predict(&|_| true);
    Evaluated { scheme, appends, chosen, selective, global }
}

/// Recommends a layout: the scheme, the mode, the tables in the IPA region, with the
/// reasoning. `None` without any page writes to go on.
pub fn recommend(input: &Input, policy: &Policy) -> Option<Recommendation> {
    let tables = tables(input);
    let total_writes: u64 = tables.iter().map(|t| t.writes).sum();
    let total_pages: u64 = tables.iter().map(|t| t.pages).sum();
    if total_writes == 0 {
        return None;
    }
    let mut reasoning = Vec::new();
    let bits = match input.cell {
        CellType::Slc => 1,
        CellType::Mlc => 2,
        CellType::Tlc => 3,
    };
    // The mode: SLC takes appends on every page. On MLC/TLC, pSLC keeps that at the
    // cost of the region's capacity, odd-MLC keeps the capacity but appends only on
    // LSB pages; choose pSLC when the candidates for the region are a small part of
    // the database (the paper's demo region is pSLC).
    let candidates = |lsb: f64| {
        let mut all = Vec::new();
        for n in CANDIDATE_N {
            for m in CANDIDATE_M {
                let Ok(scheme) = IpaScheme::new(n, m, IpaScheme::DEFAULT_V) else { continue };
                if scheme.area_bytes() <= input.flash_page_bytes / 2 {
                    all.push(evaluate(input, &tables, scheme, lsb, policy));
                }
            }
        }
        all
    };
    let full = candidates(1.0);
    let global_mode = if bits == 1 { "slc" } else { "odd-mlc" };
    let best_full = full.iter().map(|e| e.selective.ipa_share).fold(0.0, f64::max);
    let (mode, evaluated) = if bits == 1 {
        reasoning.push("SLC flash: IPA_MODE=slc, every page takes appends".to_string());
        ("slc", full)
    } else {
        let hot_pages: u64 = full
            .iter()
            .filter(|e| e.selective.ipa_share >= best_full * policy.tolerance)
            .map(|e| tables.iter().zip(&e.chosen).filter(|(_, &c)| c).map(|(t, _)| t.pages).sum::<u64>())
            .max()
            .unwrap_or(0);
        let hot_share = hot_pages as f64 / total_pages.max(1) as f64;
        if hot_share <= 0.25 {
            reasoning.push(format!(
                "{}-bit cells: IPA_MODE=pslc — the tables that gain hold {:.0}% of the database's pages, so giving up \
                 {} of their region's capacity costs little, and every page then takes appends (odd-mlc would take \
                 them on LSB pages only)",
                bits,
                hot_share * 100.0,
                if bits == 2 { "half" } else { "two thirds" }
            ));
            ("pslc", full)
        } else {
            reasoning.push(format!(
                "{}-bit cells: IPA_MODE=odd-mlc — the tables that gain hold {:.0}% of the database's pages, too many \
                 to give up {} of their region's capacity to pslc; appends go to LSB pages only, which the model counts",
                bits,
                hot_share * 100.0,
                if bits == 2 { "half" } else { "two thirds" }
            ));
            ("odd-mlc", candidates(lsb_share("odd-mlc", input.cell)))
        }
    };
    let best = evaluated.iter().map(|e| e.selective.ipa_share).fold(0.0, f64::max);
    let pick = evaluated.iter().filter(|e| e.selective.ipa_share >= best * policy.tolerance).min_by(|a, b| {
        let key = |e: &Evaluated| (e.selective.space_overhead_db_pct, e.scheme.area_bytes(), e.scheme.n);
        key(a).partial_cmp(&key(b)).unwrap_or(std::cmp::Ordering::Equal)
    })?;
    let top = evaluated
        .iter()
        .max_by(|a, b| a.selective.ipa_share.total_cmp(&b.selective.ipa_share))
        .map(|e| (e.scheme, e.selective.clone()))?;
    reasoning.push(format!(
        "[{}] with V = {} (the paper's bound on metadata changes per eviction under OLTP, §6.1): predicted to turn \
         {:.1}% of the data page writes into appends at {:.2}% space overhead over the database; the best of {} \
         candidates, [{}], reaches {:.1}% at {:.2}% — within {:.0}% of it the least space wins",
        pick.scheme,
        pick.scheme.v,
        pick.selective.ipa_share * 100.0,
        pick.selective.space_overhead_db_pct,
        evaluated.len(),
        top.0,
        top.1.ipa_share * 100.0,
        top.1.space_overhead_db_pct,
        (1.0 - policy.tolerance) * 100.0
    ));
    let mut choices = Vec::new();
    for ((t, &appends), &chosen) in tables.iter().zip(&pick.appends).zip(&pick.chosen) {
        let share = if t.writes == 0 { 0.0 } else { appends / t.writes as f64 };
        let write_share = t.writes as f64 / total_writes as f64;
        let why = if chosen {
            format!(
                "IPA: {:.0}% of its writes predicted as appends, {:.1}% of all writes",
                share * 100.0,
                write_share * 100.0
            )
        } else if t.writes == 0 {
            "plain: never written in the run".to_string()
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
        };
        reasoning.push(format!("{}: {why}", t.name));
        choices.push(TableChoice {
            table: t.name.to_string(),
            pages: t.pages,
            writes: t.writes,
            predicted_appends: appends,
            in_ipa_region: chosen,
            why,
        });
    }
    // Global IPA under the chosen scheme, in its own mode.
    let global = if global_mode == mode {
        pick.global.clone()
    } else {
        evaluate(input, &tables, pick.scheme, lsb_share(global_mode, input.cell), policy).global
    };
    let ipa_pages: u64 = choices.iter().filter(|c| c.in_ipa_region).map(|c| c.pages).sum();
    let ipa_chips = ipa_chips(input.data_chips, ipa_pages, total_pages, mode, bits);
    reasoning.push(format!(
        "the IPA region gets {ipa_chips} of the {} data chips: the split that leaves the fuller region least \
         full, its tables' pages counted{}",
        input.data_chips,
        if mode == "pslc" { format!(", × {bits} for pslc's lost capacity") } else { String::new() }
    ));
    Some(Recommendation {
        scheme: pick.scheme.to_string(),
        n: pick.scheme.n,
        m: pick.scheme.m,
        v: pick.scheme.v,
        mode: mode.to_string(),
        global_mode: global_mode.to_string(),
        ipa_chips,
        tables: choices,
        selective: pick.selective.clone(),
        global,
        reasoning,
    })
}

/// Chips for the IPA region: the split of the data chips that leaves the fuller of
/// the two regions least full, the IPA region's pages counted × bits per cell in pslc
/// (its lost capacity); each region gets at least one chip.
fn ipa_chips(data_chips: u32, ipa_pages: u64, total_pages: u64, mode: &str, bits: u32) -> u32 {
    let factor = if mode == "pslc" { bits as f64 } else { 1.0 };
    let (ipa, plain) = (ipa_pages as f64 * factor, total_pages.saturating_sub(ipa_pages) as f64);
    if data_chips < 2 || plain == 0.0 {
        return data_chips.max(1);
    }
    let fullest = |k: u32| (ipa / k as f64).max(plain / (data_chips - k) as f64);
    (1..data_chips).min_by(|&a, &b| fullest(a).total_cmp(&fullest(b))).unwrap_or(1)
}

#[cfg(test)]
pub(crate) mod tests_support {
    use super::*;

    /// A hand-built baseline: a hot table with 1-byte updates, its index rarely
    /// written, and a cold table with large updates.
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
            }
        };
        // 100 pages; page 0 takes 50 updates, pages 1..=9 take 5, pages 10..=19 take 1.
        let mut updates = vec![50];
        updates.extend([5; 9]);
        updates.extend([1; 10]);
        Input {
            objects: vec![
                obj("hot", "table", "hot", 100, 2000, 1000, hot, updates),
                obj("hot_pk", "index", "hot", 10, 500, 0, Histogram::default(), vec![]),
                obj("cold", "table", "cold", 890, 100, 100, cold, vec![3, 1]),
            ],
            page_bytes: 4096,
            flash_page_bytes: 4096,
            cell: CellType::Slc,
            data_chips: 10,
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
        // Cold: 890 pages, hottest 1% = 9 pages hold both updated pages.
        assert_eq!(cold.skew.as_ref().unwrap().hottest_1_pct, 1.0);
    }

    #[test]
    fn the_hot_small_update_table_goes_to_the_ipa_region() {
        let r = recommend(&input(), &Policy::default()).unwrap();
        assert_eq!(r.ipa_tables(), vec!["hot"]);
        assert_eq!(r.mode, "slc");
        // 1-byte writes need one record each: N records give N/(N+1) appends. The
        // least space within 90% of the best (N = 4: 80%) is N = 3 with the smallest M.
        assert_eq!((r.n, r.m, r.v), (3, 1, 12));
        let expected = 900.0 * 0.75 / 1100.0;
        assert!((r.selective.ipa_share - expected).abs() < 1e-9, "{}", r.selective.ipa_share);
        assert_eq!(r.global.ipa_share, r.selective.ipa_share);
        let area = 3.0 * (1.0 + 3.0 + 36.0);
        assert!((r.selective.space_overhead_page_pct - area * 100.0 / 4096.0).abs() < 1e-9);
        assert!((r.selective.space_overhead_db_pct - area * 100.0 / 4096.0 * 110.0 / 1000.0).abs() < 1e-9);
        assert!(r.global.space_overhead_db_pct > r.selective.space_overhead_db_pct);
        // 110 of 1000 pages on 10 chips: 1 chip leaves it 110 per chip against 890/9;
        // 2 would leave the plain region 890/8.
        assert_eq!(r.ipa_chips, 1);
        assert_eq!(r.global_mode, "slc");
        assert!(r.reasoning.iter().any(|l| l.starts_with("cold: plain")));
    }

    #[test]
    fn mlc_picks_pslc_for_a_small_hot_set_and_odd_mlc_for_a_large_one() {
        let mut i = input();
        i.cell = CellType::Mlc;
        let r = recommend(&i, &Policy::default()).unwrap();
        assert_eq!(r.mode, "pslc");
        // pslc: 220 page-equivalents against 890: 2 chips (110 per chip, 890/8 = 111).
        assert_eq!(r.ipa_chips, 2);
        assert_eq!(r.global_mode, "odd-mlc");
        assert!(r.global.ipa_share < r.selective.ipa_share);
        i.objects[0].pages = 5000;
        let r = recommend(&i, &Policy::default()).unwrap();
        assert_eq!(r.mode, "odd-mlc");
        assert!(r.selective.ipa_share < 900.0 * 0.75 / 1100.0);
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
