//! Plain SQLite as a [`SqliteHost`]: a connection to an in-memory database or a host
//! file, and a simulated clock that advances only by the CPU time charged to it. It is
//! the reference the tests run on and `--storage host` in `bench --engine sqlite`: the
//! same statements as on emulated flash, with no device time and no flash counters.
//!
//! Invariant: `now()` is exactly the sum of the charges, so a run on it is deterministic.
//! An in-memory database has no WAL (SQLite reports journal mode `memory`); a host file
//! has one, synced to the host's disk as `synchronous` says.

use super::{FlashSnapshot, SqliteHost};
use nand::SimTime;
use rand_chacha::ChaCha8Rng;
use rusqlite::Connection;
use std::path::Path;

pub struct HostSqlite {
    conn: Connection,
    clock_ns: SimTime,
}

impl HostSqlite {
    /// A fresh in-memory database.
    pub fn in_memory() -> Result<HostSqlite, String> {
        let conn = Connection::open_in_memory().map_err(|e| format!("sqlite: in-memory database: {e}"))?;
        Ok(HostSqlite { conn, clock_ns: 0 })
    }

    /// A new database at `path` on the host's file system ([`create_database_file`]).
    pub fn create(path: &Path) -> Result<HostSqlite, String> {
        create_database_file(path)?;
        let conn = Connection::open(path).map_err(|e| format!("sqlite: {}: {e}", path.display()))?;
        Ok(HostSqlite { conn, clock_ns: 0 })
    }
}

/// Creates the empty file of a new SQLite database at `path`: never over an existing
/// file (`create_new`), and not beside a `-wal`, `-shm` or `-journal` file, which SQLite
/// would take for the new database's own and replay into it.
pub fn create_database_file(path: &Path) -> Result<(), String> {
    for suffix in ["-wal", "-shm", "-journal"] {
        let mut companion = path.as_os_str().to_owned();
        companion.push(suffix);
        if std::fs::symlink_metadata(&companion).is_ok() {
            return Err(format!(
                "{}: exists (the journal of another database); no database is created beside it: choose another path",
                Path::new(&companion).display()
            ));
        }
    }
    match std::fs::OpenOptions::new().write(true).create_new(true).open(path) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Err(format!(
            "{}: the file exists; a new database is created here and no file is replaced: remove it or choose another path",
            path.display()
        )),
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}

impl SqliteHost for HostSqlite {
    fn connection(&self) -> &Connection {
        &self.conn
    }

    fn now(&self) -> SimTime {
        self.clock_ns
    }

    fn charge_cpu_ns(&mut self, ns: u64) {
        self.clock_ns += ns;
    }

    fn flash(&self) -> Option<FlashSnapshot> {
        None
    }

    fn precondition(&mut self, _free_share: f64, _rng: &mut ChaCha8Rng) -> Result<(), String> {
        Err("--free-space ages an emulated flash device; SQLite on host storage has none \
             (run it on flash: --storage ftl:KIND)"
            .into())
    }
}
