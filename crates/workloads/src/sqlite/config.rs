//! A SQLite run's config (`bench --engine sqlite`, a file with `engine = "sqlite"`):
//! the storage, journal, device and workload of a run of a registered SQLite workload,
//! checked in one place ([`SqliteConfig::resolve`]) like the engine's experiment config.

use crate::config::{parse_json, parse_toml, DeviceConfig, WorkloadConfig};
use crate::config_error::ConfigError;
use crate::params::Params;
use flash::ftl::FtlConfig;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::PathBuf;

/// A run of a registered SQLite workload (`bench --engine sqlite`,
/// [`super::SQLITE_REGISTRY`]): a file says `engine = "sqlite"`, then names only
/// what it changes; unknown fields are refused. [`SqliteConfig::resolve`] is the one
/// place it is checked, as `ExperimentConfig::resolve` is for the engine's runs, and
/// fills in the workload's defaults, so the resolved config alone reproduces the run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SqliteConfig {
    /// Always `sqlite`: what tells a SQLite run's file from the engine's.
    pub engine: SqliteEngine,
    /// The emulated device (flash storage only).
    pub device: DeviceConfig,
    pub storage: SqliteStorageConfig,
    /// Who keeps SQLite's transactions atomic on flash [default: base-wal].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub journal: Option<SqliteJournal>,
    /// `nolgn` under `synchronous = normal`: SQLite page writes per FTL commit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub group_pages: Option<u32>,
    /// The file layer's write-back page cache in logical pages (flash storage only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub page_cache_pages: Option<usize>,
    /// Clean pages the file layer keeps in RAM after a write-back or read, as Linux's
    /// page cache (flash storage only) [default: 16,384; 0 keeps none].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clean_cache_pages: Option<usize>,
    /// The host I/O stack modelled under SQLite's files (flash storage only)
    /// [default: none].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_stack: Option<SqliteHostStack>,
    pub workload: WorkloadConfig,
    pub run: super::SqliteRunConfig,
}

/// The `engine` of a SQLite run's config: the one value `sqlite`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SqliteEngine {
    #[default]
    Sqlite,
}

/// Where SQLite's files live.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SqliteStorageConfig {
    /// Plain SQLite on the host, in memory or in `file` (created new), CPU-only clock.
    #[default]
    Host,
    /// Plain SQLite in this new host file.
    File(PathBuf),
    /// SQLite through the VFS on a conventional FTL over the whole device.
    Ftl(FtlConfig),
}

impl fmt::Display for SqliteStorageConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SqliteStorageConfig::Host | SqliteStorageConfig::File(_) => f.write_str("host"),
            SqliteStorageConfig::Ftl(c) => write!(f, "ftl:{}", c.kind.name()),
        }
    }
}

/// Who keeps SQLite's transactions atomic on flash.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SqliteJournal {
    /// SQLite's write-ahead log through the file layer.
    #[default]
    #[serde(alias = "wal")]
    BaseWal,
    /// SW-WAL: WAL frames page-aligned on flash, checkpoints by remapping (page FTL).
    SwWal,
    /// No log: NoLgn-FTL's transactions (nolgn FTL).
    Nolgn,
}

impl SqliteJournal {
    pub fn name(self) -> &'static str {
        match self {
            SqliteJournal::BaseWal => "base-wal",
            SqliteJournal::SwWal => "sw-wal",
            SqliteJournal::Nolgn => "nolgn",
        }
    }
}

/// The host I/O stack between SQLite and the device (`sqlite_flash::HostStack`,
/// docs/host-stack.md): `none` charges nothing, `ext4` a Linux system call, the VFS
/// and Ext4 `data=ordered`'s JBD2 journal commits at its cited costs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SqliteHostStack {
    #[default]
    None,
    #[serde(alias = "ext4-ordered")]
    Ext4,
}

impl SqliteHostStack {
    pub fn name(self) -> &'static str {
        match self {
            SqliteHostStack::None => "none",
            SqliteHostStack::Ext4 => "ext4",
        }
    }

    /// `none` or `ext4` (`ext4-ordered` also accepted).
    pub fn parse(text: &str) -> Result<SqliteHostStack, String> {
        match text {
            "none" => Ok(SqliteHostStack::None),
            "ext4" | "ext4-ordered" => Ok(SqliteHostStack::Ext4),
            _ => Err(format!("{} is not a host stack: none or ext4", crate::limits::quote(text))),
        }
    }

    /// The model the SQLite instance charges.
    pub fn stack(self) -> super::flash::HostStack {
        match self {
            SqliteHostStack::None => super::flash::HostStack::default(),
            SqliteHostStack::Ext4 => super::flash::HostStack::EXT4_ORDERED,
        }
    }
}

/// `nolgn`'s default commit group under `synchronous = normal`.
pub const DEFAULT_GROUP_PAGES: u32 = 1_000;

impl Default for SqliteConfig {
    fn default() -> Self {
        SqliteConfig {
            engine: SqliteEngine::Sqlite,
            device: DeviceConfig::default(),
            storage: SqliteStorageConfig::Host,
            journal: None,
            group_pages: None,
            page_cache_pages: None,
            clean_cache_pages: None,
            host_stack: None,
            workload: WorkloadConfig { name: "sqlite-bench".into(), params: Params::new() },
            run: super::SqliteRunConfig::default(),
        }
    }
}

impl SqliteConfig {
    /// Parses TOML; a syntax or type error carries its line and column.
    pub fn from_toml(text: &str) -> Result<SqliteConfig, ConfigError> {
        parse_toml(text)
    }

    pub fn from_json(text: &str) -> Result<SqliteConfig, ConfigError> {
        parse_json(text)
    }

    /// Checks every field against the others and fills in the defaults that depend on
    /// the storage and the workload: the journal, its group, the host stack, every
    /// workload parameter
    /// (the page cache's default is the file layer's, filled in by who opens it).
    /// Errors name the field (`journal`, `workload.num`).
    pub fn resolve(&self) -> Result<SqliteConfig, ConfigError> {
        let mut c = self.clone();
        let params = super::find(&c.workload.name)?.configure(&c.workload.params)?;
        c.workload.params = params.params();
        if let Some(share) = c.run.cache_share.filter(|s| !(*s > 0.0 && *s <= 1.0)) {
            return Err(ConfigError::field("run.cache_share", format!("{share} is not a share in (0, 1]")));
        }
        let ftl = match &c.storage {
            SqliteStorageConfig::Ftl(f) => Some(f.kind),
            SqliteStorageConfig::Host | SqliteStorageConfig::File(_) => None,
        };
        let Some(kind) = ftl else {
            let flash_only = [
                ("journal", c.journal.is_some()),
                ("group_pages", c.group_pages.is_some()),
                ("page_cache_pages", c.page_cache_pages.is_some()),
                ("clean_cache_pages", c.clean_cache_pages.is_some()),
                ("host_stack", c.host_stack.is_some()),
                ("run.free_space", c.run.free_space.is_some()),
            ];
            if let Some((field, _)) = flash_only.into_iter().find(|(_, set)| *set) {
                return Err(ConfigError::field(field, "applies to SQLite on flash; it needs storage ftl:KIND"));
            }
            return Ok(c);
        };
        c.device.fitting_geometry()?;
        let journal = c.journal.unwrap_or_default();
        match journal {
            SqliteJournal::Nolgn if kind != flash::ftl::FtlKind::Nolgn => {
                return Err(ConfigError::field("journal", "nolgn needs NoLgn-FTL: storage ftl:nolgn"))
            }
            SqliteJournal::SwWal if kind != flash::ftl::FtlKind::Page => {
                return Err(ConfigError::field("journal", "sw-wal remaps pages: only the page FTL (ftl:page) does"))
            }
            _ => {}
        }
        c.journal = Some(journal);
        c.host_stack.get_or_insert_default();
        match (journal, c.group_pages) {
            (SqliteJournal::Nolgn, None) => c.group_pages = Some(DEFAULT_GROUP_PAGES),
            (SqliteJournal::Nolgn, Some(0)) => return Err(ConfigError::field("group_pages", "must be at least 1")),
            (_, Some(_)) => return Err(ConfigError::field("group_pages", "applies to the nolgn journal only")),
            _ => {}
        }
        Ok(c)
    }
}
