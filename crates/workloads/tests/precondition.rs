//! Preconditioning end to end: `fill` writes the data regions' free space so only the
//! over-provisioning is spare; `steady` ages the device until GC migrations per host
//! write meet the SNIA-style criterion and records the windows in the result; `none`
//! leaves the config and the result as they were.

use engine::db::BufferSize;
use engine::{Database, DbOptions};
use flash::RegionId;
use nand::{Device, MemoryStorage};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use workloads::driver::{Control, DriverConfig};
use workloads::precondition::{self, Precondition};
use workloads::tpcb::Tpcb;
use workloads::{Experiment, ExperimentConfig, Workload};

mod common;

/// TPC-B at scale 1 on four chips: the database takes about a third of the data region.
const SMALL_TPCB: &str = r#"
seed = 5

[device]
chips = 4
blocks_per_chip = 96
pages_per_block = 64

[engine]
ipa = "0x0"
buffer_share = 0.2

[workload]
name = "tpcb"
scale = 1

[driver]
warmup_s = 0.2
sim_time_s = 1.0
"#;

fn config(mode: &str) -> ExperimentConfig {
    let mut c = ExperimentConfig::from_toml(SMALL_TPCB).unwrap();
    c.driver.precondition = mode.parse().unwrap();
    c
}

#[test]
fn fill_leaves_90_percent_of_the_blocks_outside_the_gc_reserve_holding_data() {
    let device = Device::new(Box::new(MemoryStorage::new(common::geometry(96, 64), true)));
    let mut db =
        Database::create(device, DbOptions { buffer: BufferSize::Pages(2048), ..DbOptions::default() }).unwrap();
    db.execute("CREATE REGION data (IPA_MODE=none); CREATE TABLESPACE ts (REGION=data);").unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let mut tpcb = Tpcb::new(1);
    tpcb.load(&mut db, &|_| "ts".to_string(), &mut rng).unwrap();
    db.checkpoint().unwrap();
    let data = RegionId(db.page_device().region_id("data").unwrap().0);
    let logical = u64::from(db.page_device().logical_pages(data));
    let valid = |db: &Database| db.page_device().occupancy(data).unwrap().valid_pages;
    let before = valid(&db);
    assert!(before < logical / 2, "the load alone fills {before} of {logical} pages");
    let base = DriverConfig {
        terminals: 4,
        warmup_s: 0.0,
        duration_s: 1.0,
        cpu_ns_per_operation: 10_000,
        progress_s: 0.0,
        switch: None,
        max_transactions: None,
    };
    let report = precondition::run(&mut db, &mut tpcb, Precondition::Fill, &base, &mut rng, &mut || Control::Continue)
        .unwrap()
        .expect("fill reports");
    assert!(report.reached && report.windows.is_empty(), "{report:?}");
    // Pages handed to objects but not written yet: the rest of each object's last extent.
    let catalog = db.catalog();
    let spaces = catalog.tables.iter().map(|t| &t.space).chain(catalog.indexes.iter().map(|i| &i.space));
    let tails: u64 = spaces.filter(|s| !s.extents.is_empty()).map(|s| u64::from(s.extent_pages - s.used_in_last)).sum();
    // Two data chips of 96 blocks of 64 pages: 12,288 pages, of which GC keeps 3 blocks
    // per chip (384 pages) free; 90% of the other 11,904 hold data.
    assert_eq!(logical, 11_059, "90% of 12,288");
    let target = 10_713;
    assert_eq!(precondition::fill_target_pages(db.page_device(), data), Some(target));
    assert_eq!(valid(&db), target - tails, "the target but the extent tails holds data");
    assert_eq!(report.filled_pages, target - tails - before);
    assert!(report.device_writes >= report.filled_pages);
    tpcb.check(&mut db).unwrap();
}

#[test]
fn steady_ages_the_device_until_gc_is_steady_and_records_the_windows() {
    let result = Experiment::new(config("steady")).unwrap().run(&mut |_| Control::Continue).unwrap();
    let p = result.precondition.as_ref().expect("a precondition report");
    let r = &p.report;
    assert_eq!(r.mode, Precondition::Steady);
    assert!(r.reached, "not steady after {} windows: {:?}", r.windows.len(), r.windows);
    assert!(r.windows.len() >= precondition::WINDOWS, "{:?}", r.windows);
    let values: Vec<f64> = r.windows.iter().map(|w| w.gc_migrations_per_host_write).collect();
    assert!(precondition::steady_state(&values), "{values:?}");
    assert!(values.last().is_some_and(|&v| v > 0.0), "GC ran while aging: {values:?}");
    assert!(r.windows.iter().all(|w| w.host_writes >= r.window_host_writes));
    assert!(r.device_writes > r.filled_pages && r.sim_seconds > 0.0);
    let json = result.to_json();
    let recorded = &json["precondition"];
    assert_eq!(recorded["mode"], "steady");
    assert_eq!(recorded["reached"], true);
    assert_eq!(recorded["windows"].as_array().map(Vec::len), Some(r.windows.len()));
    assert_eq!(json["config"]["driver"]["precondition"], "steady");
    // The measurement starts after it: the device collects garbage, where the same run
    // on the device as loaded barely does.
    let fresh = Experiment::new(config("none")).unwrap().run(&mut |_| Control::Continue).unwrap();
    assert!(
        result.metrics.gc_migrations_per_host_write > fresh.metrics.gc_migrations_per_host_write,
        "steady {} against none {}",
        result.metrics.gc_migrations_per_host_write,
        fresh.metrics.gc_migrations_per_host_write
    );
    // The buffer is the share of the database as loaded, aged or not (the load's closing
    // checkpoint adds a few pages to the database the load reports) ...
    assert_eq!(json["buffer_mib"].as_f64(), Some(result.buffer_mib));
    let share_of_loaded = 0.2 * fresh.fill.database_mib;
    assert!((fresh.buffer_mib / share_of_loaded - 1.0).abs() < 0.05, "{} against {share_of_loaded}", fresh.buffer_mib);
    assert_eq!(result.buffer_mib, fresh.buffer_mib);
    // ... unless it is the share of the database the aging's inserts grew.
    let mut c = config("steady");
    c.engine.buffer_of_aged_database = true;
    let grown = Experiment::new(c).unwrap().run(&mut |_| Control::Continue).unwrap();
    assert!(grown.buffer_mib > result.buffer_mib, "{} against {}", grown.buffer_mib, result.buffer_mib);
    assert_eq!(grown.to_json()["config"]["engine"]["buffer_of_aged_database"], true);
    assert!(json["config"]["engine"].get("buffer_of_aged_database").is_none(), "unset, it stays out of the config");
}

#[test]
fn none_leaves_the_config_and_the_result_without_a_precondition() {
    let c = config("none");
    let toml = c.to_toml().unwrap();
    assert!(!toml.contains("precondition"), "{toml}");
    let result = Experiment::new(c).unwrap().run(&mut |_| Control::Continue).unwrap();
    assert!(result.precondition.is_none());
    assert!(result.to_json().get("precondition").is_none());
}

#[test]
fn a_config_names_the_precondition_and_refuses_an_unknown_one() {
    let c = ExperimentConfig::from_toml("[driver]\nprecondition = \"fill\"\n").unwrap();
    assert_eq!(c.driver.precondition, Precondition::Fill);
    let e = ExperimentConfig::from_toml("[driver]\nprecondition = \"warm\"\n").unwrap_err().to_string();
    assert!(e.contains("steady") && e.starts_with("2:"), "{e}");
}
