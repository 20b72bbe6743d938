//! Shared test setup: a small SLC device.

use nand::{CellType, Device, Geometry, Latencies, MemoryStorage};

pub fn geometry(cell: CellType) -> Geometry {
    Geometry {
        channels: 2,
        chips_per_channel: 4,
        blocks_per_chip: 48,
        pages_per_block: 32,
        page_bytes: 4096,
        oob_bytes: 128,
        cell,
        nop: 4,
        endurance: 1_000_000,
        latencies: Latencies::mlc_typical(),
    }
}

pub fn device() -> Device {
    Device::new(Box::new(MemoryStorage::new(geometry(CellType::Slc), true)))
}
