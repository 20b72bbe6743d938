//! Device image files: a [`MemoryStorage`] written to disk and read back.
//!
//! Layout (all integers little-endian; byte diagram in `docs/format.md`):
//!
//! ```text
//! magic "DFIMAGE\0" | u32 version=2 | geometry | u8 keep_data | u32 config_len | config
//! per block: u32 erase_count | u16 write_pointer | u8 program_count × pages_per_block
//!            | u8 resident | if resident, per page: u8 flags (1 data, 2 oob) [data] [oob]
//! u32 crc32 of everything before it
//! ```
//!
//! Writing goes to `PATH.tmp` and is renamed over `PATH`, so a crash while flushing
//! leaves the previous image intact. Reading checks every length, range and the final
//! checksum and refuses a truncated or corrupt file with an [`ImageError`] naming the
//! file and the byte offset — never a panic.

use crate::geometry::{CellType, Geometry};
use crate::storage::{BlockCells, MemoryStorage};
use crate::timing::Latencies;
use std::fmt;
use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

const MAGIC: &[u8; 8] = b"DFIMAGE\0";
/// Version 2 added the host queue depth to the geometry; version 1 images (no limit)
/// are still read.
const VERSION: u32 = 2;
const MAX_CONFIG_BYTES: u32 = 16 << 20;

/// Why an image could not be written or read.
#[derive(Debug)]
pub enum ImageError {
    Io { path: PathBuf, source: io::Error },
    Truncated { path: PathBuf, offset: u64, what: String },
    BadMagic { path: PathBuf },
    UnsupportedVersion { path: PathBuf, version: u32 },
    Corrupt { path: PathBuf, offset: u64, what: String },
    ChecksumMismatch { path: PathBuf, stored: u32, computed: u32 },
}

impl fmt::Display for ImageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ImageError::Io { path, source } => write!(f, "{}: {source}", path.display()),
            ImageError::Truncated { path, offset, what } => {
                write!(f, "{}: truncated image: file ends at byte {offset} while reading {what}", path.display())
            }
            ImageError::BadMagic { path } => {
                write!(f, "{}: not a DeltaFlash device image (bad magic)", path.display())
            }
            ImageError::UnsupportedVersion { path, version } => write!(
                f,
                "{}: image format version {version} is not supported (this build reads 1 to {VERSION})",
                path.display()
            ),
            ImageError::Corrupt { path, offset, what } => {
                write!(f, "{}: corrupt image at byte {offset}: {what}", path.display())
            }
            ImageError::ChecksumMismatch { path, stored, computed } => write!(
                f,
                "{}: corrupt image: checksum {stored:#010x} stored, {computed:#010x} computed",
                path.display()
            ),
        }
    }
}

impl std::error::Error for ImageError {}

impl MemoryStorage {
    /// Creates a fresh device backed by an image file at `path` (written now).
    pub fn create_image(path: &Path, geometry: Geometry, keep_data: bool) -> Result<Self, ImageError> {
        let mut storage = MemoryStorage::new(geometry, keep_data);
        storage.image_path = Some(path.to_path_buf());
        write_image(&storage, path)?;
        Ok(storage)
    }

    /// Opens an existing image; later flushes write back to it.
    pub fn open_image(path: &Path) -> Result<Self, ImageError> {
        let file = File::open(path).map_err(|source| ImageError::Io { path: path.into(), source })?;
        let file_bytes = file.metadata().map_err(|source| ImageError::Io { path: path.into(), source })?.len();
        let mut reader = ImageReader {
            file_bytes,
            inner: BufReader::with_capacity(1 << 20, file),
            hasher: crc32fast::Hasher::new(),
            offset: 0,
            path: path.to_path_buf(),
        };
        let mut storage = reader.read_storage()?;
        storage.image_path = Some(path.to_path_buf());
        Ok(storage)
    }
}

/// Writes `storage` to `path` atomically (temp file, then rename).
pub(crate) fn write_image(storage: &MemoryStorage, path: &Path) -> Result<(), ImageError> {
    let io_err = |source| ImageError::Io { path: path.into(), source };
    let tmp = path.with_extension("tmp");
    let file = File::create(&tmp).map_err(io_err)?;
    let mut w = ImageWriter { inner: BufWriter::with_capacity(1 << 20, file), hasher: crc32fast::Hasher::new() };
    w.write_storage(storage).map_err(io_err)?;
    let crc = w.hasher.clone().finalize();
    w.inner.write_all(&crc.to_le_bytes()).map_err(io_err)?;
    let file = w.inner.into_inner().map_err(|e| io_err(e.into_error()))?;
    file.sync_all().map_err(io_err)?;
    std::fs::rename(&tmp, path).map_err(io_err)
}

struct ImageWriter<W: Write> {
    inner: W,
    hasher: crc32fast::Hasher,
}

impl<W: Write> ImageWriter<W> {
    fn bytes(&mut self, b: &[u8]) -> io::Result<()> {
        self.hasher.update(b);
        self.inner.write_all(b)
    }
    fn u8(&mut self, v: u8) -> io::Result<()> {
        self.bytes(&[v])
    }
    fn u16(&mut self, v: u16) -> io::Result<()> {
        self.bytes(&v.to_le_bytes())
    }
    fn u32(&mut self, v: u32) -> io::Result<()> {
        self.bytes(&v.to_le_bytes())
    }
    fn u64(&mut self, v: u64) -> io::Result<()> {
        self.bytes(&v.to_le_bytes())
    }

    fn write_storage(&mut self, s: &MemoryStorage) -> io::Result<()> {
        self.bytes(MAGIC)?;
        self.u32(VERSION)?;
        let g = &s.geometry;
        for v in [g.channels, g.chips_per_channel, g.blocks_per_chip, g.pages_per_block, g.page_bytes, g.oob_bytes] {
            self.u32(v)?;
        }
        self.u8(g.cell.bits_per_cell() as u8)?;
        self.u8(g.nop)?;
        self.u32(g.endurance)?;
        let l = &g.latencies;
        for v in l.read_ns.iter().chain(&l.program_ns).chain([&l.erase_ns, &l.transfer_ps_per_byte]) {
            self.u64(*v)?;
        }
        self.u32(l.host_queue_depth)?;
        self.u8(s.keep_data as u8)?;
        self.u32(s.config_area.len() as u32)?;
        self.bytes(&s.config_area)?;
        let ppb = g.pages_per_block as usize;
        for (b, cells) in s.blocks.iter().enumerate() {
            self.u32(s.erase_counts[b])?;
            self.u16(s.write_pointers[b])?;
            self.bytes(&s.program_counts[b * ppb..(b + 1) * ppb])?;
            self.u8(cells.is_some() as u8)?;
            if let Some(cells) = cells {
                let ob = g.oob_bytes as usize;
                for (page, &data) in cells.data.iter().enumerate() {
                    let programmed = s.program_counts[b * ppb + page] > 0;
                    let has_data = data != crate::pool::NO_BUFFER;
                    self.u8(has_data as u8 | (programmed as u8) << 1)?;
                    if has_data {
                        self.bytes(s.pool.get(data))?;
                    }
                    if programmed {
                        self.bytes(&cells.oob[page * ob..(page + 1) * ob])?;
                    }
                }
            }
        }
        Ok(())
    }
}

struct ImageReader<R: Read> {
    /// Length of the file, to refuse a geometry it cannot hold before allocating for it.
    file_bytes: u64,
    inner: R,
    hasher: crc32fast::Hasher,
    offset: u64,
    path: PathBuf,
}

impl<R: Read> ImageReader<R> {
    fn corrupt(&self, what: impl Into<String>) -> ImageError {
        ImageError::Corrupt { path: self.path.clone(), offset: self.offset, what: what.into() }
    }

    fn fill(&mut self, buf: &mut [u8], what: &str) -> Result<(), ImageError> {
        let mut read = 0;
        while read < buf.len() {
            match self.inner.read(&mut buf[read..]) {
                Ok(0) => {
                    return Err(ImageError::Truncated {
                        path: self.path.clone(),
                        offset: self.offset + read as u64,
                        what: what.into(),
                    })
                }
                Ok(n) => read += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(source) => return Err(ImageError::Io { path: self.path.clone(), source }),
            }
        }
        self.offset += buf.len() as u64;
        Ok(())
    }

    fn bytes(&mut self, buf: &mut [u8], what: &str) -> Result<(), ImageError> {
        self.fill(buf, what)?;
        self.hasher.update(buf);
        Ok(())
    }

    fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N], ImageError> {
        let mut b = [0u8; N];
        self.bytes(&mut b, what)?;
        Ok(b)
    }
    fn u8(&mut self, what: &str) -> Result<u8, ImageError> {
        Ok(self.array::<1>(what)?[0])
    }
    fn u16(&mut self, what: &str) -> Result<u16, ImageError> {
        Ok(u16::from_le_bytes(self.array(what)?))
    }
    fn u32(&mut self, what: &str) -> Result<u32, ImageError> {
        Ok(u32::from_le_bytes(self.array(what)?))
    }
    fn u64(&mut self, what: &str) -> Result<u64, ImageError> {
        Ok(u64::from_le_bytes(self.array(what)?))
    }

    fn read_geometry(&mut self, version: u32) -> Result<Geometry, ImageError> {
        let mut dims = [0u32; 6];
        for d in &mut dims {
            *d = self.u32("geometry")?;
        }
        let cell = match self.u8("geometry cell type")? {
            1 => CellType::Slc,
            2 => CellType::Mlc,
            3 => CellType::Tlc,
            other => return Err(self.corrupt(format!("unknown cell type {other}"))),
        };
        let nop = self.u8("geometry nop")?;
        let endurance = self.u32("geometry endurance")?;
        let mut lat = [0u64; 8];
        for v in &mut lat {
            *v = self.u64("latencies")?;
        }
        let host_queue_depth = if version >= 2 { self.u32("host queue depth")? } else { 0 };
        let g = Geometry {
            channels: dims[0],
            chips_per_channel: dims[1],
            blocks_per_chip: dims[2],
            pages_per_block: dims[3],
            page_bytes: dims[4],
            oob_bytes: dims[5],
            cell,
            nop,
            endurance,
            latencies: Latencies {
                read_ns: [lat[0], lat[1], lat[2]],
                program_ns: [lat[3], lat[4], lat[5]],
                erase_ns: lat[6],
                transfer_ps_per_byte: lat[7],
                host_queue_depth,
            },
        };
        g.validate().map_err(|e| self.corrupt(e))?;
        Ok(g)
    }

    fn read_storage(&mut self) -> Result<MemoryStorage, ImageError> {
        let magic: [u8; 8] = self.array("magic")?;
        if &magic != MAGIC {
            return Err(ImageError::BadMagic { path: self.path.clone() });
        }
        let version = self.u32("version")?;
        if !(1..=VERSION).contains(&version) {
            return Err(ImageError::UnsupportedVersion { path: self.path.clone(), version });
        }
        let geometry = self.read_geometry(version)?;
        let per_block = 4 + 2 + 1 + geometry.pages_per_block as u64;
        let needed = self.offset + 1 + 4 + geometry.total_blocks() as u64 * per_block + 4;
        if needed > self.file_bytes {
            return Err(ImageError::Truncated {
                path: self.path.clone(),
                offset: self.file_bytes,
                what: format!("a device of {} blocks (needs at least {needed} bytes)", geometry.total_blocks()),
            });
        }
        let keep_data = match self.u8("keep_data flag")? {
            0 => false,
            1 => true,
            other => return Err(self.corrupt(format!("keep_data flag is {other}, not 0 or 1"))),
        };
        let mut s = MemoryStorage::new(geometry, keep_data);
        let config_len = self.u32("config area length")?;
        if config_len > MAX_CONFIG_BYTES {
            return Err(
                self.corrupt(format!("config area of {config_len} bytes is over the {MAX_CONFIG_BYTES}-byte limit"))
            );
        }
        let mut config = vec![0; config_len as usize];
        self.bytes(&mut config, "config area")?;
        s.config_area = config;
        let g = s.geometry.clone();
        let ppb = g.pages_per_block as usize;
        for b in 0..g.total_blocks() as usize {
            s.erase_counts[b] = self.u32("block erase count")?;
            let wp = self.u16("block write pointer")?;
            if wp as usize > ppb {
                return Err(self.corrupt(format!("block {b}: write pointer {wp} beyond {ppb} pages")));
            }
            s.write_pointers[b] = wp;
            let mut counts = std::mem::take(&mut s.program_counts);
            self.bytes(&mut counts[b * ppb..(b + 1) * ppb], "program counts")?;
            s.program_counts = counts;
            match self.u8("block resident flag")? {
                0 => {}
                1 => s.blocks[b] = Some(self.read_cells(&mut s, b)?),
                other => return Err(self.corrupt(format!("block {b}: resident flag is {other}"))),
            }
        }
        let computed = self.hasher.clone().finalize();
        let mut stored = [0u8; 4];
        self.fill(&mut stored, "checksum")?;
        let stored = u32::from_le_bytes(stored);
        if stored != computed {
            return Err(ImageError::ChecksumMismatch { path: self.path.clone(), stored, computed });
        }
        let mut extra = [0u8; 1];
        if self.inner.read(&mut extra).map_err(|source| ImageError::Io { path: self.path.clone(), source })? != 0 {
            return Err(self.corrupt("trailing bytes after the checksum"));
        }
        Ok(s)
    }

    fn read_cells(&mut self, s: &mut MemoryStorage, block: usize) -> Result<Box<BlockCells>, ImageError> {
        let g = &s.geometry;
        let ppb = g.pages_per_block as usize;
        let ob = g.oob_bytes as usize;
        let mut cells = s.empty_block();
        for page in 0..ppb {
            let flags = self.u8("page flags")?;
            if flags > 3 {
                return Err(self.corrupt(format!("block {block} page {page}: flags {flags:#x}")));
            }
            if flags != 0 && (!s.keep_data || s.program_counts[block * ppb + page] == 0) {
                return Err(self.corrupt(format!(
                    "block {block} page {page}: bytes stored for a page that is erased or in a metadata-only image"
                )));
            }
            if flags & 1 != 0 {
                let mut data = vec![0; g.page_bytes as usize];
                self.bytes(&mut data, "page data")?;
                cells.data[page] = s.pool.alloc_with(&data);
            }
            if flags & 2 != 0 {
                self.bytes(&mut cells.oob[page * ob..(page + 1) * ob], "page OOB")?;
            }
        }
        Ok(cells)
    }
}
