//! The page-mapping FTL and DFTL against a model: every acknowledged write reads back
//! with its bytes and every trimmed page reads `None`, through GC, CMT evictions,
//! power cuts at random mutating operations and rebuilds by scan.

use flash::ftl::{self, Ftl, FtlConfig, FtlKind};
use flash::{Error, Flash, IpaMode, RegionSpec, VictimPolicy};
use nand::{CellType, Device, FaultyStorage, Geometry, Latencies, MemoryStorage};
use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::HashMap;
use support::geometry::small_geometry;
use support::model_check::check_against_model;

mod support {
    pub mod geometry;
    pub mod model_check;
}

const PAGE: usize = 512;

fn geometry() -> Geometry {
    small_geometry(PAGE as u32)
}

fn config(kind: FtlKind, cmt_entries: u32, policy: VictimPolicy) -> FtlConfig {
    let mut c = FtlConfig::new(kind);
    c.over_provisioning = 0.35;
    c.cmt_entries = cmt_entries;
    c.gc.policy = policy;
    c
}

fn fresh(config: &FtlConfig, cut_at: Option<u64>, seed: u64) -> Box<dyn Ftl> {
    let storage = FaultyStorage::new(MemoryStorage::new(geometry(), true), cut_at, seed);
    ftl::format(Device::new(Box::new(storage)), config).unwrap()
}

fn reopen(ftl: Box<dyn Ftl>, now: u64) -> (Box<dyn Ftl>, u64) {
    let mut device = ftl.into_device();
    device.power_on();
    ftl::open(device, now).unwrap()
}

#[derive(Clone, Debug)]
enum Op {
    Write { lpn: u32, fill: u8 },
    Trim { lpn: u32 },
    Read { lpn: u32 },
}

fn op(lpns: u32) -> impl Strategy<Value = Op> {
    // A hot set so pages are overwritten often and GC has victims with live pages.
    let lpn = prop_oneof![3 => 0..lpns / 4, 1 => 0..lpns];
    prop_oneof![
        8 => (lpn.clone(), any::<u8>()).prop_map(|(lpn, fill)| Op::Write { lpn, fill }),
        1 => lpn.clone().prop_map(|lpn| Op::Trim { lpn }),
        2 => lpn.prop_map(|lpn| Op::Read { lpn }),
    ]
}

fn page(lpn: u32, fill: u8, version: u32) -> Vec<u8> {
    let mut p = vec![fill; PAGE];
    p[..4].copy_from_slice(&lpn.to_le_bytes());
    p[4..8].copy_from_slice(&version.to_le_bytes());
    p
}

/// What an interrupted operation would have left: new bytes, or a trim.
type InFlight = (u32, Option<Vec<u8>>);

struct Harness {
    ftl: Box<dyn Ftl>,
    model: HashMap<u32, Vec<u8>>,
    now: u64,
    version: u32,
}

impl Harness {
    /// Runs one op; on a power cut returns what was in flight.
    fn apply(&mut self, op: &Op) -> Result<(), InFlight> {
        self.now += 1_000;
        self.version += 1;
        let cut = |e: Error| match e {
            Error::Device(nand::Error::PowerLost) => {}
            other => panic!("unexpected error: {other}"),
        };
        match *op {
            Op::Write { lpn, fill } => {
                let p = page(lpn, fill, self.version);
                match self.ftl.write(lpn, &p, self.now) {
                    Ok(_) => {
                        self.model.insert(lpn, p);
                        Ok(())
                    }
                    Err(e) => {
                        cut(e);
                        Err((lpn, Some(p)))
                    }
                }
            }
            Op::Trim { lpn } => match self.ftl.trim(lpn, self.now) {
                Ok(_) => {
                    self.model.remove(&lpn);
                    Ok(())
                }
                Err(e) => {
                    cut(e);
                    Err((lpn, None))
                }
            },
            Op::Read { lpn } => match self.ftl.read(lpn, self.now) {
                Ok(got) => {
                    assert_eq!(got.map(|r| r.data.to_vec()).as_ref(), self.model.get(&lpn), "lpn {lpn}");
                    Ok(())
                }
                Err(e) => {
                    // A DFTL read may write back a translation page on a CMT miss.
                    cut(e);
                    Err((lpn, self.model.get(&lpn).cloned()))
                }
            },
        }
    }

    /// Every page reads as the model says, or as the in-flight operation would have
    /// left it (see `check_against_model`).
    fn check_all(&mut self, in_flight: Option<&InFlight>) {
        let (ftl, now) = (&mut self.ftl, self.now);
        check_against_model(
            ftl.logical_pages(),
            |lpn| ftl.read(lpn, now).unwrap().map(|r| r.data.to_vec()),
            &mut self.model,
            in_flight.map(std::slice::from_ref).unwrap_or_default(),
        );
    }

    fn restart(self) -> Harness {
        let (ftl, now) = reopen(self.ftl, self.now);
        Harness { ftl, now, ..self }
    }
}

fn logical_pages(kind: FtlKind) -> u32 {
    fresh(&config(kind, 64, VictimPolicy::Greedy), None, 0).logical_pages()
}

/// Runs `ops` with power failing at mutating operation `cut_at`, rebuilds, checks,
/// runs `after` with power on, rebuilds and checks again.
fn cut_and_rebuild(config: &FtlConfig, ops: &[Op], after: &[Op], cut_at: u64, seed: u64) {
    let mut h = Harness { ftl: fresh(config, Some(cut_at), seed), model: HashMap::new(), now: 0, version: 0 };
    let mut in_flight = None;
    for op in ops {
        if let Err(flight) = h.apply(op) {
            in_flight = Some(flight);
            break;
        }
    }
    let mut h = h.restart();
    h.check_all(in_flight.as_ref());
    for op in after {
        h.apply(op).unwrap_or_else(|_| panic!("power is back"));
    }
    let mut h = h.restart();
    h.check_all(None);
}

fn cut_strategy(kind: FtlKind) -> impl Strategy<Value = (Vec<Op>, Vec<Op>, f64, u64, bool)> {
    let lpns = logical_pages(kind);
    (
        prop::collection::vec(op(lpns), 300..1200),
        prop::collection::vec(op(lpns), 0..200),
        0.0f64..1.2,
        any::<u64>(),
        any::<bool>(),
    )
}

fn cut_point(ops: &[Op], fraction: f64) -> u64 {
    let mutating = ops.iter().filter(|o| !matches!(o, Op::Read { .. })).count() as f64;
    1 + (fraction * mutating) as u64
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Page FTL: power fails at a random program, copyback or erase (host write, trim
    /// record, GC copy, GC erase) or never; after the rebuild every acknowledged write
    /// reads back, trimmed pages read `None`, the interrupted operation is old or new.
    #[test]
    fn page_ftl_survives_power_cuts((ops, after, fraction, seed, cb) in cut_strategy(FtlKind::Page)) {
        let policy = if cb { VictimPolicy::CostBenefit } else { VictimPolicy::Greedy };
        cut_and_rebuild(&config(FtlKind::Page, 0, policy), &ops, &after, cut_point(&ops, fraction), seed);
    }

    /// DFTL with a CMT far smaller than the map: cuts may also hit translation page
    /// write-backs (evictions, GC batch updates) and translation page GC.
    #[test]
    fn dftl_survives_power_cuts((ops, after, fraction, seed, cb) in cut_strategy(FtlKind::Dftl), cmt in 1u32..48) {
        let policy = if cb { VictimPolicy::CostBenefit } else { VictimPolicy::Greedy };
        cut_and_rebuild(&config(FtlKind::Dftl, cmt, policy), &ops, &after, cut_point(&ops, fraction), seed);
    }
}

/// Random writes and trims over a hot set, from a seed.
fn random_ops(lpns: u32, count: usize, seed: u64) -> Vec<Op> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..count)
        .map(|_| {
            let lpn = if rng.gen_bool(0.7) { rng.gen_range(0..lpns / 4) } else { rng.gen_range(0..lpns) };
            if rng.gen_ratio(1, 10) {
                Op::Trim { lpn }
            } else {
                Op::Write { lpn, fill: rng.gen() }
            }
        })
        .collect()
}

fn run(config: &FtlConfig, ops: &[Op]) -> Harness {
    let mut h = Harness { ftl: fresh(config, None, 0), model: HashMap::new(), now: 0, version: 0 };
    for op in ops {
        h.apply(op).unwrap_or_else(|_| panic!("no cut was armed"));
    }
    h.check_all(None);
    h
}

#[test]
fn sequential_writes_have_write_amplification_one() {
    let lpns = logical_pages(FtlKind::Page);
    let ops: Vec<Op> = (0..3).flat_map(|pass| (0..lpns).map(move |lpn| Op::Write { lpn, fill: pass as u8 })).collect();
    let h = run(&config(FtlKind::Page, 0, VictimPolicy::Greedy), &ops);
    let c = h.ftl.counters();
    assert_eq!(c.host_writes, 3 * lpns as u64);
    assert!(c.gc_erases > 0, "three passes over the device need GC");
    assert!(c.write_amplification() < 1.02, "sequential WA {}", c.write_amplification());
}

#[test]
fn random_writes_cost_gc_copies() {
    let lpns = logical_pages(FtlKind::Page);
    let h = run(&config(FtlKind::Page, 0, VictimPolicy::Greedy), &random_ops(lpns, 4000, 1));
    let c = h.ftl.counters();
    assert!(c.gc_page_migrations > 0 && c.write_amplification() > 1.0);
    assert_eq!(c.flash_programs, c.host_writes + c.host_trims + c.gc_page_migrations);
}

#[test]
fn dftl_with_the_whole_map_cached_programs_like_the_page_ftl() {
    let lpns = logical_pages(FtlKind::Dftl);
    let ops = random_ops(lpns, 4000, 2);
    let page = run(&config(FtlKind::Page, 0, VictimPolicy::Greedy), &ops).ftl.counters();
    let dftl = run(&config(FtlKind::Dftl, lpns, VictimPolicy::Greedy), &ops).ftl.counters();
    assert_eq!((dftl.translation_reads, dftl.translation_writes), (0, 0));
    assert_eq!(dftl.flash_programs, page.flash_programs);
    assert_eq!(dftl.gc_page_migrations, page.gc_page_migrations);
    assert_eq!(dftl.gc_erases, page.gc_erases);
}

#[test]
fn small_cmt_reads_and_writes_translation_pages() {
    let lpns = logical_pages(FtlKind::Dftl);
    let ops = random_ops(lpns, 4000, 3);
    let c = run(&config(FtlKind::Dftl, 16, VictimPolicy::Greedy), &ops).ftl.counters();
    assert!(c.translation_reads > 100 && c.translation_writes > 100, "{c:?}");
    assert_eq!(c.flash_programs, c.host_writes + c.host_trims + c.gc_page_migrations + c.translation_writes);
    let big = run(&config(FtlKind::Dftl, 256, VictimPolicy::Greedy), &ops).ftl.counters();
    assert!(big.translation_writes < c.translation_writes, "a bigger CMT writes back less");
}

#[test]
fn dftl_rebuild_rewrites_stale_translation_pages_then_serves_from_flash() {
    let lpns = logical_pages(FtlKind::Dftl);
    let h = run(&config(FtlKind::Dftl, 32, VictimPolicy::Greedy), &random_ops(lpns, 2000, 4));
    // Dirty CMT entries are lost with the power; the scan recovers them.
    let mut h = h.restart();
    h.check_all(None);
    let c = h.ftl.counters();
    assert!(c.translation_reads > 0, "after open the map is read from translation pages");
}

#[test]
fn dispatch_and_config_area() {
    let c = config(FtlKind::Page, 0, VictimPolicy::Greedy);
    let f = fresh(&c, None, 0);
    assert!(f.device().storage().config_area().starts_with(ftl::CONFIG_MAGIC));
    assert_eq!(ftl::stored_config(f.device().storage().config_area()).unwrap(), c);
    for kind in [FtlKind::Block, FtlKind::Bast, FtlKind::Fast] {
        let device = Device::new(Box::new(MemoryStorage::new(geometry(), true)));
        let config = FtlConfig { log_blocks: 2, over_provisioning: 0.25, ..FtlConfig::new(kind) };
        let f = ftl::format(device, &config).unwrap();
        assert_eq!(f.kind(), kind);
        assert_eq!(ftl::stored_config(f.device().storage().config_area()).unwrap(), config);
    }
    // A NoFTL device is not an FTL device.
    let noftl = Flash::format(
        Device::new(Box::new(MemoryStorage::new(geometry(), true))),
        vec![RegionSpec { over_provisioning: 0.35, ..RegionSpec::new("r", IpaMode::None) }],
    )
    .unwrap();
    let err = ftl::open(noftl.into_device(), 0).err().expect("not an FTL");
    assert_eq!(err.to_string(), "the device holds NoFTL regions, not a conventional FTL");
    // DFTL needs translation page bytes; the page FTL runs metadata-only.
    let meta = || Device::new(Box::new(MemoryStorage::new(geometry(), false)));
    assert!(matches!(ftl::format(meta(), &config(FtlKind::Dftl, 8, VictimPolicy::Greedy)), Err(Error::Config(_))));
    let mut page = ftl::format(meta(), &c).unwrap();
    page.write(3, &[], 0).unwrap();
    assert!(page.read(3, 0).unwrap().is_some());
    // Bad requests are errors, not panics.
    let mut f = fresh(&c, None, 0);
    let lpns = f.logical_pages();
    assert!(matches!(f.write(lpns, &[0; PAGE], 0), Err(Error::LpnOutOfRange { .. })));
    assert!(matches!(f.write(0, &[0; 3], 0), Err(Error::WrongPayloadSize { .. })));
    let mut tight = c.clone();
    tight.over_provisioning = 0.01;
    let device = Device::new(Box::new(MemoryStorage::new(geometry(), true)));
    assert!(ftl::format(device, &tight).err().unwrap().to_string().contains("spare pages"));
}

/// Host writes per second for each FTL, wall clock and simulated (QD1, each write
/// issued when the previous one ends), on the paper emulator's chips cut to 64 blocks
/// each. Run: `cargo test --release -p flash --test ftl_page -- --ignored --nocapture`.
#[test]
#[ignore]
fn measure_host_writes_per_second() {
    let mut g = Geometry::paper_emulator();
    g.blocks_per_chip = 64;
    for (kind, cmt) in [(FtlKind::Page, 0), (FtlKind::Dftl, 1 << 20), (FtlKind::Dftl, 4096), (FtlKind::Dftl, 512)] {
        let mut c = FtlConfig::new(kind);
        c.cmt_entries = cmt;
        let mut f = ftl::format(Device::new(Box::new(MemoryStorage::new(g.clone(), true))), &c).unwrap();
        let lpns = f.logical_pages();
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let data = vec![0x5Au8; f.page_bytes()];
        let writes = 4 * lpns as u64;
        let wall = std::time::Instant::now();
        let mut now = 0;
        for _ in 0..writes {
            now = f.write(rng.gen_range(0..lpns), &data, now).unwrap().end_ns;
        }
        let secs = wall.elapsed().as_secs_f64();
        let counters = f.counters();
        println!(
            "{:>4} cmt {:>7}: {writes} random writes over {lpns} pages: {:.0} writes/s wall, {:.0} writes/s simulated, WA {:.2}, translation r/w {}/{}",
            kind.name(),
            cmt,
            writes as f64 / secs,
            writes as f64 / (now as f64 / 1e9),
            counters.write_amplification(),
            counters.translation_reads,
            counters.translation_writes
        );
    }
}

/// A small device with 4 KiB pages (4 translation pages), as `ftl-bench --chips 4
/// --blocks-per-chip 64 --pages-per-block 16`.
fn small_device() -> Device {
    let g = Geometry {
        channels: 4,
        chips_per_channel: 1,
        blocks_per_chip: 64,
        pages_per_block: 16,
        page_bytes: 4096,
        oob_bytes: 64,
        cell: CellType::Slc,
        nop: 1,
        endurance: 1_000_000,
        latencies: Latencies::mlc_typical(),
    };
    Device::new(Box::new(MemoryStorage::new(g, true)))
}

/// Regression: with a CMT smaller than the map, DFTL ran out of room mid-run
/// ("no chip can take another page even after GC") where the page FTL did not, because
/// translation writes interleaved with host writes on one round-robin cursor steered
/// host data onto a subset of chips. Uniform random writes over four times the
/// logical capacity must now run through, with sane counters, and read back.
#[test]
fn dftl_small_cmt_on_a_small_device_runs_through_uniform_random_writes() {
    for cmt in [256, 1024] {
        let mut c = FtlConfig::new(FtlKind::Dftl);
        c.over_provisioning = 0.1;
        c.cmt_entries = cmt;
        let mut ftl = ftl::format(small_device(), &c).unwrap();
        let lpns = ftl.logical_pages();
        let mut rng = ChaCha8Rng::seed_from_u64(cmt as u64);
        let mut model: HashMap<u32, u8> = HashMap::new();
        let mut now = 0;
        for lpn in 0..lpns {
            now += 1_000;
            ftl.write(lpn, &vec![lpn as u8; 4096], now).unwrap();
            model.insert(lpn, lpn as u8);
        }
        for _ in 0..4 * lpns {
            let (lpn, fill) = (rng.gen_range(0..lpns), rng.gen());
            now += 1_000;
            ftl.write(lpn, &vec![fill; 4096], now).unwrap_or_else(|e| panic!("cmt {cmt}: write of lpn {lpn}: {e}"));
            model.insert(lpn, fill);
        }
        let k = ftl.counters();
        let tpages = lpns.div_ceil(1024) as u64;
        assert_eq!(k.flash_programs, k.host_writes + k.gc_page_migrations + k.translation_writes, "cmt {cmt}");
        // One write-back per evicted dirty entry at most, plus one batch update of each
        // translation page per collected block.
        assert!(k.translation_writes > 0 && k.translation_writes <= k.host_writes + k.gc_erases * tpages, "{k:?}");
        assert!(k.translation_reads > 0, "{k:?}");
        let wa = k.write_amplification();
        assert!(wa > 1.5 && wa < 20.0, "cmt {cmt}: write amplification {wa}");
        for (&lpn, &fill) in &model {
            let got = ftl.read(lpn, now).unwrap().map(|r| r.data.to_vec());
            assert_eq!(got, Some(vec![fill; 4096]), "cmt {cmt}: lpn {lpn}");
        }
    }
}

/// Regression: GC wrote a victim's batch of translation pages (one per translation page
/// its moved pages touch: nearly a block per victim under uniform writes) before erasing
/// it, when no GC could make room, and the run stopped with "no chip can take another
/// page even after GC" once every chip was down to its last free block (as
/// `ftl-bench --ftl dftl --device paper-emulator --over-provisioning 0.1 --seed 7` did).
/// The batch is now written when GC is over, and those writes may collect in turn. What
/// every lpn reads must match a model throughout, since until then a moved lpn's mapping
/// is in neither the CMT nor its translation page.
#[test]
fn dftl_gc_batch_updates_never_run_out_of_room() {
    // (chips, blocks per chip, page bytes, CMT entries)
    // The first case failed with the batch on the victim's chip only, the next three
    // with it spilling to other chips but never taking the last block, the last one
    // with every placement during the collection.
    for (chips, blocks_per_chip, page_bytes, cmt) in
        [(16, 128, 2048, 4096), (1, 64, 512, 64), (1, 64, 2048, 64), (1, 128, 2048, 1024), (1, 512, 512, 4096)]
    {
        let g = Geometry {
            channels: chips.min(8),
            chips_per_channel: chips / chips.min(8),
            blocks_per_chip,
            pages_per_block: 64,
            page_bytes,
            oob_bytes: 128,
            cell: CellType::Slc,
            nop: 1,
            endurance: 1_000_000,
            latencies: Latencies::mlc_typical(),
        };
        let mut c = FtlConfig::new(FtlKind::Dftl);
        c.over_provisioning = 0.1;
        c.cmt_entries = cmt;
        let mut ftl = ftl::format(Device::new(Box::new(MemoryStorage::new(g, true))), &c).unwrap();
        let lpns = ftl.logical_pages();
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let mut now = 0;
        let case = format!("{chips} chips of {blocks_per_chip} blocks of {page_bytes} B, CMT {cmt}");
        let mut model: Vec<u8> = (0..lpns).map(|lpn| lpn as u8).collect();
        for lpn in 0..lpns {
            now += 1_000;
            ftl.write(lpn, &vec![model[lpn as usize]; page_bytes as usize], now).unwrap();
        }
        let expect = |model: &[u8], lpn: u32| Some(vec![model[lpn as usize]; page_bytes as usize]);
        for i in 0..lpns.max(8_000) {
            let lpn = rng.gen_range(0..lpns);
            now += 1_000;
            if i % 4 == 3 {
                let got = ftl.read(lpn, now).unwrap_or_else(|e| panic!("{case}: read {i} of lpn {lpn}: {e}"));
                assert_eq!(got.map(|r| r.data.to_vec()), expect(&model, lpn), "{case}: read {i} of lpn {lpn}");
                continue;
            }
            model[lpn as usize] = i as u8;
            let page = vec![i as u8; page_bytes as usize];
            ftl.write(lpn, &page, now).unwrap_or_else(|e| panic!("{case}: write {i} of lpn {lpn}: {e}"));
        }
        let k = ftl.counters();
        assert!(k.gc_erases > 0 && k.translation_writes > 0, "{case}: {k:?}");
        for lpn in 0..lpns {
            let got = ftl.read(lpn, now).unwrap().map(|r| r.data.to_vec());
            assert_eq!(got, expect(&model, lpn), "{case}: lpn {lpn} at the end");
        }
    }
}

/// Format counts the translation stream's open block per chip in the GC reserve and
/// says what it needs.
#[test]
fn dftl_format_refuses_over_provisioning_below_its_gc_reserve() {
    let mut c = FtlConfig::new(FtlKind::Dftl);
    c.over_provisioning = 0.07;
    match ftl::format(small_device(), &c) {
        Err(Error::Config(m)) => assert!(m.contains("GC needs at least 320"), "{m}"),
        other => panic!("expected a config error, got {:?}", other.map(|f| f.logical_pages())),
    }
    c.kind = FtlKind::Page;
    assert!(ftl::format(small_device(), &c).is_ok(), "the page FTL writes two streams, not three");
}

/// The tombstone's allocation may run GC, and GC may move the trimmed page: the trim
/// must kill the page where it is after the allocation, not where it was before (the
/// old code killed the stale address: a debug assertion, else a live page leaked).
#[test]
fn a_trim_whose_allocation_collects_the_trimmed_page_kills_its_new_copy() {
    let mut g = geometry();
    (g.channels, g.blocks_per_chip, g.pages_per_block) = (1, 8, 4);
    let mut c = config(FtlKind::Page, 0, VictimPolicy::Greedy);
    c.over_provisioning = 0.5;
    c.gc.foreground_free_blocks = 2;
    c.gc.background_free_blocks = 2;
    let mut ftl = ftl::format(Device::new(Box::new(MemoryStorage::new(g, true))), &c).unwrap();
    ftl.write(0, &page(0, 1, 0), 1_000).unwrap();
    // Blocks 0-5 fill; block 0 then holds one valid page, lpn 0's, and 2 blocks are free.
    let lpns = [1, 2, 3, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 4, 13, 14, 15, 9];
    let mut model: HashMap<u32, Vec<u8>> = HashMap::new();
    for (i, lpn) in lpns.into_iter().enumerate() {
        model.insert(lpn, page(lpn, 1, i as u32 + 1));
        ftl.write(lpn, &model[&lpn], 2_000).unwrap();
    }
    assert_eq!(ftl.counters().gc_erases, 0);
    // The tombstone opens block 6, which collects block 0 (greedy), moving lpn 0's page.
    ftl.trim(0, 3_000).unwrap();
    let k = ftl.counters();
    assert!(k.gc_erases >= 1 && k.gc_page_migrations >= 1, "the trim's allocation collected: {k:?}");
    // More writes make GC visit the moved copy's block: a leaked live page would be
    // copied again (and a rebuild would still find every page right).
    for round in 0..6u32 {
        for lpn in 1..16 {
            model.insert(lpn, page(lpn, 2, round));
            ftl.write(lpn, &model[&lpn], 4_000).unwrap();
        }
    }
    assert!(ftl.read(0, 5_000).unwrap().is_none());
    let (mut ftl, now) = reopen(ftl, 6_000);
    assert!(ftl.read(0, now).unwrap().is_none());
    for (lpn, bytes) in &model {
        assert_eq!(ftl.read(*lpn, now).unwrap().map(|r| r.data.to_vec()).as_ref(), Some(bytes), "lpn {lpn}");
    }
}

/// Dead pages drop their payload: after every lpn of a hot set is overwritten many
/// times with distinct bytes, the only pages whose data the device still keeps are the
/// live ones, and the device's memory stays near what it was after the first round
/// rather than growing with the stale copies GC has not erased yet. Reads still return
/// the newest bytes, and a rebuild (which reads only live or newest pages) works.
#[test]
fn stale_copies_cost_no_payload_memory() {
    for kind in [FtlKind::Page, FtlKind::Dftl, FtlKind::Nolgn] {
        let mut c = config(kind, 64, VictimPolicy::Greedy);
        c.over_provisioning = 0.5;
        let mut ftl = fresh(&c, None, 1);
        let hot = 40;
        let mut now = 0;
        let round = |ftl: &mut Box<dyn Ftl>, version: u32, now: &mut u64| {
            for lpn in 0..hot {
                *now += 1_000;
                ftl.write(lpn, &page(lpn, version as u8 ^ 0x5A, version), *now).unwrap();
            }
        };
        round(&mut ftl, 0, &mut now);
        let after_first = ftl.device().storage().memory_bytes();
        for version in 1..12 {
            round(&mut ftl, version, &mut now);
        }
        let dev = ftl.device();
        let g = dev.geometry().clone();
        let programmed = (0..g.total_pages()).filter(|&p| dev.storage().program_count(nand::Ppn(p)) > 0).count();
        let with_payload = (0..g.total_pages()).filter(|&p| dev.storage().data(nand::Ppn(p)).is_some()).count();
        // DFTL: the one translation page, once a CMT write-back or GC has written it.
        let translation = ftl.counters().translation_writes.min(1) as u32;
        assert!(programmed as u32 > 4 * hot, "{kind:?}: {programmed} pages programmed, most of them stale");
        assert_eq!(with_payload as u32, hot + translation, "{kind:?}: only live pages keep their bytes");
        // Cells and OOB of the blocks programmed since grow; the stale payloads do not.
        let grown = dev.storage().memory_bytes() - after_first;
        let stale_payload = (with_payload.abs_diff(programmed) * PAGE) as u64;
        assert!(grown < stale_payload / 4, "{kind:?}: device memory grew by {grown} bytes ({stale_payload} stale)");
        for lpn in 0..hot {
            let got = ftl.read(lpn, now).unwrap().map(|r| r.data.to_vec());
            assert_eq!(got, Some(page(lpn, 11 ^ 0x5A, 11)), "{kind:?}: lpn {lpn}");
        }
        let (mut ftl, t) = reopen(ftl, now);
        for lpn in 0..hot {
            let got = ftl.read(lpn, t).unwrap().map(|r| r.data.to_vec());
            assert_eq!(got, Some(page(lpn, 11 ^ 0x5A, 11)), "{kind:?} after a rebuild: lpn {lpn}");
        }
    }
}

/// Every FTL reports its maps: at least a 4-byte entry per logical page (each keeps an
/// lpn → ppn map, or block map and page locations), and more once pages are written.
#[test]
fn every_ftl_reports_at_least_its_map_as_mapping_bytes() {
    for kind in FtlKind::ALL {
        let mut c = config(kind, 64, VictimPolicy::Greedy);
        c.log_blocks = 4;
        let mut f = fresh(&c, None, 1);
        let logical = f.logical_pages();
        let empty = f.mapping_bytes();
        assert!(empty >= 4 * logical as u64, "{kind:?}: {empty} bytes for {logical} logical pages");
        let page = vec![7u8; PAGE];
        for lpn in 0..logical {
            f.write(lpn, &page, 0).unwrap();
        }
        assert!(f.mapping_bytes() >= empty, "{kind:?}");
    }
    let regions = Flash::format(
        Device::new(Box::new(MemoryStorage::new(geometry(), true))),
        vec![RegionSpec { over_provisioning: 0.35, ..RegionSpec::new("r", IpaMode::None) }],
    )
    .unwrap();
    let logical = regions.regions()[0].logical_pages() as u64;
    assert!(regions.mapping_bytes() >= 4 * logical);
}
