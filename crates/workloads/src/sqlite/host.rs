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

    /// A fresh database at `path` on the host's file system: the file and its `-wal`,
    /// `-shm` and `-journal` companions are removed first.
    pub fn create(path: &Path) -> Result<HostSqlite, String> {
        for suffix in ["", "-wal", "-shm", "-journal"] {
            let file = format!("{}{suffix}", path.display());
            match std::fs::remove_file(&file) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(format!("{file}: {e}")),
            }
        }
        let conn = Connection::open(path).map_err(|e| format!("sqlite: {}: {e}", path.display()))?;
        Ok(HostSqlite { conn, clock_ns: 0 })
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
