//! sqlite_flash — real, unmodified SQLite (rusqlite's bundled build) on emulated flash.
//!
//! [`FlashSqlite`] formats or opens a conventional FTL over a NAND device, puts
//! SQLite's files on it through the file layer ([`files`]), registers a VFS for the
//! instance (`vfs.rs`, the crate's only `unsafe` code) and opens a connection. Every
//! byte SQLite writes reaches the flash through the FTL with the device's timing;
//! simulated time also advances by a CPU cost per statement and by
//! [`FlashSqlite::charge_cpu_ns`], so throughput and latency come out in simulated
//! time, the same for the same seed.
//!
//! Fault model: a power cut (nand fault injection) makes SQLite's I/O fail; hand the
//! device back with [`FlashSqlite::into_device`], power it on and [`FlashSqlite::open`]
//! it: the FTL rebuilds, the file table is read and SQLite recovers its journal or WAL.
//! Every commit that returned under `synchronous=FULL` survives; the file layer's
//! write-back page cache ([`FlashSqliteOptions::page_cache_pages`]) loses only what
//! was written since the last `xSync`, as Ext4's page cache does.
//!
//! [`Journal::Nolgn`] runs SQLite without a log on NoLgn-FTL, SQLite unmodified: its
//! `journal_mode` is pinned OFF and `cache_spill` off, so the main database's pages
//! change only at commit, and the file layer makes each commit (or, under
//! `synchronous=NORMAL`, each group of `group_pages` page writes) one FTL transaction.

#![deny(unsafe_code)]
#![deny(unsafe_op_in_unsafe_fn)]

mod cache;
mod clean;
pub mod error;
pub mod files;
pub mod locks;
#[allow(unsafe_code)]
mod vfs;

pub use error::Error;
pub use files::host_stack::{HostStack, HostStackModel, JOURNAL_FILE};
pub use files::{FileCounters, FileStore, IoLatency, AGING_FILE, DEFAULT_CACHE_PAGES};
/// The rusqlite this crate's connections come from (bundled SQLite).
pub use rusqlite;
pub use vfs::{is_complete, DB_NAME};

use flash::ftl::{FtlConfig, FtlCounters};
use nand::{Device, SimTime};
use rusqlite::Connection;
use serde::{Deserialize, Serialize};
use std::marker::PhantomData;
use std::ops::Deref;

/// How an instance runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FlashSqliteOptions {
    /// Simulated CPU time charged when each statement starts running.
    pub statement_cpu_ns: u64,
    /// Seed of the bytes SQLite asks its VFS for (`xRandomness`).
    pub seed: u64,
    /// Who makes SQLite's transactions atomic.
    #[serde(default)]
    pub journal: Journal,
    /// The file layer's write-back page cache, in logical pages (0: write-through).
    #[serde(default = "default_cache_pages")]
    pub page_cache_pages: usize,
    /// Clean pages the file layer keeps in RAM after a write-back or a read (0: none,
    /// every read not of a dirty page goes to flash).
    #[serde(default = "default_cache_pages")]
    pub clean_cache_pages: usize,
    /// The host I/O stack charged per write call and fsync (`files::host_stack`);
    /// none by default.
    #[serde(default)]
    pub host_stack: HostStack,
}

fn default_cache_pages() -> usize {
    DEFAULT_CACHE_PAGES
}

impl Default for FlashSqliteOptions {
    fn default() -> Self {
        FlashSqliteOptions {
            statement_cpu_ns: 0,
            seed: 1,
            journal: Journal::Sqlite,
            page_cache_pages: DEFAULT_CACHE_PAGES,
            clean_cache_pages: DEFAULT_CACHE_PAGES,
            host_stack: HostStack::default(),
        }
    }
}

/// Who makes SQLite's transactions atomic.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Journal {
    /// SQLite's own rollback journal or WAL (the CLI's `base-wal` and `delete`), as its
    /// `journal_mode` says.
    #[default]
    Sqlite,
    /// SW-WAL: SQLite's WAL with its frames page-aligned on flash and their headers in
    /// the OOB, checkpoints by remapping (the FTL must be `page`). The database is put
    /// in WAL mode with SQLite's page size set to the flash page size. The device
    /// keeps this choice in its file table: [`FlashSqlite::open`] follows it.
    SwWal,
    /// No log: NoLgn-FTL's transactions (the FTL must be `nolgn`). SQLite's
    /// `journal_mode` stays OFF whatever is asked (the VFS answers `off`) and
    /// `cache_spill` is off. Under `synchronous=NORMAL` commits are grouped into one
    /// FTL transaction every `group_pages` page writes (the paper: 1,000); under FULL
    /// every commit is one.
    Nolgn { group_pages: u32 },
}

/// What SQLite did to the flash: host I/O through the file layer and the FTL's work.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SqliteFlashCounters {
    /// Logical pages read from flash for SQLite (read-modify-write reads included).
    pub host_read_pages: u64,
    /// Bytes SQLite read.
    pub host_read_bytes: u64,
    /// Logical pages written to flash with SQLite's data (after the page cache).
    pub host_write_pages: u64,
    /// Bytes SQLite wrote.
    pub host_write_bytes: u64,
    /// Partial-page writes that read the page from flash first.
    pub rmw_reads: u64,
    /// Page writes SQLite made into the write-back page cache.
    pub cache_page_writes: u64,
    /// Page reads the page cache served.
    pub cache_hits: u64,
    /// Pages written back because the page cache was over its bound.
    pub pressure_writebacks: u64,
    /// File-table page writes (the file system's metadata).
    pub table_writes: u64,
    /// Logical pages trimmed by truncates and deletes.
    pub trims: u64,
    /// `xSync` flush barriers.
    pub syncs: u64,
    /// Ext4 journal (JBD2) blocks the `ext4-ordered` host stack wrote.
    #[serde(default)]
    pub journal_writes: u64,
    /// Statements started (each charged the CPU cost).
    pub statements: u64,
    /// The FTL: flash programs, reads, GC migrations, erases, merges.
    pub ftl: FtlCounters,
}

/// SQLite on an FTL over an emulated NAND device.
pub struct FlashSqlite {
    /// Declared first: connections close before the VFS goes away.
    conn: Option<Connection>,
    registration: vfs::Registration,
    journal: Journal,
}

/// With [`Journal::Nolgn`]: no journal, and no page of an open transaction written
/// before its commit.
fn no_log(conn: &Connection, journal: Journal) -> Result<(), Error> {
    if matches!(journal, Journal::Nolgn { .. }) {
        let mode: String = conn.query_row("PRAGMA journal_mode=OFF", [], |r| r.get(0))?;
        debug_assert_eq!(mode, "off");
        conn.execute_batch("PRAGMA cache_spill=OFF")?;
    }
    Ok(())
}

/// A further connection to the same database; it cannot outlive its instance.
pub struct ExtraConnection<'a> {
    conn: Connection,
    _instance: PhantomData<&'a FlashSqlite>,
}

impl Deref for ExtraConnection<'_> {
    type Target = Connection;
    fn deref(&self) -> &Connection {
        &self.conn
    }
}

impl FlashSqlite {
    /// Formats `ftl` over the device (erasing it), lays an empty file table and opens
    /// a new, empty database.
    pub fn create(device: Device, ftl: &FtlConfig, opts: FlashSqliteOptions) -> Result<FlashSqlite, Error> {
        let sw_wal = opts.journal == Journal::SwWal;
        if sw_wal && ftl.kind != flash::ftl::FtlKind::Page {
            return Err(Error::Flash(flash::Error::Config(format!(
                "SW-WAL remaps logical pages, which only the page FTL does (asked for the {} FTL)",
                ftl.kind.name()
            ))));
        }
        let ftl = flash::ftl::format(device, ftl)?;
        FlashSqlite::start(FileStore::format_with(ftl, 0, sw_wal)?, opts)
    }

    /// Opens a device [`FlashSqlite::create`] set up, at simulated time `now`: rebuilds
    /// the FTL, reads the file table; SQLite recovers on its first read.
    pub fn open(device: Device, now: SimTime) -> Result<FlashSqlite, Error> {
        FlashSqlite::open_with(device, now, FlashSqliteOptions::default())
    }

    /// [`FlashSqlite::open`] with options. A device created with [`Journal::SwWal`]
    /// runs it whatever `opts.journal` says unless that is [`Journal::Nolgn`] (refused,
    /// as is asking for SW-WAL on a device created without it).
    pub fn open_with(device: Device, now: SimTime, opts: FlashSqliteOptions) -> Result<FlashSqlite, Error> {
        let (ftl, rebuilt) = flash::ftl::open(device, now)?;
        FlashSqlite::start(FileStore::open(ftl, rebuilt)?, opts)
    }

    fn start(mut store: FileStore, opts: FlashSqliteOptions) -> Result<FlashSqlite, Error> {
        let journal = match (store.sw_wal(), opts.journal) {
            (true, Journal::Nolgn { .. }) => {
                return Err(Error::Flash(flash::Error::Config(
                    "the device's database runs SW-WAL (chosen at create), not the nolgn journal".into(),
                )))
            }
            (false, Journal::SwWal) => {
                return Err(Error::Flash(flash::Error::Config(
                    "the device's database was created without SW-WAL (chosen at create only)".into(),
                )))
            }
            (true, _) => Journal::SwWal,
            (false, journal) => journal,
        };
        store.set_cache_pages(opts.page_cache_pages)?;
        store.set_clean_cache_pages(opts.clean_cache_pages);
        store.set_host_stack(opts.host_stack)?;
        if let Journal::Nolgn { group_pages } = journal {
            store.set_transactional(DB_NAME, group_pages as u64)?;
        }
        let page_bytes = store.page_bytes();
        let registration = vfs::Registration::new(store, opts.statement_cpu_ns, opts.seed)?;
        let conn = registration.open_connection()?;
        if journal == Journal::SwWal {
            // Frames align with flash pages only at this page size (a no-op once the
            // database has data).
            conn.execute_batch(&format!("PRAGMA page_size={page_bytes}"))?;
            let _: String = conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))?;
        }
        no_log(&conn, journal)?;
        Ok(FlashSqlite { conn: Some(conn), registration, journal })
    }

    /// The instance's connection.
    pub fn connection(&self) -> &Connection {
        // `conn` is `None` only inside `close`/`into_device`, which consume `self`.
        self.conn.as_ref().unwrap_or_else(|| unreachable!("the connection lives as long as the instance"))
    }

    /// Another connection to the same database (locks and WAL index are shared).
    pub fn open_connection(&self) -> Result<ExtraConnection<'_>, Error> {
        let conn = self.registration.open_connection()?;
        no_log(&conn, self.journal)?;
        Ok(ExtraConnection { conn, _instance: PhantomData })
    }

    /// Simulated time now.
    pub fn now(&self) -> SimTime {
        self.registration.state().store.as_ref().map_or(0, |s| s.now())
    }

    /// Charges host CPU time outside SQLite (a workload's own work).
    pub fn charge_cpu_ns(&self, ns: u64) {
        if let Some(store) = self.registration.state().store.as_mut() {
            store.advance(ns);
        }
    }

    /// Changes the CPU cost charged per statement.
    pub fn set_statement_cpu_ns(&self, ns: u64) {
        self.registration.state().statement_cpu_ns = ns;
    }

    pub fn counters(&self) -> SqliteFlashCounters {
        let state = self.registration.state();
        let (files, ftl) = state.store.as_ref().map_or_else(Default::default, |s| (s.counters(), s.ftl().counters()));
        SqliteFlashCounters {
            host_read_pages: files.read_pages,
            host_read_bytes: files.read_bytes,
            host_write_pages: files.write_pages,
            host_write_bytes: files.write_bytes,
            rmw_reads: files.rmw_reads,
            cache_page_writes: files.cache_writes,
            cache_hits: files.cache_hits,
            pressure_writebacks: files.pressure_writebacks,
            table_writes: files.table_writes,
            trims: files.trims,
            syncs: files.syncs,
            journal_writes: files.journal_writes,
            statements: state.statements,
            ftl,
        }
    }

    /// Ages the device until `free_share` of the logical pages no file holds stays free
    /// (see [`FileStore::age`]): the rest is written once, then overwritten at random by
    /// as many one-page writes as the FTL has logical pages (the NoLgn-FTL paper's 4
    /// million 4 KB writes on its 16 GB device), so GC runs. Call it before the
    /// database has data. Returns the aging pages.
    pub fn age(&self, free_share: f64, rng: &mut impl rand::Rng) -> Result<u64, Error> {
        let mut state = self.registration.state();
        let store = state.store.as_mut().ok_or(Error::Closed)?;
        let pages = (store.free_pages() as f64 * (1.0 - free_share.clamp(0.0, 1.0))).floor() as u64;
        let overwrites = store.ftl().logical_pages() as u64;
        store.age(pages, overwrites, rng)?;
        Ok(pages)
    }

    /// The latencies of SQLite's page reads and writes on the FTL since the database
    /// was opened or [`FlashSqlite::reset_io_latency`].
    pub fn io_latency(&self) -> IoLatency {
        let state = self.registration.state();
        state.store.as_ref().map_or_else(IoLatency::default, |s| s.io_latency().clone())
    }

    /// Starts [`FlashSqlite::io_latency`] afresh: a measured interval's start.
    pub fn reset_io_latency(&self) {
        if let Some(store) = self.registration.state().store.as_mut() {
            store.reset_io_latency();
        }
    }

    /// The NAND device's own counters (every program, copyback, erase).
    pub fn device_counters(&self) -> nand::DeviceCounters {
        let state = self.registration.state();
        state.store.as_ref().map_or_else(Default::default, |s| s.ftl().device().counters())
    }

    /// Bytes the emulated device keeps in memory (page images, OOB, per-page and
    /// per-block metadata), for reports of memory use against what a run keeps.
    pub fn device_memory_bytes(&self) -> u64 {
        let state = self.registration.state();
        state.store.as_ref().map_or(0, |s| s.ftl().device().storage().memory_bytes())
    }

    /// The heap bytes of the FTL's maps and tables.
    pub fn mapping_memory_bytes(&self) -> u64 {
        let state = self.registration.state();
        state.store.as_ref().map_or(0, |s| s.ftl().mapping_bytes())
    }

    /// Arms a power cut `after_ops` mutating flash operations from now (a device with
    /// fault injection; others ignore it): to cut SQLite's own recovery.
    pub fn arm_power_cut(&self, after_ops: u64) {
        if let Some(store) = self.registration.state().store.as_mut() {
            store.ftl_mut().device_mut().storage_mut().arm_power_cut(after_ops);
        }
    }

    /// SQLite's files on flash and their sizes, and the logical pages still free.
    pub fn files(&self) -> (Vec<(String, u64)>, u64) {
        let state = self.registration.state();
        state.store.as_ref().map_or_else(Default::default, |s| (s.files(), s.free_pages()))
    }

    /// The last flash error SQLite saw as an I/O error (SQLite's own message is less
    /// specific).
    pub fn last_io_error(&self) -> Option<String> {
        self.registration.state().last_error.clone()
    }

    /// Closes SQLite cleanly (a WAL is checkpointed and removed), makes everything
    /// durable and returns the device.
    pub fn close(mut self) -> Result<Device, Error> {
        if let Some(conn) = self.conn.take() {
            conn.close().map_err(|(_, e)| Error::Sqlite(e))?;
        }
        let mut store = self.take_store()?;
        store.flush()?;
        Ok(store.into_ftl().into_device())
    }

    /// Drops the connection without asking for anything more and returns the device as
    /// it is (after a power cut: powered off; call `power_on` before reopening).
    pub fn into_device(mut self) -> Device {
        drop(self.conn.take());
        match self.take_store() {
            Ok(store) => store.into_ftl().into_device(),
            Err(_) => unreachable!("the store is taken only by close/into_device, which consume the instance"),
        }
    }

    fn take_store(&mut self) -> Result<FileStore, Error> {
        self.registration.state().store.take().ok_or(Error::Closed)
    }
}
