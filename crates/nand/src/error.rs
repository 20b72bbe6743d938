//! Errors of the device layer. Each names where it happened.

use crate::geometry::PageType;
use std::fmt;

/// An operation the device refused, or could not finish.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Error {
    /// An address beyond the device.
    OutOfRange { what: &'static str, value: u64, limit: u64 },
    /// Bytes that do not fit in the raw page (data + OOB).
    SpanOutOfPage { offset: usize, len: usize, raw_page_bytes: usize },
    /// A program that would need a 0→1 transition.
    BitRaise { chip: u32, block: u32, page: u32, offset: usize },
    /// More programs than the page type allows between erases.
    NopExceeded { chip: u32, block: u32, page: u32, page_type: PageType, limit: u8 },
    /// A first program below the block's write pointer (in-order programming).
    OutOfOrder { chip: u32, block: u32, page: u32, write_pointer: u32 },
    /// An erase beyond the block's rated endurance.
    WornOut { chip: u32, block: u32, erases: u32, endurance: u32 },
    /// Copyback moves data inside one chip only.
    CopybackAcrossChips { src_chip: u32, dst_chip: u32 },
    /// A read, append or copyback of a page whose payload the flash manager discarded
    /// as garbage ([`Device::discard_payload`](crate::Device::discard_payload)): the
    /// emulator no longer keeps its bytes.
    PayloadDiscarded { chip: u32, block: u32, page: u32, operation: &'static str },
    /// A program or copyback that would take the page images the emulator keeps in memory
    /// past their budget ([`MemoryStorage::set_page_budget`](crate::MemoryStorage::set_page_budget)):
    /// the run needs more memory than it was given. Refused before anything changed.
    PageBudget {
        operation: &'static str,
        chip: u32,
        block: u32,
        page: u32,
        budget_bytes: u64,
        /// Bytes the page images (and their bookkeeping) take already.
        resident_bytes: u64,
        chips: u32,
        blocks_per_chip: u32,
        pages_per_block: u32,
        page_bytes: u32,
    },
    /// Power failed; nothing more until the device is powered on again.
    PowerLost,
    /// A mutating operation on a device opened read-only.
    ReadOnly { path: String, operation: &'static str },
    /// Writing an operation through to the image file failed (disk full, I/O error):
    /// the file may lag the device from this operation on. Not corruption.
    Io { path: String, offset: u64, message: String },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::OutOfRange { what, value, limit } => {
                write!(f, "{what} {value} is out of range (the device has {limit})")
            }
            Error::SpanOutOfPage { offset, len, raw_page_bytes } => write!(
                f,
                "{len} bytes at offset {offset} do not fit in a {raw_page_bytes}-byte raw page (data + OOB)"
            ),
            Error::BitRaise { chip, block, page, offset } => write!(
                f,
                "program refused: chip {chip} block {block} page {page} byte offset {offset} would need a 0→1 bit transition (erase first)"
            ),
            Error::NopExceeded { chip, block, page, page_type, limit } => write!(
                f,
                "program refused: chip {chip} block {block} page {page} ({page_type} page) already has its {limit} allowed program(s) since the last erase"
            ),
            Error::OutOfOrder { chip, block, page, write_pointer } => write!(
                f,
                "program refused: chip {chip} block {block} page {page} is below the block's write pointer {write_pointer}; first programs must go in page order (erase the block to start again)"
            ),
            Error::WornOut { chip, block, erases, endurance } => write!(
                f,
                "erase refused: chip {chip} block {block} is worn out ({erases} of {endurance} rated P/E cycles)"
            ),
            Error::CopybackAcrossChips { src_chip, dst_chip } => {
                write!(f, "copyback from chip {src_chip} to chip {dst_chip}: copyback stays on one chip")
            }
            Error::PayloadDiscarded { chip, block, page, operation } => write!(
                f,
                "{operation} refused: chip {chip} block {block} page {page} was discarded as garbage (the emulator no longer keeps its data; only its OOB remains until the block is erased)"
            ),
            Error::PageBudget {
                operation,
                chip,
                block,
                page,
                budget_bytes,
                resident_bytes,
                chips,
                blocks_per_chip,
                pages_per_block,
                page_bytes,
            } => write!(
                f,
                "{operation} refused: chip {chip} block {block} page {page} needs a new page image, but the page \
                 images in memory already take {} of their {} budget (device: {chips} chips × {blocks_per_chip} \
                 blocks × {pages_per_block} pages of {page_bytes} bytes); give the run more memory (--max-memory, \
                 device.max_memory_bytes), fewer blocks per chip (--blocks-per-chip, device.blocks_per_chip), or \
                 keep metadata only (--no-data, device.no_data)",
                mib(*resident_bytes),
                mib(*budget_bytes)
            ),
            Error::PowerLost => f.write_str("power lost: the device is off until powered on again"),
            Error::ReadOnly { path, operation } => {
                write!(f, "{operation} refused: image {path} is open read-only")
            }
            Error::Io { path, offset, message } => {
                write!(f, "writing image {path} at byte {offset} failed: {message}")
            }
        }
    }
}

/// Bytes in MiB for a message: `41.0 MiB`.
fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1u64 << 20) as f64)
}

impl std::error::Error for Error {}
