//! `Flash::prefetch_write` and `Ftl::prefetch_write` are hints and nothing more: two
//! regions (or two page FTLs) driven by the same seeded writes, appends and trims, one
//! of them hinted at every stage for lpns that are mapped, trimmed, never written or out
//! of range, end up the same: same mapping, same counters, same device counters, same
//! bytes.

use flash::ftl::{self, Ftl, FtlConfig, FtlKind};
use flash::{Flash, IpaMode, RegionId, RegionSpec, WriteHint};
use nand::{CellType, Device, MemoryStorage};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use support::geometry::append_geometry;

mod support {
    pub mod geometry;
}

const PAGE: usize = 512;
const REGION: RegionId = RegionId(0);

fn flash(keeps_data: bool) -> Flash {
    let spec = RegionSpec { over_provisioning: 0.3, ..RegionSpec::new("r", IpaMode::Slc) };
    let geometry = append_geometry(CellType::Slc, PAGE as u32);
    Flash::format(Device::new(Box::new(MemoryStorage::new(geometry, keeps_data))), vec![spec]).unwrap()
}

fn run(keeps_data: bool) {
    let (mut plain, mut hinted) = (flash(keeps_data), flash(keeps_data));
    let lpns = plain.region(REGION).logical_pages();
    let mut rng = ChaCha8Rng::seed_from_u64(23);
    let mut page = vec![0x5A; if keeps_data { PAGE } else { 0 }];
    if keeps_data {
        page[PAGE - 64..].fill(0xFF);
    }
    for step in 0..4_000u64 {
        let now = step * 1_000;
        // Hints for lpns near the next one, a never-written one and one past the end.
        for stage in WriteHint::STAGES {
            for lpn in [rng.gen_range(0..lpns), lpns, lpns + 7, u32::MAX] {
                hinted.prefetch_write(REGION, lpn, stage);
            }
        }
        let lpn = rng.gen_range(0..lpns / 2);
        let op = rng.gen_range(0..10);
        for flash in [&mut plain, &mut hinted] {
            match op {
                0 => drop(flash.trim(REGION, lpn, now).unwrap()),
                1 if keeps_data => drop(flash.write_delta(REGION, lpn, PAGE - 64, &[0x0F], now)),
                _ => {
                    if keeps_data {
                        page[..8].copy_from_slice(&step.to_le_bytes());
                    }
                    flash.write(REGION, lpn, &page, now).unwrap();
                }
            }
        }
    }
    assert!(plain.region(REGION).counters().gc_erases > 0, "the run should make GC move pages");
    if keeps_data {
        assert!(plain.region(REGION).counters().host_write_deltas > 0, "the run should append");
    }
    assert_eq!(plain.region(REGION).counters(), hinted.region(REGION).counters());
    assert_eq!(plain.device().counters(), hinted.device().counters());
    let end = 4_000 * 1_000;
    for lpn in 0..lpns {
        assert_eq!(plain.region(REGION).mapping(lpn), hinted.region(REGION).mapping(lpn), "lpn {lpn}");
        if keeps_data {
            let a = plain.read(REGION, lpn, end).unwrap().map(|r| r.data.to_vec());
            let b = hinted.read(REGION, lpn, end).unwrap().map(|r| r.data.to_vec());
            assert_eq!(a, b, "lpn {lpn}");
        }
    }
}

#[test]
fn hints_change_nothing_with_page_bytes() {
    run(true);
}

#[test]
fn hints_change_nothing_without_page_bytes() {
    run(false);
}

fn page_ftl(keeps_data: bool) -> Box<dyn Ftl> {
    let geometry = append_geometry(CellType::Slc, PAGE as u32);
    let config = FtlConfig { over_provisioning: 0.4, ..FtlConfig::new(FtlKind::Page) };
    ftl::format(Device::new(Box::new(MemoryStorage::new(geometry, keeps_data))), &config).unwrap()
}

fn run_page_ftl(keeps_data: bool) {
    let (mut plain, mut hinted) = (page_ftl(keeps_data), page_ftl(keeps_data));
    let lpns = plain.logical_pages();
    let mut rng = ChaCha8Rng::seed_from_u64(29);
    let mut page = vec![0x5A; if keeps_data { PAGE } else { 0 }];
    for step in 0..4_000u64 {
        let now = step * 1_000;
        for stage in WriteHint::STAGES {
            for lpn in [rng.gen_range(0..lpns), lpns, lpns + 7, u32::MAX] {
                hinted.prefetch_write(lpn, stage);
            }
        }
        let lpn = rng.gen_range(0..lpns / 2);
        let trim = rng.gen_range(0..10) == 0;
        for ftl in [&mut plain, &mut hinted] {
            if trim {
                ftl.trim(lpn, now).unwrap();
            } else {
                if keeps_data {
                    page[..8].copy_from_slice(&step.to_le_bytes());
                }
                ftl.write(lpn, &page, now).unwrap();
            }
        }
    }
    assert!(plain.counters().gc_erases > 0, "the run should make GC move pages");
    assert_eq!(plain.counters(), hinted.counters());
    assert_eq!(plain.device().counters(), hinted.device().counters());
    let end = 4_000 * 1_000;
    for lpn in 0..lpns {
        let a = plain.read(lpn, end).unwrap().map(|r| r.data.to_vec());
        let b = hinted.read(lpn, end).unwrap().map(|r| r.data.to_vec());
        assert_eq!(a, b, "lpn {lpn}");
    }
}

#[test]
fn page_ftl_hints_change_nothing_with_page_bytes() {
    run_page_ftl(true);
}

#[test]
fn page_ftl_hints_change_nothing_without_page_bytes() {
    run_page_ftl(false);
}
