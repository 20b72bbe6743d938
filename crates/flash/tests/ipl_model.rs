//! The IPL store against a model: every DB page reads back its latest content through
//! first writes, logged rewrites, log records (`write_log` and `log`/`flush_log`),
//! trims, merges, reopens and a power cut at a random flash operation.

use flash::ipl::{IplConfig, IplStore};
use flash::{IpaMode, PageDevice, RegionId, RegionSpec};
use nand::{CellType, Device, FaultyStorage, Geometry, Latencies, MemoryStorage};
use proptest::prelude::*;
use std::collections::HashMap;

const FLASH_PAGE: usize = 512;
const DB_PAGE: usize = 1024;
const PAGES: u32 = 12;
const R: RegionId = RegionId(0);

fn geometry() -> Geometry {
    Geometry {
        channels: 1,
        chips_per_channel: 2,
        blocks_per_chip: 12,
        pages_per_block: 8,
        page_bytes: FLASH_PAGE as u32,
        oob_bytes: 64,
        cell: CellType::Slc,
        nop: 4,
        endurance: 1_000_000,
        latencies: Latencies::slc_typical(),
    }
}

/// 3 DB pages of 2 flash pages per 8-page unit, 8 sectors of 128 B per unit: pages
/// 0..12 fill 4 units, whose log regions fill (and merge) after a few updates.
fn config() -> IplConfig {
    IplConfig {
        blocks_per_unit: 1,
        db_page_bytes: DB_PAGE as u32,
        log_region_bytes: 1024,
        sector_bytes: 128,
        update_records: true,
    }
}

#[derive(Clone, Debug)]
enum Op {
    Write { page: u32, fill: u8 },
    Log { page: u32, offset: usize, len: usize, value: u8, api: bool },
    Trim { page: u32 },
    Read { page: u32 },
    Reopen,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0..PAGES, any::<u8>()).prop_map(|(page, fill)| Op::Write { page, fill }),
        6 => (0..PAGES, 0..DB_PAGE, 1..200usize, any::<u8>(), any::<bool>())
            .prop_map(|(page, offset, len, value, api)| Op::Log { page, offset, len: len.min(DB_PAGE - offset), value, api }),
        1 => (0..PAGES).prop_map(|page| Op::Trim { page }),
        2 => (0..PAGES).prop_map(|page| Op::Read { page }),
        1 => Just(Op::Reopen),
    ]
}

fn page_of(page: u32, fill: u8) -> Vec<u8> {
    (0..DB_PAGE).map(|i| fill.wrapping_add((i as u32 ^ page) as u8)).collect()
}

fn read(store: &mut IplStore, page: u32) -> Option<Vec<u8>> {
    let mut buf = vec![0; DB_PAGE];
    store.read_page(R, page, &mut buf, 0).unwrap().map(|_| buf)
}

/// A page and its new content (`None`: trimmed).
type Change = (u32, Option<Vec<u8>>);

/// Applies `op`; returns the page it changes and its new content.
fn apply(store: &mut IplStore, model: &HashMap<u32, Vec<u8>>, op: &Op) -> Result<Option<Change>, flash::Error> {
    match *op {
        Op::Write { page, fill } => {
            let data = page_of(page, fill);
            store.write_page(R, page, &data, 0)?;
            Ok(Some((page, Some(data))))
        }
        Op::Log { page, offset, len, value, api } => {
            let Some(old) = model.get(&page) else { return Ok(None) };
            let mut new = old.clone();
            new[offset..offset + len].fill(value);
            let bytes = vec![value; len];
            if api {
                store.log(R, page, offset, &bytes, 0)?;
                store.flush_log(R, page, 0)?;
            } else {
                store.write_log(R, page * 2, &[(offset, &bytes)], 0)?;
            }
            Ok(Some((page, Some(new))))
        }
        Op::Trim { page } => {
            store.trim(R, page * 2, 0)?;
            store.trim(R, page * 2 + 1, 0)?;
            Ok(Some((page, None)))
        }
        Op::Read { page } => {
            assert_eq!(read(store, page).as_ref(), model.get(&page), "page {page}");
            Ok(None)
        }
        Op::Reopen => Ok(None),
    }
}

fn reopen(device: Device) -> IplStore {
    let mut device = device;
    loop {
        device.power_on();
        match IplStore::open_or_keep(device, 0) {
            Ok((store, _)) => return store,
            Err(failed) => {
                let (e, d) = *failed;
                assert!(matches!(e, flash::Error::Device(nand::Error::PowerLost)), "reopen failed: {e}");
                device = d;
            }
        }
    }
}

fn check_all(store: &mut IplStore, model: &HashMap<u32, Vec<u8>>) {
    for page in 0..PAGES {
        assert_eq!(read(store, page).as_ref(), model.get(&page), "page {page} after reopen");
    }
}

/// Runs `ops`; returns whether the cut happened and the torn writes the reopen after
/// it found.
fn run(ops: &[Op], cut_at: Option<u64>, seed: u64) -> (bool, u64) {
    // Format erases every block first; the cut counts from the first op after it.
    let format_erases = geometry().total_blocks() as u64;
    let storage = FaultyStorage::new(MemoryStorage::new(geometry(), true), cut_at.map(|c| c + format_erases), seed);
    let device = Device::new(Box::new(storage));
    let mut store = IplStore::format(device, config(), vec![RegionSpec::new("data", IpaMode::None)]).unwrap();
    let mut model: HashMap<u32, Vec<u8>> = HashMap::new();
    let mut cut = (false, 0);
    for op in ops {
        if let Op::Reopen = op {
            store = reopen(store.into_device());
            check_all(&mut store, &model);
            continue;
        }
        match apply(&mut store, &model, op) {
            Ok(Some((page, content))) => {
                match content {
                    Some(c) => model.insert(page, c),
                    None => model.remove(&page),
                };
            }
            Ok(None) => {}
            Err(flash::Error::Device(nand::Error::PowerLost)) => {
                // The op in flight is all or nothing (a trim of a DB page is per flash
                // page: a cut between its two trims leaves it unreadable as a whole, read
                // as not written when the first part is gone).
                let old = model.get(&op_page(op)).cloned();
                let new = match op {
                    Op::Trim { .. } => None,
                    _ => apply_to_model(&model, op),
                };
                store = reopen(store.into_device());
                cut = (true, store.rebuild_report().torn);
                let page = op_page(op);
                for p in (0..PAGES).filter(|&p| p != page) {
                    assert_eq!(read(&mut store, p).as_ref(), model.get(&p), "page {p} after the cut");
                }
                let got = read(&mut store, page);
                assert!(got == old || got == new, "page {page} in flight: neither old nor new");
                match got {
                    Some(c) => model.insert(page, c),
                    None => model.remove(&page),
                };
            }
            Err(e) => panic!("{op:?}: {e}"),
        }
    }
    store = reopen(store.into_device());
    check_all(&mut store, &model);
    cut
}

fn op_page(op: &Op) -> u32 {
    match *op {
        Op::Write { page, .. } | Op::Log { page, .. } | Op::Trim { page } | Op::Read { page } => page,
        Op::Reopen => u32::MAX,
    }
}

fn apply_to_model(model: &HashMap<u32, Vec<u8>>, op: &Op) -> Option<Vec<u8>> {
    match *op {
        Op::Write { page, fill } => Some(page_of(page, fill)),
        Op::Log { page, offset, len, value, .. } => model.get(&page).map(|old| {
            let mut new = old.clone();
            new[offset..offset + len].fill(value);
            new
        }),
        _ => None,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn ipl_store_matches_model(ops in prop::collection::vec(op(), 1..300)) {
        run(&ops, None, 0);
    }

    #[test]
    fn ipl_store_survives_a_power_cut(ops in prop::collection::vec(op(), 1..300), cut_at in 1..400u64, seed in any::<u64>()) {
        run(&ops, Some(cut_at), seed);
    }
}

/// Merges happen in these runs (the model test is not vacuous about them).
#[test]
fn updates_force_merges_and_reads_pay_for_the_log() {
    let device = Device::new(Box::new(MemoryStorage::new(geometry(), true)));
    let mut store = IplStore::format(device, config(), vec![RegionSpec::new("data", IpaMode::None)]).unwrap();
    for page in 0..3 {
        store.write_page(R, page, &page_of(page, 1), 0).unwrap();
    }
    for i in 0..40 {
        store.write_log(R, 2, &[(i * 10, &[i as u8; 50])], 0).unwrap();
    }
    let c = store.counters(R);
    assert!(c.merges >= 4, "{c:?}");
    let before = store.counters(R).log_sector_reads;
    read(&mut store, 1).unwrap();
    assert!(store.counters(R).log_sector_reads > before);
}

/// One fixed op sequence, cut at each of its first 300 flash operations (it has about
/// 200): the cuts land in first writes, sector writes, merges and erases, and
/// many leave torn writes for the reopen to find.
#[test]
fn power_cuts_land_everywhere() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
    let mut ops = Vec::new();
    for page in 0..PAGES {
        ops.push(Op::Write { page, fill: page as u8 });
    }
    for _ in 0..150 {
        let page = rng.gen_range(0..PAGES);
        let offset = rng.gen_range(0..DB_PAGE - 64);
        ops.push(Op::Log { page, offset, len: rng.gen_range(1..64), value: rng.gen(), api: rng.gen() });
        if rng.gen_bool(0.05) {
            ops.push(Op::Trim { page: rng.gen_range(0..PAGES) });
        }
    }
    let (mut cuts, mut torn) = (0, 0);
    for cut_at in 1..300 {
        let (cut, t) = run(&ops, Some(cut_at), cut_at);
        cuts += cut as u32;
        torn += t;
    }
    assert!(cuts >= 150, "cuts that landed: {cuts}");
    assert!(torn > cuts as u64 / 4, "torn writes found: {torn} in {cuts} cuts");
}
