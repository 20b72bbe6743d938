//! The benchmark library against `deltaflash index-bench --json` files recorded before
//! the benchmark moved into this crate (tests/data/index-bench-*.json): the same config
//! gives the same JSON, wall-clock fields aside and the fields added since (the commit,
//! the config, the scanned entries, latencies, total wall seconds) apart.

use index::bench::{self, IndexBenchConfig, Order};
use index::{IndexKind, Storage};
use serde_json::Value;

/// The recorded runs' common arguments: `--inserts 20000 --queries 2000 --scans 20
/// --scan-keys 100 --buffer-frames 20 --seed 3`, and the defaults of the rest.
fn small(index: IndexKind) -> IndexBenchConfig {
    let mut c = IndexBenchConfig::new(index);
    c.inserts = 20_000;
    c.queries = 2_000;
    c.scans = 20;
    c.scan_keys = 100;
    c.buffer_frames = 20;
    c.seed = 3;
    c
}

/// Drops the keys whose values depend on the wall clock, recursively.
fn without_wall(mut v: Value) -> Value {
    if let Value::Object(map) = &mut v {
        map.retain(|k, _| !k.contains("wall"));
        for value in map.values_mut() {
            *value = without_wall(value.take());
        }
    }
    v
}

const ADDED: [&str; 6] = ["git_commit", "config", "scanned_entries", "insert_latency", "query_latency", "wall_seconds"];

fn check(name: &str, config: IndexBenchConfig) {
    let path = format!("{}/tests/data/index-bench-{name}.json", env!("CARGO_MANIFEST_DIR"));
    let recorded: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let result = bench::run(&config, &mut |_| {}).unwrap_or_else(|e| panic!("{name}: {e}"));
    let mut ours = result.to_json("c0ffee");
    assert_eq!(ours["git_commit"], "c0ffee");
    assert_eq!(serde_json::from_value::<IndexBenchConfig>(ours["config"].clone()).unwrap(), config);
    let latency = &ours["insert_latency"];
    assert!(latency["p50_ms"].as_f64().unwrap() <= latency["p99_ms"].as_f64().unwrap());
    assert!(latency["p99_9_ms"].as_f64().unwrap() <= latency["max_ms"].as_f64().unwrap());
    let map = ours.as_object_mut().unwrap();
    for key in ADDED {
        assert!(map.remove(key).is_some(), "{name}: {key} is in the JSON");
    }
    assert_eq!(without_wall(ours), without_wall(recorded), "{name}: not the recorded index-bench JSON");
}

#[test]
fn the_ipl_btree_run_gives_the_recorded_json() {
    check("ipl", small(IndexKind::Ipl));
}

#[test]
fn a_btree_on_bast_gives_the_recorded_json() {
    let mut c = small(IndexKind::Btree);
    c.storage = Storage::Bast;
    c.log_block_count = Some(16);
    check("btree", c);
}

#[test]
fn bftl_on_fast_gives_the_recorded_json() {
    let mut c = small(IndexKind::Bftl);
    c.node_bytes = 2048;
    c.log_blocks_percent = 30.0;
    check("bftl", c);
}

#[test]
fn mutree_in_sequential_order_gives_the_recorded_json() {
    let mut c = small(IndexKind::MuTree);
    c.order = Order::Sequential;
    check("mutree", c);
}

#[test]
fn a_bad_config_is_an_error_naming_it() {
    let mut c = small(IndexKind::Ipl);
    c.device = "no-such-preset".into();
    let e = c.check().unwrap_err();
    assert!(e.contains("no-such-preset"), "{e}");
    let mut c = small(IndexKind::Ipl);
    c.inserts = 0;
    assert!(bench::run(&c, &mut |_| {}).unwrap_err().contains("inserts"));
}
