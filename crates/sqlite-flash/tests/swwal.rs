//! SQLite on SW-WAL: frame-aligned WAL on flash, checkpoints by remapping. Many
//! checkpoints, large blobs, a reader across a partial checkpoint, reopen after a clean
//! close and after dropping the device mid-run, power cuts during checkpoints (the
//! table checked row for row against the rounds whose COMMIT returned), and fewer
//! flash programs than the plain WAL for the same work.

use flash::ftl::{FtlConfig, FtlKind};
use nand::{Device, FaultyStorage, Geometry, MemoryStorage};
use rusqlite::params;
use sqlite_flash::{FlashSqlite, FlashSqliteOptions, Journal};
use std::collections::BTreeMap;

fn geometry() -> Geometry {
    let mut g = Geometry::paper_emulator();
    g.channels = 2;
    g.chips_per_channel = 1;
    g.blocks_per_chip = 64;
    g.pages_per_block = 32;
    g
}

fn create(device: Device, sw_wal: bool) -> FlashSqlite {
    let journal = if sw_wal { Journal::SwWal } else { Journal::Sqlite };
    let opts = FlashSqliteOptions { statement_cpu_ns: 5_000, seed: 7, journal, ..Default::default() };
    let db = FlashSqlite::create(device, &FtlConfig::new(FtlKind::Page), opts).expect("create");
    db.connection()
        .execute_batch("PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; PRAGMA wal_autocheckpoint=16")
        .unwrap();
    db
}

fn memory() -> Device {
    Device::new(Box::new(MemoryStorage::new(geometry(), true)))
}

fn check(db: &FlashSqlite) {
    let ok: String = db.connection().query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
    assert_eq!(ok, "ok");
}

fn value(i: i64, round: i64) -> Vec<u8> {
    (0..300 + (i * 37 % 700)).map(|j| (j * 13 + i * 7 + round) as u8).collect()
}

/// Rounds of updates over a small table, each round one transaction.
fn workload(db: &FlashSqlite, rounds: i64) {
    let c = db.connection();
    c.execute_batch("CREATE TABLE IF NOT EXISTS t(k INTEGER PRIMARY KEY, v BLOB)").unwrap();
    for round in 0..rounds {
        c.execute_batch("BEGIN").unwrap();
        for i in 0..40 {
            let k = (round * 17 + i * 5) % 150;
            c.execute("REPLACE INTO t VALUES (?1, ?2)", params![k, value(k, round)]).unwrap();
        }
        c.execute_batch("COMMIT").unwrap();
    }
}

fn table(db: &FlashSqlite) -> Vec<(i64, Vec<u8>)> {
    let c = db.connection();
    let mut s = c.prepare("SELECT k, v FROM t ORDER BY k").unwrap();
    s.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).unwrap().map(|r| r.unwrap()).collect()
}

#[test]
fn checkpoints_remap_and_the_database_reads_back_after_reopen() {
    let db = create(memory(), true);
    workload(&db, 60);
    let c = db.counters();
    assert!(c.ftl.remaps > 50, "checkpoints remapped pages: {c:?}");
    assert!(c.ftl.remap_records < c.ftl.remaps / 4, "one record serves many remaps: {c:?}");
    check(&db);
    let expected = table(&db);
    let device = db.close().unwrap();
    let db = FlashSqlite::open(device, 0).unwrap();
    assert_eq!(table(&db), expected);
    check(&db);
    // The device remembers SW-WAL: more work after reopen still remaps.
    let before = db.counters().ftl.remaps;
    db.connection().execute_batch("PRAGMA wal_autocheckpoint=16").unwrap();
    workload(&db, 20);
    assert!(db.counters().ftl.remaps > before);
    check(&db);
}

#[test]
fn sw_wal_programs_fewer_pages_than_the_plain_wal() {
    let programs = |sw_wal| {
        let db = create(memory(), sw_wal);
        workload(&db, 80);
        let programs = db.counters().ftl.flash_programs;
        check(&db);
        programs
    };
    let (plain, sw) = (programs(false), programs(true));
    assert!(sw * 10 < plain * 8, "SW-WAL {sw} programs vs plain WAL {plain}");
}

/// The host page cache keeps a checkpoint's database pages whether their write went to
/// flash as a program (plain WAL) or as a remap (SW-WAL): reading the table back after
/// many checkpoints costs no more flash reads under SW-WAL.
#[test]
fn remapped_database_pages_stay_cached_as_written_back_ones_do() {
    let reads = |sw_wal| {
        let db = create(memory(), sw_wal);
        // SQLite's own cache as small as it goes, so the scan reads through the file layer.
        db.connection().execute_batch("PRAGMA cache_size=1").unwrap();
        workload(&db, 60);
        let before = db.counters();
        assert_eq!(table(&db).len(), 150);
        let after = db.counters();
        (after.host_read_pages - before.host_read_pages, after.ftl.remaps)
    };
    let ((plain, _), (sw, remaps)) = (reads(false), reads(true));
    assert!(remaps > 50, "SW-WAL's checkpoints remapped: {remaps}");
    assert!(sw <= plain, "the scan read {sw} pages from flash under SW-WAL, {plain} under the plain WAL");
}

#[test]
fn large_blobs_and_a_reader_across_a_partial_checkpoint() {
    let db = create(memory(), true);
    let c = db.connection();
    c.execute_batch("PRAGMA wal_autocheckpoint=0; CREATE TABLE b(k INTEGER PRIMARY KEY, v BLOB)").unwrap();
    let blob = |k: i64| -> Vec<u8> { (0..30_000).map(|j| (j * 31 + k) as u8).collect() };
    for k in 0..6 {
        c.execute("INSERT INTO b VALUES (?1, ?2)", params![k, blob(k)]).unwrap();
    }
    // A reader holds a snapshot; the writer goes on; a checkpoint cannot pass the reader.
    let reader = db.open_connection().unwrap();
    reader.execute_batch("BEGIN").unwrap();
    let n: i64 = reader.query_row("SELECT count(*) FROM b", [], |r| r.get(0)).unwrap();
    assert_eq!(n, 6);
    for k in 6..10 {
        c.execute("INSERT INTO b VALUES (?1, ?2)", params![k, blob(k)]).unwrap();
    }
    let (_, log, done): (i64, i64, i64) =
        c.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))).unwrap();
    assert!(done < log, "partial: {done} of {log} frames");
    for k in 0..6 {
        let v: Vec<u8> = reader.query_row("SELECT v FROM b WHERE k = ?1", [k], |r| r.get(0)).unwrap();
        assert_eq!(v, blob(k));
    }
    let n: i64 = reader.query_row("SELECT count(*) FROM b", [], |r| r.get(0)).unwrap();
    assert_eq!(n, 6, "the reader's snapshot");
    reader.execute_batch("COMMIT").unwrap();
    drop(reader);
    c.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(())).unwrap();
    // SQLite syncs the database only when a checkpoint reaches the WAL's end; the
    // queued remaps of the partial one became durable with it.
    assert!(db.counters().ftl.remaps >= 40, "{:?}", db.counters());
    // Drop the device without closing (no final checkpoint) and reopen.
    let mut device = db.into_device();
    device.power_on();
    let db = FlashSqlite::open(device, 0).unwrap();
    for k in 0..10 {
        let v: Vec<u8> = db.connection().query_row("SELECT v FROM b WHERE k = ?1", [k], |r| r.get(0)).unwrap();
        assert_eq!(v, blob(k));
    }
    check(&db);
}

/// The table after the first `rounds` rounds of the cut test: `workload`'s rows and
/// the round marker (key 1000).
fn model(rounds: i64) -> BTreeMap<i64, Vec<u8>> {
    let mut rows = BTreeMap::new();
    for round in 0..rounds {
        for i in 0..40 {
            let k = (round * 17 + i * 5) % 150;
            rows.insert(k, value(k, round));
        }
        rows.insert(1000, value(1000, round));
    }
    rows
}

/// Power cuts spread over the run; after each, the table is, row for row, the model
/// after every round whose COMMIT returned (or after one more, when the cut came
/// inside that round's COMMIT). Cuts late in the run must have rounds to check.
#[test]
fn power_cuts_during_checkpoints_lose_no_commit() {
    // Cut points spread over the run, so some land in checkpoints and remap records.
    let total = {
        let db = create(memory(), true);
        workload(&db, 30);
        let d = db.device_counters();
        d.page_programs + d.copybacks + d.erases
    };
    let mut last_acknowledged = 0;
    for cut in (40..total).step_by((total / 25).max(1) as usize) {
        let storage = FaultyStorage::new(MemoryStorage::new(geometry(), true), Some(cut), cut);
        let db = create(Device::new(Box::new(storage)), true);
        let c = db.connection();
        let created = c.execute_batch("CREATE TABLE IF NOT EXISTS t(k INTEGER PRIMARY KEY, v BLOB)").is_ok();
        // Rounds whose COMMIT returned; whether the cut came inside the next one's COMMIT.
        let (mut acknowledged, mut in_commit) = (0, false);
        for round in 0..30i64 {
            let changes = || -> rusqlite::Result<()> {
                c.execute_batch("BEGIN")?;
                for i in 0..40 {
                    let k = (round * 17 + i * 5) % 150;
                    c.execute("REPLACE INTO t VALUES (?1, ?2)", params![k, value(k, round)])?;
                }
                c.execute("REPLACE INTO t VALUES (1000, ?1)", [value(1000, round)]).map(drop)
            };
            if !created || changes().is_err() {
                break;
            }
            if c.execute_batch("COMMIT").is_err() {
                in_commit = true;
                break;
            }
            acknowledged = round + 1;
        }
        assert!(
            acknowledged >= last_acknowledged,
            "cut {cut}: {acknowledged} rounds acknowledged, an earlier cut had more"
        );
        assert!(cut < total / 2 || acknowledged > 0, "cut {cut} of {total}: no round acknowledged");
        last_acknowledged = acknowledged;
        let mut device = db.into_device();
        device.power_on();
        let db = FlashSqlite::open(device, 0).unwrap_or_else(|e| panic!("cut {cut}: reopen: {e}"));
        check(&db);
        let exists: bool = db
            .connection()
            .query_row("SELECT count(*) FROM sqlite_master WHERE name = 't'", [], |r| r.get::<_, i64>(0))
            .unwrap()
            > 0;
        assert!(exists || !created, "cut {cut}: the table whose CREATE returned is gone");
        let found: BTreeMap<i64, Vec<u8>> = if exists { table(&db).into_iter().collect() } else { BTreeMap::new() };
        let expected = model(acknowledged);
        if found != expected && !(in_commit && found == model(acknowledged + 1)) {
            let differs = expected.iter().find(|(k, v)| found.get(k) != Some(v)).map(|(k, _)| *k);
            panic!(
                "cut {cut}: {} rounds acknowledged{}, the table holds {} rows, not the model's {} (first differing key {differs:?})",
                acknowledged,
                if in_commit { ", the next cut in its COMMIT" } else { "" },
                found.len(),
                expected.len()
            );
        }
    }
    assert!(last_acknowledged > 0, "no cut left a round to check");
}

/// The journal is chosen at create and kept by the device: reopening an SW-WAL device
/// for the nolgn journal, or a plain one for SW-WAL, is refused with a clear error, and
/// the plain options follow the device.
#[test]
fn reopening_checks_the_journal_against_the_device() {
    let opts = |journal| FlashSqliteOptions { journal, ..Default::default() };
    let sw = create(memory(), true).close().unwrap();
    let e = FlashSqlite::open_with(sw, 0, opts(Journal::Nolgn { group_pages: 10 })).err().unwrap().to_string();
    assert!(e.contains("runs SW-WAL"), "{e}");
    let plain = create(memory(), false).close().unwrap();
    let e = FlashSqlite::open_with(plain, 0, opts(Journal::SwWal)).err().unwrap().to_string();
    assert!(e.contains("created without SW-WAL"), "{e}");
    let db = FlashSqlite::open_with(create(memory(), true).close().unwrap(), 0, opts(Journal::Sqlite)).unwrap();
    db.connection().execute_batch("PRAGMA wal_autocheckpoint=16").unwrap();
    workload(&db, 30);
    assert!(db.counters().ftl.remaps > 0, "an SW-WAL device runs SW-WAL: {:?}", db.counters());
}
