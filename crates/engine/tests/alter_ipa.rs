//! Online layout changes: `ALTER TABLE|INDEX … SET IPA` and `… SET TABLESPACE` on a
//! live database — parse and execution errors, reads and writes across the change
//! (pages of the old and the new layout side by side), durability across a reopen,
//! and power cuts at flash operations before, during and after the changes.

mod common;

use engine::db::BufferSize;
use engine::delta::IpaScheme;
use engine::types::Value;
use engine::{Database, DbOptions, Error};
use nand::{CellType, Device, FaultyStorage, MemoryStorage};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeMap;

/// Region `r` allows IPA (SLC) but starts at [0×0]; region `r2` has [2×3].
const SCHEMA: &str = "
CREATE REGION r (IPA_MODE=SLC, IPA=0x0, MAX_CHIPS=2);
CREATE REGION r2 (IPA_MODE=SLC, IPA=2x3, MAX_CHIPS=2);
CREATE REGION plain (IPA_MODE=none, MAX_CHIPS=1);
CREATE TABLESPACE ts (REGION=r, EXTENT SIZE 16K);
CREATE TABLESPACE ts2 (REGION=r2, EXTENT SIZE 16K);
CREATE TABLESPACE tsplain (REGION=plain, EXTENT SIZE 16K);
CREATE TABLE kv (k INT PRIMARY KEY, v BIGINT NOT NULL, pad VARCHAR(40)) TABLESPACE ts;
CREATE INDEX kv_v ON kv (v) TABLESPACE ts;
";

const KEYS: i64 = 300;

fn options() -> DbOptions {
    DbOptions { buffer: BufferSize::Pages(16), ..DbOptions::default() }
}

fn load(db: &mut Database) {
    db.execute(SCHEMA).unwrap();
    let t = db.table_id("kv").unwrap();
    let tx = db.begin();
    for k in 0..KEYS {
        db.insert(&tx, t, &[Value::Int(k), Value::Int(k * 10), Value::Text(format!("row {k:>5}"))]).unwrap();
    }
    db.commit(tx).unwrap();
    db.checkpoint().unwrap();
}

fn set(db: &mut Database, k: i64, v: i64) -> engine::Result<u64> {
    let t = db.table_id("kv")?;
    let tx = db.begin();
    assert!(db.update(&tx, t, &[Value::Int(k)], &[(1, Value::Int(v))])?, "key {k} exists");
    db.commit(tx)
}

/// Every row through the primary key, checked against a heap scan and the `v` index.
fn rows(db: &mut Database) -> BTreeMap<i64, i64> {
    let t = db.table_id("kv").unwrap();
    let tx = db.begin();
    let by_pk = db.scan(&tx, t, &[], &[]).unwrap();
    db.commit(tx).unwrap();
    let out: BTreeMap<i64, i64> = by_pk.iter().map(|r| (int(&r[0]), int(&r[1]))).collect();
    let heap = db.execute("SELECT k, v FROM kv").unwrap();
    let engine::QueryResult::Rows { rows, .. } = &heap[0] else { panic!("rows") };
    let scanned: BTreeMap<i64, i64> = rows.iter().map(|r| (int(&r[0]), int(&r[1]))).collect();
    assert_eq!(scanned, out, "heap scan and primary key agree");
    let tx = db.begin();
    let by_v = db.scan_index(&tx, t, "kv_v", &[], &[], usize::MAX).unwrap();
    db.commit(tx).unwrap();
    let mut vs: Vec<i64> = by_v.iter().map(|r| int(&r[1])).collect();
    let mut expected: Vec<i64> = out.values().copied().collect();
    expected.sort_unstable();
    vs.sort_unstable();
    assert_eq!(vs, expected, "index kv_v holds every row once");
    out
}

fn int(v: &Value) -> i64 {
    match v {
        Value::Int(i) => *i,
        other => panic!("not an int: {other:?}"),
    }
}

fn scheme(s: &str) -> IpaScheme {
    s.parse().unwrap()
}

fn layouts(db: &Database, table: &str) -> Vec<IpaScheme> {
    db.catalog().tables[db.catalog().table(table).unwrap()].ipa_layouts.clone()
}

#[test]
fn bad_alter_statements_are_positioned_errors() {
    let mut db = Database::create(common::device(), options()).unwrap();
    load(&mut db);
    let parse = |db: &mut Database, text: &str| match db.execute(text).unwrap_err() {
        Error::Parse { line, column, token, message } => (line, column, token, message),
        e => panic!("not a parse error: {e}"),
    };
    let (line, column, token, _) = parse(&mut db, "SELECT k FROM kv;\nALTER TABLE kv SET IPA = 2y3");
    assert_eq!((line, column, token.as_str()), (2, 26, "2y3"));
    assert!(parse(&mut db, "ALTER VIEW kv SET IPA = 2x3").3.contains("TABLE or INDEX after ALTER"));
    assert!(parse(&mut db, "ALTER TABLE kv SET COLOR = 2x3").3.contains("IPA = NxM or TABLESPACE"));
    assert_eq!(parse(&mut db, "ALTER TABLE kv SET IPA = 2x3 MODE tlc").2, "tlc");
    assert!(parse(&mut db, "ALTER TABLE kv SET IPA = 17x3").3.contains("N = 17"));
    assert!(parse(&mut db, "ALTER TABLE kv SET IPA = 2x3 V = 300").3.contains("V"));
    assert!(parse(&mut db, "ALTER INDEX kv_v SET TABLESPACE").3.contains("tablespace name"));

    let invalid = |db: &mut Database, text: &str| match db.execute(text).unwrap_err() {
        Error::Invalid(m) => m,
        e => panic!("not an invalid-statement error: {e}"),
    };
    assert!(invalid(&mut db, "ALTER TABLE nope SET IPA = 2x3").contains("line 1: no table named nope"));
    assert!(invalid(&mut db, "ALTER INDEX nope SET IPA = 2x3").contains("no index named nope"));
    let m = invalid(&mut db, "ALTER TABLE kv SET IPA = 2x3 MODE pslc");
    assert!(m.contains("IPA mode is slc, not pslc"), "{m}");
    assert!(invalid(&mut db, "ALTER TABLE kv SET TABLESPACE nowhere").contains("no tablespace named nowhere"));
    assert!(invalid(&mut db, "ALTER TABLE kv SET IPA = 16x125 V = 125").contains("delta area"));
    db.execute("ALTER TABLE kv SET TABLESPACE tsplain").unwrap();
    let m = invalid(&mut db, "ALTER TABLE kv SET IPA = 2x3");
    assert!(m.contains("IPA mode is none"), "{m}");
    db.execute("ALTER TABLE kv SET TABLESPACE ts").unwrap();
    // [2×4] with V = 11 reserves 92 bytes, as [2×3] with V = 12 does.
    db.execute("ALTER TABLE kv SET IPA = 2x3").unwrap();
    let m = invalid(&mut db, "ALTER TABLE kv SET IPA = 0x0; ALTER TABLE kv SET IPA = 2x4 V = 11");
    assert!(m.contains("line 1:") && m.contains("could not tell them apart"), "{m}");
    db.execute("BEGIN").unwrap();
    assert!(invalid(&mut db, "ALTER TABLE kv SET IPA = 2x3").contains("DDL inside a transaction"));
    db.execute("ROLLBACK").unwrap();
    assert_eq!(rows(&mut db).len(), KEYS as usize);
}

#[test]
fn pages_adopt_a_new_scheme_lazily_and_read_correctly_under_both() {
    let mut db = Database::create(common::device(), options()).unwrap();
    load(&mut db);
    let mut expected = rows(&mut db);
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let mut bump = |db: &mut Database, expected: &mut BTreeMap<i64, i64>, n: usize| {
        for _ in 0..n {
            let k = rng.gen_range(0..KEYS);
            let Some(v) = expected.get(&k).map(|v| v + 1) else { continue };
            set(db, k, v).unwrap();
            expected.insert(k, v);
        }
    };
    bump(&mut db, &mut expected, 200);
    let before = db.object_stats().into_iter().find(|o| o.name == "kv").unwrap();
    assert_eq!(before.counters.in_place_appends, 0, "[0×0] writes out-of-place only");

    let done = db.execute("ALTER TABLE kv SET IPA = 2x3").unwrap();
    assert!(format!("{done:?}").contains("pages adopt it at their next change"), "{done:?}");
    assert_eq!(layouts(&db, "kv"), vec![IpaScheme::NONE, scheme("2x3")]);
    // Half the pages change now; the rest keep the old layout and read as before.
    bump(&mut db, &mut expected, 300);
    assert_eq!(rows(&mut db), expected);
    let after = db.object_stats().into_iter().find(|o| o.name == "kv").unwrap();
    assert_eq!(after.scheme, scheme("2x3"));
    assert!(after.counters.in_place_appends > 0, "pages in the new layout take delta-records: {:?}", after.counters);

    // The index too, and a second change on top of the first.
    db.execute("ALTER INDEX kv_v SET IPA = 2x4").unwrap();
    db.execute("ALTER TABLE kv SET IPA = 3x2 V = 8").unwrap();
    assert_eq!(layouts(&db, "kv"), vec![IpaScheme::NONE, scheme("2x3"), IpaScheme::new(3, 2, 8).unwrap()]);
    bump(&mut db, &mut expected, 300);
    for k in KEYS..KEYS + 40 {
        let t = db.table_id("kv").unwrap();
        let tx = db.begin();
        db.insert(&tx, t, &[Value::Int(k), Value::Int(-k), Value::Text("new".into())]).unwrap();
        db.commit(tx).unwrap();
        expected.insert(k, -k);
    }
    db.execute("DELETE FROM kv WHERE k BETWEEN 10 AND 60").unwrap();
    expected.retain(|&k, _| !(10..=60).contains(&k));
    assert_eq!(rows(&mut db), expected);
    let index = db.object_stats().into_iter().find(|o| o.name == "kv_v").unwrap();
    assert_eq!(index.scheme, scheme("2x4"));
    // Back to no IPA: every layout stays listed, pages go on reading.
    db.execute("ALTER TABLE kv SET IPA = 0x0").unwrap();
    assert_eq!(layouts(&db, "kv").last(), Some(&IpaScheme::NONE));
    bump(&mut db, &mut expected, 100);
    assert_eq!(rows(&mut db), expected);
    assert!(db.schema().contains("ALTER INDEX kv_v SET IPA = 2x4 V = 12;"), "{}", db.schema());
}

#[test]
fn changes_survive_a_reopen_and_a_crash() {
    let mut db = Database::create(common::device(), options()).unwrap();
    load(&mut db);
    let mut expected = rows(&mut db);
    db.execute("ALTER TABLE kv SET IPA = 2x3; ALTER INDEX kv_pkey SET TABLESPACE ts2").unwrap();
    for k in (0..KEYS).step_by(3) {
        set(&mut db, k, 7 * k).unwrap();
        expected.insert(k, 7 * k);
    }
    let mut db = Database::open(db.close().unwrap(), options()).unwrap();
    assert_eq!(layouts(&db, "kv"), vec![IpaScheme::NONE, scheme("2x3")]);
    let pkey = &db.catalog().indexes[db.catalog().index("kv_pkey").unwrap()];
    assert_eq!(pkey.tablespace, "ts2");
    assert_eq!(rows(&mut db), expected);
    db.execute("ALTER TABLE kv SET TABLESPACE ts2").unwrap();
    for k in (1..KEYS).step_by(5) {
        set(&mut db, k, 11 * k).unwrap();
        expected.insert(k, 11 * k);
    }
    let mut device = db.crash();
    device.power_on();
    let mut db = Database::open(device, options()).unwrap();
    let kv = &db.catalog().tables[db.catalog().table("kv").unwrap()];
    assert_eq!((kv.tablespace.as_str(), kv.ipa_layouts.len()), ("ts2", 0), "moved: the region's scheme");
    assert_eq!(rows(&mut db), expected);
    assert!(db.catalog().tables.iter().all(|t| !t.name.contains('~')));
}

#[test]
fn a_table_moves_with_its_indexes_and_they_stay_there_after_a_reopen() {
    let mut db = Database::create(common::device(), options()).unwrap();
    load(&mut db);
    let expected = rows(&mut db);
    let done = db.execute("ALTER TABLE kv SET TABLESPACE ts2").unwrap();
    let engine::QueryResult::Done(message) = &done[0] else { panic!("{done:?}") };
    assert!(message.contains("with its indexes kv_pkey, kv_v"), "{message}");
    let placed = |db: &Database| {
        let c = db.catalog();
        let r2 = c.regions.iter().position(|r| r.name == "r2").unwrap() as u16;
        let kv = &c.tables[c.table("kv").unwrap()];
        let mut spaces = vec![("kv".to_string(), kv.tablespace.clone(), kv.space.region, kv.space.extents.len())];
        spaces.extend(
            c.indexes.iter().map(|i| (i.name.clone(), i.tablespace.clone(), i.space.region, i.space.extents.len())),
        );
        for (name, ts, region, extents) in spaces {
            assert_eq!((ts.as_str(), region), ("ts2", r2), "{name}");
            assert!(extents > 0, "{name} holds pages in r2");
        }
    };
    placed(&db);
    let mut db = Database::open(db.close().unwrap(), options()).unwrap();
    placed(&db);
    assert_eq!(rows(&mut db), expected);
    // Moving it again where it already is, indexes and all, changes nothing.
    let again = db.execute("ALTER TABLE kv SET TABLESPACE ts2").unwrap();
    assert!(matches!(&again[0], engine::QueryResult::Done(m) if m.contains("already in tablespace ts2")), "{again:?}");
}

/// Flash operations the device has done (the cut counter's unit).
fn operations(device: &Device) -> u64 {
    let c = device.counters();
    c.page_programs + c.reprograms + c.copybacks + c.erases
}

/// What a workload run saw: each key's committed values with their commit LSNs, the
/// changes that returned, and the log's durable end at the cut.
#[derive(Default)]
struct Seen {
    history: BTreeMap<i64, Vec<(i64, u64)>>,
    in_flight: Option<(i64, i64)>,
    altered: Vec<&'static str>,
    /// The power failed before the workload ended.
    interrupted: bool,
    durable: u64,
    /// Flash operations after the load, and at the start of each ALTER and after it.
    load_ops: u64,
    alter_ops: Vec<(u64, u64)>,
}

const ALTERS: [&str; 3] =
    ["ALTER TABLE kv SET IPA = 2x3", "ALTER INDEX kv_v SET TABLESPACE ts2", "ALTER TABLE kv SET TABLESPACE ts2"];

/// Loads, then runs updates with the three ALTERs between them, until done or the
/// power fails.
fn workload(db: &mut Database, seed: u64, seen: &mut Seen) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    for step in 0..240i64 {
        if step % 60 == 30 && step < 180 {
            let ddl = ALTERS[(step / 60) as usize];
            let start = operations(db.page_device().device());
            match db.execute(ddl) {
                Ok(_) => seen.altered.push(ddl),
                Err(_) => {
                    seen.interrupted = true;
                    return;
                }
            }
            seen.alter_ops.push((start, operations(db.page_device().device())));
        }
        let k = rng.gen_range(0..KEYS);
        let v = 1_000_000 + step;
        seen.in_flight = Some((k, v));
        match set(db, k, v) {
            Ok(lsn) => seen.history.entry(k).or_default().push((v, lsn)),
            Err(_) => {
                seen.interrupted = true;
                return;
            }
        }
        seen.in_flight = None;
    }
}

/// Runs the workload with power failing at flash operation `cut_at`, recovers, and
/// checks rows, indexes and catalog; panics with the cut point on a mismatch.
fn cut_run(seed: u64, cut_at: Option<u64>) -> Seen {
    let storage = FaultyStorage::new(MemoryStorage::new(common::geometry(CellType::Slc), true), cut_at, seed);
    let mut db = Database::create(Device::new(Box::new(storage)), options()).unwrap();
    load(&mut db);
    let mut seen = Seen { load_ops: operations(db.page_device().device()), ..Seen::default() };
    workload(&mut db, seed, &mut seen);
    seen.durable = db.durable_lsn();
    let mut device = db.crash();
    device.power_on();
    let mut db = Database::open(device, options()).unwrap_or_else(|e| panic!("cut at {cut_at:?}: recovery: {e}"));
    let got = rows(&mut db);
    for k in 0..KEYS {
        let history = seen.history.get(&k).map(Vec::as_slice).unwrap_or_default();
        let sure = history.iter().rev().find(|(_, lsn)| *lsn < seen.durable).map_or(k * 10, |(v, _)| *v);
        let mut allowed = vec![sure];
        allowed.extend(history.iter().filter(|(_, lsn)| *lsn >= seen.durable).map(|(v, _)| *v));
        allowed.extend(seen.in_flight.filter(|(key, _)| *key == k).map(|(_, v)| v));
        assert!(
            allowed.contains(&got[&k]),
            "cut at {cut_at:?}: key {k} reads {}, expected one of {allowed:?}",
            got[&k]
        );
    }
    assert_eq!(got.len(), KEYS as usize, "cut at {cut_at:?}: rows");
    // The catalog: every ALTER that returned is there, nothing half-moved is.
    let catalog = db.catalog();
    assert!(catalog.tables.iter().all(|t| !t.name.contains('~')), "cut at {cut_at:?}: a copy survived");
    assert!(catalog.indexes.iter().all(|i| !i.name.contains('~')), "cut at {cut_at:?}: a copy survived");
    let kv = &catalog.tables[catalog.table("kv").unwrap()];
    let kv_v = &catalog.indexes[catalog.index("kv_v").unwrap()];
    if seen.altered.contains(&ALTERS[0]) && kv.tablespace == "ts" {
        assert_eq!(kv.ipa_layouts, vec![IpaScheme::NONE, scheme("2x3")], "cut at {cut_at:?}");
    }
    if seen.altered.contains(&ALTERS[1]) {
        assert_eq!(kv_v.tablespace, "ts2", "cut at {cut_at:?}");
    }
    if seen.altered.contains(&ALTERS[2]) {
        assert_eq!(kv.tablespace, "ts2", "cut at {cut_at:?}");
    }
    // Still writable after recovery, in whatever layout the pages are.
    set(&mut db, 3, 42).unwrap();
    assert_eq!(rows(&mut db)[&3], 42);
    seen
}

#[test]
fn power_cuts_during_alters_and_updates_keep_data_and_catalog() {
    let seed = 11;
    let dry = cut_run(seed, None);
    assert_eq!(dry.altered.len(), 3, "the run without a cut does all three changes");
    let (first, _) = dry.alter_ops[0];
    let (_, last) = dry.alter_ops[2];
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    // Cuts inside each ALTER (the moves take many operations), and at random points of
    // the whole updating run.
    let mut cuts: Vec<u64> = dry.alter_ops.iter().flat_map(|&(a, b)| (a + 1..=b).step_by(3)).collect();
    cuts.extend((0..60).map(|_| rng.gen_range(first.saturating_sub(150).max(dry.load_ops + 1)..last + 150)));
    let runs = cuts.len();
    let mut interrupted = 0;
    for cut in cuts {
        interrupted += cut_run(seed, Some(cut)).interrupted as usize;
    }
    assert!(interrupted * 10 >= runs * 9, "only {interrupted} of {runs} cuts hit the run");
}
