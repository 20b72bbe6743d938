//! How a layout splits the data chips between its IPA and plain regions, and whether
//! each region holds its tables for the whole run.
//!
//! A region's tables need, by the end of a run of the layout, their pages at the
//! baseline's end plus the growth of a run as long as the baseline's warm-up and
//! measurement at the layout's predicted throughput or the baseline's, the higher: the
//! pages each table allocated per measured second (the log's allocation records) ×
//! (warm-up + measured seconds) × max(1, predicted throughput / the baseline's). The
//! baseline's end already holds the load,
//! the aging and the baseline's own growth, so this counts one run's growth twice: the
//! margin for a run that allocates faster than the one measured. In the IPA region an
//! object takes more pages, as fewer rows or entries fit a page ([`crate::space`]), an
//! object grows by whole extents, and in pslc mode a chip holds 1 / bits per cell of
//! its pages. A region holds (1 − over-provisioning) of its flash
//! pages (`flash::RegionSpec`).
//!
//! The split: of every split giving each region at least one chip, the one that leaves
//! the fuller region least full, counting that need; when even it leaves a region over
//! its capacity, no split holds the layout's growth ([`ChipSplit::fits`] false), which
//! the recommendation says and `advise --verify` refuses to run.

use crate::layout::{self, Table};
use crate::{space, Input};
use serde::Serialize;

/// A layout's chips per region and what each region must hold.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct ChipSplit {
    /// Chips of the IPA region (all data chips when there is no plain region).
    pub ipa_chips: u32,
    /// Flash pages each region's tables need by the end of the run, and the pages each
    /// region holds (0 for a plain region the layout does not have).
    pub ipa_needed_pages: f64,
    pub ipa_capacity_pages: f64,
    pub plain_needed_pages: f64,
    pub plain_capacity_pages: f64,
    /// Every region holds what it needs.
    pub fits: bool,
}

/// Flash pages `table` needs by the end of a run at `throughput_ratio` times the
/// baseline's throughput (at least the baseline's), its pages grown by a delta area of
/// `area_bytes` ([`space::growth`]), each object in whole extents.
pub fn needed_pages(input: &Input, table: &Table, throughput_ratio: f64, area_bytes: usize) -> f64 {
    let b = &input.baseline;
    let run = if b.measured_s > 0.0 { (b.warmup_s + b.measured_s) / b.measured_s } else { 0.0 };
    let flash_per_db = input.device.flash_pages_per_db_page() as f64;
    let pages: f64 = table
        .objects
        .iter()
        .map(|o| {
            let growth = space::growth(o, input.device.page_bytes, area_bytes, input.baseline.heap_space);
            let pages = (o.pages as f64 + o.allocated_pages as f64 * run * throughput_ratio.max(1.0)) * growth;
            let extent = o.extent_pages.max(1) as f64;
            (pages / extent).ceil() * extent
        })
        .sum();
    pages * flash_per_db
}

/// The split for the tables in `in_ipa` (the rest in the plain region) under a delta
/// area of `area_bytes` in `mode`, at `throughput_ratio` times the baseline's
/// throughput.
pub fn split(
    input: &Input,
    tables: &[Table],
    in_ipa: &[bool],
    area_bytes: usize,
    mode: &str,
    throughput_ratio: f64,
) -> ChipSplit {
    let d = &input.device;
    let need = |ipa: bool| -> f64 {
        let area = if ipa { area_bytes } else { 0 };
        tables
            .iter()
            .zip(in_ipa)
            .filter(|(_, &i)| i == ipa)
            .map(|(t, _)| needed_pages(input, t, throughput_ratio, area))
            .sum()
    };
    let (ipa_need, plain_need) = (need(true), need(false));
    let stride = if mode == "pslc" { layout::bits(d.cell) as f64 } else { 1.0 };
    let per_chip = |ipa: bool| (1.0 - d.over_provisioning) * d.pages_per_chip as f64 / if ipa { stride } else { 1.0 };
    let chips = d.data_chips.max(1);
    let has_plain = in_ipa.iter().any(|&i| !i);
    let fullness = |k: u32| {
        let plain = if has_plain { plain_need / (per_chip(false) * (chips - k) as f64) } else { 0.0 };
        (ipa_need / (per_chip(true) * k as f64)).max(plain)
    };
    let ipa_chips = if !has_plain || chips < 2 {
        chips
    } else {
        (1..chips).min_by(|&a, &b| fullness(a).total_cmp(&fullness(b))).unwrap_or(1)
    };
    let plain_chips = if has_plain { chips.saturating_sub(ipa_chips) } else { 0 };
    let (ipa_capacity, plain_capacity) = (per_chip(true) * ipa_chips as f64, per_chip(false) * plain_chips as f64);
    ChipSplit {
        ipa_chips,
        ipa_needed_pages: ipa_need,
        ipa_capacity_pages: ipa_capacity,
        plain_needed_pages: plain_need,
        plain_capacity_pages: plain_capacity,
        fits: ipa_need <= ipa_capacity && plain_need <= plain_capacity,
    }
}

impl ChipSplit {
    /// What the recommendation says of the split when no split holds the growth.
    pub fn warning(&self, data_chips: u32) -> Option<String> {
        if self.fits {
            return None;
        }
        Some(format!(
            "WARNING: no split of the {data_chips} data chips holds the tables' growth over the run: the IPA region \
             ({} chips) needs {:.0} flash pages of its {:.0}, the plain region {:.0} of its {:.0} — a run of this \
             layout would run out of extents; use a device with more blocks per chip or chips",
            self.ipa_chips,
            self.ipa_needed_pages,
            self.ipa_capacity_pages,
            self.plain_needed_pages,
            self.plain_capacity_pages
        ))
    }
}
