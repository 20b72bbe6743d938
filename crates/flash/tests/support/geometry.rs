//! The small device the flash tests run on: a few SLC chips, one program per page,
//! endurance out of the way. A test changes what it is about with struct update
//! syntax (`Geometry { nop: 4, ..small_geometry(512) }`).

use nand::{CellType, Geometry, Latencies};

/// Two chips on two channels, 16 blocks of 32 pages each, 64 OOB bytes per page.
pub fn small_geometry(page_bytes: u32) -> Geometry {
    Geometry {
        channels: 2,
        chips_per_channel: 1,
        blocks_per_chip: 16,
        pages_per_block: 32,
        page_bytes,
        oob_bytes: 64,
        cell: CellType::Slc,
        nop: 1,
        endurance: 1_000_000,
        latencies: Latencies::mlc_typical(),
    }
}

/// Four chips of 12 blocks of 8 pages, 96 OOB bytes and four programs per page: room
/// for in-place appends.
#[allow(dead_code)] // each test binary compiles this module and uses one of the two
pub fn append_geometry(cell: CellType, page_bytes: u32) -> Geometry {
    Geometry {
        chips_per_channel: 2,
        blocks_per_chip: 12,
        pages_per_block: 8,
        oob_bytes: 96,
        cell,
        nop: 4,
        ..small_geometry(page_bytes)
    }
}
