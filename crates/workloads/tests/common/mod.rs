//! Shared test setup: a four-chip SLC device with 4 KiB pages.

use nand::{CellType, Geometry, Latencies};

pub fn geometry(blocks_per_chip: u32, pages_per_block: u32) -> Geometry {
    Geometry {
        channels: 2,
        chips_per_channel: 2,
        blocks_per_chip,
        pages_per_block,
        page_bytes: 4096,
        oob_bytes: 128,
        cell: CellType::Slc,
        nop: 4,
        endurance: 1_000_000,
        latencies: Latencies::mlc_typical(),
    }
}
