//! Unit tests of the IPL store: round trips, the merge count of a hand-computed case,
//! read overhead and refusals.

use super::*;
use crate::PageDevice;
use nand::{Latencies, MemoryStorage};

fn geometry() -> Geometry {
    Geometry {
        channels: 1,
        chips_per_channel: 1,
        blocks_per_chip: 8,
        pages_per_block: 8,
        page_bytes: 512,
        oob_bytes: 64,
        cell: CellType::Slc,
        nop: 4,
        endurance: 1_000_000,
        latencies: Latencies::slc_typical(),
    }
}

/// 8-page units: 6 data pages of one 512 B DB page each, 2 log pages of 4 × 128 B
/// sectors (8 sectors per unit).
fn config() -> IplConfig {
    IplConfig {
        blocks_per_unit: 1,
        db_page_bytes: 512,
        log_region_bytes: 1024,
        sector_bytes: 128,
        update_records: true,
    }
}

fn store() -> IplStore {
    let device = Device::new(Box::new(MemoryStorage::new(geometry(), true)));
    IplStore::format(device, config(), vec![RegionSpec::new("data", crate::IpaMode::None)]).unwrap()
}

#[test]
fn shape_of_the_small_case() {
    let s = store();
    let shape = *s.shape();
    assert_eq!((shape.log_pages, shape.sectors_per_log_page, shape.data_pages, shape.db_pages_per_unit), (2, 4, 6, 6));
    // 8 units, one spare: 7 logical units of 6 DB pages.
    assert_eq!(s.db_pages(RegionId(0)), 42);
}

#[test]
fn merges_match_the_hand_computed_count() {
    let mut s = store();
    let r = RegionId(0);
    for p in 0..6 {
        s.write_page(r, p, &[p as u8; 512], 0).unwrap();
    }
    // 20 one-sector flushes of page 0 into a log region of 8 sectors: the 9th and the
    // 18th find it full and merge instead (the merge applies their records), so 2
    // merges and 18 sectors written; each merge reads and programs the 6 live pages.
    for u in 0..20u8 {
        s.log(r, 0, 10 + u as usize, &[u], 0).unwrap();
        s.flush_log(r, 0, 0).unwrap();
    }
    let c = s.counters(r);
    assert_eq!((c.merges, c.log_sector_writes, c.merge_page_writes), (2, 18, 12), "{c:?}");
    // Merge reads: 6 data pages + 2 log pages each.
    assert_eq!(c.merge_page_reads, 16);
    // Erases: the two merged units (format erased every unit beforehand).
    assert_eq!(c.erases, 2);
    let mut buf = vec![0; 512];
    s.read_page(r, 0, &mut buf, 0).unwrap().unwrap();
    let mut expected = vec![0u8; 512];
    for u in 0..20u8 {
        expected[10 + u as usize] = u;
    }
    assert_eq!(buf, expected);
    // Two sectors after the last merge, both in one log page.
    let c = s.counters(r);
    assert_eq!((c.log_sector_reads, c.log_page_reads, c.page_reads), (2, 1, 1));
}

#[test]
fn reads_apply_only_the_records_of_their_part_and_reopen_keeps_them() {
    let device = Device::new(Box::new(MemoryStorage::new(geometry(), true)));
    let cfg = IplConfig { db_page_bytes: 1024, ..config() };
    let mut s = IplStore::format(device, cfg, vec![RegionSpec::new("data", crate::IpaMode::None)]).unwrap();
    let r = RegionId(0);
    s.write_page(r, 1, &[7; 1024], 0).unwrap();
    s.log(r, 1, 600, &[1, 2, 3], 0).unwrap();
    s.flush_log(r, 1, 0).unwrap();
    // A rewrite of a page on flash is logged as its diff, not programmed.
    let mut page = vec![7u8; 1024];
    page[600..603].copy_from_slice(&[1, 2, 3]);
    page[5] = 9;
    let writes = s.counters(r).page_writes;
    s.write_page(r, 1, &page, 0).unwrap();
    assert_eq!(s.counters(r).page_writes, writes);
    let before = s.counters(r).log_sector_reads;
    let read = PageDevice::read(&mut s, r, 3, 0).unwrap().unwrap();
    assert_eq!(&read.data[88..91], &[1, 2, 3]);
    assert_eq!(s.counters(r).log_sector_reads - before, 1, "only the sector touching part 1");
    let (mut s, _) = IplStore::open(s.into_device(), 0).unwrap();
    let mut buf = vec![0; 1024];
    s.read_page(r, 1, &mut buf, 0).unwrap().unwrap();
    assert_eq!(buf, page);
    assert!(s.read_page(r, 0, &mut buf, 0).unwrap().is_none());
}

#[test]
fn trimmed_pages_read_none_and_can_be_written_again() {
    let mut s = store();
    let r = RegionId(0);
    s.write_page(r, 2, &[1; 512], 0).unwrap();
    s.log(r, 2, 0, &[5], 0).unwrap();
    s.flush_log(r, 2, 0).unwrap();
    PageDevice::trim(&mut s, r, 2, 0).unwrap();
    let mut buf = vec![0; 512];
    assert!(s.read_page(r, 2, &mut buf, 0).unwrap().is_none());
    s.write_page(r, 2, &[3; 512], 0).unwrap();
    let (mut s, _) = IplStore::open(s.into_device(), 0).unwrap();
    s.read_page(r, 2, &mut buf, 0).unwrap().unwrap();
    assert_eq!(buf, vec![3; 512], "the record before the trim no longer applies");
}

#[test]
fn refusals_name_the_setting() {
    let mlc = Geometry { cell: CellType::Mlc, ..geometry() };
    let device = Device::new(Box::new(MemoryStorage::new(mlc, true)));
    let e = IplStore::format(device, config(), Vec::new()).err().unwrap();
    assert!(e.to_string().contains("partial programs"), "{e}");
    let nop1 = Geometry { nop: 1, ..geometry() };
    let device = Device::new(Box::new(MemoryStorage::new(nop1, true)));
    assert!(IplStore::format(device, config(), Vec::new()).is_err());
    let device = Device::new(Box::new(MemoryStorage::new(geometry(), true)));
    let e = IplStore::format(device, IplConfig { sector_bytes: 100, ..config() }, Vec::new()).err().unwrap();
    assert!(e.to_string().contains("sector bytes (100)"), "{e}");
    let mut s = store();
    let e = s.log(RegionId(0), 0, 0, &[1], 0).unwrap_err();
    assert!(matches!(e, Error::DeltaRefused { reason: DeltaRefusal::Unmapped, .. }), "{e}");
    assert!(matches!(s.write_page(RegionId(0), 42, &[0; 512], 0), Err(Error::LpnOutOfRange { .. })));
}

/// The write-ahead log region is a NoFTL region on the last chip: ring rewrites of its
/// pages are out-of-place page writes (no IPL merge, no log sector), it survives a
/// reopen, and the IPL regions lose that chip's units.
#[test]
fn the_wal_region_is_a_noftl_region_on_its_own_chip() {
    let mut g = geometry();
    g.chips_per_channel = 4;
    let device = Device::new(Box::new(MemoryStorage::new(g, true)));
    let chips = |name: &str, n| RegionSpec { max_chips: Some(n), ..RegionSpec::new(name, crate::IpaMode::None) };
    // A small chip: GC wants 3 free blocks of its 8.
    let wal = RegionSpec { over_provisioning: 0.5, ..chips(WAL_REGION, 1) };
    let mut s = IplStore::format(device, config(), vec![chips("system", 1), wal]).unwrap();
    let data = PageDevice::add_region(&mut s, RegionSpec::new("data", crate::IpaMode::None), 0).unwrap();
    let log = s.region_id(WAL_REGION).unwrap();
    assert_eq!(PageDevice::chips(&s, log), &[3]);
    assert_eq!(PageDevice::chips(&s, data), &[0, 1, 2]);
    // 32 units, one spare, the 8 of chip 3 gone: 23 logical units, 7 of them `system`'s.
    assert_eq!((s.lunits.len(), s.db_pages(data)), (23, 16 * 6));
    let pages = PageDevice::logical_pages(&s, log);
    assert!(pages > 8, "{pages}");
    for round in 0..6u8 {
        for lpn in 0..8 {
            PageDevice::write_pages(&mut s, log, lpn, &[round ^ lpn as u8; 512], 0).unwrap();
        }
    }
    PageDevice::write_pages(&mut s, data, 0, &[7; 512], 0).unwrap();
    let ipl = s.counters(log);
    assert_eq!((ipl.merges, ipl.log_sector_writes), (0, 0), "{ipl:?}");
    assert_eq!(PageDevice::counters(&s, log).host_writes, 48);
    assert!(PageDevice::write_log(&mut s, log, 0, &[(0, &[1u8][..])], 0).is_err());
    let (mut s, _) = IplStore::open(s.into_device(), 0).unwrap();
    for lpn in 0..8u32 {
        let read = PageDevice::read(&mut s, log, lpn, 0).unwrap().unwrap();
        assert_eq!(read.data, &[5 ^ lpn as u8; 512][..], "log page {lpn}");
    }
    assert_eq!(PageDevice::read(&mut s, data, 0, 0).unwrap().unwrap().data, &[7; 512][..]);
    assert_eq!(PageDevice::chips(&s, data), &[0, 1, 2]);
}
