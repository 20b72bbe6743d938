//! A SQLite run on emulated flash reports the latency of its page I/O on the FTL over
//! the measured transactions only, and its transaction latency overall and per kind.

use workloads::sqlite::flash::FlashRunConfig;
use workloads::Control;

/// sqlite-bench on the FEMU preset cut small, with no clean pages kept and a small
/// write-back cache, so the measured transactions read from flash as well as write.
fn config() -> FlashRunConfig {
    let mut c = FlashRunConfig::default();
    let params = serde_json::json!({"num": 2_000, "value_size": 1_024, "batch": 10});
    c.workload.params = params.as_object().cloned().unwrap_or_default();
    c.device.blocks_per_chip = Some(64);
    c.clean_cache_pages = 0;
    c.page_cache_pages = 16;
    c
}

#[test]
fn page_io_latency_counts_the_measured_reads_and_writes_and_transaction_latency_every_kind() {
    let r = config().run(&mut |_, _| Control::Continue).expect("the run");
    let flash = r.flash.as_ref().expect("on flash");
    let (reads, writes) = (r.read_latency_us.expect("read latency"), r.write_latency_us.expect("write latency"));
    // The load's I/O is left out: the counts are the measured interval's host I/O.
    assert!(flash.counters.host_reads > 0 && flash.counters.host_writes > 0, "{:?}", flash.counters);
    assert_eq!(reads.count, flash.counters.host_reads);
    assert_eq!(writes.count, flash.counters.host_writes);
    for l in [reads, writes, r.transaction_latency_us] {
        assert!(l.p50 > 0.0 && l.p50 <= l.p99 && l.p99 <= l.max, "{l:?}");
    }
    assert_eq!(r.transaction_latency_us.count, r.transactions);
    let mean = r.transaction_latency_us_mean;
    assert!((mean - r.sim_seconds * 1e6 / r.transactions as f64).abs() <= mean * 1e-9, "mean {mean}");
    let per_kind: u64 = r.kinds.values().map(|k| k.transaction_latency_us.count).sum();
    assert_eq!(per_kind, r.transactions);
    let json = serde_json::to_value(&r).expect("JSON");
    assert!(json["read_latency_us"]["p99_9"].is_number() && json["transaction_latency_us_mean"].is_number());
    assert!(json.get("latency").is_none(), "one latency vocabulary");
}
