//! What a region is asked to be: its size limits, IPA mode, spare space and policies.

use crate::policy::VictimPolicy;
use nand::{CellType, PageType};
use serde::{Deserialize, Serialize};

/// How a region uses its pages for in-place appends (IPA paper §4, appendix C).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum IpaMode {
    /// No appends; every write is out-of-place.
    None,
    /// SLC flash: appends on every page.
    Slc,
    /// MLC/TLC used as pseudo-SLC: only LSB pages are written (half or a third of the
    /// capacity), and all of them take appends.
    Pslc,
    /// MLC/TLC at full capacity: appends only on LSB pages; other pages are written
    /// out-of-place only.
    OddMlc,
}

impl IpaMode {
    pub fn name(self) -> &'static str {
        match self {
            IpaMode::None => "none",
            IpaMode::Slc => "slc",
            IpaMode::Pslc => "pslc",
            IpaMode::OddMlc => "odd-mlc",
        }
    }

    /// Whether the mode fits the device's cells; the message says why not.
    pub fn check_cells(self, cell: CellType) -> Result<(), String> {
        let ok = match self {
            IpaMode::None => true,
            IpaMode::Slc => cell == CellType::Slc,
            IpaMode::Pslc | IpaMode::OddMlc => cell != CellType::Slc,
        };
        if ok {
            Ok(())
        } else {
            Err(format!(
                "IPA mode {} needs {} cells, the device has {} cells",
                self.name(),
                if self == IpaMode::Slc { "SLC" } else { "MLC or TLC" },
                cell.name()
            ))
        }
    }

    /// Whether pages of this type are written at all.
    pub fn uses_page(self, page_type: PageType) -> bool {
        self != IpaMode::Pslc || page_type == PageType::Lsb
    }

    /// Whether pages of this type take appends.
    pub fn appends_to(self, page_type: PageType) -> bool {
        match self {
            IpaMode::None => false,
            IpaMode::Slc | IpaMode::Pslc => true,
            IpaMode::OddMlc => page_type == PageType::Lsb,
        }
    }
}

impl std::str::FromStr for IpaMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "none" => Ok(IpaMode::None),
            "slc" => Ok(IpaMode::Slc),
            "pslc" => Ok(IpaMode::Pslc),
            "odd-mlc" => Ok(IpaMode::OddMlc),
            other => Err(format!("unknown IPA mode `{other}` (expected none, slc, pslc or odd-mlc)")),
        }
    }
}

/// When and how GC runs, per chip.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GcConfig {
    pub policy: VictimPolicy,
    /// A chip whose free blocks drop to this many collects before it takes a new host
    /// block; the host write waits for it.
    pub foreground_free_blocks: u32,
    /// Below this many free blocks a chip collects one victim after each host write.
    pub background_free_blocks: u32,
}

impl Default for GcConfig {
    fn default() -> Self {
        GcConfig { policy: VictimPolicy::Greedy, foreground_free_blocks: 2, background_free_blocks: 4 }
    }
}

/// Wear levelling. Dynamic levelling (new blocks come least-worn first) is always on.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct WearConfig {
    /// Static levelling: when a chip's erase counts spread by more than this, the
    /// least-worn full block is collected so its cold data moves. `None` turns it off.
    pub static_threshold: Option<u32>,
}

/// A region request, as given by `CREATE REGION` or the CLI.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RegionSpec {
    pub name: String,
    /// Cap on the logical capacity in bytes.
    pub max_size_bytes: Option<u64>,
    pub max_chips: Option<u32>,
    pub max_channels: Option<u32>,
    pub ipa_mode: IpaMode,
    /// Spare factor: (physical − logical) / physical.
    pub over_provisioning: f64,
    #[serde(default)]
    pub gc: GcConfig,
    #[serde(default)]
    pub wear: WearConfig,
}

impl RegionSpec {
    /// A region over every free chip with the paper's 10% over-provisioning.
    pub fn new(name: &str, ipa_mode: IpaMode) -> Self {
        RegionSpec {
            name: name.to_string(),
            max_size_bytes: None,
            max_chips: None,
            max_channels: None,
            ipa_mode,
            over_provisioning: 0.10,
            gc: GcConfig::default(),
            wear: WearConfig::default(),
        }
    }

    /// Checks the numbers that do not depend on the device.
    pub fn validate(&self) -> Result<(), String> {
        if self.name.is_empty() {
            return Err("region name is empty".into());
        }
        if !(0.0..1.0).contains(&self.over_provisioning) || self.over_provisioning.is_nan() {
            return Err(format!(
                "region {}: over-provisioning {} must be in [0, 1)",
                self.name, self.over_provisioning
            ));
        }
        if self.gc.foreground_free_blocks < 1 {
            return Err(format!("region {}: foreground GC threshold must be at least 1 free block", self.name));
        }
        if self.gc.background_free_blocks < self.gc.foreground_free_blocks {
            return Err(format!(
                "region {}: background GC threshold ({}) is below the foreground one ({})",
                self.name, self.gc.background_free_blocks, self.gc.foreground_free_blocks
            ));
        }
        for (what, v) in [("MAX_CHIPS", self.max_chips), ("MAX_CHANNELS", self.max_channels)] {
            if v == Some(0) {
                return Err(format!("region {}: {what} must be at least 1", self.name));
            }
        }
        if self.max_size_bytes == Some(0) {
            return Err(format!("region {}: MAX_SIZE must be above 0", self.name));
        }
        Ok(())
    }
}
