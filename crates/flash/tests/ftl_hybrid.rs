//! The block FTL, BAST and FAST against a `HashMap` model, through merges, restarts and
//! power cuts at random flash operations; and their write amplification on sequential
//! and uniform random updates.

use flash::ftl::{self, Ftl, FtlConfig, FtlKind};
use flash::Error;
use nand::{CellType, Device, FaultyStorage, Geometry, Latencies, MemoryStorage, Ppn, Storage, SyncMode, TornOp};
use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::HashMap;

const PAGE: usize = 512;
const KINDS: [FtlKind; 3] = [FtlKind::Block, FtlKind::Bast, FtlKind::Fast];
/// Logical pages the model tests touch: 8 logical blocks, so logs fill and merge often.
const HOT_LPNS: u32 = 64;

fn geometry() -> Geometry {
    Geometry {
        channels: 2,
        chips_per_channel: 1,
        blocks_per_chip: 24,
        pages_per_block: 8,
        page_bytes: PAGE as u32,
        oob_bytes: 64,
        cell: CellType::Mlc,
        nop: 4,
        endurance: 1_000_000,
        latencies: Latencies::mlc_typical(),
    }
}

fn config(kind: FtlKind) -> FtlConfig {
    FtlConfig { over_provisioning: 0.25, log_blocks: 4, ..FtlConfig::new(kind) }
}

fn format(kind: FtlKind, storage: Box<dyn Storage>, config: &FtlConfig) -> Box<dyn Ftl> {
    let device = Device::new(storage);
    match kind {
        FtlKind::Block => ftl::block::format(device, config),
        FtlKind::Bast => ftl::bast::format(device, config),
        FtlKind::Fast => ftl::fast::format(device, config),
        // The page-level FTL as the yardstick of the ranking.
        FtlKind::Page => ftl::format(device, config),
        other => panic!("{other:?} is not a block-mapped FTL"),
    }
    .unwrap()
}

fn open(kind: FtlKind, device: Device, config: &FtlConfig, now: u64) -> (Box<dyn Ftl>, u64) {
    match kind {
        FtlKind::Block => ftl::block::open(device, config, now),
        FtlKind::Bast => ftl::bast::open(device, config, now),
        FtlKind::Fast => ftl::fast::open(device, config, now),
        other => panic!("{other:?} is not a block-mapped FTL"),
    }
    .unwrap_or_else(|e| panic!("reopen failed: {e}"))
}

#[derive(Clone, Debug)]
enum Op {
    Write {
        lpn: u32,
        fill: u8,
    },
    /// `len` consecutive pages from `lpn` (sequential runs make switch and partial merges).
    Run {
        lpn: u32,
        len: u32,
        fill: u8,
    },
    Trim {
        lpn: u32,
    },
    Read {
        lpn: u32,
    },
    Restart,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => (0..HOT_LPNS, any::<u8>()).prop_map(|(lpn, fill)| Op::Write { lpn, fill }),
        2 => (0..HOT_LPNS / 8, 1..=8u32, any::<u8>()).prop_map(|(lbn, len, fill)| Op::Run { lpn: lbn * 8, len, fill }),
        2 => (0..HOT_LPNS).prop_map(|lpn| Op::Trim { lpn }),
        2 => (0..HOT_LPNS).prop_map(|lpn| Op::Read { lpn }),
        1 => Just(Op::Restart),
    ]
}

fn page(lpn: u32, fill: u8) -> Vec<u8> {
    let mut p = vec![fill; PAGE];
    p[..4].copy_from_slice(&lpn.to_le_bytes());
    p
}

/// What a write or trim cut short may have left: the old or the new content.
#[derive(Clone, Debug)]
enum InFlight {
    Write(Vec<u8>),
    Trim,
}

struct Harness {
    kind: FtlKind,
    config: FtlConfig,
    ftl: Box<dyn Ftl>,
    model: HashMap<u32, Vec<u8>>,
    now: u64,
}

impl Harness {
    fn new(kind: FtlKind, storage: Box<dyn Storage>) -> Harness {
        let config = config(kind);
        Harness { ftl: format(kind, storage, &config), kind, config, model: HashMap::new(), now: 0 }
    }

    fn restart(self) -> Harness {
        let mut device = self.ftl.into_device();
        device.power_on();
        let (ftl, done) = open(self.kind, device, &self.config, self.now);
        Harness { ftl, now: done, ..self }
    }

    /// One page write or trim; the model follows what the FTL acknowledged. On a power
    /// cut returns the lpn and what was in flight.
    fn one(&mut self, lpn: u32, effect: InFlight) -> Result<(), (u32, InFlight)> {
        self.now += 1_000;
        let result = match &effect {
            InFlight::Write(data) => self.ftl.write(lpn, data, self.now).map(|_| ()),
            InFlight::Trim => self.ftl.trim(lpn, self.now).map(|_| ()),
        };
        match result {
            Ok(()) => {
                match effect {
                    InFlight::Write(data) => self.model.insert(lpn, data),
                    InFlight::Trim => self.model.remove(&lpn),
                };
                Ok(())
            }
            Err(Error::Device(nand::Error::PowerLost)) => Err((lpn, effect)),
            Err(e) => panic!("{:?} lpn {lpn}: unexpected error: {e}", self.kind),
        }
    }

    fn apply(&mut self, op: &Op) -> Result<(), (u32, InFlight)> {
        match *op {
            Op::Write { lpn, fill } => self.one(lpn, InFlight::Write(page(lpn, fill))),
            Op::Run { lpn, len, fill } => {
                (lpn..lpn + len).try_for_each(|l| self.one(l, InFlight::Write(page(l, fill))))
            }
            Op::Trim { lpn } => self.one(lpn, InFlight::Trim),
            Op::Read { lpn } => {
                self.check_one(lpn, None);
                Ok(())
            }
            Op::Restart => Ok(()),
        }
    }

    fn check_one(&mut self, lpn: u32, in_flight: Option<&InFlight>) {
        let got = self.ftl.read(lpn, self.now).unwrap().map(|r| r.data.to_vec());
        let expected = self.model.get(&lpn);
        let ok = got.as_ref() == expected
            || match in_flight {
                Some(InFlight::Write(new)) => got.as_ref() == Some(new),
                Some(InFlight::Trim) => got.is_none(),
                None => false,
            };
        assert!(
            ok,
            "{:?} lpn {lpn}: read {:?}, model {:?}, in flight {in_flight:?}",
            self.kind,
            got.map(|d| d[..8].to_vec()),
            expected.map(|d| d[..8].to_vec())
        );
    }

    fn check_all(&mut self, in_flight: Option<&(u32, InFlight)>) {
        for lpn in 0..self.ftl.logical_pages() {
            let flight = in_flight.filter(|(l, _)| *l == lpn).map(|(_, f)| f);
            self.check_one(lpn, flight);
        }
    }

    /// After a cut, the model takes what the FTL holds for the page that was in flight.
    fn adopt(&mut self, lpn: u32) {
        match self.ftl.read(lpn, self.now).unwrap() {
            Some(r) => self.model.insert(lpn, r.data.to_vec()),
            None => self.model.remove(&lpn),
        };
    }
}

/// Runs `ops` with power failing at mutating operation `cut_at` (if reached), then
/// restarts and checks; with `recut`, power fails again that many operations into the
/// first write after the restart (a normalising merge, if the rebuild left one
/// pending); then runs `after` and checks again after another restart.
fn run_with_cut(
    kind: FtlKind,
    ops: &[Op],
    after: &[Op],
    cut_at: Option<u64>,
    recut: Option<u64>,
    seed: u64,
) -> Option<TornOp> {
    let storage = FaultyStorage::new(MemoryStorage::new(geometry(), true), cut_at, seed);
    let mut h = Harness::new(kind, Box::new(storage));
    let mut in_flight = None;
    for op in ops {
        if let Op::Restart = op {
            if in_flight.is_none() {
                h = h.restart();
                h.check_all(None);
            }
            continue;
        }
        if let Err(flight) = h.apply(op) {
            in_flight = Some(flight);
            break;
        }
    }
    let torn = h.ftl.device().storage().last_torn();
    let mut h = h.restart();
    h.check_all(in_flight.as_ref());
    if let Some((lpn, _)) = in_flight {
        h.adopt(lpn);
    }
    if let Some(ops) = recut {
        h.ftl.device_mut().storage_mut().arm_power_cut(ops);
        match h.apply(&Op::Write { lpn: HOT_LPNS - 1, fill: 0xA5 }) {
            Err(flight) => {
                h = h.restart();
                h.check_all(Some(&flight));
                h.adopt(flight.0);
            }
            // The write took fewer operations: disarm the cut (power_on clears it).
            Ok(()) => h.ftl.device_mut().power_on(),
        }
    }
    for op in after {
        h.apply(op).unwrap_or_else(|_| panic!("power is back"));
    }
    let mut h = h.restart();
    h.check_all(None);
    torn
}

fn mutating_ops(ops: &[Op]) -> u64 {
    ops.iter()
        .map(|o| match o {
            Op::Write { .. } | Op::Trim { .. } => 1,
            Op::Run { len, .. } => *len as u64,
            _ => 0,
        })
        .sum()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Every acknowledged write reads back and trimmed pages read `None`, through
    /// merges and restarts; with a power cut at a random flash operation, the page in
    /// flight is old or new, and the FTL keeps working after the rebuild.
    #[test]
    fn block_ftl_matches_model(ops in prop::collection::vec(op(), 1..300), after in prop::collection::vec(op(), 0..60), cut in 0.0f64..1.5, seed in any::<u64>()) {
        let cut_at = (cut < 1.0).then(|| 1 + (cut * 2.0 * mutating_ops(&ops) as f64) as u64);
        run_with_cut(FtlKind::Block, &ops, &after, cut_at, None, seed);
    }

    #[test]
    fn bast_matches_model(ops in prop::collection::vec(op(), 1..300), after in prop::collection::vec(op(), 0..60), cut in 0.0f64..1.5, seed in any::<u64>()) {
        let cut_at = (cut < 1.0).then(|| 1 + (cut * 2.0 * mutating_ops(&ops) as f64) as u64);
        run_with_cut(FtlKind::Bast, &ops, &after, cut_at, None, seed);
    }

    #[test]
    fn fast_matches_model(ops in prop::collection::vec(op(), 1..300), after in prop::collection::vec(op(), 0..60), cut in 0.0f64..1.5, seed in any::<u64>()) {
        let cut_at = (cut < 1.0).then(|| 1 + (cut * 2.0 * mutating_ops(&ops) as f64) as u64);
        run_with_cut(FtlKind::Fast, &ops, &after, cut_at, None, seed);
    }
}

/// Cuts at many points of one fixed mix of random writes, sequential runs and trims:
/// host programs, merge copies (copyback) and merge erases are all torn, and nothing
/// acknowledged is lost; every third cut is followed by a second one early in the
/// first write after the rebuild.
#[test]
fn power_cuts_hit_programs_copies_and_erases() {
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let ops: Vec<Op> = (0..600)
        .map(|i| match rng.gen_range(0..10) {
            0..=5 => Op::Write { lpn: rng.gen_range(0..HOT_LPNS), fill: i as u8 },
            6 | 7 => Op::Run { lpn: rng.gen_range(0..HOT_LPNS / 8) * 8, len: rng.gen_range(1..=8), fill: i as u8 },
            _ => Op::Trim { lpn: rng.gen_range(0..HOT_LPNS) },
        })
        .collect();
    let after: Vec<Op> = (0..HOT_LPNS).map(|lpn| Op::Write { lpn, fill: 0x5A }).collect();
    for kind in KINDS {
        let (mut programs, mut copies, mut erases) = (0, 0, 0);
        for cut_at in (1..1500u64).step_by(13) {
            let recut = (cut_at % 3 == 1).then_some(1 + cut_at / 3 % 3);
            match run_with_cut(kind, &ops, &after, Some(cut_at), recut, cut_at) {
                Some(TornOp::Program { .. }) => programs += 1,
                Some(TornOp::CopyProgram { .. }) => copies += 1,
                Some(TornOp::Erase { .. }) => erases += 1,
                None => {}
            }
        }
        assert!(programs > 0 && copies > 0 && erases > 0, "{kind:?}: {programs} {copies} {erases}");
    }
}

/// A trim survives restarts: the trim record (or the block FTL's rewrite) keeps the
/// old copy from coming back even after later merges.
#[test]
fn trimmed_pages_stay_trimmed_across_restarts_and_merges() {
    for kind in KINDS {
        let mut h = Harness::new(kind, Box::new(MemoryStorage::new(geometry(), true)));
        for lpn in 0..HOT_LPNS {
            h.apply(&Op::Write { lpn, fill: 1 }).unwrap();
        }
        for lpn in (0..HOT_LPNS).step_by(3) {
            h.apply(&Op::Trim { lpn }).unwrap();
        }
        let mut h = h.restart();
        h.check_all(None);
        // Updates to other pages force merges of the logs holding the trim records.
        for round in 0..4u8 {
            for lpn in (1..HOT_LPNS).step_by(3) {
                h.apply(&Op::Write { lpn, fill: round }).unwrap();
            }
        }
        let mut h = h.restart();
        h.check_all(None);
        assert!(h.ftl.counters().host_trims == 0, "counters restart with the FTL");
    }
}

/// Pages that keep their data bytes, each checked against the model: only the current
/// version of an lpn may keep them (its live copy, or FAST's shadow: a same-version copy
/// in a newer block that a rebuild would pick), never an older version or a trimmed page.
/// Returns (pages programmed, pages with payload).
fn payload_pages(h: &Harness, when: &str) -> (usize, usize) {
    let dev = h.ftl.device();
    let g = dev.geometry().clone();
    let programmed = (0..g.total_pages()).filter(|&p| dev.storage().program_count(Ppn(p)) > 0).count();
    let mut with_payload = 0;
    for p in 0..g.total_pages() {
        let Some(data) = dev.storage().data(Ppn(p)) else { continue };
        with_payload += 1;
        let lpn = u32::from_le_bytes(data[..4].try_into().unwrap());
        assert_eq!(
            h.model.get(&lpn).map(|d| &d[..]),
            Some(data),
            "{:?} {when}: ppn {p} keeps bytes of lpn {lpn} that are not its current version",
            h.kind
        );
    }
    let live = h.model.len();
    assert!(with_payload >= live, "{:?} {when}: {with_payload} pages keep bytes, {live} live", h.kind);
    if h.kind != FtlKind::Fast {
        assert_eq!(with_payload, live, "{:?} {when}: only live pages keep their bytes", h.kind);
    }
    (programmed, with_payload)
}

/// Dead pages drop their payload: through random overwrites (single pages and
/// sequential runs) and trims of a hot set that keeps the log blocks busy, only the
/// current version of each lpn keeps its bytes (see `payload_pages`) and device memory
/// does not grow with the stale ones; a restart keeps it so and reads every page back.
/// Written through an image, the stale bytes come back when the image is reloaded, and
/// the rebuild drops them again. (The block FTL keeps no stale page past an operation,
/// so for it this only checks that.)
#[test]
fn stale_versions_keep_no_payload() {
    const HOT: u32 = 32;
    for kind in KINDS {
        let path = std::env::temp_dir().join(format!("ftl-hybrid-discard-{}-{}.img", std::process::id(), kind.name()));
        let _ = std::fs::remove_file(&path);
        let storage = MemoryStorage::create_image_with(&path, geometry(), true, SyncMode::Off).unwrap();
        // A log block for each of the hot set's 4 logical blocks (BAST), 7 random logs (FAST).
        let config = FtlConfig { log_blocks: 8, ..config(kind) };
        let ftl = format(kind, Box::new(storage), &config);
        let mut h = Harness { kind, config, ftl, model: HashMap::new(), now: 0 };
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        let mut version = 0u32;
        let mut bytes = |lpn: u32| {
            version += 1;
            let mut p = page(lpn, version as u8);
            p[4..8].copy_from_slice(&version.to_le_bytes());
            p
        };
        for lpn in 0..HOT {
            h.one(lpn, InFlight::Write(bytes(lpn))).unwrap();
        }
        let after_first = h.ftl.device().storage().memory_bytes();
        let mut most_stale = 0;
        for i in 0..1500 {
            let lpn = rng.gen_range(0..HOT);
            match i % 10 {
                0 => {
                    let first = lpn / 8 * 8;
                    for lpn in first..first + rng.gen_range(1..=8) {
                        h.one(lpn, InFlight::Write(bytes(lpn))).unwrap();
                    }
                }
                1 if h.model.contains_key(&lpn) => h.one(lpn, InFlight::Trim).unwrap(),
                _ => h.one(lpn, InFlight::Write(bytes(lpn))).unwrap(),
            }
            if i % 50 != 49 {
                continue;
            }
            let (programmed, with_payload) = payload_pages(&h, "after overwrites");
            most_stale = most_stale.max(programmed - with_payload);
            let grown = h.ftl.device().storage().memory_bytes().saturating_sub(after_first);
            let stale_payload = ((programmed - with_payload) * PAGE) as u64;
            // Cells and OOB of the blocks programmed since grow (some 40 bytes a page and
            // a block's cells); the stale payloads do not.
            assert!(
                grown <= stale_payload / 2 + 1024,
                "{kind:?}: device memory grew by {grown} bytes ({stale_payload} stale)"
            );
        }
        if kind == FtlKind::Block {
            // It erases the old block within each rewrite: nothing to discard between
            // operations.
            assert_eq!(most_stale, 0, "block FTL: only live pages stay programmed");
            std::fs::remove_file(&path).unwrap();
            continue;
        }
        assert!(most_stale >= 2 * HOT as usize / 3, "{kind:?}: at most {most_stale} stale pages at a time");
        let mut h = h.restart();
        h.check_all(None);
        payload_pages(&h, "after a restart");
        // Reload the image: every programmed page has its bytes again until the rebuild.
        let model = std::mem::take(&mut h.model);
        let config = h.config.clone();
        drop(h.ftl.into_device());
        let storage = MemoryStorage::open_image(&path).unwrap();
        let reloaded = (0..storage.geometry().total_pages()).filter(|&p| storage.data(Ppn(p)).is_some()).count();
        let (ftl, now) = open(kind, Device::new(Box::new(storage)), &config, 0);
        let mut h = Harness { kind, config, ftl, model, now };
        h.check_all(None);
        let (_, kept) = payload_pages(&h, "after reloading the image");
        assert!(reloaded > kept, "{kind:?}: the image reloads stale bytes ({reloaded} pages, {kept} kept)");
        drop(h);
        std::fs::remove_file(&path).unwrap();
    }
}

/// Write amplification after filling the device once and then `passes` over it, on
/// a metadata-only device (bytes are not needed to count).
fn write_amplification(kind: FtlKind, random: bool) -> (f64, ftl::FtlCounters) {
    let g = Geometry { channels: 2, chips_per_channel: 2, blocks_per_chip: 64, pages_per_block: 32, ..geometry() };
    let config = FtlConfig { over_provisioning: 0.1, log_blocks: 16, ..FtlConfig::new(kind) };
    let mut f = format(kind, Box::new(MemoryStorage::new(g, false)), &config);
    let lpns = f.logical_pages();
    for lpn in 0..lpns {
        f.write(lpn, &[], 0).unwrap();
    }
    let before = f.counters();
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    for i in 0..2 * lpns as u64 {
        let lpn = if random { rng.gen_range(0..lpns) } else { (i % lpns as u64) as u32 };
        f.write(lpn, &[], 0).unwrap();
    }
    let c = f.counters();
    let programs = c.flash_programs - before.flash_programs;
    (programs as f64 / (c.host_writes - before.host_writes) as f64, c)
}

#[test]
fn sequential_updates_cost_one_program_each_on_bast_and_fast() {
    for kind in [FtlKind::Bast, FtlKind::Fast] {
        let (wa, c) = write_amplification(kind, false);
        assert!((wa - 1.0).abs() < 1e-9, "{kind:?}: write amplification {wa}");
        assert!(c.merges_switch > 0 && c.merges_partial == 0 && c.merges_full == 0, "{kind:?}: {c:?}");
        assert_eq!(c.gc_page_migrations, 0, "{kind:?}");
    }
}

#[test]
fn uniform_random_updates_rank_block_above_bast_above_fast_above_page() {
    let [block, bast, fast] = KINDS.map(|k| write_amplification(k, true).0);
    let page = write_amplification(FtlKind::Page, true).0;
    assert!(
        block > bast && bast > fast && fast > page && page > 1.0,
        "block {block:.2}, bast {bast:.2}, fast {fast:.2}, page {page:.2}"
    );
}

/// Host writes per second of each FTL on a metadata-only device the size of the paper
/// emulator with 256 blocks per chip (release build), once the device is full: one
/// sequential pass, then uniform random updates (fewer on the block FTL, whose every
/// update rewrites a block):
/// `cargo test --release -p flash --test ftl_hybrid -- --ignored --nocapture host_writes_per_second`
#[test]
#[ignore]
fn host_writes_per_second() {
    let g = Geometry { blocks_per_chip: 256, ..Geometry::paper_emulator() };
    for kind in KINDS {
        let config = FtlConfig::new(kind);
        let mut f = format(kind, Box::new(MemoryStorage::new(g.clone(), false)), &config);
        let lpns = f.logical_pages();
        let mut now = 0;
        for lpn in 0..lpns {
            now = f.write(lpn, &[], now).unwrap().end_ns;
        }
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let random_writes = if kind == FtlKind::Block { lpns / 16 } else { lpns };
        for (pattern, writes) in [("sequential", lpns), ("random", random_writes)] {
            let before = f.counters();
            let start = std::time::Instant::now();
            for i in 0..writes {
                let lpn = if pattern == "random" { rng.gen_range(0..lpns) } else { i };
                now = f.write(lpn, &[], now).unwrap().end_ns;
            }
            let secs = start.elapsed().as_secs_f64();
            let c = f.counters();
            println!(
                "{:5} {pattern:10} {writes:>7} host writes: {:>9.0} host writes/s, write amplification {:5.2}, merges switch/partial/full {}/{}/{}",
                kind.name(),
                writes as f64 / secs,
                (c.flash_programs - before.flash_programs) as f64 / writes as f64,
                c.merges_switch - before.merges_switch,
                c.merges_partial - before.merges_partial,
                c.merges_full - before.merges_full
            );
        }
    }
}
