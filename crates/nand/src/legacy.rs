//! Reading version 1 and 2 device images: whole-file images with a trailing checksum,
//! written by earlier builds at `flush`. They are only read: opened read-only they are
//! used as they are; opened read-write, [`crate::image`] converts them once to version 3.
//!
//! Layout (all integers little-endian):
//!
//! ```text
//! magic "DFIMAGE\0" | u32 version (1 or 2) | geometry | u8 keep_data | u32 config_len | config
//! per block: u32 erase_count | u16 write_pointer | u8 program_count × pages_per_block
//!            | u8 resident | if resident, per page: u8 flags (1 data, 2 oob) [data] [oob]
//! u32 crc32 of everything before it
//! ```
//!
//! Version 1 has no host queue depth in the geometry. Reading checks every length,
//! range and the final checksum and refuses a truncated or corrupt file with an
//! [`ImageError`] naming the file and the byte offset — never a panic. The geometry
//! decoder here is shared with the version 3 header.

use crate::geometry::Latencies;
use crate::geometry::{CellType, Geometry, Ppn};
use crate::image_format::{ImageError, MAX_CONFIG_BYTES};
use crate::storage::MemoryStorage;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

/// Reads a version 1 or 2 image whose magic and version (`version`) have been read:
/// `inner` is positioned just after them, and the file is `file_bytes` long.
pub(crate) fn read_legacy<R: Read>(
    inner: R,
    path: &Path,
    file_bytes: u64,
    version: u32,
) -> Result<MemoryStorage, ImageError> {
    ImageReader::after_version(inner, path, file_bytes, version).read_storage(version)
}

/// Appends a geometry as images store it (the version 2 and 3 encoding).
pub(crate) fn encode_geometry(g: &Geometry, out: &mut Vec<u8>) {
    for v in [g.channels, g.chips_per_channel, g.blocks_per_chip, g.pages_per_block, g.page_bytes, g.oob_bytes] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out.push(g.cell.bits_per_cell() as u8);
    out.push(g.nop);
    out.extend_from_slice(&g.endurance.to_le_bytes());
    let l = &g.latencies;
    for v in l.read_ns.iter().chain(&l.program_ns).chain([&l.erase_ns, &l.transfer_ps_per_byte]) {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out.extend_from_slice(&l.host_queue_depth.to_le_bytes());
}

/// A checked, checksummed little-endian reader that knows its file offset.
pub(crate) struct ImageReader<R: Read> {
    /// Length of the file, to refuse a geometry it cannot hold before allocating for it.
    file_bytes: u64,
    inner: R,
    hasher: crc32fast::Hasher,
    offset: u64,
    path: PathBuf,
}

impl<R: Read> ImageReader<R> {
    /// A reader at byte 12 of an image, after the magic and `version` (which count in
    /// its checksum).
    pub(crate) fn after_version(inner: R, path: &Path, file_bytes: u64, version: u32) -> Self {
        let mut hasher = crc32fast::Hasher::new();
        hasher.update(crate::image_format::MAGIC);
        hasher.update(&version.to_le_bytes());
        ImageReader { file_bytes, inner, hasher, offset: 12, path: path.to_path_buf() }
    }

    /// The checksum of everything read so far.
    pub(crate) fn crc(&self) -> u32 {
        self.hasher.clone().finalize()
    }

    pub(crate) fn corrupt(&self, what: impl Into<String>) -> ImageError {
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

    pub(crate) fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N], ImageError> {
        let mut b = [0u8; N];
        self.bytes(&mut b, what)?;
        Ok(b)
    }
    pub(crate) fn u8(&mut self, what: &str) -> Result<u8, ImageError> {
        Ok(self.array::<1>(what)?[0])
    }
    fn u16(&mut self, what: &str) -> Result<u16, ImageError> {
        Ok(u16::from_le_bytes(self.array(what)?))
    }
    pub(crate) fn u32(&mut self, what: &str) -> Result<u32, ImageError> {
        Ok(u32::from_le_bytes(self.array(what)?))
    }
    fn u64(&mut self, what: &str) -> Result<u64, ImageError> {
        Ok(u64::from_le_bytes(self.array(what)?))
    }

    pub(crate) fn read_geometry(&mut self, version: u32) -> Result<Geometry, ImageError> {
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

    fn read_storage(&mut self, version: u32) -> Result<MemoryStorage, ImageError> {
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
        let keep_data = self.keep_data()?;
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
                1 => self.read_cells(&mut s, b)?,
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

    pub(crate) fn keep_data(&mut self) -> Result<bool, ImageError> {
        match self.u8("keep_data flag")? {
            0 => Ok(false),
            1 => Ok(true),
            other => Err(self.corrupt(format!("keep_data flag is {other}, not 0 or 1"))),
        }
    }

    fn read_cells(&mut self, s: &mut MemoryStorage, block: usize) -> Result<(), ImageError> {
        let (ppb, ob) = (s.geometry.pages_per_block as usize, s.geometry.oob_bytes as usize);
        let page_bytes = s.geometry.page_bytes as usize;
        let (mut data, mut oob) = (vec![0; page_bytes], vec![0xFF; ob]);
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
                self.bytes(&mut data, "page data")?;
            }
            oob.fill(0xFF);
            if flags & 2 != 0 {
                self.bytes(&mut oob, "page OOB")?;
            }
            if flags != 0 {
                let ppn = Ppn((block * ppb + page) as u32);
                s.load_cells(ppn, (flags & 1 != 0).then_some(&data[..]), &oob);
            }
        }
        Ok(())
    }
}
