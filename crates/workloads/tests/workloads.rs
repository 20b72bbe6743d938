//! Each workload keeps its consistency conditions through a short run, with IPA on and
//! off, and the same seed gives the same metrics.

use engine::db::BufferSize;
use engine::{Database, DbOptions};
mod common;

use nand::{Device, MemoryStorage};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use workloads::driver::{self, Control, DriverConfig};
use workloads::workload::TxOutcome;
use workloads::{Workload, WorkloadError};

/// A run of `terminals` terminals, 10 µs of CPU per operation, no progress lines and
/// no switch; tests override what they need.
fn driver_config(terminals: usize, warmup_s: f64, duration_s: f64) -> DriverConfig {
    DriverConfig {
        switch: None,
        terminals,
        warmup_s,
        duration_s,
        cpu_ns_per_operation: 10_000,
        progress_s: 0.0,
        max_transactions: None,
    }
}

fn device() -> Device {
    Device::new(Box::new(MemoryStorage::new(common::geometry(512, 64), true)))
}

fn run(workload: &mut dyn Workload, ipa: &str, seconds: f64) -> (driver::Metrics, Result<(), String>) {
    run_with_group_commit(workload, ipa, seconds, 0)
}

fn run_with_group_commit(
    workload: &mut dyn Workload,
    ipa: &str,
    seconds: f64,
    group_commit_ns: u64,
) -> (driver::Metrics, Result<(), String>) {
    let (mut db, metrics) = run_db(workload, ipa, seconds, group_commit_ns);
    let check = workload.check(&mut db);
    (metrics, check)
}

/// A fresh database with `buffer_pages` frames and a data region of IPA scheme `ipa`
/// (SLC mode; `0x0`: none), `workload` loaded into it, and the generator (seed 3) that
/// loaded it, for the run.
fn loaded(workload: &mut dyn Workload, ipa: &str, buffer_pages: usize) -> (Database, ChaCha8Rng) {
    let mut db =
        Database::create(device(), DbOptions { buffer: BufferSize::Pages(buffer_pages), ..DbOptions::default() })
            .unwrap();
    let region = if ipa == "0x0" { "IPA_MODE=none".to_string() } else { format!("IPA_MODE=slc, IPA={ipa}") };
    db.execute(&format!("CREATE REGION data ({region}); CREATE TABLESPACE ts (REGION=data);")).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    workload.load(&mut db, &|_| "ts".to_string(), &mut rng).unwrap();
    (db, rng)
}

/// Loads `workload` on a fresh database and runs it; returns the database and metrics.
fn run_db(workload: &mut dyn Workload, ipa: &str, seconds: f64, group_commit_ns: u64) -> (Database, driver::Metrics) {
    let (mut db, mut rng) = loaded(workload, ipa, 2048);
    db.set_buffer(BufferSize::Share(0.1)).unwrap();
    db.set_group_commit(group_commit_ns);
    let config = DriverConfig { progress_s: 0.5, ..driver_config(4, 0.2, seconds) };
    let metrics = driver::run(&mut db, workload, &config, &mut rng, &mut |_| Control::Continue).unwrap();
    (db, metrics)
}

/// Each consistency check can fail: after a run it passes, and after each change that
/// breaks one of its conditions it names that condition (the changes are ordered so the
/// newest breakage is the first the check meets: warehouses, then districts in key
/// order, each through conditions 2, 3 and 4).
#[test]
fn consistency_checks_catch_each_broken_condition() {
    let mut rng = ChaCha8Rng::seed_from_u64(9);
    let tpcc = workloads::tpcc::Tpcc::new(1, workloads::tpcc::Mix::STANDARD, &mut rng);
    type Breakages = &'static [(&'static str, &'static str)];
    let cases: [(Box<dyn Workload>, Breakages); 3] = [
        (
            Box::new(workloads::tpcb::Tpcb::new(1)),
            &[
                ("UPDATE account SET a_balance = a_balance + 1 WHERE a_id = 7", "account balances sum to"),
                (
                    "UPDATE account SET a_balance = a_balance - 1 WHERE a_id = 7;
                     UPDATE teller SET t_balance = t_balance + 1 WHERE t_id = 3",
                    "teller balances sum to",
                ),
                (
                    "UPDATE teller SET t_balance = t_balance - 1 WHERE t_id = 3;
                     UPDATE branch SET b_balance = b_balance + 1 WHERE b_id = 0",
                    "branch balances sum to",
                ),
            ],
        ),
        (
            Box::new(tpcc),
            &[
                // A new order beyond the district's last order.
                ("INSERT INTO new_order VALUES (99999, 4, 1)", "max(no_o_id) = Some(99999)"),
                (
                    "DELETE FROM order_line WHERE ol_w_id = 1 AND ol_d_id = 3 AND ol_o_id = 1 AND ol_number = 1",
                    "condition 4: district (1, 3)",
                ),
                (
                    "DELETE FROM new_order WHERE no_w_id = 1 AND no_d_id = 2 AND no_o_id = 2500",
                    "condition 3: district (1, 2)",
                ),
                (
                    "UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = 1 AND d_id = 1",
                    "condition 2: district (1, 1)",
                ),
                ("UPDATE warehouse SET w_ytd = w_ytd + 1 WHERE w_id = 1", "condition 1: warehouse 1"),
            ],
        ),
        (
            Box::new(workloads::tatp::Tatp::new(2_000)),
            &[
                // Two orphans: the one first in key order is named.
                (
                    "INSERT INTO call_forwarding VALUES (50, 9, 0, 8, '1');
                     INSERT INTO call_forwarding VALUES (40, 9, 16, 24, '2')",
                    "call_forwarding (40, 9, 16) has no special_facility",
                ),
                (
                    "DELETE FROM call_forwarding WHERE s_id = 50 AND sf_type = 9 AND start_time = 0;
                     DELETE FROM call_forwarding WHERE s_id = 40 AND sf_type = 9 AND start_time = 16;
                     INSERT INTO access_info VALUES (6, 5, 0, 0, 'abc', 'abcde');
                     INSERT INTO access_info VALUES (6, 6, 0, 0, 'abc', 'abcde');
                     INSERT INTO access_info VALUES (6, 7, 0, 0, 'abc', 'abcde');
                     INSERT INTO access_info VALUES (6, 8, 0, 0, 'abc', 'abcde')",
                    "access_info: a subscriber without 1 to 4 rows",
                ),
                (
                    "DELETE FROM access_info WHERE s_id = 6 AND ai_type BETWEEN 5 AND 8;
                     DELETE FROM access_info WHERE s_id = 5",
                    "access_info: a subscriber without 1 to 4 rows",
                ),
                ("DELETE FROM subscriber WHERE s_id = 5", "subscribers, loaded"),
            ],
        ),
    ];
    for (mut workload, breakages) in cases {
        let (mut db, _) = run_db(workload.as_mut(), "0x0", 0.3, 0);
        assert_eq!(workload.check(&mut db), Ok(()), "{}: before", workload.name());
        for (breakage, message) in breakages {
            db.execute(breakage).unwrap();
            let err = workload.check(&mut db).unwrap_err();
            assert!(err.contains(message), "{breakage}: {err}");
        }
    }
}

#[test]
fn tpcb_stays_consistent_and_is_deterministic() {
    for ipa in ["0x0", "2x4"] {
        let (m, check) = run(&mut workloads::tpcb::Tpcb::new(1), ipa, 2.0);
        assert_eq!(check, Ok(()), "{ipa}");
        assert!(m.committed_transactions > 100, "{ipa}: {} transactions", m.committed_transactions);
        assert_eq!(m.in_place_appends > 0, ipa != "0x0", "{ipa}: {} appends", m.in_place_appends);
        assert!(!m.intervals.is_empty());
    }
    let a = run(&mut workloads::tpcb::Tpcb::new(1), "2x4", 1.0).0;
    let b = run(&mut workloads::tpcb::Tpcb::new(1), "2x4", 1.0).0;
    assert_eq!(serde_json::to_string(&a).unwrap(), serde_json::to_string(&b).unwrap());
}

#[test]
fn group_commit_shares_log_pages_and_terminals_wait_for_their_group() {
    let (alone, check) = run(&mut workloads::tpcb::Tpcb::new(1), "2x4", 1.0);
    assert_eq!(check, Ok(()));
    let (grouped, check) = run_with_group_commit(&mut workloads::tpcb::Tpcb::new(1), "2x4", 1.0, 200_000);
    assert_eq!(check, Ok(()));
    let per_commit = |m: &driver::Metrics| m.log_page_writes as f64 / m.committed_transactions as f64;
    assert!(
        per_commit(&grouped) < 0.6 * per_commit(&alone),
        "log pages per commit: {} grouped, {} alone",
        per_commit(&grouped),
        per_commit(&alone)
    );
    // Closed loop: a terminal waits for its group's flush, so a commit costs at least
    // part of the window, and no terminal runs ahead of its commit being durable.
    let commits = grouped.time_per_transaction_ms.commits;
    assert!(commits > 0.05, "commit wait {commits} ms per transaction with a 0.2 ms window");
    let a = run_with_group_commit(&mut workloads::tpcb::Tpcb::new(1), "2x4", 0.5, 200_000).0;
    let b = run_with_group_commit(&mut workloads::tpcb::Tpcb::new(1), "2x4", 0.5, 200_000).0;
    assert_eq!(serde_json::to_string(&a).unwrap(), serde_json::to_string(&b).unwrap());
}

#[test]
fn tpcc_stays_consistent_with_ipa_on_and_off() {
    for ipa in ["0x0", "2x3"] {
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        let mut tpcc = workloads::tpcc::Tpcc::new(1, workloads::tpcc::Mix::STANDARD, &mut rng);
        let (m, check) = run(&mut tpcc, ipa, 1.0);
        assert_eq!(check, Ok(()), "{ipa}");
        assert!(m.committed_transactions > 20, "{ipa}: {} transactions", m.committed_transactions);
    }
}

/// A Delivery that finds no new order in any district still takes simulated time (one
/// probe per district): a run of Deliveries alone must not stop the clock once it has
/// delivered every order.
#[test]
fn tpcc_delivery_with_nothing_to_deliver_still_costs_its_probes() {
    let mut rng = ChaCha8Rng::seed_from_u64(9);
    let mut tpcc = workloads::tpcc::Tpcc::new(1, workloads::tpcc::Mix([0, 0, 0, 100, 0]), &mut rng);
    let mut db =
        Database::create(device(), DbOptions { buffer: BufferSize::Pages(2048), ..DbOptions::default() }).unwrap();
    db.execute("CREATE REGION data (IPA_MODE=none); CREATE TABLESPACE ts (REGION=data);").unwrap();
    tpcc.load(&mut db, &|_| "ts".to_string(), &mut rng).unwrap();
    let full = tpcc.transaction(&mut db, 0, &mut rng).unwrap();
    assert!(full.committed && full.operations > 10 * 6, "{full:?}");
    db.execute("DELETE FROM new_order").unwrap();
    let empty = tpcc.transaction(&mut db, 0, &mut rng).unwrap();
    assert!(empty.committed, "{empty:?}");
    assert_eq!(empty.operations, 10, "one probe per district");
}

/// A workload whose transactions take no simulated time would keep the driver looping
/// at one instant forever; the run stops with an error that says so.
#[test]
fn a_workload_that_does_no_work_stops_with_an_error_not_a_hang() {
    struct Idle;
    impl Workload for Idle {
        fn name(&self) -> &'static str {
            "idle"
        }
        fn load(
            &mut self,
            _: &mut Database,
            _: &dyn Fn(&str) -> String,
            _: &mut ChaCha8Rng,
        ) -> Result<(), WorkloadError> {
            Ok(())
        }
        fn transaction(&mut self, _: &mut Database, _: usize, _: &mut ChaCha8Rng) -> Result<TxOutcome, WorkloadError> {
            Ok(TxOutcome { committed: true, operations: 0, kind: "idle" })
        }
        fn check(&mut self, _: &mut Database) -> Result<(), String> {
            Ok(())
        }
        fn tables(&self) -> Vec<&'static str> {
            Vec::new()
        }
    }
    let mut db = Database::create(device(), DbOptions::default()).unwrap();
    let config = driver_config(2, 0.0, 1.0);
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let err = driver::run(&mut db, &mut Idle, &config, &mut rng, &mut |_| Control::Continue).unwrap_err();
    assert!(err.to_string().contains("started at the same simulated instant"), "{err}");
}

/// The stall guard counts transactions that start at one instant, not ones that take no
/// time themselves: with group commit and no CPU cost, TATP's transactions take none,
/// and the clock moves with the log flushes they wait for.
#[test]
fn zero_cost_transactions_under_group_commit_still_run_to_the_end() {
    let mut tatp = workloads::tatp::Tatp::new(1000);
    let (mut db, mut rng) = loaded(&mut tatp, "0x0", 4096);
    db.set_group_commit(1_000_000);
    let config = DriverConfig { cpu_ns_per_operation: 0, ..driver_config(8, 0.0, 5.0) };
    let m = driver::run(&mut db, &mut tatp, &config, &mut rng, &mut |_| Control::Continue).unwrap();
    assert!(
        m.sim_seconds >= 5.0 && m.committed_transactions > 100_000,
        "{} s, {}",
        m.sim_seconds,
        m.committed_transactions
    );
}

#[test]
fn tatp_stays_consistent_with_ipa_on_and_off() {
    for ipa in ["0x0", "2x4"] {
        let (m, check) = run(&mut workloads::tatp::Tatp::new(20_000), ipa, 1.0);
        assert_eq!(check, Ok(()), "{ipa}");
        assert!(m.committed_transactions > 1000, "{ipa}: {} transactions", m.committed_transactions);
    }
}

/// Transaction latency per type covers the measured transactions and nothing else:
/// TPC-C's five types each ran, their counts sum to the measurement's transactions (the
/// warm-up's are left out; without group commit each ends in the measurement), and each
/// type's percentiles are ordered. Under group commit a transaction's latency ends when
/// its group is durable: the per-type counts still sum to the overall count.
#[test]
fn latency_per_transaction_type_covers_the_measured_transactions() {
    let mut rng = ChaCha8Rng::seed_from_u64(9);
    let mut tpcc = workloads::tpcc::Tpcc::new(1, workloads::tpcc::Mix::STANDARD, &mut rng);
    let (m, check) = run(&mut tpcc, "0x0", 2.0);
    assert_eq!(check, Ok(()));
    let by_type = &m.transaction_latency_us_by_type;
    let kinds: Vec<&str> = by_type.keys().copied().collect();
    assert_eq!(kinds, ["delivery", "new_order", "order_status", "payment", "stock_level"]);
    for (kind, p) in by_type {
        assert!(p.count > 0 && 0.0 < p.p50 && p.p50 <= p.p99 && p.p99 <= p.max, "{kind}: {p:?}");
    }
    let counted = |m: &driver::Metrics| m.transaction_latency_us_by_type.values().map(|p| p.count).sum::<u64>();
    assert_eq!(counted(&m), m.transactions);
    assert_eq!(m.transaction_latency_us.count, m.transactions);
    let (grouped, check) = run_with_group_commit(&mut workloads::tpcb::Tpcb::new(1), "2x4", 0.5, 200_000);
    assert_eq!(check, Ok(()));
    assert_eq!(grouped.transaction_latency_us_by_type.keys().copied().collect::<Vec<_>>(), ["tpcb"]);
    assert_eq!(counted(&grouped), grouped.transaction_latency_us.count);
    assert!(grouped.transaction_latency_us.count > 0);
}

/// Percentiles from the histograms agree with the means from the counters: a median is
/// at most twice the mean (Markov's inequality, plus the histograms' 1 %), a page read
/// takes at least the flash read time, and the quantiles are ordered.
#[test]
fn latency_percentiles_agree_with_the_means() {
    let (m, check) = run(&mut workloads::tpcb::Tpcb::new(1), "2x4", 2.0);
    assert_eq!(check, Ok(()));
    let at_most_twice = |p50: f64, mean: f64, what: &str| assert!(p50 <= 2.02 * mean, "{what}: p50 {p50} mean {mean}");
    at_most_twice(m.read_latency_p50_ms, m.read_latency_ms, "reads");
    at_most_twice(m.write_latency_p50_ms, m.write_latency_ms, "writes");
    at_most_twice(m.transaction_latency_p50_ms, m.time_per_transaction_ms.response, "transactions");
    assert!(m.read_latency_p50_ms >= 0.01, "a page read takes tens of µs: p50 {} ms", m.read_latency_p50_ms);
    assert!(m.read_latency_p50_ms <= m.read_latency_p99_ms && m.write_latency_p50_ms <= m.write_latency_p99_ms);
    let t = [m.transaction_latency_p50_ms, m.transaction_latency_p95_ms, m.transaction_latency_p99_ms];
    assert!(t[0] > 0.0 && t[0] <= t[1] && t[1] <= t[2], "transaction p50/p95/p99 {t:?}");
    assert!(m.intervals.len() >= 3, "{} intervals", m.intervals.len());
    for line in &m.intervals {
        let at = line.sim_seconds;
        at_most_twice(line.read_latency_p50_ms, line.read_latency_ms, &format!("reads at {at} s"));
        at_most_twice(line.write_latency_p50_ms, line.write_latency_ms, &format!("writes at {at} s"));
        assert!(line.read_latency_p50_ms >= 0.01, "at {at} s: read p50 {} ms", line.read_latency_p50_ms);
        assert!(line.read_latency_p50_ms <= line.read_latency_p99_ms, "at {at} s");
        assert!(line.write_latency_p50_ms <= line.write_latency_p99_ms, "at {at} s");
        assert!(
            0.0 < line.transaction_latency_p50_ms && line.transaction_latency_p50_ms <= line.transaction_latency_p99_ms
        );
    }
}

/// The switch DDL's waits (its reads, and the checkpoint every DDL ends with) belong to
/// no transaction of the workload: the time breakdown leaves them out, and the run
/// reports how long the DDL took.
#[test]
fn the_switch_ddl_stays_out_of_the_time_per_transaction() {
    let run = |switch: Option<(f64, String)>| {
        let mut tpcb = workloads::tpcb::Tpcb::new(1);
        let (mut db, mut rng) = loaded(&mut tpcb, "0x0", 512);
        let config = DriverConfig { switch, ..driver_config(4, 0.1, 0.5) };
        driver::run(&mut db, &mut tpcb, &config, &mut rng, &mut |_| Control::Continue).unwrap()
    };
    let plain = run(None);
    let switched = run(Some((0.2, "CREATE INDEX account_branch ON account (a_b_id) TABLESPACE ts".into())));
    assert_eq!(plain.switch_ddl_seconds, None);
    assert!(switched.switch_ddl_seconds.is_some_and(|s| s > 0.0), "{:?}", switched.switch_ddl_seconds);
    // No transaction of either run waits for a checkpoint: the DDL's is left out.
    assert_eq!(plain.time_per_transaction_ms.checkpoints, 0.0);
    assert_eq!(switched.time_per_transaction_ms.checkpoints, 0.0);
}
