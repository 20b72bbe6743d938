//! Corrupt is never stale, on every storage: random committed work, a durable point
//! (a clean close; or a sync, more committed work and a power loss), then one bit
//! flipped in a random page the durable point proves complete
//! (`!Device::may_be_torn`), reopen: every logical page reads its newest committed
//! value or fails with a corruption error (or the open refuses the store as corrupt),
//! never an older value. `INTEGRITY_CASES` cases per storage and scenario (`make long`
//! runs 1,000).

use flash::ftl::{self, Ftl, FtlConfig, FtlKind};
use flash::ipl::{IplConfig, IplStore};
use flash::{Error, Flash, GcConfig, IpaMode, PageDevice, RegionId, RegionSpec, VictimPolicy, WearConfig};
use nand::{Device, Geometry, Latencies, MemoryStorage};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use support::bit_rot::{BitRot, Flip};

mod support {
    pub mod bit_rot;
    pub mod geometry;
}

const PAGE: usize = 512;
const LPNS: u32 = 24;
/// The IPL store's DB pages: two flash pages each.
const IPL_PAGE: usize = 2 * PAGE;

fn cases() -> u64 {
    std::env::var("INTEGRITY_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(40)
}

fn geometry() -> Geometry {
    Geometry {
        blocks_per_chip: 24,
        pages_per_block: 8,
        oob_bytes: 96,
        nop: 4,
        latencies: Latencies::slc_typical(),
        ..support::geometry::small_geometry(PAGE as u32)
    }
}

/// The storage under test, as a map of logical pages.
enum Store {
    Region(Box<Flash>),
    Ftl(Box<dyn Ftl>),
    Ipl(Box<IplStore>),
}

/// Which storage, and how to lay it out.
#[derive(Clone, Copy, Debug)]
enum Kind {
    Region,
    Ftl(FtlKind),
    Ipl,
}

fn region_spec() -> RegionSpec {
    RegionSpec {
        over_provisioning: 0.35,
        gc: GcConfig { policy: VictimPolicy::Greedy, foreground_free_blocks: 1, background_free_blocks: 2 },
        wear: WearConfig { static_threshold: Some(4) },
        ..RegionSpec::new("r", IpaMode::Slc)
    }
}

fn ftl_config(kind: FtlKind) -> FtlConfig {
    FtlConfig { over_provisioning: 0.4, log_blocks: 4, cmt_entries: 8, ..FtlConfig::new(kind) }
}

impl Kind {
    fn format(self, device: Device) -> Store {
        match self {
            Kind::Region => Store::Region(Box::new(Flash::format(device, vec![region_spec()]).unwrap())),
            Kind::Ftl(kind) => Store::Ftl(ftl::format(device, &ftl_config(kind)).unwrap()),
            Kind::Ipl => {
                let config = IplConfig {
                    blocks_per_unit: 1,
                    db_page_bytes: IPL_PAGE as u32,
                    log_region_bytes: 1024,
                    sector_bytes: 128,
                    update_records: true,
                };
                let spec = RegionSpec::new("r", IpaMode::None);
                Store::Ipl(Box::new(IplStore::format(device, config, vec![spec]).unwrap()))
            }
        }
    }

    fn open(self, device: Device) -> Result<Store, Error> {
        Ok(match self {
            Kind::Region => Store::Region(Box::new(Flash::open(device, 0)?.0)),
            Kind::Ftl(_) => Store::Ftl(ftl::open(device, 0)?.0),
            Kind::Ipl => Store::Ipl(Box::new(IplStore::open(device, 0)?.0)),
        })
    }

    /// Logical pages the work touches, and their bytes.
    fn pages(self) -> (u32, usize) {
        match self {
            Kind::Ipl => (LPNS / 2, IPL_PAGE),
            _ => (LPNS, PAGE),
        }
    }
}

impl Store {
    fn write(&mut self, lpn: u32, data: &[u8]) -> Result<(), Error> {
        match self {
            Store::Region(f) => f.write(RegionId(0), lpn, data, 0).map(drop),
            Store::Ftl(f) => f.write(lpn, data, 0).map(drop),
            Store::Ipl(s) => s.write_page(RegionId(0), lpn, data, 0).map(drop),
        }
    }

    fn trim(&mut self, lpn: u32) -> Result<(), Error> {
        match self {
            Store::Region(f) => f.trim(RegionId(0), lpn, 0).map(drop),
            Store::Ftl(f) => f.trim(lpn, 0).map(drop),
            Store::Ipl(s) => PageDevice::trim(s.as_mut(), RegionId(0), lpn * 2, 0).map(drop),
        }
    }

    fn read(&mut self, lpn: u32) -> Result<Option<Vec<u8>>, Error> {
        match self {
            Store::Region(f) => Ok(f.read(RegionId(0), lpn, 0)?.map(|r| r.data.to_vec())),
            Store::Ftl(f) => Ok(f.read(lpn, 0)?.map(|r| r.data.to_vec())),
            Store::Ipl(s) => {
                let mut buf = vec![0; IPL_PAGE];
                Ok(s.read_page(RegionId(0), lpn, &mut buf, 0)?.map(|_| buf))
            }
        }
    }

    fn flush(&mut self) {
        match self {
            Store::Region(f) => f.flush().unwrap(),
            Store::Ftl(f) => f.device_mut().storage_mut().flush().unwrap(),
            Store::Ipl(s) => PageDevice::flush(s.as_mut()).unwrap(),
        }
    }

    fn into_device(self) -> Device {
        match self {
            Store::Region(f) => f.into_device(),
            Store::Ftl(f) => f.into_device(),
            Store::Ipl(s) => s.into_device(),
        }
    }
}

/// Random writes (whole pages; on the IPL store a rewrite changes a few bytes, which
/// it logs) and trims, each acknowledged, into `model`.
fn committed_work(kind: Kind, store: &mut Store, rng: &mut ChaCha8Rng, model: &mut HashMap<u32, Vec<u8>>) {
    let (pages, bytes) = kind.pages();
    for _ in 0..rng.gen_range(20..120) {
        let lpn = rng.gen_range(0..pages);
        if rng.gen_range(0..8) == 0 {
            store.trim(lpn).unwrap();
            model.remove(&lpn);
        } else {
            let mut page = match model.get(&lpn) {
                Some(old) if rng.gen_bool(0.5) => old.clone(),
                _ => vec![rng.gen::<u8>(); bytes],
            };
            let at = rng.gen_range(4..bytes - 8);
            page[at..at + 8].fill(rng.gen());
            page[..4].copy_from_slice(&lpn.to_le_bytes());
            store.write(lpn, &page).unwrap();
            model.insert(lpn, page);
        }
    }
}

/// Whether an error names corruption (of a page, or of the store's metadata).
fn is_corruption(e: &Error) -> bool {
    matches!(e, Error::Corrupted { .. } | Error::CorruptLayout(_))
}

/// One case; returns whether the flip was reported (a read or the open failed).
fn case(kind: Kind, seed: u64, power_loss: bool) -> Option<bool> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let armed = Arc::new(Mutex::new(Vec::<Flip>::new()));
    let device = Device::new(Box::new(BitRot::new(MemoryStorage::new(geometry(), true), armed.clone())));
    let mut store = kind.format(device);
    let mut model = HashMap::new();
    committed_work(kind, &mut store, &mut rng, &mut model);
    store.flush();
    if power_loss {
        committed_work(kind, &mut store, &mut rng, &mut model);
    }
    let mut device = store.into_device();
    // Power off (or a clean close and restart): only the durable point is known.
    device.power_on();
    let ppn = support::bit_rot::flip_a_completed_page(&device, &armed, &mut rng)?;
    device.power_on();
    let what = format!("{kind:?} seed {seed} power loss {power_loss} flip in {ppn:?}");
    let mut store = match kind.open(device) {
        Ok(store) => store,
        Err(e) if is_corruption(&e) => return Some(true),
        Err(e) => panic!("{what}: open failed without naming corruption: {e}"),
    };
    let mut reported = false;
    for lpn in 0..kind.pages().0 {
        match store.read(lpn) {
            Ok(got) => assert!(got.as_ref() == model.get(&lpn), "{what}: lpn {lpn} reads an older value"),
            Err(e) if is_corruption(&e) => reported = true,
            Err(e) => panic!("{what}: lpn {lpn}: an error that does not name corruption: {e}"),
        }
    }
    Some(reported)
}

fn run(kind: Kind) {
    support::bit_rot::run_flip_cases(&format!("{kind:?}"), cases(), 40, |seed, power_loss| {
        case(kind, seed, power_loss)
    });
}

#[test]
fn region_reads_newest_or_corrupt() {
    run(Kind::Region);
}

#[test]
fn page_ftl_reads_newest_or_corrupt() {
    run(Kind::Ftl(FtlKind::Page));
}

#[test]
fn dftl_reads_newest_or_corrupt() {
    run(Kind::Ftl(FtlKind::Dftl));
}

#[test]
fn block_ftl_reads_newest_or_corrupt() {
    run(Kind::Ftl(FtlKind::Block));
}

#[test]
fn bast_reads_newest_or_corrupt() {
    run(Kind::Ftl(FtlKind::Bast));
}

#[test]
fn fast_reads_newest_or_corrupt() {
    run(Kind::Ftl(FtlKind::Fast));
}

#[test]
fn nolgn_ftl_reads_newest_or_corrupt() {
    run(Kind::Ftl(FtlKind::Nolgn));
}

#[test]
fn ipl_store_reads_newest_or_corrupt() {
    run(Kind::Ipl);
}
