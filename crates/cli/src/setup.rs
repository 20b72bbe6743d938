//! Device and region options shared by the flash commands, turning them into a
//! formatted [`Flash`], and the range-checked value parsers of every command's
//! numeric flags (clap names the flag; the parsers name the allowed range).
//!
//! The device flags are checked by the experiment config's device check
//! (`workloads::config::DeviceConfig`), the one every front-end uses, and its errors
//! spelled as these flags ([`device_flag`]).
//!
//! Invariant: no device is allocated before its memory footprint has been checked
//! against the memory available (or `--max-memory`), so a mistyped geometry is refused
//! with its size instead of exhausting the machine.

use clap::Args;
use flash::{Flash, GcConfig, IpaMode, RegionSpec, VictimPolicy, WearConfig};
use nand::{Device, Geometry, MemoryStorage, Storage, SyncMode};
use std::path::PathBuf;
use workloads::config::{ConfigError, DeviceConfig};
use workloads::limits::quote;

/// A float parser accepting `lo..=hi`, or the open interval when `open` is set at an end.
fn float_in(s: &str, lo: f64, hi: f64, lo_open: bool, hi_open: bool) -> Result<f64, String> {
    let v: f64 = s.parse().map_err(|_| format!("{} is not a number", quote(s)))?;
    let above = if lo_open { v > lo } else { v >= lo };
    let below = if hi_open { v < hi } else { v <= hi };
    if above && below {
        Ok(v)
    } else {
        let (l, h) = (if lo_open { '(' } else { '[' }, if hi_open { ')' } else { ']' });
        Err(format!("{} is outside the allowed range {l}{lo}, {hi}{h}", quote(s)))
    }
}

/// A share in [0, 1].
pub fn share(s: &str) -> Result<f64, String> {
    float_in(s, 0.0, 1.0, false, false)
}

/// A share in [0, 1): a spare factor.
pub fn spare_share(s: &str) -> Result<f64, String> {
    float_in(s, 0.0, 1.0, false, true)
}

/// A share in (0, 1]: a buffer size relative to the database.
pub fn positive_share(s: &str) -> Result<f64, String> {
    float_in(s, 0.0, 1.0, true, false)
}

/// A number strictly between 0 and 1 (the Zipf skew).
pub fn open_unit(s: &str) -> Result<f64, String> {
    float_in(s, 0.0, 1.0, true, true)
}

/// `4096`, `64K`, `2G`: a byte count with an optional binary unit.
pub fn bytes(s: &str) -> Result<u64, String> {
    match engine::sql::parse_size(s) {
        Ok(0) => Err("must be above 0".into()),
        Ok(b) => Ok(b),
        Err(e) => Err(workloads::limits::cut_quoted(&e)),
    }
}

/// The device flag that sets a device config field (`device.chips` → `--chips`).
pub fn device_flag(field: &str) -> Option<&'static str> {
    Some(match field {
        "device" | "device.preset" => "--device",
        "device.chips" => "--chips",
        "device.blocks_per_chip" => "--blocks-per-chip",
        "device.pages_per_block" => "--pages-per-block",
        "device.page_bytes" => "--page-bytes",
        "device.host_queue_depth" => "--host-queue-depth",
        "device.max_memory_bytes" => "--max-memory",
        "device.no_data" => "--no-data",
        "device.image" => "--image",
        "device.image_sync" => "--image-sync",
        _ => return None,
    })
}

/// A device config error with its fields spelled as the device flags.
pub fn device_error(e: &ConfigError) -> String {
    e.message(&|field| device_flag(field).map_or_else(|| field.to_string(), str::to_string))
}

#[derive(Args, Debug, Clone)]
pub struct DeviceArgs {
    /// Device preset: paper-emulator, openssd-mlc, ipl-slc or femu.
    #[arg(long, default_value = "paper-emulator")]
    pub device: String,
    /// Total chips, at most the preset's (spread over at most its channels).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub chips: Option<u32>,
    /// Erase blocks per chip (default: the preset's).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1 << 24))]
    pub blocks_per_chip: Option<u32>,
    /// Pages per erase block, a whole number of wordlines (default: the preset's).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=65535))]
    pub pages_per_block: Option<u32>,
    /// Flash page data bytes, a multiple of 4 (default: the preset's).
    #[arg(long, value_parser = clap::value_parser!(u32).range(512..=nand::geometry::MAX_PAGE_BYTES as i64))]
    pub page_bytes: Option<u32>,
    /// Commands the host interface serves at once; 0 = no limit (the default, except
    /// openssd-mlc, whose board served 1).
    #[arg(long, value_parser = clap::value_parser!(u32).range(0..=65535))]
    pub host_queue_depth: Option<u32>,
    /// Memory the emulated device may take (`512M`, `8G`): one whose metadata alone is
    /// above it is refused; its page images get the rest, and a run that writes more
    /// stops with an error. Default: the memory available (MemAvailable) less a margin.
    #[arg(long, value_parser = bytes, value_name = "BYTES")]
    pub max_memory: Option<u64>,
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
    /// Spare factor (physical − logical) / physical of the region, in [0, 1).
    #[arg(long, default_value_t = 0.10, value_parser = spare_share)]
    pub over_provisioning: f64,
    /// GC victim policy: greedy or cost-benefit.
    #[arg(long, default_value = "greedy")]
    pub gc: VictimPolicy,
    /// Free blocks per chip at or below which GC runs before a host write (≥ 1).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=1 << 20))]
    pub gc_fg_blocks: u32,
    /// Free blocks per chip below which GC runs after a host write (≥ --gc-fg-blocks).
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=1 << 20))]
    pub gc_bg_blocks: u32,
    /// Static wear levelling: move cold data when a chip's erase counts spread by
    /// more than this (≥ 1). Off by default.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub static_wl: Option<u32>,
    /// IPA mode: none, slc, pslc, odd-mlc; `auto` = none without deltas, else slc on
    /// SLC devices and odd-mlc on MLC/TLC.
    #[arg(long, default_value = "auto")]
    pub ipa_mode: String,
}

impl DeviceArgs {
    /// The flags as the experiment config's device.
    pub fn config(&self) -> DeviceConfig {
        DeviceConfig {
            preset: self.device.clone(),
            chips: self.chips,
            blocks_per_chip: self.blocks_per_chip,
            pages_per_block: self.pages_per_block,
            page_bytes: self.page_bytes,
            host_queue_depth: self.host_queue_depth,
            no_data: self.no_data,
            max_memory_bytes: self.max_memory,
            image: self.image.clone(),
            ..DeviceConfig::default()
        }
    }

    pub fn geometry(&self) -> Result<Geometry, String> {
        self.config().geometry().map_err(|e| device_error(&e))
    }

    /// Refuses a device of `g` whose metadata in memory is above the memory available
    /// or `--max-memory`, naming the size and what to change.
    pub fn check_memory(&self, g: &Geometry) -> Result<(), String> {
        self.config().check_footprint(g).map_err(|e| device_error(&e))
    }

    /// A fresh device: in memory, or backed by a new image file.
    pub fn create(&self) -> Result<Device, String> {
        self.create_with_sync(SyncMode::Full)
    }

    /// [`DeviceArgs::create`] with the image's sync mode (`sql --sync`).
    pub fn create_with_sync(&self, sync: SyncMode) -> Result<Device, String> {
        let geometry = self.geometry()?;
        self.check_memory(&geometry)?;
        let budget_bytes = self.config().page_budget_bytes(&geometry);
        let storage: Box<dyn Storage> = match &self.image {
            Some(path) => {
                crate::output::check_new("--image", path)?;
                let storage = MemoryStorage::create_image_with(path, geometry, !self.no_data, sync);
                Box::new(storage.map_err(|e| e.to_string())?)
            }
            None => Box::new(MemoryStorage::with_page_budget(geometry, !self.no_data, budget_bytes)),
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
