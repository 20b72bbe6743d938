//! A device larger than its memory limit: refused up front only when its metadata does
//! not fit; otherwise it runs while the page images it writes fit the rest of the
//! limit, and a run that writes more stops with the page budget's error (never a panic,
//! never the out-of-memory killer) — for the engine and for SQLite on NoLgn-FTL.

use workloads::limits::bookkeeping_bytes;
use workloads::sqlite::flash::FlashRunConfig;
use workloads::{Control, Experiment, ExperimentConfig};

/// TPC-B at scale 1 (15 MiB) on 4 chips × 16,384 blocks × 64 pages of 4 KiB: a 16 GiB
/// device, a short run from a fresh device.
const TPCB_ON_A_LARGE_DEVICE: &str = r#"
seed = 5

[device]
chips = 4
blocks_per_chip = 16384
pages_per_block = 64

[workload]
name = "tpcb"
scale = 1

[driver]
warmup_s = 0
sim_time_s = 0.2
"#;

const MIB: u64 = 1 << 20;

/// What the page budget's error says, wherever it surfaces.
fn is_budget_stop(message: &str) -> bool {
    message.contains("needs a new page image")
        && message.contains("budget (device: 4 chips × 16384 blocks × 64 pages of 4096 bytes)")
        && message.contains("give the run more memory (--max-memory, device.max_memory_bytes)")
}

#[test]
fn an_engine_run_on_a_device_larger_than_its_memory_runs_until_its_pages_outgrow_the_budget() {
    let mut config = ExperimentConfig::from_toml(TPCB_ON_A_LARGE_DEVICE).unwrap();
    let g = config.device.geometry().unwrap();
    let bookkeeping = bookkeeping_bytes(&g, true);
    assert!(bookkeeping + 256 * MIB < g.capacity_bytes() / 8, "the device is far larger than its limit");
    config.device.max_memory_bytes = Some(bookkeeping + 256 * MIB);
    let result = Experiment::new(config.clone()).unwrap().run(&mut |_| Control::Continue).expect("fits its budget");
    assert!(result.metrics.transactions > 0);
    // The same run given 8 MiB for its page images stops loading, with the budget's words.
    config.device.max_memory_bytes = Some(bookkeeping + 8 * MIB);
    let e = Experiment::new(config).unwrap().run(&mut |_| Control::Continue).unwrap_err().to_string();
    assert!(is_budget_stop(&e), "{e}");
}

#[test]
fn a_sqlite_run_on_nolgn_ftl_stops_at_its_budget_with_the_flash_layers_words() {
    let mut c = FlashRunConfig { ftl: "nolgn".into(), ..FlashRunConfig::default() };
    c.journal = workloads::sqlite::flash::FlashJournal::Nolgn;
    let params = serde_json::json!({"num": 4_000, "value_size": 1_024, "batch": 10});
    c.workload.params = params.as_object().cloned().unwrap_or_default();
    c.device.chips = Some(4);
    c.device.blocks_per_chip = Some(72);
    let g = c.device.geometry().unwrap();
    let bookkeeping = bookkeeping_bytes(&g, true);
    c.device.max_memory_bytes = Some(bookkeeping + 2 * MIB);
    let e = c.run(&mut |_, _| Control::Continue).unwrap_err();
    assert!(e.contains("needs a new page image") && e.contains("budget (device: 4 chips × 72 blocks"), "{e}");
    c.device.max_memory_bytes = Some(bookkeeping + 64 * MIB);
    c.run(&mut |_, _| Control::Continue).expect("fits its budget");
}
