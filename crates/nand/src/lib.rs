//! nand — the NAND flash device model that everything in DeltaFlash stands on.
//!
//! Physics first: erased cells read 0xFF and a program can only clear bits; pages count
//! their programs against a per-page-type limit (NOP); first programs within a block go
//! in page order; MLC/TLC wordlines carry LSB/(CSB/)MSB pages with their own latencies;
//! erases count P/E cycles against an endurance. Every operation is timed on per-chip
//! and per-channel timelines in simulated nanoseconds passed in by the caller. Power can
//! be cut at any mutating operation, tearing it deterministically from a seed.
//!
//! Layout: [`geometry`] (shape and presets), [`timing`] (latencies, timelines),
//! [`storage`] (the persistence seam and the sparse memory store), [`image`] (image
//! files, written through; `legacy` reads the old whole-file versions), [`image_io`]
//! (the image's file operations, a seam) and [`image_faults`] (disk errors and lost
//! unsynced writes under it), [`fault`] (power cuts), [`device`] (rules and timing),
//! `durable` (the durable point: which pages a power cut may have torn).

#![forbid(unsafe_code)]

mod cells;
pub mod device;
mod durable;
pub mod error;
pub mod fault;
pub mod geometry;
pub mod image;
pub mod image_faults;
mod image_format;
pub mod image_io;
mod legacy;
mod pool;
pub mod storage;
pub mod timing;

pub use device::{Device, DeviceCounters, PageRead, ScanRead};
pub use error::Error;
pub use fault::{FaultyStorage, TornOp};
pub use geometry::{BlockId, CellType, Geometry, GeometryOverrides, Latencies, PageType, Ppn, PRESET_NAMES};
pub use image::{ImageLock, ImageOptions};
pub use image_faults::{FailingFile, FileFault, LossyFile, PowerSwitch};
pub use image_format::{ImageError, SyncMode};
pub use image_io::{FileLayer, ImageIo};
pub use storage::{MemoryFootprint, MemoryStorage, Span, Storage, SyncPoint};
pub use timing::{OpTiming, SimTime, Timelines};
