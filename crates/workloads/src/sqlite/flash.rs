//! SQLite on emulated flash as a [`SqliteHost`]: [`sqlite_flash::FlashSqlite`] (the VFS
//! over a conventional FTL) seen through the trait the workloads run on. Its clock
//! advances by every I/O's device latency as well as by the CPU time charged; the
//! runner charges the per-statement cost, so the instance is opened with none of its own.
//!
//! [`FlashRunConfig`] is one such run as a serialisable config (device, FTL, journal,
//! `synchronous`, aging, host I/O stack, seed): what `reproduce` runs.
//!
//! Counters: host reads and writes are the logical pages the file layer sent to the
//! FTL; programs and erases are the NAND device's own (host pages, GC copies, the file
//! table), so write amplification covers everything the flash did.

use super::runner::run_registered;
use super::{FlashSnapshot, FreeSpace, SqliteHost, SqliteResult, SqliteRunConfig, Synchronous};
use crate::config::{DeviceConfig, WorkloadConfig};
use crate::limits::quote;
use crate::Control;
use flash::ftl::{FtlConfig, FtlKind};
use latency::Percentiles;
use nand::SimTime;
use rand_chacha::ChaCha8Rng;
use rusqlite::Connection;
use serde::{Deserialize, Serialize};
use sqlite_flash::{FlashSqlite, FlashSqliteOptions, Journal};
pub use sqlite_flash::{HostStack, HostStackModel};

impl SqliteHost for FlashSqlite {
    fn connection(&self) -> &Connection {
        FlashSqlite::connection(self)
    }

    fn now(&self) -> SimTime {
        FlashSqlite::now(self)
    }

    fn charge_cpu_ns(&mut self, ns: u64) {
        FlashSqlite::charge_cpu_ns(self, ns)
    }

    fn flash(&self) -> Option<FlashSnapshot> {
        let files = self.counters();
        let device = self.device_counters();
        Some(FlashSnapshot {
            host_reads: files.host_read_pages,
            host_writes: files.host_write_pages,
            flash_programs: device.page_programs + device.reprograms + device.copybacks,
            flash_erases: device.erases,
            gc_page_migrations: files.ftl.gc_page_migrations,
            gc_erases: files.ftl.gc_erases,
            remaps: files.ftl.remaps,
            gc_lock_migrations: files.ftl.gc_lock_migrations,
        })
    }

    fn precondition(&mut self, free_share: f64, rng: &mut ChaCha8Rng) -> Result<(), String> {
        self.age(free_share, rng).map(|_| ()).map_err(|e| format!("aging the device: {e}"))
    }

    fn device_memory_bytes(&self) -> Option<u64> {
        Some(FlashSqlite::device_memory_bytes(self))
    }

    fn mapping_memory_bytes(&self) -> Option<u64> {
        Some(FlashSqlite::mapping_memory_bytes(self))
    }

    fn reset_io_latency(&self) {
        FlashSqlite::reset_io_latency(self)
    }

    fn io_latency(&self) -> Option<(Percentiles, Percentiles)> {
        let latency = FlashSqlite::io_latency(self);
        Some((latency.reads.percentiles(), latency.writes.percentiles()))
    }
}

/// Who makes SQLite's transactions atomic on flash: the NoLgn-FTL paper's three
/// systems (§4.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FlashJournal {
    /// SQLite's own WAL through the file layer.
    BaseWal,
    /// WAL frames page-aligned on flash, checkpoints by remapping (page FTL).
    SwWal,
    /// No log: NoLgn-FTL's transactions (nolgn FTL); `group_pages` page writes per FTL
    /// commit under NORMAL.
    Nolgn,
}

impl FlashJournal {
    pub fn name(self) -> &'static str {
        match self {
            FlashJournal::BaseWal => "base-wal",
            FlashJournal::SwWal => "sw-wal",
            FlashJournal::Nolgn => "nolgn",
        }
    }

    /// The instance's journal.
    pub fn sqlite_flash(self, group_pages: u32) -> Journal {
        match self {
            FlashJournal::BaseWal => Journal::Sqlite,
            FlashJournal::SwWal => Journal::SwWal,
            FlashJournal::Nolgn => Journal::Nolgn { group_pages },
        }
    }
}

/// One SQLite run on a fresh emulated device: everything that decides its result
/// (`bench --engine sqlite --storage ftl:KIND` as a serialisable config).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FlashRunConfig {
    /// The registered SQLite workload and its parameters.
    pub workload: WorkloadConfig,
    pub journal: FlashJournal,
    /// NoLgn under NORMAL: SQLite page writes per FTL commit (the paper: 1,000).
    pub group_pages: u32,
    /// The FTL's name (`page`, `nolgn`, …).
    pub ftl: String,
    pub device: DeviceConfig,
    pub synchronous: Synchronous,
    /// Age the device first until this share is free.
    pub free_space: Option<FreeSpace>,
    pub seed: u64,
    /// Simulated CPU time per SQL statement.
    pub cpu_ns_per_statement: u64,
    /// The file layer's write-back page cache, in logical pages.
    pub page_cache_pages: usize,
    /// Clean pages the file layer keeps in RAM after a write-back or read, as Linux's
    /// page cache does (0: none, every other read goes to flash).
    #[serde(default = "default_clean_cache_pages")]
    pub clean_cache_pages: usize,
    /// The host I/O stack under SQLite's files.
    #[serde(default)]
    pub host_stack: HostStack,
}

impl Default for FlashRunConfig {
    fn default() -> Self {
        let run = SqliteRunConfig::default();
        FlashRunConfig {
            workload: WorkloadConfig { name: "sqlite-bench".into(), params: Default::default() },
            journal: FlashJournal::BaseWal,
            group_pages: 1_000,
            ftl: "page".into(),
            device: DeviceConfig { preset: "femu".into(), ..Default::default() },
            synchronous: run.synchronous,
            free_space: None,
            seed: run.seed,
            cpu_ns_per_statement: run.cpu_ns_per_statement,
            page_cache_pages: sqlite_flash::DEFAULT_CACHE_PAGES,
            clean_cache_pages: sqlite_flash::DEFAULT_CACHE_PAGES,
            host_stack: HostStack::default(),
        }
    }
}

fn default_clean_cache_pages() -> usize {
    sqlite_flash::DEFAULT_CACHE_PAGES
}

impl FlashRunConfig {
    /// The FTL, and the journal's fit with it; the workload's parameters.
    pub fn check(&self) -> Result<FtlKind, String> {
        let kind = FtlKind::parse(&self.ftl).ok_or_else(|| format!("ftl: unknown FTL {}", quote(&self.ftl)))?;
        match (self.journal, kind) {
            (FlashJournal::Nolgn, k) if k != FtlKind::Nolgn => {
                return Err(format!("journal nolgn needs the nolgn FTL (got {})", k.name()))
            }
            (FlashJournal::SwWal, k) if k != FtlKind::Page => {
                return Err(format!("journal sw-wal needs the page FTL (got {})", k.name()))
            }
            _ => {}
        }
        if self.device.image.is_some() {
            return Err("device.image: a SQLite run keeps its device in memory".into());
        }
        super::find(&self.workload.name).and_then(|w| w.configure(&self.workload.params)).map_err(|e| e.to_string())?;
        let geometry = self.device.geometry().map_err(|e| e.to_string())?;
        self.device.check_footprint(&geometry).map_err(|e| e.to_string())?;
        Ok(kind)
    }

    /// Creates the device and the instance, and runs the workload.
    pub fn run(&self, progress: &mut dyn FnMut(u64, u64) -> Control) -> Result<SqliteResult, String> {
        let kind = self.check()?;
        let geometry = self.device.geometry().map_err(|e| e.to_string())?;
        let device = self.device.create(geometry).map_err(|e| e.to_string())?;
        let options = FlashSqliteOptions {
            statement_cpu_ns: 0,
            journal: self.journal.sqlite_flash(self.group_pages),
            page_cache_pages: self.page_cache_pages,
            clean_cache_pages: self.clean_cache_pages,
            host_stack: self.host_stack,
            ..FlashSqliteOptions::default()
        };
        let mut sqlite = FlashSqlite::create(device, &FtlConfig::new(kind), options)
            .map_err(|e| format!("ftl:{}: {e}", kind.name()))?;
        let run = SqliteRunConfig {
            seed: self.seed,
            cpu_ns_per_statement: self.cpu_ns_per_statement,
            synchronous: self.synchronous,
            free_space: self.free_space,
            check: false,
            cache_share: None,
        };
        // SQLite reports a flash error as "disk I/O error"; the flash layer's own words
        // (a page budget reached, a power cut) say what happened.
        run_registered(&mut sqlite, &self.workload.name, &self.workload.params, &run, progress).map_err(
            |e| match sqlite.last_io_error() {
                Some(flash) if !e.contains(&flash) => format!("{e}: {flash}"),
                _ => e,
            },
        )
    }
}
