//! Criterion benchmarks of the engine's hot-path primitives: the page
//! diff that feeds the log and the IPA rule (over the whole page and over the ranges an
//! operation wrote), delta-record encoding and decoding, a buffer-pool hit, one logged
//! row update (page change, before-image rebuild, diff), and a primary-key lookup
//! (B+-tree descent, buffer hits, row decode).
//! Inputs are built from a seeded ChaCha RNG, so every run measures the same work.
//! `cargo bench -p engine --bench primitives`.

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use engine::buffer::{BufferPool, CleanerPolicy, Pages, Replacement};
use engine::delta::{self, Changes, IpaScheme};
use engine::journal::NoJournal;
use engine::logrec;
use engine::oplog::OpKind;
use engine::page::{self, Kind};
use engine::store::{PageId, PageStore};
use engine::types::Value;
use engine::{Database, DbOptions};
use flash::{Flash, IpaMode, RegionId, RegionSpec};
use nand::{CellType, Device, Geometry, Latencies, MemoryStorage};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::hint::black_box;

const PAGE_BYTES: usize = 4096;

fn device(blocks_per_chip: u32) -> Device {
    let geometry = Geometry {
        channels: 2,
        chips_per_channel: 4,
        blocks_per_chip,
        pages_per_block: 64,
        page_bytes: PAGE_BYTES as u32,
        oob_bytes: 128,
        cell: CellType::Slc,
        nop: 4,
        endurance: 1_000_000,
        latencies: Latencies::mlc_typical(),
    };
    Device::new(Box::new(MemoryStorage::new(geometry, true)))
}

/// A random page and a copy with `changed` bytes changed at random offsets (a typical
/// OLTP update changes a few bytes of a row and of the page header).
fn page_pair(rng: &mut ChaCha8Rng, changed: usize) -> (Vec<u8>, Vec<u8>) {
    let base: Vec<u8> = (0..PAGE_BYTES).map(|_| rng.gen()).collect();
    let mut current = base.clone();
    for _ in 0..changed {
        let at = rng.gen_range(0..PAGE_BYTES);
        current[at] = !current[at];
    }
    (base, current)
}

fn diff(c: &mut Criterion) {
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let mut out = Changes::default();
    for changed in [0, 8, 64] {
        let (base, current) = page_pair(&mut rng, changed);
        c.bench_function(&format!("diff 4 KiB page, {changed} bytes changed"), |b| {
            b.iter(|| {
                delta::diff(black_box(&base), black_box(&current), 32, 4000, &mut out);
                out.bytes()
            })
        });
    }
}

/// The log's diff of one operation's change (8 bytes of a row and the 8-byte LSN): over
/// the whole page, and over the two ranges the operation wrote.
fn log_diff(c: &mut Criterion) {
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let (before, mut after) = page_pair(&mut rng, 0);
    for at in (0..8).chain(1500..1508) {
        after[at] = !before[at];
    }
    let mut spans = Vec::new();
    c.bench_function("log diff, whole 4 KiB page, 16 bytes changed", |b| {
        b.iter(|| {
            logrec::diff_spans(black_box(&before), black_box(&after), &mut spans);
            spans.len()
        })
    });
    let ranges = [(0, 8), (1500, 1508)];
    c.bench_function("log diff, the 2 ranges written, 16 bytes changed", |b| {
        b.iter(|| {
            logrec::diff_spans_in(black_box(&before), black_box(&after), &ranges, &mut spans);
            spans.len()
        })
    });
}

fn delta_records(c: &mut Criterion) {
    let mut rng = ChaCha8Rng::seed_from_u64(2);
    let scheme = IpaScheme::new(2, 4, IpaScheme::DEFAULT_V).expect("a valid scheme");
    let (base, current) = page_pair(&mut rng, 0);
    let mut current = current;
    // Four body bytes and two header bytes: one record of [2×4].
    for at in [10, 20, 600, 601, 1200, 3000] {
        current[at] = !base[at];
    }
    let mut changes = Changes::default();
    delta::diff(&base, &current, 32, 4000, &mut changes);
    let mut encoded = Vec::new();
    c.bench_function("delta encode 1 record [2x4]", |b| {
        b.iter(|| {
            delta::encode_records(scheme, black_box(&changes), black_box(&current), 1, &mut encoded);
            encoded.len()
        })
    });
    delta::encode_records(scheme, &changes, &current, 1, &mut encoded);
    c.bench_function("delta decode 1 record [2x4]", |b| {
        b.iter(|| delta::decode_record(scheme, black_box(&encoded), 4000).map(|r| r.map(|r| r.pairs.len())))
    });
}

fn buffer_hit(c: &mut Criterion) {
    const PAGES: u32 = 1024;
    let flash = Flash::format(device(64), vec![RegionSpec::new("r", IpaMode::Slc)]).expect("a region");
    let mut store = PageStore::new(Box::new(flash), PAGE_BYTES).expect("a page store");
    store.set_scheme(RegionId(0), IpaScheme::new(2, 4, 4).expect("a valid scheme")).expect("scheme set");
    let body_end = store.body_end(0);
    let mut pool = BufferPool::new(store, PAGES as usize, Replacement::Clock, CleanerPolicy::NonEager);
    let mut journal = NoJournal::new(1);
    for no in 0..PAGES {
        let mut pages = Pages { pool: &mut pool, journal: &mut journal };
        let f = pages.create(PageId { region: 0, page: no }).expect("page created");
        page::init(pages.page_mut(f), body_end, no, 1, Kind::Heap, 0);
        pages.unpin(f);
        pool.end_op(&mut journal, 0, 0, OpKind::Update, None).expect("operation ends");
    }
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    c.bench_function("buffer fetch hit + unpin, 1024 resident pages", |b| {
        b.iter_batched(
            || PageId { region: 0, page: rng.gen_range(0..PAGES) },
            |pid| {
                let f = pool.fetch(pid, &mut journal).expect("resident");
                pool.unpin(f);
                f
            },
            BatchSize::SmallInput,
        )
    });
}

/// One in-place row update through the pool: `page_mut` + `page::replace` of a 100-byte
/// tuple on a dirty resident page, then `end_op` (before images rebuilt over the ranges
/// written, diffed, kept for undo; no log device).
fn logged_update(c: &mut Criterion) {
    let flash = Flash::format(device(64), vec![RegionSpec::new("r", IpaMode::Slc)]).expect("a region");
    let store = PageStore::new(Box::new(flash), PAGE_BYTES).expect("a page store");
    let body_end = store.body_end(0);
    let mut pool = BufferPool::new(store, 16, Replacement::Clock, CleanerPolicy::NonEager);
    let mut journal = NoJournal::new(1);
    let pid = PageId { region: 0, page: 0 };
    let f = pool.create(pid, &mut journal).expect("page created");
    page::init(pool.page_mut(f), body_end, 0, 1, Kind::Heap, 0);
    for _ in 0..30 {
        page::insert(pool.page_mut(f), body_end, &[7u8; 100]).expect("fits");
    }
    pool.unpin(f);
    pool.end_op(&mut journal, 0, 0, OpKind::Update, None).expect("operation ends");
    let mut undo = engine::oplog::UndoLog::default();
    let mut round = 0u8;
    c.bench_function("row update 100 bytes in place + end_op, dirty page", |b| {
        b.iter(|| {
            round = round.wrapping_add(1);
            let f = pool.fetch(pid, &mut journal).expect("resident");
            page::replace(pool.page_mut(f), body_end, 17, &[round; 100]);
            pool.unpin(f);
            undo.clear();
            pool.end_op(&mut journal, 1, 0, OpKind::Update, Some(&mut undo)).expect("operation ends")
        })
    });
}

fn primary_key_get(c: &mut Criterion) {
    const ROWS: i64 = 50_000;
    let mut db = Database::create(device(256), DbOptions::default()).expect("a database");
    db.execute("CREATE TABLE account (id INT PRIMARY KEY, branch INT, balance BIGINT, name CHAR(40))")
        .expect("table created");
    let t = db.table_id("account").expect("the table");
    let tx = db.begin();
    for id in 0..ROWS {
        let row = [Value::Int(id), Value::Int(id % 10), Value::Int(id * 3), Value::Text(format!("name {id}"))];
        db.insert(&tx, t, &row).expect("row inserted");
    }
    db.commit(tx).expect("committed");
    let mut rng = ChaCha8Rng::seed_from_u64(4);
    // One reading transaction for every lookup: a commit per lookup would measure the
    // log force, not the descent.
    let tx = db.begin();
    c.bench_function("primary-key get, 50,000 rows, all resident", |b| {
        b.iter_batched(
            || [Value::Int(rng.gen_range(0..ROWS))],
            |key| db.get(&tx, t, &key).expect("lookup").map(|r| r.len()),
            BatchSize::SmallInput,
        )
    });
    db.commit(tx).expect("read-only commit");
}

criterion_group!(benches, diff, log_diff, delta_records, buffer_hit, logged_update, primary_key_get);
criterion_main!(benches);
