//! `FtlVolume`: regions as static partitions of an FTL, over a map-backed FTL double.

mod support {
    pub mod mem_ftl;
}

use flash::{DeltaRefusal, Error, FtlVolume, IpaMode, PageDevice, RegionId, RegionSpec};
use nand::{CellType, Device, Geometry, Latencies, MemoryStorage};
use support::mem_ftl::MemFtl;

const PAGE: usize = 2048;

fn ftl(logical_pages: u32) -> Box<MemFtl> {
    let geometry = Geometry {
        channels: 2,
        chips_per_channel: 2,
        blocks_per_chip: 4,
        pages_per_block: 8,
        page_bytes: PAGE as u32,
        oob_bytes: 64,
        cell: CellType::Slc,
        nop: 4,
        endurance: 1000,
        latencies: Latencies::mlc_typical(),
    };
    Box::new(MemFtl::new(Device::new(Box::new(MemoryStorage::new(geometry, true))), logical_pages))
}

fn spec(name: &str, max_size_bytes: Option<u64>, max_chips: Option<u32>) -> RegionSpec {
    RegionSpec { max_size_bytes, max_chips, ..RegionSpec::new(name, IpaMode::None) }
}

fn page(fill: u8) -> Vec<u8> {
    vec![fill; PAGE]
}

fn read(v: &mut FtlVolume, region: RegionId, lpn: u32) -> Option<Vec<u8>> {
    v.read(region, lpn, 0).unwrap().map(|r| r.data.to_vec())
}

#[test]
fn partitions_are_sized_by_spec_and_isolated() {
    // 4 chips: MAX_CHIPS = 1 takes a quarter of 102 pages; MAX_SIZE takes its pages;
    // no limit takes the rest (after the 2 table pages).
    let specs =
        vec![spec("system", None, Some(1)), spec("log", Some(10 * PAGE as u64), None), spec("data", None, None)];
    let mut v = FtlVolume::format(ftl(102), specs, 0).unwrap();
    let pages: Vec<u32> = (0..v.region_count()).map(|r| v.logical_pages(RegionId(r))).collect();
    assert_eq!(pages, vec![25, 10, 102 - 2 - 25 - 10]);
    let (sys, log, data) = (RegionId(0), RegionId(1), RegionId(2));
    v.write_pages(sys, 0, &page(1), 0).unwrap();
    v.write_pages(log, 0, &[page(2), page(3)].concat(), 0).unwrap();
    v.write_pages(data, 0, &page(4), 0).unwrap();
    assert_eq!(read(&mut v, sys, 0), Some(page(1)));
    assert_eq!((read(&mut v, log, 0), read(&mut v, log, 1)), (Some(page(2)), Some(page(3))));
    assert_eq!(read(&mut v, data, 0), Some(page(4)));
    assert_eq!(read(&mut v, sys, 1), None);
    // The last page of a region is its own; one beyond is an error, not the neighbour's.
    v.write_pages(log, 9, &page(5), 0).unwrap();
    let err = v.write_pages(log, 10, &page(6), 0).unwrap_err();
    assert!(matches!(err, Error::LpnOutOfRange { lpn: 10, logical_pages: 10, .. }), "{err}");
    assert!(v.write_pages(log, 9, &[page(6), page(6)].concat(), 0).is_err(), "a group running past the end");
    assert_eq!(read(&mut v, data, 0), Some(page(4)));
    v.trim(data, 0, 0).unwrap();
    assert_eq!(read(&mut v, data, 0), None);
    let c = v.counters(log);
    assert_eq!((c.host_writes, c.host_reads, c.host_trims), (3, 2, 0));
    assert_eq!(v.counters(data).host_trims, 1);
    assert_eq!(PageDevice::ftl_counters(&v).unwrap().host_writes, 5 + 1, "five data pages and the partition table");
    // Nothing is left for another region.
    let err = v.add_region(spec("more", None, None), 0).unwrap_err();
    assert!(err.to_string().contains("no logical pages left"), "{err}");
    assert_eq!(v.region_count(), 3);
}

#[test]
fn reopen_finds_the_partitions_and_the_newer_table_copy() {
    let mut v = FtlVolume::format(ftl(64), vec![spec("system", Some(8 * PAGE as u64), None)], 0).unwrap();
    let r = v.add_region(spec("r", Some(4 * PAGE as u64), None), 0).unwrap();
    v.write_pages(r, 3, &page(9), 0).unwrap();
    let (mut v, _) = FtlVolume::open(v.into_ftl(), 0).unwrap();
    assert_eq!(v.region_id("r"), Some(r));
    assert_eq!((v.logical_pages(RegionId(0)), v.logical_pages(r)), (8, 4));
    assert_eq!(read(&mut v, r, 3), Some(page(9)));
    assert_eq!(v.region_spec(r).max_size_bytes, Some(4 * PAGE as u64));

    // Generation 2 (with `r`) is in copy 0: corrupt it, and the older copy is used.
    let mut ftl = v.into_ftl();
    let mut table = ftl.read(0, 0).unwrap().expect("copy 0").data.to_vec();
    table[30] ^= 0x5A;
    ftl.write(0, &table, 0).unwrap();
    let (v, _) = FtlVolume::open(ftl, 0).unwrap();
    assert_eq!((v.region_count(), v.region_id("r")), (1, None));
}

#[test]
fn an_unformatted_ftl_does_not_open() {
    let err = FtlVolume::open(ftl(16), 0).err().expect("no table");
    assert!(matches!(err, Error::CorruptLayout(_)), "{err}");
}

#[test]
fn appends_are_refused_with_the_reason() {
    let mut v = FtlVolume::format(ftl(16), vec![spec("r", None, None)], 0).unwrap();
    v.write_pages(RegionId(0), 0, &page(0xFF), 0).unwrap();
    let err = v.write_delta(RegionId(0), 0, 100, &[1, 2, 3], 0).unwrap_err();
    assert!(matches!(err, Error::DeltaRefused { lpn: 0, reason: DeltaRefusal::NoInPlaceAppend }), "{err}");
    assert!(err.to_string().contains("no in-place append"), "{err}");
    assert_eq!(read(&mut v, RegionId(0), 0), Some(page(0xFF)), "a refusal changes nothing");
}
