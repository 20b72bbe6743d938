//! The Device page's data: a finished run's device image read back, as `inspect` reads
//! one: the erase count of every block (for the heat map, chip by chip), the page
//! states of every chip, and, on NoFTL, each region's chips and page states (free,
//! valid, invalid, trim records), and each block's valid, appended and invalid pages
//! (the heat map's hover).
//!
//! Per chip the states add up to the chip's pages. On NoFTL a region's chips count
//! free, valid, appended (live with an in-place append), invalid and unused pages
//! (`flash::Region::chip_pages`). On an FTL or IPL store the image holds no NoFTL region
//! layout and the FTL's map is not read, so every chip's pages are only free or
//! programmed (valid or invalid, not told apart), none appended: an FTL has no
//! in-place append. `regions` is then empty and `note` says why.
//!
//! The image is opened read-only; one that does not open is an error naming it.

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
    /// Page states of each chip, chip 0 first.
    pub chip_pages: Vec<ChipStates>,
    /// Valid, appended and invalid pages of each block, indexed as `erase_counts`; empty
    /// without a NoFTL region layout, and zero in blocks no region covers.
    pub block_pages: BlockPages,
    pub regions: Vec<RegionPages>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// One chip's pages by state: a NoFTL region's five (`flash::ChipPages`, serialized
/// as its fields) plus the pages programmed outside a region; the six add up to the
/// chip's pages.
#[derive(Debug, Default, Serialize)]
pub struct ChipStates {
    #[serde(flatten)]
    pub region: flash::ChipPages,
    /// Outside a NoFTL region (an FTL or IPL store): programmed pages, valid or invalid.
    pub programmed_pages: u64,
}

impl From<flash::ChipPages> for ChipStates {
    fn from(region: flash::ChipPages) -> ChipStates {
        ChipStates { region, programmed_pages: 0 }
    }
}

/// Each chip's pages, free or programmed, from the program counts alone.
fn programmed_per_chip(device: &Device) -> Vec<ChipStates> {
    let g = device.geometry();
    (0..g.chips())
        .map(|chip| {
            let pages =
                (0..g.blocks_per_chip).flat_map(|b| (0..g.pages_per_block).map(move |p| g.ppn(g.block_id(chip, b), p)));
            let programmed = pages.filter(|&ppn| device.storage().program_count(ppn) > 0).count() as u64;
            let total = g.blocks_per_chip as u64 * g.pages_per_block as u64;
            let region = flash::ChipPages { chip, free_pages: total - programmed, ..Default::default() };
            ChipStates { region, programmed_pages: programmed }
        })
        .collect()
}

/// Per block page states, indexed as [`DeviceSnapshot::erase_counts`].
#[derive(Debug, Default, Serialize)]
pub struct BlockPages {
    pub valid: Vec<u32>,
    pub appended: Vec<u32>,
    pub invalid: Vec<u32>,
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
        chip_pages: programmed_per_chip(&device),
        block_pages: BlockPages::default(),
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
            snapshot.note = Some(match e {
                // "the device holds a conventional FTL (page), not NoFTL regions"
                flash::Error::WrongStore { .. } => e.to_string(),
                e => format!("no NoFTL region layout: {e}"),
            });
            return Ok(snapshot);
        }
    };
    let blocks = g.total_blocks() as usize;
    let b = &mut snapshot.block_pages;
    (b.valid, b.appended, b.invalid) = (vec![0; blocks], vec![0; blocks], vec![0; blocks]);
    for region in flash.regions() {
        let Some(id) = flash.region_id(region.name()) else { continue };
        for c in flash.chip_pages(id) {
            if let Some(slot) = snapshot.chip_pages.get_mut(c.chip as usize) {
                *slot = c.into();
            }
        }
        for (k, block) in flash.block_pages(id).into_iter().flatten().enumerate() {
            let at = block.chip as usize * g.blocks_per_chip as usize + k % g.blocks_per_chip as usize;
            let b = &mut snapshot.block_pages;
            if at < blocks {
                b.valid[at] = block.valid_pages as u32;
                b.appended[at] = block.appended_pages as u32;
                b.invalid[at] = block.invalid_pages as u32;
            }
        }
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
