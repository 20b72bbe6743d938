//! Errors of the index layer: the flash below failed, or bytes read back from flash do
//! not decode (named by what was being read and where).

use std::fmt;

#[derive(Debug)]
pub enum Error {
    /// The NAND device refused or failed an operation.
    Device(nand::Error),
    /// The FTL below refused or failed an operation.
    Flash(flash::Error),
    /// Bytes read back from flash do not decode: what was read, and where.
    Corrupt { what: &'static str, location: String },
    /// The store has no room left for another node or page.
    Full(String),
    /// A configuration the store cannot run with.
    Config(String),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Device(e) => write!(f, "device: {e}"),
            Error::Flash(e) => write!(f, "flash: {e}"),
            Error::Corrupt { what, location } => write!(f, "corrupt {what} at {location}"),
            Error::Full(s) => write!(f, "index store full: {s}"),
            Error::Config(s) => write!(f, "index configuration: {s}"),
        }
    }
}

impl std::error::Error for Error {}

impl From<nand::Error> for Error {
    fn from(e: nand::Error) -> Self {
        Error::Device(e)
    }
}

impl From<flash::Error> for Error {
    fn from(e: flash::Error) -> Self {
        Error::Flash(e)
    }
}
