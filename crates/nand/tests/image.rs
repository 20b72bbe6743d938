//! Device images: write-through survives a crash (dropped without flush, and a real
//! `kill -9` of a child process), a power cut keeps what was synced (a lossy file
//! layer), locking, read-only opens, torn configuration and
//! erase writes, old (version 2) images, and refusal of truncated or corrupt files.

use nand::{
    BlockId, CellType, Device, Error, FaultyStorage, Geometry, ImageError, ImageOptions, Latencies, LossyFile,
    MemoryStorage, Ppn, Span, Storage, SyncMode, SyncPoint,
};
use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;

fn geometry() -> Geometry {
    Geometry {
        channels: 1,
        chips_per_channel: 2,
        blocks_per_chip: 4,
        pages_per_block: 8,
        page_bytes: 512,
        oob_bytes: 64,
        cell: CellType::Mlc,
        nop: 4,
        endurance: 100,
        latencies: Latencies::mlc_typical(),
    }
}

/// A device on a new image with a mix of programmed, appended, copied and erased
/// pages and a configuration area. Never flushed.
fn populated(path: &Path) -> Device {
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
    // A block programmed after an erase: its stale bytes on disk must not show.
    d.program(g.ppn(g.block_id(1, 0), 0), 0, &[Span::new(0, &[0xF0; 16])]).unwrap();
    d.storage_mut().set_config_area(b"old layout".to_vec()).unwrap();
    d.storage_mut().set_config_area(b"layout".to_vec()).unwrap();
    d
}

/// Data (`None` when all 0xFF), OOB and program count of a page.
type Page = (Option<Vec<u8>>, Option<Vec<u8>>, u8);

/// Data, OOB and program count of every page; erase count and write pointer of every
/// block; the configuration area.
#[derive(Debug, PartialEq)]
struct State {
    pages: Vec<Page>,
    blocks: Vec<(u32, u32)>,
    config: Vec<u8>,
}

fn state(s: &dyn Storage) -> State {
    let g = s.geometry();
    State {
        pages: (0..g.total_pages())
            .map(|p| {
                let data = s.data(Ppn(p)).filter(|d| d.iter().any(|&b| b != 0xFF));
                (data.map(<[u8]>::to_vec), s.oob(Ppn(p)).map(<[u8]>::to_vec), s.program_count(Ppn(p)))
            })
            .collect(),
        blocks: (0..g.total_blocks()).map(|b| (s.erase_count(BlockId(b)), s.write_pointer(BlockId(b)))).collect(),
        config: s.config_area().to_vec(),
    }
}

fn read_only() -> ImageOptions {
    ImageOptions { read_only: true, sync: SyncMode::Full }
}

#[test]
fn write_through_survives_a_drop_without_flush() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dev.img");
    let d = populated(&path);
    let before = state(d.storage());
    drop(d); // a crash: no flush, no sync
    let reopened = MemoryStorage::open_image(&path).unwrap();
    assert_eq!(state(&reopened), before);
    assert_eq!(reopened.config_area(), b"layout");
    let g = geometry();
    assert_eq!(reopened.data(g.ppn(g.block_id(1, 0), 0)).unwrap()[..17], [[0xF0; 16].as_slice(), &[0xFF]].concat());
    // Only the image itself is in the directory: no temporary file.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn an_image_is_sparse_and_never_created_over_an_existing_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dev.img");
    let mut g = geometry();
    (g.blocks_per_chip, g.pages_per_block) = (512, 64); // 36 MiB of raw pages
    let mut s = MemoryStorage::create_image(&path, g.clone(), true).unwrap();
    use std::os::unix::fs::MetadataExt;
    let allocated = || std::fs::metadata(&path).unwrap().blocks() * 512;
    assert!(std::fs::metadata(&path).unwrap().len() > 32 << 20);
    assert!(allocated() < 1 << 20, "{} bytes allocated", allocated());
    // Programs fill holes; an erase punches them again.
    let empty = allocated();
    for p in 0..128 {
        s.program(Ppn(p), &[Span::new(0, &[0x42; 576])]).unwrap();
    }
    let programmed = allocated();
    assert!(programmed >= empty + 64 * 1024, "{empty} then {programmed}");
    for b in 0..2 {
        s.erase(BlockId(b)).unwrap();
    }
    assert!(allocated() <= programmed - 56 * 1024, "{empty}, {programmed}, {} after the erases", allocated());
    drop(s);

    let user = dir.path().join("mine.txt");
    std::fs::write(&user, b"precious").unwrap();
    let err = MemoryStorage::create_image(&user, g, true).err().unwrap();
    assert!(matches!(err, ImageError::Exists { .. }), "{err}");
    assert_eq!(std::fs::read(&user).unwrap(), b"precious");
}

/// A lock held only for a moment (as a child process being started holds copies of its
/// parent's descriptors until it executes) does not refuse the image.
#[test]
fn a_lock_held_for_a_moment_is_waited_for() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dev.img");
    drop(MemoryStorage::create_image(&path, geometry(), true).unwrap());
    let reader = MemoryStorage::open_image_with(&path, read_only()).unwrap();
    let holder = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(20));
        drop(reader);
    });
    MemoryStorage::open_image(&path).expect("the writer gets the lock once the moment is over");
    holder.join().unwrap();
}

#[test]
fn a_second_writer_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dev.img");
    let first = MemoryStorage::create_image(&path, geometry(), true).unwrap();
    let err = MemoryStorage::open_image(&path).err().unwrap();
    assert!(matches!(err, ImageError::Locked { .. }), "{err}");
    assert_eq!(err.to_string(), format!("image {} is locked by another process", path.display()));
    // A reader is refused while a writer holds it, too.
    assert!(matches!(MemoryStorage::open_image_with(&path, read_only()), Err(ImageError::Locked { .. })));
    drop(first);
    // Readers share; a writer waits for none of them but is refused while they read.
    let r1 = MemoryStorage::open_image_with(&path, read_only()).unwrap();
    let r2 = MemoryStorage::open_image_with(&path, read_only()).unwrap();
    assert!(matches!(MemoryStorage::open_image(&path), Err(ImageError::Locked { .. })));
    drop((r1, r2));
    MemoryStorage::open_image(&path).unwrap();
}

#[test]
fn read_only_refuses_writes_and_leaves_the_file_byte_identical() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dev.img");
    drop(populated(&path));
    let before = std::fs::read(&path).unwrap();
    let mtime = std::fs::metadata(&path).unwrap().modified().unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o444)).unwrap();

    let storage = MemoryStorage::open_image_with(&path, read_only()).unwrap();
    let mut d = Device::new(Box::new(storage));
    assert_eq!(d.storage().config_area(), b"layout");
    assert_eq!(d.read(Ppn(2), 0).unwrap().data[0], 2);
    let err = d.program(Ppn(6), 0, &[Span::new(0, &[0])]).unwrap_err();
    assert!(matches!(err, Error::ReadOnly { .. }), "{err}");
    assert!(err.to_string().contains("read-only") && err.to_string().contains("dev.img"), "{err}");
    assert_eq!(d.counters().page_programs, 0, "a refused program is not counted");
    assert!(matches!(d.erase(BlockId(0), 0), Err(Error::ReadOnly { .. })));
    assert!(matches!(d.copyback(Ppn(0), Ppn(6), 0, &[]), Err(Error::ReadOnly { .. })));
    assert!(matches!(d.storage_mut().set_config_area(vec![1]), Err(Error::ReadOnly { .. })));
    assert!(matches!(d.storage_mut().tear_erase(BlockId(0), 1), Err(Error::ReadOnly { .. })));
    d.storage_mut().flush().unwrap();
    drop(d);
    assert_eq!(std::fs::read(&path).unwrap(), before);
    assert_eq!(std::fs::metadata(&path).unwrap().modified().unwrap(), mtime);
}

#[test]
fn a_torn_configuration_write_keeps_the_previous_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dev.img");
    drop(populated(&path)); // "old layout" in slot 0 (generation 1), "layout" in slot 1 (2)
    let slot1 = 4096 + (1 << 20);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[slot1 + 16 + 2] ^= 0x01; // the newest configuration, torn
    std::fs::write(&path, &bytes).unwrap();
    let mut s = MemoryStorage::open_image(&path).unwrap();
    assert_eq!(s.config_area(), b"old layout");
    // The next write goes over the torn slot and wins.
    s.set_config_area(b"third".to_vec()).unwrap();
    drop(s);
    assert_eq!(MemoryStorage::open_image(&path).unwrap().config_area(), b"third");
}

#[test]
fn torn_programs_and_erases_read_back_as_torn() {
    let dir = tempfile::tempdir().unwrap();
    for (cut_at, seed) in [(3, 1), (5, 2), (5, 3), (6, 4)] {
        let path = dir.path().join(format!("torn{cut_at}-{seed}.img"));
        let inner = MemoryStorage::create_image(&path, geometry(), true).unwrap();
        let mut s = FaultyStorage::new(inner, Some(cut_at), seed);
        let page = vec![0x5A; 512];
        let mut results = Vec::new();
        for p in 0..3 {
            results.push(s.program(Ppn(p), &[Span::new(0, &page), Span::new(512, &[0; 8])]));
        }
        results.push(s.program(Ppn(0), &[Span::new(0, &[0; 32])]));
        results.push(s.erase(BlockId(0)));
        results.push(s.program(Ppn(0), &[Span::new(0, &[0x0F; 512])]));
        assert_eq!(results.iter().filter(|r| r.is_err()).count(), 6 - cut_at as usize + 1);
        let before = state(&s);
        drop(s);
        assert_eq!(state(&MemoryStorage::open_image(&path).unwrap()), before, "cut at {cut_at} seed {seed}");
    }
}

/// A version 1 or 2 image as the earlier builds wrote it: block 0 has pages 0 and 1
/// programmed (page 1 without data), block 1 was erased once, config "layout".
fn legacy_image(version: u32, g: &Geometry) -> Vec<u8> {
    let mut v = b"DFIMAGE\0".to_vec();
    v.extend_from_slice(&version.to_le_bytes());
    for d in [g.channels, g.chips_per_channel, g.blocks_per_chip, g.pages_per_block, g.page_bytes, g.oob_bytes] {
        v.extend_from_slice(&d.to_le_bytes());
    }
    v.extend_from_slice(&[g.cell.bits_per_cell() as u8, g.nop]);
    v.extend_from_slice(&g.endurance.to_le_bytes());
    let l = &g.latencies;
    for x in l.read_ns.iter().chain(&l.program_ns).chain([&l.erase_ns, &l.transfer_ps_per_byte]) {
        v.extend_from_slice(&x.to_le_bytes());
    }
    if version >= 2 {
        v.extend_from_slice(&l.host_queue_depth.to_le_bytes());
    }
    v.push(1);
    v.extend_from_slice(&6u32.to_le_bytes());
    v.extend_from_slice(b"layout");
    let ppb = g.pages_per_block as usize;
    for b in 0..g.total_blocks() {
        let (erases, wp, counts) = match b {
            0 => (0u32, 2u16, [1u8, 1]),
            1 => (1, 0, [0, 0]),
            _ => (0, 0, [0, 0]),
        };
        v.extend_from_slice(&erases.to_le_bytes());
        v.extend_from_slice(&wp.to_le_bytes());
        v.extend_from_slice(&counts);
        v.resize(v.len() + ppb - 2, 0u8);
        v.push((b == 0) as u8);
        if b == 0 {
            v.push(3); // page 0: data and OOB
            v.resize(v.len() + g.page_bytes as usize, 0xA5u8);
            v.resize(v.len() + g.oob_bytes as usize, 0x3Cu8);
            v.push(2); // page 1: OOB only
            v.resize(v.len() + g.oob_bytes as usize, 0x11u8);
            v.resize(v.len() + ppb - 2, 0u8);
        }
    }
    let crc = crc32fast::hash(&v);
    v.extend_from_slice(&crc.to_le_bytes());
    v
}

fn check_legacy_state(s: &MemoryStorage, g: &Geometry) {
    assert_eq!(s.geometry(), g);
    assert_eq!(s.config_area(), b"layout");
    assert_eq!(s.data(Ppn(0)).unwrap(), &vec![0xA5; 512][..]);
    assert_eq!(s.oob(Ppn(0)).unwrap(), &[0x3C; 64][..]);
    assert_eq!((s.data(Ppn(1)), s.oob(Ppn(1)).unwrap()), (None, &[0x11; 64][..]));
    assert_eq!((s.program_count(Ppn(1)), s.program_count(Ppn(5))), (1, 0));
    assert_eq!((s.write_pointer(BlockId(0)), s.erase_count(BlockId(1))), (2, 1));
}

#[test]
fn version_1_and_2_images_open_read_only_as_they_are_and_convert_once_read_write() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.img");
    let mut g = geometry();
    g.latencies.host_queue_depth = 3;
    let v2 = legacy_image(2, &g);
    std::fs::write(&path, &v2).unwrap();
    check_legacy_state(&MemoryStorage::open_image_with(&path, read_only()).unwrap(), &g);
    assert_eq!(std::fs::read(&path).unwrap(), v2, "a read-only open converts nothing");

    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
    let mut s = MemoryStorage::open_image(&path).unwrap();
    check_legacy_state(&s, &g);
    assert_eq!(std::fs::read(&path).unwrap()[8..12], 3u32.to_le_bytes(), "converted to version 3");
    assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o640);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1, "no temporary file left");
    s.program(Ppn(0), &[Span::new(0, &[0x21])]).unwrap();
    drop(s);
    let s = MemoryStorage::open_image(&path).unwrap();
    assert_eq!(s.data(Ppn(0)).unwrap()[..2], [0x21, 0xA5]);
    assert_eq!((s.program_count(Ppn(0)), s.erase_count(BlockId(1)), s.config_area()), (2, 1, &b"layout"[..]));
    drop(s);

    // Version 1: no host queue depth.
    g.latencies.host_queue_depth = 0;
    std::fs::write(&path, legacy_image(1, &g)).unwrap();
    check_legacy_state(&MemoryStorage::open_image_with(&path, read_only()).unwrap(), &g);
}

#[test]
fn truncated_and_corrupt_images_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dev.img");
    drop(populated(&path));
    let bytes = std::fs::read(&path).unwrap();
    let bad = dir.path().join("bad.img");
    let open_bad = |content: &[u8]| {
        std::fs::write(&bad, content).unwrap();
        MemoryStorage::open_image_with(&bad, read_only()).err().expect("damaged image accepted")
    };

    let err = open_bad(&bytes[..bytes.len() - 1]);
    assert!(matches!(err, ImageError::Truncated { .. }), "{err}");
    assert!(err.to_string().contains("bad.img") && err.to_string().contains("truncated"), "{err}");
    assert!(matches!(open_bad(&bytes[..100]), ImageError::Truncated { .. }));
    assert!(matches!(open_bad(&bytes[..5]), ImageError::Truncated { .. }));

    let mut header = bytes.clone();
    header[20] ^= 0x40;
    assert!(matches!(open_bad(&header), ImageError::ChecksumMismatch { .. } | ImageError::Corrupt { .. }));

    let blocks_at = 4096 + (2 << 20);
    let mut record = bytes.clone();
    record[blocks_at + 4] = 7;
    let err = open_bad(&record);
    assert!(matches!(err, ImageError::Corrupt { offset, .. } if offset == blocks_at as u64), "{err}");

    let counts_at = blocks_at + 8 * geometry().total_blocks() as usize;
    let mut count = bytes.clone();
    count[counts_at + 3] = 200;
    let err = open_bad(&count);
    assert!(err.to_string().contains("program count 200"), "{err}");

    let mut version = bytes.clone();
    version[8] = 9;
    assert!(matches!(open_bad(&version), ImageError::UnsupportedVersion { version: 9, .. }));
    assert!(matches!(open_bad(b"not an image at all"), ImageError::BadMagic { .. }));
    let missing = MemoryStorage::open_image(&dir.path().join("nope.img")).err().unwrap();
    assert!(matches!(missing, ImageError::Io { .. }));
}

/// One step of a deterministic workload: a first program, an append or an erase of a
/// random block, decided from the device's state (so a replay on the same state does
/// the same).
fn workload_step(d: &mut Device, rng: &mut ChaCha8Rng) -> Result<(), Error> {
    let g = d.geometry().clone();
    let block = BlockId(rng.gen_range(0..g.total_blocks()));
    let wp = d.storage().write_pointer(block);
    let choice = rng.gen_range(0..10);
    if choice == 0 || wp == g.pages_per_block {
        d.erase(block, 0)?;
    } else if choice < 4 && wp > 0 && d.storage().program_count(g.ppn(block, wp - 1)) < g.nop {
        let at = rng.gen_range(0..g.raw_page_bytes() - 8);
        d.program(g.ppn(block, wp - 1), 0, &[Span::new(at, &[0; 8])])?;
    } else {
        let mut page = vec![0u8; g.raw_page_bytes()];
        rng.fill(&mut page[..]);
        d.program(g.ppn(block, wp), 0, &[Span::new(0, &page)])?;
    }
    Ok(())
}

/// Program count and the first bytes of data and OOB of some pages' states.
fn describe(pages: &[&Page]) -> String {
    let head = |b: &Option<Vec<u8>>| b.as_ref().map(|b| b[..4].to_vec());
    pages.iter().map(|(d, o, c)| format!("(count {c}, data {:?}, oob {:?}) ", head(d), head(o))).collect()
}

fn kill_geometry() -> Geometry {
    Geometry { cell: CellType::Slc, nop: 4, endurance: 1_000_000, ..geometry() }
}

const KILL_ENV: &str = "NAND_KILL_TEST_IMAGE";
const KILL_SEED: u64 = 7;

/// The child of `kill_9_loses_no_operation_that_completed`: runs the workload on the
/// image named in the environment and reports each completed operation on stdout.
#[test]
#[ignore = "helper: run as a child process by kill_9_loses_no_operation_that_completed"]
fn kill_child_runs_the_workload() {
    let path = std::env::var(KILL_ENV).expect("image path in the environment");
    let options = ImageOptions { read_only: false, sync: SyncMode::Off };
    let mut d = Device::new(Box::new(MemoryStorage::open_image_with(Path::new(&path), options).unwrap()));
    let mut rng = ChaCha8Rng::seed_from_u64(KILL_SEED);
    let mut out = std::io::stdout().lock();
    for op in 1..=1_000_000u64 {
        workload_step(&mut d, &mut rng).unwrap();
        writeln!(out, "done {op}").unwrap();
        out.flush().unwrap();
    }
}

#[test]
fn kill_9_loses_no_operation_that_completed() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let exe = std::env::current_exe().unwrap();
    for round in 0..8 {
        let path = dir.path().join(format!("kill{round}.img"));
        let mut s = MemoryStorage::create_image(&path, kill_geometry(), true).unwrap();
        s.set_config_area(b"layout".to_vec()).unwrap();
        drop(s);
        let kill_after: u64 = rng.gen_range(1..3000);
        let mut child = std::process::Command::new(&exe)
            .args(["--ignored", "--exact", "kill_child_runs_the_workload", "--nocapture", "--test-threads=1"])
            .env(KILL_ENV, &path)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let done = |line: &str| line.strip_prefix("done ").and_then(|n| n.parse::<u64>().ok());
        let mut reported = 0;
        for line in lines.by_ref() {
            if let Some(n) = done(&line.unwrap()) {
                reported = n;
                if n >= kill_after {
                    break;
                }
            }
        }
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        // Whatever the child reported before it died completed, too.
        reported = lines.map_while(Result::ok).filter_map(|l| done(&l)).fold(reported, u64::max);
        assert!(reported >= kill_after.min(1), "round {round}: the child reported nothing");

        // Replay in memory: the state after the reported operations, and after one more
        // (which was in flight, or done but not yet reported).
        let mut replay = Device::new(Box::new(MemoryStorage::new(kill_geometry(), true)));
        replay.storage_mut().set_config_area(b"layout".to_vec()).unwrap();
        let mut replay_rng = ChaCha8Rng::seed_from_u64(KILL_SEED);
        for _ in 0..reported {
            workload_step(&mut replay, &mut replay_rng).unwrap();
        }
        let done_state = state(replay.storage());
        workload_step(&mut replay, &mut replay_rng).unwrap();
        let next_state = state(replay.storage());

        let reopened = state(&MemoryStorage::open_image(&path).unwrap());
        assert_eq!(reopened.config, b"layout");
        for (p, page) in reopened.pages.iter().enumerate() {
            // An append in flight may have its new count without its bytes yet (a
            // torn program that landed no bits).
            let (done_page, next_page) = (&done_state.pages[p], &next_state.pages[p]);
            let counted_not_landed = (done_page.0.clone(), done_page.1.clone(), next_page.2);
            assert!(
                page == done_page || page == next_page || (done_page.2 > 0 && page == &counted_not_landed),
                "round {round}: page {p} after {reported} reported operations matches neither state: {}",
                describe(&[page, done_page, next_page])
            );
        }
        for (b, &(erases, _)) in reopened.blocks.iter().enumerate() {
            assert!(erases == done_state.blocks[b].0 || erases == next_state.blocks[b].0, "round {round}: block {b}");
        }
    }
}

/// The bytes of the `populated` image, made once.
fn populated_bytes() -> &'static [u8] {
    static BYTES: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    BYTES.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("dev.img");
        drop(populated(&path));
        std::fs::read(&path).unwrap()
    })
}

/// Offsets of a version 3 image of `geometry()` worth damaging: the header, both
/// configuration slot headers, the block records and the program counts.
fn metadata_offset(index: prop::sample::Index) -> usize {
    let g = geometry();
    let blocks_at = 4096 + (2 << 20);
    let ranges = [
        (0, 128),
        (4096, 4096 + 32),
        (4096 + (1 << 20), 4096 + (1 << 20) + 32),
        (blocks_at, blocks_at + 8 * g.total_blocks() as usize + g.total_pages() as usize),
    ];
    let total: usize = ranges.iter().map(|(a, b)| b - a).sum();
    let mut i = index.index(total);
    for (a, b) in ranges {
        if i < b - a {
            return a + i;
        }
        i -= b - a;
    }
    unreachable!("index below the total")
}

proptest! {
    #![proptest_config(ProptestConfig::default())]

    /// Fuzz pass over the version 3 reader: damaged metadata and truncations give an
    /// error or a device, never a panic.
    #[test]
    fn fuzz_v3_image_reader_never_panics(
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..8),
        truncate in any::<prop::sample::Index>(),
        do_truncate in any::<bool>(),
    ) {
        let mut bytes = populated_bytes().to_vec();
        for (index, value) in edits {
            bytes[metadata_offset(index)] = value;
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("dev.img");
        if do_truncate {
            bytes.truncate(truncate.index(bytes.len()));
        }
        std::fs::write(&path, &bytes).unwrap();
        let _ = MemoryStorage::open_image_with(&path, read_only());
    }

    /// Fuzz pass over the version 1/2 reader: damaged images give an error, never a panic.
    #[test]
    fn fuzz_legacy_image_reader_never_panics(
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..8),
        truncate in any::<prop::sample::Index>(),
        do_truncate in any::<bool>(),
    ) {
        let mut bytes = legacy_image(2, &geometry());
        for (index, value) in edits {
            let i = index.index(bytes.len());
            bytes[i] = value;
        }
        if do_truncate {
            bytes.truncate(truncate.index(bytes.len()));
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.img");
        std::fs::write(&path, &bytes).unwrap();
        let _ = MemoryStorage::open_image_with(&path, read_only());
    }

    /// A torn program never sets a bit and never clears one it was not asked to.
    #[test]
    fn torn_programs_land_a_subset_of_the_intended_bits(old in prop::collection::vec(any::<u8>(), 64), new in prop::collection::vec(any::<u8>(), 64), seed in any::<u64>()) {
        let mut inner = MemoryStorage::new(geometry(), true);
        inner.program(Ppn(0), &[Span::new(0, &old)]).unwrap();
        let mut faulty = FaultyStorage::new(inner, Some(1), seed);
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

/// One power cut under an image on a [`LossyFile`]: the workload of the kill test with a
/// sync point every few operations, the cut at a random file operation, then a reopen.
/// Every page and block the workload did not change since the last sync point that
/// `mode` makes durable must read back as it was there, and the configuration too.
/// (`SyncMode::Off` promises nothing: the reopen must only not panic.)
fn power_cut_run(mode: SyncMode, seed: u64, lying_disk: bool) -> Result<(), String> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cut.img");
    let (layer, switch) = LossyFile::layer(seed);
    let storage = MemoryStorage::create_image_on(&path, kill_geometry(), true, mode, layer).unwrap();
    if lying_disk {
        switch.ignore_syncs();
    }
    let mut d = Device::new(Box::new(storage));
    d.storage_mut().set_config_area(b"layout".to_vec()).unwrap();
    let durable_point = if mode == SyncMode::Full { SyncPoint::Commit } else { SyncPoint::Checkpoint };
    let mut durable = state(d.storage());
    // Pages and blocks changed since the durable point (also those changed back).
    let (mut pages_changed, mut blocks_changed) = (vec![false; durable.pages.len()], vec![false; durable.blocks.len()]);
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    switch.arm(rng.gen_range(1..600));
    while !switch.is_cut() {
        if rng.gen_range(0..4) == 0 {
            let point = if rng.gen_bool(0.5) { SyncPoint::Commit } else { SyncPoint::Checkpoint };
            if d.storage_mut().sync(point).is_ok() && (point == durable_point || mode == SyncMode::Full) {
                durable = state(d.storage());
                pages_changed.fill(false);
                blocks_changed.fill(false);
            }
            continue;
        }
        let before = state(d.storage());
        let step = workload_step(&mut d, &mut rng);
        let after = state(d.storage());
        pages_changed.iter_mut().zip(before.pages.iter().zip(&after.pages)).for_each(|(c, (b, a))| *c |= b != a);
        blocks_changed.iter_mut().zip(before.blocks.iter().zip(&after.blocks)).for_each(|(c, (b, a))| *c |= b != a);
        if step.is_err() {
            break;
        }
    }
    drop(d);
    let reopened = match MemoryStorage::open_image(&path) {
        Ok(s) => state(&s),
        Err(_) if mode == SyncMode::Off => return Ok(()),
        Err(e) => return Err(format!("seed {seed}: the image does not open after the cut: {e}")),
    };
    if mode == SyncMode::Off {
        return Ok(());
    }
    if reopened.config != b"layout" {
        return Err(format!("seed {seed}: configuration {:?}", reopened.config));
    }
    for (p, page) in reopened.pages.iter().enumerate() {
        if !pages_changed[p] && *page != durable.pages[p] {
            return Err(format!(
                "seed {seed}: page {p}, unchanged since the last sync point, reads {}",
                describe(&[page, &durable.pages[p]])
            ));
        }
    }
    for (b, erases) in reopened.blocks.iter().enumerate() {
        if !blocks_changed[b] && erases.0 != durable.blocks[b].0 {
            return Err(format!(
                "seed {seed}: block {b} has {} erases, {} at the last sync point",
                erases.0, durable.blocks[b].0
            ));
        }
    }
    Ok(())
}

#[test]
fn a_power_cut_keeps_everything_before_the_last_sync_point() {
    for mode in [SyncMode::Full, SyncMode::Normal, SyncMode::Off] {
        for seed in 0..40 {
            if let Err(e) = power_cut_run(mode, seed, false) {
                panic!("{mode:?}: {e}");
            }
        }
    }
}

/// The power-cut test can fail: on a disk that acknowledges `fdatasync` without making
/// anything durable, it finds pages lost from before the last sync point.
#[test]
fn a_power_cut_test_catches_a_disk_that_ignores_syncs() {
    let caught = (0..40).filter(|&seed| power_cut_run(SyncMode::Full, seed, true).is_err()).count();
    assert!(caught >= 20, "only {caught} of 40 cuts caught the lost syncs");
}
