//! The IPA experiments' plans: every TPC-C run has room for the database's growth, the
//! experiments that compare the same conditions share their runs, the experiments with
//! GC cells carry the precondition's ablation, and the emptier-device variant runs with the
//! over-provisioning it names.

use reproduce::catalogue::{find, CATALOGUE};
use reproduce::experiment::{RunSpec, Variant};
use reproduce::{ipa, RunInput, Scale};
use serde_json::Value;
use std::collections::BTreeSet;
use workloads::config::HeapSpace;
use workloads::precondition::Precondition;
use workloads::ExperimentConfig;

fn engine(run: &RunSpec) -> &ExperimentConfig {
    match &run.input {
        RunInput::Engine(c) => c,
        other => panic!("{} is not an engine run: {other:?}", run.label),
    }
}

fn ipa_experiments() -> impl Iterator<Item = &'static reproduce::Experiment> {
    CATALOGUE.iter().filter(|e| e.id.starts_with("ipa:") || e.id.starts_with("demo:"))
}

fn keys(id: &str, scale: Scale) -> BTreeSet<String> {
    let e = find(id).unwrap();
    (e.implementation.as_ref().unwrap().runs)(scale).iter().map(|r| r.input.key_text()).collect()
}

#[test]
fn every_tpcc_run_has_room_for_the_database_and_its_growth() {
    for scale in [Scale::Smoke, Scale::Quick] {
        for e in ipa_experiments() {
            for run in reproduce::ablation::all_runs(e.implementation.as_ref().unwrap(), scale) {
                let RunInput::Engine(config) = &run.input else { continue };
                let Some((capacity_mib, needed_mib)) = ipa::tpcc_room(config) else { continue };
                assert!(
                    capacity_mib >= needed_mib,
                    "{} {} at {}: data regions of {capacity_mib:.0} MiB, the database may need {needed_mib:.0} MiB",
                    e.id,
                    run.label,
                    scale.name()
                );
            }
        }
    }
}

#[test]
fn the_room_counts_the_aging_only_for_an_aged_run() {
    let run = &(find("ipa:table9").unwrap().implementation.as_ref().unwrap().runs)(Scale::Quick)[0];
    let mut config = engine(run).clone();
    let (capacity, aged) = ipa::tpcc_room(&config).unwrap();
    config.driver.precondition = Precondition::None;
    let (_, fresh) = ipa::tpcc_room(&config).unwrap();
    // The aging's share of the data regions (25 windows of a tenth of them, each run
    // 1.25 times over, 0.37 transactions of 800 B per 4 KiB host write: 23%), less the
    // faster fresh device's extra growth in the 15 simulated seconds (2,500 tps × 800 B
    // more).
    let aging_share = 25.0 * 0.1 * 1.25 * 0.37 * 800.0 / 4096.0;
    let faster = 2_500.0 * 800.0 * 15.0 / (1024.0 * 1024.0);
    assert!((aged - fresh - (capacity * aging_share - faster)).abs() < 1e-6, "{aged} {fresh} {capacity}");
    config.driver.precondition = Precondition::Steady;
    config.engine.eviction = workloads::config::Eviction::NonEager;
    let (_, non_eager) = ipa::tpcc_room(&config).unwrap();
    assert!(non_eager > capacity, "a non-eager TPC-C run aged to steady state never has room");
    config.workload.name = "tpcb".into();
    assert_eq!(ipa::tpcc_room(&config), None);
}

#[test]
fn tables_on_the_same_conditions_share_their_runs() {
    for scale in [Scale::Smoke, Scale::Quick, Scale::Full] {
        let (table4, table9, table5) =
            (keys("ipa:table4", scale), keys("ipa:table9", scale), keys("ipa:table5", scale));
        // Table 4's TPC-C at 75% and 90%: [0x0] and [2x3] are Table 9's; LinkBench's
        // [0x0], [2x125] and [3x125] are Table 5's.
        assert_eq!(table4.intersection(&table9).count(), 4, "{}", scale.name());
        assert_eq!(table4.intersection(&table5).count(), 6, "{}", scale.name());
        let table3 = keys("ipa:table3", scale);
        assert_eq!(table3.intersection(&table9).count(), 2, "Table 3's TPC-C [0x0] and [2x3] at 75%");
        assert_eq!(table3.intersection(&table5).count(), 7, "Table 3's LinkBench is Table 5's at 75%");
        assert!(keys("ipa:table1", scale).is_subset(&table4));
        assert!(keys("ipa:appendix-a", scale).is_subset(&keys("ipa:table10", scale)));
    }
}

#[test]
fn the_experiments_with_gc_cells_have_the_fresh_device_variant() {
    let variants = |id: &str| -> Vec<&str> {
        find(id).unwrap().implementation.as_ref().unwrap().variants.iter().map(|v| v.name).collect()
    };
    assert_eq!(
        variants("demo:table1"),
        ["fresh device", "emptier device (15% free)", "IPA region odd-MLC", "typical 400 MB/s flash channel"]
    );
    assert_eq!(variants("ipa:table3"), ["fresh device"]);
    assert_eq!(
        variants("ipa:table9"),
        [
            "fresh device",
            "filled, not aged",
            "emptier device (15% free)",
            "GC in the foreground only",
            "buffer of the aged database"
        ]
    );
    assert_eq!(
        variants("ipa:table10"),
        [
            "fresh device",
            "emptier device (15% free)",
            "GC in the foreground only",
            "log of half the size",
            "log 1.5 times the size"
        ]
    );
    for id in ["ipa:table6", "ipa:table8"] {
        assert_eq!(
            variants(id),
            [
                "fresh device",
                "filled, not aged",
                "measured from the fill",
                "emptier device (15% free)",
                "typical 400 MB/s flash channel"
            ],
            "{id}"
        );
    }
    assert_eq!(
        variants("ipa:table7"),
        [
            "fresh device",
            "emptier device (15% free)",
            "GC in the foreground only",
            "log on 2 chips",
            "log on 6 chips",
            "log on the database device",
            "group commit 200 µs",
            "checkpoint at 25% of the log",
            "checkpoint at 50% of the log"
        ]
    );
    let has_fresh = |e: &&reproduce::Experiment| {
        e.implementation.as_ref().unwrap().variants.iter().any(|v| v.name == "fresh device")
    };
    for e in ipa_experiments().filter(has_fresh) {
        for r in (e.implementation.as_ref().unwrap().runs)(Scale::Quick) {
            let changed = (ipa::FRESH.apply)(&r.input).expect("an aged run changes");
            let RunInput::Engine(c) = changed else { panic!("engine run") };
            assert_eq!(c.driver.precondition, Precondition::None);
            assert!(!engine(&r).driver.precondition.is_none(), "{} {}", e.id, r.label);
        }
    }
}

/// A run's numeric field.
fn field(v: &Value, name: &str) -> f64 {
    v.get(name).and_then(Value::as_f64).unwrap_or_else(|| panic!("no {name}"))
}

/// Table 7's first smoke run measured for `sim_time_s` from the fill, and that run under
/// `variant`, whose data regions get `option`.
fn filled_table7_run_and_under(variant: &Variant, option: &str, sim_time_s: f64) -> (RunInput, RunInput) {
    let run = &(find("ipa:table7").unwrap().implementation.as_ref().unwrap().runs)(Scale::Smoke)[0];
    let mut headline = engine(run).clone();
    headline.driver.precondition = Precondition::Fill;
    headline.driver.warmup_s = 0.0;
    headline.driver.sim_time_s = sim_time_s;
    let headline = RunInput::Engine(headline);
    let changed = (variant.apply)(&headline).expect("a filled run changes");
    let RunInput::Engine(c) = &changed else { panic!("engine run") };
    assert!(c.engine.schema.as_deref().unwrap().contains(option), "{}", variant.name);
    (headline, changed)
}

#[test]
fn the_emptier_device_has_15_percent_over_provisioning_and_is_filled_to_85() {
    let (headline, emptier) = filled_table7_run_and_under(&ipa::EMPTIER, "OVER_PROVISIONING=0.15", 0.05);
    let log = |_: String| {};
    let base = headline.execute("headline", &log).unwrap();
    let less = emptier.execute("emptier", &log).unwrap();
    // The data region's logical capacity follows (1 − over-provisioning): 0.85 / 0.9.
    let ratio = field(&less, "data_regions_mib") / field(&base, "data_regions_mib");
    assert!((ratio - 0.85 / 0.9).abs() < 0.01, "{ratio}");
    let filled = |v: &Value| v["precondition"]["filled_pages"].as_f64().unwrap();
    assert!(filled(&less) < filled(&base), "the fill leaves the emptier device emptier");
}

/// Under "GC in the foreground only" the data region collects only in the path of a
/// host write, and the headline also after host writes.
#[test]
fn foreground_gc_collects_only_in_the_host_writes_path() {
    let (headline, foreground) = filled_table7_run_and_under(&ipa::FOREGROUND_GC, "GC=FOREGROUND", 0.5);
    let log = |_: String| {};
    let collections = |v: &Value| {
        let data = &v["regions"]["data"];
        (field(data, "foreground_gc_collections"), field(data, "background_gc_collections"))
    };
    let (_, background) = collections(&headline.execute("headline", &log).unwrap());
    assert!(background > 0.0, "the headline collects after host writes");
    let (fg, bg) = collections(&foreground.execute("foreground", &log).unwrap());
    assert!(fg > 0.0 && bg == 0.0, "foreground {fg}, background {bg}");
}

#[test]
fn table7_shore_variants_move_the_log_and_checkpoint_assumptions_by_what_they_name() {
    let run = &(find("ipa:table7").unwrap().implementation.as_ref().unwrap().runs)(Scale::Quick)[0];
    let headline = engine(run);
    assert_eq!((headline.engine.log_chips, headline.engine.group_commit_us), (Some(4), 0.0));
    assert_eq!(headline.engine.log_device_mib, Some(2_000), "TPC-B's log as shore-kits sizes it");
    assert_eq!(headline.engine.checkpoint_log_share, 0.3);
    let under = |v: &reproduce::experiment::Variant| match (v.apply)(&run.input) {
        Some(RunInput::Engine(c)) => c,
        other => panic!("{}: {other:?}", v.name),
    };
    assert_eq!(under(&ipa::LOG_CHIPS_FEWER).engine.log_chips, Some(2));
    assert_eq!(under(&ipa::LOG_CHIPS_MORE).engine.log_chips, Some(6));
    assert_eq!(under(&ipa::LOG_ON_DATABASE_DEVICE).engine.log_device_mib, None);
    assert_eq!(under(&ipa::GROUP_COMMIT).engine.group_commit_us, 200.0);
    assert_eq!(under(&ipa::CHECKPOINT_EARLY).engine.checkpoint_log_share, 0.25);
    assert_eq!(under(&ipa::CHECKPOINT_LATE).engine.checkpoint_log_share, 0.5);
    for v in [
        ipa::LOG_CHIPS_FEWER,
        ipa::LOG_CHIPS_MORE,
        ipa::LOG_ON_DATABASE_DEVICE,
        ipa::GROUP_COMMIT,
        ipa::CHECKPOINT_EARLY,
        ipa::CHECKPOINT_LATE,
    ] {
        let mut c = under(&v);
        c.engine = headline.engine.clone();
        assert_eq!(&c, headline, "{} changes only the engine", v.name);
    }
}

/// The cleaner and log-reclamation variants change only the TPC-C runs of their
/// eviction, and only the switch they name.
#[test]
fn tpcc_cleaner_variants_change_only_tpcc_runs_and_their_switch() {
    for (id, variant) in [
        ("ipa:table1", ipa::TPCC_CLEANER_SWEEP),
        ("ipa:table4", ipa::TPCC_CLEANER_SWEEP),
        ("ipa:appendix-a", ipa::TPCC_LOG_FULL_CHECKPOINT),
    ] {
        let e = find(id).unwrap().implementation.as_ref().unwrap();
        assert!(e.variants.iter().any(|v| v.name == variant.name), "{id} lists {}", variant.name);
        let mut changed = 0;
        for run in (e.runs)(Scale::Quick) {
            let Some(RunInput::Engine(mut c)) = (variant.apply)(&run.input) else {
                assert!(!run.label.contains("TPC-C") || id == "ipa:appendix-a", "{id} {}: a TPC-C run", run.label);
                continue;
            };
            let headline = engine(&run);
            assert_eq!(headline.workload.name, "tpcc", "{id} {}", run.label);
            if variant.name == ipa::TPCC_CLEANER_SWEEP.name {
                assert!(c.engine.cleaner_sweep && !headline.engine.cleaner_sweep);
                c.engine.cleaner_sweep = false;
            } else {
                assert_eq!((headline.engine.checkpoint_log_share, c.engine.checkpoint_log_share), (0.9, 0.99));
                c.engine.checkpoint_log_share = 0.9;
            }
            assert_eq!(&c, headline, "{id} {}: only the switch differs", run.label);
            changed += 1;
        }
        assert!(changed > 0, "{id}: the variant changes some run");
    }
}

/// The board's runs measured from the fill: the aged runs start where the fill leaves the
/// device, without warm-up; nothing else changes.
#[test]
fn measured_from_the_fill_drops_the_aging_and_the_warm_up_only() {
    for id in ["ipa:table6", "ipa:table8"] {
        let e = find(id).unwrap().implementation.as_ref().unwrap();
        for run in (e.runs)(Scale::Quick) {
            let headline = engine(&run);
            assert_eq!(headline.driver.precondition, Precondition::Steady);
            let Some(RunInput::Engine(mut c)) = (ipa::FROM_FILL.apply)(&run.input) else {
                panic!("{id} {}", run.label)
            };
            assert_eq!((c.driver.precondition, c.driver.warmup_s), (Precondition::Fill, 0.0));
            c.driver.precondition = Precondition::Steady;
            c.driver.warmup_s = headline.driver.warmup_s;
            assert_eq!(&c, headline, "{id} {}: only the start differs", run.label);
        }
    }
    let mut filled =
        engine(&(find("ipa:table10").unwrap().implementation.as_ref().unwrap().runs)(Scale::Quick)[0]).clone();
    assert_eq!(filled.driver.precondition, Precondition::Fill);
    assert!((ipa::FROM_FILL.apply)(&RunInput::Engine(filled.clone())).is_none(), "a run not aged is shared");
    filled.driver.precondition = Precondition::None;
    assert!((ipa::FROM_FILL.apply)(&RunInput::Engine(filled)).is_none(), "a fresh run is shared");
}

/// The LinkBench runs (Tables 3, 4, 5 and Fig. 6, on MySQL InnoDB in the paper) place
/// records as InnoDB does; every other run keeps the engine's packed pages, and the
/// packed-heap variant changes only that switch, only on LinkBench runs. The tables of
/// write amplification list it.
#[test]
fn linkbench_runs_place_records_as_innodb_and_the_variant_packs_them() {
    let mut linkbench = 0;
    for e in ipa_experiments() {
        let implementation = e.implementation.as_ref().unwrap();
        for run in (implementation.runs)(Scale::Quick) {
            let headline = engine(&run);
            let changed = (ipa::PACKED_HEAP.apply)(&run.input);
            if headline.workload.name != "linkbench" {
                assert_eq!(headline.engine.heap_space, HeapSpace::Packed, "{} {}", e.id, run.label);
                assert!(changed.is_none(), "{} {}", e.id, run.label);
                continue;
            }
            linkbench += 1;
            assert_eq!(headline.engine.heap_space, HeapSpace::Innodb, "{} {}", e.id, run.label);
            let listed = implementation.variants.iter().any(|v| v.name == ipa::PACKED_HEAP.name);
            assert_eq!(listed, e.id != "ipa:table3", "{}: the packed-heap variant", e.id);
            let Some(RunInput::Engine(mut c)) = changed else { panic!("{} {}", e.id, run.label) };
            assert_eq!(c.engine.heap_space, HeapSpace::Packed);
            c.engine.heap_space = HeapSpace::Innodb;
            assert_eq!(&c, headline, "{} {}: only the heap's space differs", e.id, run.label);
        }
    }
    assert!(linkbench > 0);
}

/// The switch stays out of the configs of runs that do not use it, so their keys (and
/// the runs kept under them) stay as they were.
#[test]
fn packed_heap_pages_stay_out_of_a_run_key() {
    let run = &(find("ipa:table5").unwrap().implementation.as_ref().unwrap().runs)(Scale::Quick)[0];
    assert!(run.input.key_text().contains("heap_space"), "{}", run.input.key_text());
    let packed = (ipa::PACKED_HEAP.apply)(&run.input).unwrap();
    assert!(!packed.key_text().contains("heap_space"), "{}", packed.key_text());
}
