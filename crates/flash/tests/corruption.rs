//! Torn vs corrupt, and atomic write groups.
//!
//! - Bit rot: after committed work, bits flip in random completed pages while the
//!   device is off; after the rebuild every logical page reads its last committed
//!   value or fails with `Error::Corrupted` — never an older value.
//! - Power cuts at every operation of a run of write groups: after the rebuild each
//!   group reads all old or all new, also after its lpns are partly rewritten and the
//!   device is reopened again.

use flash::oob::{self, Header};
use flash::{Error, Flash, GcConfig, IpaMode, RegionId, RegionSpec, VictimPolicy, WearConfig};
use nand::{CellType, Device, FaultyStorage, Geometry, Latencies, MemoryStorage, Ppn, Storage};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use support::bit_rot::BitRot;

mod support {
    pub mod bit_rot;
}

const PAGE: usize = 512;
const DELTA_AREA: usize = 64;

fn geometry() -> Geometry {
    Geometry {
        channels: 2,
        chips_per_channel: 1,
        blocks_per_chip: 10,
        pages_per_block: 8,
        page_bytes: PAGE as u32,
        oob_bytes: 96,
        cell: CellType::Slc,
        nop: 4,
        endurance: 1_000_000,
        latencies: Latencies::slc_typical(),
    }
}

fn spec() -> RegionSpec {
    RegionSpec {
        over_provisioning: 0.35,
        gc: GcConfig { policy: VictimPolicy::Greedy, foreground_free_blocks: 1, background_free_blocks: 2 },
        wear: WearConfig { static_threshold: Some(4) },
        ..RegionSpec::new("r", IpaMode::Slc)
    }
}

fn fresh_page(lpn: u32, fill: u8) -> Vec<u8> {
    let mut page = vec![fill & 0x7F; PAGE];
    page[..4].copy_from_slice(&lpn.to_le_bytes());
    page[PAGE - DELTA_AREA..].fill(0xFF);
    page
}

/// Raw byte ranges of a page where a flip is indistinguishable from a torn program
/// (docs/safety.md): `None` (the whole page) if it is the last programmed page of its
/// block, else the page's last append after its program (its bytes and its slot).
fn torn_lookalike(storage: &dyn Storage, ppn: Ppn) -> Option<Vec<std::ops::Range<usize>>> {
    let g = storage.geometry();
    let block = g.block_of(ppn);
    let first = g.ppn(block, 0).0;
    let last_programmed = (0..g.pages_per_block).rev().find(|&i| storage.program_count(Ppn(first + i)) > 0);
    if last_programmed == Some(ppn.0 - first) {
        return None;
    }
    let (Some(data), Some(stored)) = (storage.data(ppn), storage.oob(ppn)) else {
        return Some(Vec::new());
    };
    // The store keeps the OOB's leading bytes; the rest of the area reads 0xFF.
    let mut oob_bytes = stored.to_vec();
    oob_bytes.resize(g.oob_bytes as usize, 0xFF);
    let oob_bytes = &oob_bytes[..];
    let Some(header) = Header::decode(oob_bytes) else {
        return Some(Vec::new());
    };
    let written = (header.slots_at_program as usize..oob::slot_capacity(oob_bytes.len()))
        .take_while(|&i| {
            oob_bytes[oob::slot_offset(i)..oob::slot_offset(i) + oob::SLOT_BYTES].iter().any(|&b| b != 0xFF)
        })
        .last();
    Some(match written {
        Some(i) => {
            let slot = &oob_bytes[oob::slot_offset(i)..oob::slot_offset(i) + oob::SLOT_BYTES];
            let offset = u16::from_le_bytes([slot[0], slot[1]]) as usize;
            let len = u16::from_le_bytes([slot[2], slot[3]]) as usize;
            let at = data.len() + oob::slot_offset(i);
            vec![offset..offset + len, at..at + oob::SLOT_BYTES]
        }
        None => Vec::new(),
    })
}

/// Committed content per lpn (`None`: trimmed or never written) and where the next
/// append goes.
#[derive(Default)]
struct Model {
    pages: HashMap<u32, (Vec<u8>, usize)>,
}

const LPNS: u32 = 24;

/// Random writes (single pages and groups of two), appends and trims, all acknowledged.
fn committed_work(flash: &mut Flash, rng: &mut ChaCha8Rng, model: &mut Model, now: &mut u64) {
    let id = RegionId(0);
    for _ in 0..rng.gen_range(40..160) {
        *now += 1_000;
        let lpn = rng.gen_range(0..LPNS);
        match rng.gen_range(0..10) {
            0..=3 => {
                let page = fresh_page(lpn, rng.gen());
                flash.write(id, lpn, &page, *now).unwrap();
                model.pages.insert(lpn, (page, PAGE - DELTA_AREA));
            }
            4..=5 => {
                let first = lpn & !1;
                let (a, b) = (fresh_page(first, rng.gen()), fresh_page(first + 1, rng.gen()));
                flash.write_group(id, first, &[a.clone(), b.clone()].concat(), *now).unwrap();
                model.pages.insert(first, (a, PAGE - DELTA_AREA));
                model.pages.insert(first + 1, (b, PAGE - DELTA_AREA));
            }
            6..=8 => {
                let Some((page, floor)) = model.pages.get_mut(&lpn) else { continue };
                let len = rng.gen_range(1..8);
                if *floor + len > PAGE {
                    continue;
                }
                let bytes: Vec<u8> = (0..len).map(|_| rng.gen::<u8>() & 0xF7).collect();
                if flash.write_delta(id, lpn, *floor, &bytes, *now).is_ok() {
                    page[*floor..*floor + len].copy_from_slice(&bytes);
                    *floor += len;
                }
            }
            _ => {
                flash.trim(id, lpn, *now).unwrap();
                model.pages.remove(&lpn);
            }
        }
    }
}

/// Every read returns the committed value (whole bytes equal, nothing committed beyond
/// them) or `Error::Corrupted` for that lpn. Returns how many reads were corrupt.
fn check_reads(flash: &mut Flash, model: &Model, seed: u64) -> u32 {
    let mut corrupt = 0;
    for lpn in 0..LPNS {
        let expected = model.pages.get(&lpn).map(|(p, _)| p);
        match (flash.read(RegionId(0), lpn, 0), expected) {
            (Err(Error::Corrupted { lpn: Some(l), .. }), Some(_)) if l == lpn => corrupt += 1,
            (Ok(None), None) => {}
            (Ok(Some(r)), Some(e)) => {
                let whole = r.whole_bytes;
                assert!(
                    r.data[..whole] == e[..whole] && e[whole..].iter().all(|&b| b == 0xFF),
                    "seed {seed}: lpn {lpn} reads other bytes than its last committed value (whole up to {whole})"
                );
            }
            (other, e) => panic!(
                "seed {seed}: lpn {lpn}: expected {}, read {:?}",
                if e.is_some() { "its value" } else { "unmapped" },
                other.map(|r| r.map(|r| r.whole_bytes))
            ),
        }
    }
    corrupt
}

/// Over 1,000 seeds: committed work, then 1-2 bit flips in each of 1-4 completed
/// pages (half of them pages that hold the newest copy of an lpn), rebuild, read all.
#[test]
fn bit_flips_in_completed_pages_read_as_committed_or_corrupted_never_older() {
    let seeds: u64 = std::env::var("CORRUPTION_SEEDS").ok().and_then(|s| s.parse().ok()).unwrap_or(1_000);
    let (mut corrupt_reads, mut live_hits) = (0, 0);
    for seed in 0..seeds {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let armed = Arc::new(Mutex::new(Vec::new()));
        let storage = BitRot::new(MemoryStorage::new(geometry(), true), armed.clone());
        let mut flash = Flash::format(Device::new(Box::new(storage)), vec![spec()]).unwrap();
        let (mut model, mut now) = (Model::default(), 0);
        committed_work(&mut flash, &mut rng, &mut model, &mut now);

        let g = geometry();
        let programmed: Vec<Ppn> =
            (0..g.total_pages()).map(Ppn).filter(|&p| flash.device().storage().program_count(p) > 0).collect();
        let live: Vec<Ppn> = (0..LPNS).filter_map(|l| flash.region(RegionId(0)).mapping(l)).collect();
        for _ in 0..rng.gen_range(1..=4) {
            let from_live = rng.gen_bool(0.5) && !live.is_empty();
            let ppn = if from_live {
                live[rng.gen_range(0..live.len())]
            } else {
                programmed[rng.gen_range(0..programmed.len())]
            };
            let Some(excluded) = torn_lookalike(flash.device().storage(), ppn) else {
                continue;
            };
            live_hits += u32::from(from_live);
            for _ in 0..rng.gen_range(1..=2) {
                let offset = loop {
                    let o = rng.gen_range(0..g.raw_page_bytes());
                    if !excluded.iter().any(|r| r.contains(&o)) {
                        break o;
                    }
                };
                armed.lock().unwrap().push((ppn, offset, rng.gen_range(0..8)));
            }
        }
        let mut device = flash.into_device();
        device.power_on();
        let (mut flash, _) = Flash::open(device, now).unwrap_or_else(|e| panic!("seed {seed}: open refused: {e}"));
        corrupt_reads += check_reads(&mut flash, &model, seed);
    }
    if seeds >= 1_000 {
        // The test can fail: flips do reach newest copies and are reported.
        assert!(live_hits > 300, "only {live_hits} flips hit live pages");
        assert!(corrupt_reads > 100, "only {corrupt_reads} corrupt reads over {seeds} seeds");
    }
}

/// A flip in the last append of a page is indistinguishable from a torn append: the
/// page reads with a torn tail (the documented window), never as whole.
#[test]
fn a_flip_in_the_last_append_reads_as_a_torn_tail() {
    let armed = Arc::new(Mutex::new(Vec::new()));
    let storage = BitRot::new(MemoryStorage::new(geometry(), true), armed.clone());
    let mut flash = Flash::format(Device::new(Box::new(storage)), vec![spec()]).unwrap();
    let id = RegionId(0);
    for lpn in 0..3 {
        flash.write(id, lpn, &fresh_page(lpn, 1), 0).unwrap();
    }
    let floor = PAGE - DELTA_AREA;
    flash.write_delta(id, 1, floor, &[1, 2], 0).unwrap();
    flash.write_delta(id, 1, floor + 2, &[3, 4], 0).unwrap();
    let ppn = flash.region(id).mapping(1).unwrap();
    armed.lock().unwrap().push((ppn, floor + 3, 0));
    let mut device = flash.into_device();
    device.power_on();
    let (mut flash, _) = Flash::open(device, 0).unwrap();
    let r = flash.read(id, 1, 0).unwrap().unwrap();
    assert!(r.torn_tail);
    assert_eq!(r.whole_bytes, floor + 2);
}

/// A flip in an earlier append is corruption: reported, not read as older data.
#[test]
fn a_flip_in_an_earlier_append_is_reported_corrupt() {
    let armed = Arc::new(Mutex::new(Vec::new()));
    let storage = BitRot::new(MemoryStorage::new(geometry(), true), armed.clone());
    let mut flash = Flash::format(Device::new(Box::new(storage)), vec![spec()]).unwrap();
    let id = RegionId(0);
    // Round-robin over two chips: lpn 1's page is not the last of its block.
    for lpn in 0..6 {
        flash.write(id, lpn, &fresh_page(lpn, 1), 0).unwrap();
    }
    let floor = PAGE - DELTA_AREA;
    flash.write_delta(id, 1, floor, &[1, 2], 0).unwrap();
    flash.write_delta(id, 1, floor + 2, &[3, 4], 0).unwrap();
    let ppn = flash.region(id).mapping(1).unwrap();
    armed.lock().unwrap().push((ppn, floor + 1, 0));
    let mut device = flash.into_device();
    device.power_on();
    let (mut flash, _) = Flash::open(device, 0).unwrap();
    let e = flash.read(id, 1, 0).err().expect("corrupt");
    assert!(matches!(e, Error::Corrupted { lpn: Some(1), .. }), "{e}");
    assert_eq!(flash.region(id).rebuild_report().corrupt_lpns, 1);
    // Corruption stays reported across GC and reopen until the page is rewritten.
    for round in 0..300u32 {
        for lpn in [0, 2, 3, 4, 5] {
            flash.write(id, lpn, &fresh_page(lpn, round as u8), 0).unwrap();
        }
    }
    assert_ne!(flash.region(id).mapping(1), Some(ppn), "GC (wear levelling) moved the corrupt page");
    let (mut flash, _) = Flash::open(flash.into_device(), 0).unwrap();
    assert!(matches!(flash.read(id, 1, 0), Err(Error::Corrupted { lpn: Some(1), .. })));
    flash.write(id, 1, &fresh_page(1, 9), 0).unwrap();
    assert_eq!(flash.read(id, 1, 0).unwrap().unwrap().data, &fresh_page(1, 9)[..]);
}

const GROUP: u32 = 3;
const GROUPS: u32 = 25;

/// Content of version `v` of lpn `lpn`.
fn version(lpn: u32, v: u8) -> Vec<u8> {
    fresh_page(lpn, v)
}

/// Which version each lpn reads, 0 for unmapped (panics on anything else).
fn versions(flash: &mut Flash, max: u8) -> Vec<u8> {
    (0..GROUP * GROUPS)
        .map(|lpn| {
            let Some(r) = flash.read(RegionId(0), lpn, 0).unwrap() else {
                return 0;
            };
            (1..=max).find(|&v| r.data == &version(lpn, v)[..]).unwrap_or_else(|| panic!("lpn {lpn}: unknown bytes"))
        })
        .collect()
}

/// A power cut at every operation of a run of group writes (programs, GC copies,
/// erases): after the rebuild each group is all old or all new; then the second half
/// of each group is rewritten alone and the device reopened: the first half still
/// reads what the rebuild decided (a torn group's surviving parts never come back).
#[test]
fn power_cuts_leave_every_write_group_all_old_or_all_new() {
    let mut torn = HashMap::<&str, u32>::new();
    for cut_at in 1u64.. {
        let storage = FaultyStorage::new(MemoryStorage::new(geometry(), true), Some(cut_at), cut_at);
        let mut flash = Flash::format(Device::new(Box::new(storage)), vec![spec()]).unwrap();
        let id = RegionId(0);
        let mut committed = vec![0u8; (GROUP * GROUPS) as usize];
        let mut in_flight = None;
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let mut now = 0;
        'run: for round in 0..12u8 {
            for g in 0..GROUPS {
                now += 1_000;
                let v = round + 1;
                let first = g * GROUP;
                let data: Vec<u8> = (first..first + GROUP).flat_map(|l| version(l, v)).collect();
                if rng.gen_bool(0.3) {
                    continue;
                }
                match flash.write_group(id, first, &data, now) {
                    Ok(_) => committed[first as usize..(first + GROUP) as usize].fill(v),
                    Err(_) => {
                        in_flight = Some((g, v));
                        break 'run;
                    }
                }
            }
        }
        let Some((group, v)) = in_flight else {
            assert!(cut_at > 100, "the run should take more than 100 operations");
            break;
        };
        let kind = match flash.device().storage().last_torn() {
            Some(nand::TornOp::Program { .. }) => "program",
            Some(nand::TornOp::CopyProgram { .. }) => "copyback",
            Some(nand::TornOp::Erase { .. }) => "erase",
            None => "none",
        };
        *torn.entry(kind).or_default() += 1;
        let mut device = flash.into_device();
        device.power_on();
        let (mut flash, done) = Flash::open(device, now).unwrap();
        let read = versions(&mut flash, 31);
        for g in 0..GROUPS {
            let got = &read[(g * GROUP) as usize..((g + 1) * GROUP) as usize];
            let old = &committed[(g * GROUP) as usize..((g + 1) * GROUP) as usize];
            if g == group && got.iter().all(|&x| x == v) {
                continue;
            }
            assert_eq!(got, old, "cut at {cut_at} ({kind}): group {g} reads {got:?}, committed {old:?}");
        }
        // Rewrite the second half of every group alone, then reopen.
        for g in 0..GROUPS {
            for lpn in g * GROUP + 1..(g + 1) * GROUP {
                if let Err(e) = flash.write(id, lpn, &version(lpn, 99), done) {
                    panic!("cut {cut_at}: {e} {:?} {:?}", flash.occupancy(id), flash.region(id).rebuild_report());
                }
            }
        }
        let (mut flash, _) = Flash::open(flash.into_device(), done).unwrap();
        let again = versions(&mut flash, 99);
        for g in 0..GROUPS {
            let first = (g * GROUP) as usize;
            assert_eq!(again[first], read[first], "cut at {cut_at}: group {g}'s first part changed on reopen");
            assert!(again[first + 1..first + GROUP as usize].iter().all(|&x| x == 99));
        }
    }
    for kind in ["program", "copyback", "erase"] {
        assert!(torn.get(kind).copied().unwrap_or(0) > 0, "no cut tore a {kind}: {torn:?}");
    }
}

/// Foreground GC between the parts of a group collects the block holding the parts
/// already programmed: they move as live pages, the old copies stay mapped until the
/// group ends, and the group reads whole (also after a reopen).
#[test]
fn gc_between_parts_moves_the_parts_already_programmed() {
    let g = Geometry { channels: 1, chips_per_channel: 1, blocks_per_chip: 6, pages_per_block: 8, ..geometry() };
    let spec = RegionSpec {
        over_provisioning: 0.4,
        gc: GcConfig { policy: VictimPolicy::Greedy, foreground_free_blocks: 1, background_free_blocks: 1 },
        wear: WearConfig { static_threshold: None },
        ..RegionSpec::new("r", IpaMode::Slc)
    };
    let mut flash = Flash::format(Device::new(Box::new(MemoryStorage::new(g, true))), vec![spec]).unwrap();
    let id = RegionId(0);
    assert_eq!(flash.region(id).logical_pages(), 28);
    // Blocks 0-2 hold lpns 0-23; block 3 lpns 24-27 and four rewrites of lpn 1; block
    // 4 five rewrites of lpn 0.
    for lpn in 0..28 {
        flash.write(id, lpn, &version(lpn, 1), 0).unwrap();
    }
    for (lpn, rewrites) in [(1, 4), (0, 5)] {
        for v in 2..2 + rewrites {
            flash.write(id, lpn, &version(lpn, v), 0).unwrap();
        }
    }
    // Parts 0-2 fill block 4 (4 live pages, the fewest); part 3 needs a new host block,
    // and the chip's last free block is GC's: foreground GC collects block 4 first.
    let data: Vec<u8> = (16..20).flat_map(|l| version(l, 9)).collect();
    flash.write_group(id, 16, &data, 0).unwrap();
    let counters = flash.region(id).counters();
    assert!(counters.foreground_gc_collections > 0 && counters.gc_page_migrations >= 4, "{counters:?}");
    let expect = |lpn: u32| match lpn {
        0 => version(0, 6),
        1 => version(1, 5),
        16..=19 => version(lpn, 9),
        _ => version(lpn, 1),
    };
    for lpn in 0..28 {
        assert_eq!(flash.read(id, lpn, 0).unwrap().unwrap().data, &expect(lpn)[..], "lpn {lpn}");
    }
    let (mut flash, _) = Flash::open(flash.into_device(), 0).unwrap();
    for lpn in 0..28 {
        assert_eq!(flash.read(id, lpn, 0).unwrap().unwrap().data, &expect(lpn)[..], "lpn {lpn} after reopen");
    }
}

#[test]
fn write_group_refuses_bad_sizes_and_ranges() {
    let mut flash = Flash::format(Device::new(Box::new(MemoryStorage::new(geometry(), true))), vec![spec()]).unwrap();
    let id = RegionId(0);
    let last = flash.region(id).logical_pages() - 1;
    for bad in [0, PAGE - 1, PAGE + 1, 256 * PAGE] {
        assert!(
            matches!(flash.write_group(id, 0, &vec![0; bad], 0), Err(Error::WrongPayloadSize { .. })),
            "{bad} bytes"
        );
    }
    assert!(matches!(flash.write(id, 0, &vec![0; 2 * PAGE], 0), Err(Error::WrongPayloadSize { .. })));
    assert!(matches!(
        flash.write_group(id, last, &vec![0; 2 * PAGE], 0),
        Err(Error::LpnOutOfRange { lpn, .. }) if lpn == last + 1
    ));
    assert!(flash.read(id, last, 0).unwrap().is_none(), "nothing was written");
}
