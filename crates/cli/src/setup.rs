//! Device and region options shared by the flash commands, and turning them into a
//! formatted [`Flash`].

use clap::Args;
use flash::{Flash, GcConfig, IpaMode, RegionSpec, VictimPolicy, WearConfig};
use nand::{Device, Geometry, GeometryOverrides, MemoryStorage, Storage};
use std::path::PathBuf;

#[derive(Args, Debug, Clone)]
pub struct DeviceArgs {
    /// Device preset: paper-emulator, openssd-mlc, ipl-slc or femu.
    #[arg(long, default_value = "paper-emulator")]
    pub device: String,
    /// Total chips (spread over at most the preset's channels).
    #[arg(long)]
    pub chips: Option<u32>,
    #[arg(long)]
    pub blocks_per_chip: Option<u32>,
    #[arg(long)]
    pub pages_per_block: Option<u32>,
    /// Flash page data bytes.
    #[arg(long)]
    pub page_bytes: Option<u32>,
    /// Commands the host interface serves at once; 0 = no limit (the default, except
    /// openssd-mlc, whose board served 1).
    #[arg(long)]
    pub host_queue_depth: Option<u32>,
    /// Keep no page bytes (metadata only): a fast write-amplification-only mode. The
    /// bit rule cannot be checked without bytes, and the device cannot be reopened.
    #[arg(long)]
    pub no_data: bool,
    /// Persist the device to this image file (created, flushed at the end).
    #[arg(long)]
    pub image: Option<PathBuf>,
}

#[derive(Args, Debug, Clone)]
pub struct RegionArgs {
    /// Spare factor (physical − logical) / physical of the region.
    #[arg(long, default_value_t = 0.10)]
    pub over_provisioning: f64,
    /// GC victim policy: greedy or cost-benefit.
    #[arg(long, default_value = "greedy")]
    pub gc: VictimPolicy,
    /// Free blocks per chip at or below which GC runs before a host write.
    #[arg(long, default_value_t = 2)]
    pub gc_fg_blocks: u32,
    /// Free blocks per chip below which GC runs after a host write.
    #[arg(long, default_value_t = 4)]
    pub gc_bg_blocks: u32,
    /// Static wear levelling: move cold data when a chip's erase counts spread by
    /// more than this. Off by default.
    #[arg(long)]
    pub static_wl: Option<u32>,
    /// IPA mode: none, slc, pslc, odd-mlc; `auto` = none without deltas, else slc on
    /// SLC devices and odd-mlc on MLC/TLC.
    #[arg(long, default_value = "auto")]
    pub ipa_mode: String,
}

impl DeviceArgs {
    pub fn geometry(&self) -> Result<Geometry, String> {
        let base = Geometry::preset(&self.device)?;
        let mut overrides = GeometryOverrides {
            blocks_per_chip: self.blocks_per_chip,
            pages_per_block: self.pages_per_block,
            page_bytes: self.page_bytes,
            host_queue_depth: self.host_queue_depth,
            ..Default::default()
        };
        if let Some(chips) = self.chips {
            if chips == 0 {
                return Err("--chips must be at least 1".into());
            }
            let channels = (1..=base.channels.min(chips)).rev().find(|c| chips % c == 0).unwrap_or(1);
            overrides.channels = Some(channels);
            overrides.chips_per_channel = Some(chips / channels);
        }
        overrides.apply(base).map_err(|e| format!("--device {}: {e}", self.device))
    }

    /// A fresh device: in memory, or backed by a new image file.
    pub fn create(&self) -> Result<Device, String> {
        let geometry = self.geometry()?;
        let storage: Box<dyn Storage> = match &self.image {
            Some(path) => {
                Box::new(MemoryStorage::create_image(path, geometry, !self.no_data).map_err(|e| e.to_string())?)
            }
            None => Box::new(MemoryStorage::new(geometry, !self.no_data)),
        };
        Ok(Device::new(storage))
    }
}

impl RegionArgs {
    pub fn spec(&self, geometry: &Geometry, wants_deltas: bool) -> Result<RegionSpec, String> {
        let ipa_mode = match self.ipa_mode.as_str() {
            "auto" if !wants_deltas => IpaMode::None,
            "auto" if geometry.cell == nand::CellType::Slc => IpaMode::Slc,
            "auto" => IpaMode::OddMlc,
            other => other.parse().map_err(|e| format!("--ipa-mode: {e}"))?,
        };
        let spec = RegionSpec {
            over_provisioning: self.over_provisioning,
            gc: GcConfig {
                policy: self.gc,
                foreground_free_blocks: self.gc_fg_blocks,
                background_free_blocks: self.gc_bg_blocks,
            },
            wear: WearConfig { static_threshold: self.static_wl },
            ..RegionSpec::new("bench", ipa_mode)
        };
        spec.validate()?;
        Ok(spec)
    }
}

/// A formatted device with one region over all its chips.
pub fn format(device: &DeviceArgs, region: &RegionArgs, wants_deltas: bool) -> Result<Flash, String> {
    let spec = region.spec(&device.geometry()?, wants_deltas)?;
    let dev = device.create()?;
    Flash::format(dev, vec![spec]).map_err(|e| {
        // Leave no unformatted image behind.
        if let Some(path) = &device.image {
            let _ = std::fs::remove_file(path);
        }
        e.to_string()
    })
}
