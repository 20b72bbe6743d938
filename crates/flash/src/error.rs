//! Errors of the flash layer.

use nand::PageType;
use std::fmt;

/// Why `write_delta` was refused. The caller falls back to an out-of-place write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeltaRefusal {
    /// The region's IPA mode is `none`.
    IpaDisabled,
    /// The logical page has never been written (or was trimmed).
    Unmapped,
    /// odd-MLC: the page sits on a CSB/MSB page, which is only written out-of-place.
    NotLsbPage { page_type: PageType },
    /// The page has had as many programs as its NOP limit allows.
    NopExhausted { limit: u8 },
    /// Every OOB delta slot of the page is used.
    NoSlot { slots: usize },
    /// Appends go into the page's erased tail, each after the previous one: this one
    /// starts before `floor`.
    NotAppendable { offset: usize, floor: usize },
    /// The page's last append was torn by a power cut; it takes no more.
    Sealed,
    /// The device has no in-place append (a conventional FTL's block device).
    NoInPlaceAppend,
    /// Empty, or beyond the page.
    OutOfPage { offset: usize, len: usize, page_bytes: usize },
}

impl fmt::Display for DeltaRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeltaRefusal::IpaDisabled => f.write_str("the region's IPA mode is none"),
            DeltaRefusal::Unmapped => f.write_str("the page is not mapped"),
            DeltaRefusal::NotLsbPage { page_type } => {
                write!(f, "the page is on an {page_type} page; odd-MLC appends only to LSB pages")
            }
            DeltaRefusal::NopExhausted { limit } => {
                write!(f, "the page has had its {limit} programs (NOP)")
            }
            DeltaRefusal::NoSlot { slots } => write!(f, "all {slots} OOB delta slots are used"),
            DeltaRefusal::NotAppendable { offset, floor } => write!(
                f,
                "offset {offset} is not in the page's erased tail: appends may start at byte {floor} (after the programmed bytes and earlier appends)"
            ),
            DeltaRefusal::NoInPlaceAppend => f.write_str("an FTL offers no in-place append"),
            DeltaRefusal::Sealed => f.write_str("the page's last append was torn; it takes no more appends"),
            DeltaRefusal::OutOfPage { offset, len, page_bytes } => {
                write!(f, "{len} bytes at offset {offset} do not fit a {page_bytes}-byte page (or are empty)")
            }
        }
    }
}

/// An error of the flash layer.
#[derive(Debug)]
pub enum Error {
    /// The device refused or failed an operation.
    Device(nand::Error),
    /// The device image could not be read or written.
    Image(nand::ImageError),
    LpnOutOfRange {
        region: String,
        lpn: u32,
        logical_pages: u32,
    },
    WrongPayloadSize {
        got: usize,
        expected: usize,
    },
    DeltaRefused {
        lpn: u32,
        reason: DeltaRefusal,
    },
    /// No chip of the region can take another page, even after GC.
    RegionFull {
        region: String,
    },
    /// A region request that cannot be met on this device.
    Config(String),
    /// The region layout stored with the device cannot be read.
    CorruptLayout(String),
    /// The device holds another kind of store than the one being opened (an FTL image
    /// opened as NoFTL regions, say).
    WrongStore {
        holds: String,
        wanted: &'static str,
    },
    /// A device error left the region's state unknown; reopen it (rebuild by scan).
    NeedsReopen {
        region: String,
    },
    /// The newest copy of a logical page is damaged on flash and was not torn by a
    /// power cut (see `region/rebuild.rs`); it is reported, never replaced by an older
    /// copy. `lpn` is `None` when the damage hides which page it is (the rebuild then
    /// refuses the region). `block` is the device block, `page` the page in it.
    Corrupted {
        region: String,
        lpn: Option<u32>,
        block: u32,
        page: u32,
        what: String,
    },
    /// A transactional operation (`begin_tx`, `write_tx`, `commit`, `abort`) on an FTL
    /// that has none.
    NotTransactional {
        ftl: String,
    },
    /// NoLgn-FTL's P2P table holds `entries` open-transaction pages: the write is
    /// refused (nothing written) until a transaction commits or aborts.
    P2pFull {
        entries: u32,
    },
    /// A transactional operation the FTL's transactions do not allow (unknown tid,
    /// a page another open transaction holds, commit before the end page).
    Transaction {
        tid: u32,
        what: String,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Device(e) => write!(f, "{e}"),
            Error::Image(e) => write!(f, "{e}"),
            Error::LpnOutOfRange { region, lpn, logical_pages } => {
                write!(f, "region {region}: logical page {lpn} is out of range (the region has {logical_pages})")
            }
            Error::WrongPayloadSize { got, expected } => {
                write!(f, "page payload is {got} bytes; it must be the page size, {expected} bytes (a write group: 1 to 255 whole pages)")
            }
            Error::DeltaRefused { lpn, reason } => write!(f, "write_delta to logical page {lpn} refused: {reason}"),
            Error::RegionFull { region } => {
                write!(f, "region {region} is full: no chip can take another page even after GC")
            }
            Error::Config(m) => write!(f, "{m}"),
            Error::CorruptLayout(m) => write!(f, "corrupt region layout: {m}"),
            Error::WrongStore { holds, wanted } => write!(f, "the device holds {holds}, not {wanted}"),
            Error::NeedsReopen { region } => {
                write!(f, "region {region} hit a device error; reopen the device to rebuild it")
            }
            Error::Corrupted { region, lpn: Some(lpn), block, page, what } => write!(
                f,
                "region {region}: logical page {lpn} is corrupt on flash (block {block}, page {page}): {what}"
            ),
            Error::Corrupted { region, lpn: None, block, page, what } => write!(
                f,
                "region {region}: a completed page is corrupt beyond attribution (block {block}, page {page}): {what}; the region cannot tell which logical page it held and refuses to open"
            ),
            Error::NotTransactional { ftl } => {
                write!(f, "the {ftl} FTL has no transactions (write_tx, commit and abort need the nolgn FTL)")
            }
            Error::P2pFull { entries } => write!(
                f,
                "NoLgn-FTL: the P2P table is full ({entries} pages of open transactions); commit or abort one before writing more"
            ),
            Error::Transaction { tid, what } => write!(f, "NoLgn-FTL transaction {tid}: {what}"),
        }
    }
}

impl std::error::Error for Error {}

impl From<nand::Error> for Error {
    fn from(e: nand::Error) -> Self {
        Error::Device(e)
    }
}

impl From<nand::ImageError> for Error {
    fn from(e: nand::ImageError) -> Self {
        Error::Image(e)
    }
}
