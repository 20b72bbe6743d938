//! The file layer against a model: random creates, writes (partial pages, holes,
//! several pages), truncates, deletes and reads, each followed by a sync, with a power
//! cut at a random flash operation. After the cut the reopened files must match the
//! model before or after the operation in flight (page by page for a write).

use flash::ftl::{FtlConfig, FtlKind};
use nand::{Device, FaultyStorage, Geometry, MemoryStorage};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use sqlite_flash::{Error, FileStore};
use std::collections::BTreeMap;

type Model = BTreeMap<String, Vec<u8>>;
const NAMES: [&str; 3] = ["main.db", "main.db-wal", "main.db-journal"];
const OPS: usize = 120;

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
}

fn next_op(rng: &mut ChaCha8Rng, model: &Model) -> Op {
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
    }
}

fn apply_store(store: &mut FileStore, op: &Op) -> Result<(), Error> {
    match op {
        Op::Write { name, offset, data } => store.write(name, *offset, data)?,
        Op::Truncate { name, size } => store.truncate(name, *size)?,
        Op::Delete { name } => store.delete(name)?,
        Op::Create { name } => store.create(name),
    }
    store.sync()
}

fn read_all(store: &mut FileStore, name: &str) -> Vec<u8> {
    let size = store.size(name).expect("file exists") as usize;
    let mut buf = vec![0u8; size];
    assert_eq!(store.read(name, 0, &mut buf).expect("read"), size);
    buf
}

/// Runs the ops until the cut; returns the store and the models before and after the
/// op in flight (equal when no cut came).
fn run(kind: FtlKind, cut_at: Option<u64>, seed: u64) -> (FileStore, Model, Model) {
    let storage = FaultyStorage::new(MemoryStorage::new(geometry(), true), cut_at, seed);
    let ftl = flash::ftl::format(Device::new(Box::new(storage)), &config(kind)).expect("format");
    let mut store = FileStore::format(ftl, 0).expect("file table");
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut model = Model::new();
    for _ in 0..OPS {
        let op = next_op(&mut rng, &model);
        let mut after = model.clone();
        apply_model(&mut after, &op);
        if apply_store(&mut store, &op).is_err() {
            return (store, model, after);
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
    (store, model.clone(), model)
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
    cut_runs(FtlKind::Page, 150);
}

#[test]
fn files_match_the_model_after_power_cuts_on_dftl_and_the_block_ftl() {
    cut_runs(FtlKind::Dftl, 50);
    cut_runs(FtlKind::Block, 50);
}

fn cut_runs(kind: FtlKind, cuts: usize) {
    let seed = 11;
    let (store, _, _) = run(kind, None, seed);
    let total = operations(store.ftl().device());
    let fresh = flash::ftl::format(Device::new(Box::new(MemoryStorage::new(geometry(), true))), &config(kind));
    let formatted = FileStore::format(fresh.expect("format"), 0).expect("file table");
    let setup = operations(formatted.ftl().device());
    assert!(total > setup + 200, "the run does enough flash work: {total} operations, {setup} to set up");
    let mut rng = ChaCha8Rng::seed_from_u64(99);
    for _ in 0..cuts {
        let cut_at = rng.gen_range(setup + 1..=total);
        let (store, before, after) = run(kind, Some(cut_at), seed);
        let mut device = store.into_ftl().into_device();
        device.power_on();
        let (ftl, done) = flash::ftl::open(device, 0).expect("FTL rebuild");
        let mut store = FileStore::open(ftl, done).unwrap_or_else(|e| panic!("{kind:?} cut at {cut_at}: {e}"));
        let names: Vec<String> = store.files().into_iter().map(|(n, _)| n).collect();
        let names_before: Vec<String> = before.keys().cloned().collect();
        let names_after: Vec<String> = after.keys().cloned().collect();
        assert!(names == names_before || names == names_after, "{kind:?} cut at {cut_at}: files {names:?}");
        for name in names {
            let got = read_all(&mut store, &name);
            let old = before.get(&name).cloned().unwrap_or_default();
            let new = after.get(&name).cloned().unwrap_or_default();
            assert!(
                got.len() == old.len() || got.len() == new.len(),
                "{kind:?} cut at {cut_at}: {name} size {}",
                got.len()
            );
            for (i, page) in got.chunks(2048).enumerate() {
                let range = i * 2048..i * 2048 + page.len();
                let expect = |v: &Vec<u8>| {
                    let mut p = v.get(range.start..range.end.min(v.len())).unwrap_or(&[]).to_vec();
                    p.resize(page.len(), 0);
                    p
                };
                assert!(page == expect(&old) || page == expect(&new), "{kind:?} cut at {cut_at}: {name} page {i}");
            }
        }
        // The reopened store takes more work.
        let name = NAMES[0];
        store.create(name);
        store.write(name, 100, &[7u8; 5000]).expect("write after reopen");
        store.sync().expect("sync after reopen");
        let mut buf = [0u8; 5000];
        store.read(name, 100, &mut buf).expect("read after reopen");
        assert_eq!(buf, [7u8; 5000]);
    }
}
