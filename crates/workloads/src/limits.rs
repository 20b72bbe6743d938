//! The allowed range of every number an experiment takes, defined once: the config
//! check ([`crate::config`]) and the command line's value parsers both use these, so a
//! flag and its config field refuse the same values with the same words.
//!
//! A refusal says the range and the value: "must be in (0, 1], got 0". Non-finite
//! floats (NaN, infinities, and decimal text too large for an f64) are always refused.
//! An offending text is quoted through [`quote`] (or, in a message made elsewhere,
//! [`cut_quoted`]): at most 80 of its characters, so a 10 MB token cannot flood an error.
//!
//! The other limits every front-end shares live here too: the memory of an emulated
//! device (its bookkeeping, [`bookkeeping_bytes`], checked up front against
//! `--max-memory` or MemAvailable less a margin, [`device_memory_limit_bytes`]; the rest
//! of that limit is its page images' budget) and the size of a parameter grid run without
//! confirmation ([`check_grid_points`]).

use std::fmt;

/// An interval of floats; each end open or closed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FloatRange {
    pub min: f64,
    pub min_open: bool,
    pub max: f64,
    pub max_open: bool,
    /// What the number counts, for the message ("simulated seconds"); may be empty.
    pub unit: &'static str,
}

impl FloatRange {
    const fn closed(min: f64, max: f64, unit: &'static str) -> FloatRange {
        FloatRange { min, min_open: false, max, max_open: false, unit }
    }

    const fn above(min: f64, max: f64, unit: &'static str) -> FloatRange {
        FloatRange { min, min_open: true, max, max_open: false, unit }
    }

    pub fn contains(self, v: f64) -> bool {
        let low = if self.min_open { v > self.min } else { v >= self.min };
        let high = if self.max_open { v < self.max } else { v <= self.max };
        v.is_finite() && low && high
    }

    /// `v`, or what is wrong with it.
    pub fn check(self, v: f64) -> Result<f64, String> {
        if self.contains(v) {
            Ok(v)
        } else {
            Err(format!("must be in {self}, got {v}"))
        }
    }

    /// Parses a decimal number and checks it.
    pub fn parse(self, text: &str) -> Result<f64, String> {
        let v: f64 = text.trim().parse().map_err(|_| format!("{} is not a number; must be in {self}", quote(text)))?;
        self.check(v)
    }
}

impl fmt::Display for FloatRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (open, close) = (if self.min_open { '(' } else { '[' }, if self.max_open { ')' } else { ']' });
        write!(f, "{open}{}, {}{close}", self.min, self.max)?;
        if !self.unit.is_empty() {
            write!(f, " {}", self.unit)?;
        }
        Ok(())
    }
}

/// A closed interval of whole numbers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CountRange {
    pub min: u64,
    pub max: u64,
}

impl CountRange {
    const fn at_least(min: u64, max: u64) -> CountRange {
        CountRange { min, max }
    }

    pub fn check(self, v: u64) -> Result<u64, String> {
        if (self.min..=self.max).contains(&v) {
            Ok(v)
        } else {
            Err(format!("must be {self}, got {v}"))
        }
    }

    /// Parses a whole number (a sign is refused with the range, not as a parse error).
    pub fn parse(self, text: &str) -> Result<u64, String> {
        let t = text.trim();
        match t.parse::<u64>() {
            Ok(v) => self.check(v),
            Err(_) if t.parse::<i128>().is_ok() => Err(format!("must be {self}, got {t}")),
            Err(_) => Err(format!("{} is not a whole number; must be {self}", quote(text))),
        }
    }
}

impl fmt::Display for CountRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.max == u32::MAX as u64 || self.max == u64::MAX {
            write!(f, "at least {}", self.min)
        } else {
            write!(f, "in {}..={}", self.min, self.max)
        }
    }
}

/// The longest warm-up or measured time: simulated nanoseconds of both still fit a u64
/// (which holds 1.8e10 seconds).
const MAX_SIM_SECONDS: f64 = 1e9;

/// Measured simulated seconds.
pub const SIM_TIME_S: FloatRange = FloatRange::above(0.0, MAX_SIM_SECONDS, "simulated seconds");
/// Warm-up simulated seconds.
pub const WARMUP_S: FloatRange = FloatRange::closed(0.0, MAX_SIM_SECONDS, "simulated seconds");
/// Simulated seconds between interval lines (0: none).
pub const PROGRESS_INTERVAL_S: FloatRange = FloatRange::closed(0.0, MAX_SIM_SECONDS, "simulated seconds");
/// Simulated CPU time per record operation.
pub const CPU_PER_OPERATION_US: FloatRange = FloatRange::closed(0.0, 1e6, "simulated µs");
/// Group commit window.
pub const GROUP_COMMIT_US: FloatRange = FloatRange::closed(0.0, 1e6, "simulated µs");
/// Buffer pool size as a share of the loaded database.
pub const BUFFER_SHARE: FloatRange = FloatRange::above(0.0, 1.0, "of the database");
/// Log fill at which a checkpoint is taken.
pub const CHECKPOINT_LOG_SHARE: FloatRange =
    FloatRange { min: 0.0, min_open: true, max: 1.0, max_open: true, unit: "of the log region" };
/// Closed-loop terminals (each keeps its own clock; the bound keeps that small).
pub const TERMINALS: CountRange = CountRange::at_least(1, 65_536);
/// Measured transactions (`driver.transactions`, SQLite's TPC-B).
pub const TRANSACTIONS: CountRange = CountRange::at_least(1, 1 << 40);
/// V, the metadata pairs per delta-record (the page format's limit; 0: metadata bytes
/// take the record's M pairs, `engine::delta::IpaScheme::gross`).
pub const V: CountRange = CountRange::at_least(0, engine::delta::MAX_PAIRS as u64);
/// Chips of the log region (the device's chip count bounds it further).
pub const LOG_CHIPS: CountRange = CountRange::at_least(1, u32::MAX as u64);
/// MiB of the log's own device (`engine.log_device_mib`): up to 1 TiB.
pub const LOG_DEVICE_MIB: CountRange = CountRange::at_least(1, 1 << 20);
/// Unforced log bytes past which full log pages are written ahead (0: every full page
/// at once); `bench` and `torture` both take up to 1 GiB.
pub const LOG_BUFFER_BYTES: CountRange = CountRange::at_least(0, 1 << 30);

/// The most characters of an offending value an error message quotes.
pub const QUOTED_CHARS: usize = 80;

/// `text` in backquotes for an error message: whole when it has at most 80 characters,
/// else its first 80, "…", and its length ("`aaaa…` (10485760 characters)").
pub fn quote(text: &str) -> String {
    quote_with(text, '`')
}

fn quote_with(text: &str, mark: char) -> String {
    let length = text.chars().count();
    if length <= QUOTED_CHARS {
        return format!("{mark}{text}{mark}");
    }
    let head: String = text.chars().take(QUOTED_CHARS).collect();
    format!("{mark}{head}…{mark} ({length} characters)")
}

/// `message` with every quoted span (between '…', "…" or `…`, or from an opening mark
/// to the end) longer than 80 characters cut as [`quote`] cuts: for messages made
/// elsewhere (serde, TOML, clap, the device crates) that quote a whole value. An
/// apostrophe inside a word ("engine's") opens and closes nothing.
pub fn cut_quoted(message: &str) -> String {
    let word = |c: Option<char>| c.is_some_and(char::is_alphanumeric);
    let mut out = String::with_capacity(message.len().min(4096));
    let mut rest = message;
    let mut before: Option<char> = None;
    loop {
        let open = rest.char_indices().find(|&(i, c)| {
            let prev = if i == 0 { before } else { rest[..i].chars().next_back() };
            matches!(c, '"' | '`') || (c == '\'' && !word(prev))
        });
        let Some((open, mark)) = open else { break };
        out.push_str(&rest[..open]);
        let inside = &rest[open + 1..];
        let close =
            inside.char_indices().find(|&(i, c)| c == mark && (mark != '\'' || !word(inside[i + 1..].chars().next())));
        let (span, after) = match close {
            Some((i, _)) => (&inside[..i], &inside[i + 1..]),
            None => (inside, ""),
        };
        // A span cut already (80 characters and "…") stays as it is.
        let cut = span.ends_with('…') && span.chars().count() == QUOTED_CHARS + 1;
        out.push_str(&if cut { format!("{mark}{span}{mark}") } else { quote_with(span, mark) });
        before = Some(mark);
        rest = after;
    }
    out.push_str(rest);
    out
}

/// Bytes for a message: `512 B`, `1.0 KiB`, `3.2 GiB`.
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

/// Bytes an in-memory device of `g` takes whatever it holds, before any page image: the
/// per-page and per-block metadata of the NAND model and the region maps and, when it
/// keeps page bytes, the cells and OOB bytes of its blocks, counted for every block
/// (aging programs every block). Its page images are bounded apart, at run time, by the
/// page pool's budget (`nand::MemoryStorage::set_page_budget`).
pub fn bookkeeping_bytes(g: &nand::Geometry, keeps_data: bool) -> u64 {
    // Measured on the NAND model and the region maps: program count (1), region page
    // meta (12) and map entry (8), live bit: ~22 B/page; erase count, write pointer,
    // cell pointer, region block state: ~48 B/block.
    const PER_PAGE: u64 = 22;
    const PER_BLOCK: u64 = 48;
    let blocks = g.chips() as u64 * g.blocks_per_chip as u64;
    let pages = blocks.saturating_mul(g.pages_per_block as u64);
    let meta = pages.saturating_mul(PER_PAGE).saturating_add(blocks * PER_BLOCK);
    if !keeps_data {
        return meta;
    }
    // A programmed block's cells, and its pages' OOB bytes at one whole area a page (the
    // arena keeps at most twice what its pages hold, and the FTLs write 28-52 bytes of
    // a 128-byte area: `flash::ftl::pagelog`).
    let cells = blocks.saturating_mul(g.memory_footprint().block_cells_bytes);
    let oob = pages.saturating_mul(g.oob_bytes as u64);
    meta.saturating_add(cells).saturating_add(oob)
}

/// Memory left to other work when an emulated device's limit is `MemAvailable` rather
/// than a given `--max-memory`: the process's own (binary, buffer pool or SQLite cache,
/// FTL maps; the full-size TPC-C run kept 317 MiB besides its device, crates/reproduce
/// `cost.rs`) and what other processes may take while the run lasts. A policy, not a
/// measurement: 512 MiB and a sixteenth of what is available.
pub fn available_margin_bytes(available_bytes: u64) -> u64 {
    (512 << 20) + available_bytes / 16
}

/// The memory an emulated device may take: `max_memory_bytes` when given, else
/// `MemAvailable` less [`available_margin_bytes`]; `None` when neither is known.
pub fn device_memory_limit_bytes(max_memory_bytes: Option<u64>) -> Option<u64> {
    max_memory_bytes.or_else(|| available_memory_bytes().map(|a| a.saturating_sub(available_margin_bytes(a))))
}

/// `MemAvailable` of /proc/meminfo in bytes, where there is one.
pub fn available_memory_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib.saturating_mul(1024))
}

/// Points a parameter grid may have before running it needs a confirmation: each is a
/// whole experiment, so a grid one typo larger should not start unasked.
pub const GRID_POINTS_UNCONFIRMED: u64 = 10_000;

/// Refuses a grid of `points` (`None`: more than a u64 holds) over
/// [`GRID_POINTS_UNCONFIRMED`] unless `confirmed`; `confirm` is how the caller's user
/// confirms (`--yes`, `yes=True`).
pub fn check_grid_points(points: Option<u64>, confirmed: bool, confirm: &str) -> Result<(), String> {
    match points {
        Some(n) if n <= GRID_POINTS_UNCONFIRMED || confirmed => Ok(()),
        Some(n) => Err(format!(
            "the grid has {n} points, more than {GRID_POINTS_UNCONFIRMED}; each is a whole run: pass {confirm} to \
             run them all, or give the grid fewer values"
        )),
        None => Err(format!("the grid has more than {} points; give it fewer values", u64::MAX)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float_ranges_refuse_ends_nan_and_overflow_with_the_range() {
        assert_eq!(SIM_TIME_S.parse("2.5"), Ok(2.5));
        for bad in ["0", "-1", "NaN", "inf", "1e400", "2e9"] {
            let e = SIM_TIME_S.parse(bad).unwrap_err();
            assert!(e.contains("(0, 1000000000] simulated seconds"), "{bad}: {e}");
        }
        assert!(SIM_TIME_S.parse("ten").unwrap_err().contains("not a number"));
        assert!(CHECKPOINT_LOG_SHARE.check(1.0).is_err() && CHECKPOINT_LOG_SHARE.check(0.5).is_ok());
        assert!(BUFFER_SHARE.check(1.0).is_ok() && BUFFER_SHARE.check(0.0).is_err());
        assert!(WARMUP_S.check(0.0).is_ok());
    }

    #[test]
    fn count_ranges_name_the_range_for_signs_and_zero() {
        assert_eq!(TERMINALS.parse("8"), Ok(8));
        assert_eq!(TERMINALS.parse("0").unwrap_err(), "must be in 1..=65536, got 0");
        assert_eq!(TERMINALS.parse("-3").unwrap_err(), "must be in 1..=65536, got -3");
        assert!(TERMINALS.parse("1.5").unwrap_err().contains("not a whole number"));
        assert_eq!(LOG_CHIPS.parse("0").unwrap_err(), "must be at least 1, got 0");
        assert!(V.check(126).is_err() && V.check(125).is_ok());
    }

    #[test]
    fn quotes_cut_long_values_to_80_characters() {
        assert_eq!(quote("floppy"), "`floppy`");
        let long = "é".repeat(100_000);
        let q = quote(&long);
        assert_eq!(q, format!("`{}…` (100000 characters)", "é".repeat(80)));
        assert!(TERMINALS.parse(&long).unwrap_err().len() < 300);
        let message = format!("invalid type: string \"{long}\", expected u32 at 'x'");
        assert_eq!(
            cut_quoted(&message),
            format!("invalid type: string \"{}…\" (100000 characters), expected u32 at 'x'", "é".repeat(80))
        );
        assert_eq!(cut_quoted("no quotes"), "no quotes");
        assert_eq!(cut_quoted(&q), q, "a quoted value is not cut twice");
        let words = format!("the engine's {} pages aren't", "x ".repeat(60));
        assert_eq!(cut_quoted(&words), words, "apostrophes in words quote nothing");
        assert_eq!(cut_quoted(&format!("open `{long}")), format!("open `{}…` (100000 characters)", "é".repeat(80)));
    }

    #[test]
    fn grids_over_ten_thousand_points_need_confirmation() {
        assert!(check_grid_points(Some(10_000), false, "--yes").is_ok());
        let e = check_grid_points(Some(10_001), false, "--yes").unwrap_err();
        assert!(e.starts_with("the grid has 10001 points, more than 10000") && e.contains("--yes"), "{e}");
        assert!(check_grid_points(Some(1_000_000), true, "--yes").is_ok());
        assert!(check_grid_points(None, true, "--yes").is_err());
    }

    #[test]
    fn bytes_read_in_their_unit() {
        assert_eq!(human_bytes(512), "512 B");
        assert_eq!(human_bytes(1024), "1.0 KiB");
        assert_eq!(human_bytes(64 << 20), "64.0 MiB");
        assert_eq!(human_bytes(3 << 40), "3.0 TiB");
    }
}
