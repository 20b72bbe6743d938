//! The file layer against a model: random creates, writes (partial pages, holes,
//! several pages), truncates, deletes, syncs and reads, with a power cut at a random
//! flash operation, for page caches of several bounds. After the cut the reopened
//! store may have lost only what the last completed sync did not cover: its files are
//! those of a state since that sync, each file's size is one it had since then, and
//! each page holds one of the versions it had since then (the page cache writes pages
//! back in any order under pressure).

use flash::ftl::{FtlConfig, FtlKind};
use nand::{Device, FaultyStorage, Geometry, MemoryStorage};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use sqlite_flash::{Error, FileStore};
use std::collections::BTreeMap;

type Model = BTreeMap<String, Vec<u8>>;
const NAMES: [&str; 3] = ["main.db", "main.db-wal", "main.db-journal"];
const OPS: usize = 180;

fn geometry() -> Geometry {
    let mut g = Geometry::paper_emulator();
    g.channels = 2;
    g.chips_per_channel = 1;
    g.blocks_per_chip = 48;
    g.pages_per_block = 16;
    g.page_bytes = 2048;
    g
}

#[derive(Clone, Debug)]
enum Op {
    Write { name: &'static str, offset: u64, data: Vec<u8> },
    Truncate { name: &'static str, size: u64 },
    Delete { name: &'static str },
    Create { name: &'static str },
    Sync,
}

fn next_op(rng: &mut ChaCha8Rng, model: &Model) -> Op {
    if rng.gen_range(0..4) == 0 {
        return Op::Sync;
    }
    let name = NAMES[rng.gen_range(0..NAMES.len())];
    let Some(content) = model.get(name) else {
        return Op::Create { name };
    };
    let size = content.len() as u64;
    match rng.gen_range(0..10) {
        0..=5 => {
            let offset = rng.gen_range(0..=size + 3000);
            let len = rng.gen_range(1..7000);
            let byte = rng.gen::<u8>();
            Op::Write { name, offset, data: (0..len).map(|i| byte.wrapping_add(i as u8)).collect() }
        }
        6..=8 => Op::Truncate { name, size: rng.gen_range(0..=size + 2500) },
        _ => Op::Delete { name },
    }
}

fn apply_model(model: &mut Model, op: &Op) {
    match op {
        Op::Write { name, offset, data } => {
            let f = model.entry(name.to_string()).or_default();
            let end = *offset as usize + data.len();
            if f.len() < end {
                f.resize(end, 0);
            }
            f[*offset as usize..end].copy_from_slice(data);
        }
        Op::Truncate { name, size } => model.entry(name.to_string()).or_default().resize(*size as usize, 0),
        Op::Delete { name } => {
            model.remove(*name);
        }
        Op::Create { name } => {
            model.entry(name.to_string()).or_default();
        }
        Op::Sync => {}
    }
}

fn apply_store(store: &mut FileStore, op: &Op) -> Result<(), Error> {
    match op {
        Op::Write { name, offset, data } => store.write(name, *offset, data)?,
        Op::Truncate { name, size } => store.truncate(name, *size)?,
        Op::Delete { name } => store.delete(name)?,
        Op::Create { name } => store.create(name),
        Op::Sync => store.sync()?,
    }
    Ok(())
}

fn read_all(store: &mut FileStore, name: &str) -> Vec<u8> {
    let size = store.size(name).expect("file exists") as usize;
    let mut buf = vec![0u8; size];
    assert_eq!(store.read(name, 0, &mut buf).expect("read"), size);
    buf
}

/// Runs the ops until the cut; returns the store and the states a cut may leave: the
/// model at the last completed sync, after each op since, and after the op in flight.
fn run(kind: FtlKind, cache_pages: usize, cut_at: Option<u64>, seed: u64) -> (FileStore, Vec<Model>) {
    let storage = FaultyStorage::new(MemoryStorage::new(geometry(), true), cut_at, seed);
    let ftl = flash::ftl::format(Device::new(Box::new(storage)), &config(kind)).expect("format");
    let mut store = FileStore::format(ftl, 0).expect("file table");
    store.set_cache_pages(cache_pages).expect("cache bound");
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut model = Model::new();
    let mut since_sync = vec![model.clone()];
    for _ in 0..OPS {
        let op = next_op(&mut rng, &model);
        let mut after = model.clone();
        apply_model(&mut after, &op);
        since_sync.push(after.clone());
        if apply_store(&mut store, &op).is_err() {
            return (store, since_sync);
        }
        if matches!(op, Op::Sync) {
            since_sync = vec![after.clone()];
        }
        model = after;
        // Reads match the model while power is on.
        for name in NAMES {
            if model.contains_key(name) {
                let got = read_all(&mut store, name);
                let first_difference = got.iter().zip(&model[name]).position(|(a, b)| a != b);
                assert!(
                    got.len() == model[name].len() && first_difference.is_none(),
                    "{name}: {} bytes, model {}, first difference at {first_difference:?}",
                    got.len(),
                    model[name].len()
                );
            }
        }
    }
    // The final sync is an op a cut may hit too.
    if store.sync().is_err() {
        return (store, since_sync);
    }
    (store, vec![model])
}

fn config(kind: FtlKind) -> FtlConfig {
    FtlConfig { over_provisioning: 0.25, log_blocks: 8, ..FtlConfig::new(kind) }
}

fn operations(device: &Device) -> u64 {
    let c = device.counters();
    c.page_programs + c.reprograms + c.copybacks + c.erases
}

#[test]
fn files_match_the_model_after_power_cuts_on_the_page_ftl() {
    cut_runs(FtlKind::Page, 0, 60);
    cut_runs(FtlKind::Page, 3, 90);
    cut_runs(FtlKind::Page, sqlite_flash::DEFAULT_CACHE_PAGES, 60);
}

#[test]
fn files_match_the_model_after_power_cuts_on_dftl_and_the_block_ftl() {
    cut_runs(FtlKind::Dftl, 3, 40);
    cut_runs(FtlKind::Block, 3, 40);
}

/// The page of `name` at `range` in `state`, zero-padded to `len` (`None`: no such file).
fn page_of(state: &Model, name: &str, range: std::ops::Range<usize>, len: usize) -> Option<Vec<u8>> {
    let v = state.get(name)?;
    let mut p = v.get(range.start..range.end.min(v.len())).unwrap_or(&[]).to_vec();
    p.resize(len, 0);
    Some(p)
}

fn cut_runs(kind: FtlKind, cache_pages: usize, cuts: usize) {
    let seed = 11;
    let (store, _) = run(kind, cache_pages, None, seed);
    let total = operations(store.ftl().device());
    let fresh = flash::ftl::format(Device::new(Box::new(MemoryStorage::new(geometry(), true))), &config(kind));
    let formatted = FileStore::format(fresh.expect("format"), 0).expect("file table");
    let setup = operations(formatted.ftl().device());
    assert!(total > setup + 200, "the run does enough flash work: {total} operations, {setup} to set up");
    let mut rng = ChaCha8Rng::seed_from_u64(99);
    let mut lost_something = 0;
    for _ in 0..cuts {
        let cut_at = rng.gen_range(setup + 1..=total);
        let (store, states) = run(kind, cache_pages, Some(cut_at), seed);
        let at = format!("{kind:?}, cache of {cache_pages} pages, cut at {cut_at}");
        let mut device = store.into_ftl().into_device();
        device.power_on();
        let (ftl, done) = flash::ftl::open(device, 0).expect("FTL rebuild");
        let mut store = FileStore::open(ftl, done).unwrap_or_else(|e| panic!("{at}: {e}"));
        let names: Vec<String> = store.files().into_iter().map(|(n, _)| n).collect();
        assert!(
            states.iter().any(|m| m.keys().eq(names.iter())),
            "{at}: files {names:?}, none of the states since the last sync"
        );
        let mut whole = true;
        for name in names {
            let got = read_all(&mut store, &name);
            assert!(
                states.iter().any(|m| m.get(&name).is_some_and(|v| v.len() == got.len())),
                "{at}: {name} size {}",
                got.len()
            );
            for (i, page) in got.chunks(2048).enumerate() {
                let range = i * 2048..i * 2048 + page.len();
                let versions: Vec<Vec<u8>> =
                    states.iter().filter_map(|m| page_of(m, &name, range.clone(), page.len())).collect();
                assert!(versions.iter().any(|v| v == page), "{at}: {name} page {i} is no version since the last sync");
                let last = states.last().and_then(|m| page_of(m, &name, range.clone(), page.len()));
                whole &= last.as_deref() == Some(page);
            }
        }
        lost_something += usize::from(!whole);
        // The reopened store takes more work.
        let name = NAMES[0];
        store.create(name);
        store.write(name, 100, &[7u8; 5000]).expect("write after reopen");
        store.sync().expect("sync after reopen");
        let mut buf = [0u8; 5000];
        store.read(name, 100, &mut buf).expect("read after reopen");
        assert_eq!(buf, [7u8; 5000]);
    }
    if cache_pages > 0 {
        assert!(lost_something > 0, "{kind:?}, cache of {cache_pages} pages: some cut loses unsynced writes");
    }
}

/// A cut (the RAM state dropped, the FTL rebuilt from flash) loses what was written
/// since the last sync and keeps what it covered; partial writes to one page before a
/// sync cost one page program with the cache and one each without.
#[test]
fn a_cut_loses_only_unsynced_writes_and_the_cache_coalesces_partial_writes() {
    for cache_pages in [0, 64] {
        let ftl =
            flash::ftl::format(Device::new(Box::new(MemoryStorage::new(geometry(), true))), &config(FtlKind::Page));
        let mut store = FileStore::format(ftl.expect("format"), 0).expect("file table");
        store.set_cache_pages(cache_pages).expect("bound");
        store.create("main.db");
        for i in 0..10u8 {
            store.write("main.db", i as u64 * 100, &[i + 1; 100]).expect("write");
        }
        let before = store.counters().write_pages;
        store.sync().expect("sync");
        let pages = store.counters().write_pages;
        assert_eq!(pages, if cache_pages == 0 { 10 } else { 1 }, "page programs for 10 partial writes");
        assert!(before == 0 || cache_pages == 0);
        store.write("main.db", 0, &[0xEE; 50]).expect("unsynced write");
        let mut device = store.into_ftl().into_device();
        device.power_on();
        let (ftl, done) = flash::ftl::open(device, 0).expect("FTL rebuild");
        let mut store = FileStore::open(ftl, done).expect("reopen");
        let got = read_all(&mut store, "main.db");
        assert_eq!(got.len(), 1000);
        let expect_first = if cache_pages == 0 { 0xEE } else { 1 };
        assert_eq!(got[0], expect_first, "cache of {cache_pages}: the unsynced write is lost with the cache only");
        assert!(
            got[100..].chunks(100).enumerate().all(|(i, c)| c.iter().all(|&b| b == i as u8 + 2)),
            "synced bytes survive"
        );
    }
}
