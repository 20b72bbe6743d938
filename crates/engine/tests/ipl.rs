//! The engine on an In-Page Logging store: a page on flash is written as the log
//! records of its updates (one per operation while it was buffered), as IPL's buffer
//! manager writes its in-memory log sectors, and reads back whole.

mod common;

use engine::types::Value;
use engine::{Database, DbOptions, QueryResult};
use flash::{IplConfig, IplStore};

fn rows(db: &mut Database, sql: &str) -> Vec<Vec<Value>> {
    match db.execute(sql).unwrap().pop() {
        Some(QueryResult::Rows { rows, .. }) => rows,
        other => panic!("{sql}: {other:?}"),
    }
}

/// 4 KiB DB pages (the engine's default) on the test device's 4 KiB flash pages, an
/// 8 KiB log region of 512 B sectors per 32-page unit; `update_records` as given.
fn ipl_db(update_records: bool) -> Database {
    let config = IplConfig { db_page_bytes: 4096, update_records, ..IplConfig::default() };
    let store = IplStore::format(common::device(), config, Vec::new()).unwrap();
    let mut db = Database::create_on(Box::new(store), DbOptions::default()).unwrap();
    db.execute(
        "CREATE REGION rg (MAX_CHIPS=2);
         CREATE TABLESPACE ts (REGION=rg);
         CREATE TABLE t (id INT PRIMARY KEY, v INT) TABLESPACE ts;",
    )
    .unwrap();
    db
}

const UPDATES: u64 = 200;

/// Updates row 1 `UPDATES` times between two checkpoints (one write of its page); the
/// IPL counters of the write.
fn updated_between_checkpoints(db: &mut Database) -> flash::IplCounters {
    db.execute("INSERT INTO t VALUES (1, 0), (2, 0)").unwrap();
    db.checkpoint().unwrap();
    let rg = db.page_device().region_id("rg").unwrap();
    let before = db.page_device().ipl_region_counters(rg).unwrap();
    for i in 1..=UPDATES {
        db.execute(&format!("UPDATE t SET v = {i} WHERE id = 1")).unwrap();
    }
    db.checkpoint().unwrap();
    db.page_device().ipl_region_counters(rg).unwrap().since(&before)
}

#[test]
fn every_update_of_a_buffered_page_is_a_log_record_of_its_write() {
    let mut db = ipl_db(true);
    // One write of the table's page: the net change is one value and the page LSN,
    // but IPL logged every update in the page's in-memory log sectors.
    let c = updated_between_checkpoints(&mut db);
    assert!(c.log_records >= UPDATES, "a record per update: {c:?}");
    // A record is at least its 7-byte header and a changed byte: 200 of them fill
    // more than two 488-byte sector payloads.
    assert!(c.log_sector_writes + c.merges >= 3, "full in-memory sectors are written: {c:?}");
    assert_eq!(rows(&mut db, "SELECT v FROM t WHERE id = 1"), vec![vec![Value::Int(UPDATES as i64)]]);

    let (device, _) = db.close_on().unwrap();
    let mut db = Database::open_on(device, DbOptions::default()).unwrap();
    assert_eq!(rows(&mut db, "SELECT v FROM t WHERE id = 1"), vec![vec![Value::Int(UPDATES as i64)]]);
    assert_eq!(rows(&mut db, "SELECT v FROM t WHERE id = 2"), vec![vec![Value::Int(0)]]);
}

#[test]
fn without_update_records_a_write_logs_the_net_change() {
    let mut db = ipl_db(false);
    let c = updated_between_checkpoints(&mut db);
    assert!(c.log_records <= 4 && c.log_sector_writes == 1, "the value's and the LSN's runs: {c:?}");
    let (device, _) = db.close_on().unwrap();
    let mut db = Database::open_on(device, DbOptions::default()).unwrap();
    assert_eq!(rows(&mut db, "SELECT v FROM t WHERE id = 1"), vec![vec![Value::Int(UPDATES as i64)]]);
}

#[test]
fn a_page_whose_updates_are_rolled_back_reads_as_before() {
    let mut db = ipl_db(true);
    db.execute("INSERT INTO t VALUES (1, 5)").unwrap();
    db.checkpoint().unwrap();
    db.execute("BEGIN").unwrap();
    for i in 0..20 {
        db.execute(&format!("UPDATE t SET v = {i} WHERE id = 1")).unwrap();
    }
    db.execute("ROLLBACK").unwrap();
    db.execute("UPDATE t SET v = v + 1 WHERE id = 1").unwrap();
    db.checkpoint().unwrap();
    let (device, _) = db.close_on().unwrap();
    let mut db = Database::open_on(device, DbOptions::default()).unwrap();
    assert_eq!(rows(&mut db, "SELECT v FROM t WHERE id = 1"), vec![vec![Value::Int(6)]]);
}
