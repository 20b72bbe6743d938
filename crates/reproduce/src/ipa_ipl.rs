//! The IPA paper's Table 2 (SIGMOD'17 §8.3): IPA (\[2x3\] for TPC-C, \[2x4\] for TPC-B
//! and TATP, [`table2_scheme`]) against In-Page Logging on TPC-B, TPC-C and TATP, by
//! appendix B's I/O write and read amplification and erases.
//!
//! §8.3's configuration: "(i) logical DB page size – 8KB; (ii) SLC Flash with 64 2KB
//! physical pages per erase unit and 512B partial writes; (iii) the in-memory log sector
//! per logical DB page is equal to the size of a partial write (512B); and (iv) the size
//! of log region per erase unit is 8KB". Both schemes run on the same device, seed and
//! buffer for the same simulated time; the device and databases: the emulator preset
//! with 2 KiB pages, 64 per block, and 32, 256 and 160 blocks per chip for TPC-B, TPC-C and TATP.
//!
//! Appendix B's formulas, in 2 KiB flash-page I/Os (a 512 B partial program counts as
//! one), a DB page being P = 4 flash pages, over the data regions only (not the WAL's
//! `log` region nor `system`): IPL WA = (merges·D·P + imlog_full + evictions) /
//! (evictions·P), RA = (fetches·(P + L) + merges·64) / (fetches·P), erases = merges,
//! with D DB pages and L log pages per unit; IPA WA = (appends + out-of-place·P + GC
//! migrations) / (evictions·P), RA = (fetches·P + GC migrations) / (fetches·P), erases =
//! GC erases.
//!
//! IPL logs a record per update of a page (§2.1: "All updates are logged per page and
//! placed in in-memory log sectors"), so a page updated many times while buffered
//! fills sectors before its eviction (appendix B's `imlog full`); the ablation
//! ([`TABLE2_VARIANTS`]) logs only the net change at the write instead.

use crate::experiment::{Ours, Results, RunSpec, Scale, Variant};
use crate::input::RunInput;
use crate::run_length;
use serde_json::Value;
use workloads::config::{IplStorageConfig, StorageConfig};
use workloads::ExperimentConfig;

/// §8.3 (ii): SLC flash pages of 2 KB, 64 per erase unit.
const FLASH_PAGE_BYTES: u32 = 2048;
const PAGES_PER_UNIT: u32 = 64;
/// §8.3 (i): 8 KB DB pages.
const DB_PAGE_BYTES: usize = 8192;
/// Flash pages per DB page (the formulas' P).
const P: f64 = (DB_PAGE_BYTES / FLASH_PAGE_BYTES as usize) as f64;
/// §8.3 (iii) and (iv): 512 B log sectors, an 8 KB log region per unit.
const SECTOR_BYTES: u32 = 512;
const LOG_REGION_BYTES: u32 = 8192;

/// (column name, workload, size parameter, size, blocks per chip) at `scale`: the
/// databases, each filling about a third to a half of the data regions; at full scale
/// TPC-B and TPC-C are 32 and 10 times larger on as many times the blocks, so that
/// their runs last a minute or more ([`run_length`]).
fn workloads(scale: Scale) -> [(&'static str, &'static str, &'static str, u32, u32); 3] {
    let (tpcb, tpcc) = if scale == Scale::Full { (32, 10) } else { (1, 1) };
    [
        ("TPC-B", "tpcb", "scale", tpcb, 32 * tpcb),
        ("TPC-C", "tpcc", "warehouses", tpcc, 256 * tpcc),
        ("TATP", "tatp", "subscribers", 100_000, 160),
    ]
}

fn config(scale: Scale, workload: &str, param: &str, size: u32, blocks_per_chip: u32) -> ExperimentConfig {
    let mut c = ExperimentConfig::default();
    c.device.preset = "paper-emulator".into();
    c.device.page_bytes = Some(FLASH_PAGE_BYTES);
    c.device.pages_per_block = Some(PAGES_PER_UNIT);
    c.device.blocks_per_chip = Some(blocks_per_chip);
    c.engine.db_page_bytes = Some(DB_PAGE_BYTES);
    c.workload.name = workload.into();
    c.workload.params.insert(param.into(), size.into());
    // Shore-MT's log, as the IPA experiments keep it (`crate::ipa::SHORE_LOG`).
    c.engine.log_chips = Some(crate::ipa::SHORE_LOG_CHIPS);
    c.engine.log_device_mib = crate::ipa::shore_kits_log_mib(workload, size);
    let (warmup_s, sim_time_s) = match scale {
        Scale::Smoke => (0.2, 0.5),
        Scale::Quick => (5.0, 10.0),
        // §8.3 replays traces of Shore-MT runs and does not state their length: §8.2's
        // runs in proportion to the database (TATP: two hours, as the demo's).
        Scale::Full => {
            (10.0, run_length::measured_seconds(workload, size, run_length::EMULATOR_DB_MIB).unwrap_or(2.0 * 3600.0))
        }
    };
    c.driver.warmup_s = warmup_s;
    c.driver.sim_time_s = sim_time_s;
    c
}

/// The IPA scheme of Table 2's `workload`. §8.3: "IPA configurations \[2×3\] and
/// \[2×4\]"; §8.4 names whose: "for TPC-C the natural choice is M = 3 … For TPC-B we
/// opted for M = 4". TATP's is not stated: \[2x4\] assumed.
pub fn table2_scheme(workload: &str) -> &'static str {
    if workload == "tpcc" {
        "2x3"
    } else {
        "2x4"
    }
}

/// Per workload: IPA on NoFTL ([`table2_scheme`]), then IPL (8 KB log region, 512 B
/// sectors).
pub fn table2_runs(scale: Scale) -> Vec<RunSpec> {
    let mut runs = Vec::new();
    for (name, workload, param, size, blocks) in workloads(scale) {
        let mut ipa = config(scale, workload, param, size, blocks);
        let scheme = table2_scheme(workload);
        ipa.engine.ipa = scheme.into();
        runs.push(RunSpec::engine(format!("{name} IPA [{scheme}]"), ipa));
        let mut ipl = config(scale, workload, param, size, blocks);
        ipl.engine.ipa = "0x0".into();
        ipl.storage = StorageConfig::Ipl(IplStorageConfig {
            log_region_bytes: LOG_REGION_BYTES,
            sector_bytes: SECTOR_BYTES,
            ..IplStorageConfig::default()
        });
        runs.push(RunSpec::engine(format!("{name} IPL"), ipl));
    }
    runs
}

/// Table 2's ablation: the IPL runs with the other source of log records. §2.1 describes
/// IPL as logging every update in the page's in-memory log sector (the headline); the
/// paper's IPL runs replay traces recorded in Shore-MT running IPA (§8.3), whose page
/// writes carry the net change at eviction, and the text does not say which records the
/// traces kept.
///
/// And the device size, which §8.3 does not state (ours is [`workloads`]' blocks per
/// chip), +50% for both schemes: IPA's GC depends on free space, IPL's merges do not
/// (§2.1, point 2), and the paper's IPA read amplification of 1.01–1.06 says its
/// replay hardly ran GC. At −50% (16 blocks per chip for TPC-B) the engine's NoFTL
/// regions lack the spare blocks GC needs, so that side is not run.
pub const TABLE2_VARIANTS: &[Variant] = &[
    Variant {
        name: "net change at the write",
        component: "the IPL log records: the paper's traces were recorded in Shore-MT running IPA (§8.3) and may carry a page's net change at eviction, not a record per update as §2.1 describes IPL",
        apply: net_change_records,
    },
    Variant {
        name: "device 150%",
        component: "the device size, which §8.3 does not state (32, 256 and 160 blocks per chip assumed; +50%), and with it the free space IPA's GC works in",
        apply: |input| with_blocks(input, 1.5),
    },
];

/// An engine run on a device with `factor` times its blocks per chip.
fn with_blocks(input: &RunInput, factor: f64) -> Option<RunInput> {
    let RunInput::Engine(c) = input else { return None };
    let blocks = c.device.blocks_per_chip?;
    let mut c = c.clone();
    c.device.blocks_per_chip = Some((f64::from(blocks) * factor).round() as u32);
    Some(RunInput::Engine(c))
}

/// An IPL run whose page writes log only the net change; `None` for other runs.
fn net_change_records(input: &RunInput) -> Option<RunInput> {
    let RunInput::Engine(c) = input else { return None };
    let StorageConfig::Ipl(ipl) = &c.storage else { return None };
    let mut c = c.clone();
    c.storage = StorageConfig::Ipl(IplStorageConfig { update_records: false, ..*ipl });
    Some(RunInput::Engine(c))
}

fn field(v: &Value, name: &str) -> Option<f64> {
    v.get(name)?.as_f64()
}

/// The sum of `counter` over the data regions of a per-region map (`regions` or
/// `ipl_regions`): every region but the WAL's `log` and `system`.
fn data_regions(result: &Value, map: &str, counter: &str) -> Option<f64> {
    let regions = result.get(map)?.as_object()?;
    regions.iter().filter(|(name, _)| !matches!(name.as_str(), "log" | "system")).map(|(_, c)| field(c, counter)).sum()
}

/// Appendix B's numbers of one run.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Amplification {
    write: f64,
    read: f64,
    erases: f64,
    evictions: f64,
}

fn ipa(r: &Value) -> Option<Amplification> {
    let fetches = field(r, "host_reads")?;
    let (appends, out_of_place) = (field(r, "in_place_appends")?, field(r, "out_of_place_writes")?);
    let evictions = appends + out_of_place;
    // GC moves flash pages: the formula's "#gc page migrations · 4 I/Os" counts DB
    // pages of four flash pages, so both are `migrations` flash-page I/Os.
    let migrations = data_regions(r, "regions", "gc_page_migrations")?;
    (fetches > 0.0 && evictions > 0.0).then(|| Amplification {
        write: (appends + out_of_place * P + migrations) / (evictions * P),
        read: (fetches * P + migrations) / (fetches * P),
        erases: data_regions(r, "regions", "gc_erases").unwrap_or(f64::NAN),
        evictions,
    })
}

fn ipl(r: &Value) -> Option<Amplification> {
    let fetches = field(r, "host_reads")?;
    let logged = field(r, "logged_writes")?;
    let evictions = logged + field(r, "out_of_place_writes")?;
    let merges = data_regions(r, "ipl_regions", "merges")?;
    let sectors = data_regions(r, "ipl_regions", "log_sector_writes")?;
    let log_pages = f64::from(LOG_REGION_BYTES / FLASH_PAGE_BYTES);
    let db_pages_per_unit = ((f64::from(PAGES_PER_UNIT) - log_pages) / P).floor();
    // Log sectors written beyond one per logged eviction. A flush that finds the log
    // region full is merged instead of written, so each merge stands for one flush.
    let imlog_full = (sectors + merges - logged).max(0.0);
    (fetches > 0.0 && evictions > 0.0).then(|| Amplification {
        write: (merges * db_pages_per_unit * P + imlog_full + evictions) / (evictions * P),
        read: (fetches * (P + log_pages) + merges * f64::from(PAGES_PER_UNIT)) / (fetches * P),
        erases: merges,
        evictions,
    })
}

fn change_pct(ipa: f64, ipl: f64) -> Option<f64> {
    (ipl != 0.0 && ipa.is_finite() && ipl.is_finite()).then(|| (ipa - ipl) / ipl * 100.0)
}

pub fn table2_cells(results: &Results) -> Vec<Ours> {
    let mut out = Vec::new();
    let mut push = |row: &str, column: &str, value: Option<f64>| {
        out.push(Ours { row: row.into(), column: column.into(), value: value.filter(|v| v.is_finite()) })
    };
    for (k, (name, ..)) in workloads(Scale::Quick).iter().enumerate() {
        let a = results[2 * k].and_then(ipa);
        let l = results[2 * k + 1].and_then(ipl);
        for (scheme, m) in [("IPA", a), ("IPL", l)] {
            push("I/O write amplification", &format!("{name} {scheme}"), m.map(|m| m.write));
            push("I/O read amplification", &format!("{name} {scheme}"), m.map(|m| m.read));
            push("Erases", &format!("{name} {scheme}"), m.map(|m| m.erases));
        }
        let both = a.zip(l);
        push("Reads, IPA against IPL", name, both.and_then(|(a, l)| change_pct(a.read, l.read)));
        push("Writes, IPA against IPL", name, both.and_then(|(a, l)| change_pct(a.write, l.write)));
        let per_eviction = |m: Amplification| m.erases / m.evictions;
        push("Erases, IPA against IPL", name, both.and_then(|(a, l)| change_pct(per_eviction(a), per_eviction(l))));
    }
    out
}

pub fn table2_notes(scale: Scale) -> Vec<String> {
    let [(_, _, _, tpcb, tpcb_blocks), (_, _, _, tpcc, tpcc_blocks), (_, _, _, tatp, tatp_blocks)] = workloads(scale);
    let c =
        |(_, workload, param, size, blocks): (&str, &str, &str, u32, u32)| config(scale, workload, param, size, blocks);
    let [tpcb_run, tpcc_run, tatp_run] = workloads(scale).map(c);
    crate::ipa::with_run_length(
        scale,
        vec![
        format!(
            "§8.3's configuration: 8 KB DB pages, SLC with 64 × 2 KB pages per erase unit, 512 B log sectors, an 8 KB log region per unit (15 DB pages + 4 log pages). Device: paper-emulator with 2 KB pages; {tpcb_blocks}, {tpcc_blocks} and {tatp_blocks} blocks per chip for TPC-B (scale {tpcb}), TPC-C ({tpcc} warehouses) and TATP ({tatp} subscribers); §8.3 states no device size, so the ablation makes it 50% larger (\"device 150%\"; at −50% TPC-B's NoFTL regions lack GC's spare blocks). Buffer {}% (eager cleaner), {} terminals, seed 1, {} s of warm-up; simulated s measured: TPC-B {}, TPC-C {}, TATP {}.",
            tpcb_run.engine.buffer_share * 100.0,
            tpcb_run.driver.terminals,
            tpcb_run.driver.warmup_s,
            tpcb_run.driver.sim_time_s,
            tpcc_run.driver.sim_time_s,
            tatp_run.driver.sim_time_s
        ),
        "IPA on NoFTL is [2x3] for TPC-C and [2x4] for TPC-B, as §8.4 names them (§8.3: \"IPA configurations [2×3] and [2×4]\"); TATP's is not stated, [2x4] assumed. IPL runs the engine without IPA on the IPL store.".into(),
        crate::ipa::SHORE_LOG.into(),
        "Amplifications and erases by appendix B's formulas from each run's measured fetches, evictions, merges and GC counts, over the data regions only (see the module doc). IPL's erases are its merges.".into(),
        "The paper replays one trace on both schemes; we run both for the same simulated time, so IPA runs more transactions. The erase comparison is therefore per eviction (erases / DB page writes); the read and write comparisons are of the amplifications, which are already per fetch and per eviction. Absolute erase totals are not comparable. The runs start from the device as loaded (no precondition: the paper replays traces), so IPA's GC erases begin only once the erased blocks the load left run out, and lag its programs over a short run; IPL's merges have no such reserve.".into(),
        "IPL logs a record per update of a page (§2.1), every operation's changed spans with a 7-byte record header, so a page updated many times while buffered fills sectors before its write (appendix B's imlog full). They are written with the page's write, in one group: a page whose records need more sectors than its unit has free merges that unit once, where flushing each sector as it fills would merge it once per 16 sectors (about 2% more merges, counted in the quick runs of 2026-11-27 at e92b880). The ablation logs only each write's net change instead (\"net change at the write\"), as a trace of Shore-MT running IPA may have carried it; §8.3 does not say.".into(),
        "Where a comparison of writes is off, the write-amplification rows above show which scheme moves it. TPC-B: our IPA pays for GC on data regions 35–57% full (its read amplification above 1 is all GC migrations; the paper's 1.01 says its replay migrated almost none), which raises its write amplification above the paper's 0.54. TPC-C: our IPA's write amplification is below the paper's 0.94, and our IPL's with a record per update above its 1.22 (a TPC-C operation changes several fields of a row, a record each; the ablation's net change stays near 1.22).".into(),
    ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_variant_logs_net_changes_in_the_ipl_runs_only() {
        let runs = table2_runs(Scale::Smoke);
        let (ipa, ipl) = (&runs[0].input, &runs[1].input);
        assert!(net_change_records(ipa).is_none(), "IPA runs are shared");
        let Some(RunInput::Engine(c)) = net_change_records(ipl) else { panic!("an engine run") };
        let StorageConfig::Ipl(s) = c.storage else { panic!("an IPL run") };
        assert!(!s.update_records);
        let RunInput::Engine(headline) = ipl else { panic!("an engine run") };
        assert_eq!(headline.storage, StorageConfig::Ipl(IplStorageConfig { update_records: true, ..s }));
    }

    #[test]
    fn ipa_runs_the_scheme_the_text_names_per_workload() {
        let schemes: Vec<String> = table2_runs(Scale::Quick)
            .iter()
            .filter_map(|r| match &r.input {
                RunInput::Engine(c) if c.storage == StorageConfig::Noftl => Some(c.engine.ipa.clone()),
                _ => None,
            })
            .collect();
        assert_eq!(schemes, ["2x4", "2x3", "2x4"], "TPC-B, TPC-C, TATP");
    }

    #[test]
    fn the_device_variants_scale_both_schemes_blocks() {
        for (spec, blocks) in table2_runs(Scale::Smoke).iter().zip([32, 32, 256, 256, 160, 160]) {
            let Some(RunInput::Engine(c)) = with_blocks(&spec.input, 1.5) else { panic!("an engine run") };
            assert_eq!(c.device.blocks_per_chip, Some(blocks * 3 / 2), "{}", spec.label);
        }
    }
}
