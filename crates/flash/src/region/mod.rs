//! A NoFTL region: page-level mapping over its own chips, out-of-place writes, in-place
//! appends, GC and wear levelling.
//!
//! Invariants:
//! - `lpns[lpn].ppn` is the only live data copy of `lpn`; a physical page is live iff
//!   the map (or, for trim records, `tombstones`) points at it, and then its bit in
//!   `live` is set; `valid` of each block counts its live pages.
//! - Every page's OOB names its lpn and write sequence number, so the maps can be
//!   rebuilt by a scan (`rebuild.rs`): per lpn the page with the highest (seq, gen)
//!   wins if it is whole; if it was torn by a power cut the previous version wins; if
//!   it is corrupt the lpn is reported corrupt ([`Error::Corrupted`]), never older data.
//! - A write group (`write_group`, a DB page spanning k flash pages) programs all its
//!   parts under one seq; the old copies stay live and mapped until the last part is
//!   programmed, and the parts meanwhile are live but unmapped (`PENDING`), so GC moves
//!   both. A rebuild accepts a group only whole.
//! - A trim writes a tombstone page that stays live while any older copy of the lpn is
//!   still on flash (`lpns[lpn].copies > 0`), so a rebuild cannot resurrect trimmed data.
//! - GC moves a victim's live pages with copyback (same seq, gen + 1) before it erases
//!   the victim. Programs are durable when they return (no volatile cache), so the old
//!   copy is only erased once the new one is safe.
//! - After a device error other than a refusal the in-memory state may disagree with
//!   flash; the region then refuses work until rebuilt ([`Error::NeedsReopen`]).
//!
//! Host writes go round-robin over the region's chips. Each chip has a host block and a
//! GC block being filled, a free pool ordered by erase count (dynamic wear levelling),
//! foreground GC before it takes a new host block and background GC after host writes.

use crate::error::{DeltaRefusal, Error};
use crate::oob::{self, Header, PageCheck, PageKind};
use crate::policy::{self, BlockSnapshot, BlockState, BlockTable};
use crate::spec::RegionSpec;
use nand::{BlockId, Device, Geometry, OpTiming, Ppn, SimTime, Span};
use prefetch_index::prefetch_index;
use rustc_hash::FxHashMap;
use serde::Serialize;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

mod alloc;
mod gc;
mod rebuild;

const NONE: u32 = u32::MAX;
const TOMBSTONE_BIT: u32 = 1 << 31;
const SEALED: u8 = 1;
const TORN_TAIL: u8 = 2;
/// GC copied the page elsewhere; its erase leaves the lpn's copy count unchanged.
const MOVED: u8 = 4;
/// A part of a write group in progress: live, not yet mapped (`Region::pending`).
const PENDING: u8 = 8;
/// The rebuild found the page corrupt; reads of its lpn fail with `Error::Corrupted`.
const CORRUPT: u8 = 16;

/// Per-region counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct RegionCounters {
    pub host_reads: u64,
    /// Out-of-place page writes by the host.
    pub host_writes: u64,
    /// In-place appends (`write_delta`).
    pub host_write_deltas: u64,
    pub host_trims: u64,
    /// Pages moved by GC (wear-levelling moves included).
    pub gc_page_migrations: u64,
    /// Of those, moves made by static wear levelling.
    pub wl_page_migrations: u64,
    pub gc_erases: u64,
    pub foreground_gc_collections: u64,
    pub background_gc_collections: u64,
    pub retired_blocks: u64,
}

impl RegionCounters {
    /// The counts since `earlier` (a snapshot of the same region).
    pub fn since(&self, earlier: &RegionCounters) -> RegionCounters {
        let d = |a: u64, b: u64| a - b;
        RegionCounters {
            host_reads: d(self.host_reads, earlier.host_reads),
            host_writes: d(self.host_writes, earlier.host_writes),
            host_write_deltas: d(self.host_write_deltas, earlier.host_write_deltas),
            host_trims: d(self.host_trims, earlier.host_trims),
            gc_page_migrations: d(self.gc_page_migrations, earlier.gc_page_migrations),
            wl_page_migrations: d(self.wl_page_migrations, earlier.wl_page_migrations),
            gc_erases: d(self.gc_erases, earlier.gc_erases),
            foreground_gc_collections: d(self.foreground_gc_collections, earlier.foreground_gc_collections),
            background_gc_collections: d(self.background_gc_collections, earlier.background_gc_collections),
            retired_blocks: d(self.retired_blocks, earlier.retired_blocks),
        }
    }
}

/// What the last rebuild found besides whole pages.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct RebuildReport {
    /// Damaged pages that were the newest program in their block (torn by a cut).
    pub torn_pages: u64,
    /// Logical pages whose newest copy is corrupt (reads fail with `Error::Corrupted`).
    pub corrupt_lpns: u64,
    /// Write groups a cut interrupted; their lpns keep the previous version.
    pub torn_groups: u64,
    /// Logical pages rewritten with their previous version so that the parts of a torn
    /// group can never be taken for a whole one.
    pub repaired_lpns: u64,
}

/// What a [`Region::prefetch_write`] hint loads, farthest from the write first: each
/// stage reads what the one before fetched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteHint {
    /// The lpn's map entry.
    Map,
    /// The local number of the block holding its current copy (and, with page bytes,
    /// the device's cell of that copy).
    Block,
    /// The copy's live bit and its block's entry.
    OldCopy,
    /// The victim-index word the copy's retirement moves its block between.
    Bucket,
}

impl WriteHint {
    /// Every stage, farthest from the write first.
    pub const STAGES: [WriteHint; 4] = [WriteHint::Map, WriteHint::Block, WriteHint::OldCopy, WriteHint::Bucket];
}

/// P/E cycles over a region's blocks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct WearStats {
    pub pe_min: u32,
    pub pe_mean: f64,
    pub pe_max: u32,
}

impl WearStats {
    /// Min, mean and max of blocks' erase counts (all 0 for no blocks).
    pub fn of(erase_counts: impl Iterator<Item = u32> + Clone) -> WearStats {
        let blocks = erase_counts.clone().count();
        let sum: u64 = erase_counts.clone().map(u64::from).sum();
        WearStats {
            pe_min: erase_counts.clone().min().unwrap_or(0),
            pe_mean: sum as f64 / blocks.max(1) as f64,
            pe_max: erase_counts.max().unwrap_or(0),
        }
    }
}

/// Where a region's pages are.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Occupancy {
    pub valid_pages: u64,
    pub invalid_pages: u64,
    pub free_pages: u64,
    pub tombstone_pages: u64,
    pub free_blocks: u64,
    pub retired_blocks: u64,
}

/// One chip's pages by state ([`Region::chip_pages`]); the five counts add up to the
/// chip's pages.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ChipPages {
    pub chip: u32,
    /// Erased pages the region may still program.
    pub free_pages: u64,
    /// Live pages without an in-place append (trim records included).
    pub valid_pages: u64,
    /// Live pages that carry at least one in-place append (an OOB delta slot in use;
    /// GC's copyback keeps them).
    pub appended_pages: u64,
    /// Programmed pages no longer live (GC's to reclaim).
    pub invalid_pages: u64,
    /// Pages the region does not use: all of a retired block's, and in pSLC mode the
    /// MSB pages its stride skips.
    pub unused_pages: u64,
}

impl ChipPages {
    /// The sum of two counts of the same chip (its `chip` is `other`'s).
    fn plus(self, other: ChipPages) -> ChipPages {
        ChipPages {
            chip: other.chip,
            free_pages: self.free_pages + other.free_pages,
            valid_pages: self.valid_pages + other.valid_pages,
            appended_pages: self.appended_pages + other.appended_pages,
            invalid_pages: self.invalid_pages + other.invalid_pages,
            unused_pages: self.unused_pages + other.unused_pages,
        }
    }
}

/// A page as read through the region.
pub struct RegionRead<'d> {
    pub timing: OpTiming,
    /// The page bytes with all appends in place (0xFF for a metadata-only device).
    pub data: &'d [u8],
    /// Appends recorded on the page.
    pub appends: u8,
    /// The last append was torn by a power cut (its bytes may be partial).
    pub torn_tail: bool,
    /// Bytes `[0, whole_bytes)` were programmed whole (the base and every complete
    /// append); beyond it the page is erased or holds the torn append.
    pub whole_bytes: usize,
}

#[derive(Clone, Copy, Debug)]
struct PageMeta {
    /// lpn, `TOMBSTONE_BIT | lpn`, or NONE.
    owner: u32,
    /// End of the last append; the next one must start at or after it.
    floor: u32,
    slots: u8,
    flags: u8,
}

impl PageMeta {
    const EMPTY: PageMeta = PageMeta { owner: NONE, floor: 0, slots: 0, flags: 0 };
}

#[derive(Clone, Copy, Debug)]
struct LpnEntry {
    ppn: u32,
    /// Data pages of this lpn on flash, live or stale (trim records keep them dead).
    copies: u32,
}

#[derive(Clone, Copy, Debug)]
struct Cursor {
    block: u32,
    next: u32,
}

#[derive(Default)]
struct ChipState {
    /// (erase count, block in chip), least worn first.
    free: BinaryHeap<Reverse<(u32, u32)>>,
    host: Option<Cursor>,
    gc: Option<Cursor>,
    erased_since_wear_check: bool,
}

/// Which stream a page is allocated for.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Stream {
    Host,
    Gc,
}

/// Why a block is being collected.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Collect {
    Foreground,
    Background,
    WearLevel,
}

/// One region of a NoFTL device.
pub struct Region {
    name: String,
    spec: RegionSpec,
    geometry: Geometry,
    chips: Vec<u32>,
    /// Device block → index in `blocks`, NONE for blocks of other regions.
    block_local: Vec<u32>,
    /// log2(pages_per_block) when it is a power of two (the usual case).
    ppb_shift: Option<u32>,
    keeps_data: bool,
    logical_pages: u32,
    stride: u32,
    usable_per_block: u32,
    slot_capacity: usize,
    /// Mapping and on-flash copy count of each logical page (one cache line for both).
    lpns: Vec<LpnEntry>,
    /// One bit per local page: live or not. Small enough to stay in cache, so GC can
    /// skip dead pages without touching the map.
    live: Vec<u64>,
    pages: Vec<PageMeta>,
    blocks: BlockTable,
    chip_state: Vec<ChipState>,
    tombstones: FxHashMap<u32, u32>,
    /// lpn → why its live page is corrupt (pages flagged `CORRUPT`).
    corrupt: FxHashMap<u32, String>,
    /// Physical pages of the write group being programmed, by part.
    pending: Vec<u32>,
    /// Chip slot and append floor of each part of the write group being programmed
    /// (scratch kept between writes, so a write allocates nothing).
    group: Vec<(usize, u32)>,
    /// The OOB bytes GC writes with a moved page (scratch kept between copies).
    oob_scratch: Vec<u8>,
    rebuild_report: RebuildReport,
    next_seq: u64,
    round_robin: usize,
    counters: RegionCounters,
    poisoned: bool,
    /// 0xFF bytes standing in for payloads on a metadata-only device, so that transfers
    /// are timed the same with or without data.
    filler: Box<[u8]>,
}

impl Region {
    /// A region over `chips` with every block free. Blocks that are not erased are
    /// erased first (at `now`).
    pub(crate) fn format(spec: RegionSpec, chips: Vec<u32>, dev: &mut Device, now: SimTime) -> Result<Region, Error> {
        let mut region = Region::empty(spec, chips, dev)?;
        for slot in 0..region.chips.len() {
            for b in 0..region.geometry.blocks_per_chip {
                let block = region.block_id(slot, b);
                if dev.storage().write_pointer(block) != 0 {
                    if let Err(e) = dev.erase(block, now) {
                        return Err(region.device_error(e));
                    }
                }
                region.release_block(dev, slot, b);
            }
        }
        Ok(region)
    }

    fn empty(spec: RegionSpec, chips: Vec<u32>, dev: &Device) -> Result<Region, Error> {
        spec.validate().map_err(Error::Config)?;
        let geometry = dev.geometry().clone();
        spec.ipa_mode.check_cells(geometry.cell).map_err(|e| Error::Config(format!("region {}: {e}", spec.name)))?;
        if (geometry.oob_bytes as usize) < oob::HEADER_BYTES {
            return Err(Error::Config(format!(
                "region {}: the device's {}-byte OOB cannot hold the {}-byte page header",
                spec.name,
                geometry.oob_bytes,
                oob::HEADER_BYTES
            )));
        }
        let stride = if spec.ipa_mode == crate::IpaMode::Pslc { geometry.cell.bits_per_cell() } else { 1 };
        let usable_per_block = geometry.pages_per_block / stride;
        let usable = chips.len() as u64 * geometry.blocks_per_chip as u64 * usable_per_block as u64;
        let mut logical = (usable as f64 * (1.0 - spec.over_provisioning)).floor() as u64;
        if let Some(max) = spec.max_size_bytes {
            logical = logical.min(max / geometry.page_bytes as u64);
        }
        let reserve = chips.len() as u64 * (spec.gc.foreground_free_blocks as u64 + 1) * usable_per_block as u64;
        if usable.saturating_sub(logical) < reserve {
            return Err(Error::Config(format!(
                "region {}: over-provisioning {:.3} leaves {} spare pages; GC needs at least {} ({} blocks per chip)",
                spec.name,
                spec.over_provisioning,
                usable - logical,
                reserve,
                spec.gc.foreground_free_blocks + 1
            )));
        }
        if logical == 0 {
            return Err(Error::Config(format!("region {}: no logical capacity", spec.name)));
        }
        let bpc = geometry.blocks_per_chip;
        let mut block_local = vec![NONE; geometry.total_blocks() as usize];
        for (slot, &chip) in chips.iter().enumerate() {
            for b in 0..bpc {
                block_local[geometry.block_id(chip, b).0 as usize] = slot as u32 * bpc + b;
            }
        }
        let ppb = geometry.pages_per_block;
        let region_blocks = chips.len() * geometry.blocks_per_chip as usize;
        Ok(Region {
            name: spec.name.clone(),
            keeps_data: dev.storage().keeps_data(),
            logical_pages: logical as u32,
            stride,
            usable_per_block,
            slot_capacity: oob::slot_capacity(geometry.oob_bytes as usize),
            lpns: vec![LpnEntry { ppn: NONE, copies: 0 }; logical as usize],
            live: vec![0; (region_blocks * geometry.pages_per_block as usize).div_ceil(64)],
            pages: vec![PageMeta::EMPTY; region_blocks * geometry.pages_per_block as usize],
            blocks: BlockTable::new(chips.len(), geometry.blocks_per_chip, usable_per_block),
            chip_state: (0..chips.len()).map(|_| ChipState::default()).collect(),
            tombstones: FxHashMap::default(),
            corrupt: FxHashMap::default(),
            pending: Vec::new(),
            group: Vec::new(),
            oob_scratch: Vec::new(),
            rebuild_report: RebuildReport::default(),
            next_seq: 1,
            round_robin: 0,
            counters: RegionCounters::default(),
            poisoned: false,
            filler: vec![0xFF; geometry.page_bytes as usize + geometry.oob_bytes as usize].into_boxed_slice(),
            block_local,
            ppb_shift: ppb.is_power_of_two().then(|| ppb.trailing_zeros()),
            chips,
            geometry,
            spec,
        })
    }

    // ---- accessors -------------------------------------------------------------------

    pub fn name(&self) -> &str {
        &self.name
    }
    pub fn spec(&self) -> &RegionSpec {
        &self.spec
    }
    pub fn chips(&self) -> &[u32] {
        &self.chips
    }
    /// The heap bytes of the region's map, page and block tables and scratch (what it
    /// keeps beside the device's pages).
    pub fn mapping_bytes(&self) -> u64 {
        use crate::heap;
        let chip = |c: &ChipState| heap::heap(&c.free);
        let text = |s: &String| s.capacity() as u64;
        heap::vec(&self.chips)
            + heap::vec(&self.block_local)
            + heap::vec(&self.lpns)
            + heap::vec(&self.live)
            + heap::vec(&self.pages)
            + self.blocks.heap_bytes()
            + heap::vec_with(&self.chip_state, chip)
            + heap::map(&self.tombstones)
            + heap::map_with(&self.corrupt, text)
            + heap::vec(&self.pending)
            + heap::vec(&self.group)
            + heap::vec(&self.oob_scratch)
            + heap::boxed(&self.filler)
    }

    pub fn logical_pages(&self) -> u32 {
        self.logical_pages
    }
    pub fn page_bytes(&self) -> usize {
        self.geometry.page_bytes as usize
    }
    pub fn counters(&self) -> RegionCounters {
        self.counters
    }
    /// What the rebuild that opened the region found (all zero for a fresh format).
    pub fn rebuild_report(&self) -> RebuildReport {
        self.rebuild_report
    }
    /// Physical page of a logical page, if mapped.
    pub fn mapping(&self, lpn: u32) -> Option<Ppn> {
        self.lpns.get(lpn as usize).filter(|e| e.ppn != NONE).map(|e| Ppn(e.ppn))
    }

    /// A hint that the host will soon write `lpn`: starts loading into the cache what
    /// `stage` of [`WriteHint`] names. A host that knows its next writes gives every
    /// stage, each nearer the write than the one before, so each finds in the cache
    /// what the one before fetched. Changes nothing.
    pub fn prefetch_write(&self, dev: &Device, lpn: u32, stage: WriteHint) {
        // Every stage after the first reads the map entry the first fetched.
        let current = || self.mapping(lpn);
        match stage {
            WriteHint::Map => prefetch_index(&self.lpns, lpn as usize),
            WriteHint::Block => {
                let Some(ppn) = current() else { return };
                prefetch_index(&self.block_local, self.device_block(ppn).0 as usize);
                if self.keeps_data {
                    dev.prefetch_page(ppn);
                }
            }
            WriteHint::OldCopy => {
                let Some(ppn) = current() else { return };
                let (block, local) = self.locate(ppn);
                prefetch_index(&self.live, local / 64);
                self.blocks.prefetch(block);
            }
            WriteHint::Bucket => {
                if let Some(ppn) = current() {
                    self.blocks.prefetch_bucket(self.locate(ppn).0);
                }
            }
        }
    }

    pub fn wear(&self) -> WearStats {
        WearStats::of(self.blocks.iter().map(|b| b.erase_count))
    }

    /// Erase counts of every block of the region.
    pub fn erase_counts(&self) -> impl Iterator<Item = u32> + '_ {
        self.blocks.iter().map(|b| b.erase_count)
    }

    pub fn occupancy(&self, dev: &Device) -> Occupancy {
        let mut o = Occupancy { tombstone_pages: self.tombstones.len() as u64, ..Default::default() };
        for (slot, &chip) in self.chips.iter().enumerate() {
            for b in 0..self.geometry.blocks_per_chip {
                let meta = &self.blocks[self.local_block(slot, b)];
                let block = self.geometry.block_id(chip, b);
                let programmed = (0..self.usable_per_block)
                    .filter(|i| dev.storage().program_count(self.geometry.ppn(block, i * self.stride)) > 0)
                    .count() as u64;
                o.valid_pages += meta.valid as u64;
                match meta.state {
                    BlockState::Retired => o.retired_blocks += 1,
                    BlockState::Free => o.free_blocks += 1,
                    _ => {}
                }
                if meta.state != BlockState::Retired {
                    o.invalid_pages += programmed - meta.valid as u64;
                    o.free_pages += self.usable_per_block as u64 - programmed;
                }
            }
        }
        o
    }

    /// Page states of each of the region's chips, in the order of [`Region::chips`].
    pub fn chip_pages(&self, dev: &Device) -> Vec<ChipPages> {
        self.block_pages(dev)
            .into_iter()
            .map(|blocks| blocks.into_iter().fold(ChipPages::default(), ChipPages::plus))
            .collect()
    }

    /// Page states of each block: per chip (in the order of [`Region::chips`]) one entry
    /// per block, `chip` set; a chip's add up to its [`Region::chip_pages`].
    pub fn block_pages(&self, dev: &Device) -> Vec<Vec<ChipPages>> {
        let ppb = self.geometry.pages_per_block as u64;
        let block = |slot: usize, chip: u32, b: u32| {
            let mut c = ChipPages { chip, ..ChipPages::default() };
            if self.blocks[self.local_block(slot, b)].state == BlockState::Retired {
                c.unused_pages = ppb;
                return c;
            }
            c.unused_pages = ppb - self.usable_per_block as u64;
            let block = self.block_id(slot, b);
            for i in 0..self.usable_per_block {
                let ppn = self.geometry.ppn(block, i * self.stride);
                if dev.storage().program_count(ppn) == 0 {
                    c.free_pages += 1;
                } else if !self.is_live(ppn) {
                    c.invalid_pages += 1;
                } else if self.pages[self.local_page(ppn)].slots > 0 {
                    c.appended_pages += 1;
                } else {
                    c.valid_pages += 1;
                }
            }
            c
        };
        let blocks_per_chip = self.geometry.blocks_per_chip;
        self.chips
            .iter()
            .enumerate()
            .map(|(slot, &chip)| (0..blocks_per_chip).map(|b| block(slot, chip, b)).collect())
            .collect()
    }

    // ---- addressing ------------------------------------------------------------------

    fn block_id(&self, slot: usize, b: u32) -> BlockId {
        self.geometry.block_id(self.chips[slot], b)
    }
    fn local_block(&self, slot: usize, b: u32) -> usize {
        slot * self.geometry.blocks_per_chip as usize + b as usize
    }
    /// (device block, page in block) of a physical page; hot, hence no division when
    /// the block size is a power of two.
    fn device_block(&self, ppn: Ppn) -> (u32, u32) {
        match self.ppb_shift {
            Some(shift) => (ppn.0 >> shift, ppn.0 & ((1 << shift) - 1)),
            None => (ppn.0 / self.geometry.pages_per_block, ppn.0 % self.geometry.pages_per_block),
        }
    }
    /// (local block, page in block) of a physical page.
    fn split(&self, ppn: Ppn) -> (usize, usize) {
        let (block, page) = self.device_block(ppn);
        (self.block_local[block as usize] as usize, page as usize)
    }
    fn local_page(&self, ppn: Ppn) -> usize {
        self.locate(ppn).1
    }
    /// (local block, local page) of a physical page.
    fn locate(&self, ppn: Ppn) -> (usize, usize) {
        let (block, page) = self.split(ppn);
        (block, block * self.geometry.pages_per_block as usize + page)
    }

    // ---- host operations -------------------------------------------------------------

    fn check_lpn(&self, lpn: u32) -> Result<(), Error> {
        if self.poisoned {
            return Err(Error::NeedsReopen { region: self.name.clone() });
        }
        if lpn >= self.logical_pages {
            return Err(Error::LpnOutOfRange { region: self.name.clone(), lpn, logical_pages: self.logical_pages });
        }
        Ok(())
    }

    /// Poisons the region on a device error (its state may now disagree with flash).
    fn device_error(&mut self, e: nand::Error) -> Error {
        self.poisoned = true;
        Error::Device(e)
    }

    /// Reads a logical page; `None` if it is not mapped. A page the rebuild found
    /// corrupt is an [`Error::Corrupted`], never an older copy.
    pub fn read<'d>(&mut self, dev: &'d mut Device, lpn: u32, now: SimTime) -> Result<Option<RegionRead<'d>>, Error> {
        self.check_lpn(lpn)?;
        let ppn = self.lpns[lpn as usize].ppn;
        if ppn == NONE {
            return Ok(None);
        }
        let meta = self.pages[self.local_page(Ppn(ppn))];
        if meta.flags & CORRUPT != 0 {
            return Err(self.corrupted(lpn, Ppn(ppn)));
        }
        self.counters.host_reads += 1;
        match dev.read_data(Ppn(ppn), now) {
            Ok((timing, data)) => Ok(Some(RegionRead {
                timing,
                data,
                appends: meta.slots,
                torn_tail: meta.flags & TORN_TAIL != 0,
                whole_bytes: meta.floor as usize,
            })),
            Err(e) => Err(self.device_error(e)),
        }
    }

    /// The error for a read of an lpn whose live page is flagged corrupt.
    fn corrupted(&self, lpn: u32, ppn: Ppn) -> Error {
        Error::Corrupted {
            region: self.name.clone(),
            lpn: Some(lpn),
            block: self.geometry.block_of(ppn).0,
            page: self.geometry.page_in_block(ppn),
            what: self.corrupt.get(&lpn).cloned().unwrap_or_default(),
        }
    }

    /// Writes a whole page out-of-place (a write group of one). On a metadata-only
    /// device the payload is not stored and may be empty.
    pub fn write(&mut self, dev: &mut Device, lpn: u32, data: &[u8], now: SimTime) -> Result<OpTiming, Error> {
        let page_bytes = self.page_bytes();
        if self.keeps_data && data.len() != page_bytes {
            return Err(Error::WrongPayloadSize { got: data.len(), expected: page_bytes });
        }
        self.write_group(dev, lpn, data, now)
    }

    /// Writes `data` (k whole pages) to lpns `first_lpn..first_lpn + k` atomically under
    /// power cuts: after a rebuild all k read the new bytes or all k the old ones. The
    /// parts are programmed in order under one seq; the old copies stay mapped until the
    /// last part is programmed. Returns the timing of the whole group (first start, last
    /// end). On a metadata-only device `data` may be empty (one page).
    pub fn write_group(
        &mut self,
        dev: &mut Device,
        first_lpn: u32,
        data: &[u8],
        now: SimTime,
    ) -> Result<OpTiming, Error> {
        let page_bytes = self.page_bytes();
        let parts = if self.keeps_data {
            if data.is_empty() || !data.len().is_multiple_of(page_bytes) || data.len() / page_bytes > u8::MAX as usize {
                return Err(Error::WrongPayloadSize { got: data.len(), expected: page_bytes });
            }
            data.len() / page_bytes
        } else {
            data.len().div_ceil(page_bytes).max(1)
        };
        self.check_lpn(first_lpn)?;
        // Fetched now, its likely cache miss overlaps the allocation and the program
        // below instead of stalling the map update after them.
        prefetch_index(&self.lpns, first_lpn as usize);
        let last = first_lpn as u64 + parts as u64 - 1;
        if last >= self.logical_pages as u64 {
            return Err(Error::LpnOutOfRange {
                region: self.name.clone(),
                lpn: last as u32,
                logical_pages: self.logical_pages,
            });
        }
        let seq = self.take_seq();
        let mut group = std::mem::take(&mut self.group);
        group.clear();
        let mut timing: Option<OpTiming> = None;
        self.pending.clear();
        for part in 0..parts {
            let lpn = first_lpn + part as u32;
            let (slot, ppn, ready) = match self.allocate_host(dev, now) {
                Ok(page) => page,
                Err(e) => {
                    if part > 0 {
                        // Programmed parts of an unfinished group stay on flash; only a
                        // rebuild can tell them apart from a whole group.
                        self.poisoned = true;
                    }
                    return Err(e);
                }
            };
            // Without bytes the erased tail is unknown; appends may go anywhere.
            let mut floor = 0;
            let result = if self.keeps_data {
                let bytes = &data[part * page_bytes..(part + 1) * page_bytes];
                let header =
                    Header { part: part as u8, parts: parts as u8, ..Header::new(PageKind::Data, lpn, seq, bytes) };
                floor = header.erased_from;
                dev.program(ppn, ready, &[Span::new(0, bytes), Span::new(page_bytes, &header.encode())])
            } else {
                dev.program(ppn, ready, &[Span::new(0, &self.filler[..page_bytes + oob::HEADER_BYTES])])
            };
            let t = result.map_err(|e| self.device_error(e))?;
            timing = Some(
                timing.map_or(t, |g| OpTiming { start_ns: g.start_ns.min(t.start_ns), end_ns: g.end_ns.max(t.end_ns) }),
            );
            self.lpns[lpn as usize].copies += 1;
            self.place(ppn, PageMeta { owner: lpn, flags: PENDING, ..PageMeta::EMPTY });
            self.pending.push(ppn.0);
            group.push((slot, floor));
        }
        // Every part is programmed: switch the map.
        for (part, &(_, floor)) in group.iter().enumerate() {
            let ppn = self.pending[part];
            let lpn = first_lpn + part as u32;
            let old = self.lpns[lpn as usize].ppn;
            if self.keeps_data && old != NONE {
                // The new copy is whole on flash: no rebuild reads the old one again.
                dev.discard_payload(Ppn(old)).map_err(|e| self.device_error(e))?;
            }
            self.release_lpn(lpn);
            self.lpns[lpn as usize].ppn = ppn;
            let local = self.local_page(Ppn(ppn));
            self.pages[local] = PageMeta { owner: lpn, floor, ..PageMeta::EMPTY };
            self.counters.host_writes += 1;
        }
        self.pending.clear();
        let mut collected = Ok(());
        for &(slot, _) in &group {
            collected = self.background_gc(dev, slot, now);
            if collected.is_err() {
                break;
            }
        }
        self.group = group;
        collected?;
        timing.ok_or(Error::WrongPayloadSize { got: data.len(), expected: page_bytes })
    }

    /// Appends `bytes` at `offset` of the page holding `lpn`, on the same physical page
    /// (IPA §7 `write_delta`). Refused with [`Error::DeltaRefused`] where the mode, the
    /// page type, NOP, the OOB slots, the append order or the bit rule forbid it.
    pub fn write_delta(
        &mut self,
        dev: &mut Device,
        lpn: u32,
        offset: usize,
        bytes: &[u8],
        now: SimTime,
    ) -> Result<OpTiming, Error> {
        self.check_lpn(lpn)?;
        let refuse = |reason| Err(Error::DeltaRefused { lpn, reason });
        if self.spec.ipa_mode == crate::IpaMode::None {
            return refuse(DeltaRefusal::IpaDisabled);
        }
        let ppn = self.lpns[lpn as usize].ppn;
        if ppn == NONE {
            return refuse(DeltaRefusal::Unmapped);
        }
        let ppn = Ppn(ppn);
        let page_type = self.geometry.page_type(self.geometry.page_in_block(ppn));
        if !self.spec.ipa_mode.appends_to(page_type) {
            return refuse(DeltaRefusal::NotLsbPage { page_type });
        }
        let local = self.local_page(ppn);
        let meta = self.pages[local];
        if meta.flags & CORRUPT != 0 {
            return Err(self.corrupted(lpn, ppn));
        }
        let page_bytes = self.page_bytes();
        if meta.flags & SEALED != 0 {
            return refuse(DeltaRefusal::Sealed);
        }
        if bytes.is_empty() || offset + bytes.len() > page_bytes {
            return refuse(DeltaRefusal::OutOfPage { offset, len: bytes.len(), page_bytes });
        }
        if (offset as u32) < meta.floor {
            return refuse(DeltaRefusal::NotAppendable { offset, floor: meta.floor as usize });
        }
        if meta.slots as usize >= self.slot_capacity {
            return refuse(DeltaRefusal::NoSlot { slots: self.slot_capacity });
        }
        let slot = oob::encode_slot(offset as u16, bytes);
        let spans = [Span::new(offset, bytes), Span::new(page_bytes + oob::slot_offset(meta.slots as usize), &slot)];
        match dev.program(ppn, now, &spans) {
            Ok(timing) => {
                let meta = &mut self.pages[local];
                meta.slots += 1;
                meta.floor = (offset + bytes.len()) as u32;
                self.counters.host_write_deltas += 1;
                Ok(timing)
            }
            Err(nand::Error::NopExceeded { limit, .. }) => refuse(DeltaRefusal::NopExhausted { limit }),
            Err(e) => Err(self.device_error(e)),
        }
    }

    /// Unmaps a logical page. Durable: a tombstone page records the trim. Returns the
    /// tombstone's timing, or `None` if the page was not mapped.
    pub fn trim(&mut self, dev: &mut Device, lpn: u32, now: SimTime) -> Result<Option<OpTiming>, Error> {
        self.check_lpn(lpn)?;
        if self.lpns[lpn as usize].ppn == NONE {
            return Ok(None);
        }
        let (slot, timing) = self.write_record(dev, PageKind::Tombstone, lpn, now)?;
        self.counters.host_trims += 1;
        self.background_gc(dev, slot, now)?;
        Ok(Some(timing))
    }

    /// Writes a header-only record for `lpn` under a new seq and makes it the lpn's
    /// live state: a tombstone (the lpn is unmapped) or a corrupt marker (reads fail).
    fn write_record(
        &mut self,
        dev: &mut Device,
        kind: PageKind,
        lpn: u32,
        now: SimTime,
    ) -> Result<(usize, OpTiming), Error> {
        let (slot, ppn, ready) = self.allocate_host(dev, now)?;
        let seq = self.take_seq();
        let page_bytes = self.page_bytes();
        let header;
        let span = if self.keeps_data {
            header = Header::new(kind, lpn, seq, &[]).encode();
            Span::new(page_bytes, &header)
        } else {
            Span::new(page_bytes, &self.filler[..oob::HEADER_BYTES])
        };
        let timing = dev.program(ppn, ready, &[span]).map_err(|e| self.device_error(e))?;
        let old = self.lpns[lpn as usize].ppn;
        if self.keeps_data && old != NONE && !self.corrupt.contains_key(&lpn) {
            // The record is on flash: no rebuild reads the data page it replaces again.
            dev.discard_payload(Ppn(old)).map_err(|e| self.device_error(e))?;
        }
        let what = self.corrupt.get(&lpn).cloned();
        self.release_lpn(lpn);
        match kind {
            PageKind::Corrupt => {
                let entry = &mut self.lpns[lpn as usize];
                entry.ppn = ppn.0;
                entry.copies += 1;
                self.corrupt.insert(lpn, what.unwrap_or_default());
                self.place(ppn, PageMeta { owner: lpn, flags: CORRUPT, ..PageMeta::EMPTY });
            }
            PageKind::Tombstone | PageKind::Data => {
                self.tombstones.insert(lpn, ppn.0);
                self.place(ppn, PageMeta { owner: TOMBSTONE_BIT | lpn, ..PageMeta::EMPTY });
            }
        }
        Ok((slot, timing))
    }

    fn take_seq(&mut self) -> u64 {
        let seq = self.next_seq;
        self.next_seq += 1;
        seq
    }

    /// Unmaps the live copy (and any tombstone) of `lpn`.
    /// The maps are nearly always empty: checked first, so a host write hashes nothing.
    fn release_lpn(&mut self, lpn: u32) {
        if !self.corrupt.is_empty() {
            self.corrupt.remove(&lpn);
        }
        let old = std::mem::replace(&mut self.lpns[lpn as usize].ppn, NONE);
        if old != NONE {
            self.mark_dead(Ppn(old));
        }
        if self.tombstones.is_empty() {
            return;
        }
        if let Some(t) = self.tombstones.remove(&lpn) {
            self.mark_dead(Ppn(t));
        }
    }

    /// Records a newly programmed live page.
    fn place(&mut self, ppn: Ppn, meta: PageMeta) {
        let (block, local) = self.mark_live(ppn);
        self.pages[local] = meta;
        self.blocks.set_last_write_seq(block, self.next_seq);
    }

    /// Sets a page's live bit and counts it in its block; returns (local block, local page).
    fn mark_live(&mut self, ppn: Ppn) -> (usize, usize) {
        debug_assert!(!self.is_live(ppn), "page {ppn:?} is already live");
        let (block, local) = self.locate(ppn);
        self.live[local / 64] |= 1 << (local % 64);
        self.blocks.add_valid(block);
        (block, local)
    }

    fn mark_dead(&mut self, ppn: Ppn) {
        debug_assert!(self.is_live(ppn), "page {ppn:?} is not live");
        let (block, local) = self.locate(ppn);
        self.live[local / 64] &= !(1 << (local % 64));
        self.blocks.sub_valid(block);
    }

    fn is_live(&self, ppn: Ppn) -> bool {
        self.live_at(self.local_page(ppn))
    }

    /// Whether local page `local` is live.
    fn live_at(&self, local: usize) -> bool {
        self.live[local / 64] & (1 << (local % 64)) != 0
    }
}
