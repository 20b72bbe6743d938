//! SQLite on emulated flash as a [`SqliteHost`]: [`sqlite_flash::FlashSqlite`] (the VFS
//! over a conventional FTL) seen through the trait the workloads run on. Its clock
//! advances by every I/O's device latency as well as by the CPU time charged; the
//! runner charges the per-statement cost, so the instance is opened with none of its own.
//!
//! Counters: host reads and writes are the logical pages the file layer sent to the
//! FTL; programs and erases are the NAND device's own (host pages, GC copies, the file
//! table), so write amplification covers everything the flash did.

use super::{FlashSnapshot, SqliteHost};
use nand::SimTime;
use rand_chacha::ChaCha8Rng;
use rusqlite::Connection;
use sqlite_flash::FlashSqlite;

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
}
