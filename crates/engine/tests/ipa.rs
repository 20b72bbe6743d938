//! The IPA write path: the paper's worked example (§6.1) and a page round trip through
//! a real region with the eviction rule checked at every write.

mod common;

use engine::delta::{self, Eviction, FlashState, IpaScheme, OutOfPlaceReason};
use engine::page::{self, Kind};
use engine::store::{PageId, PageStore};
use engine::types::Value;
use engine::{Database, DbOptions, QueryResult};
use flash::{Flash, IpaMode, RegionId, RegionSpec};
use nand::{CellType, Device, Geometry, MemoryStorage};
use proptest::prelude::*;

/// The §6.1 example's table R in a [2×3] region with V = 12, its three tuples
/// (A7 = 9, A8 = 7) inserted and written out of place by a checkpoint.
fn table_r_on_flash() -> Database {
    let mut db = Database::create(common::device(), DbOptions::default()).unwrap();
    db.execute(
        "CREATE REGION rg (IPA_MODE=SLC, IPA=2x3, V=12, MAX_CHIPS=1);
         CREATE TABLESPACE ts (REGION=rg);
         CREATE TABLE R (id INT PRIMARY KEY, A7 INT, A8 INT) TABLESPACE ts;",
    )
    .unwrap();
    db.execute("INSERT INTO R VALUES (1, 9, 7), (2, 9, 7), (3, 9, 7)").unwrap();
    db.checkpoint().unwrap();
    db
}

/// Table R's counters.
fn counters(db: &Database) -> engine::store::ObjectCounters {
    db.object_stats().into_iter().find(|s| s.name == "R").unwrap().counters
}

/// The pool's write latency splits by kind: an append waits at its page's chip, an
/// out-of-place write at the region's next chip, and the advisor models the two apart.
/// Before any append all write latency is out-of-place; after one, the two parts sum to
/// the whole.
#[test]
fn write_latency_splits_into_out_of_place_writes_and_appends() {
    let mut db = table_r_on_flash();
    let before = db.pool_stats();
    assert!(before.out_of_place_writes > 0 && before.in_place_appends == 0, "{before:?}");
    assert_eq!((before.out_of_place_latency_ns, before.append_latency_ns), (before.write_latency_ns, 0));
    db.execute("UPDATE R SET A7 = 3 WHERE id BETWEEN 1 AND 3").unwrap();
    db.checkpoint().unwrap();
    let after = db.pool_stats();
    assert!(after.in_place_appends > 0, "{after:?}");
    assert!(after.append_latency_ns > 0, "{after:?}");
    assert_eq!(after.out_of_place_latency_ns + after.append_latency_ns, after.write_latency_ns);
}

/// §6.1: table R, [2×3] with V = 12 (46-byte records, a 92-byte area). Tx0 inserts three
/// tuples (A7 = 9, A8 = 7) and the new page goes out-of-place; Tx1 and Tx2 each change
/// A7 of all three tuples (one byte each) and the page LSN, and each eviction appends
/// one delta-record of three body pairs and the changed LSN byte; a third round finds
/// the area full and writes out-of-place with the area reset.
#[test]
fn worked_example_page_4711() {
    let mut db = table_r_on_flash();
    assert_eq!((counters(&db).out_of_place_writes, counters(&db).in_place_appends), (1, 0));

    for (round, value) in [(1, 3), (2, 5)] {
        db.execute(&format!("UPDATE R SET A7 = {value} WHERE id BETWEEN 1 AND 3")).unwrap();
        db.checkpoint().unwrap();
        let c = counters(&db);
        assert_eq!((c.out_of_place_writes, c.in_place_appends, c.delta_records), (1, round, round));
    }
    // Decode the delta area straight from the flash page.
    let scheme = IpaScheme::new(2, 3, 12).unwrap();
    let table = &db.catalog().tables[0];
    let region = RegionId(table.space.region as usize);
    let page_no = table.space.extents[0];
    let flash = db.page_device().as_any().downcast_ref::<Flash>().expect("a NoFTL database");
    let ppn = flash.region(region).mapping(page_no).unwrap();
    let data = flash.device().storage().data(ppn).unwrap();
    let body_end = 4096 - scheme.area_bytes();
    assert_eq!(body_end, 4096 - 92);
    for (r, value) in [(0, 3), (1, 5)] {
        let at = body_end + r * 46;
        let record = delta::decode_record(scheme, &data[at..at + 46], body_end).unwrap().unwrap();
        let (body, meta): (Vec<_>, Vec<_>) =
            record.pairs.iter().partition(|(_, off)| *off as usize >= page::HEADER_BYTES);
        assert_eq!(body.len(), 3, "one changed byte per tuple");
        assert!(body.iter().all(|(v, _)| *v == value));
        assert!(!meta.is_empty() && meta.iter().all(|(_, off)| *off < 8), "only low page-LSN bytes: {meta:?}");
    }
    db.execute("UPDATE R SET A7 = 6 WHERE id BETWEEN 1 AND 3").unwrap();
    db.checkpoint().unwrap();
    let c = counters(&db);
    assert_eq!((c.out_of_place_writes, c.in_place_appends), (2, 2));
    assert_eq!(c.gross_written_bytes, 2 * 4096 + 2 * 46);
    let device = db.close().unwrap();
    let mut db = Database::open(device, DbOptions::default()).unwrap();
    let r = db.execute("SELECT A7, A8 FROM R WHERE id = 2").unwrap().pop().unwrap();
    assert_eq!(
        r,
        QueryResult::Rows { columns: vec!["A7".into(), "A8".into()], rows: vec![vec![Value::Int(6), Value::Int(7)]] }
    );
}

/// A write of a page on flash counts where its changed bytes lie: an update of one
/// fixed-width field per tuple changes only tuple bytes and the page LSN; an insert
/// adds a slot and moves the header's slot count and free-space bounds too.
#[test]
fn update_writes_count_body_header_and_slot_bytes_apart() {
    let mut db = table_r_on_flash();
    let first = counters(&db);
    assert_eq!((first.update_body_bytes, first.update_header_bytes, first.update_slot_bytes), (0, 0, 0));

    db.execute("UPDATE R SET A7 = 3 WHERE id BETWEEN 1 AND 3").unwrap();
    db.checkpoint().unwrap();
    let update = counters(&db).since(&first);
    assert_eq!(update.update_body_bytes, 3, "one byte of A7 in each tuple");
    assert!((1..=8).contains(&update.update_header_bytes), "the page LSN's low bytes: {update:?}");
    assert_eq!(update.update_slot_bytes, 0);
    assert_eq!(update.net_changed_bytes, update.update_body_bytes + update.update_header_bytes);

    let before = counters(&db);
    db.execute("INSERT INTO R VALUES (4, 9, 7)").unwrap();
    db.checkpoint().unwrap();
    let insert = counters(&db).since(&before);
    assert!(insert.update_slot_bytes >= 2, "the new slot's offset and length: {insert:?}");
    assert!(insert.update_header_bytes >= 3, "LSN, slot count, free-space bounds: {insert:?}");
    let parts = insert.update_body_bytes + insert.update_header_bytes + insert.update_slot_bytes;
    assert_eq!(parts, insert.net_changed_bytes);
}

/// With V = 0 (the paper's LinkBench schemes, M counting the whole page's changed bytes)
/// an insert's slot and header bytes take the record's M pairs: the insert is appended,
/// where with two metadata pairs of their own it does not fit and goes out-of-place. The
/// row reads back after a reopen, from the delta-record.
#[test]
fn with_v_0_metadata_bytes_take_the_m_pairs() {
    for (v, appended) in [(0u8, true), (2, false)] {
        let mut db = Database::create(common::device(), DbOptions::default()).unwrap();
        db.execute(&format!(
            "CREATE REGION rg (IPA_MODE=SLC, IPA=1x40, V={v}, MAX_CHIPS=1);
             CREATE TABLESPACE ts (REGION=rg);
             CREATE TABLE R (id INT, A7 INT, A8 INT) TABLESPACE ts;"
        ))
        .unwrap();
        db.execute("INSERT INTO R VALUES (1, 9, 7), (2, 9, 7)").unwrap();
        db.checkpoint().unwrap();
        let before = counters(&db);
        db.execute("INSERT INTO R VALUES (3, 5, 4)").unwrap();
        db.checkpoint().unwrap();
        let insert = counters(&db).since(&before);
        assert!(insert.update_slot_bytes + insert.update_header_bytes > 2, "{insert:?}");
        assert!(insert.net_changed_bytes <= 40, "the insert fits one record of 40 pairs: {insert:?}");
        assert_eq!(insert.in_place_appends == 1, appended, "V = {v}: {insert:?}");
        assert_eq!(insert.out_of_place_writes == 1, !appended, "V = {v}: {insert:?}");
        if appended {
            assert_eq!(insert.gross_written_bytes, 1 + 3 * 40, "a record of 1 + 3M bytes");
        }
        let device = db.close().unwrap();
        let mut db = Database::open(device, DbOptions::default()).unwrap();
        let r = db.execute("SELECT A7, A8 FROM R WHERE id = 3").unwrap().pop().unwrap();
        assert_eq!(
            r,
            QueryResult::Rows {
                columns: vec!["A7".into(), "A8".into()],
                rows: vec![vec![Value::Int(5), Value::Int(4)]]
            }
        );
    }
}

fn small_store(scheme: IpaScheme) -> PageStore {
    let geometry = Geometry {
        channels: 1,
        chips_per_channel: 1,
        blocks_per_chip: 8,
        pages_per_block: 8,
        ..common::geometry(CellType::Slc)
    };
    let device = Device::new(Box::new(MemoryStorage::new(geometry, true)));
    let spec = RegionSpec {
        over_provisioning: 0.45,
        ..RegionSpec::new("r", if scheme.enabled() { IpaMode::Slc } else { IpaMode::None })
    };
    let flash = Flash::format(device, vec![spec]).unwrap();
    let mut store = PageStore::new(Box::new(flash), 4096).unwrap();
    store.set_scheme(RegionId(0), scheme).unwrap();
    store
}

#[derive(Clone, Debug)]
enum Step {
    /// Change bytes of page `page`'s tuple (offsets within it) and maybe its LSN.
    Modify { page: usize, bytes: Vec<(usize, u8)>, bump_lsn: bool },
    /// Write the page if dirty, then fetch it back.
    Evict { page: usize },
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        3 => (0..4usize, proptest::collection::vec((0..2000usize, any::<u8>()), 1..10), any::<bool>())
            .prop_map(|(page, bytes, bump_lsn)| Step::Modify { page, bytes, bump_lsn }),
        2 => (0..4usize).prop_map(|page| Step::Evict { page }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Random small updates, evictions and re-fetches through a real region (with GC
    /// migrating pages under it): a fetched page is always exactly the model page, and
    /// an append happens exactly when the rule allows it.
    #[test]
    fn page_round_trip_follows_the_rule(n in 0u8..4, m in 1u8..6, v in 0u8..4, steps in proptest::collection::vec(step(), 1..300)) {
        let scheme = if n == 0 { IpaScheme::NONE } else { IpaScheme::new(n, m, v).unwrap() };
        let mut store = small_store(scheme);
        let body_end = store.body_end(0);
        let mut pages = Vec::new();
        for no in 0..4u32 {
            let mut p = vec![0u8; 4096];
            page::init(&mut p, body_end, no, 9, Kind::Heap, 0);
            page::insert(&mut p, body_end, &vec![0x5A; 2000]).unwrap();
            pages.push((p, vec![0u8; 4096], FlashState::default(), true));
        }
        for s in steps {
            match s {
                Step::Modify { page: i, bytes, bump_lsn } => {
                    let (p, _, _, dirty) = &mut pages[i];
                    for (off, value) in bytes {
                        p[page::HEADER_BYTES + off] = value;
                    }
                    if bump_lsn {
                        let lsn = page::lsn(p);
                        page::set_lsn(p, lsn + 1);
                    }
                    *dirty = true;
                }
                Step::Evict { page: i } => {
                    let pid = PageId { region: 0, page: i as u32 };
                    let (p, base, state, dirty) = &mut pages[i];
                    if *dirty {
                        let body = (page::HEADER_BYTES..body_end).filter(|&o| p[o] != base[o]).count();
                        let meta = (0..page::HEADER_BYTES).filter(|&o| p[o] != base[o]).count();
                        let free = scheme.n.saturating_sub(state.records) as usize;
                        let fits = |k: usize, per: u8| k == 0 || (per > 0 && k.div_ceil(per as usize) <= free);
                        // V = 0: the metadata bytes take the M pairs.
                        let counts_fit = if scheme.gross() { fits(body + meta, scheme.m) } else { fits(body, scheme.m) && fits(meta, scheme.v) };
                        let allowed = scheme.enabled() && state.on_flash && !state.sealed && body + meta > 0 && counts_fit;
                        let before = *state;
                        let written = store.write(pid, p, base, state, 0).unwrap();
                        match written.eviction {
                            Eviction::Append { records } => {
                                prop_assert!(allowed, "appended against the rule: body {body}, meta {meta}, {before:?}");
                                prop_assert_eq!(state.records as usize, before.records as usize + records);
                            }
                            Eviction::OutOfPlace(reason) => {
                                prop_assert!(!allowed, "out-of-place ({reason:?}) though the rule allows an append");
                                prop_assert_eq!(state.records, 0);
                                if !before.on_flash {
                                    prop_assert!(matches!(reason, OutOfPlaceReason::NeverWritten | OutOfPlaceReason::NoIpa));
                                }
                            }
                            Eviction::Clean => prop_assert_eq!(body + meta, 0),
                            Eviction::Logged => prop_assert!(false, "a NoFTL region does not log changes"),
                        }
                        *dirty = false;
                    }
                    let mut fetched = vec![0u8; 4096];
                    let (got, _) = store.fetch(pid, &mut fetched, 0).unwrap().expect("written");
                    prop_assert_eq!(&fetched[..body_end], &p[..body_end]);
                    prop_assert_eq!(got.records, state.records);
                }
            }
        }
        let c = store.counters().get(&9).copied().unwrap_or_default();
        prop_assert_eq!(c.gross_written_bytes, c.out_of_place_writes * 4096 + c.delta_records * scheme.record_bytes() as u64);
        prop_assert!(store.device().counters(RegionId(0)).gc_erases > 0 || c.out_of_place_writes <= 32, "{c:?}");
    }
}

/// A power cut during the `write_delta` of a delta-record: after the device is rebuilt,
/// fetch returns the page as before the append (or after it, if every bit landed),
/// never a mix, and the next eviction still succeeds.
#[test]
fn a_torn_delta_record_append_is_ignored_at_fetch() {
    let scheme = IpaScheme::new(2, 4, 4).unwrap();
    let (mut torn_seen, mut whole_seen, mut sealed_seen) = (0, 0, 0);
    for seed in 0..48 {
        // Operation 1 is the out-of-place write, operation 2 the append: cut the append.
        let storage =
            nand::FaultyStorage::new(MemoryStorage::new(common::geometry(CellType::Slc), true), Some(2), seed);
        let flash = Flash::format(Device::new(Box::new(storage)), vec![RegionSpec::new("r", IpaMode::Slc)]).unwrap();
        let mut store = PageStore::new(Box::new(flash), 4096).unwrap();
        store.set_scheme(RegionId(0), scheme).unwrap();
        let body_end = store.body_end(0);
        let pid = PageId { region: 0, page: 5 };
        let (mut p, mut base, mut state) = (vec![0u8; 4096], vec![0u8; 4096], FlashState::default());
        page::init(&mut p, body_end, 5, 1, Kind::Heap, 0);
        page::insert(&mut p, body_end, &[1u8; 500]).unwrap();
        store.write(pid, &mut p, &mut base, &mut state, 0).unwrap();
        let before = p.clone();
        for off in [40, 41, 300] {
            p[off] = 0x42;
        }
        page::set_lsn(&mut p, 9);
        let after = p.clone();
        assert!(store.write(pid, &mut p, &mut base, &mut state, 0).is_err(), "the cut hits the append");

        let mut device = store.into_device().into_device();
        device.power_on();
        let (flash, _) = Flash::open(device, 0).unwrap();
        let mut store = PageStore::new(Box::new(flash), 4096).unwrap();
        store.set_scheme(RegionId(0), scheme).unwrap();
        let mut fetched = vec![0u8; 4096];
        let (state, _) = store.fetch(pid, &mut fetched, 0).unwrap().unwrap();
        if fetched[..body_end] == before[..body_end] {
            assert_eq!(state.records, 0);
            torn_seen += 1;
        } else {
            assert_eq!(fetched[..body_end], after[..body_end], "seed {seed}: neither before nor after");
            assert_eq!(state.records, 1);
            whole_seen += 1;
        }
        // The page takes the change again (out-of-place if the torn tail sealed it).
        let (mut base, mut state) = (fetched.clone(), state);
        let mut p = fetched;
        p[..body_end].copy_from_slice(&after[..body_end]);
        p[60] = 0x43;
        let sealed = state.sealed;
        sealed_seen += usize::from(sealed);
        let written = store.write(pid, &mut p, &mut base, &mut state, 0).unwrap();
        if sealed {
            assert_eq!(written.eviction, Eviction::OutOfPlace(OutOfPlaceReason::Sealed));
        } else {
            assert!(matches!(written.eviction, Eviction::Append { .. }), "{:?}", written.eviction);
        }
        let mut again = vec![0u8; 4096];
        store.fetch(pid, &mut again, 0).unwrap().unwrap();
        assert_eq!(again[..body_end], p[..body_end]);
    }
    assert!(torn_seen > 0 && sealed_seen > 0, "torn {torn_seen}, sealed {sealed_seen}, whole {whole_seen}");
}
