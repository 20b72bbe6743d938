//! An experiment's configuration: everything one run needs (device, storage, engine
//! options, workload and its parameters, driver, seed), as TOML or JSON. Every field
//! has a default, so a file names only what it changes; unknown fields are refused.
//!
//! `ExperimentConfig::resolve` is the one place a config is checked: each number
//! against its range in [`crate::limits`], names against what exists (device presets,
//! IPA modes, registered workloads and their tables), and the device-dependent defaults
//! (DB page size, log chips) are filled in, so the resolved config alone reproduces
//! the run. Errors name the field (`driver.sim_time_s`) and the allowed range.
//!
//! The device is checked here for every front-end (the command line's device flags,
//! `bench`, `compare`, `sweep`, the dashboard, the Python package): the chip count
//! against the preset ([`DeviceConfig::geometry`]) and the memory the emulated device
//! needs before any page is written against `max_memory_bytes` or MemAvailable
//! ([`DeviceConfig::check_footprint`]), so a mistyped geometry is refused with its size
//! before anything is allocated; the rest of that memory bounds its page images while
//! it runs ([`DeviceConfig::page_budget_bytes`]).

pub use crate::config_error::{ConfigError, Footprint};
use crate::limits;
use crate::params::{Configured, Params};
use crate::precondition::Precondition;
use crate::registry;
use engine::buffer::{CleanerPolicy, Replacement};
pub use engine::heap::HeapSpace;
use engine::{IpaScheme, JournalKind};
use flash::ftl::FtlConfig;
use nand::{CellType, Geometry, GeometryOverrides};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::PathBuf;

/// Everything one run needs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ExperimentConfig {
    /// Seeds every random choice: the same config gives the same result.
    pub seed: u64,
    pub device: DeviceConfig,
    pub storage: StorageConfig,
    pub engine: EngineConfig,
    pub workload: WorkloadConfig,
    pub driver: DriverOptions,
}

impl Default for ExperimentConfig {
    fn default() -> Self {
        ExperimentConfig {
            seed: 1,
            device: DeviceConfig::default(),
            storage: StorageConfig::default(),
            engine: EngineConfig::default(),
            workload: WorkloadConfig::default(),
            driver: DriverOptions::default(),
        }
    }
}

/// The emulated device: a preset and what to change in it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DeviceConfig {
    /// paper-emulator, openssd-mlc, ipl-slc or femu.
    pub preset: String,
    /// Total chips, spread over at most the preset's channels.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chips: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blocks_per_chip: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pages_per_block: Option<u32>,
    /// Flash page data bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub page_bytes: Option<u32>,
    /// Commands the host interface serves at once (0: no limit).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_queue_depth: Option<u32>,
    /// Channel transfer time per byte in picoseconds, in place of the preset's (none:
    /// the preset's bus).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transfer_ps_per_byte: Option<u64>,
    /// Keep no page bytes, only metadata.
    pub no_data: bool,
    /// The memory the emulated device may take (none: the memory available,
    /// MemAvailable, less a margin): a device whose bookkeeping is above it is refused
    /// up front; its page images get the rest, and a run that needs more stops there.
    /// An image-backed device is checked for its metadata only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_memory_bytes: Option<u64>,
    /// Persist the device to this new image file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image: Option<PathBuf>,
    /// When the image is synced to the host's disk.
    #[serde(skip_serializing_if = "ImageSync::is_off")]
    pub image_sync: ImageSync,
}

/// When a run's image file is `fdatasync`ed ([`nand::SyncMode`]). Off by default: a
/// benchmark measures simulated time, and syncing each commit to the host's disk only
/// costs wall time (a killed process still loses nothing; a host crash may).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ImageSync {
    #[default]
    Off,
    Normal,
    Full,
}

impl ImageSync {
    fn is_off(&self) -> bool {
        *self == ImageSync::Off
    }

    /// `off`, `normal` or `full`.
    pub fn parse(text: &str) -> Result<ImageSync, String> {
        match text {
            "off" => Ok(ImageSync::Off),
            "normal" => Ok(ImageSync::Normal),
            "full" => Ok(ImageSync::Full),
            _ => Err(format!("{} is not an image sync mode: off, normal or full", limits::quote(text))),
        }
    }
}

impl From<ImageSync> for nand::SyncMode {
    fn from(s: ImageSync) -> nand::SyncMode {
        match s {
            ImageSync::Off => nand::SyncMode::Off,
            ImageSync::Normal => nand::SyncMode::Normal,
            ImageSync::Full => nand::SyncMode::Full,
        }
    }
}

impl Default for DeviceConfig {
    fn default() -> Self {
        DeviceConfig {
            preset: "paper-emulator".into(),
            chips: None,
            blocks_per_chip: None,
            pages_per_block: None,
            page_bytes: None,
            host_queue_depth: None,
            transfer_ps_per_byte: None,
            no_data: false,
            max_memory_bytes: None,
            image: None,
            image_sync: ImageSync::Off,
        }
    }
}

impl DeviceConfig {
    /// The preset with the overrides applied; the chips at most the preset's channels
    /// × chips per channel.
    pub fn geometry(&self) -> Result<Geometry, ConfigError> {
        let base = Geometry::preset(&self.preset).map_err(|_| {
            let names = nand::geometry::PRESET_NAMES.join(", ");
            ConfigError::field(
                "device.preset",
                format!("unknown device preset {} (expected one of: {names})", limits::quote(&self.preset)),
            )
        })?;
        let mut overrides = GeometryOverrides {
            blocks_per_chip: self.blocks_per_chip,
            pages_per_block: self.pages_per_block,
            page_bytes: self.page_bytes,
            host_queue_depth: self.host_queue_depth,
            transfer_ps_per_byte: self.transfer_ps_per_byte,
            ..Default::default()
        };
        if let Some(chips) = self.chips {
            let most = base.channels * base.chips_per_channel;
            if !(1..=most).contains(&chips) {
                return Err(ConfigError::field(
                    "device.chips",
                    format!(
                        "must be in 1..={most} on the {} preset ({} channels × {} chips), got {chips}",
                        self.preset, base.channels, base.chips_per_channel
                    ),
                ));
            }
            overrides.set_chips(&base, chips);
        }
        overrides.apply(base).map_err(|e| ConfigError::field("device", format!("{}: {e}", self.preset)))
    }

    /// Whether the device's page images live in its page pool, under a budget: an
    /// in-memory device that keeps data. A metadata-only device has none; an
    /// image-backed one is checked for its metadata only and has no budget.
    fn budgets_pages(&self) -> bool {
        !self.no_data && self.image.is_none()
    }

    /// Refuses a device of `g` whose bookkeeping alone (what it takes before any page
    /// image, [`limits::bookkeeping_bytes`]) is above `max_memory_bytes` or the memory
    /// available less a margin ([`limits::device_memory_limit_bytes`]). The rest of that
    /// limit is the budget of its page images ([`DeviceConfig::page_budget_bytes`]), so
    /// a device larger than memory runs as long as what it writes fits.
    pub fn check_footprint(&self, g: &Geometry) -> Result<(), ConfigError> {
        let need_bytes = limits::bookkeeping_bytes(g, self.budgets_pages());
        let Some(limit_bytes) = limits::device_memory_limit_bytes(self.max_memory_bytes) else {
            return Ok(());
        };
        if need_bytes <= limit_bytes {
            return Ok(());
        }
        Err(ConfigError::Footprint(Footprint {
            chips: g.chips(),
            blocks_per_chip: g.blocks_per_chip,
            pages_per_block: g.pages_per_block,
            page_bytes: g.page_bytes,
            keeps_data: self.budgets_pages(),
            need_bytes,
            limit_bytes,
            limit_given: self.max_memory_bytes.is_some(),
        }))
    }

    /// The bytes the page images of a device of `g` may take: its memory limit less its
    /// bookkeeping (see [`DeviceConfig::check_footprint`]); `None` for a device without
    /// a page pool budget (metadata only, image-backed) or when no limit is known.
    pub fn page_budget_bytes(&self, g: &Geometry) -> Option<u64> {
        if !self.budgets_pages() {
            return None;
        }
        let limit_bytes = limits::device_memory_limit_bytes(self.max_memory_bytes)?;
        Some(limit_bytes.saturating_sub(limits::bookkeeping_bytes(g, true)))
    }

    /// [`DeviceConfig::geometry`], refused as [`DeviceConfig::check_footprint`] refuses:
    /// for whoever is about to allocate the device.
    pub fn fitting_geometry(&self) -> Result<Geometry, ConfigError> {
        let g = self.geometry()?;
        self.check_footprint(&g)?;
        Ok(g)
    }

    /// A fresh device of `geometry` (this config's): in memory, or backed by the new
    /// image file `image`, synced as `image_sync` says.
    pub fn create(&self, geometry: Geometry) -> Result<nand::Device, ConfigError> {
        let keep_data = !self.no_data;
        let storage: Box<dyn nand::Storage> = match &self.image {
            Some(path) => Box::new(
                nand::MemoryStorage::create_image_with(path, geometry, keep_data, self.image_sync.into())
                    .map_err(|e| ConfigError::field("device.image", format!("{}: {e}", path.display())))?,
            ),
            None => {
                let budget_bytes = self.page_budget_bytes(&geometry);
                Box::new(nand::MemoryStorage::with_page_budget(geometry, keep_data, budget_bytes))
            }
        };
        Ok(nand::Device::new(storage))
    }
}

/// What the engine's pages are written through.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StorageConfig {
    /// NoFTL regions: the engine places pages itself, with in-place appends (IPA).
    #[default]
    Noftl,
    /// A conventional FTL over the whole device.
    Ftl(FtlConfig),
    /// In-Page Logging on native flash (no IPA: run the engine with scheme 0x0).
    Ipl(IplStorageConfig),
}

/// The IPL store's unit split; its DB page is the engine's (`engine.db_page_bytes`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct IplStorageConfig {
    /// Blocks per erase unit.
    pub blocks_per_unit: u32,
    /// Bytes of each unit's log region (whole flash pages).
    pub log_region_bytes: u32,
    /// Bytes of a log sector (one partial program).
    pub sector_bytes: u32,
    /// A record per update of a page (IPL's in-memory log sectors), or only the page's
    /// net change at its write (`flash::IplConfig::update_records`).
    pub update_records: bool,
}

impl Default for IplStorageConfig {
    /// The IPA paper's §8.3 setting: one-block units, 8 KiB log region, 512 B sectors.
    fn default() -> Self {
        let d = flash::IplConfig::default();
        IplStorageConfig {
            blocks_per_unit: d.blocks_per_unit,
            log_region_bytes: d.log_region_bytes,
            sector_bytes: d.sector_bytes,
            update_records: d.update_records,
        }
    }
}

impl IplStorageConfig {
    /// The store's configuration for DB pages of `db_page_bytes`.
    pub fn store_config(&self, db_page_bytes: usize) -> flash::IplConfig {
        flash::IplConfig {
            blocks_per_unit: self.blocks_per_unit,
            db_page_bytes: db_page_bytes as u32,
            log_region_bytes: self.log_region_bytes,
            sector_bytes: self.sector_bytes,
            update_records: self.update_records,
        }
    }
}

impl fmt::Display for StorageConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StorageConfig::Noftl => f.write_str("noftl"),
            StorageConfig::Ftl(c) => write!(f, "ftl:{}", c.kind.name()),
            StorageConfig::Ipl(_) => f.write_str("ipl"),
        }
    }
}

/// When dirty pages are written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Eviction {
    /// A page cleaner writes the oldest dirty pages once 1/8 of the frames are dirty.
    #[default]
    Eager,
    /// Dirty pages are written when evicted (or at a checkpoint).
    NonEager,
    /// MySQL InnoDB's: a page cleaner writes the oldest dirty pages once 75% of the
    /// frames are dirty (`engine::buffer::CleanerPolicy::INNODB`).
    Innodb,
    /// Shore-MT's with the eager strategies off: its cleaner writes the oldest dirty
    /// pages once 75% of the frames are dirty
    /// (`engine::buffer::CleanerPolicy::SHORE_NON_EAGER`).
    ShoreNonEager,
}

impl Eviction {
    pub fn policy(self) -> CleanerPolicy {
        match self {
            Eviction::Eager => CleanerPolicy::EAGER,
            Eviction::NonEager => CleanerPolicy::NonEager,
            Eviction::Innodb => CleanerPolicy::INNODB,
            Eviction::ShoreNonEager => CleanerPolicy::SHORE_NON_EAGER,
        }
    }
}

/// The database's options.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EngineConfig {
    /// DB page bytes: 4096, 8192 or 16384 [default: the flash page, at least 4096].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub db_page_bytes: Option<usize>,
    /// Buffer pool size as a share of the database after loading.
    pub buffer_share: f64,
    /// After the steady-state aging, grow the pool to `buffer_share` of the database the
    /// aging's inserts grew, its cached pages kept [default: false: the share of the
    /// database as loaded, so every scheme of a setup measures with the same pool, as
    /// the papers' runs of one database did]. Not set, it stays out of a result's config.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub buffer_of_aged_database: bool,
    pub eviction: Eviction,
    /// Eager eviction only: once past its threshold the cleaner writes every dirty page,
    /// not only down to the threshold (Shore-MT "flushing dirty pages eagerly when a
    /// threshold is reached", SIGMOD'17 §8.4) [default: false]. Not set, it stays out of
    /// a result's config.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub cleaner_sweep: bool,
    /// Which frame a miss takes: clock, lru, or clean-first-clock (Shore-MT's: a clean
    /// page while one is to be had, `engine::buffer::Replacement::CleanFirstClock`)
    /// [default: clock]. Clock, it stays out of a result's config.
    #[serde(skip_serializing_if = "Replacement::is_clock")]
    pub replacement: Replacement,
    /// How heap pages make room for inserts and length-changing updates: packed (the
    /// engine's) or innodb (MySQL InnoDB's, `engine::heap::HeapSpace`) [default: packed].
    /// Packed, it stays out of a result's config.
    #[serde(skip_serializing_if = "HeapSpace::is_packed")]
    pub heap_space: HeapSpace,
    /// IPA scheme NxM of the data region (0x0: none).
    pub ipa: String,
    /// none, slc, pslc, odd-mlc, or auto (slc on SLC devices, odd-mlc otherwise).
    pub ipa_mode: String,
    /// Metadata pairs per delta-record (0: metadata bytes take the record's M pairs,
    /// M then counting the changed bytes of the whole page).
    pub v: u8,
    /// Tables (with their indexes) in the IPA region; the rest go to a region without
    /// IPA on half of the chips. Empty: every table in one IPA region.
    pub ipa_objects: Vec<String>,
    /// SQL creating the regions and tablespaces, instead of the default single IPA
    /// region; `${IPA}` stands for the run's region options. A table goes to
    /// tablespace `ts_<table>` if the SQL creates one, else to `ts_data`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schema: Option<String>,
    /// Chips of the log region [default: a quarter of the device's, at least 1]; with
    /// `log_device_mib`, the chips of the log's own device.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log_chips: Option<u32>,
    /// The write-ahead log on a device of its own, of this many MiB: `log_chips` chips of
    /// the run's preset, each with the blocks that hold its share. Its I/O is timed on
    /// that device and counted apart from the database device's. Not set, the log is a
    /// region of `log_chips` chips of the database device (and stays out of a result's
    /// config).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log_device_mib: Option<u64>,
    /// Checkpoint when this share of the log region is in use.
    pub checkpoint_log_share: f64,
    /// Commits within this many simulated µs share one log flush (0: none).
    pub group_commit_us: f64,
    /// Unforced log bytes past which full log pages are written ahead of the commit
    /// [default: the engine's, 4 MiB]. Not set, it stays out of a result's config, so
    /// the config of a run that does not use it reads as before the option existed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log_buffer_bytes: Option<u64>,
    /// aries (a write-ahead log), none (commits write their pages and sync) or nolgn
    /// (NoLgn-FTL's transactions, the only one on ftl:nolgn) [default: nolgn on
    /// ftl:nolgn, else aries].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub journal: Option<engine::JournalKind>,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            db_page_bytes: None,
            buffer_share: 0.1,
            eviction: Eviction::Eager,
            cleaner_sweep: false,
            buffer_of_aged_database: false,
            replacement: Replacement::Clock,
            heap_space: HeapSpace::Packed,
            ipa: "2x4".into(),
            ipa_mode: "auto".into(),
            v: IpaScheme::DEFAULT_V,
            ipa_objects: Vec::new(),
            schema: None,
            log_chips: None,
            log_device_mib: None,
            checkpoint_log_share: engine::DbOptions::default().checkpoint_log_share,
            group_commit_us: 0.0,
            log_buffer_bytes: None,
            journal: None,
        }
    }
}

impl EngineConfig {
    /// The page cleaner of [`EngineConfig::eviction`] and [`EngineConfig::cleaner_sweep`].
    pub fn cleaner_policy(&self) -> CleanerPolicy {
        match (self.eviction, self.cleaner_sweep) {
            (Eviction::Eager, true) => CleanerPolicy::EAGER_SWEEP,
            (eviction, _) => eviction.policy(),
        }
    }
}

/// The workload by registered name, and its parameters (see [`crate::registry`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct WorkloadConfig {
    pub name: String,
    #[serde(flatten)]
    pub params: Params,
}

impl Default for WorkloadConfig {
    fn default() -> Self {
        WorkloadConfig { name: "tpcb".into(), params: Params::new() }
    }
}

/// How the driver runs the terminals.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DriverOptions {
    /// Closed-loop terminals.
    pub terminals: usize,
    /// Simulated seconds of warm-up, not measured.
    pub warmup_s: f64,
    /// Simulated seconds measured after the warm-up.
    pub sim_time_s: f64,
    /// Simulated CPU cost per record operation.
    pub cpu_per_operation_us: f64,
    /// An interval line every this many simulated seconds (0: none).
    pub progress_interval_s: f64,
    /// Check the workload's consistency conditions after the run.
    pub check: bool,
    /// Simulated seconds into the measurement at which `switch_ddl` runs on the live
    /// database (an online `ALTER … SET IPA` mid-run); none: no switch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub switch_at_s: Option<f64>,
    /// The statements run at `switch_at_s`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub switch_ddl: Option<String>,
    /// End the measurement after this many transactions if `sim_time_s` has not
    /// ended it first; none: only the time ends it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transactions: Option<u64>,
    /// How the device is prepared before the warm-up: `none` (as loaded), `fill` (the
    /// data regions' free space written once) or `steady` (filled, then aged by the
    /// workload until GC is in steady state); see [`crate::precondition`].
    #[serde(skip_serializing_if = "Precondition::is_none")]
    pub precondition: Precondition,
}

impl Default for DriverOptions {
    fn default() -> Self {
        DriverOptions {
            terminals: 8,
            warmup_s: 10.0,
            sim_time_s: 60.0,
            cpu_per_operation_us: 10.0,
            progress_interval_s: 0.0,
            check: false,
            switch_at_s: None,
            switch_ddl: None,
            transactions: None,
            precondition: Precondition::None,
        }
    }
}

/// What a resolved config works out to, besides the config itself.
pub(crate) struct Derived {
    pub geometry: Geometry,
    pub scheme: IpaScheme,
    /// The data region's options in SQL: `IPA_MODE=slc, IPA=2x4, V=12`.
    pub region_options: String,
    pub params: Box<dyn Configured>,
    /// The geometry of the log's own device (`engine.log_device_mib`); `None` when the
    /// log is a region of the database device.
    pub log_geometry: Option<Geometry>,
}

impl ExperimentConfig {
    /// Parses TOML; a syntax or type error carries its line and column.
    pub fn from_toml(text: &str) -> Result<ExperimentConfig, ConfigError> {
        parse_toml(text)
    }

    pub fn from_json(text: &str) -> Result<ExperimentConfig, ConfigError> {
        parse_json(text)
    }

    pub fn to_toml(&self) -> Result<String, ConfigError> {
        toml::to_string(self).map_err(|e| ConfigError::field("config", e.to_string()))
    }

    /// The geometry of the log's own device (`engine.log_device_mib`); `None` when the
    /// log is a region of the database device or the config does not resolve (its
    /// run says why).
    pub fn log_device_geometry(&self) -> Option<Geometry> {
        self.resolve().ok()?.1.log_geometry
    }

    /// Checks every field and fills in the defaults that depend on the device and the
    /// workload.
    pub(crate) fn resolve(&self) -> Result<(ExperimentConfig, Derived), ConfigError> {
        let mut c = self.clone();
        let geometry = c.device.geometry()?;
        let range = |field: &str, r: limits::FloatRange, v: f64| r.check(v).map_err(|p| ConfigError::field(field, p));
        let count = |field: &str, r: limits::CountRange, v: u64| r.check(v).map_err(|p| ConfigError::field(field, p));
        let d = &c.driver;
        count("driver.terminals", limits::TERMINALS, d.terminals as u64)?;
        range("driver.warmup_s", limits::WARMUP_S, d.warmup_s)?;
        range("driver.sim_time_s", limits::SIM_TIME_S, d.sim_time_s)?;
        range("driver.cpu_per_operation_us", limits::CPU_PER_OPERATION_US, d.cpu_per_operation_us)?;
        range("driver.progress_interval_s", limits::PROGRESS_INTERVAL_S, d.progress_interval_s)?;
        if let Some(n) = d.transactions {
            count("driver.transactions", limits::TRANSACTIONS, n)?;
        }
        match (d.switch_at_s, &d.switch_ddl) {
            (Some(at), Some(_)) if !(0.0..=d.sim_time_s).contains(&at) => {
                return Err(ConfigError::field(
                    "driver.switch_at_s",
                    format!("must lie in the measured time [0, {}], got {at}", d.sim_time_s),
                ))
            }
            (Some(_), None) => return Err(ConfigError::field("driver.switch_ddl", "is needed with a switch time")),
            (None, Some(_)) => return Err(ConfigError::field("driver.switch_at_s", "is needed with switch DDL")),
            _ => {}
        }
        let e = &mut c.engine;
        range("engine.buffer_share", limits::BUFFER_SHARE, e.buffer_share)?;
        range("engine.checkpoint_log_share", limits::CHECKPOINT_LOG_SHARE, e.checkpoint_log_share)?;
        range("engine.group_commit_us", limits::GROUP_COMMIT_US, e.group_commit_us)?;
        if e.cleaner_sweep && e.eviction != Eviction::Eager {
            return Err(ConfigError::field(
                "engine.cleaner_sweep",
                "needs engine.eviction = \"eager\" (a page cleaner)",
            ));
        }
        if let Some(bytes) = e.log_buffer_bytes {
            count("engine.log_buffer_bytes", limits::LOG_BUFFER_BYTES, bytes)?;
        }
        let on_nolgn = matches!(&self.storage, StorageConfig::Ftl(f) if f.kind == flash::ftl::FtlKind::Nolgn);
        let journal = e.journal.unwrap_or(if on_nolgn { JournalKind::Nolgn } else { JournalKind::Aries });
        if on_nolgn != (journal == JournalKind::Nolgn) {
            let problem = if on_nolgn {
                format!("{}: on ftl:nolgn the engine keeps the nolgn journal (the FTL's transactions)", journal.name())
            } else {
                "nolgn is NoLgn-FTL's transactions: it needs storage ftl:nolgn".to_string()
            };
            return Err(ConfigError::field("engine.journal", problem));
        }
        e.journal = Some(journal);
        if journal != JournalKind::Aries {
            // The engine keeps no log: these would be accepted and do nothing.
            let log_only = [
                ("engine.group_commit_us", e.group_commit_us > 0.0),
                ("engine.log_buffer_bytes", e.log_buffer_bytes.is_some()),
                ("engine.log_device_mib", e.log_device_mib.is_some()),
            ];
            if let Some((field, _)) = log_only.into_iter().find(|&(_, set)| set) {
                return Err(ConfigError::field(
                    field,
                    if on_nolgn {
                        "acts on the write-ahead log, which the engine does not keep on NoLgn-FTL (its transactions make commits atomic)"
                    } else {
                        "acts on the write-ahead log, which the none journal does not keep (commits write their pages and sync)"
                    },
                ));
            }
        }
        count("engine.v", limits::V, e.v.into())?;
        let base: IpaScheme = e.ipa.parse().map_err(|p| ConfigError::field("engine.ipa", p))?;
        let scheme = IpaScheme::new(base.n, base.m, e.v).map_err(|p| ConfigError::field("engine.ipa", p))?;
        e.ipa = scheme.to_string();
        if scheme.enabled() && matches!(self.storage, StorageConfig::Ipl(_)) {
            return Err(ConfigError::field(
                "engine.ipa",
                format!("In-Page Logging logs page changes itself: run it with IPA 0x0, not {scheme}"),
            ));
        }
        let mode = resolve_ipa_mode(&e.ipa_mode, scheme, geometry.cell)?;
        let ipa =
            if scheme.enabled() { format!(", IPA={}x{}, V={}", scheme.n, scheme.m, scheme.v) } else { String::new() };
        let page_bytes = e.db_page_bytes.unwrap_or((geometry.page_bytes as usize).max(4096));
        if ![4096, 8192, 16384].contains(&page_bytes) {
            return Err(ConfigError::field(
                "engine.db_page_bytes",
                format!("must be 4096, 8192 or 16384, got {page_bytes}"),
            ));
        }
        e.db_page_bytes = Some(page_bytes);
        let log_chips = e.log_chips.unwrap_or((geometry.chips() / 4).max(1));
        count("engine.log_chips", limits::LOG_CHIPS, log_chips.into())?;
        let mut log_geometry = None;
        if let Some(mib) = e.log_device_mib {
            count("engine.log_device_mib", limits::LOG_DEVICE_MIB, mib)?;
            if c.device.image.is_some() {
                return Err(ConfigError::field(
                    "engine.log_device_mib",
                    "cannot be combined with device.image: the log's own device is kept in memory only",
                ));
            }
            log_geometry = Some(
                log_device_geometry(&geometry, log_chips, mib)
                    .map_err(|p| ConfigError::field("engine.log_device_mib", p))?,
            );
            if geometry.chips() < 2 {
                return Err(ConfigError::field(
                    "engine.log_device_mib",
                    "needs a device of at least 2 chips: one for the system region and one for the data",
                ));
            }
        } else if log_chips + 2 > geometry.chips() {
            return Err(ConfigError::field(
                "engine.log_chips",
                format!(
                    "must be in 1..={} on this device: it has {} chips; one goes to the system region and the data \
                     region needs at least one, got {log_chips}",
                    geometry.chips().saturating_sub(2),
                    geometry.chips()
                ),
            ));
        }
        e.log_chips = Some(log_chips);
        let workload = registry::find(&c.workload.name)?;
        let params = workload.configure(&c.workload.params)?;
        c.workload.params = params.params();
        let tables = params.build(&mut rand::SeedableRng::seed_from_u64(0)).tables();
        if let Some(t) = c.engine.ipa_objects.iter().find(|t| !tables.contains(&t.as_str())) {
            return Err(ConfigError::field(
                "engine.ipa_objects",
                format!("{} has no table {t} (tables: {})", workload.name, tables.join(", ")),
            ));
        }
        if c.engine.schema.is_some() && !c.engine.ipa_objects.is_empty() {
            return Err(ConfigError::field("engine.ipa_objects", "cannot be combined with engine.schema"));
        }
        let region_options = format!("IPA_MODE={mode}{ipa}");
        let derived = Derived { geometry, scheme, region_options, params, log_geometry };
        Ok((c, derived))
    }
}

/// A config from TOML; a syntax or type error carries its line and column.
pub(crate) fn parse_toml<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, ConfigError> {
    toml::from_str(text).map_err(|e| {
        let (line, column) = e.span().map_or((1, 1), |span| line_column(text, span.start));
        ConfigError::Syntax { line, column, message: limits::cut_quoted(e.message().trim()) }
    })
}

pub(crate) fn parse_json<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, ConfigError> {
    serde_json::from_str(text).map_err(|e| ConfigError::Syntax {
        line: e.line(),
        column: e.column(),
        message: limits::cut_quoted(&e.to_string()),
    })
}

/// The region's IPA mode in SQL: `none` without a scheme, `auto` by cell type.
/// The geometry of the log's own device (`engine.log_device_mib`): `chips` chips of the
/// run's preset `base`, on as many of its channels as divide them evenly, each with the
/// blocks for a log of `mib` MiB (`engine::db::external_log_blocks_per_chip`).
fn log_device_geometry(base: &Geometry, chips: u32, mib: u64) -> Result<Geometry, String> {
    let channels = gcd(chips, base.channels);
    let blocks_per_chip = engine::db::external_log_blocks_per_chip(base, chips, mib << 20);
    let blocks_per_chip = u32::try_from(blocks_per_chip)
        .map_err(|_| format!("{mib} MiB on {chips} chips needs {blocks_per_chip} blocks per chip, too many"))?;
    let g = Geometry { channels, chips_per_channel: chips / channels, blocks_per_chip, ..base.clone() };
    g.validate().map(|()| g)
}

fn gcd(a: u32, b: u32) -> u32 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

fn resolve_ipa_mode(mode: &str, scheme: IpaScheme, cell: CellType) -> Result<String, ConfigError> {
    if mode != "auto" {
        mode.parse::<flash::IpaMode>().map_err(|p| ConfigError::field("engine.ipa_mode", p))?;
    }
    Ok(match mode {
        _ if !scheme.enabled() => "none".to_string(),
        "auto" if cell == CellType::Slc => "slc".to_string(),
        "auto" => "odd-mlc".to_string(),
        m => m.to_string(),
    })
}

/// 1-based line and column (in characters) of byte `offset` in `text`.
fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sqlite::config::{SqliteConfig, SqliteJournal};

    fn field_error(c: &ExperimentConfig) -> String {
        match c.resolve() {
            Err(e @ ConfigError::Field { .. }) => e.to_string(),
            Err(e) => panic!("not a field error: {e}"),
            Ok(_) => panic!("accepted"),
        }
    }

    #[test]
    fn defaults_resolve_and_fill_in_device_dependent_fields() {
        let (c, d) = ExperimentConfig::default().resolve().unwrap();
        assert_eq!(c.engine.log_chips, Some(4), "a quarter of 16 chips");
        assert_eq!(c.engine.db_page_bytes, Some(4096));
        assert_eq!(c.workload.params["scale"], 1);
        assert_eq!(d.region_options, "IPA_MODE=slc, IPA=2x4, V=12");
        assert_eq!(c.resolve().unwrap().0, c, "resolving is idempotent");
    }

    #[test]
    fn each_bad_field_is_named_with_its_range() {
        type Break = fn(&mut ExperimentConfig);
        let cases: Vec<(Break, &str)> = vec![
            (|c| c.driver.sim_time_s = 0.0, "driver.sim_time_s: must be in (0, 1000000000]"),
            (|c| c.driver.sim_time_s = f64::NAN, "driver.sim_time_s: must be in"),
            (|c| c.driver.warmup_s = -1.0, "driver.warmup_s: must be in [0,"),
            (|c| c.driver.terminals = 0, "driver.terminals: must be in 1..=65536"),
            (|c| c.driver.cpu_per_operation_us = f64::INFINITY, "driver.cpu_per_operation_us"),
            (|c| c.engine.buffer_share = 0.0, "engine.buffer_share: must be in (0, 1]"),
            (|c| c.engine.checkpoint_log_share = 1.0, "engine.checkpoint_log_share: must be in (0, 1)"),
            (|c| c.engine.group_commit_us = -5.0, "engine.group_commit_us"),
            (|c| c.engine.log_buffer_bytes = Some(2 << 30), "engine.log_buffer_bytes: must be in 0..=1073741824"),
            (|c| c.engine.v = 126, "engine.v: must be in 0..=125"),
            (|c| c.engine.ipa = "2y4".into(), "engine.ipa: `2y4` is not an IPA scheme"),
            (|c| c.engine.ipa_mode = "qlc".into(), "engine.ipa_mode: unknown IPA mode"),
            (|c| c.engine.db_page_bytes = Some(1000), "engine.db_page_bytes: must be 4096, 8192 or 16384"),
            (|c| c.engine.log_chips = Some(15), "engine.log_chips: must be in 1..=14 on this device"),
            (|c| c.engine.log_chips = Some(0), "engine.log_chips: must be at least 1"),
            (|c| c.engine.log_device_mib = Some(0), "engine.log_device_mib: must be in 1..=1048576, got 0"),
            (
                |c| {
                    c.engine.log_device_mib = Some(64);
                    c.device.image = Some("d.img".into());
                },
                "engine.log_device_mib: cannot be combined with device.image",
            ),
            (
                |c| {
                    c.engine.log_device_mib = Some(64);
                    c.engine.journal = Some(JournalKind::None);
                },
                "engine.log_device_mib: acts on the write-ahead log",
            ),
            (
                |c| {
                    c.engine.log_device_mib = Some(64);
                    c.device.chips = Some(1);
                },
                "engine.log_device_mib: needs a device of at least 2 chips",
            ),
            (|c| c.engine.ipa_objects = vec!["nosuch".into()], "engine.ipa_objects: tpcb has no table nosuch"),
            (|c| c.device.preset = "floppy".into(), "device.preset: unknown device preset `floppy`"),
            (|c| c.device.chips = Some(0), "device.chips: must be in 1..=16 on the paper-emulator preset"),
            (
                |c| c.device.chips = Some(40),
                "device.chips: must be in 1..=16 on the paper-emulator preset (8 channels × 2 chips), got 40",
            ),
            (|c| c.device.preset = "x".repeat(10 << 20), "device.preset: unknown device preset `xxxxxxxx"),
            (|c| c.device.transfer_ps_per_byte = Some(0), "device: paper-emulator: geometry: transfer_ps_per_byte"),
            (|c| c.engine.ipa = "9".repeat(10 << 20), "engine.ipa: `99999999"),
            (|c| c.workload.name = "tpcd".into(), "workload.name: unknown workload `tpcd`"),
            (
                |c| {
                    c.workload.params.insert("scale".into(), 0.into());
                },
                "workload.scale: must be at least 1",
            ),
        ];
        for (break_it, expected) in cases {
            let mut c = ExperimentConfig::default();
            break_it(&mut c);
            let e = field_error(&c);
            assert!(e.starts_with(expected), "expected `{expected}`, got `{e}`");
            assert!(e.len() < 400, "at most 80 characters of a value are quoted: {} bytes", e.len());
        }
    }

    #[test]
    fn the_75_percent_evictions_pick_their_cleaner_and_read_back() {
        for (eviction, name, policy) in [
            (Eviction::Innodb, "innodb", CleanerPolicy::INNODB),
            (Eviction::ShoreNonEager, "shore-non-eager", CleanerPolicy::SHORE_NON_EAGER),
        ] {
            let mut c = ExperimentConfig::default();
            c.engine.eviction = eviction;
            assert_eq!(c.engine.cleaner_policy(), policy);
            let text = c.to_toml().unwrap();
            assert!(text.contains(&format!("eviction = \"{name}\"")), "{text}");
            assert_eq!(ExperimentConfig::from_toml(&text).unwrap().engine.cleaner_policy(), policy);
        }
    }

    #[test]
    fn cleaner_sweep_picks_the_sweeping_cleaner_and_stays_out_of_the_config_unset() {
        let mut c = ExperimentConfig::default();
        assert_eq!(c.engine.cleaner_policy(), CleanerPolicy::EAGER);
        assert!(!c.to_toml().unwrap().contains("cleaner_sweep"), "unset, a result's config reads as before");
        c.engine.cleaner_sweep = true;
        assert_eq!(c.engine.cleaner_policy(), CleanerPolicy::EAGER_SWEEP);
        let text = c.to_toml().unwrap();
        assert_eq!(ExperimentConfig::from_toml(&text).unwrap().engine.cleaner_policy(), CleanerPolicy::EAGER_SWEEP);
        c.engine.eviction = Eviction::NonEager;
        assert!(field_error(&c).contains("engine.cleaner_sweep: needs engine.eviction"), "{}", field_error(&c));
    }

    #[test]
    fn a_replacement_reads_back_and_clock_stays_out_of_the_config() {
        let mut c = ExperimentConfig::default();
        assert!(!c.to_toml().unwrap().contains("replacement"), "clock: a result's config reads as before");
        c.engine.replacement = Replacement::CleanFirstClock;
        let text = c.to_toml().unwrap();
        assert!(text.contains("replacement = \"clean-first-clock\""), "{text}");
        assert_eq!(ExperimentConfig::from_toml(&text).unwrap().engine.replacement, Replacement::CleanFirstClock);
        let bad = text.replace("clean-first-clock", "second-chance");
        assert!(ExperimentConfig::from_toml(&bad).is_err(), "an unknown replacement is refused");
    }

    #[test]
    fn a_channel_rate_reaches_the_geometry_and_stays_out_of_a_config_without_it() {
        let board = DeviceConfig {
            preset: "openssd-mlc".into(),
            transfer_ps_per_byte: Some(19_448),
            ..DeviceConfig::default()
        };
        assert_eq!(board.geometry().unwrap().latencies.transfer_ps_per_byte, 19_448);
        let preset = DeviceConfig { transfer_ps_per_byte: None, ..board };
        assert_eq!(preset.geometry().unwrap().latencies.transfer_ps_per_byte, 2_500);
        // A config that does not set it serialises as before (a kept run's key).
        assert!(!serde_json::to_string(&preset).unwrap().contains("transfer"));
    }

    #[test]
    fn a_device_above_its_memory_limit_is_refused_with_its_size() {
        let mut device = DeviceConfig { max_memory_bytes: Some(1024), ..DeviceConfig::default() };
        let g = device.geometry().unwrap();
        let e = device.check_footprint(&g).unwrap_err();
        assert_eq!(e.field_name(), Some("device.blocks_per_chip"));
        let text = e.to_string();
        assert!(
            text.starts_with("this device (16 chips × 1024 blocks × 64 pages of 4096 bytes) needs about"),
            "{text}"
        );
        assert!(
            text.contains("for its metadata before any page is written, more than device.max_memory_bytes (1.0 KiB)"),
            "{text}"
        );
        assert!(text.ends_with("pass a smaller device.blocks_per_chip or device.no_data (metadata only)"), "{text}");
        device.no_data = true;
        let text = device.check_footprint(&g).unwrap_err().to_string();
        assert!(text.contains("for its metadata") && text.ends_with("pass a smaller device.blocks_per_chip"), "{text}");
        device.max_memory_bytes = Some(1 << 40);
        assert!(device.fitting_geometry().is_ok());
        let huge = DeviceConfig { blocks_per_chip: Some(1_000_000), ..DeviceConfig::default() };
        let e = huge.fitting_geometry().unwrap_err().to_string();
        assert!(e.contains("16 chips × 1000000 blocks") && e.contains("the memory available"), "{e}");
    }

    #[test]
    fn a_device_larger_than_its_limit_is_refused_only_for_its_metadata_and_its_pages_get_the_rest() {
        // 16 chips × 1,024 blocks × 64 pages of 4 KiB: 4 GiB of pages, 162 MiB of metadata.
        let mut device = DeviceConfig::default();
        let g = device.geometry().unwrap();
        let bookkeeping = limits::bookkeeping_bytes(&g, true);
        assert!(bookkeeping < g.capacity_bytes() / 16, "{bookkeeping}");
        device.max_memory_bytes = Some(bookkeeping + (64 << 20));
        assert_eq!(device.check_footprint(&g), Ok(()), "the pages need not all fit");
        assert_eq!(device.page_budget_bytes(&g), Some(64 << 20));
        device.max_memory_bytes = Some(bookkeeping - 1);
        assert!(matches!(device.check_footprint(&g), Err(ConfigError::Footprint(_))));
        // Without a page pool there is no budget: metadata only, or an image file.
        let no_data = DeviceConfig { no_data: true, ..device.clone() };
        assert!(no_data.check_footprint(&g).is_ok() && no_data.page_budget_bytes(&g).is_none());
        let image = DeviceConfig { image: Some("d.img".into()), ..device.clone() };
        assert!(image.check_footprint(&g).is_ok() && image.page_budget_bytes(&g).is_none());
        // Without a limit given, the memory available less a margin is the limit (read
        // anew each time: other processes move it).
        device.max_memory_bytes = None;
        assert_eq!(device.page_budget_bytes(&g).is_some(), limits::available_memory_bytes().is_some());
        assert_eq!(limits::available_margin_bytes(16 << 30), (512 << 20) + (1 << 30));
    }

    #[test]
    fn syntax_errors_quote_at_most_80_characters_of_a_value() {
        let text = format!("[device]\nchips = \"{}\"\n", "x".repeat(10 << 20));
        let e = ExperimentConfig::from_toml(&text).unwrap_err().to_string();
        assert!(e.len() < 400 && !e.contains(&"x".repeat(81)), "{} bytes", e.len());
        let json = format!("{{\"device\": {{\"chips\": \"{}\"}}}}", "x".repeat(10 << 20));
        let e = ExperimentConfig::from_json(&json).unwrap_err().to_string();
        assert!(e.len() < 400 && !e.contains(&"x".repeat(81)), "{e}");
    }

    #[test]
    fn toml_errors_carry_line_and_column() {
        let e = ExperimentConfig::from_toml("seed = 3\n[driver]\nterminals = \"eight\"\n").unwrap_err();
        let ConfigError::Syntax { line, column, message } = &e else { panic!("{e}") };
        assert_eq!((*line, *column), (3, 13), "{message}");
        let e = ExperimentConfig::from_toml("[driver]\nsim_time = 5\n").unwrap_err();
        assert!(e.to_string().starts_with("2:1: unknown field `sim_time`"), "{e}");
        let e = ExperimentConfig::from_toml("[engine\n").unwrap_err();
        assert!(e.to_string().starts_with("1:"), "{e}");
    }

    #[test]
    fn toml_and_json_round_trip() {
        let text = "seed = 7\nstorage = \"noftl\"\n[device]\nchips = 4\n[workload]\nname = \"tpcc\"\nwarehouses = 2\n\
                    [driver]\nsim_time_s = 2.5\n";
        let c = ExperimentConfig::from_toml(text).unwrap();
        assert_eq!((c.seed, c.device.chips, c.driver.sim_time_s), (7, Some(4), 2.5));
        assert_eq!(c.workload.params["warehouses"], 2);
        assert_eq!(ExperimentConfig::from_toml(&c.to_toml().unwrap()).unwrap(), c);
        let json = serde_json::to_string(&c).unwrap();
        assert_eq!(ExperimentConfig::from_json(&json).unwrap(), c);
        let ipl = "[storage.ipl]\nlog_region_bytes = 16384\n";
        let c = ExperimentConfig::from_toml(ipl).unwrap();
        assert_eq!(
            c.storage,
            StorageConfig::Ipl(IplStorageConfig { log_region_bytes: 16384, ..IplStorageConfig::default() })
        );
        assert_eq!(c.storage.to_string(), "ipl");
        let ftl = "[storage.ftl]\nkind = \"dftl\"\nover_provisioning = 0.1\ncmt_entries = 512\nlog_blocks = 8\n";
        let c = ExperimentConfig::from_toml(ftl).unwrap();
        assert_eq!(c.storage.to_string(), "ftl:dftl");
        assert_eq!(ExperimentConfig::from_toml(&c.to_toml().unwrap()).unwrap(), c);
    }

    #[test]
    fn an_ftl_table_names_only_what_it_changes_and_no_unknown_field() {
        let c = ExperimentConfig::from_toml("[storage.ftl]\nkind = \"nolgn\"\np2p_entries = 64\n").unwrap();
        let mut want = FtlConfig::new(flash::ftl::FtlKind::Nolgn);
        want.p2p_entries = 64;
        assert_eq!(c.storage, StorageConfig::Ftl(want));
        let e = ExperimentConfig::from_toml("[storage.ftl]\nkind = \"dftl\"\ncmt_entrys = 5\n").unwrap_err();
        assert!(e.to_string().contains("unknown field `cmt_entrys`"), "{e}");
    }

    #[test]
    fn the_journal_resolves_by_storage_and_none_keeps_no_log_settings() {
        let (c, _) = ExperimentConfig::default().resolve().unwrap();
        assert_eq!(c.engine.journal, Some(JournalKind::Aries));
        let nolgn = ExperimentConfig {
            storage: StorageConfig::Ftl(FtlConfig::new(flash::ftl::FtlKind::Nolgn)),
            ..ExperimentConfig::default()
        };
        assert_eq!(nolgn.resolve().unwrap().0.engine.journal, Some(JournalKind::Nolgn));
        let mut aries_on_nolgn = nolgn.clone();
        aries_on_nolgn.engine.journal = Some(JournalKind::Aries);
        assert!(field_error(&aries_on_nolgn).starts_with("engine.journal: aries: on ftl:nolgn"));
        let mut none = ExperimentConfig::default();
        none.engine.journal = Some(JournalKind::None);
        assert_eq!(none.resolve().unwrap().0.engine.journal, Some(JournalKind::None));
        none.engine.group_commit_us = 5.0;
        assert!(field_error(&none).starts_with("engine.group_commit_us: acts on the write-ahead log, which the none"));
        let mut nolgn_on_noftl = ExperimentConfig::default();
        nolgn_on_noftl.engine.journal = Some(JournalKind::Nolgn);
        assert!(field_error(&nolgn_on_noftl).starts_with("engine.journal: nolgn is NoLgn-FTL's transactions"));
    }

    #[test]
    fn a_sqlite_config_resolves_its_defaults_and_refuses_flash_settings_on_the_host() {
        let text = "engine = \"sqlite\"\n[storage.ftl]\nkind = \"nolgn\"\n[workload]\nname = \"ycsb\"\n";
        let c = SqliteConfig::from_toml(text).unwrap().resolve().unwrap();
        assert_eq!((c.journal, c.group_pages), (Some(SqliteJournal::BaseWal), None));
        assert!(c.workload.params.contains_key("records"), "the workload's defaults are filled in");
        assert_eq!(SqliteConfig::from_json(&serde_json::to_string(&c).unwrap()).unwrap(), c);
        let host = SqliteConfig { journal: Some(SqliteJournal::SwWal), ..SqliteConfig::default() };
        let e = host.resolve().unwrap_err().to_string();
        assert_eq!(e, "journal: applies to SQLite on flash; it needs storage ftl:KIND");
        let e = SqliteConfig::from_toml("engine = \"postgres\"\n").unwrap_err().to_string();
        assert!(e.contains("unknown variant `postgres`"), "{e}");
        let e = SqliteConfig::from_toml("engine = \"sqlite\"\n[run]\nsede = 1\n").unwrap_err().to_string();
        assert!(e.starts_with("3:1: unknown field `sede`"), "{e}");
    }
}
