//! The Device page's data: a finished run's device image read back, as `inspect` reads
//! one: the erase count of every block (for the heat map, chip by chip) and, on NoFTL,
//! each region's chips and page states (free, valid, invalid, trim records).
//!
//! The image is opened read-only; one that does not open is an error naming it. On an
//! FTL or IPL store the image holds no NoFTL region layout, so only the erase counts
//! are given (`regions` is empty and `note` says why).

use flash::Flash;
use nand::{BlockId, Device, ImageOptions, MemoryStorage};
use serde::Serialize;
use std::path::Path;

#[derive(Debug, Serialize)]
pub struct DeviceSnapshot {
    pub chips: u32,
    pub blocks_per_chip: u32,
    pub pages_per_block: u32,
    /// Erases of each block, chip by chip (block `b` of chip `c` at `c * blocks_per_chip + b`).
    pub erase_counts: Vec<u32>,
    pub regions: Vec<RegionPages>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// One NoFTL region's page states.
#[derive(Debug, Serialize)]
pub struct RegionPages {
    pub name: String,
    pub ipa_mode: String,
    pub chips: Vec<u32>,
    pub free_pages: u64,
    pub valid_pages: u64,
    pub invalid_pages: u64,
    pub tombstone_pages: u64,
    pub erase_min: u32,
    pub erase_max: u32,
}

/// Reads the image at `path`.
pub fn snapshot(path: &Path) -> Result<DeviceSnapshot, String> {
    let at = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
    let read_only = ImageOptions { read_only: true, ..ImageOptions::default() };
    let storage = MemoryStorage::open_image_with(path, read_only).map_err(|e| at(&e))?;
    let device = Device::new(Box::new(storage));
    let g = device.geometry().clone();
    let erase_counts: Vec<u32> = (0..g.total_blocks()).map(|b| device.storage().erase_count(BlockId(b))).collect();
    let mut snapshot = DeviceSnapshot {
        chips: g.chips(),
        blocks_per_chip: g.blocks_per_chip,
        pages_per_block: g.pages_per_block,
        erase_counts,
        regions: Vec::new(),
        note: None,
    };
    if device.storage().config_area().is_empty() {
        snapshot.note = Some("no region layout stored".into());
        return Ok(snapshot);
    }
    let flash = match Flash::open(device, 0) {
        Ok((flash, _)) => flash,
        Err(e) => {
            snapshot.note = Some(format!("no NoFTL region layout (a conventional FTL or IPL store): {e}"));
            return Ok(snapshot);
        }
    };
    for region in flash.regions() {
        let Some(id) = flash.region_id(region.name()) else { continue };
        let o = flash.occupancy(id);
        let w = region.wear();
        snapshot.regions.push(RegionPages {
            name: region.name().to_string(),
            ipa_mode: region.spec().ipa_mode.name().to_string(),
            chips: region.chips().to_vec(),
            free_pages: o.free_pages,
            valid_pages: o.valid_pages - o.tombstone_pages.min(o.valid_pages),
            invalid_pages: o.invalid_pages,
            tombstone_pages: o.tombstone_pages,
            erase_min: w.pe_min,
            erase_max: w.pe_max,
        });
    }
    Ok(snapshot)
}
