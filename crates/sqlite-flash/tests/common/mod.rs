//! Shared by the file-layer tests: a small formatted store.

use flash::ftl::{format, FtlConfig, FtlKind};
use nand::{Device, Geometry, MemoryStorage};
use sqlite_flash::FileStore;

/// An empty file store on a page FTL over 2 chips of 64 blocks of 32 4-KB pages.
pub fn small_store() -> FileStore {
    let mut g = Geometry::paper_emulator();
    g.channels = 2;
    g.chips_per_channel = 1;
    g.blocks_per_chip = 64;
    g.pages_per_block = 32;
    g.page_bytes = 4096;
    let ftl = format(Device::new(Box::new(MemoryStorage::new(g, true))), &FtlConfig::new(FtlKind::Page)).unwrap();
    FileStore::format(ftl, 0).unwrap()
}
