//! Errors of the SQLite-on-flash layer: the flash underneath, the file table, SQLite.

use std::fmt;

/// An error of the file layer or of SQLite running on it.
#[derive(Debug)]
pub enum Error {
    /// The FTL or the NAND device refused or failed an operation (a power cut included).
    Flash(flash::Error),
    /// SQLite reported an error.
    Sqlite(rusqlite::Error),
    /// Neither copy of the file table on flash can be read, or a copy contradicts itself.
    CorruptTable(String),
    /// A file cannot grow: the FTL's logical pages are all allocated.
    NoSpace { file: String, needed_pages: u64, free_pages: u64 },
    /// The file table no longer fits its one logical page.
    TableTooLarge { bytes: usize, room_bytes: usize },
    /// The device keeps no page data (a metadata-only store); SQLite needs its bytes back.
    NoPageData,
    /// The FTL has too few logical pages for the file table and any file.
    DeviceTooSmall { logical_pages: u32 },
    /// The file is not in the file table.
    NoSuchFile(String),
    /// The file layer was already handed back (`into_device`) or a write failed.
    Closed,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Flash(e) => write!(f, "{e}"),
            Error::Sqlite(e) => write!(f, "SQLite: {e}"),
            Error::CorruptTable(m) => write!(f, "corrupt SQLite file table on flash: {m}"),
            Error::NoSpace { file, needed_pages, free_pages } => write!(
                f,
                "no space for file {file}: it needs {needed_pages} more logical pages and {free_pages} are free"
            ),
            Error::TableTooLarge { bytes, room_bytes } => write!(
                f,
                "the file table needs {bytes} bytes but its logical page holds {room_bytes} (too many files or extents)"
            ),
            Error::NoPageData => {
                f.write_str("SQLite needs a device that keeps page data; this one is metadata-only (--no-data)")
            }
            Error::DeviceTooSmall { logical_pages } => {
                write!(f, "the FTL offers {logical_pages} logical pages; the SQLite file layer needs at least 8")
            }
            Error::NoSuchFile(name) => write!(f, "no file named {name}"),
            Error::Closed => f.write_str("the SQLite file layer has been closed"),
        }
    }
}

impl std::error::Error for Error {}

impl From<flash::Error> for Error {
    fn from(e: flash::Error) -> Self {
        Error::Flash(e)
    }
}

impl From<rusqlite::Error> for Error {
    fn from(e: rusqlite::Error) -> Self {
        Error::Sqlite(e)
    }
}

impl From<nand::ImageError> for Error {
    fn from(e: nand::ImageError) -> Self {
        Error::Flash(flash::Error::Image(e))
    }
}
