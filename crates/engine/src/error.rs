//! Errors of the engine layer.

use std::fmt;

/// An engine error. `Corrupt` is kept apart from device errors: it means bytes read
/// back do not decode, never that an operation was refused.
#[derive(Debug)]
pub enum Error {
    Flash(flash::Error),
    /// A statement that does not parse; `line` and `column` are 1-based.
    Parse {
        line: usize,
        column: usize,
        token: String,
        message: String,
    },
    /// A statement that parses but cannot run (unknown table, wrong type, …).
    Invalid(String),
    /// A unique key that is already present.
    Duplicate {
        object: String,
        key: String,
    },
    /// Bytes on the device that do not decode.
    Corrupt(String),
    /// The object or region has no room for another page or row.
    Full(String),
    /// A data region has no free extent left for an object to grow into.
    NoFreeExtent {
        region: u16,
        extent_pages: u32,
    },
    /// A transaction that is not open in this database: another database's, or one
    /// the database already rolled back.
    UnknownTransaction {
        id: u64,
    },
    /// A transaction tried to change data while another open one has uncommitted
    /// changes: one transaction writes at a time (undo writes byte ranges back, which
    /// would undo the other's changes to the same page too).
    AnotherWriter {
        id: u64,
        writer: u64,
    },
    /// Writing or syncing the device's file failed while a commit was being made
    /// durable: part of it may have reached the file, so it may or may not have
    /// committed. The database refuses work until reopened ([`Error::Stopped`]).
    CommitOutcomeUnknown(Box<Error>),
    /// A write or sync of the device's file failed earlier (disk full, I/O error): what
    /// the file holds is no longer what memory holds, so the database refuses every
    /// call until it is reopened (the reopen recovers from the file).
    Stopped {
        cause: String,
    },
    /// A transaction that failed earlier (`cause`) and was rolled back: nothing of it
    /// is committed. `ended`: this was its commit, which rolled back instead and ended
    /// it; otherwise the operation was refused and the transaction stays failed until
    /// it is rolled back (`ROLLBACK`, [`crate::Database::abort`]).
    TransactionFailed {
        id: u64,
        cause: String,
        ended: bool,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Flash(e) => write!(f, "{e}"),
            Error::Parse { line, column, token, message } => {
                write!(f, "line {line}, column {column}: {message} (at `{token}`)")
            }
            Error::Invalid(m) => f.write_str(m),
            Error::Duplicate { object, key } => write!(f, "{object}: duplicate key {key}"),
            Error::Corrupt(m) => write!(f, "corrupt database: {m}"),
            Error::Full(m) => f.write_str(m),
            Error::NoFreeExtent { region, extent_pages } => {
                write!(
                    f,
                    "region {region} has no free extent of {extent_pages} pages: the objects in it have \
                     outgrown it (a larger device, e.g. more blocks per chip, or more chips for the region)"
                )
            }
            Error::UnknownTransaction { id } => {
                write!(f, "transaction {id} is not open in this database (another database's, or rolled back)")
            }
            Error::AnotherWriter { id, writer } => write!(
                f,
                "transaction {id} cannot change data while transaction {writer} has uncommitted changes: \
                 one transaction writes at a time (commit or abort {writer} first)"
            ),
            Error::CommitOutcomeUnknown(cause) => write!(
                f,
                "the commit's outcome is unknown: {cause}; part of it may have reached the file, so the \
                 transaction may or may not have committed. The database stops: reopen it and look whether \
                 the transaction's changes are there"
            ),
            Error::Stopped { cause } => {
                write!(f, "the database stopped after a failed write ({cause}); it refuses work until it is reopened")
            }
            Error::TransactionFailed { id, cause, ended: false } => write!(
                f,
                "current transaction is aborted, commands ignored until ROLLBACK (transaction {id} failed and was \
                 rolled back: {cause})"
            ),
            Error::TransactionFailed { id, cause, ended: true } => {
                write!(f, "transaction {id} failed earlier and was rolled back: nothing of it was committed ({cause})")
            }
        }
    }
}

impl std::error::Error for Error {}

impl Error {
    /// A write or sync of the device's file failed (disk full, I/O error): the layers
    /// above cannot tell what reached the file.
    pub fn is_file_failure(&self) -> bool {
        matches!(
            self,
            Error::Flash(
                flash::Error::Device(nand::Error::Io { .. }) | flash::Error::Image(nand::ImageError::Io { .. })
            )
        )
    }
}

/// Tokens and values longer than this many characters are cut in error messages (a
/// 1 MB literal is not echoed back).
pub const ECHO_CHARS: usize = 40;

/// `text` cut to [`ECHO_CHARS`] characters, with `…` where it was cut.
pub fn shorten(text: &str) -> String {
    match text.char_indices().nth(ECHO_CHARS) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

/// Most characters of an error's message that a later error quotes as its cause.
const CAUSE_CHARS: usize = 200;

impl Error {
    /// The message cut to `CAUSE_CHARS` characters, to quote as a later error's cause.
    pub fn brief(&self) -> String {
        let message = self.to_string();
        match message.char_indices().nth(CAUSE_CHARS) {
            Some((at, _)) => format!("{}…", &message[..at]),
            None => message,
        }
    }
}

impl From<flash::Error> for Error {
    fn from(e: flash::Error) -> Self {
        Error::Flash(e)
    }
}

pub type Result<T> = std::result::Result<T, Error>;
