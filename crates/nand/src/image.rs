//! Device image files: the file is the device, written through.
//!
//! Format version 3 has a fixed layout, so every operation reaches the file at its own
//! offset with a few `pwrite`s, in device order, and nothing is ever rewritten whole
//! (byte diagram in `docs/format.md`; all integers little-endian):
//!
//! ```text
//! 0                      header: magic "DFIMAGE\0" | u32 version=3 | geometry
//!                        | u8 keep_data | u32 crc32 of the header bytes before it
//! 4096                   config slot 0 ┐ u64 generation | u32 length | u32 crc32
//! 4096 + 1 MiB           config slot 1 ┘ (of generation, length, bytes) | bytes
//! blocks_at = 4096 + 2 MiB   per block: u32 erase count | u8 needs_erase | 3 × 0
//! counts_at              per page: u8 program count (0 = erased)
//! data_at (4 KiB aligned)    per page: data then OOB, at data_at + ppn × raw page bytes
//! durable_at = data_at + pages × raw page bytes    the durable point (optional):
//!                        per block: u32 erase count + 1 (0 = unknown); per page: u8
//!                        program count at the record; u64 configuration generation
//!                        at the record (see [`crate::durable`])
//! ```
//!
//! The file is sparse: a page never programmed is a hole. On-disk order of each
//! operation (so that a process killed between two `pwrite`s leaves a state the NAND
//! model can have been in):
//! - first program of an erased page: the whole raw page (new bytes, 0xFF elsewhere,
//!   so stale bytes from before an erase never count), then its program count;
//! - re-program (append): the program count, then the AND-ed bytes of each span — a
//!   cut between them is a torn program that landed no bits yet;
//! - erase: the block record with `needs_erase = 1` and the new erase count, the
//!   block's program counts zeroed, its pages punched out of the file (holes again),
//!   the record with `needs_erase = 0`; a torn erase stops after the zeroed (and
//!   punched) prefix, so it reads back as [`crate::Storage::tear_erase`] left it;
//! - configuration: written whole into the slot holding the older generation; the
//!   newer valid slot wins on open, so a torn configuration write keeps the old one.
//! - durable point: the entries of the blocks that changed, each the page counts then
//!   the erase entry, written only after an `fdatasync` made everything before them
//!   durable (so no entry claims a page the disk may lack), and synced at checkpoints.
//!   Images without the area (written before it existed) open with no record.
//!
//! Durability ([`SyncMode`], SQLite's meaning): every write is a completed `pwrite`
//! before the operation returns, so `kill -9` loses nothing; `fdatasync` runs at
//! [`SyncPoint`](crate::SyncPoint)s as the mode says, and after every configuration write unless `Off`;
//! under `Full` also before a block's second program since the last one and before an
//! erase, so a power loss (which may keep any subset of the unsynced writes) leaves at
//! most each block's last operation lost or torn, as a NAND power cut would. The file
//! operations go through [`crate::image_io::ImageIo`], where tests put a failing or a
//! lossy disk ([`crate::image_faults`]).
//!
//! One writer: an open image holds an OS advisory lock (`flock`): exclusive for
//! read-write, shared for read-only, taken without waiting. A read-only open refuses
//! every mutation with [`Error::ReadOnly`](crate::Error::ReadOnly) and never writes the file.
//!
//! Versions 1 and 2 (whole-file images, see `legacy.rs`) still open: read-only
//! they are just read; read-write they are converted once to version 3 in a temporary
//! file in the image's own directory (`tempfile`), then renamed over the image. That is
//! the only temporary file; no other file is ever created, replaced or deleted.
//!
//! Reading checks every length and offset: a truncated or corrupt image gives an
//! [`ImageError`] naming the file and the byte offset, never a panic.

use crate::durable::DurablePoint;
use crate::geometry::{BlockId, Geometry, Ppn};
use crate::image_format::{
    block_record, config_slot, Layout, BLOCK_RECORD_BYTES, HEADER_BYTES, MAGIC, MAX_CONFIG_BYTES, SLOT_HEADER_BYTES,
    VERSION,
};
pub use crate::image_format::{ImageError, SyncMode};
use crate::image_io::FileLayer;
use crate::legacy::{encode_geometry, read_legacy, ImageReader};
use crate::storage::image_file::ImageFile;
use crate::storage::MemoryStorage;
use std::fs::{File, OpenOptions};
use std::io::{self, BufReader, Seek};
use std::os::unix::fs::FileExt;
use std::path::Path;

/// How to open an image.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ImageOptions {
    /// Shared lock, no writes: every mutation is refused with [`Error::ReadOnly`](crate::Error::ReadOnly).
    pub read_only: bool,
    pub sync: SyncMode,
}

/// The lock of an image whose contents were detached into memory
/// ([`MemoryStorage::detach_image`]): other writers stay out while it lives.
pub struct ImageLock {
    _file: ImageFile,
}

impl MemoryStorage {
    /// Detaches the image file: the storage keeps the device's state in memory and
    /// further changes stay there, never reaching the file, while the returned lock keeps
    /// the file locked. A read-only session runs recovery on such a scratch copy, so the
    /// file stays byte-identical. `None` for a storage without an image.
    pub fn detach_image(&mut self) -> Option<ImageLock> {
        self.image.take().map(|file| ImageLock { _file: file })
    }
}

impl MemoryStorage {
    /// Creates a fresh device in a new version 3 image at `path` (never over an existing
    /// file), locked for writing, with [`SyncMode::Full`].
    pub fn create_image(path: &Path, geometry: Geometry, keep_data: bool) -> Result<Self, ImageError> {
        Self::create_image_with(path, geometry, keep_data, SyncMode::Full)
    }

    /// [`MemoryStorage::create_image`] with a sync mode.
    pub fn create_image_with(
        path: &Path,
        geometry: Geometry,
        keep_data: bool,
        sync: SyncMode,
    ) -> Result<Self, ImageError> {
        Self::create_image_on(path, geometry, keep_data, sync, plain_file())
    }

    /// [`MemoryStorage::create_image_with`] whose writes after the creation go through
    /// `layer` (a fault-injecting or lossy file, [`crate::image_faults`]).
    pub fn create_image_on(
        path: &Path,
        geometry: Geometry,
        keep_data: bool,
        sync: SyncMode,
        layer: FileLayer,
    ) -> Result<Self, ImageError> {
        let io_err = |source| ImageError::Io { path: path.into(), source };
        let layout = layout_of(&geometry, path, 0)?;
        let file = match OpenOptions::new().read(true).write(true).create_new(true).open(path) {
            Ok(file) => file,
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => return Err(ImageError::Exists { path: path.into() }),
            Err(source) => return Err(io_err(source)),
        };
        lock(&file, path, false)?;
        let mut storage = MemoryStorage::new(geometry, keep_data);
        write_whole(&file, &storage, &layout).map_err(io_err)?;
        file.sync_all().map_err(io_err)?;
        sync_directory(path)?;
        storage.image = Some(ImageFile::new(layer(file), path.into(), false, sync, layout, 0, 1));
        Ok(storage)
    }

    /// Opens an existing image read-write with [`SyncMode::Full`].
    pub fn open_image(path: &Path) -> Result<Self, ImageError> {
        Self::open_image_with(path, ImageOptions::default())
    }

    /// Opens an existing image. A version 1 or 2 image opened read-write is converted
    /// to version 3 first (a temporary file in its directory, renamed over it).
    pub fn open_image_with(path: &Path, options: ImageOptions) -> Result<Self, ImageError> {
        Self::open_image_on(path, options, plain_file())
    }

    /// [`MemoryStorage::open_image_with`] whose writes after the open go through `layer`.
    pub fn open_image_on(path: &Path, options: ImageOptions, layer: FileLayer) -> Result<Self, ImageError> {
        let io_err = |source| ImageError::Io { path: path.into(), source };
        let file = OpenOptions::new().read(true).write(!options.read_only).open(path).map_err(io_err)?;
        lock(&file, path, options.read_only)?;
        let file_bytes = file.metadata().map_err(io_err)?.len();
        let mut start = [0u8; 12];
        let got = file.read_at(&mut start, 0).map_err(io_err)?;
        if got < 8 || &start[..8] != MAGIC {
            return Err(if got < 8 && MAGIC.starts_with(&start[..got]) {
                ImageError::Truncated { path: path.into(), offset: got as u64, what: "magic".into() }
            } else {
                ImageError::BadMagic { path: path.into() }
            });
        }
        if got < 12 {
            return Err(ImageError::Truncated { path: path.into(), offset: got as u64, what: "version".into() });
        }
        let version = u32::from_le_bytes([start[8], start[9], start[10], start[11]]);
        let (mut storage, file, config_generation, config_slot) = match version {
            VERSION => {
                let (storage, generation, slot) = read_v3(&file, path, file_bytes)?;
                (storage, file, generation, slot)
            }
            1 | 2 => {
                let mut reader = BufReader::with_capacity(1 << 20, &file);
                reader.seek(io::SeekFrom::Start(12)).map_err(io_err)?;
                let mut storage = read_legacy(reader, path, file_bytes, version)?;
                storage.durable = DurablePoint::unknown(&storage.geometry);
                if options.read_only {
                    (storage, file, 0, 1)
                } else {
                    let file = convert(&file, path, &storage)?;
                    let generation = u64::from(!storage.config_area.is_empty());
                    (storage, file, generation, 0)
                }
            }
            version => return Err(ImageError::UnsupportedVersion { path: path.into(), version }),
        };
        let layout = layout_of(&storage.geometry, path, 12)?;
        if !options.read_only && file.metadata().map_err(io_err)?.len() < layout.with_durable_bytes() {
            // An image from before the durable point: add its area (holes: no record).
            file.set_len(layout.with_durable_bytes()).map_err(io_err)?;
        }
        storage.image = Some(ImageFile::new(
            layer(file),
            path.into(),
            options.read_only,
            options.sync,
            layout,
            config_generation,
            config_slot,
        ));
        Ok(storage)
    }
}

/// The image's own file, written directly.
fn plain_file() -> FileLayer {
    Box::new(|file| Box::new(file))
}

fn layout_of(g: &Geometry, path: &Path, offset: u64) -> Result<Layout, ImageError> {
    Layout::of(g).ok_or_else(|| ImageError::Corrupt {
        path: path.into(),
        offset,
        what: format!("a device of {} blocks does not fit in a 64-bit file", g.total_blocks()),
    })
}

/// How long a lock held by someone else may take to go before the image is refused as
/// locked. A lock can be held for a moment by no other user at all: a child process
/// that any thread of this process is starting holds copies of its descriptors, locks
/// included, until it executes its program. A moment is far below this.
const LOCK_PATIENCE: std::time::Duration = std::time::Duration::from_millis(500);
/// How often the lock is tried again within [`LOCK_PATIENCE`].
const LOCK_RETRY: std::time::Duration = std::time::Duration::from_millis(5);

/// Takes the image's advisory lock, refusing it as locked if it stays held for
/// [`LOCK_PATIENCE`].
fn lock(file: &File, path: &Path, shared: bool) -> Result<(), ImageError> {
    use rustix::fs::{flock, FlockOperation};
    let op = if shared { FlockOperation::NonBlockingLockShared } else { FlockOperation::NonBlockingLockExclusive };
    let start = std::time::Instant::now();
    loop {
        match flock(file, op) {
            Ok(()) => return Ok(()),
            Err(rustix::io::Errno::WOULDBLOCK) if start.elapsed() < LOCK_PATIENCE => std::thread::sleep(LOCK_RETRY),
            Err(rustix::io::Errno::WOULDBLOCK) => return Err(ImageError::Locked { path: path.into() }),
            Err(e) => return Err(ImageError::Io { path: path.into(), source: e.into() }),
        }
    }
}

/// Makes a new or renamed directory entry durable.
fn sync_directory(path: &Path) -> Result<(), ImageError> {
    let dir = directory_of(path);
    File::open(dir).and_then(|d| d.sync_all()).map_err(|source| ImageError::Io { path: dir.into(), source })
}

fn directory_of(path: &Path) -> &Path {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    }
}

/// Converts a version 1 or 2 image to version 3: written to a temporary file in the
/// image's directory (locked, same permissions), synced, then renamed over the image.
/// A crash leaves either the old image or the new one (and at worst the temporary
/// file, which `tempfile` names uniquely: it never collides with a user's file).
fn convert(old: &File, path: &Path, storage: &MemoryStorage) -> Result<File, ImageError> {
    let dir = directory_of(path);
    let io_err = |source| ImageError::Io { path: path.into(), source };
    let layout = layout_of(&storage.geometry, path, 12)?;
    let tmp = tempfile::NamedTempFile::new_in(dir).map_err(|source| ImageError::Io { path: dir.into(), source })?;
    lock(tmp.as_file(), tmp.path(), false)?;
    tmp.as_file().set_permissions(old.metadata().map_err(io_err)?.permissions()).map_err(io_err)?;
    write_whole(tmp.as_file(), storage, &layout).map_err(io_err)?;
    tmp.as_file().sync_all().map_err(io_err)?;
    let file = tmp.persist(path).map_err(|e| io_err(e.error))?;
    sync_directory(path)?;
    Ok(file)
}

/// Writes `storage` as a whole version 3 image into an empty file: the header, the
/// configuration (slot 0, generation 1) if any, the non-zero metadata and the
/// programmed pages; everything else stays a hole.
fn write_whole(file: &File, s: &MemoryStorage, layout: &Layout) -> io::Result<()> {
    let mut header = Vec::with_capacity(128);
    header.extend_from_slice(MAGIC);
    header.extend_from_slice(&VERSION.to_le_bytes());
    encode_geometry(&s.geometry, &mut header);
    header.push(s.keep_data as u8);
    let crc = crc32fast::hash(&header);
    header.extend_from_slice(&crc.to_le_bytes());
    file.set_len(layout.with_durable_bytes())?;
    file.write_all_at(&header, 0)?;
    let (erase, counts) = s.durable.entries();
    let erase: Vec<u8> = erase.iter().flat_map(|e| e.to_le_bytes()).collect();
    file.write_all_at(&erase, layout.durable_erase_at(0))?;
    if counts.iter().any(|&c| c != 0) {
        file.write_all_at(counts, layout.durable_counts_at(0))?;
    }
    if !s.config_area.is_empty() {
        file.write_all_at(&config_slot(1, &s.config_area), Layout::slot_at(0))?;
    }
    let ppb = s.geometry.pages_per_block as usize;
    let mut raw = Vec::with_capacity(s.geometry.raw_page_bytes());
    for b in 0..s.geometry.total_blocks() {
        let block = BlockId(b);
        let counts = &s.program_counts[b as usize * ppb..(b as usize + 1) * ppb];
        let last_programmed = counts.iter().rposition(|&c| c > 0);
        let derived_wp = last_programmed.map_or(0, |p| p + 1);
        let needs_erase = s.write_pointers[b as usize] as usize != derived_wp;
        if s.erase_counts[b as usize] != 0 || needs_erase {
            file.write_all_at(&block_record(s.erase_counts[b as usize], needs_erase), layout.block_at(block))?;
        }
        if last_programmed.is_none() {
            continue;
        }
        file.write_all_at(counts, layout.counts_at + b as u64 * ppb as u64)?;
        if s.keep_data {
            for (page, _) in counts.iter().enumerate().filter(|(_, &c)| c > 0) {
                let ppn = Ppn(b * ppb as u32 + page as u32);
                raw.clear();
                s.raw_page_into(ppn, &mut raw);
                file.write_all_at(&raw, layout.page_at(ppn))?;
            }
        }
    }
    Ok(())
}

/// Reads `len` bytes at `at`, or says what the file ends in the middle of.
fn read_exact(file: &File, path: &Path, at: u64, len: usize, what: &str) -> Result<Vec<u8>, ImageError> {
    let mut buf = vec![0; len];
    let mut done = 0;
    while done < len {
        match file.read_at(&mut buf[done..], at + done as u64) {
            Ok(0) => {
                return Err(ImageError::Truncated { path: path.into(), offset: at + done as u64, what: what.into() })
            }
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(source) => return Err(ImageError::Io { path: path.into(), source }),
        }
    }
    Ok(buf)
}

/// Reads a version 3 image into memory: the device, the newest configuration's
/// generation and its slot.
fn read_v3(file: &File, path: &Path, file_bytes: u64) -> Result<(MemoryStorage, u64, usize), ImageError> {
    let corrupt = |offset: u64, what: String| ImageError::Corrupt { path: path.into(), offset, what };
    let head = read_exact(file, path, 0, HEADER_BYTES.min(file_bytes) as usize, "header")?;
    let mut reader = ImageReader::after_version(&head[12..], path, file_bytes, VERSION);
    let geometry = reader.read_geometry(VERSION)?;
    let keep_data = reader.keep_data()?;
    let computed = reader.crc();
    let stored = u32::from_le_bytes(reader.array("header checksum")?);
    if stored != computed {
        return Err(ImageError::ChecksumMismatch { path: path.into(), stored, computed });
    }
    let layout = layout_of(&geometry, path, 12)?;
    if file_bytes < layout.file_bytes {
        return Err(ImageError::Truncated {
            path: path.into(),
            offset: file_bytes,
            what: format!("a device of {} pages (needs {} bytes)", geometry.total_pages(), layout.file_bytes),
        });
    }
    let mut s = MemoryStorage::new(geometry, keep_data);
    let (generation, slot) = read_config(file, path, &mut s)?;

    let g = s.geometry.clone();
    let blocks = g.total_blocks() as usize;
    let ppb = g.pages_per_block as usize;
    let records = read_exact(file, path, layout.blocks_at, blocks * BLOCK_RECORD_BYTES as usize, "block records")?;
    s.program_counts = read_exact(file, path, layout.counts_at, blocks * ppb, "program counts")?;
    if let Some(p) = s.program_counts.iter().position(|&c| c > g.nop) {
        let c = s.program_counts[p];
        return Err(corrupt(
            layout.counts_at + p as u64,
            format!("page {p}: program count {c} over the NOP of {}", g.nop),
        ));
    }
    for (b, record) in records.chunks_exact(BLOCK_RECORD_BYTES as usize).enumerate() {
        let at = layout.blocks_at + b as u64 * BLOCK_RECORD_BYTES;
        if record[4] > 1 || record[5..] != [0, 0, 0] {
            return Err(corrupt(
                at,
                format!("block {b}: record flags {:02x?} (needs-erase must be 0 or 1)", &record[4..]),
            ));
        }
        s.erase_counts[b] = u32::from_le_bytes([record[0], record[1], record[2], record[3]]);
        let counts = &s.program_counts[b * ppb..(b + 1) * ppb];
        let last_programmed = counts.iter().rposition(|&c| c > 0);
        s.write_pointers[b] = if record[4] == 1 { ppb } else { last_programmed.map_or(0, |p| p + 1) } as u16;
        let (Some(last), true) = (last_programmed, keep_data) else { continue };
        let raw = g.raw_page_bytes();
        let first_ppn = Ppn((b * ppb) as u32);
        let raw_block = read_exact(file, path, layout.page_at(first_ppn), (last + 1) * raw, "page data")?;
        for page in 0..=last {
            if s.program_counts[b * ppb + page] > 0 {
                s.load_page(Ppn(first_ppn.0 + page as u32), &raw_block[page * raw..(page + 1) * raw]);
            }
        }
    }
    s.durable = read_durable_point(file, path, file_bytes, &layout, &g)?;
    let recorded = s.durable.config_generation();
    if generation < recorded {
        return Err(corrupt(
            Layout::slot_at(1 - slot),
            format!(
                "configuration generation {recorded} was complete at the last durable point, but its slot fails its checksum; the older generation {generation} is not used in its place"
            ),
        ));
    }
    Ok((s, generation, slot))
}

/// The durable point stored after the pages, or no record for an image without the
/// area (an all-zero area, as a read-write open of such an image adds it, has none
/// either).
fn read_durable_point(
    file: &File,
    path: &Path,
    file_bytes: u64,
    layout: &Layout,
    g: &Geometry,
) -> Result<DurablePoint, ImageError> {
    if file_bytes == layout.file_bytes {
        return Ok(DurablePoint::unknown(g));
    }
    let area = (layout.with_durable_bytes() - layout.file_bytes) as usize;
    let bytes = read_exact(file, path, layout.file_bytes, area, "durable point")?;
    let (erase, rest) = bytes.split_at(layout.blocks as usize * 4);
    let (counts, config) = rest.split_at(layout.pages as usize);
    let erase = erase.chunks_exact(4).map(|e| u32::from_le_bytes([e[0], e[1], e[2], e[3]])).collect();
    let config = u64::from_le_bytes(config.try_into().unwrap_or_default());
    Ok(DurablePoint::load(g, erase, counts.to_vec(), config))
}

/// Loads the newest valid configuration slot into `s`. A slot whose checksum fails is
/// a torn write and is ignored (unless the durable point proves its generation
/// completed: `read_v3` then refuses the image); an all-zero slot was never written.
fn read_config(file: &File, path: &Path, s: &mut MemoryStorage) -> Result<(u64, usize), ImageError> {
    let mut best: Option<(u64, usize, Vec<u8>)> = None;
    let mut torn = 0;
    for slot in 0..2 {
        let at = Layout::slot_at(slot);
        let head = read_exact(file, path, at, SLOT_HEADER_BYTES, "configuration slot")?;
        let generation = u64::from_le_bytes(head[..8].try_into().unwrap_or_default());
        let len = u32::from_le_bytes(head[8..12].try_into().unwrap_or_default());
        let stored = u32::from_le_bytes(head[12..16].try_into().unwrap_or_default());
        if head.iter().all(|&b| b == 0) {
            continue;
        }
        if len > MAX_CONFIG_BYTES {
            torn += 1;
            continue;
        }
        let bytes = read_exact(file, path, at + SLOT_HEADER_BYTES as u64, len as usize, "configuration area")?;
        let mut hasher = crc32fast::Hasher::new();
        hasher.update(&head[..12]);
        hasher.update(&bytes);
        if hasher.finalize() != stored {
            torn += 1;
            continue;
        }
        if best.as_ref().is_none_or(|(g, _, _)| generation > *g) {
            best = Some((generation, slot, bytes));
        }
    }
    if torn == 2 {
        return Err(ImageError::Corrupt {
            path: path.into(),
            offset: HEADER_BYTES,
            what: "both configuration slots fail their checksum".into(),
        });
    }
    Ok(match best {
        Some((generation, slot, bytes)) => {
            s.config_area = bytes;
            (generation, slot)
        }
        None => (0, 1),
    })
}
