//! SQLite runs in threads of one process give the results they give alone: `reproduce
//! --jobs N` and sweeps run them side by side. SQLite built with
//! SQLITE_ENABLE_MEMORY_MANAGEMENT (libsqlite3-sys's default) keeps every connection's
//! page cache in one process-wide group that recycles any connection's pages, so a
//! run's reads from flash depended on what ran beside it; the workspace builds SQLite
//! without it (`.cargo/config.toml`, LIBSQLITE3_FLAGS).

use serde_json::{json, Value};
use workloads::driver::Control;
use workloads::sqlite::flash::FlashRunConfig;

/// sqlite-bench on NoLgn-FTL without the file layer's clean pages, so every page SQLite
/// drops from its cache is read again from flash.
fn config(value_size: u64) -> FlashRunConfig {
    serde_json::from_value(json!({
        "workload": {"name": "sqlite-bench", "ops": ["fillrandom", "overwrite"], "num": 1500,
            "value_size": value_size, "batch": 1},
        "journal": "nolgn", "group_pages": 1000, "ftl": "nolgn",
        "device": {"preset": "femu", "chips": 2, "blocks_per_chip": 64, "pages_per_block": 64},
        "synchronous": "normal", "free_space": null, "seed": 1, "cpu_ns_per_statement": 10000,
        "page_cache_pages": 16384, "clean_cache_pages": 0
    }))
    .expect("a run config")
}

/// The run's result without what depends on the machine.
fn result(config: &FlashRunConfig) -> Value {
    let mut v = serde_json::to_value(config.run(&mut |_, _| Control::Continue).expect("the run")).unwrap();
    fn strip(v: &mut Value) {
        match v {
            Value::Object(map) => {
                map.retain(|k, _| !k.contains("wall") && !k.contains("cpu_seconds"));
                map.values_mut().for_each(strip);
            }
            Value::Array(items) => items.iter_mut().for_each(strip),
            _ => {}
        }
    }
    strip(&mut v);
    v
}

#[test]
fn sqlite_runs_side_by_side_give_their_results_alone() {
    let (small, large) = (config(256), config(2048));
    let alone = (result(&small), result(&large));
    assert!(alone.0["flash"]["host_reads"].as_u64().is_some(), "{}", alone.0);
    for _ in 0..3 {
        let together = std::thread::scope(|s| {
            let a = s.spawn(|| result(&small));
            let b = s.spawn(|| result(&large));
            (a.join().unwrap(), b.join().unwrap())
        });
        assert_eq!(together.0, alone.0, "256 B beside 2 KiB");
        assert_eq!(together.1, alone.1, "2 KiB beside 256 B");
    }
}
