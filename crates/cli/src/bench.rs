//! `deltaflash bench`, `compare` and `check`: thin callers of the experiment API
//! (`workloads::Experiment`). The flags (or `--config FILE.toml`, which flags then
//! override) become one `ExperimentConfig`; `bench` runs it and prints the IPA paper's
//! metrics, `compare` runs it under several [N×M] schemes on the same seed and prints a
//! table shaped like the paper's Table 7, `check` checks a workload's consistency
//! conditions on a database image.
//!
//! Every numeric flag is parsed against its range in `workloads::limits` (the same range
//! the config check uses), so a bad value is refused by clap with the flag's name and the
//! range. Errors from the experiment name config fields; without `--config` they are
//! spelled as the flags that set them.

use crate::output::OutputFile;
use crate::setup::{device_flag, DeviceArgs};
use crate::table::{print_table, Row};
use clap::builder::{PossibleValue, PossibleValuesParser};
use clap::{Args, ValueEnum};
use engine::buffer::Replacement;
use engine::{Database, DbOptions, IpaScheme};
use flash::ftl::FtlConfig;
use indicatif::{MultiProgress, ProgressBar, ProgressStyle};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::fmt::Display;
use std::path::{Path, PathBuf};
use std::time::Duration;
use workloads::config::{Eviction, IplStorageConfig, StorageConfig, WorkloadConfig};
use workloads::experiment::Consistency;
use workloads::limits::{self, quote, CountRange, FloatRange};
use workloads::registry::{self, REGISTRY};
use workloads::sqlite::config::{SqliteConfig, SqliteStorageConfig};
use workloads::sqlite::SQLITE_REGISTRY;
use workloads::{Control, Experiment, ExperimentConfig, ExperimentError, ExperimentResult, Progress};

/// `help` with the default value taken from where defaults live.
fn with_default(help: &str, default: impl Display) -> String {
    format!("{help} [default: {default}]")
}

fn defaults() -> ExperimentConfig {
    ExperimentConfig::default()
}

/// A registered workload's default for one parameter.
fn param_default(workload: &str, param: &str) -> String {
    let defaults = REGISTRY.iter().find(|w| w.name == workload).map(|w| w.defaults()).unwrap_or_default();
    defaults.get(param).map_or_else(String::new, |v| v.to_string().replace(['[', ']'], ""))
}

fn float(range: FloatRange) -> impl Fn(&str) -> Result<f64, String> + Clone + Send + Sync + 'static {
    move |text| range.parse(text)
}

fn count<T: TryFrom<u64>>(range: CountRange) -> impl Fn(&str) -> Result<T, String> + Clone + Send + Sync + 'static {
    move |text| range.parse(text).and_then(|v| T::try_from(v).map_err(|_| format!("{v} is too large")))
}

/// `--storage`: NoFTL, a conventional FTL, In-Page Logging, or (SQLite only) the host's
/// memory or file.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum StorageChoice {
    Noftl,
    Ftl(flash::ftl::FtlKind),
    Ipl,
    Host,
}

/// `noftl`, `ftl:KIND`, `ipl` or `host`.
pub(crate) fn storage_kind(text: &str) -> Result<StorageChoice, String> {
    if text.eq_ignore_ascii_case("noftl") {
        return Ok(StorageChoice::Noftl);
    }
    if text.eq_ignore_ascii_case("ipl") {
        return Ok(StorageChoice::Ipl);
    }
    if text.eq_ignore_ascii_case("host") {
        return Ok(StorageChoice::Host);
    }
    text.strip_prefix("ftl:").and_then(flash::ftl::FtlKind::parse).map(StorageChoice::Ftl).ok_or_else(|| {
        format!(
            "{} is not a storage: noftl, ftl:page, ftl:dftl, ftl:block, ftl:bast, ftl:fast, ftl:nolgn, ipl or host (SQLite)",
            quote(text)
        )
    })
}

pub(crate) fn scheme(text: &str) -> Result<IpaScheme, String> {
    text.parse().map_err(|e: String| limits::cut_quoted(&e))
}

/// `NAME=VALUE`, VALUE in JSON syntax (`2`, `[45,43,4,4,4]`, `"x"`); anything else is a string.
fn param(text: &str) -> Result<(String, serde_json::Value), String> {
    let (name, value) = text.split_once('=').ok_or_else(|| format!("{} is not NAME=VALUE", quote(text)))?;
    let value = serde_json::from_str(value).unwrap_or_else(|_| serde_json::Value::String(value.to_string()));
    Ok((name.trim().to_string(), value))
}

/// The engine's workloads, then the SQLite-only ones (`--engine sqlite`; accepted but
/// not listed, the `--workload` help names them).
fn workload_names() -> PossibleValuesParser {
    let engine = REGISTRY.iter().map(|w| PossibleValue::new(w.name).help(w.about));
    let sqlite = SQLITE_REGISTRY
        .iter()
        .filter(|s| REGISTRY.iter().all(|w| w.name != s.name))
        .map(|s| PossibleValue::new(s.name).hide(true));
    PossibleValuesParser::new(engine.chain(sqlite))
}

/// One item of `--mix`: a percentage (tpcc) or a YCSB mix letter a–f (ycsb).
fn mix_item(text: &str) -> Result<serde_json::Value, String> {
    let t = text.trim();
    if t.len() == 1 && ("a"..="f").contains(&t.to_ascii_lowercase().as_str()) {
        return Ok(serde_json::Value::from(t.to_ascii_lowercase()));
    }
    count::<u32>(workloads::tpcc::MIX_SHARE)(t)
        .map(serde_json::Value::from)
        .map_err(|e| format!("{e} (or a YCSB mix a-f)"))
}

/// Every registered workload's parameters with their defaults, for `--param`'s help.
fn params_help() -> String {
    let mut text = "A workload parameter as NAME=VALUE, VALUE in JSON syntax (repeatable). Parameters:".to_string();
    for w in REGISTRY {
        let params: Vec<String> = w.defaults().iter().map(|(k, v)| format!("{k}={v}")).collect();
        text += &format!("\n  {}: {}", w.name, params.join(", "));
    }
    text
}

/// The workload and its parameters: shared by `bench`, `compare` and `check`.
#[derive(Args, Clone)]
pub struct WorkloadArgs {
    /// The workload (default: tpcb for bench and compare, tpcc for check). With
    /// `bench --engine sqlite`: sqlite-bench (the default), ycsb or tpcc.
    #[arg(long, value_parser = workload_names())]
    workload: Option<String>,
    #[arg(long, value_parser = count::<u32>(workloads::tpcb::SCALE), allow_negative_numbers = true,
          help = with_default("tpcb: branches, 100,000 accounts each", param_default("tpcb", "scale")))]
    scale: Option<u32>,
    #[arg(long, value_parser = count::<u32>(workloads::tpcc::WAREHOUSES), allow_negative_numbers = true,
          help = with_default("tpcc: warehouses", param_default("tpcc", "warehouses")))]
    warehouses: Option<u32>,
    #[arg(long, value_parser = count::<u32>(workloads::tatp::SUBSCRIBERS), allow_negative_numbers = true,
          help = with_default("tatp: subscribers", param_default("tatp", "subscribers")))]
    subscribers: Option<u32>,
    #[arg(long, value_parser = count::<u32>(workloads::linkbench::NODES), allow_negative_numbers = true,
          help = with_default("linkbench: nodes", param_default("linkbench", "nodes")))]
    nodes: Option<u32>,
    #[arg(long, value_delimiter = ',', value_parser = mix_item, allow_negative_numbers = true,
          help = with_default("tpcc: mix in percent: NewOrder, Payment, OrderStatus, Delivery, StockLevel; \
                               ycsb: the core workload a, b, c, d, e or f",
                              param_default("tpcc", "mix")))]
    mix: Option<Vec<serde_json::Value>>,
    #[arg(long = "param", value_name = "NAME=VALUE", value_parser = param, long_help = params_help(),
          help = "A workload parameter as NAME=VALUE (repeatable; --help lists them)")]
    params: Vec<(String, serde_json::Value)>,
}

impl WorkloadArgs {
    /// Applies the flags given; another workload than the config's starts from its
    /// defaults. A parameter the workload does not take is refused when resolving.
    fn apply(&self, workload: &mut WorkloadConfig) {
        if let Some(name) = &self.workload {
            if *name != workload.name {
                *workload = WorkloadConfig { name: name.clone(), params: Default::default() };
            }
        }
        let flags = [
            ("scale", self.scale.map(serde_json::Value::from)),
            ("warehouses", self.warehouses.map(serde_json::Value::from)),
            ("subscribers", self.subscribers.map(serde_json::Value::from)),
            ("nodes", self.nodes.map(serde_json::Value::from)),
            (
                "mix",
                self.mix.clone().map(|m| match &m[..] {
                    [letter @ serde_json::Value::String(_)] => letter.clone(),
                    _ => serde_json::Value::from(m),
                }),
            ),
        ];
        for (name, value) in flags.into_iter().filter_map(|(n, v)| Some((n.to_string(), v?))).chain(self.params.clone())
        {
            workload.params.insert(name, value);
        }
    }
}

/// Options shared by `bench` and `compare`. Defaults are those of `ExperimentConfig`.
#[derive(Args, Clone)]
pub struct BenchArgs {
    /// Experiment file: TOML (JSON if it ends in .json, e.g. the "config" of a result);
    /// one that says engine = "sqlite" is a SQLite run. Flags given as well override its
    /// values; the preset is the file's (`[device] preset`), so --device cannot be
    /// combined with it.
    #[arg(long, value_name = "FILE", conflicts_with = "device")]
    config: Option<PathBuf>,
    #[command(flatten)]
    device: DeviceArgs,
    /// With --image: when the image file is synced to disk (off, normal: at
    /// checkpoints, full: at every commit) [default: off; a benchmark measures
    /// simulated time, and syncing only costs wall time].
    #[arg(long, value_parser = workloads::config::ImageSync::parse)]
    image_sync: Option<workloads::config::ImageSync>,
    #[command(flatten)]
    workload: WorkloadArgs,
    #[arg(long, value_parser = float(limits::BUFFER_SHARE), allow_negative_numbers = true,
          help = with_default("Buffer pool size as a share of the database after loading, in (0, 1]",
                              defaults().engine.buffer_share))]
    buffer: Option<f64>,
    /// When dirty pages are written: eager (a page cleaner from 1/8 of the frames
    /// dirty, Shore-MT's), non-eager (at eviction), innodb (a page cleaner from 75% of
    /// the frames dirty, MySQL InnoDB's) or shore-non-eager (Shore-MT's cleaner from 75%,
    /// its eager strategies off) [default: eager].
    #[arg(long, value_parser = ["eager", "non-eager", "innodb", "shore-non-eager"])]
    eviction: Option<String>,
    /// Which frame a buffer miss takes: clock (second chance, dirty or not), lru, or
    /// clean-first-clock (Shore-MT's: a clean unreferenced page while the hand finds one
    /// within a pass, so dirty pages are left to the cleaner and checkpoints) [default: clock].
    #[arg(long, value_parser = ["clock", "lru", "clean-first-clock"])]
    replacement: Option<String>,
    /// The device before the warm-up: none (as loaded), fill (the data regions' free
    /// space written once) or steady (filled, then aged by the workload until GC
    /// migrations per host write are in steady state, SNIA PTS style) [default: none].
    #[arg(long, value_parser = workloads::precondition::Precondition::NAMES)]
    precondition: Option<String>,
    #[arg(long, value_parser = ["auto", "none", "slc", "pslc", "odd-mlc"],
          help = with_default("IPA mode of the data region (auto: slc on SLC devices, else odd-mlc)",
                              defaults().engine.ipa_mode))]
    ipa_mode: Option<String>,
    #[arg(long, value_parser = count::<u8>(limits::V), allow_negative_numbers = true,
          help = with_default("V: metadata pairs per delta-record, 0 to 125 (0: metadata bytes count against M)", defaults().engine.v))]
    v: Option<u8>,
    /// Tables (with their indexes) placed in the IPA region; the rest go to a region
    /// without IPA on the other half of the chips. Default: all in one IPA region.
    #[arg(long, value_delimiter = ',', conflicts_with = "schema")]
    ipa_objects: Vec<String>,
    /// SQL file that creates the regions and tablespaces instead of the default single
    /// IPA region. `${IPA}` in it stands for the run's region options (IPA_MODE, IPA, V),
    /// so `compare` can vary the scheme. A table goes to tablespace `ts_<table>` if the
    /// file creates one, else to `ts_data`.
    #[arg(long)]
    pub(crate) schema: Option<PathBuf>,
    #[arg(long, value_parser = float(limits::CHECKPOINT_LOG_SHARE), allow_negative_numbers = true,
          help = with_default("Checkpoint when this share of the log region is in use, in (0, 1); \
                               the paper's non-eager runs come close with 0.9",
                              defaults().engine.checkpoint_log_share))]
    checkpoint_log_share: Option<f64>,
    /// Chips of the log region, at least 1 and two fewer than the device's [default: a
    /// quarter of the chips]. Each commit programs a log page, so one chip caps the
    /// commit rate (TPC-B: about 3,500 tps); with more, commits program in parallel.
    #[arg(long, value_parser = count::<u32>(limits::LOG_CHIPS), allow_negative_numbers = true)]
    log_chips: Option<u32>,
    /// The write-ahead log on a device of its own of this many MiB (--log-chips chips of
    /// the preset), not a region of the database device [default: off]
    #[arg(long, value_parser = count::<u64>(limits::LOG_DEVICE_MIB), allow_negative_numbers = true)]
    log_device_mib: Option<u64>,
    #[arg(long, value_parser = float(limits::SIM_TIME_S), allow_negative_numbers = true,
          help = with_default("Simulated seconds measured after the warm-up, in (0, 1e9]",
                              defaults().driver.sim_time_s))]
    pub(crate) sim_time: Option<f64>,
    #[arg(long, value_parser = float(limits::WARMUP_S), allow_negative_numbers = true,
          help = with_default("Simulated seconds of warm-up, not measured, in [0, 1e9]",
                              defaults().driver.warmup_s))]
    pub(crate) warmup: Option<f64>,
    #[arg(long, value_parser = count::<usize>(limits::TERMINALS), allow_negative_numbers = true,
          help = with_default("Closed-loop terminals, 1 to 65536", defaults().driver.terminals))]
    pub(crate) terminals: Option<usize>,
    #[arg(long, value_parser = float(limits::CPU_PER_OPERATION_US), allow_negative_numbers = true,
          help = with_default("Simulated CPU µs per record operation, in [0, 1e6]",
                              defaults().driver.cpu_per_operation_us))]
    cpu_us: Option<f64>,
    #[arg(long, value_parser = float(limits::GROUP_COMMIT_US), allow_negative_numbers = true,
          help = with_default("Group commit: commits within this many simulated µs share one log flush \
                               (0: every commit forces the log), in [0, 1e6]",
                              defaults().engine.group_commit_us))]
    group_commit_us: Option<f64>,
    #[arg(long, value_parser = count::<u64>(limits::LOG_BUFFER_BYTES), allow_negative_numbers = true,
          help = with_default("Log buffer: once more unforced log bytes than this wait, their full pages are \
                               written ahead of the commit (0: each full page at once), 0 to 1 GiB",
                              DbOptions::default().log_buffer_bytes))]
    log_buffer_bytes: Option<u64>,
    #[arg(long, value_parser = float(limits::PROGRESS_INTERVAL_S), allow_negative_numbers = true,
          help = with_default("Print an interval line every this many simulated seconds (0: none)",
                              defaults().driver.progress_interval_s))]
    progress: Option<f64>,
    #[arg(long, allow_negative_numbers = true,
          help = with_default("Seed of every random choice; the same seed gives the same result",
                                    defaults().seed))]
    seed: Option<u64>,
    /// What the engine writes its pages through: `noftl` (regions on raw flash, with
    /// IPA), a conventional FTL over the whole device: `ftl:page`, `ftl:dftl`,
    /// `ftl:block`, `ftl:bast`, `ftl:fast` (an FTL refuses in-place appends), or `ipl`
    /// (In-Page Logging on raw flash; IPA 0x0 unless --ipa is given) [default: noftl].
    #[arg(long, value_parser = storage_kind)]
    pub(crate) storage: Option<StorageChoice>,
    /// IPL: bytes of each erase unit's log region, a whole number of flash pages
    /// [default: 8192].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    log_region_bytes: Option<u32>,
    /// IPL: bytes of a log sector (one partial program), dividing the flash page
    /// [default: 512].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    sector_bytes: Option<u32>,
    #[command(flatten)]
    pub(crate) ftl: crate::ftl_args::FtlArgs,
    /// Check the workload's consistency conditions after the run.
    #[arg(long)]
    check: bool,
    /// Run the statements of --switch-ddl this many simulated seconds into the
    /// measurement, on the live database (e.g. an ALTER TABLE … SET IPA mid-run).
    #[arg(long, value_parser = float(limits::SIM_TIME_S), allow_negative_numbers = true, requires = "switch_ddl")]
    switch_at: Option<f64>,
    /// SQL file run at --switch-at (ALTER TABLE|INDEX … SET IPA / SET TABLESPACE).
    #[arg(long, requires = "switch_at")]
    switch_ddl: Option<PathBuf>,
}

/// How errors name config fields: as the flags that set them, or as fields of the file.
#[derive(Clone, Default)]
pub(crate) struct Spelling {
    config: Option<String>,
    schema: Option<String>,
}

impl Spelling {
    fn spell(&self, field: &str) -> String {
        if let Some(file) = &self.config {
            return format!("{field} in {file}");
        }
        if let Some(flag) = device_flag(field) {
            return flag.to_string();
        }
        let flag = match field {
            "engine.buffer_share" => "--buffer",
            "engine.ipa" => "--ipa",
            "engine.ipa_mode" => "--ipa-mode",
            "engine.v" => "--v",
            "engine.ipa_objects" => "--ipa-objects",
            "engine.log_chips" => "--log-chips",
            "engine.log_device_mib" => "--log-device-mib",
            "engine.checkpoint_log_share" => "--checkpoint-log-share",
            "engine.group_commit_us" => "--group-commit-us",
            "engine.log_buffer_bytes" => "--log-buffer-bytes",
            "engine.journal" => "--journal",
            "engine.schema" => return format!("--schema {}", self.schema.as_deref().unwrap_or("")),
            "driver.terminals" => "--terminals",
            "driver.warmup_s" => "--warmup",
            "driver.sim_time_s" => "--sim-time",
            "driver.cpu_per_operation_us" => "--cpu-us",
            "driver.progress_interval_s" => "--progress",
            "driver.switch_at_s" => "--switch-at",
            "driver.switch_ddl" => "--switch-ddl",
            "driver.precondition" => "--precondition",
            "workload" | "workload.name" => "--workload",
            f => match f.strip_prefix("workload.") {
                Some(p @ ("scale" | "warehouses" | "subscribers" | "nodes" | "mix")) => return format!("--{p}"),
                Some(p) => return format!("--param {p}"),
                None => f,
            },
        };
        flag.to_string()
    }

    pub(crate) fn error(&self, e: &ExperimentError) -> String {
        e.message(&|field| self.spell(field))
    }
}

/// An experiment file: the engine's ([`ExperimentConfig`]) or a SQLite run's
/// ([`SqliteConfig`], which says `engine = "sqlite"`).
pub(crate) enum ConfigFile {
    Engine(Box<ExperimentConfig>),
    Sqlite(Box<SqliteConfig>),
}

/// Reads an experiment file, TOML (JSON if it ends in .json); a syntax error reads
/// `FILE:LINE:COLUMN: message`.
pub(crate) fn read_config_file(path: &Path) -> Result<ConfigFile, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let json = path.extension().is_some_and(|x| x == "json");
    // `engine` is a string only in a SQLite run's file (the engine's is a table).
    let engine = if json {
        serde_json::from_str::<serde_json::Value>(&text).ok().and_then(|v| v.get("engine")?.as_str().map(str::to_owned))
    } else {
        toml::from_str::<toml::Table>(&text).ok().and_then(|t| t.get("engine")?.as_str().map(str::to_owned))
    };
    let parsed = match (engine.is_some(), json) {
        (true, true) => SqliteConfig::from_json(&text).map(|c| ConfigFile::Sqlite(Box::new(c))),
        (true, false) => SqliteConfig::from_toml(&text).map(|c| ConfigFile::Sqlite(Box::new(c))),
        (false, true) => ExperimentConfig::from_json(&text).map(|c| ConfigFile::Engine(Box::new(c))),
        (false, false) => ExperimentConfig::from_toml(&text).map(|c| ConfigFile::Engine(Box::new(c))),
    };
    parsed.map_err(|e| format!("{}:{e}", path.display()))
}

/// Reads the engine's experiment file.
fn read_config(path: &Path) -> Result<ExperimentConfig, String> {
    match read_config_file(path)? {
        ConfigFile::Engine(c) => Ok(*c),
        ConfigFile::Sqlite(_) => Err(format!(
            "{}: a SQLite run (engine = \"sqlite\"); run it with `bench --config`, not with the engine's commands",
            path.display()
        )),
    }
}

impl BenchArgs {
    /// These flags with `--storage` replaced (`compare --engines deltaflash:NxM@STORAGE`).
    pub(crate) fn on_storage(&self, storage: StorageChoice) -> BenchArgs {
        BenchArgs { storage: Some(storage), ..self.clone() }
    }

    /// Applies the device flags (and `--image-sync`) to `device`: the file's, or the
    /// defaults.
    fn apply_device(&self, device: &mut workloads::config::DeviceConfig) -> Result<(), String> {
        let d = &self.device;
        if self.config.is_none() {
            device.preset = d.device.clone();
        }
        let overrides = [
            (&mut device.chips, d.chips),
            (&mut device.blocks_per_chip, d.blocks_per_chip),
            (&mut device.pages_per_block, d.pages_per_block),
            (&mut device.page_bytes, d.page_bytes),
            (&mut device.host_queue_depth, d.host_queue_depth),
        ];
        for (field, flag) in overrides {
            if flag.is_some() {
                *field = flag;
            }
        }
        device.no_data |= d.no_data;
        set(&mut device.max_memory_bytes, d.max_memory.map(Some));
        if d.image.is_some() {
            device.image = d.image.clone();
        }
        if let Some(sync) = self.image_sync {
            if device.image.is_none() {
                return Err("--image-sync needs --image".into());
            }
            device.image_sync = sync;
        }
        Ok(())
    }

    /// The experiment: the file's (or the defaults), with the flags given applied.
    pub(crate) fn config(&self, ipa: Option<IpaScheme>) -> Result<(ExperimentConfig, Spelling), String> {
        let mut c = match &self.config {
            Some(path) => read_config(path)?,
            None => ExperimentConfig::default(),
        };
        self.apply_device(&mut c.device)?;
        self.workload.apply(&mut c.workload);
        match self.storage {
            Some(StorageChoice::Noftl) => c.storage = StorageConfig::Noftl,
            Some(StorageChoice::Ftl(kind)) => c.storage = StorageConfig::Ftl(FtlConfig::new(kind)),
            Some(StorageChoice::Ipl) => {
                c.storage = StorageConfig::Ipl(IplStorageConfig::default());
                if ipa.is_none() {
                    c.engine.ipa = IpaScheme::NONE.to_string();
                }
            }
            Some(StorageChoice::Host) => {
                return Err("--storage host runs SQLite on the host; it needs --engine sqlite".into())
            }
            None => {}
        }
        if let StorageConfig::Ipl(ipl) = &mut c.storage {
            set(&mut ipl.log_region_bytes, self.log_region_bytes);
            set(&mut ipl.sector_bytes, self.sector_bytes);
        } else if self.log_region_bytes.is_some() || self.sector_bytes.is_some() {
            return Err("--log-region-bytes and --sector-bytes need --storage ipl".into());
        }
        match &mut c.storage {
            StorageConfig::Ftl(ftl) => self.ftl.apply(ftl)?,
            other => self.ftl.refuse_without_ftl(&format!("--storage {other}"))?,
        }
        let e = &mut c.engine;
        set(&mut e.buffer_share, self.buffer);
        set(&mut e.ipa_mode, self.ipa_mode.clone());
        set(&mut e.v, self.v);
        set(&mut e.checkpoint_log_share, self.checkpoint_log_share);
        set(&mut e.group_commit_us, self.group_commit_us);
        set(&mut e.ipa, ipa.map(|s| s.to_string()));
        if let Some(eviction) = &self.eviction {
            e.eviction = match eviction.as_str() {
                "eager" => Eviction::Eager,
                "innodb" => Eviction::Innodb,
                "shore-non-eager" => Eviction::ShoreNonEager,
                _ => Eviction::NonEager,
            };
        }
        if let Some(replacement) = &self.replacement {
            e.replacement = match replacement.as_str() {
                "lru" => Replacement::Lru,
                "clean-first-clock" => Replacement::CleanFirstClock,
                _ => Replacement::Clock,
            };
        }
        set(&mut e.log_chips, self.log_chips.map(Some));
        set(&mut e.log_device_mib, self.log_device_mib.map(Some));
        set(&mut e.log_buffer_bytes, self.log_buffer_bytes.map(Some));
        if !self.ipa_objects.is_empty() {
            e.ipa_objects = self.ipa_objects.clone();
        }
        if let Some(path) = &self.schema {
            e.schema =
                Some(std::fs::read_to_string(path).map_err(|err| format!("--schema {}: {err}", path.display()))?);
        }
        let r = &mut c.driver;
        set(&mut r.sim_time_s, self.sim_time);
        set(&mut r.warmup_s, self.warmup);
        set(&mut r.terminals, self.terminals);
        set(&mut r.cpu_per_operation_us, self.cpu_us);
        set(&mut r.progress_interval_s, self.progress);
        r.check |= self.check;
        if let Some(mode) = &self.precondition {
            r.precondition = mode.parse()?;
        }
        if let Some(path) = &self.switch_ddl {
            r.switch_ddl =
                Some(std::fs::read_to_string(path).map_err(|err| format!("--switch-ddl {}: {err}", path.display()))?);
        }
        if self.switch_at.is_some() {
            r.switch_at_s = self.switch_at;
        }
        set(&mut c.seed, self.seed);
        let spelling = Spelling {
            config: self.config.as_ref().map(|p| p.display().to_string()),
            schema: self.schema.as_ref().map(|p| p.display().to_string()),
        };
        Ok((c, spelling))
    }
}

fn set<T>(field: &mut T, flag: Option<T>) {
    if let Some(v) = flag {
        *field = v;
    }
}

#[derive(Args)]
pub struct BenchCommand {
    #[command(flatten)]
    common: BenchArgs,
    #[arg(long, value_parser = scheme,
          help = with_default("IPA scheme NxM of the data region (0x0: none)", defaults().engine.ipa))]
    ipa: Option<IpaScheme>,
    /// Write the result as JSON to this file (metrics, the resolved config, seed and
    /// git commit); a new file, see --overwrite.
    #[arg(long)]
    json: Option<PathBuf>,
    #[command(flatten)]
    overwrite: crate::output::OverwriteArg,
    #[command(flatten)]
    sqlite: crate::sqlite_bench::SqliteArgs,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum Format {
    /// A markdown table and its legend, nothing else (progress and logs go to stderr).
    Markdown,
    Csv,
    /// The results of every run, as `bench --json` writes one.
    Json,
}

/// `--jobs` of `compare` and `sweep`: the number given, else the machine's cores.
pub(crate) fn jobs(flag: Option<u32>) -> usize {
    flag.map_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()), |j| j as usize)
}

/// `run(0)`, …, `run(n - 1)` on up to `jobs` threads, each index run once; the results
/// in index order, so what a caller prints does not depend on which run ended first.
pub(crate) fn in_parallel<T: Send>(n: usize, jobs: usize, run: impl Fn(usize) -> T + Sync) -> Vec<T> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut done: Vec<(usize, T)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..jobs.clamp(1, n.max(1)))
            .map(|_| {
                scope.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        if i >= n {
                            return mine;
                        }
                        mine.push((i, run(i)));
                    }
                })
            })
            .collect();
        // A panicking run is a bug: carry its panic to the caller's thread.
        workers.into_iter().flat_map(|w| w.join().unwrap_or_else(|p| std::panic::resume_unwind(p))).collect()
    });
    done.sort_unstable_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, t)| t).collect()
}

/// Runs one experiment with a progress bar in `bars` (scheme, simulated seconds, tps);
/// its log lines go to stderr above the bars.
pub(crate) fn run_with_bar(experiment: &Experiment, bars: &MultiProgress) -> Result<ExperimentResult, ExperimentError> {
    let driver = &experiment.config().driver;
    let total_s = driver.warmup_s + driver.sim_time_s;
    let label = format!("[{}]", experiment.scheme());
    let bar = bars.add(ProgressBar::new((total_s * 1000.0) as u64));
    let style = ProgressStyle::with_template("{prefix:>7} [{bar:30}] {msg}").expect("valid template");
    bar.set_style(style.progress_chars("=> "));
    bar.set_prefix(label.clone());
    let log = |line: String| bars.suspend(|| eprintln!("{line}"));
    let result = experiment.run(&mut |p| {
        match p {
            Progress::Loading { workload, size, .. } => {
                bar.set_message(format!("loading {workload} ({size})"));
                bar.enable_steady_tick(Duration::from_millis(120));
            }
            Progress::Loaded { wall_seconds, fill } => {
                bar.disable_steady_tick();
                log(format!(
                    "loaded {} ({}) for {label} in {wall_seconds:.1} s",
                    experiment.config().workload.name,
                    experiment.size()
                ));
                log(format!(
                    "database {:.1} MiB in data regions of {:.1} MiB ({:.0}% full)",
                    fill.database_mib,
                    fill.data_regions_mib,
                    fill.share() * 100.0
                ));
            }
            Progress::Running { sim_seconds, total_sim_seconds, throughput_tps, .. } => {
                bar.set_position((sim_seconds * 1000.0) as u64);
                bar.set_message(format!(
                    "{sim_seconds:.1}/{total_sim_seconds:.1} simulated s  {throughput_tps:.0} tps"
                ));
            }
            Progress::Interval(line) => log(format!(
                "{label} {:>7.1} s  {:>9.1} tps  read {:.3} ms  write {:.3} ms  erases {}  \
                 out-of-place {}  appends {}  GC migrations {}",
                line.sim_seconds,
                line.throughput_tps,
                line.read_latency_ms,
                line.write_latency_ms,
                line.gc_erases_so_far,
                line.out_of_place_writes,
                line.in_place_appends,
                line.gc_page_migrations
            )),
        }
        Control::Continue
    });
    match &result {
        Ok(r) => {
            bar.set_position(bar.length().unwrap_or(0));
            bar.finish_with_message(format!(
                "{:.1} simulated s  {:.0} tps",
                r.metrics.sim_seconds + driver.warmup_s,
                r.metrics.throughput_tps
            ));
        }
        Err(_) => bar.abandon(),
    }
    result
}

pub(crate) fn show(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else {
        format!("{v:.3}")
    }
}

/// The consistency check's line, naming the scheme; `None` when none was asked for.
pub(crate) fn check_line(run: &ExperimentResult) -> Option<(String, bool)> {
    run.consistency_check.as_ref().map(|c| match c {
        Consistency::Passed => (format!("[{}] consistency check passed", run.ipa), true),
        Consistency::Failed(e) => (format!("[{}] consistency check FAILED: {e}", run.ipa), false),
    })
}

/// `bench --engine sqlite` (or `--config` with a SQLite run's file): the file's config
/// (or the defaults) with the workload flags, the SQLite flags, the device and FTL flags
/// and `--seed`, `--cpu-us`, `--check`, `--storage` applied; the engine's flags are refused.
fn bench_sqlite(cmd: BenchCommand, base: Option<SqliteConfig>, json: Option<OutputFile>) -> Result<bool, String> {
    let c = &cmd.common;
    let engine_only = [
        ("--image-sync", c.image_sync.is_some()),
        ("--buffer", c.buffer.is_some()),
        ("--eviction", c.eviction.is_some()),
        ("--replacement", c.replacement.is_some()),
        ("--precondition", c.precondition.is_some()),
        ("--ipa-mode", c.ipa_mode.is_some()),
        ("--v", c.v.is_some()),
        ("--ipa-objects", !c.ipa_objects.is_empty()),
        ("--schema", c.schema.is_some()),
        ("--checkpoint-log-share", c.checkpoint_log_share.is_some()),
        ("--log-chips", c.log_chips.is_some()),
        ("--log-device-mib", c.log_device_mib.is_some()),
        ("--sim-time", c.sim_time.is_some()),
        ("--warmup", c.warmup.is_some()),
        ("--terminals", c.terminals.is_some()),
        ("--group-commit-us", c.group_commit_us.is_some()),
        ("--log-buffer-bytes", c.log_buffer_bytes.is_some()),
        ("--progress", c.progress.is_some()),
        ("--log-region-bytes", c.log_region_bytes.is_some()),
        ("--sector-bytes", c.sector_bytes.is_some()),
        ("--switch-at", c.switch_at.is_some()),
        ("--ipa", cmd.ipa.is_some()),
    ];
    if let Some((flag, _)) = engine_only.iter().find(|(_, given)| *given) {
        return Err(format!("{flag} is a DeltaFlash engine setting; --engine sqlite does not take it"));
    }
    let file = c.config.as_ref().map(|p| p.display().to_string());
    let mut config = base.unwrap_or_default();
    c.apply_device(&mut config.device)?;
    c.workload.apply(&mut config.workload);
    match c.storage {
        None => {}
        Some(StorageChoice::Host) => config.storage = SqliteStorageConfig::Host,
        Some(StorageChoice::Noftl) => {
            return Err("--storage noftl: SQLite needs a block device; use --storage host or an FTL (ftl:KIND)".into())
        }
        Some(StorageChoice::Ipl) => {
            return Err("--storage ipl logs changes of the DeltaFlash engine's pages; SQLite needs a block device: \
                        use --storage host or an FTL (ftl:KIND)"
                .into())
        }
        Some(StorageChoice::Ftl(kind)) => config.storage = SqliteStorageConfig::Ftl(FtlConfig::new(kind)),
    }
    match &mut config.storage {
        SqliteStorageConfig::Ftl(ftl) => c.ftl.apply(ftl)?,
        other => c.ftl.refuse_without_ftl(&format!("SQLite on --storage {other}"))?,
    }
    cmd.sqlite.apply_to(&mut config)?;
    let run = &mut config.run;
    set(&mut run.seed, c.seed);
    set(&mut run.cpu_ns_per_statement, c.cpu_us.map(|us| (us * 1000.0).round() as u64));
    run.check |= c.check;
    let config = crate::sqlite_bench::resolve(&config, file.as_deref())?;
    crate::sqlite_bench::run(&config, json.as_ref())
}

pub fn bench(cmd: BenchCommand) -> Result<bool, String> {
    let json = cmd.overwrite.check("--json", cmd.json.as_deref())?;
    let sqlite_file = match cmd.common.config.as_deref().map(read_config_file).transpose()? {
        Some(ConfigFile::Sqlite(c)) => Some(*c),
        _ => None,
    };
    if cmd.sqlite.engine == crate::sqlite_bench::Engine::Sqlite || sqlite_file.is_some() {
        if cmd.common.config.is_some() && sqlite_file.is_none() {
            let path = cmd.common.config.as_ref().map_or(String::new(), |p| p.display().to_string());
            return Err(format!(
                "--config {path}: an experiment of the DeltaFlash engine; a SQLite run's file says engine = \"sqlite\""
            ));
        }
        return bench_sqlite(cmd, sqlite_file, json);
    }
    let journal = cmd.sqlite.journal().map(|j| j.engine()).transpose()?;
    if let Some(flag) = cmd.sqlite.sqlite_only_flags().into_iter().find(|f| *f != "--journal") {
        return Err(format!("{flag} is a setting of SQLite runs; it needs --engine sqlite"));
    }
    if let Some(name) = cmd.common.workload.workload.as_ref().filter(|n| REGISTRY.iter().all(|w| w.name != n.as_str()))
    {
        return Err(format!("--workload {name} runs on SQLite only; add --engine sqlite"));
    }
    let (mut config, spelling) = cmd.common.config(cmd.ipa)?;
    set(&mut config.engine.journal, journal.map(Some));
    check_new_image(&config)?;
    let experiment = Experiment::new(config).map_err(|e| spelling.error(&e))?;
    let run = run_with_bar(&experiment, &MultiProgress::new()).map_err(|e| spelling.error(&e))?;
    let mut table = vec![Row::new(vec!["metric".into(), format!("[{}]", run.ipa)])];
    table.extend(run.table_rows().into_iter().map(|(k, v)| Row::new(vec![k.into(), show(v)])));
    print_table(&table);
    let m = &run.metrics;
    let mut latencies =
        vec![Row::new(["latency [µs]", "count", "p50", "p95", "p99", "p99.9", "max"].map(String::from).to_vec())];
    let overall = [
        ("page read", m.read_latency_us),
        ("page write", m.write_latency_us),
        ("transaction", m.transaction_latency_us),
    ];
    // Then a row per transaction type, under the transactions' row.
    let by_type = m.transaction_latency_us_by_type.iter().map(|(kind, &l)| (format!("  {kind}"), l));
    for (name, l) in overall.map(|(name, l)| (name.to_string(), l)).into_iter().chain(by_type) {
        let mut row = vec![name, l.count.to_string()];
        row.extend([l.p50, l.p95, l.p99, l.p99_9, l.max].map(|v| format!("{v:.1}")));
        latencies.push(Row::new(row));
    }
    print_table(&latencies);
    let memory = crate::memory::MemoryReport::now(crate::memory::Kept {
        device: run.memory_device_bytes,
        mapping: run.memory_mapping_bytes,
        buffer_pool: run.memory_buffer_pool_bytes,
    });
    println!(
        "{} transactions in {:.1} simulated s; {:.1} wall s ({:.1} for the run, the rest loading); {}",
        run.metrics.transactions,
        run.metrics.sim_seconds,
        run.wall_seconds,
        run.run_wall_seconds,
        memory.line()
    );
    if let Some(file) = &json {
        let mut value = run.to_json();
        memory.insert_into(&mut value);
        value["command"] = serde_json::json!("bench");
        let text = serde_json::to_string_pretty(&value).expect("json") + "\n";
        file.write(text.as_bytes())?;
    }
    Ok(check_line(&run).is_none_or(|(line, ok)| {
        println!("{line}");
        ok
    }))
}

/// Refuses, before anything runs, a run whose new database image (`--image`) cannot be
/// created: something is at its path, or its directory is missing or read-only.
pub(crate) fn check_new_image(config: &ExperimentConfig) -> Result<(), String> {
    config.device.image.as_deref().map_or(Ok(()), |path| crate::output::check_new("--image", path))
}

/// The legend printed under the markdown table.
pub(crate) fn legend(baseline: &str) -> String {
    format!(
        "`[NxM]`: the scheme's absolute values; `[NxM] Δ%`: its change against the baseline {baseline} in \
         percent (– where the baseline is 0)."
    )
}

/// Runs `config` under every scheme, `jobs` at once; the results in `schemes` order.
/// Every experiment is checked before any runs.
pub(crate) fn run_schemes(
    config: &ExperimentConfig,
    spelling: &Spelling,
    schemes: &[IpaScheme],
    jobs: usize,
) -> Result<Vec<ExperimentResult>, String> {
    let experiments = schemes
        .iter()
        .map(|s| {
            let mut config = config.clone();
            config.engine.ipa = s.to_string();
            Experiment::new(config).map_err(|e| spelling.error(&e))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let bars = MultiProgress::new();
    in_parallel(experiments.len(), jobs, |i| run_with_bar(&experiments[i], &bars).map_err(|e| spelling.error(&e)))
        .into_iter()
        .collect()
}

/// Prints a table as markdown (header, rule, rows) or CSV; JSON is the caller's.
pub(crate) fn print_grid(format: Format, header: &[String], lines: &[Vec<String>]) {
    if let Format::Csv = format {
        println!("{}", header.join(","));
        for l in lines {
            println!("{}", l.join(","));
        }
        return;
    }
    println!("| {} |", header.join(" | "));
    println!("|{}", "---|".repeat(header.len()));
    for l in lines {
        println!("| {} |", l.join(" | "));
    }
}

/// The header and rows: the baseline's values, then for each other scheme its values
/// (`[NxM]`) and their change against the baseline (`[NxM] Δ%`).
pub(crate) fn compare_table(runs: &[ExperimentResult]) -> (Vec<String>, Vec<Vec<String>>) {
    let mut header = vec!["metric".to_string(), format!("[{}]", runs[0].ipa)];
    for r in &runs[1..] {
        header.extend([format!("[{}]", r.ipa), format!("[{}] Δ%", r.ipa)]);
    }
    let base = runs[0].table_rows();
    let mut lines: Vec<Vec<String>> = Vec::new();
    for (k, (label, v0)) in base.iter().enumerate() {
        let mut line = vec![label.to_string(), show(*v0)];
        for r in &runs[1..] {
            let v = r.table_rows()[k].1;
            line.push(show(v));
            line.push(if *v0 == 0.0 { "–".into() } else { format!("{:+.0}", (v - v0) / v0 * 100.0) });
        }
        lines.push(line);
    }
    let mut ratio = vec!["Out-of-place : IPA".to_string(), "–".into()];
    for r in &runs[1..] {
        let m = &r.metrics;
        ratio.push(if m.in_place_appends == 0 {
            "–".into()
        } else {
            format!("{:.2} : 1", m.out_of_place_writes as f64 / m.in_place_appends as f64)
        });
        ratio.push("–".into());
    }
    lines.push(ratio);
    (header, lines)
}

#[derive(Args)]
pub struct CheckCommand {
    /// Database image written by `bench --image`.
    #[arg(long)]
    image: PathBuf,
    #[command(flatten)]
    workload: WorkloadArgs,
}

/// Opens a database image (restart recovery included) and checks the workload's
/// consistency conditions.
pub fn check(cmd: CheckCommand) -> Result<bool, String> {
    let mut workload = WorkloadConfig { name: "tpcc".into(), params: Default::default() };
    cmd.workload.apply(&mut workload);
    let spelling = Spelling { config: None, schema: None };
    let configured = registry::find(&workload.name)
        .and_then(|w| w.configure(&workload.params))
        .map_err(|e| spelling.error(&e.into()))?;
    let storage = nand::MemoryStorage::open_image(&cmd.image).map_err(|e| e.to_string())?;
    let mut db = Database::open(nand::Device::new(Box::new(storage)), DbOptions::default())
        .map_err(|e| format!("{}: {e}", cmd.image.display()))?;
    let mut wl = configured.build(&mut ChaCha8Rng::seed_from_u64(0));
    match wl.check(&mut db) {
        Ok(()) => {
            println!("{}: {} consistency conditions hold", cmd.image.display(), wl.name());
            Ok(true)
        }
        Err(e) => {
            println!("{}: {e}", cmd.image.display());
            Ok(false)
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::compare::CompareCommand;
    use clap::FromArgMatches;

    /// A result's JSON without what depends on the machine (wall time and speed per
    /// wall-second, the process's peak memory, the build's commit).
    pub(crate) fn simulated_only(mut v: serde_json::Value) -> serde_json::Value {
        if let serde_json::Value::Object(map) = &mut v {
            map.retain(|k, _| !k.contains("wall") && !k.contains("rss") && k != "git_commit");
        }
        v
    }

    #[test]
    fn in_parallel_keeps_index_order_whatever_the_jobs() {
        for jobs in [1, 2, 5, 40] {
            // Later indexes finish first when run at once.
            let out = in_parallel(7, jobs, |i| {
                std::thread::sleep(Duration::from_millis(7 - i as u64));
                i * 10
            });
            assert_eq!(out, [0, 10, 20, 30, 40, 50, 60], "jobs {jobs}");
        }
        assert!(in_parallel(0, 3, |i| i).is_empty());
    }

    /// `compare` on three schemes: the results of three threads are those of one,
    /// in the same order.
    #[test]
    fn a_parallel_compare_gives_the_serial_results() {
        let args = [
            "compare",
            "--workload",
            "tatp",
            "--subscribers",
            "1000",
            "--chips",
            "4",
            "--blocks-per-chip",
            "64",
            "--pages-per-block",
            "64",
            "--sim-time",
            "0.5",
            "--warmup",
            "0.2",
            "--seed",
            "2",
            "--schemes",
            "0x0,2x4,1x8",
        ];
        let command = CompareCommand::augment_args(clap::Command::new("compare"));
        let cmd = CompareCommand::from_arg_matches(&command.try_get_matches_from(args).expect("flags parse"))
            .expect("flags parse");
        let (config, spelling) = cmd.common.config(None).expect("config");
        let json = |jobs| -> Vec<serde_json::Value> {
            let runs = run_schemes(&config, &spelling, &cmd.schemes, jobs).expect("runs");
            runs.iter().map(|r| simulated_only(r.to_json())).collect()
        };
        let serial = json(1);
        let ipa: Vec<&str> = serial.iter().map(|r| r["ipa"].as_str().unwrap_or("")).collect();
        assert_eq!(ipa, ["0x0", "2x4", "1x8"]);
        assert!(serial[0]["transactions"].as_u64() > Some(0));
        assert_ne!(serial[0], serial[1], "different schemes, different results");
        assert_eq!(json(3), serial);
    }
}
