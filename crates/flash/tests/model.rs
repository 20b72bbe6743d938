//! Regions against a simple model: every logical page reads back its latest content
//! through writes, appends, trims, GC, restarts and power cuts at random operations.

use flash::{DeltaRefusal, Error, Flash, GcConfig, IpaMode, RegionId, RegionSpec, VictimPolicy, WearConfig};
use nand::{CellType, Device, FaultyStorage, Geometry, MemoryStorage, PageType, Ppn, Storage};
use proptest::prelude::*;
use std::collections::HashMap;

use support::geometry::append_geometry;

mod support {
    pub mod geometry;
}

const PAGE: usize = 512;
/// Pages keep their last bytes erased for appends, as the IPA page layout does.
const DELTA_AREA: usize = 64;

fn geometry(cell: CellType) -> Geometry {
    append_geometry(cell, PAGE as u32)
}

fn spec(mode: IpaMode, policy: VictimPolicy) -> RegionSpec {
    RegionSpec {
        over_provisioning: 0.35,
        gc: GcConfig { policy, foreground_free_blocks: 1, background_free_blocks: 2 },
        wear: WearConfig { static_threshold: Some(4) },
        ..RegionSpec::new("r", mode)
    }
}

#[derive(Clone, Debug)]
enum Op {
    Write { lpn: u32, fill: u8 },
    Delta { lpn: u32, len: usize, value: u8 },
    Trim { lpn: u32 },
    Read { lpn: u32 },
    Restart,
}

fn op(lpns: u32) -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0..lpns, any::<u8>()).prop_map(|(lpn, fill)| Op::Write { lpn, fill }),
        5 => (0..lpns, 1..20usize, any::<u8>()).prop_map(|(lpn, len, value)| Op::Delta { lpn, len, value }),
        1 => (0..lpns).prop_map(|lpn| Op::Trim { lpn }),
        2 => (0..lpns).prop_map(|lpn| Op::Read { lpn }),
        1 => Just(Op::Restart),
    ]
}

/// The model: content of each mapped page, and where its next append goes.
#[derive(Default, Clone)]
struct Model {
    pages: HashMap<u32, (Vec<u8>, usize)>,
}

fn fresh_page(lpn: u32, fill: u8) -> Vec<u8> {
    let mut page = vec![fill; PAGE];
    page[..4].copy_from_slice(&lpn.to_le_bytes());
    page[PAGE - DELTA_AREA..].fill(0xFF);
    page
}

/// What the model expects after the op, and the content if it were applied.
enum Applied {
    Write(Vec<u8>),
    Delta { offset: usize, bytes: Vec<u8> },
    Trim,
}

struct Harness {
    flash: Flash,
    id: RegionId,
    model: Model,
    now: u64,
}

impl Harness {
    fn new(storage: Box<dyn Storage>, spec: RegionSpec) -> Self {
        let flash = Flash::format(Device::new(storage), vec![spec]).unwrap();
        Harness { flash, id: RegionId(0), model: Model::default(), now: 0 }
    }

    fn restart(self) -> Self {
        let mut device = self.flash.into_device();
        device.power_on();
        let (flash, done) = Flash::open(device, self.now).unwrap();
        Harness { flash, now: done, ..self }
    }

    fn lpns(&self) -> u32 {
        self.flash.region(self.id).logical_pages()
    }

    /// Runs one op against the region; updates the model when the region acknowledges.
    /// Returns the op's effect when it failed with a power cut (in flight).
    fn apply(&mut self, op: &Op) -> Result<(), (u32, Applied)> {
        self.now += 1_000;
        let id = self.id;
        match *op {
            Op::Write { lpn, fill } => {
                let page = fresh_page(lpn, fill);
                match self.flash.write(id, lpn, &page, self.now) {
                    Ok(_) => {
                        self.model.pages.insert(lpn, (page, PAGE - DELTA_AREA));
                        Ok(())
                    }
                    Err(e) => Err((lpn, self.in_flight(e, Applied::Write(page)))),
                }
            }
            Op::Delta { lpn, len, value } => {
                let Some((page, floor)) = self.model.pages.get(&lpn).cloned() else {
                    let r = self.flash.write_delta(id, lpn, PAGE - DELTA_AREA, &[0], self.now);
                    assert!(
                        matches!(
                            r,
                            Err(Error::DeltaRefused { reason: DeltaRefusal::Unmapped | DeltaRefusal::IpaDisabled, .. })
                        ),
                        "unmapped page took a delta"
                    );
                    return Ok(());
                };
                // Values only clear bits of the erased area.
                let bytes: Vec<u8> = (0..len).map(|i| value.rotate_left(i as u32) & 0xF7).collect();
                if floor + len > PAGE {
                    // Delta area full: the DBMS writes the page out-of-place, area reset.
                    let mut reset = page.clone();
                    reset[PAGE - DELTA_AREA..].fill(0xFF);
                    return match self.flash.write(id, lpn, &reset, self.now) {
                        Ok(_) => {
                            self.model.pages.insert(lpn, (reset, PAGE - DELTA_AREA));
                            Ok(())
                        }
                        Err(e) => Err((lpn, self.in_flight(e, Applied::Write(reset)))),
                    };
                }
                match self.flash.write_delta(id, lpn, floor, &bytes, self.now) {
                    Ok(_) => {
                        let entry = self.model.pages.get_mut(&lpn).unwrap();
                        entry.0[floor..floor + len].copy_from_slice(&bytes);
                        entry.1 = floor + len;
                        Ok(())
                    }
                    Err(Error::DeltaRefused { reason, .. }) => {
                        assert!(
                            matches!(
                                reason,
                                DeltaRefusal::NopExhausted { .. }
                                    | DeltaRefusal::NoSlot { .. }
                                    | DeltaRefusal::NotLsbPage { .. }
                                    | DeltaRefusal::IpaDisabled
                                    | DeltaRefusal::Sealed
                            ),
                            "unexpected refusal {reason:?}"
                        );
                        // Fallback: out-of-place write with the delta applied.
                        let mut next = page.clone();
                        next[floor..floor + len].copy_from_slice(&bytes);
                        match self.flash.write(id, lpn, &next, self.now) {
                            Ok(_) => {
                                self.model.pages.insert(lpn, (next, floor + len));
                                Ok(())
                            }
                            Err(e) => Err((lpn, self.in_flight(e, Applied::Write(next)))),
                        }
                    }
                    Err(e) => Err((lpn, self.in_flight(e, Applied::Delta { offset: floor, bytes }))),
                }
            }
            Op::Trim { lpn } => match self.flash.trim(id, lpn, self.now) {
                Ok(_) => {
                    self.model.pages.remove(&lpn);
                    Ok(())
                }
                Err(e) => Err((lpn, self.in_flight(e, Applied::Trim))),
            },
            Op::Read { lpn } => {
                self.check_one(lpn, None);
                Ok(())
            }
            Op::Restart => Ok(()),
        }
    }

    fn in_flight(&self, e: Error, applied: Applied) -> Applied {
        match e {
            Error::Device(nand::Error::PowerLost) => applied,
            other => panic!("unexpected error: {other}"),
        }
    }

    /// Checks one page against the model, allowing the in-flight op's outcome.
    fn check_one(&mut self, lpn: u32, in_flight: Option<&Applied>) {
        let expected = self.model.pages.get(&lpn).map(|(p, _)| p.clone());
        let got = self.flash.read(self.id, lpn, self.now).unwrap().map(|r| (r.data.to_vec(), r.torn_tail));
        let ok = match (&got, in_flight) {
            (g, _) if g.as_ref().map(|(d, _)| d) == expected.as_ref() => true,
            (Some((d, _)), Some(Applied::Write(new))) => d == new,
            (None, Some(Applied::Trim)) => true,
            (Some((d, torn)), Some(Applied::Delta { offset, bytes })) => {
                let old = expected.clone().expect("delta on a mapped page");
                let mut new = old.clone();
                new[*offset..offset + bytes.len()].copy_from_slice(bytes);
                let outside_equal =
                    d[..*offset] == old[..*offset] && d[offset + bytes.len()..] == old[offset + bytes.len()..];
                *d == new || (*torn && outside_equal)
            }
            _ => false,
        };
        assert!(
            ok,
            "lpn {lpn}: read {:?}, model {:?}",
            got.map(|(d, t)| (d[..8].to_vec(), t)),
            expected.map(|p| p[..8].to_vec())
        );
    }

    fn check_all(&mut self, in_flight: Option<(u32, &Applied)>) {
        for lpn in 0..self.lpns() {
            let flight = in_flight.filter(|(l, _)| *l == lpn).map(|(_, a)| a);
            self.check_one(lpn, flight);
        }
    }

    /// After a cut is resolved by the check, adopt whatever the region now holds for
    /// the in-flight page as the model's truth.
    fn adopt(&mut self, lpn: u32) {
        let now = self.now;
        match self.flash.read(self.id, lpn, now).unwrap() {
            None => {
                self.model.pages.remove(&lpn);
            }
            Some(r) => {
                let data = r.data.to_vec();
                let torn = r.torn_tail;
                let floor =
                    (PAGE - DELTA_AREA..PAGE).rev().find(|&i| data[i] != 0xFF).map_or(PAGE - DELTA_AREA, |i| i + 1);
                // A torn tail seals the page: further appends go out-of-place anyway.
                let floor = if torn { PAGE } else { floor };
                self.model.pages.insert(lpn, (data, floor));
            }
        }
    }
}

fn run(mode: IpaMode, cell: CellType, policy: VictimPolicy, ops: &[Op]) {
    let storage = Box::new(MemoryStorage::new(geometry(cell), true));
    let mut h = Harness::new(storage, spec(mode, policy));
    for op in ops {
        if let Op::Restart = op {
            h = h.restart();
            h.check_all(None);
            continue;
        }
        h.apply(op).unwrap_or_else(|_| panic!("no cut was armed"));
    }
    h.check_all(None);
    let h = h.restart();
    let mut h = h;
    h.check_all(None);
}

fn lpn_count(mode: IpaMode, cell: CellType) -> u32 {
    let f = Flash::format(
        Device::new(Box::new(MemoryStorage::new(geometry(cell), false))),
        vec![spec(mode, VictimPolicy::Greedy)],
    )
    .unwrap();
    f.region(RegionId(0)).logical_pages()
}

proptest! {
    #![proptest_config(ProptestConfig::default())]

    #[test]
    fn slc_region_matches_model(ops in prop::collection::vec(op(lpn_count(IpaMode::Slc, CellType::Slc)), 1..400), cb in any::<bool>()) {
        let policy = if cb { VictimPolicy::CostBenefit } else { VictimPolicy::Greedy };
        run(IpaMode::Slc, CellType::Slc, policy, &ops);
    }

    #[test]
    fn pslc_region_matches_model(ops in prop::collection::vec(op(lpn_count(IpaMode::Pslc, CellType::Mlc)), 1..300)) {
        run(IpaMode::Pslc, CellType::Mlc, VictimPolicy::Greedy, &ops);
    }

    #[test]
    fn odd_mlc_region_matches_model(ops in prop::collection::vec(op(lpn_count(IpaMode::OddMlc, CellType::Mlc)), 1..300)) {
        run(IpaMode::OddMlc, CellType::Mlc, VictimPolicy::Greedy, &ops);
    }

    #[test]
    fn no_ipa_region_matches_model(ops in prop::collection::vec(op(lpn_count(IpaMode::None, CellType::Tlc)), 1..300)) {
        run(IpaMode::None, CellType::Tlc, VictimPolicy::CostBenefit, &ops);
    }

    /// Power fails at a random mutating operation (host program, append, GC copyback,
    /// erase, tombstone); after rebuild every acknowledged write reads back, the one in
    /// flight is either old or new (a torn append is reported as a torn tail), no torn
    /// page comes back as valid, and the region keeps working.
    #[test]
    fn power_cut_then_rebuild_loses_nothing_acknowledged(
        ops in prop::collection::vec(op(lpn_count(IpaMode::Slc, CellType::Slc)), 50..400),
        after in prop::collection::vec(op(lpn_count(IpaMode::Slc, CellType::Slc)), 0..100),
        cut_fraction in 0.0f64..1.0,
        seed in any::<u64>(),
    ) {
        let host_ops = ops.iter().filter(|o| !matches!(o, Op::Read { .. } | Op::Restart)).count() as u64;
        let cut_at = 1 + (cut_fraction * host_ops as f64) as u64;
        let storage = FaultyStorage::new(MemoryStorage::new(geometry(CellType::Slc), true), Some(cut_at), seed);
        let mut h = Harness::new(Box::new(storage), spec(IpaMode::Slc, VictimPolicy::Greedy));
        let mut in_flight = None;
        for op in ops.iter().filter(|o| !matches!(o, Op::Restart)) {
            if let Err(flight) = h.apply(op) {
                in_flight = Some(flight);
                break;
            }
        }
        let mut h = h.restart();
        h.check_all(in_flight.as_ref().map(|(l, a)| (*l, a)));
        if let Some((lpn, _)) = in_flight {
            h.adopt(lpn);
        }
        for op in &after {
            if let Op::Restart = op { continue; }
            h.apply(op).unwrap_or_else(|_| panic!("power is back"));
        }
        let mut h = h.restart();
        h.check_all(None);
    }
}

#[test]
fn pslc_writes_only_lsb_pages_and_odd_mlc_appends_only_to_lsb() {
    let g = geometry(CellType::Mlc);
    let mut h = Harness::new(Box::new(MemoryStorage::new(g.clone(), true)), spec(IpaMode::Pslc, VictimPolicy::Greedy));
    for lpn in 0..h.lpns() {
        h.apply(&Op::Write { lpn, fill: 1 }).ok().unwrap();
    }
    for lpn in 0..h.lpns() {
        let ppn = h.flash.region(h.id).mapping(lpn).unwrap();
        assert_eq!(g.page_type(g.page_in_block(ppn)), PageType::Lsb);
    }

    let mut h =
        Harness::new(Box::new(MemoryStorage::new(g.clone(), true)), spec(IpaMode::OddMlc, VictimPolicy::Greedy));
    let (mut msb, mut lsb) = (0, 0);
    for lpn in 0..16 {
        h.apply(&Op::Write { lpn, fill: 1 }).ok().unwrap();
        let ppn = h.flash.region(h.id).mapping(lpn).unwrap();
        let result = h.flash.write_delta(h.id, lpn, PAGE - DELTA_AREA, &[0x0F], h.now);
        match g.page_type(g.page_in_block(ppn)) {
            PageType::Lsb => {
                result.unwrap();
                lsb += 1;
            }
            page_type => {
                assert!(
                    matches!(result, Err(Error::DeltaRefused { reason: DeltaRefusal::NotLsbPage { page_type: t }, .. }) if t == page_type)
                );
                msb += 1;
            }
        }
    }
    assert!(msb > 0 && lsb > 0);
}

#[test]
fn write_delta_refusals_are_typed() {
    let mut h = Harness::new(
        Box::new(MemoryStorage::new(geometry(CellType::Slc), true)),
        spec(IpaMode::Slc, VictimPolicy::Greedy),
    );
    let id = h.id;
    let refusal = |r: Result<nand::OpTiming, Error>| match r {
        Err(Error::DeltaRefused { reason, .. }) => reason,
        other => panic!("expected a refusal, got {:?}", other.map(|_| ())),
    };
    h.apply(&Op::Write { lpn: 3, fill: 0x5A }).ok().unwrap();
    // The body is programmed: appends go into the erased tail only.
    assert_eq!(
        refusal(h.flash.write_delta(id, 3, 10, &[0x00], 0)),
        DeltaRefusal::NotAppendable { offset: 10, floor: PAGE - DELTA_AREA }
    );
    assert!(matches!(refusal(h.flash.write_delta(id, 3, PAGE - 1, &[0, 0], 0)), DeltaRefusal::OutOfPage { .. }));
    h.flash.write_delta(id, 3, PAGE - 20, &[0], 0).unwrap();
    assert_eq!(
        refusal(h.flash.write_delta(id, 3, PAGE - 30, &[0], 0)),
        DeltaRefusal::NotAppendable { offset: PAGE - 30, floor: PAGE - 19 }
    );
    h.flash.write_delta(id, 3, PAGE - 10, &[0], 0).unwrap();
    h.flash.write_delta(id, 3, PAGE - 5, &[0], 0).unwrap();
    // 1 program + 3 appends = NOP 4.
    assert_eq!(refusal(h.flash.write_delta(id, 3, PAGE - 2, &[0], 0)), DeltaRefusal::NopExhausted { limit: 4 });

    let mut h = Harness::new(
        Box::new(MemoryStorage::new(geometry(CellType::Slc), true)),
        spec(IpaMode::None, VictimPolicy::Greedy),
    );
    h.apply(&Op::Write { lpn: 0, fill: 1 }).ok().unwrap();
    assert_eq!(refusal(h.flash.write_delta(h.id, 0, PAGE - 8, &[0], 0)), DeltaRefusal::IpaDisabled);
}

#[test]
fn same_ops_same_state() {
    let ops: Vec<Op> = (0..2000u32)
        .map(|i| {
            if i % 3 == 0 {
                Op::Delta { lpn: (i * 7) % 150, len: 4, value: i as u8 }
            } else {
                Op::Write { lpn: (i * 13) % 150, fill: i as u8 }
            }
        })
        .collect();
    let run_once = || {
        let mut h = Harness::new(
            Box::new(MemoryStorage::new(geometry(CellType::Slc), true)),
            spec(IpaMode::Slc, VictimPolicy::CostBenefit),
        );
        for op in &ops {
            h.apply(op).ok().unwrap();
        }
        let r = h.flash.region(h.id);
        (
            r.counters(),
            (0..r.logical_pages()).map(|l| r.mapping(l)).collect::<Vec<_>>(),
            h.flash.device().timelines().chip_free_at(0),
        )
    };
    assert_eq!(run_once(), run_once());
}

/// The cut points of the property test above do land on every kind of operation.
#[test]
fn power_cuts_hit_every_kind_of_operation() {
    use nand::TornOp;
    let lpns = lpn_count(IpaMode::Slc, CellType::Slc);
    let ops: Vec<Op> = (0..1500u32)
        .map(|i| match i % 5 {
            0 | 1 => Op::Write { lpn: (i * 31) % lpns, fill: i as u8 },
            2 | 3 => Op::Delta { lpn: (i * 17) % lpns, len: 3, value: i as u8 },
            _ => Op::Trim { lpn: (i * 7) % lpns },
        })
        .collect();
    let (mut programs, mut appends, mut copybacks, mut erases) = (0, 0, 0, 0);
    for cut_at in (1..1300u64).step_by(7) {
        let storage = FaultyStorage::new(MemoryStorage::new(geometry(CellType::Slc), true), Some(cut_at), cut_at);
        let mut h = Harness::new(Box::new(storage), spec(IpaMode::Slc, VictimPolicy::Greedy));
        let mut in_flight = None;
        for op in &ops {
            if let Err(flight) = h.apply(op) {
                in_flight = Some(flight);
                break;
            }
        }
        let Some(torn) = h.flash.device().storage().last_torn() else {
            panic!("cut {cut_at} not reached: {:?} {:?}", h.flash.device().counters(), h.flash.region(h.id).counters())
        };
        match torn {
            TornOp::Program { ppn } if h.flash.device().storage().program_count(ppn) > 1 => appends += 1,
            TornOp::Program { .. } => programs += 1,
            TornOp::CopyProgram { .. } => copybacks += 1,
            TornOp::Erase { .. } => erases += 1,
        }
        let mut h = h.restart();
        h.check_all(in_flight.as_ref().map(|(l, a)| (*l, a)));
        // Stale copies left by a torn GC erase must stay stale across later appends
        // and another restart.
        if let Some((lpn, _)) = in_flight {
            h.adopt(lpn);
        }
        for lpn in 0..lpns {
            h.apply(&Op::Delta { lpn, len: 2, value: 0x3C }).ok().unwrap();
        }
        let mut h = h.restart();
        h.check_all(None);
    }
    assert!(programs > 0 && appends > 0 && copybacks > 0 && erases > 0, "{programs} {appends} {copybacks} {erases}");
}

/// A worn-out victim is retired, not erased, so its stale copies stay on flash beside
/// the migrated ones; appends to the migrated copies must survive restarts.
#[test]
fn worn_out_blocks_retire_and_their_stale_copies_stay_stale() {
    let mut g = geometry(CellType::Slc);
    g.endurance = 6;
    g.blocks_per_chip = 32;
    // Little spare space, so GC victims still hold live pages when they wear out.
    let spec = RegionSpec { over_provisioning: 0.15, ..spec(IpaMode::Slc, VictimPolicy::Greedy) };
    let mut h = Harness::new(Box::new(MemoryStorage::new(g, true)), spec);
    let lpns = h.lpns();
    let mut rng = <rand_chacha::ChaCha8Rng as rand::SeedableRng>::seed_from_u64(7);
    let mut i = 0u32;
    while h.flash.region(h.id).counters().retired_blocks < 3 {
        i += 1;
        let lpn = rand::Rng::gen_range(&mut rng, 0..lpns);
        let op = if i.is_multiple_of(2) {
            Op::Write { lpn, fill: i as u8 }
        } else {
            Op::Delta { lpn, len: 2, value: i as u8 }
        };
        match h.apply(&op) {
            Ok(()) => {}
            Err(_) => unreachable!("no cut armed"),
        }
        if i.is_multiple_of(500) {
            h = h.restart();
            h.check_all(None);
        }
        assert!(i < 200_000, "blocks never wore out");
    }
    assert!(h.flash.region(h.id).counters().gc_page_migrations > 0);
    for lpn in 0..lpns {
        h.apply(&Op::Delta { lpn, len: 1, value: 0x11 }).ok().unwrap();
    }
    let mut h = h.restart();
    h.check_all(None);
}

/// Regression: a torn append can land some of its bytes and none of its OOB slot. The
/// page must survive as the live copy with a torn tail, not fall back to an older one.
#[test]
fn torn_append_without_its_slot_keeps_the_page() {
    let (mut slotless, mut recovered) = (0, 0);
    for seed in 0..300u64 {
        // Program 1 writes version 1, program 2 version 2, program 3 is the torn append.
        let storage = FaultyStorage::new(MemoryStorage::new(geometry(CellType::Slc), true), Some(3), seed);
        let mut h = Harness::new(Box::new(storage), spec(IpaMode::Slc, VictimPolicy::Greedy));
        h.apply(&Op::Write { lpn: 5, fill: 1 }).ok().unwrap();
        h.apply(&Op::Write { lpn: 5, fill: 2 }).ok().unwrap();
        let ppn = h.flash.region(h.id).mapping(5).unwrap();
        let flight = h.apply(&Op::Delta { lpn: 5, len: 8, value: 0x00 }).expect_err("cut at the append");
        let storage = h.flash.device().storage();
        let data = storage.data(ppn).unwrap();
        // The store keeps the OOB's leading bytes; the rest of the area reads 0xFF.
        let mut oob = storage.oob(ppn).unwrap().to_vec();
        oob.resize(storage.geometry().oob_bytes as usize, 0xFF);
        let slot = &oob[flash::oob::slot_offset(0)..flash::oob::slot_offset(1)];
        if slot.iter().all(|&b| b == 0xFF) && data[PAGE - DELTA_AREA..].iter().any(|&b| b != 0xFF) {
            slotless += 1;
        }
        let mut h = h.restart();
        h.check_all(Some((flight.0, &flight.1)));
        assert_eq!(h.flash.region(h.id).mapping(5), Some(ppn), "seed {seed}: the appended page stays live");
        recovered += 1;
    }
    assert!(slotless > 0, "no run tore an append without its slot");
    assert_eq!(recovered, 300);
}

/// Static wear levelling moves cold data so worn and fresh blocks even out; without it
/// a hot/cold workload leaves the cold blocks unworn.
#[test]
fn static_wear_levelling_narrows_the_erase_spread() {
    let run = |static_threshold: Option<u32>| {
        let spec = RegionSpec { wear: WearConfig { static_threshold }, ..spec(IpaMode::Slc, VictimPolicy::Greedy) };
        let mut h = Harness::new(Box::new(MemoryStorage::new(geometry(CellType::Slc), false)), spec);
        let lpns = h.lpns();
        for lpn in 0..lpns {
            h.apply(&Op::Write { lpn, fill: 0 }).ok().unwrap();
        }
        // Only the first tenth of the pages is ever rewritten.
        for i in 0..60_000u32 {
            h.apply(&Op::Write { lpn: (i * 7) % (lpns / 10), fill: 0 }).ok().unwrap();
        }
        let r = h.flash.region(h.id);
        (r.wear(), r.counters().wl_page_migrations)
    };
    let (off, off_moves) = run(None);
    let (on, on_moves) = run(Some(8));
    assert_eq!(off_moves, 0);
    assert!(on_moves > 0);
    assert!(on.pe_max - on.pe_min < off.pe_max - off.pe_min, "spread with WL {on:?}, without {off:?}");
}

/// GC work occupies the chip: a host write that needs a foreground collection waits
/// for its migrations and the erase.
#[test]
fn foreground_gc_delays_the_host_write() {
    let g = geometry(CellType::Slc);
    // Background GC off (its threshold equals the foreground one).
    let gc = GcConfig { policy: VictimPolicy::Greedy, foreground_free_blocks: 1, background_free_blocks: 1 };
    let spec = RegionSpec { gc, ..spec(IpaMode::Slc, VictimPolicy::Greedy) };
    let mut h = Harness::new(Box::new(MemoryStorage::new(g.clone(), false)), spec);
    let lpns = h.lpns();
    let mut worst = 0;
    for i in 0..20_000u32 {
        // Issue every write long after the previous one finished: latency is then the
        // write itself plus whatever GC it had to wait for.
        let now = i as u64 * 100_000_000;
        let t = h.flash.write(h.id, (i * 31) % lpns, &[], now).unwrap();
        worst = worst.max(t.latency_from(now));
    }
    let counters = h.flash.region(h.id).counters();
    assert!(counters.foreground_gc_collections > 0 && counters.background_gc_collections == 0);
    assert!(worst >= g.latencies.erase_ns, "worst write latency {worst} ns never included an erase");
}

#[test]
fn a_region_added_later_takes_free_chips_and_survives_reopen() {
    let g = geometry(CellType::Slc);
    let mut first = spec(IpaMode::Slc, VictimPolicy::Greedy);
    first.max_chips = Some(1);
    let mut flash = Flash::format(Device::new(Box::new(MemoryStorage::new(g, true))), vec![first]).unwrap();
    let mut added = spec(IpaMode::None, VictimPolicy::Greedy);
    added.name = "later".into();
    added.max_chips = Some(2);
    let id = flash.add_region(added.clone(), 0).unwrap();
    assert_eq!(flash.region(id).chips().len(), 2);
    assert!(flash.region(id).chips().iter().all(|c| !flash.regions()[0].chips().contains(c)));
    flash.write(id, 3, &[7u8; PAGE], 0).unwrap();
    let dup = flash.add_region(added, 0).unwrap_err();
    assert!(dup.to_string().contains("twice"), "{dup}");
    let (mut reopened, _) = Flash::open(flash.into_device(), 0).unwrap();
    let id = reopened.region_id("later").unwrap();
    assert_eq!(reopened.read(id, 3, 0).unwrap().unwrap().data, &[7u8; PAGE][..]);
}

/// An overwrite's old copy drops its payload, and so does a trimmed page once its
/// tombstone is on flash: after a hot set is overwritten many times with distinct bytes
/// and a few of its pages are trimmed, only the live pages keep data on the device,
/// reads return the newest bytes (nothing for a trimmed page), and a rebuild (which
/// never reads an old copy a newer one or a tombstone supersedes) returns them too.
#[test]
fn a_regions_stale_copies_keep_no_payload() {
    let g = geometry(CellType::Slc);
    let mut flash = Flash::format(
        Device::new(Box::new(MemoryStorage::new(g.clone(), true))),
        vec![spec(IpaMode::None, VictimPolicy::Greedy)],
    )
    .unwrap();
    let id = flash.region_id("r").unwrap();
    let hot = 24;
    let bytes = |lpn: u32, version: u32| {
        let mut p = fresh_page(lpn, version as u8);
        p[8..12].copy_from_slice(&version.to_le_bytes());
        p
    };
    for version in 0..10 {
        for lpn in 0..hot {
            flash.write(id, lpn, &bytes(lpn, version), 0).unwrap();
        }
    }
    let trimmed = |lpn: u32| lpn.is_multiple_of(5);
    for lpn in (0..hot).filter(|&l| trimmed(l)) {
        assert!(flash.trim(id, lpn, 0).unwrap().is_some());
    }
    let live = (0..hot).filter(|&l| !trimmed(l)).count();
    let dev = flash.device();
    let programmed = (0..g.total_pages()).filter(|&p| dev.storage().program_count(Ppn(p)) > 0).count();
    let with_payload = (0..g.total_pages()).filter(|&p| dev.storage().data(Ppn(p)).is_some()).count();
    assert!(programmed as u32 > 3 * hot, "{programmed} pages programmed, most of them stale");
    assert_eq!(with_payload, live, "only the live copies keep their bytes");
    let (mut reopened, _) = Flash::open(flash.into_device(), 0).unwrap();
    for lpn in 0..hot {
        let read = reopened.read(id, lpn, 0).unwrap();
        if trimmed(lpn) {
            assert!(read.is_none(), "lpn {lpn} was trimmed");
        } else {
            assert_eq!(read.unwrap().data, &bytes(lpn, 9)[..], "lpn {lpn}");
        }
    }
}
