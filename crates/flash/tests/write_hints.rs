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

/// What a run drives: a NoFTL region or a page FTL, one plain and one hinted.
trait Target {
    fn logical_pages(&self) -> u32;
    fn hint(&self, lpn: u32, stage: WriteHint);
    /// Step `op` of 0..10 on `lpn`: 0 trims, 1 appends where the target takes appends,
    /// the rest write `page`.
    fn apply(&mut self, op: u32, lpn: u32, page: &[u8], now: u64);
    /// Checks the run did what the comparison needs (GC, appends).
    fn check_run(&self);
    /// What the hints must leave as they are: counters, device counters, then per lpn
    /// its mapping and bytes.
    fn state(&mut self, end: u64) -> Vec<String>;
}

struct RegionTarget {
    flash: Flash,
    keeps_data: bool,
}

impl Target for RegionTarget {
    fn logical_pages(&self) -> u32 {
        self.flash.region(REGION).logical_pages()
    }
    fn hint(&self, lpn: u32, stage: WriteHint) {
        self.flash.prefetch_write(REGION, lpn, stage);
    }
    fn apply(&mut self, op: u32, lpn: u32, page: &[u8], now: u64) {
        match op {
            0 => drop(self.flash.trim(REGION, lpn, now).unwrap()),
            1 if self.keeps_data => drop(self.flash.write_delta(REGION, lpn, PAGE - 64, &[0x0F], now)),
            _ => drop(self.flash.write(REGION, lpn, page, now).unwrap()),
        }
    }
    fn check_run(&self) {
        let counters = self.flash.region(REGION).counters();
        assert!(counters.gc_erases > 0, "the run should make GC move pages");
        if self.keeps_data {
            assert!(counters.host_write_deltas > 0, "the run should append");
        }
    }
    fn state(&mut self, end: u64) -> Vec<String> {
        let mut state = vec![
            format!("{:?}", self.flash.region(REGION).counters()),
            format!("{:?}", self.flash.device().counters()),
        ];
        for lpn in 0..self.logical_pages() {
            state.push(format!("lpn {lpn} at {:?}", self.flash.region(REGION).mapping(lpn)));
            if self.keeps_data {
                let bytes = self.flash.read(REGION, lpn, end).unwrap().map(|r| r.data.to_vec());
                state.push(format!("lpn {lpn} holds {bytes:?}"));
            }
        }
        state
    }
}

impl Target for Box<dyn Ftl> {
    fn logical_pages(&self) -> u32 {
        Ftl::logical_pages(self.as_ref())
    }
    fn hint(&self, lpn: u32, stage: WriteHint) {
        self.prefetch_write(lpn, stage);
    }
    fn apply(&mut self, op: u32, lpn: u32, page: &[u8], now: u64) {
        match op {
            0 => drop(self.trim(lpn, now).unwrap()),
            _ => drop(self.write(lpn, page, now).unwrap()),
        }
    }
    fn check_run(&self) {
        assert!(self.counters().gc_erases > 0, "the run should make GC move pages");
    }
    fn state(&mut self, end: u64) -> Vec<String> {
        let mut state = vec![format!("{:?}", self.counters()), format!("{:?}", self.device().counters())];
        for lpn in 0..Target::logical_pages(self) {
            let bytes = self.read(lpn, end).unwrap().map(|r| r.data.to_vec());
            state.push(format!("lpn {lpn} holds {bytes:?}"));
        }
        state
    }
}

fn region(keeps_data: bool) -> RegionTarget {
    let spec = RegionSpec { over_provisioning: 0.3, ..RegionSpec::new("r", IpaMode::Slc) };
    let geometry = append_geometry(CellType::Slc, PAGE as u32);
    let device = Device::new(Box::new(MemoryStorage::new(geometry, keeps_data)));
    RegionTarget { flash: Flash::format(device, vec![spec]).unwrap(), keeps_data }
}

fn page_ftl(keeps_data: bool) -> Box<dyn Ftl> {
    let geometry = append_geometry(CellType::Slc, PAGE as u32);
    let config = FtlConfig { over_provisioning: 0.4, ..FtlConfig::new(FtlKind::Page) };
    ftl::format(Device::new(Box::new(MemoryStorage::new(geometry, keeps_data))), &config).unwrap()
}

/// Drives `plain` and `hinted` through the same seeded steps, hinting `hinted` at every
/// stage, and compares what they end with.
fn run(mut plain: impl Target, mut hinted: impl Target, keeps_data: bool, seed: u64) {
    let lpns = plain.logical_pages();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut page = vec![0x5A; if keeps_data { PAGE } else { 0 }];
    if keeps_data {
        page[PAGE - 64..].fill(0xFF);
    }
    for step in 0..4_000u64 {
        let now = step * 1_000;
        // Hints for lpns near the next one, a never-written one and one past the end.
        for stage in WriteHint::STAGES {
            for lpn in [rng.gen_range(0..lpns), lpns, lpns + 7, u32::MAX] {
                hinted.hint(lpn, stage);
            }
        }
        let lpn = rng.gen_range(0..lpns / 2);
        let op = rng.gen_range(0..10);
        if keeps_data {
            page[..8].copy_from_slice(&step.to_le_bytes());
        }
        plain.apply(op, lpn, &page, now);
        hinted.apply(op, lpn, &page, now);
    }
    plain.check_run();
    let end = 4_000 * 1_000;
    assert_eq!(plain.state(end), hinted.state(end));
}

#[test]
fn hints_change_nothing_with_page_bytes() {
    run(region(true), region(true), true, 23);
}

#[test]
fn hints_change_nothing_without_page_bytes() {
    run(region(false), region(false), false, 23);
}

#[test]
fn page_ftl_hints_change_nothing_with_page_bytes() {
    run(page_ftl(true), page_ftl(true), true, 29);
}

#[test]
fn page_ftl_hints_change_nothing_without_page_bytes() {
    run(page_ftl(false), page_ftl(false), false, 29);
}
