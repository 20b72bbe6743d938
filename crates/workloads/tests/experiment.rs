//! The experiment API end to end: a TOML config runs, its JSON result embeds the
//! resolved config, the seed and the commit; the same config gives the same result;
//! the progress callback sees the run and can stop it; an FTL storage is refused by name.

use std::sync::atomic::{AtomicBool, Ordering};
use workloads::experiment::{Consistency, Stage};
use workloads::{Control, Experiment, ExperimentConfig, ExperimentError, Progress};

/// TPC-B at scale 1 on four chips (room for its 15 MiB), a short run.
const SMALL_TPCB: &str = r#"
seed = 5

[device]
chips = 4
blocks_per_chip = 96
pages_per_block = 64

[engine]
ipa = "2x4"
buffer_share = 0.2

[workload]
name = "tpcb"
scale = 1

[driver]
warmup_s = 0.2
sim_time_s = 0.5
check = true
"#;

fn without_wall_time(mut v: serde_json::Value) -> serde_json::Value {
    for key in ["wall_seconds", "run_wall_seconds", "simulated_seconds_per_wall_second"] {
        v.as_object_mut().unwrap().remove(key).unwrap_or_else(|| panic!("{key} missing"));
    }
    v
}

#[test]
fn a_toml_config_runs_and_its_json_embeds_the_resolved_config() {
    let config = ExperimentConfig::from_toml(SMALL_TPCB).unwrap();
    let experiment = Experiment::new(config.clone()).unwrap();
    let mut seen = Vec::new();
    let mut last_tps = 0.0;
    let result = experiment
        .run(&mut |p| {
            seen.push(match p {
                Progress::Loading { workload, size, .. } => format!("loading {workload} {size}"),
                Progress::Loaded { .. } => "loaded".into(),
                Progress::Running { throughput_tps, .. } => {
                    last_tps = throughput_tps;
                    "running".into()
                }
                Progress::Interval(_) => "interval".into(),
            });
            Control::Continue
        })
        .unwrap();
    assert_eq!(seen[..2], ["loading tpcb scale 1", "loaded"]);
    assert!(seen[2..].iter().all(|s| s == "running") && seen.len() > 3, "{seen:?}");
    assert!(last_tps > 0.0);
    assert_eq!(result.consistency_check, Some(Consistency::Passed));
    assert!(result.metrics.transactions > 0);

    let json = result.to_json();
    assert_eq!(json["seed"], 5);
    assert_eq!(json["git_commit"].as_str().unwrap().len(), 40, "built inside a git checkout");
    assert_eq!(json["ipa"], "2x4");
    assert_eq!(json["consistency_check"]["outcome"], "passed");
    // The embedded config is the file's, with the defaults it left out filled in.
    let embedded: ExperimentConfig = serde_json::from_value(json["config"].clone()).unwrap();
    assert_eq!(&embedded, experiment.config());
    assert_eq!(embedded.seed, config.seed);
    assert_eq!(embedded.device, config.device);
    assert_eq!(embedded.engine.log_chips, Some(1), "a quarter of four chips");
    assert_eq!(embedded.driver.terminals, 8);
    // It reproduces the run: same config, same JSON apart from wall-clock time.
    let again = Experiment::new(embedded).unwrap().run(&mut |_| Control::Continue).unwrap();
    assert_eq!(without_wall_time(again.to_json()), without_wall_time(json));
}

#[test]
fn the_callback_or_a_flag_stops_the_run() {
    let mut config = ExperimentConfig::from_toml(SMALL_TPCB).unwrap();
    config.driver.sim_time_s = 1000.0;
    let experiment = Experiment::new(config).unwrap();
    let stop = AtomicBool::new(false);
    let err = experiment
        .run(&mut |p| {
            if let Progress::Running { transactions, .. } = p {
                stop.store(transactions >= 1024, Ordering::Relaxed);
            }
            if stop.load(Ordering::Relaxed) {
                Control::Stop
            } else {
                Control::Continue
            }
        })
        .unwrap_err();
    let ExperimentError::Stopped { stage: Stage::Running { after_s } } = err else { panic!("{err}") };
    assert!(after_s > 0.0 && after_s < 10.0, "{after_s}");
    let err = experiment.run(&mut |_| Control::Stop).unwrap_err();
    assert_eq!(err, ExperimentError::Stopped { stage: Stage::Loading });
}

#[test]
fn an_ftl_storage_runs_the_workload_on_the_ftl() {
    let text = format!(
        "{SMALL_TPCB}\n[storage.ftl]\nkind = \"bast\"\nover_provisioning = 0.1\ncmt_entries = 4096\nlog_blocks = 8\n"
    );
    let config = ExperimentConfig::from_toml(&text).unwrap();
    let result = Experiment::new(config).unwrap().run(&mut |_| Control::Continue).unwrap();
    let ftl = result.metrics.ftl.expect("FTL counters");
    assert!(ftl.host_writes > 0 && result.metrics.flash_programs >= ftl.host_writes);
    assert_eq!(result.metrics.in_place_appends, 0, "an FTL takes no in-place appends");
    assert_eq!(result.config.storage.to_string(), "ftl:bast");
}

/// `engine.log_device_mib` keeps the log off the database device, on NoFTL and on an
/// FTL alike: the log's pages are written, no `log` region is counted, and the run's
/// transactions check out.
#[test]
fn a_log_device_of_its_own_takes_the_logs_writes() {
    for storage in ["", "\n[storage.ftl]\nkind = \"page\"\n"] {
        let on_device = ExperimentConfig::from_toml(&format!("{SMALL_TPCB}{storage}")).unwrap();
        let own = ExperimentConfig::from_toml(
            &format!("{SMALL_TPCB}{storage}").replace("buffer_share = 0.2", "buffer_share = 0.2\nlog_device_mib = 16"),
        )
        .unwrap();
        assert_eq!(own.engine.log_device_mib, Some(16));
        let run = |c: ExperimentConfig| Experiment::new(c).unwrap().run(&mut |_| Control::Continue).unwrap();
        let (on_device, own) = (run(on_device), run(own));
        for r in [&on_device, &own] {
            assert!(r.metrics.log_page_writes > 0, "{storage}: the log was written");
            assert_eq!(r.consistency_check, Some(Consistency::Passed), "{storage}");
        }
        if storage.is_empty() {
            assert!(on_device.metrics.regions.contains_key("log"), "NoFTL counts its log region");
        }
        assert!(!own.metrics.regions.contains_key("log"), "{storage}: no log region on the database device");
    }
}

#[test]
fn a_bad_schema_is_named_as_the_schema() {
    let mut config = ExperimentConfig::from_toml(SMALL_TPCB).unwrap();
    config.engine.schema = Some("CREATE REGION hot (IPA_MODE=none);".into());
    let err = Experiment::new(config).unwrap().run(&mut |_| Control::Continue).unwrap_err();
    let message = err.message(&|field| if field == "engine.schema" { "--schema x.sql".into() } else { field.into() });
    assert!(message.starts_with("--schema x.sql: tables without a ts_<table> tablespace need one named ts_data"));
}

/// A region that runs out of extents while loading is reported with how full the data
/// regions were; the engine's `NoFreeExtent` is carried up as a variant to decide that.
#[test]
fn a_load_that_outgrows_its_region_reports_how_full_it_was() {
    let mut config = ExperimentConfig::from_toml(SMALL_TPCB).unwrap();
    config.device.blocks_per_chip = Some(32);
    let err = Experiment::new(config).unwrap().run(&mut |_| Control::Continue).unwrap_err();
    let ExperimentError::Failed { stage: Stage::Loading, full: Some(fill), .. } = &err else { panic!("{err}") };
    assert!(fill.database_mib > 0.0 && fill.database_mib <= fill.data_regions_mib * 1.01, "{fill:?}");
    assert!(err.to_string().contains("give the device more flash"), "{err}");
}
