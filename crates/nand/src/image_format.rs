//! The version 3 image file format: where each part of the file lives ([`Layout`]),
//! its records and constants, and the errors of reading and writing it. Shared by the
//! write-through file of a storage (`storage::image_file`) and the code that creates,
//! opens and converts images ([`crate::image`], whose comment has the byte diagram).

use crate::geometry::{BlockId, Geometry, Ppn};
use std::fmt;
use std::io;
use std::path::PathBuf;

pub(crate) const MAGIC: &[u8; 8] = b"DFIMAGE\0";
pub(crate) const VERSION: u32 = 3;
/// Bytes reserved for the header (it uses about 120).
pub(crate) const HEADER_BYTES: u64 = 4096;
/// Bytes of one configuration slot, its 16-byte header included.
pub(crate) const CONFIG_SLOT_BYTES: u64 = 1 << 20;
pub(crate) const SLOT_HEADER_BYTES: usize = 16;
/// The largest configuration area an image holds.
pub(crate) const MAX_CONFIG_BYTES: u32 = (CONFIG_SLOT_BYTES as usize - SLOT_HEADER_BYTES) as u32;
pub(crate) const BLOCK_RECORD_BYTES: u64 = 8;

/// When an image-backed device `fdatasync`s (SQLite's `synchronous` meanings).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SyncMode {
    /// Never: a power loss may lose any write since the file was opened, and may keep
    /// some later writes while losing earlier ones. Process death loses nothing.
    Off,
    /// At [`SyncPoint::Checkpoint`](crate::SyncPoint::Checkpoint)s and [`SyncPoint::WriteAhead`](crate::SyncPoint::WriteAhead)s only (and
    /// configuration writes): a power loss may lose the commits since the last
    /// checkpoint (a suffix of them), or leave a page torn that the flash layer then
    /// refuses as corrupt.
    Normal,
    /// At every [`SyncPoint`](crate::SyncPoint), so every commit that returned survives a power loss;
    /// also before a block's second program since the last sync and before an erase,
    /// so what a power loss keeps is a state NAND can be left in.
    #[default]
    Full,
}

/// Why an image could not be created, opened or synced.
#[derive(Debug)]
pub enum ImageError {
    Io {
        path: PathBuf,
        source: io::Error,
    },
    /// Another process holds the image's lock (a writer, or readers when opening to write).
    Locked {
        path: PathBuf,
    },
    /// `create_image` on a path that already exists: it is never overwritten.
    Exists {
        path: PathBuf,
    },
    Truncated {
        path: PathBuf,
        offset: u64,
        what: String,
    },
    BadMagic {
        path: PathBuf,
    },
    UnsupportedVersion {
        path: PathBuf,
        version: u32,
    },
    Corrupt {
        path: PathBuf,
        offset: u64,
        what: String,
    },
    ChecksumMismatch {
        path: PathBuf,
        stored: u32,
        computed: u32,
    },
}

impl fmt::Display for ImageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ImageError::Io { path, source } => write!(f, "{}: {source}", path.display()),
            ImageError::Locked { path } => write!(f, "image {} is locked by another process", path.display()),
            ImageError::Exists { path } => {
                write!(f, "image {} already exists (open it, or choose a new path)", path.display())
            }
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

/// Where each part of a version 3 image lives, derived from the geometry alone.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Layout {
    pub(crate) blocks_at: u64,
    pub(crate) counts_at: u64,
    pub(crate) data_at: u64,
    pub(crate) raw_page_bytes: u64,
    pub(crate) pages_per_block: u64,
    /// Length of the whole (sparse) file without the durable point area, which starts
    /// here.
    pub(crate) file_bytes: u64,
    /// Pages on the device, for the durable point area (per block 4 bytes, then per
    /// page 1).
    pub(crate) pages: u64,
    pub(crate) blocks: u64,
}

impl Layout {
    /// `None` when the device would not fit in a 64-bit file.
    pub(crate) fn of(g: &Geometry) -> Option<Layout> {
        let blocks = g.total_blocks() as u64;
        let pages = blocks.checked_mul(g.pages_per_block as u64)?;
        let raw_page_bytes = g.raw_page_bytes() as u64;
        let blocks_at = HEADER_BYTES + 2 * CONFIG_SLOT_BYTES;
        let counts_at = blocks_at.checked_add(blocks.checked_mul(BLOCK_RECORD_BYTES)?)?;
        let data_at = counts_at.checked_add(pages)?.checked_next_multiple_of(4096)?;
        let file_bytes = data_at.checked_add(pages.checked_mul(raw_page_bytes)?)?;
        Some(Layout {
            blocks_at,
            counts_at,
            data_at,
            raw_page_bytes,
            pages_per_block: g.pages_per_block as u64,
            file_bytes,
            pages,
            blocks,
        })
    }

    pub(crate) fn slot_at(slot: usize) -> u64 {
        HEADER_BYTES + slot as u64 * CONFIG_SLOT_BYTES
    }

    pub(crate) fn block_at(&self, block: BlockId) -> u64 {
        self.blocks_at + block.0 as u64 * BLOCK_RECORD_BYTES
    }

    pub(crate) fn page_at(&self, ppn: Ppn) -> u64 {
        self.data_at + ppn.0 as u64 * self.raw_page_bytes
    }

    /// Where the durable point's erase entry of `block` lives.
    pub(crate) fn durable_erase_at(&self, block: u32) -> u64 {
        self.file_bytes + block as u64 * 4
    }

    /// Where the durable point's page counts of `block` start.
    pub(crate) fn durable_counts_at(&self, block: u32) -> u64 {
        self.file_bytes + self.blocks * 4 + block as u64 * self.pages_per_block
    }

    /// Where the durable point's configuration generation lives.
    pub(crate) fn durable_config_at(&self) -> u64 {
        self.file_bytes + self.blocks * 4 + self.pages
    }

    /// Length of the file with its durable point area.
    pub(crate) fn with_durable_bytes(&self) -> u64 {
        self.durable_config_at() + 8
    }
}

pub(crate) fn block_record(erase_count: u32, needs_erase: bool) -> [u8; 8] {
    let mut record = [0u8; 8];
    record[..4].copy_from_slice(&erase_count.to_le_bytes());
    record[4] = needs_erase as u8;
    record
}

/// A configuration slot's bytes: header (generation, length, crc32) then the area.
pub(crate) fn config_slot(generation: u64, bytes: &[u8]) -> Vec<u8> {
    let mut slot = Vec::with_capacity(SLOT_HEADER_BYTES + bytes.len());
    slot.extend_from_slice(&generation.to_le_bytes());
    slot.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(&slot);
    hasher.update(bytes);
    slot.extend_from_slice(&hasher.finalize().to_le_bytes());
    slot.extend_from_slice(bytes);
    slot
}
