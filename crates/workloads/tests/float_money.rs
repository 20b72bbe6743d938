//! TPC-B and TPC-C with shore-kits's column types (`float_money`): money columns are
//! 8-byte floats, the runs keep their consistency conditions, and the default keeps
//! the DECIMAL and BIGINT columns.

use engine::db::{BufferSize, QueryResult};
use engine::types::Value;
use engine::{Database, DbOptions};
mod common;

use nand::{Device, MemoryStorage};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use workloads::driver::{self, Control, DriverConfig};
use workloads::params::WorkloadParams;
use workloads::tpcb::TpcbParams;
use workloads::tpcc::TpccParams;
use workloads::Workload;

/// `workload` loaded on a fresh 4-chip device, run for half a simulated second, checked.
fn run(workload: &mut dyn Workload, rng: &mut ChaCha8Rng) -> Database {
    let device = Device::new(Box::new(MemoryStorage::new(common::geometry(512, 64), true)));
    let mut db =
        Database::create(device, DbOptions { buffer: BufferSize::Pages(2048), ..DbOptions::default() }).unwrap();
    db.execute("CREATE REGION data (IPA_MODE=none); CREATE TABLESPACE ts (REGION=data);").unwrap();
    workload.load(&mut db, &|_| "ts".to_string(), rng).unwrap();
    let config = DriverConfig {
        switch: None,
        terminals: 4,
        warmup_s: 0.0,
        duration_s: 0.5,
        cpu_ns_per_operation: 10_000,
        progress_s: 0.0,
        max_transactions: None,
    };
    let metrics = driver::run(&mut db, workload, &config, rng, &mut |_| Control::Continue).unwrap();
    assert!(metrics.committed_transactions > 20, "{} transactions", metrics.committed_transactions);
    assert_eq!(workload.check(&mut db), Ok(()));
    db
}

/// The first row's values of `query`.
fn first_row(db: &mut Database, query: &str) -> Vec<Value> {
    match db.execute(query).unwrap().pop() {
        Some(QueryResult::Rows { mut rows, .. }) if !rows.is_empty() => rows.swap_remove(0),
        other => panic!("{query}: {other:?}"),
    }
}

#[test]
fn tpcc_with_float_money_keeps_its_consistency_and_stores_balances_as_floats() {
    for float_money in [false, true] {
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        let params = TpccParams { float_money, ..TpccParams::default() };
        let mut db = run(params.build(&mut rng).as_mut(), &mut rng);
        let row: Vec<Value> =
            ["SELECT w_ytd FROM warehouse", "SELECT c_balance FROM customer", "SELECT ol_amount FROM order_line"]
                .iter()
                .map(|q| first_row(&mut db, q).swap_remove(0))
                .collect();
        let floats: Vec<bool> = row.iter().map(|v| matches!(v, Value::Float(_))).collect();
        // The order line's amount stays a scaled integer (shore-kits: SQL_INT).
        assert_eq!(floats, [float_money, float_money, false], "float_money {float_money}: {row:?}");
    }
}

#[test]
fn tpcb_with_float_money_keeps_its_consistency_and_stores_balances_as_floats() {
    for float_money in [false, true] {
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        let params = TpcbParams { float_money, ..TpcbParams::default() };
        let mut db = run(params.build(&mut rng).as_mut(), &mut rng);
        let row: Vec<Value> =
            ["SELECT a_balance FROM account", "SELECT t_balance FROM teller", "SELECT b_balance FROM branch"]
                .iter()
                .map(|q| first_row(&mut db, q).swap_remove(0))
                .collect();
        assert!(row.iter().all(|v| matches!(v, Value::Float(_)) == float_money), "{float_money}: {row:?}");
    }
}

/// Unset, the parameter stays out of a config's serialisation (run keys stay as they were).
#[test]
fn float_money_unset_is_not_serialised() {
    assert!(!serde_json::to_string(&TpccParams::default()).unwrap().contains("float_money"));
    assert!(!serde_json::to_string(&TpcbParams::default()).unwrap().contains("float_money"));
    let set = TpcbParams { float_money: true, ..TpcbParams::default() };
    assert!(serde_json::to_string(&set).unwrap().contains("\"float_money\":true"));
}

/// The registry takes `float_money`, though its default stays out of the serialisation,
/// and still refuses an unknown name or a value of the wrong type.
#[test]
fn the_registry_takes_float_money_and_refuses_what_does_not_fit() {
    let params = |v: serde_json::Value| v.as_object().unwrap().clone();
    for name in ["tpcc", "tpcb"] {
        let w = workloads::registry::find(name).unwrap();
        let c = w.configure(&params(serde_json::json!({"float_money": true}))).unwrap();
        assert_eq!(c.params()["float_money"], serde_json::json!(true), "{name}");
        assert!(!w.defaults().contains_key("float_money"), "{name}: unset, not serialised");
        let e = w.configure(&params(serde_json::json!({"float_money": 3}))).unwrap_err().to_string();
        assert!(e.starts_with("workload.float_money: "), "{name}: {e}");
        let e = w.configure(&params(serde_json::json!({"floats": true}))).unwrap_err().to_string();
        assert!(e.contains("takes no parameter `floats`"), "{name}: {e}");
    }
}
