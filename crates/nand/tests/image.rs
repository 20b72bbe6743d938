//! Device images: round trip, and refusal of truncated or corrupt files.

use nand::{BlockId, Device, Geometry, ImageError, Latencies, MemoryStorage, Ppn, Span, Storage};
use proptest::prelude::*;

fn geometry() -> Geometry {
    Geometry {
        channels: 1,
        chips_per_channel: 2,
        blocks_per_chip: 4,
        pages_per_block: 8,
        page_bytes: 512,
        oob_bytes: 64,
        cell: nand::CellType::Mlc,
        nop: 4,
        endurance: 100,
        latencies: Latencies::mlc_typical(),
    }
}

/// A device with a mix of programmed, appended, copied and erased pages.
fn populated(path: &std::path::Path) -> Device {
    let storage = MemoryStorage::create_image(path, geometry(), true).unwrap();
    let mut d = Device::new(Box::new(storage));
    let g = d.geometry().clone();
    for p in 0..6 {
        let page: Vec<u8> = (0..512).map(|i| (i * 7 + p) as u8).collect();
        d.program(Ppn(p), 0, &[Span::new(0, &page), Span::new(512, &[p as u8; 40])]).unwrap();
    }
    d.program(Ppn(0), 0, &[Span::new(511, &[0]), Span::new(560, &[0x0F])]).unwrap();
    d.copyback(Ppn(1), g.ppn(g.block_id(0, 1), 0), 0, &[Span::new(512, &[0x11])]).unwrap();
    d.program(g.ppn(g.block_id(1, 0), 0), 0, &[Span::new(0, &[0; 512])]).unwrap();
    d.erase(g.block_id(1, 0), 0).unwrap();
    d.storage_mut().set_config_area(b"layout".to_vec());
    d.storage_mut().flush().unwrap();
    d
}

/// Data, OOB and program count of a page.
type PageState = (Option<Vec<u8>>, Option<Vec<u8>>, u8);

fn snapshot(s: &dyn Storage) -> Vec<PageState> {
    (0..s.geometry().total_pages())
        .map(|p| (s.data(Ppn(p)).map(<[u8]>::to_vec), s.oob(Ppn(p)).map(<[u8]>::to_vec), s.program_count(Ppn(p))))
        .collect()
}

#[test]
fn image_round_trip_keeps_every_byte_and_count() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dev.img");
    let d = populated(&path);
    let reopened = MemoryStorage::open_image(&path).unwrap();
    assert_eq!(snapshot(d.storage()), snapshot(&reopened));
    assert_eq!(reopened.config_area(), b"layout");
    let g = geometry();
    for b in 0..g.total_blocks() {
        assert_eq!(d.storage().erase_count(BlockId(b)), reopened.erase_count(BlockId(b)));
        assert_eq!(d.storage().write_pointer(BlockId(b)), reopened.write_pointer(BlockId(b)));
    }
}

#[test]
fn host_queue_depth_round_trips_and_version_1_images_have_none() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("qd.img");
    let mut g = geometry();
    g.latencies.host_queue_depth = 3;
    let mut storage = MemoryStorage::create_image(&path, g, true).unwrap();
    storage.flush().unwrap();
    assert_eq!(MemoryStorage::open_image(&path).unwrap().geometry().latencies.host_queue_depth, 3);

    // The same image as version 1 wrote it: no depth field after the latencies.
    let v2 = std::fs::read(&path).unwrap();
    let depth_at = 8 + 4 + 6 * 4 + 1 + 1 + 4 + 8 * 8;
    assert_eq!(v2[depth_at..depth_at + 4], 3u32.to_le_bytes());
    let mut v1 = [&v2[..depth_at], &v2[depth_at + 4..v2.len() - 4]].concat();
    v1[8..12].copy_from_slice(&1u32.to_le_bytes());
    let crc = crc32fast::hash(&v1);
    v1.extend_from_slice(&crc.to_le_bytes());
    let old = dir.path().join("v1.img");
    std::fs::write(&old, &v1).unwrap();
    let reopened = MemoryStorage::open_image(&old).unwrap();
    assert_eq!(reopened.geometry().latencies.host_queue_depth, 0);
    assert_eq!(reopened.geometry().blocks_per_chip, geometry().blocks_per_chip);

    let mut v3 = v2.clone();
    v3[8..12].copy_from_slice(&3u32.to_le_bytes());
    std::fs::write(&old, &v3).unwrap();
    let err = MemoryStorage::open_image(&old).err().unwrap().to_string();
    assert!(err.contains("version 3 is not supported") && err.contains("1 to 2"), "{err}");
}

#[test]
fn truncated_and_corrupt_images_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dev.img");
    populated(&path);
    let bytes = std::fs::read(&path).unwrap();

    let cut = dir.path().join("cut.img");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    let err = MemoryStorage::open_image(&cut).err().unwrap();
    assert!(matches!(err, ImageError::Truncated { .. }), "{err}");
    assert!(err.to_string().contains("cut.img") && err.to_string().contains("truncated"));

    // A flipped bit anywhere is caught: by a structural check or by the checksum.
    let flipped = dir.path().join("flip.img");
    for at in [bytes.len() / 3, bytes.len() / 2, bytes.len() - 100, bytes.len() - 1] {
        let mut bad = bytes.clone();
        bad[at] ^= 0x40;
        std::fs::write(&flipped, &bad).unwrap();
        let err = MemoryStorage::open_image(&flipped).err().unwrap_or_else(|| panic!("flip at {at} accepted"));
        assert!(matches!(err, ImageError::ChecksumMismatch { .. } | ImageError::Corrupt { .. }), "flip at {at}: {err}");
    }

    let magic = dir.path().join("magic.img");
    std::fs::write(&magic, b"not an image at all").unwrap();
    assert!(matches!(MemoryStorage::open_image(&magic), Err(ImageError::BadMagic { .. })));

    let missing = MemoryStorage::open_image(&dir.path().join("nope.img")).err().unwrap();
    assert!(matches!(missing, ImageError::Io { .. }));
}

proptest! {
    #![proptest_config(ProptestConfig::default())]

    /// Fuzz pass over the image decoder: damaged images give an error, never a panic.
    #[test]
    fn fuzz_image_decoder_never_panics(edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..8), truncate in any::<prop::sample::Index>(), do_truncate in any::<bool>()) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("dev.img");
        populated(&path);
        let mut bytes = std::fs::read(&path).unwrap();
        for (index, value) in edits {
            let i = index.index(bytes.len());
            bytes[i] = value;
        }
        if do_truncate {
            bytes.truncate(truncate.index(bytes.len()));
        }
        std::fs::write(&path, &bytes).unwrap();
        let _ = MemoryStorage::open_image(&path);
    }

    /// A torn program never sets a bit and never clears one it was not asked to.
    #[test]
    fn torn_programs_land_a_subset_of_the_intended_bits(old in prop::collection::vec(any::<u8>(), 64), new in prop::collection::vec(any::<u8>(), 64), seed in any::<u64>()) {
        let mut inner = MemoryStorage::new(geometry(), true);
        inner.program(Ppn(0), &[Span::new(0, &old)]).unwrap();
        let mut faulty = nand::FaultyStorage::new(inner, Some(1), seed);
        let intended: Vec<u8> = old.iter().zip(&new).map(|(o, n)| o & n).collect();
        prop_assert!(faulty.program(Ppn(0), &[Span::new(0, &new)]).is_err());
        prop_assert!(!faulty.powered());
        let got = faulty.data(Ppn(0)).unwrap()[..64].to_vec();
        for ((g, o), i) in got.iter().zip(&old).zip(&intended) {
            prop_assert_eq!(g & !o, 0, "a bit was raised");
            prop_assert_eq!(i & !g, 0, "a bit cleared that was not intended");
        }
        prop_assert!(faulty.program(Ppn(1), &[]).is_err(), "power stays off");
        faulty.power_on();
        prop_assert!(faulty.program(Ppn(1), &[]).is_ok());
    }
}
