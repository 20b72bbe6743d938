//! SQLite through the flash VFS: create, reopen, WAL and checkpoints, blobs larger
//! than a flash page, VACUUM, several connections, determinism.

use flash::ftl::{FtlConfig, FtlKind};
use nand::{Device, Geometry, MemoryStorage};
use rusqlite::params;
use sqlite_flash::{FlashSqlite, FlashSqliteOptions};

fn small_geometry() -> Geometry {
    let mut g = Geometry::paper_emulator();
    g.channels = 2;
    g.chips_per_channel = 1;
    g.blocks_per_chip = 64;
    g.pages_per_block = 32;
    g
}

fn device() -> Device {
    Device::new(Box::new(MemoryStorage::new(small_geometry(), true)))
}

fn create(kind: FtlKind) -> FlashSqlite {
    let opts = FlashSqliteOptions { statement_cpu_ns: 5_000, seed: 7, ..Default::default() };
    // Few log blocks: the hybrid FTLs then fit this small device.
    let config = FtlConfig { log_blocks: 8, ..FtlConfig::new(kind) };
    FlashSqlite::create(device(), &config, opts).expect("create")
}

fn count(db: &FlashSqlite, sql: &str) -> i64 {
    db.connection().query_row(sql, [], |r| r.get(0)).expect(sql)
}

#[test]
fn a_database_survives_close_and_reopen() {
    let db = create(FtlKind::Page);
    let c = db.connection();
    c.execute_batch("CREATE TABLE t(k INTEGER PRIMARY KEY, v TEXT); BEGIN;").unwrap();
    for i in 0..500 {
        c.execute("INSERT INTO t VALUES (?1, ?2)", params![i, format!("value {i}")]).unwrap();
    }
    c.execute_batch("COMMIT").unwrap();
    let before = db.counters();
    assert!(before.host_write_pages > 0 && before.syncs > 0 && before.ftl.flash_programs > 0);
    assert!(db.now() > 0);
    let device = db.close().unwrap();
    let db = FlashSqlite::open(device, 0).unwrap();
    assert_eq!(count(&db, "SELECT count(*) FROM t"), 500);
    assert_eq!(db.connection().query_row("PRAGMA integrity_check", [], |r| r.get::<_, String>(0)).unwrap(), "ok");
}

#[test]
fn wal_mode_checkpoints_into_the_database() {
    let db = create(FtlKind::Page);
    let c = db.connection();
    let mode: String = c.query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0)).unwrap();
    assert_eq!(mode, "wal");
    c.execute_batch("PRAGMA synchronous=FULL; CREATE TABLE t(k INTEGER PRIMARY KEY, v BLOB)").unwrap();
    for i in 0..200 {
        c.execute("INSERT INTO t VALUES (?1, zeroblob(300))", params![i]).unwrap();
    }
    let (files, _) = db.files();
    let wal = files.iter().find(|(n, _)| n == "main.db-wal").map(|f| f.1).unwrap_or(0);
    assert!(wal > 0, "the WAL holds frames: {files:?}");
    let (busy, log, done): (i64, i64, i64) =
        c.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))).unwrap();
    assert_eq!((busy, log, done), (0, 0, 0));
    let (files, _) = db.files();
    assert_eq!(files.iter().find(|(n, _)| n == "main.db-wal").map(|f| f.1), Some(0), "{files:?}");
    // A second connection sees the data through the shared WAL index.
    let other = db.open_connection().unwrap();
    c.execute("INSERT INTO t VALUES (1000, x'01')", []).unwrap();
    assert_eq!(other.query_row("SELECT count(*) FROM t", [], |r| r.get::<_, i64>(0)).unwrap(), 201);
    drop(other);
    let device = db.close().unwrap();
    let db = FlashSqlite::open(device, 0).unwrap();
    assert_eq!(count(&db, "SELECT count(*) FROM t"), 201);
}

#[test]
fn blobs_larger_than_a_flash_page_and_vacuum() {
    for kind in [FtlKind::Page, FtlKind::Dftl, FtlKind::Fast] {
        let db = create(kind);
        let c = db.connection();
        c.execute_batch("CREATE TABLE b(k INTEGER PRIMARY KEY, v BLOB)").unwrap();
        let blob: Vec<u8> = (0..20_000u32).map(|i| (i * 7 % 251) as u8).collect();
        for i in 0..20 {
            c.execute("INSERT INTO b VALUES (?1, ?2)", params![i, blob]).unwrap();
        }
        c.execute("DELETE FROM b WHERE k % 2 = 0", []).unwrap();
        let pages_before = count(&db, "PRAGMA page_count");
        c.execute_batch("VACUUM").unwrap();
        let pages_after = count(&db, "PRAGMA page_count");
        assert!(pages_after < pages_before, "{kind:?}: VACUUM shrank {pages_before} -> {pages_after}");
        let device = db.close().unwrap();
        let db = FlashSqlite::open(device, 0).unwrap();
        let back: Vec<u8> = db.connection().query_row("SELECT v FROM b WHERE k = 7", [], |r| r.get(0)).unwrap();
        assert_eq!(back, blob, "{kind:?}");
        assert_eq!(count(&db, "SELECT count(*) FROM b"), 10);
    }
}

#[test]
fn two_connections_take_turns_writing() {
    let db = create(FtlKind::Page);
    let c = db.connection();
    c.execute_batch("CREATE TABLE t(k INTEGER PRIMARY KEY)").unwrap();
    let other = db.open_connection().unwrap();
    c.execute_batch("BEGIN IMMEDIATE; INSERT INTO t VALUES (1)").unwrap();
    let blocked = other.execute("INSERT INTO t VALUES (2)", []);
    assert!(blocked.is_err(), "a second writer waits for the first");
    c.execute_batch("COMMIT").unwrap();
    other.execute("INSERT INTO t VALUES (2)", []).unwrap();
    assert_eq!(count(&db, "SELECT count(*) FROM t"), 2);
}

fn run_fixed_workload() -> (sqlite_flash::SqliteFlashCounters, u64) {
    let db = create(FtlKind::Page);
    let c = db.connection();
    c.execute_batch("PRAGMA journal_mode=WAL; CREATE TABLE t(k INTEGER PRIMARY KEY, v BLOB)").unwrap();
    for i in 0..300 {
        c.execute("REPLACE INTO t VALUES (?1, randomblob(500))", params![i % 97]).unwrap();
        db.charge_cpu_ns(1_000);
    }
    (db.counters(), db.now())
}

#[test]
fn the_same_run_gives_the_same_counters_and_time() {
    let (a, t_a) = run_fixed_workload();
    let (b, t_b) = run_fixed_workload();
    assert_eq!(a, b);
    assert_eq!(t_a, t_b);
    assert!(a.statements >= 300);
}

#[test]
fn aging_leaves_the_free_share_and_sqlite_works_in_it() {
    use rand::SeedableRng;
    let db = create(FtlKind::Page);
    let free_before = db.files().1;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
    let pages = db.age(0.5, &mut rng).unwrap();
    assert_eq!(pages, free_before / 2);
    let (files, free_after) = db.files();
    let aging = (sqlite_flash::AGING_FILE.to_string(), pages * small_geometry().page_bytes as u64);
    assert!(files.contains(&aging), "{files:?}");
    assert_eq!(free_after, free_before - pages, "the aging file takes exactly its pages");
    let c = db.counters();
    assert!(c.host_write_pages >= pages + free_before, "written once, then one overwrite per logical page: {c:?}");
    assert!(c.ftl.gc_erases > 0, "random overwrites of half the device make GC work: {c:?}");
    let conn = db.connection();
    conn.execute_batch("PRAGMA journal_mode=WAL; CREATE TABLE t(k INTEGER PRIMARY KEY, v BLOB)").unwrap();
    for i in 0..100 {
        conn.execute("INSERT INTO t VALUES (?1, zeroblob(3000))", params![i]).unwrap();
    }
    assert_eq!(count(&db, "SELECT count(*) FROM t"), 100);
}
