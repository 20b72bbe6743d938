//! SQLite with no log on NoLgn-FTL (`Journal::Nolgn`): the journal stays off whatever
//! SQLite is asked, commits are FTL transactions, NORMAL groups them, a rollback never
//! reaches flash, and an FTL without transactions is refused.

use flash::ftl::{FtlConfig, FtlKind};
use nand::{Device, Geometry, MemoryStorage};
use rusqlite::params;
use sqlite_flash::{Error, FlashSqlite, FlashSqliteOptions, Journal};

fn device() -> Device {
    let mut g = Geometry::paper_emulator();
    g.channels = 2;
    g.chips_per_channel = 1;
    g.blocks_per_chip = 64;
    g.pages_per_block = 32;
    Device::new(Box::new(MemoryStorage::new(g, true)))
}

fn options(group_pages: u32) -> FlashSqliteOptions {
    FlashSqliteOptions { journal: Journal::Nolgn { group_pages }, ..Default::default() }
}

fn create(group_pages: u32) -> FlashSqlite {
    FlashSqlite::create(device(), &FtlConfig::new(FtlKind::Nolgn), options(group_pages)).expect("create")
}

fn count(db: &FlashSqlite) -> i64 {
    db.connection().query_row("SELECT count(*) FROM t", [], |r| r.get(0)).unwrap()
}

fn integrity(db: &FlashSqlite) -> String {
    db.connection().query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap()
}

/// Power goes away without a clean close; the FTL rebuilds by scan.
fn crash_and_reopen(db: FlashSqlite, group_pages: u32) -> FlashSqlite {
    let mut device = db.into_device();
    device.power_on();
    FlashSqlite::open_with(device, 0, options(group_pages)).expect("reopen")
}

/// Row `k`'s value: 500 bytes that differ from every other row's.
fn value(k: i64) -> Vec<u8> {
    (0..500).map(|j| (j * 7 + k * 13 + k / 256) as u8).collect()
}

fn insert(db: &FlashSqlite, from: i64, rows: i64) {
    for i in from..from + rows {
        db.connection().execute("INSERT INTO t VALUES (?1, ?2)", params![i, value(i)]).unwrap();
    }
}

/// The table row for row.
fn rows(db: &FlashSqlite) -> Vec<(i64, Vec<u8>)> {
    let c = db.connection();
    let mut s = c.prepare("SELECT k, v FROM t ORDER BY k").unwrap();
    s.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).unwrap().map(|r| r.unwrap()).collect()
}

/// The model: rows `0..n`, each inserted with its value.
fn model(n: i64) -> Vec<(i64, Vec<u8>)> {
    (0..n).map(|k| (k, value(k))).collect()
}

#[test]
fn the_journal_stays_off_and_commits_survive_a_crash() {
    let db = create(1_000);
    let c = db.connection();
    let mode: String = c.query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0)).unwrap();
    assert_eq!(mode, "off");
    c.execute_batch("PRAGMA synchronous=FULL; CREATE TABLE t(k INTEGER PRIMARY KEY, v BLOB)").unwrap();
    insert(&db, 0, 300);
    assert_eq!(db.files().0.iter().map(|(name, _)| name.as_str()).collect::<Vec<_>>(), ["main.db"]);
    let k = db.counters();
    assert!(k.ftl.host_writes > 300 && k.ftl.gc_lock_migrations == 0, "{k:?}");
    let db = crash_and_reopen(db, 1_000);
    assert!(rows(&db) == model(300), "every commit returned at FULL survives, row for row");
    assert_eq!(integrity(&db), "ok");
}

/// NORMAL: a commit point writes the held pages as one FTL transaction once 50 page
/// writes are held. The caller sees a group commit as the FTL writes an insert makes;
/// after a crash the table is exactly the rows up to the last of them, row for row.
#[test]
fn normal_groups_commits_into_one_ftl_transaction() {
    let db = create(50);
    db.connection().execute_batch("PRAGMA synchronous=NORMAL; CREATE TABLE t(k INTEGER PRIMARY KEY, v BLOB)").unwrap();
    let before = db.counters().ftl.host_writes;
    // An FTL commit waits for 50 held page writes: ten small inserts stay in RAM.
    insert(&db, 0, 10);
    assert_eq!(db.counters().ftl.host_writes, before, "held until the group fills");
    // Rows committed at each group commit: the inserts after which the FTL was written.
    let mut boundaries = Vec::new();
    for k in 10..210 {
        let writes = db.counters().ftl.host_writes;
        insert(&db, k, 1);
        if db.counters().ftl.host_writes > writes {
            boundaries.push(k + 1);
        }
    }
    let last = *boundaries.last().expect("200 inserts fill a group");
    assert!(boundaries.len() >= 2 && last < 210, "groups end after rows {boundaries:?} of 210");
    let db = crash_and_reopen(db, 50);
    assert_eq!(integrity(&db), "ok");
    // A group is all or nothing: the survivors are the rows of every committed group
    // and none of the open one (NORMAL promises no more).
    let survivors = rows(&db);
    assert!(
        survivors == model(last),
        "{} rows survived ({:?}..), expected rows 0..{last}: the groups end after rows {boundaries:?}",
        survivors.len(),
        survivors.first().map(|r| r.0)
    );
}

#[test]
fn a_rollback_never_reaches_flash() {
    let db = create(1_000);
    let c = db.connection();
    c.execute_batch("CREATE TABLE t(k INTEGER PRIMARY KEY, v BLOB)").unwrap();
    let before = db.counters().ftl;
    c.execute_batch("BEGIN").unwrap();
    insert(&db, 0, 100);
    c.execute_batch("ROLLBACK").unwrap();
    assert_eq!(db.counters().ftl.host_writes, before.host_writes);
    assert_eq!(count(&db), 0);
    insert(&db, 5, 1);
    let db = crash_and_reopen(db, 1_000);
    assert_eq!(count(&db), 1);
}

#[test]
fn an_ftl_without_transactions_is_refused() {
    let refused = FlashSqlite::create(device(), &FtlConfig::new(FtlKind::Page), options(1_000));
    assert!(matches!(refused, Err(Error::Flash(flash::Error::NotTransactional { .. }))));
}
