//! The `nolgn` journal: the engine without a log on NoLgn-FTL. Commits survive a
//! crash, uncommitted changes stolen to flash do not, an abort is the FTL's, grouped
//! transactions commit together, a full P2P table is an error an abort recovers from.

mod common;

use engine::db::BufferSize;
use engine::types::Value;
use engine::{Database, DbOptions, Error, JournalKind, QueryResult};
use flash::ftl::{self, FtlConfig, FtlKind};
use flash::FtlVolume;
use nand::Device;

const SCHEMA: &str = "CREATE REGION rg (IPA_MODE=none);
     CREATE TABLESPACE ts (REGION=rg);
     CREATE TABLE t (id INT PRIMARY KEY, v INT, pad CHAR(200)) TABLESPACE ts;";
const ROWS: i64 = 600;

fn options(frames: usize) -> DbOptions {
    DbOptions { journal: JournalKind::Nolgn, buffer: BufferSize::Pages(frames), ..DbOptions::default() }
}

fn volume(kind: FtlKind, p2p_entries: u32) -> FtlVolume {
    let config = FtlConfig { p2p_entries, ..FtlConfig::new(kind) };
    FtlVolume::format(ftl::format(common::device(), &config).unwrap(), vec![], 0).unwrap()
}

/// A database on NoLgn-FTL with `ROWS` rows of v = 0, committed.
fn loaded(frames: usize, p2p_entries: u32) -> Database {
    let mut db = Database::create_on(Box::new(volume(FtlKind::Nolgn, p2p_entries)), options(frames)).unwrap();
    assert_eq!(db.journal_kind(), JournalKind::Nolgn);
    assert!(db.page_device().region_id("log").is_none(), "no log region");
    db.execute(SCHEMA).unwrap();
    let t = db.table_id("t").unwrap();
    for batch in 0..ROWS / 100 {
        let tx = db.begin();
        for id in batch * 100..(batch + 1) * 100 {
            db.insert(&tx, t, &[Value::Int(id), Value::Int(0), Value::Text("p".repeat(200))]).unwrap();
        }
        db.commit(tx).unwrap();
    }
    db
}

fn reopen(device: Device, frames: usize) -> Database {
    let (ftl, done) = ftl::open(device, 0).unwrap();
    let (volume, done) = FtlVolume::open(ftl, done).unwrap();
    let mut db = Database::open_on(Box::new(volume), options(frames)).unwrap();
    db.set_now(done);
    db
}

fn values(db: &mut Database) -> Vec<i64> {
    match db.execute("SELECT v FROM t").unwrap().pop() {
        Some(QueryResult::Rows { rows, .. }) => {
            rows.iter().map(|r| if let Value::Int(v) = r[0] { v } else { panic!("{r:?}") }).collect()
        }
        other => panic!("{other:?}"),
    }
}

/// Adds `delta` to every row's v in one transaction, which is left open.
fn add_all(db: &mut Database, delta: i64) -> engine::Transaction {
    let t = db.table_id("t").unwrap();
    let tx = db.begin();
    for id in 0..ROWS {
        db.add(&tx, t, &[Value::Int(id)], 1, &Value::Int(delta)).unwrap();
    }
    tx
}

fn host_writes(db: &Database) -> u64 {
    db.page_device().ftl_counters().unwrap().host_writes
}

#[test]
fn commits_survive_a_crash_and_stolen_uncommitted_pages_do_not() {
    let mut db = loaded(16, 10_000);
    let tx = add_all(&mut db, 1);
    db.commit(tx).unwrap();
    let before = host_writes(&db);
    let open = add_all(&mut db, 10);
    assert!(host_writes(&db) > before, "a 16-frame pool steals pages of the open transaction");
    std::mem::forget(open);
    let mut db = reopen(db.crash(), 16);
    assert_eq!(values(&mut db), vec![1; ROWS as usize], "the committed state, without the open transaction");
    // The reopened database goes on committing.
    let tx = add_all(&mut db, 2);
    db.commit(tx).unwrap();
    let mut db = reopen(db.crash(), 16);
    assert_eq!(values(&mut db), vec![3; ROWS as usize]);
}

#[test]
fn an_abort_drops_the_ftl_transaction_and_the_buffered_changes() {
    let mut db = loaded(16, 10_000);
    let tx = add_all(&mut db, 5);
    let programs = db.page_device().ftl_counters().unwrap().flash_programs;
    db.abort(tx).unwrap();
    assert_eq!(
        db.page_device().ftl_counters().unwrap().flash_programs,
        programs,
        "nothing is undone page by page or written"
    );
    assert_eq!(values(&mut db), vec![0; ROWS as usize]);
    // An aborted insert that took new pages: the catalog forgets them too.
    let t = db.table_id("t").unwrap();
    let tx = db.begin();
    for id in ROWS..ROWS + 200 {
        db.insert(&tx, t, &[Value::Int(id), Value::Int(9), Value::Text("q".repeat(200))]).unwrap();
    }
    db.abort(tx).unwrap();
    let tx = db.begin();
    db.insert(&tx, t, &[Value::Int(ROWS), Value::Int(0), Value::Text(String::new())]).unwrap();
    db.commit(tx).unwrap();
    assert_eq!(values(&mut db), vec![0; ROWS as usize + 1]);
    let (device, _) = db.close_on().unwrap();
    let mut db = Database::open_on(device, options(16)).unwrap();
    assert_eq!(values(&mut db), vec![0; ROWS as usize + 1]);
}

/// One transaction writes at a time here too: a group holds one transaction's changes
/// (and statements outside transactions). Before, a second writer joined the group,
/// and an abort beside it undid byte ranges in memory: aborting an insert after
/// another transaction had inserted into the same page and committed lost the
/// committed rows.
#[test]
fn a_second_writer_is_refused_and_the_group_commits_with_the_writer() {
    let mut db = loaded(64, 10_000);
    let t = db.table_id("t").unwrap();
    let (a, b) = (db.begin(), db.begin());
    db.insert(&a, t, &[Value::Int(-1), Value::Int(5), Value::Text("a".into())]).unwrap();
    let err = db.insert(&b, t, &[Value::Int(ROWS), Value::Int(5), Value::Text("b".into())]).unwrap_err();
    assert!(matches!(err, Error::AnotherWriter { id, writer } if id == b.id() && writer == a.id()), "{err}");
    // The abort drops the group in the FTL; the reader beside it may write next.
    db.abort(a).unwrap();
    db.add(&b, t, &[Value::Int(2)], 1, &Value::Int(8)).unwrap();
    let number = db.commit(b).unwrap();
    assert!(db.durable_lsn() > number, "the writer's commit commits its group");
    let mut db = reopen(db.crash(), 64);
    let values = values(&mut db);
    assert_eq!((values.len() as i64, values[2]), (ROWS, 8));
}

#[test]
fn a_full_p2p_table_fails_the_operation_and_an_abort_recovers() {
    let mut db = loaded(8, 24);
    let t = db.table_id("t").unwrap();
    let tx = db.begin();
    let mut failed = None;
    for id in 0..ROWS {
        if let Err(e) = db.add(&tx, t, &[Value::Int(id)], 1, &Value::Int(1)) {
            failed = Some(e);
            break;
        }
    }
    let e = failed.expect("more pages than 24 P2P entries");
    assert!(e.to_string().contains("P2P table is full"), "{e}");
    db.abort(tx).unwrap();
    let tx = db.begin();
    db.add(&tx, t, &[Value::Int(0)], 1, &Value::Int(4)).unwrap();
    db.commit(tx).unwrap();
    let mut db = reopen(db.crash(), 8);
    let v = values(&mut db);
    assert_eq!((v[0], v[1..].iter().all(|&x| x == 0)), (4, true));
}

#[test]
fn devices_without_transactions_refuse_the_journal() {
    let e = Database::create(common::device(), options(64)).err().unwrap();
    assert!(e.to_string().contains("need NoLgn-FTL"), "{e}");
    let e = Database::create_on(Box::new(volume(FtlKind::Page, 10_000)), options(64)).err().unwrap();
    assert!(matches!(e, Error::Flash(flash::Error::NotTransactional { .. })), "{e}");
}

#[test]
fn runs_are_deterministic() {
    let run = || {
        let mut db = loaded(16, 10_000);
        let tx = add_all(&mut db, 3);
        db.abort(tx).unwrap();
        let tx = add_all(&mut db, 1);
        db.commit(tx).unwrap();
        (db.page_device().ftl_counters().unwrap(), db.now())
    };
    assert_eq!(run(), run());
}
