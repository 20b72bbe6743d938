//! `Flash::chip_pages` against a model: through seeded writes, appends, trims, GC and
//! a restart, each chip's five page states add up to the chip's pages, the totals match
//! the region's occupancy, and "appended" counts exactly the logical pages whose live
//! copy carries an append (GC's copyback keeps them appended).

use flash::{Flash, IpaMode, RegionId, RegionSpec};
use nand::{CellType, Device, Geometry, MemoryStorage};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::HashSet;

use support::geometry::append_geometry;

mod support {
    pub mod geometry;
}

const PAGE: usize = 512;

fn geometry(cell: CellType) -> Geometry {
    append_geometry(cell, PAGE as u32)
}

fn check(flash: &Flash, appended: &HashSet<u32>, when: &str) {
    let id = RegionId(0);
    let g = flash.device().geometry();
    let chips = flash.chip_pages(id);
    assert_eq!(chips.iter().map(|c| c.chip).collect::<Vec<_>>(), flash.region(id).chips(), "{when}");
    for c in &chips {
        let sum = c.free_pages + c.valid_pages + c.appended_pages + c.invalid_pages + c.unused_pages;
        assert_eq!(sum, (g.blocks_per_chip * g.pages_per_block) as u64, "{when}: chip {c:?}");
    }
    let total = |f: fn(&flash::ChipPages) -> u64| chips.iter().map(f).sum::<u64>();
    let o = flash.occupancy(id);
    assert_eq!(total(|c| c.valid_pages + c.appended_pages), o.valid_pages, "{when}");
    assert_eq!(total(|c| c.invalid_pages), o.invalid_pages, "{when}");
    assert_eq!(total(|c| c.free_pages), o.free_pages, "{when}");
    assert_eq!(total(|c| c.appended_pages), appended.len() as u64, "{when}");
}

fn run(mode: IpaMode, cell: CellType) {
    let spec = RegionSpec { over_provisioning: 0.35, ..RegionSpec::new("r", mode) };
    let mut flash = Flash::format(Device::new(Box::new(MemoryStorage::new(geometry(cell), true))), vec![spec]).unwrap();
    let id = RegionId(0);
    let lpns = flash.region(id).logical_pages();
    let mut rng = ChaCha8Rng::seed_from_u64(19);
    let (mut now, mut appended, mut floors) = (0u64, HashSet::new(), vec![None::<usize>; lpns as usize]);
    check(&flash, &appended, "fresh");
    for step in 0..3_000 {
        now += 1_000;
        let lpn = rng.gen_range(0..lpns);
        match rng.gen_range(0..10) {
            0 => {
                flash.trim(id, lpn, now).unwrap();
                appended.remove(&lpn);
                floors[lpn as usize] = None;
            }
            1..=4 => {
                let Some(floor) = floors[lpn as usize].filter(|&f| f < PAGE) else { continue };
                // An append is refused once the page's NOP or slots are used up.
                if flash.write_delta(id, lpn, floor, &[0x0F], now).is_ok() {
                    appended.insert(lpn);
                    floors[lpn as usize] = Some(floor + 1);
                }
            }
            _ => {
                let mut page = vec![0x5A; PAGE];
                page[PAGE - 64..].fill(0xFF);
                flash.write(id, lpn, &page, now).unwrap();
                appended.remove(&lpn);
                floors[lpn as usize] = Some(PAGE - 64);
            }
        }
        if step % 500 == 0 {
            check(&flash, &appended, &format!("step {step}"));
        }
    }
    assert!(flash.region(id).counters().gc_erases > 0, "the run should make GC move pages");
    assert!(!appended.is_empty(), "the run should leave appended pages");
    check(&flash, &appended, "after the run");
    let mut device = flash.into_device();
    device.power_on();
    let (flash, _) = Flash::open(device, now).unwrap();
    check(&flash, &appended, "after a restart");
}

#[test]
fn slc_chip_pages_match_the_model() {
    run(IpaMode::Slc, CellType::Slc);
}

#[test]
fn pslc_chip_pages_count_the_skipped_msb_pages_as_unused() {
    run(IpaMode::Pslc, CellType::Mlc);
}
