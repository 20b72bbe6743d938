//! Durability without power cuts: commits survive a crash, rollbacks and unfinished
//! transactions do not; a corrupt log tail is cut off by its checksum; a corrupt page is
//! reported, never returned; the log wraps around its region.

mod common;

use engine::db::BufferSize;
use engine::types::Value;
use engine::{Database, DbOptions, Error};
use flash::RegionId;
use nand::{Device, MemoryStorage};

const SCHEMA: &str = "
CREATE REGION r (IPA_MODE=SLC, IPA=2x4, V=6, MAX_CHIPS=2);
CREATE TABLESPACE ts (REGION=r, EXTENT SIZE 16K);
CREATE TABLE kv (k INT PRIMARY KEY, v BIGINT NOT NULL) TABLESPACE ts;
";

fn options() -> DbOptions {
    DbOptions { buffer: BufferSize::Pages(12), ..DbOptions::default() }
}

fn value(db: &mut Database, k: i64) -> Option<i64> {
    let t = db.table_id("kv").unwrap();
    let tx = db.begin();
    let row = db.get(&tx, t, &[Value::Int(k)]).unwrap();
    db.commit(tx).unwrap();
    row.map(|r| match r[1] {
        Value::Int(v) => v,
        _ => panic!(),
    })
}

fn put(db: &mut Database, k: i64, v: i64) -> engine::db::Transaction {
    let t = db.table_id("kv").unwrap();
    let tx = db.begin();
    if db.update(&tx, t, &[Value::Int(k)], &[(1, Value::Int(v))]).unwrap() {
        return tx;
    }
    db.insert(&tx, t, &[Value::Int(k), Value::Int(v)]).unwrap();
    tx
}

#[test]
fn commits_survive_a_crash_and_the_rest_does_not() {
    let mut db = Database::create(common::device(), options()).unwrap();
    db.execute(SCHEMA).unwrap();
    for k in 0..400 {
        let tx = put(&mut db, k, k * 10);
        db.commit(tx).unwrap();
    }
    let tx = put(&mut db, 5, -1);
    db.abort(tx).unwrap();
    // One transaction writes at a time: the unfinished one also inserts a row.
    let unfinished = put(&mut db, 6, -1);
    let t = db.table_id("kv").unwrap();
    db.insert(&unfinished, t, &[Value::Int(1000), Value::Int(1)]).unwrap();
    let mut device = db.crash();
    device.power_on();
    let mut db = Database::open(device, options()).unwrap();
    assert_eq!(value(&mut db, 5), Some(50), "rolled back");
    assert_eq!(value(&mut db, 6), Some(60), "unfinished at the crash");
    assert_eq!(value(&mut db, 1000), None, "never committed");
    for k in (0..400).step_by(37) {
        assert_eq!(value(&mut db, k), Some(k * 10));
    }
}

#[test]
fn statements_are_atomic_and_rollback_works() {
    let mut db = Database::create(common::device(), options()).unwrap();
    db.execute(SCHEMA).unwrap();
    db.execute("INSERT INTO kv VALUES (1, 10), (2, 20)").unwrap();
    // The second row is a duplicate: the whole statement is undone.
    assert!(db.execute("INSERT INTO kv VALUES (3, 30), (1, 99)").is_err());
    assert_eq!(value(&mut db, 3), None);
    db.execute("BEGIN; UPDATE kv SET v = v + 1 WHERE k = 1; DELETE FROM kv WHERE k = 2; ROLLBACK").unwrap();
    assert_eq!((value(&mut db, 1), value(&mut db, 2)), (Some(10), Some(20)));
    db.execute("BEGIN; UPDATE kv SET v = v + 1 WHERE k = 1; COMMIT").unwrap();
    assert_eq!(value(&mut db, 1), Some(11));
    assert!(db.execute("COMMIT").unwrap_err().to_string().contains("no transaction is open"));
}

#[test]
fn a_corrupt_log_tail_is_cut_off_by_its_checksum() {
    let mut db = Database::create(common::device(), options()).unwrap();
    db.execute(SCHEMA).unwrap();
    for k in 0..50 {
        let tx = put(&mut db, k, k);
        db.commit(tx).unwrap();
    }
    let last = put(&mut db, 999, 7);
    db.commit(last).unwrap();
    let (_, durable) = db.log_lsns().unwrap();
    let payload = 4096 - 24;
    let tail_page_start = (durable - 1) / payload * payload;
    // Replace the log page holding the last commit with one whose checksum fails.
    let mut device = db.crash();
    device.power_on();
    let (mut flash, _) = flash::Flash::open(device, 0).unwrap();
    let log = flash.region_id("log").unwrap();
    let tail_lpn = ((durable - 1) / payload % flash.region(log).logical_pages() as u64) as u32;
    let mut page = flash.read(log, tail_lpn, 0).unwrap().unwrap().data.to_vec();
    page[30] ^= 0x5A;
    flash.write(log, tail_lpn, &page, 0).unwrap();
    let mut db = Database::open(flash.into_device(), options()).unwrap();
    // The log now ends before the corrupt page (plus what the restart itself logged).
    let (start, _) = db.log_lsns().unwrap();
    assert!(start <= tail_page_start + payload, "restart point {start} beyond the corrupt page at {tail_page_start}");
    assert_ne!(value(&mut db, 999), Some(7), "the commit on the corrupt page cannot survive");
    // Whatever the corrupt page held is gone; the database works on.
    let tx = put(&mut db, 1234, 5);
    db.commit(tx).unwrap();
    assert_eq!(value(&mut db, 1234), Some(5));
}

#[test]
fn a_corrupt_page_is_reported_never_returned() {
    let mut db = Database::create(common::device(), options()).unwrap();
    db.execute(SCHEMA).unwrap();
    db.execute("INSERT INTO kv VALUES (1, 10)").unwrap();
    let heap_page = db.catalog().tables[0].space.extents[0];
    let region = RegionId(db.catalog().tables[0].space.region as usize);
    let device = db.close().unwrap();
    let (mut flash, _) = flash::Flash::open(device, 0).unwrap();
    let mut page = flash.read(region, heap_page, 0).unwrap().unwrap().data.to_vec();
    page[16] = 0x77; // no such page kind
    flash.write(region, heap_page, &page, 0).unwrap();
    let mut db = Database::open(flash.into_device(), options()).unwrap();
    match db.execute("SELECT * FROM kv") {
        Err(Error::Corrupt(m)) => assert!(m.contains("page kind"), "{m}"),
        other => panic!("a corrupt page was not reported: {other:?}"),
    }
}

/// A transaction whose log outgrows the log buffer has its full log pages written
/// before it commits (memory stays bounded); that makes nothing durable before the
/// commit: a crash undoes the transaction, and once committed it survives one.
#[test]
fn a_long_transaction_writes_its_log_ahead_and_commits_only_at_its_commit() {
    let options = DbOptions { buffer: BufferSize::Pages(4096), log_buffer_bytes: 64 << 10, ..options() };
    let run = |commit: bool| {
        let mut db = Database::create(common::device(), options.clone()).unwrap();
        db.execute(SCHEMA).unwrap();
        for k in 0..200 {
            let tx = put(&mut db, k, k * 10);
            db.commit(tx).unwrap();
        }
        let t = db.table_id("kv").unwrap();
        let before = db.log_counters().unwrap();
        let durable = db.durable_lsn();
        let tx = db.begin();
        for k in 0..4000 {
            if !db.update(&tx, t, &[Value::Int(k)], &[(1, Value::Int(-k))]).unwrap() {
                db.insert(&tx, t, &[Value::Int(k), Value::Int(-k)]).unwrap();
            }
        }
        let during = db.log_counters().unwrap();
        assert_eq!(during.forces, before.forces, "nothing forced the log during the transaction");
        assert_eq!(db.durable_lsn(), durable, "pages written ahead are not durable yet");
        let ahead = during.page_writes - before.page_writes;
        let buffer_pages = (64 << 10) / 4096;
        assert!(ahead * 4096 > during.bytes - before.bytes - (64 << 10), "{ahead} pages written ahead");
        assert!(ahead > 2 * buffer_pages, "{ahead} pages written ahead");
        if commit {
            db.commit(tx).unwrap();
        }
        let mut device = db.crash();
        device.power_on();
        Database::open(device, options.clone()).unwrap()
    };
    let mut db = run(false);
    assert_eq!((value(&mut db, 7), value(&mut db, 300)), (Some(70), None), "undone");
    let mut db = run(true);
    assert_eq!((value(&mut db, 7), value(&mut db, 3999)), (Some(-7), Some(-3999)), "committed");
}

/// Power cuts at flash operations spread over a long transaction that writes its log
/// ahead, its commit included: after the restart the transaction is there whole or
/// not at all, and the commits before it are intact.
#[test]
fn power_cuts_while_the_log_is_written_ahead_keep_transactions_whole() {
    const ROWS: i64 = 1500;
    let options = DbOptions { buffer: BufferSize::Pages(4096), log_buffer_bytes: 16 << 10, ..options() };
    let setup = |storage: Box<dyn nand::Storage>| {
        let mut db = Database::create(Device::new(storage), options.clone()).unwrap();
        db.execute(SCHEMA).unwrap();
        for k in 0..200 {
            let tx = put(&mut db, k, k * 10);
            db.commit(tx).unwrap();
        }
        db
    };
    let changes = |db: &mut Database| -> Result<engine::db::Transaction, Error> {
        let t = db.table_id("kv")?;
        let tx = db.begin();
        for k in 0..ROWS {
            if !db.update(&tx, t, &[Value::Int(k)], &[(1, Value::Int(-k))])? {
                db.insert(&tx, t, &[Value::Int(k), Value::Int(-k)])?;
            }
        }
        Ok(tx)
    };
    let operations = |db: &Database| {
        let c = db.page_device().device().counters();
        c.page_programs + c.reprograms + c.copybacks + c.erases
    };
    let geometry = common::geometry(nand::CellType::Slc);
    let mut db = setup(Box::new(MemoryStorage::new(geometry.clone(), true)));
    let (start, before, durable) = (operations(&db), db.log_counters().unwrap(), db.durable_lsn());
    let tx = changes(&mut db).unwrap();
    let during = db.log_counters().unwrap();
    assert!(during.forces == before.forces && during.page_writes - before.page_writes > 20, "written ahead");
    assert_eq!(db.durable_lsn(), durable);
    db.commit(tx).unwrap();
    let end = operations(&db);
    let (mut kept, mut lost) = (0, 0);
    // Sixteen cuts spread over the transaction, and one at its last operation: the
    // commit's log page.
    for k in 0..17 {
        let cut = if k < 16 { start + 1 + k * (end - start) / 16 } else { end };
        let storage = nand::FaultyStorage::new(MemoryStorage::new(geometry.clone(), true), Some(cut), k);
        let mut db = setup(Box::new(storage));
        let committed = changes(&mut db).and_then(|tx| db.commit(tx));
        assert!(committed.is_err(), "cut at operation {cut} of {start}..{end}");
        let mut device = db.crash();
        device.power_on();
        let mut db = Database::open(device, options.clone()).unwrap();
        let whole = value(&mut db, 1) == Some(-1);
        for key in (0..ROWS).step_by(37) {
            let expected = if whole { Some(-key) } else { (key < 200).then_some(key * 10) };
            assert_eq!(value(&mut db, key), expected, "cut {cut}: key {key} (transaction kept: {whole})");
        }
        if whole {
            kept += 1
        } else {
            lost += 1
        }
    }
    assert!(lost >= 16, "cuts before the commit lose the transaction ({kept} kept, {lost} lost)");
}

#[test]
fn the_log_wraps_around_its_region() {
    let mut db = Database::create(common::device(), options()).unwrap();
    db.execute(SCHEMA).unwrap();
    let log_pages = db.page_device().logical_pages(db.page_device().region_id("log").unwrap()) as u64;
    let mut k = 0;
    while db.log_counters().unwrap().page_writes < 3 * log_pages {
        let tx = put(&mut db, k % 300, k);
        db.commit(tx).unwrap();
        k += 1;
    }
    let mut device = db.crash();
    device.power_on();
    let mut db = Database::open(device, options()).unwrap();
    let last = k - 1;
    assert_eq!(value(&mut db, last % 300), Some(last));
}

#[test]
fn group_commit_shares_log_flushes() {
    let run = |window: u64| {
        // A large buffer: no page write forces the log ahead of the group.
        let options = DbOptions { group_commit_ns: window, buffer: BufferSize::Pages(512), ..options() };
        let mut db = Database::create(common::device(), options).unwrap();
        db.execute(SCHEMA).unwrap();
        let before = db.log_counters().unwrap().forces;
        let mut last = 0;
        for k in 0..40 {
            db.set_now(db.now() + 20_000);
            let tx = put(&mut db, k, k);
            last = db.commit(tx).unwrap();
        }
        let pending = db.durable_lsn() <= last;
        db.flush_log().unwrap();
        assert!(db.durable_lsn() > last);
        (db.log_counters().unwrap().forces - before, pending)
    };
    let (alone, alone_pending) = run(0);
    let (grouped, grouped_pending) = run(100_000);
    assert!(alone >= 40 && !alone_pending, "every commit forces without a window: {alone}");
    assert!(grouped <= 10 && grouped_pending, "{grouped} forces; the last group still pending: {grouped_pending}");
}

#[test]
fn a_group_is_flushed_at_its_deadline_and_says_when_it_was_durable() {
    let options = DbOptions { group_commit_ns: 100_000, buffer: BufferSize::Pages(512), ..options() };
    let mut db = Database::create(common::device(), options).unwrap();
    db.execute(SCHEMA).unwrap();
    db.flush_log().unwrap();
    db.set_now(1_000_000);
    let tx = put(&mut db, 1, 1);
    let commit = db.commit(tx).unwrap();
    let deadline = db.group_deadline().expect("the commit opened a group");
    assert!(deadline > 1_000_000 && deadline <= db.now() + 100_000, "deadline {deadline}");
    assert!(db.durable_lsn() <= commit);
    let now = db.now();
    db.flush_group().unwrap();
    assert_eq!(db.group_deadline(), None);
    assert_eq!(db.now(), now, "flushing the group leaves the clock alone");
    assert!(db.durable_lsn() > commit && db.durable_lsn() == db.log_end_lsn());
    // The log pages were written at the deadline, so they were durable after it.
    assert!(db.durable_at() > deadline, "durable at {} for a deadline {deadline}", db.durable_at());
    db.flush_group().unwrap();
}

/// A device sized by `external_log_blocks_per_chip` gives the log a ring of at least the
/// bytes asked for, and less than a block a chip more; a tiny ring still leaves GC its
/// spare blocks.
#[test]
fn a_log_device_sized_for_a_ring_holds_it() {
    for (chips, mib) in [(4u32, 2_000u64), (2, 1_000), (6, 1), (1, 3)] {
        let base = nand::Geometry::paper_emulator();
        let blocks_per_chip = engine::db::external_log_blocks_per_chip(&base, chips, mib << 20) as u32;
        let g = nand::Geometry { channels: chips, chips_per_channel: 1, blocks_per_chip, ..base };
        let device = nand::Device::new(Box::new(nand::MemoryStorage::new(g.clone(), false)));
        let flash = flash::Flash::format(device, vec![flash::RegionSpec::new("log", flash::IpaMode::None)]).unwrap();
        let ring_bytes = engine::log::Log::create(&flash, flash::RegionId(0)).ring_pages() * u64::from(g.page_bytes);
        let block_bytes = u64::from(g.pages_per_block * g.page_bytes);
        assert!(ring_bytes >= mib << 20, "{chips} chips, {mib} MiB: ring of {ring_bytes} B");
        if mib >= 1_000 {
            assert!(ring_bytes < (mib << 20) + u64::from(chips) * block_bytes, "{chips} chips, {mib} MiB");
        }
    }
}

/// A log device that keeps its pages' metadata only (what an experiment runs with: it
/// reads its log back only at a restart, which it does not have) takes the same time and
/// the same operations as one that keeps their bytes, also once its ring has wrapped and
/// its blocks are collected and erased.
#[test]
fn a_metadata_only_log_device_times_and_counts_as_one_that_keeps_data() {
    let run = |keeps_data: bool| {
        let g = nand::Geometry {
            channels: 1,
            chips_per_channel: 1,
            blocks_per_chip: 32,
            ..common::geometry(nand::CellType::Slc)
        };
        let log = nand::Device::new(Box::new(nand::MemoryStorage::new(g, keeps_data)));
        let mut db = Database::create_with_external_log(common::device(), log, options()).unwrap();
        db.execute(SCHEMA).unwrap();
        for k in 0..4_000 {
            let tx = put(&mut db, k % 37, k);
            db.commit(tx).unwrap();
            if k % 200 == 199 {
                db.checkpoint().unwrap();
            }
        }
        let (now, log_pages) = (db.now(), db.log_counters().unwrap().page_writes);
        let (device, log) = db.crash_with_log();
        let log = log.expect("the external log device").counters();
        (now, log_pages, device.counters(), log)
    };
    let (kept, metadata_only) = (run(true), run(false));
    assert!(kept.1 >= 4_000, "every commit forced a log page: {:?}", kept.1);
    assert!(kept.3.erases > 0, "the ring wrapped and its blocks were erased: {:?}", kept.3);
    assert_eq!(kept, metadata_only);
}

#[test]
fn an_external_log_device_keeps_the_log_off_the_database_device() {
    let log_device = || {
        let g = nand::Geometry { channels: 1, chips_per_channel: 1, ..common::geometry(nand::CellType::Slc) };
        nand::Device::new(Box::new(nand::MemoryStorage::new(g, true)))
    };
    let mut db = Database::create_with_external_log(common::device(), log_device(), options()).unwrap();
    db.execute(SCHEMA).unwrap();
    assert!(db.page_device().region_id("log").is_none(), "no log region on the database device");
    let programs_before = db.page_device().device().counters().page_programs;
    for k in 0..50 {
        let tx = put(&mut db, k, k + 1);
        db.commit(tx).unwrap();
    }
    assert!(db.log_counters().unwrap().page_writes >= 50);
    assert!(db.page_device().device().counters().page_programs - programs_before < 50, "log writes went elsewhere");
    let (mut device, log) = db.crash_with_log();
    let mut log = log.expect("the external log device comes back");
    device.power_on();
    log.power_on();
    let mut db = Database::open_with_external_log(device, log, options()).unwrap();
    assert_eq!(value(&mut db, 49), Some(50));
    let refused = Database::open(db.crash(), options()).err().expect("opening without the log device is refused");
    assert!(refused.to_string().contains("external device"), "{refused}");
}
