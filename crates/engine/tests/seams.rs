//! The storage and journal seams: a database on an FTL volume (appends refused, pages
//! written out of place), the `none` journal, and the rules `Transaction` enforces.

mod common;
#[path = "../../flash/tests/support/mem_ftl.rs"]
mod mem_ftl;

use engine::types::Value;
use engine::{Database, DbOptions, Error, JournalKind, QueryResult};
use flash::FtlVolume;
use mem_ftl::MemFtl;

fn rows(db: &mut Database, sql: &str) -> Vec<Vec<Value>> {
    match db.execute(sql).unwrap().pop() {
        Some(QueryResult::Rows { rows, .. }) => rows,
        other => panic!("{sql}: {other:?}"),
    }
}

const SCHEMA: &str = "CREATE REGION rg (IPA_MODE=SLC, IPA=2x4);
     CREATE TABLESPACE ts (REGION=rg);
     CREATE TABLE t (id INT PRIMARY KEY, v INT) TABLESPACE ts;";

#[test]
fn on_an_ftl_volume_refused_appends_go_out_of_place() {
    let volume = FtlVolume::format(Box::new(MemFtl::new(common::device(), 4096)), vec![], 0).unwrap();
    let mut db = Database::create_on(Box::new(volume), DbOptions::default()).unwrap();
    let dev = db.page_device();
    let names: Vec<&str> = dev.region_ids().map(|r| dev.region_name(r)).collect();
    assert_eq!(names, ["system", "log"]);
    db.execute(SCHEMA).unwrap();
    db.execute("INSERT INTO t VALUES (1, 10), (2, 20), (3, 30)").unwrap();
    db.checkpoint().unwrap();
    for round in 1..=3 {
        // One small change per page: IPA would append it; the FTL refuses.
        db.execute(&format!("UPDATE t SET v = v + {round} WHERE id = 2")).unwrap();
        db.checkpoint().unwrap();
    }
    let t = db.object_stats().into_iter().find(|s| s.name == "t").unwrap().counters;
    assert_eq!((t.in_place_appends, t.delta_refusals), (0, 3), "{t:?}");
    assert_eq!(t.out_of_place_writes, 1 + 3, "the first write and one per refused append");
    let rg = db.page_device().region_id("rg").unwrap();
    assert_eq!(db.page_device().counters(rg).host_write_deltas, 0);
    assert_eq!(rows(&mut db, "SELECT v FROM t WHERE id = 2"), vec![vec![Value::Int(26)]]);

    // The catalog and the regions come back from the volume.
    let (device, _) = db.close_on().unwrap();
    let mut db = Database::open_on(device, DbOptions::default()).unwrap();
    assert_eq!(rows(&mut db, "SELECT v FROM t WHERE id = 2"), vec![vec![Value::Int(26)]]);
}

#[test]
fn the_none_journal_makes_a_commit_durable_without_a_log() {
    let options = DbOptions { journal: JournalKind::None, ..DbOptions::default() };
    let mut db = Database::create(common::device(), options.clone()).unwrap();
    assert!(db.page_device().region_id("log").is_none(), "no log region");
    db.execute(SCHEMA).unwrap();
    let t = db.table_id("t").unwrap();
    let tx = db.begin();
    for id in 0..200 {
        db.insert(&tx, t, &[Value::Int(id), Value::Int(id * 2)]).unwrap();
    }
    assert_eq!(db.commit(tx).unwrap(), 0, "no commit record");
    let tx = db.begin();
    db.update(&tx, t, &[Value::Int(7)], &[(1, Value::Int(-7))]).unwrap();
    db.abort(tx).unwrap();
    assert_eq!(db.journal_kind(), JournalKind::None);
    assert_eq!(db.log_counters(), None);

    // A crash without close: what the commit wrote is there, the aborted change is not.
    let mut device = db.crash();
    device.power_on();
    let mut db = Database::open(device, options).unwrap();
    assert_eq!(db.journal_kind(), JournalKind::None);
    let tx = db.begin();
    assert_eq!(db.scan(&tx, t, &[], &[]).unwrap().len(), 200);
    assert_eq!(db.get(&tx, t, &[Value::Int(7)]).unwrap(), Some(vec![Value::Int(7), Value::Int(14)]));
    assert_eq!(db.get(&tx, t, &[Value::Int(199)]).unwrap(), Some(vec![Value::Int(199), Value::Int(398)]));
    db.commit(tx).unwrap();
}

#[test]
fn a_dropped_transaction_is_rolled_back() {
    for journal in [JournalKind::Aries, JournalKind::None] {
        let mut db = Database::create(common::device(), DbOptions { journal, ..DbOptions::default() }).unwrap();
        db.execute(SCHEMA).unwrap();
        db.execute("INSERT INTO t VALUES (1, 10)").unwrap();
        let t = db.table_id("t").unwrap();
        {
            let tx = db.begin();
            db.insert(&tx, t, &[Value::Int(2), Value::Int(20)]).unwrap();
            db.update(&tx, t, &[Value::Int(1)], &[(1, Value::Int(11))]).unwrap();
        } // dropped, neither committed nor aborted
        let tx = db.begin();
        assert_eq!(db.get(&tx, t, &[Value::Int(2)]).unwrap(), None, "{journal:?}");
        assert_eq!(db.get(&tx, t, &[Value::Int(1)]).unwrap(), Some(vec![Value::Int(1), Value::Int(10)]));
        db.commit(tx).unwrap();
        // Also across a restart with the log: the dropped transaction left nothing.
        let mut db = Database::open(db.close().unwrap(), DbOptions::default()).unwrap();
        assert_eq!(rows(&mut db, "SELECT v FROM t"), vec![vec![Value::Int(10)]], "{journal:?}");
    }
}

#[test]
fn a_transaction_is_accepted_only_by_its_own_database() {
    let mut a = Database::create(common::device(), DbOptions::default()).unwrap();
    let mut b = Database::create(common::device(), DbOptions::default()).unwrap();
    for db in [&mut a, &mut b] {
        db.execute(SCHEMA).unwrap();
    }
    let t = a.table_id("t").unwrap();
    let tx = a.begin();
    let id = tx.id();
    let err = b.insert(&tx, t, &[Value::Int(1), Value::Int(1)]).unwrap_err();
    assert!(matches!(err, Error::UnknownTransaction { id: got } if got == id), "{err}");
    let err = b.commit(tx).unwrap_err();
    assert!(matches!(err, Error::UnknownTransaction { .. }), "{err}");
    // Refused by `b`, the transaction was dropped open: `a` rolls it back, and it is
    // no longer open there.
    let tx = a.begin();
    assert_eq!(a.scan(&tx, t, &[], &[]).unwrap().len(), 0);
    a.commit(tx).unwrap();
    // COMMIT with none open is an error too.
    assert!(matches!(a.execute("COMMIT"), Err(Error::Invalid(_))));
}
