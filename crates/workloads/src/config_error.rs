//! Why a config cannot be run: a syntax error, a field out of range or at odds with
//! another, or a device whose metadata alone is too large for the memory there is. Every front-end spells the
//! fields its own way ([`ConfigError::message`]).

use crate::limits;
use std::fmt;

/// A config that cannot be run, and why.
#[derive(Clone, Debug, PartialEq)]
pub enum ConfigError {
    /// Text that is not valid TOML/JSON or does not fit the fields; 1-based position.
    Syntax { line: usize, column: usize, message: String },
    /// A field out of its range, unknown, or at odds with another field.
    Field { field: String, problem: String },
    /// The emulated device's metadata would take more memory than there is (or than
    /// allowed) before any page is written.
    Footprint(Footprint),
}

impl ConfigError {
    /// A field's error; a quoted value in `problem` (and an over-long `field`, which
    /// may name a user's parameter) is cut to 80 characters.
    pub fn field(field: impl Into<String>, problem: impl Into<String>) -> ConfigError {
        let field = field.into();
        let field = if field.chars().count() > limits::QUOTED_CHARS { limits::quote(&field) } else { field };
        ConfigError::Field { field, problem: limits::cut_quoted(&problem.into()) }
    }

    /// The message, with config fields spelled by `spell` (a front-end's own names:
    /// `device.chips` → `--chips`).
    pub fn message(&self, spell: &dyn Fn(&str) -> String) -> String {
        match self {
            ConfigError::Syntax { line, column, message } => format!("{line}:{column}: {message}"),
            ConfigError::Field { field, problem } => format!("{}: {problem}", spell(field)),
            ConfigError::Footprint(footprint) => footprint.message(spell),
        }
    }

    /// The config field the error is about, where there is one.
    pub fn field_name(&self) -> Option<&str> {
        match self {
            ConfigError::Syntax { .. } => None,
            ConfigError::Field { field, .. } => Some(field),
            ConfigError::Footprint(_) => Some(Footprint::FIELD),
        }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message(&|field| field.to_string()))
    }
}

/// A device refused for its memory footprint: what it is, what it needs and the limit.
#[derive(Clone, Debug, PartialEq)]
pub struct Footprint {
    pub chips: u32,
    pub blocks_per_chip: u32,
    pub pages_per_block: u32,
    pub page_bytes: u32,
    /// Its blocks' cells and OOB bytes counted (an in-memory device with data), or its
    /// metadata only.
    pub keeps_data: bool,
    pub need_bytes: u64,
    pub limit_bytes: u64,
    /// The limit is `max_memory_bytes` (else the memory available).
    pub limit_given: bool,
}

impl Footprint {
    /// The field a footprint refusal is filed under: the usual thing to change.
    pub const FIELD: &'static str = "device.blocks_per_chip";

    pub fn message(&self, spell: &dyn Fn(&str) -> String) -> String {
        let limit = if self.limit_given {
            spell("device.max_memory_bytes")
        } else {
            "the memory available less a margin".into()
        };
        let instead =
            if self.keeps_data { format!(" or {} (metadata only)", spell("device.no_data")) } else { String::new() };
        format!(
            "this device ({} chips × {} blocks × {} pages of {} bytes) needs about {} for its metadata before any page \
             is written, more than {limit} ({}); pass a smaller {}{instead}",
            self.chips,
            self.blocks_per_chip,
            self.pages_per_block,
            self.page_bytes,
            limits::human_bytes(self.need_bytes),
            limits::human_bytes(self.limit_bytes),
            spell(Self::FIELD),
        )
    }
}

impl std::error::Error for ConfigError {}
