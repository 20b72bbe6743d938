//! Corrupt is never stale in the SQLite file layer: random file writes and syncs on an
//! FTL, a durable point (a clean close; or a sync, more synced work and a power loss),
//! one bit flipped in a page the durable point proves complete, reopen: every file
//! reads its newest synced content or fails with a corruption error (or the open
//! refuses the store as corrupt), never older bytes. `INTEGRITY_CASES` cases per FTL
//! and scenario (`make long` runs 1,000).

use flash::ftl::{FtlConfig, FtlKind};
use nand::{Device, Geometry, MemoryStorage};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use sqlite_flash::{Error, FileStore};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

#[path = "../../flash/tests/support/bit_rot.rs"]
mod bit_rot;

use bit_rot::{BitRot, Flip};

const NAMES: [&str; 2] = ["main.db", "main.db-journal"];

fn cases() -> u64 {
    std::env::var("INTEGRITY_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(25)
}

fn geometry() -> Geometry {
    let mut g = Geometry::paper_emulator();
    (g.channels, g.chips_per_channel, g.blocks_per_chip, g.pages_per_block, g.page_bytes) = (2, 1, 48, 16, 2048);
    g
}

/// Random writes, each followed by a sync, into `model`.
fn synced_work(store: &mut FileStore, rng: &mut ChaCha8Rng, model: &mut BTreeMap<&'static str, Vec<u8>>) {
    for _ in 0..rng.gen_range(5..30) {
        let name = NAMES[rng.gen_range(0..NAMES.len())];
        if !model.contains_key(name) {
            store.create(name);
        }
        let file = model.entry(name).or_default();
        let offset = rng.gen_range(0..=file.len() + 2000);
        let data: Vec<u8> = vec![rng.gen(); rng.gen_range(1..6000)];
        store.write(name, offset as u64, &data).unwrap();
        if file.len() < offset + data.len() {
            file.resize(offset + data.len(), 0);
        }
        file[offset..offset + data.len()].copy_from_slice(&data);
        store.sync().unwrap();
    }
}

fn is_corruption(e: &Error) -> bool {
    e.to_string().contains("corrupt")
}

/// One case; returns whether the flip was reported.
fn case(kind: FtlKind, seed: u64, power_loss: bool) -> Option<bool> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let armed = Arc::new(Mutex::new(Vec::<Flip>::new()));
    let device = Device::new(Box::new(BitRot::new(MemoryStorage::new(geometry(), true), armed.clone())));
    let config = FtlConfig { over_provisioning: 0.25, log_blocks: 8, ..FtlConfig::new(kind) };
    let mut store = FileStore::format(flash::ftl::format(device, &config).unwrap(), 0).unwrap();
    let mut model = BTreeMap::new();
    synced_work(&mut store, &mut rng, &mut model);
    store.flush().unwrap();
    if power_loss {
        synced_work(&mut store, &mut rng, &mut model);
    }
    let mut device = store.into_ftl().into_device();
    device.power_on();
    let ppn = bit_rot::flip_a_completed_page(&device, &armed, &mut rng)?;
    device.power_on();
    let what = format!("{kind:?} seed {seed} power loss {power_loss} flip in {ppn:?}");
    let opened = flash::ftl::open(device, 0).map_err(Error::from).and_then(|(ftl, done)| FileStore::open(ftl, done));
    let mut store = match opened {
        Ok(store) => store,
        Err(e) if is_corruption(&e) => return Some(true),
        Err(e) => panic!("{what}: open failed without naming corruption: {e}"),
    };
    let mut reported = false;
    for (name, content) in &model {
        let size = store.size(name).unwrap_or_else(|| panic!("{what}: {name} is gone")) as usize;
        let mut buf = vec![0u8; size];
        match store.read(name, 0, &mut buf) {
            Ok(_) => assert!(buf == *content, "{what}: {name} reads other bytes than its newest synced content"),
            Err(e) if is_corruption(&e) => reported = true,
            Err(e) => panic!("{what}: {name}: an error that does not name corruption: {e}"),
        }
    }
    Some(reported)
}

fn run(kind: FtlKind) {
    bit_rot::run_flip_cases(&format!("{kind:?}"), cases(), 25, |seed, power_loss| case(kind, seed, power_loss));
}

#[test]
fn files_on_the_page_ftl_read_newest_or_corrupt() {
    run(FtlKind::Page);
}

#[test]
fn files_on_dftl_read_newest_or_corrupt() {
    run(FtlKind::Dftl);
}

#[test]
fn files_on_the_block_ftl_read_newest_or_corrupt() {
    run(FtlKind::Block);
}
