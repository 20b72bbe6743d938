//! In-Page Logging (Lee & Moon, SIGMOD 2007, §3): a page store on native flash in which
//! a DB page, once written, is never rewritten; its changes go as physiological log
//! records into the log region of its erase unit, and a unit whose log region is full
//! is merged into a fresh unit.
//!
//! Layout. An erase unit is `blocks_per_unit` consecutive blocks of one chip. Logical
//! units hold `db_pages_per_unit` DB pages of `db_page_bytes` (each `parts` flash
//! pages); the map sends a logical unit to the physical unit holding it. A unit's flash
//! pages are taken in order (the device refuses first programs out of page order): data
//! pages as DB pages are first written, log pages as sectors need them, at most
//! `log_region_bytes` of log pages and `unit pages − log pages` of data pages. A log
//! page takes `sector_bytes` sectors one partial program each (at most NOP of them); only
//! the newest log page of a unit takes sectors. Regions are static partitions of the
//! logical units, like [`crate::FtlVolume`]'s; one physical unit is kept spare for merges.
//!
//! Operations. A first write programs the DB page's flash pages as one group. Changes
//! to a page on flash are log records: [`IplStore::log`] buffers them in the page's
//! in-memory log sector (written when full), [`IplStore::flush_log`] writes it at
//! eviction, and `write_pages` over a page already on flash logs its byte diff. A read
//! returns the flash page with the records that touch it applied (reading the log pages
//! that hold them). When the log region (or the data region, for a rewrite of a trimmed
//! page) has no room, the unit is merged: every live page is read with its records
//! applied, programmed into a fresh unit (generation + 1), the map updated, and the old
//! unit erased.
//!
//! Invariants: sequence numbers grow across every host write group, log group and
//! merge; a flush of several sectors and a write of several flash pages carry their
//! `index/count` and count only when whole; a merged unit counts only when all its
//! merged pages are whole, and then outranks the unit it replaced.
//!
//! No payload discard ([`nand::Device::discard_payload`]), on purpose: a merge reads the
//! old unit, programs the new one and erases the old one in the same operation (and
//! before the new unit is whole a cut needs the old one), so superseded units never
//! outlive the operation that superseded them. The only stale pages between operations
//! are data pages of trimmed DB pages awaiting their unit's merge, while the rebuild
//! reads and checks every page of a unit (damage other than the last write is
//! corruption): dropping them would save little and blind that check.
//!
//! The write-ahead log is not an IPL partition. A region named [`WAL_REGION`] (`log`,
//! the engine's) is a plain NoFTL [`Region`] on chips of its own (the last
//! `max_chips` chips, 1 by default), as the IPL paper keeps its log apart from the
//! IPL-managed data: the log ring rewrites every page, which IPL would take as a whole-page
//! diff and merge its units for constantly. The IPL units of those chips are taken out
//! of the store (fewer logical units), the region's chips are kept in the layout, and
//! the region is rebuilt by its own scan at open.
//!
//! Fault model: power may fail at any program or erase ([`nand::FaultyStorage`]). Open
//! (`rebuild.rs`) scans every unit: a damaged page or sector is a torn write only if it
//! is the unit's last first-program or the last sector of its newest log page; any
//! other damage is [`Error::Corrupted`]. Units with a torn or partial group are merged
//! at open, so no damage outlives the open that found it. Records in memory (not yet
//! flushed) are lost by a cut, as a buffer pool's pages are.

mod device;
pub mod format;
mod rebuild;

use crate::error::{DeltaRefusal, Error};
use crate::page_device::IplCounters;
use crate::region::{Region, RegionCounters};
use crate::spec::RegionSpec;
use crate::RegionId;
use format::{pack, PageKind, Record, Sector, Tag, SECTOR_HEADER};
use nand::{BlockId, CellType, Device, Geometry, OpTiming, Ppn, SimTime, Span};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

pub use rebuild::IplRebuildReport;

/// Physical units kept out of the logical capacity so a merge always has a target.
const SPARE_UNITS: u32 = 1;

/// The region placed as a plain NoFTL region on chips of its own (the engine's
/// write-ahead log, `engine::db::LOG`).
pub const WAL_REGION: &str = "log";

/// How an IPL store divides its erase units (stored with the device).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct IplConfig {
    /// Blocks per erase unit (the IPL paper's unit is one 128 KiB block).
    pub blocks_per_unit: u32,
    /// Bytes of a DB page (a whole number of flash pages).
    pub db_page_bytes: u32,
    /// Bytes of each unit's log region (a whole number of flash pages).
    pub log_region_bytes: u32,
    /// Bytes of a log sector, written with one partial program.
    pub sector_bytes: u32,
    /// Whether a page's write is the record of every update made to it while it was
    /// buffered, as IPL's buffer manager fills a page's in-memory log sector (Lee &
    /// Moon, SIGMOD 2007, §3), or only the page's net change at the write (one record
    /// per run of changed bytes, an update overwritten before the write not logged).
    pub update_records: bool,
}

impl Default for IplConfig {
    /// The IPA paper's §8.3 setting: 8 KiB DB pages, 8 KiB log region, 512 B sectors.
    fn default() -> Self {
        IplConfig {
            blocks_per_unit: 1,
            db_page_bytes: 8192,
            log_region_bytes: 8192,
            sector_bytes: 512,
            update_records: true,
        }
    }
}

/// Sizes derived from an [`IplConfig`] on a geometry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IplShape {
    pub flash_page_bytes: usize,
    pub unit_pages: u32,
    /// Flash pages per DB page.
    pub parts: u32,
    pub log_pages: u32,
    pub sectors_per_log_page: u32,
    /// Data pages a unit may program (unit pages − log pages).
    pub data_pages: u32,
    pub db_pages_per_unit: u32,
    /// Logical flash pages per unit (`db_pages_per_unit × parts`).
    pub lpns_per_unit: u32,
    pub units: u32,
    pub sector_bytes: usize,
}

impl IplShape {
    /// Checks `config` against the device; every refusal names the setting.
    pub fn new(g: &Geometry, config: &IplConfig) -> Result<IplShape, Error> {
        let bad = |m: String| Err(Error::Config(format!("IPL: {m}")));
        let f = g.page_bytes;
        if g.cell != CellType::Slc || g.nop < 2 {
            return bad(format!(
                "log sectors are partial programs: IPL needs an SLC device with NOP ≥ 2 (this one is {} with NOP {})",
                g.cell.name(),
                g.nop
            ));
        }
        if (g.oob_bytes as usize) < format::TAG_BYTES {
            return bad(format!(
                "the OOB area ({} bytes) is smaller than the {}-byte IPL tag",
                g.oob_bytes,
                format::TAG_BYTES
            ));
        }
        let b = config.blocks_per_unit;
        if b == 0 || !g.blocks_per_chip.is_multiple_of(b) {
            return bad(format!("blocks per unit ({b}) must divide the blocks per chip ({})", g.blocks_per_chip));
        }
        let s = config.sector_bytes;
        if s <= (SECTOR_HEADER + format::RECORD_HEADER) as u32 || !f.is_multiple_of(s) {
            return bad(format!(
                "sector bytes ({s}) must divide the flash page ({f} bytes) and exceed {} bytes",
                SECTOR_HEADER + format::RECORD_HEADER
            ));
        }
        let db = config.db_page_bytes;
        if db == 0 || !db.is_multiple_of(f) || db / f > 64 {
            return bad(format!("the DB page ({db} bytes) must be 1 to 64 flash pages of {f} bytes"));
        }
        let lr = config.log_region_bytes;
        if lr == 0 || !lr.is_multiple_of(f) {
            return bad(format!("the log region ({lr} bytes) must be a whole number (≥ 1) of {f}-byte flash pages"));
        }
        let unit_pages = b * g.pages_per_block;
        let log_pages = lr / f;
        let sectors_per_log_page = (f / s).min(g.nop as u32);
        if log_pages * sectors_per_log_page > 255 {
            return bad(format!(
                "the log region holds {} sectors; at most 255 are allowed",
                log_pages * sectors_per_log_page
            ));
        }
        let parts = db / f;
        let data_pages = unit_pages.saturating_sub(log_pages);
        let db_pages_per_unit = data_pages / parts;
        if db_pages_per_unit == 0 {
            return bad(format!(
                "a {unit_pages}-page unit with {log_pages} log pages leaves no room for a {db}-byte DB page"
            ));
        }
        let units = g.total_blocks() / b;
        if units <= SPARE_UNITS {
            return bad(format!("the device has {units} unit(s); IPL needs at least {}", SPARE_UNITS + 1));
        }
        Ok(IplShape {
            flash_page_bytes: f as usize,
            unit_pages,
            parts,
            log_pages,
            sectors_per_log_page,
            data_pages,
            db_pages_per_unit,
            lpns_per_unit: db_pages_per_unit * parts,
            units,
            sector_bytes: s as usize,
        })
    }

    /// Log sectors a unit holds.
    pub fn log_sectors(&self) -> u32 {
        self.log_pages * self.sectors_per_log_page
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
struct Partition {
    spec: RegionSpec,
    first_unit: u32,
    units: u32,
    /// Chips of a plain NoFTL region ([`WAL_REGION`]); empty for IPL partitions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    noftl_chips: Vec<u32>,
    #[serde(skip)]
    counters: RegionCounters,
    #[serde(skip)]
    ipl: IplCounters,
}

/// A physical unit's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum UnitState {
    Erased,
    /// Must be erased before use (left by a power cut, or of unknown state).
    Dirty,
    Live(u32),
    /// On a chip of a plain NoFTL region: never used by IPL.
    Plain,
}

#[derive(Clone, Copy, Debug)]
struct PhysUnit {
    state: UnitState,
    /// Next unit page to take its first program.
    next_page: u32,
    data_pages: u32,
    log_pages: u32,
    /// The newest log page and how many of its sectors are used.
    open_log: Option<(u32, u32)>,
}

impl PhysUnit {
    fn fresh(state: UnitState) -> PhysUnit {
        PhysUnit { state, next_page: 0, data_pages: 0, log_pages: 0, open_log: None }
    }
}

/// A log sector on flash and the flash pages of its DB page it changes.
#[derive(Clone, Copy, Debug)]
struct SectorRef {
    page: u32,
    slot: u32,
    parts: u64,
}

#[derive(Clone, Debug, Default)]
struct LUnit {
    phys: Option<u32>,
    generation: u32,
    /// Logical page in the unit → unit page holding its base.
    map: Vec<Option<u32>>,
    /// Per DB page, its log sectors on flash in write order.
    logs: Vec<Vec<SectorRef>>,
    /// Per DB page, its in-memory log sector.
    pending: Vec<Vec<Record>>,
}

/// An IPL page store on a NAND device. See the module comment.
pub struct IplStore {
    device: Device,
    config: IplConfig,
    shape: IplShape,
    parts: Vec<Partition>,
    /// Per partition, its NoFTL region if it is one ([`WAL_REGION`]).
    plain: Vec<Option<Region>>,
    units: Vec<PhysUnit>,
    lunits: Vec<LUnit>,
    free: VecDeque<u32>,
    seq: u64,
    scratch: Vec<u8>,
    report: IplRebuildReport,
    chips: Vec<u32>,
}

use crate::stored::IPL_FORMAT as FORMAT;

#[derive(Serialize, Deserialize)]
struct Stored {
    format: String,
    config: IplConfig,
    regions: Vec<Partition>,
}

impl IplStore {
    /// The heap bytes of the unit tables, the per-page sector lists and the log records
    /// held in memory, and of any plain NoFTL region.
    pub fn mapping_bytes(&self) -> u64 {
        use crate::heap;
        let record = |r: &Record| match r {
            Record::Bytes { bytes, .. } => heap::vec(bytes),
            Record::Trim { .. } => 0,
        };
        let lunit = |u: &LUnit| {
            heap::vec(&u.map)
                + heap::vec_with(&u.logs, heap::vec)
                + heap::vec_with(&u.pending, |records| heap::vec_with(records, record))
        };
        heap::vec_with(&self.parts, |p| heap::vec(&p.noftl_chips))
            + self.plain.iter().flatten().map(Region::mapping_bytes).sum::<u64>()
            + heap::vec(&self.plain)
            + heap::vec(&self.units)
            + heap::vec_with(&self.lunits, lunit)
            + heap::deque(&self.free)
            + heap::vec(&self.scratch)
            + heap::vec(&self.chips)
    }

    /// Erases every unit (at simulated time 0, counted by the device but not as the
    /// regions' work), lays out `specs` and stores the layout in the configuration area.
    pub fn format(mut device: Device, config: IplConfig, specs: Vec<RegionSpec>) -> Result<IplStore, Error> {
        let shape = IplShape::new(device.geometry(), &config)?;
        for block in 0..shape.units * config.blocks_per_unit {
            device.erase(BlockId(block), 0)?;
        }
        let mut store = IplStore::empty(device, config, shape, Vec::new());
        store.free = (0..shape.units).collect();
        for spec in specs {
            store.place(spec, 0)?;
        }
        store.save_layout()?;
        Ok(store)
    }

    /// A store with nothing mapped; units on the chips of `parts`' NoFTL regions are
    /// taken out (their regions are not built here).
    fn empty(device: Device, config: IplConfig, shape: IplShape, parts: Vec<Partition>) -> IplStore {
        let plain_chips: Vec<u32> = parts.iter().flat_map(|p| p.noftl_chips.iter().copied()).collect();
        let g = device.geometry();
        let on_plain = |u: u32| plain_chips.contains(&g.chip_of_block(BlockId(u * config.blocks_per_unit)));
        let plain_units = (0..shape.units).filter(|&u| on_plain(u)).count() as u32;
        let logical = shape.units.saturating_sub(SPARE_UNITS + plain_units) as usize;
        let mut units = vec![PhysUnit::fresh(UnitState::Erased); shape.units as usize];
        for (u, unit) in units.iter_mut().enumerate() {
            if on_plain(u as u32) {
                unit.state = UnitState::Plain;
            }
        }
        let lunit = LUnit {
            phys: None,
            generation: 0,
            map: vec![None; shape.lpns_per_unit as usize],
            logs: vec![Vec::new(); shape.db_pages_per_unit as usize],
            pending: vec![Vec::new(); shape.db_pages_per_unit as usize],
        };
        let chips = (0..g.chips()).filter(|c| !plain_chips.contains(c)).collect();
        IplStore {
            config,
            shape,
            plain: parts.iter().map(|_| None).collect(),
            parts,
            units,
            lunits: vec![lunit; logical],
            free: VecDeque::new(),
            seq: 1,
            scratch: vec![0xFF; shape.flash_page_bytes],
            report: IplRebuildReport::default(),
            chips,
            device,
        }
    }

    pub fn config(&self) -> &IplConfig {
        &self.config
    }
    pub fn shape(&self) -> &IplShape {
        &self.shape
    }
    pub fn device(&self) -> &Device {
        &self.device
    }
    pub fn into_device(self) -> Device {
        self.device
    }
    /// What the last open found (torn writes, units cleaned).
    pub fn rebuild_report(&self) -> IplRebuildReport {
        self.report
    }
    pub fn region_id(&self, name: &str) -> Option<RegionId> {
        self.parts.iter().position(|p| p.spec.name == name).map(RegionId)
    }
    /// DB pages the region holds.
    pub fn db_pages(&self, region: RegionId) -> u32 {
        self.parts[region.0].units * self.shape.db_pages_per_unit
    }
    /// IPL counters of a region.
    pub fn counters(&self, region: RegionId) -> IplCounters {
        self.parts[region.0].ipl
    }
    /// IPL counters summed over the regions.
    pub fn ipl_counters(&self) -> IplCounters {
        let mut sum = IplCounters::default();
        for p in &self.parts {
            sum.add(&p.ipl);
        }
        sum
    }

    /// Reads DB page `page` of `region` into `buf` (`db_page_bytes`) with its log
    /// records applied; `None` if it was never written (or trimmed).
    pub fn read_page(
        &mut self,
        region: RegionId,
        page: u32,
        buf: &mut [u8],
        now: SimTime,
    ) -> Result<Option<SimTime>, Error> {
        let f = self.shape.flash_page_bytes;
        if buf.len() != self.shape.parts as usize * f {
            return Err(Error::WrongPayloadSize { got: buf.len(), expected: self.shape.parts as usize * f });
        }
        let first = self.first_lpn(region, page)?;
        let mut done = now;
        for (part, chunk) in buf.chunks_mut(f).enumerate() {
            match self.read_lpn(region.0, first + part as u32, now)? {
                Some(t) => {
                    chunk.copy_from_slice(&self.scratch);
                    done = done.max(t.end_ns);
                }
                None if part == 0 => return Ok(None),
                None => {
                    return Err(Error::Corrupted {
                        region: self.parts[region.0].spec.name.clone(),
                        lpn: Some(first + part as u32),
                        block: 0,
                        page: 0,
                        what: format!("DB page {page} is missing flash page {part}"),
                    })
                }
            }
        }
        Ok(Some(done))
    }

    /// Writes DB page `page` (`db_page_bytes`): programs it if it is not on flash,
    /// otherwise logs its byte diff against the page on flash.
    pub fn write_page(&mut self, region: RegionId, page: u32, data: &[u8], now: SimTime) -> Result<OpTiming, Error> {
        let expected = self.shape.parts as usize * self.shape.flash_page_bytes;
        if data.len() != expected {
            return Err(Error::WrongPayloadSize { got: data.len(), expected });
        }
        let first = self.first_lpn(region, page)?;
        self.write_lpns(region.0, first, data, now)
    }

    /// Appends a physiological record (`bytes` at `offset` of DB page `page`) to the
    /// page's in-memory log sector; when the record does not fit, the records before it
    /// are written to the unit's log region as one group (the timing is then `Some`)
    /// and the record starts the next sector. A record thus never spans two groups: a
    /// rebuild applies whole groups only, so a power cut cannot leave part of a record
    /// on flash. A record larger than a sector waits whole for the next write. The page
    /// must be on flash.
    pub fn log(
        &mut self,
        region: RegionId,
        page: u32,
        offset: usize,
        bytes: &[u8],
        now: SimTime,
    ) -> Result<Option<OpTiming>, Error> {
        let first = self.first_lpn(region, page)?;
        let (lu, d) = self.locate_db(region.0, first);
        self.check_record(region.0, first, offset, bytes.len())?;
        let pending = &mut self.lunits[lu].pending[d as usize];
        pending.push(Record::Bytes { offset: offset as u32, bytes: bytes.to_vec() });
        if pack(pending, self.shape.sector_bytes - SECTOR_HEADER).len() < 2 {
            return Ok(None);
        }
        let record = pending.split_off(pending.len() - 1);
        let before = std::mem::replace(pending, record);
        if before.is_empty() {
            return Ok(None);
        }
        self.flush_records(region.0, lu, d, before, now).map(Some)
    }

    /// Writes DB page `page`'s in-memory log sector (the page is evicted); `None` if
    /// it was empty.
    pub fn flush_log(&mut self, region: RegionId, page: u32, now: SimTime) -> Result<Option<OpTiming>, Error> {
        let first = self.first_lpn(region, page)?;
        let (lu, d) = self.locate_db(region.0, first);
        let records = std::mem::take(&mut self.lunits[lu].pending[d as usize]);
        if records.is_empty() {
            return Ok(None);
        }
        self.flush_records(region.0, lu, d, records, now).map(Some)
    }

    /// Adds a region after the last one: MAX_SIZE bytes, else MAX_CHIPS's share of
    /// the units, else all that are left.
    fn place(&mut self, spec: RegionSpec, now: SimTime) -> Result<RegionId, Error> {
        spec.validate().map_err(Error::Config)?;
        if self.parts.iter().any(|p| p.spec.name.eq_ignore_ascii_case(&spec.name)) {
            return Err(Error::Config(format!("a region named {} already exists", spec.name)));
        }
        if spec.name == WAL_REGION {
            return self.place_plain(spec, now);
        }
        let total = self.lunits.len() as u64;
        let first = self.parts.last().map_or(0, |p| p.first_unit + p.units);
        let left = total.saturating_sub(first as u64);
        let unit_bytes = self.shape.lpns_per_unit as u64 * self.shape.flash_page_bytes as u64;
        let wanted = match (spec.max_size_bytes, spec.max_chips) {
            (Some(bytes), _) => bytes.div_ceil(unit_bytes),
            (None, Some(chips)) => total * chips as u64 / self.chips.len().max(1) as u64,
            (None, None) => left,
        };
        let units = wanted.min(left) as u32;
        if units == 0 {
            return Err(Error::Config(format!(
                "region {}: the IPL store has no logical units left ({first} of {total} are in use)",
                spec.name
            )));
        }
        self.parts.push(Partition {
            spec,
            first_unit: first,
            units,
            noftl_chips: Vec::new(),
            counters: RegionCounters::default(),
            ipl: IplCounters::default(),
        });
        self.plain.push(None);
        Ok(RegionId(self.parts.len() - 1))
    }

    /// Places [`WAL_REGION`] as a NoFTL region on the last `max_chips` chips (1 by
    /// default), whose IPL units must all be unused; they leave the store.
    fn place_plain(&mut self, spec: RegionSpec, now: SimTime) -> Result<RegionId, Error> {
        let want = spec.max_chips.unwrap_or(1).max(1);
        if want as usize >= self.chips.len() {
            return Err(Error::Config(format!(
                "region {}: {want} chip(s) for a NoFTL log leave none of the IPL store's {} chips",
                spec.name,
                self.chips.len()
            )));
        }
        let chips: Vec<u32> = self.chips[self.chips.len() - want as usize..].to_vec();
        let g = self.device.geometry().clone();
        let b = self.config.blocks_per_unit;
        let taken: Vec<u32> =
            (0..self.shape.units).filter(|&u| chips.contains(&g.chip_of_block(BlockId(u * b)))).collect();
        if taken.iter().any(|&u| self.units[u as usize].state != UnitState::Erased || !self.free.contains(&u)) {
            return Err(Error::Config(format!(
                "region {}: chips {chips:?} already hold IPL data; the log region must be added before any write",
                spec.name
            )));
        }
        let logical = self.lunits.len().saturating_sub(taken.len());
        if self.parts.iter().any(|p| (p.first_unit + p.units) as usize > logical) || logical == 0 {
            return Err(Error::Config(format!(
                "region {}: the IPL regions placed before it need the units of chips {chips:?}",
                spec.name
            )));
        }
        let region = Region::format(spec.clone(), chips.clone(), &mut self.device, now)?;
        self.free.retain(|u| !taken.contains(u));
        for &u in &taken {
            self.units[u as usize].state = UnitState::Plain;
        }
        self.lunits.truncate(logical);
        self.chips.retain(|c| !chips.contains(c));
        let first = self.parts.last().map_or(0, |p| p.first_unit + p.units);
        self.parts.push(Partition {
            spec,
            first_unit: first,
            units: 0,
            noftl_chips: chips,
            counters: RegionCounters::default(),
            ipl: IplCounters::default(),
        });
        self.plain.push(Some(region));
        Ok(RegionId(self.parts.len() - 1))
    }

    fn save_layout(&mut self) -> Result<(), Error> {
        let stored = Stored { format: FORMAT.into(), config: self.config, regions: self.parts.clone() };
        let json = serde_json::to_vec(&stored)
            .map_err(|e| Error::Config(format!("the IPL layout does not serialize: {e}")))?;
        self.device.storage_mut().set_config_area(json)?;
        Ok(())
    }

    fn logical_pages_of(&self, region: usize) -> u32 {
        self.parts[region].units * self.shape.lpns_per_unit
    }

    fn first_lpn(&self, region: RegionId, page: u32) -> Result<u32, Error> {
        let p = self.parts.get(region.0).ok_or_else(|| Error::Config(format!("no region {}", region.0)))?;
        let lpn = page.checked_mul(self.shape.parts).filter(|&l| l < self.logical_pages_of(region.0));
        lpn.ok_or_else(|| Error::LpnOutOfRange {
            region: p.spec.name.clone(),
            lpn: page,
            logical_pages: self.db_pages(region),
        })
    }

    fn check_range(&self, region: usize, lpn: u32, count: u32) -> Result<(), Error> {
        let pages = self.logical_pages_of(region);
        if lpn.checked_add(count).is_none_or(|end| end > pages) {
            return Err(Error::LpnOutOfRange {
                region: self.parts[region].spec.name.clone(),
                lpn,
                logical_pages: pages,
            });
        }
        Ok(())
    }

    /// Logical unit and logical page in it of a region's lpn.
    fn locate(&self, region: usize, lpn: u32) -> (usize, u32) {
        let p = &self.parts[region];
        ((p.first_unit + lpn / self.shape.lpns_per_unit) as usize, lpn % self.shape.lpns_per_unit)
    }

    /// Logical unit and DB page in it of a region's lpn.
    fn locate_db(&self, region: usize, lpn: u32) -> (usize, u32) {
        let (lu, idx) = self.locate(region, lpn);
        (lu, idx / self.shape.parts)
    }

    /// A bytes record must land on flash pages of its DB page that are on flash.
    fn check_record(&self, region: usize, first_lpn: u32, offset: usize, len: usize) -> Result<(), Error> {
        let f = self.shape.flash_page_bytes;
        let db = self.shape.parts as usize * f;
        if len == 0 || offset.checked_add(len).is_none_or(|end| end > db) {
            return Err(Error::DeltaRefused {
                lpn: first_lpn,
                reason: DeltaRefusal::OutOfPage { offset, len, page_bytes: db },
            });
        }
        for part in offset / f..=(offset + len - 1) / f {
            let (lu, idx) = self.locate(region, first_lpn + part as u32);
            if self.lunits[lu].map[idx as usize].is_none() {
                return Err(Error::DeltaRefused { lpn: first_lpn + part as u32, reason: DeltaRefusal::Unmapped });
            }
        }
        Ok(())
    }

    fn ppn(&self, phys: u32, unit_page: u32) -> Ppn {
        let g = self.device.geometry();
        let b = self.config.blocks_per_unit;
        let block = BlockId(phys * b + unit_page / g.pages_per_block);
        g.ppn(block, unit_page % g.pages_per_block)
    }

    fn corrupted(&self, region: usize, lpn: Option<u32>, ppn: Ppn, what: String) -> Error {
        let g = self.device.geometry();
        Error::Corrupted {
            region: self.parts[region].spec.name.clone(),
            lpn,
            block: g.block_of(ppn).0,
            page: g.page_in_block(ppn),
            what,
        }
    }

    /// Reads a region's lpn into `scratch` with its records applied.
    fn read_lpn(&mut self, region: usize, lpn: u32, now: SimTime) -> Result<Option<OpTiming>, Error> {
        self.check_range(region, lpn, 1)?;
        let (lu, idx) = self.locate(region, lpn);
        let (Some(phys), Some(unit_page)) = (self.lunits[lu].phys, self.lunits[lu].map[idx as usize]) else {
            return Ok(None);
        };
        let ppn = self.ppn(phys, unit_page);
        let keeps = self.device.storage().keeps_data();
        let read = self.device.read(ppn, now)?;
        let mut span = read.timing;
        self.scratch.copy_from_slice(read.data);
        if keeps {
            let ok = Tag::decode(read.oob).map(|t| t.data_crc == crc32fast::hash(read.data));
            if ok != Ok(true) {
                return Err(self.corrupted(region, Some(lpn), ppn, "the data page fails its checksum".into()));
            }
        }
        self.parts[region].counters.host_reads += 1;
        self.parts[region].ipl.page_reads += 1;
        let (d, part) = ((idx / self.shape.parts) as usize, idx % self.shape.parts);
        let refs: Vec<SectorRef> =
            self.lunits[lu].logs[d].iter().filter(|r| r.parts >> part & 1 == 1).copied().collect();
        let mut last_page = None;
        for r in refs {
            let log_ppn = self.ppn(phys, r.page);
            let read = self.device.read(log_ppn, now)?;
            span.end_ns = span.end_ns.max(read.timing.end_ns);
            let s = self.shape.sector_bytes;
            let sector = if keeps {
                match Sector::decode(&read.data[r.slot as usize * s..(r.slot as usize + 1) * s]) {
                    Ok(Some(sector)) => Some(sector),
                    Ok(None) => Some(Sector { db_page: d as u32, seq: 0, index: 0, count: 0, records: Vec::new() }),
                    Err(e) => {
                        return Err(self.corrupted(region, Some(lpn), log_ppn, format!("log sector {}: {e}", r.slot)))
                    }
                }
            } else {
                None
            };
            if last_page != Some(r.page) {
                self.parts[region].ipl.log_page_reads += 1;
                last_page = Some(r.page);
            }
            self.parts[region].ipl.log_sector_reads += 1;
            for rec in sector.iter().flat_map(|s| &s.records) {
                rec.apply_to_part(part, &mut self.scratch);
            }
        }
        for rec in &self.lunits[lu].pending[d] {
            rec.apply_to_part(part, &mut self.scratch);
        }
        Ok(Some(span))
    }

    /// Writes whole flash pages from `first_lpn` on, per logical unit: a first write
    /// programs them, a rewrite of pages on flash logs the diff, anything else merges.
    fn write_lpns(&mut self, region: usize, first_lpn: u32, data: &[u8], now: SimTime) -> Result<OpTiming, Error> {
        let f = self.shape.flash_page_bytes;
        if data.is_empty() || !data.len().is_multiple_of(f) {
            return Err(Error::WrongPayloadSize { got: data.len(), expected: f });
        }
        let count = (data.len() / f) as u32;
        self.check_range(region, first_lpn, count)?;
        let mut span = OpTiming { start_ns: SimTime::MAX, end_ns: now };
        let mut lpn = first_lpn;
        while lpn < first_lpn + count {
            let (lu, idx) = self.locate(region, lpn);
            let n = (self.shape.lpns_per_unit - idx).min(first_lpn + count - lpn);
            let bytes = &data[(lpn - first_lpn) as usize * f..(lpn - first_lpn + n) as usize * f];
            let t = self.write_in_unit(region, lu, idx, bytes, now)?;
            span.start_ns = span.start_ns.min(t.start_ns);
            span.end_ns = span.end_ns.max(t.end_ns);
            self.parts[region].counters.host_writes += n as u64;
            lpn += n;
        }
        Ok(span)
    }

    fn write_in_unit(
        &mut self,
        region: usize,
        lu: usize,
        idx: u32,
        data: &[u8],
        now: SimTime,
    ) -> Result<OpTiming, Error> {
        let f = self.shape.flash_page_bytes;
        let n = (data.len() / f) as u32;
        let mapped = (idx..idx + n).filter(|&i| self.lunits[lu].map[i as usize].is_some()).count() as u32;
        if mapped == 0 {
            let phys = match self.lunits[lu].phys {
                Some(p) => p,
                None => self.allocate(region, lu, now)?,
            };
            if self.units[phys as usize].data_pages + n <= self.shape.data_pages {
                return self.program_group(region, lu, phys, idx, data, now);
            }
        } else if mapped == n {
            return self.log_rewrite(region, lu, idx, data, now);
        }
        let overrides: Vec<(u32, &[u8])> = (idx..).zip(data.chunks(f)).collect();
        self.merge(region, lu, &overrides, None, now)
    }

    /// Takes a free unit for logical unit `lu` (erasing it if it is dirty).
    fn allocate(&mut self, region: usize, lu: usize, now: SimTime) -> Result<u32, Error> {
        let phys = self.take_free(region, now)?;
        self.units[phys as usize].state = UnitState::Live(lu as u32);
        self.lunits[lu].phys = Some(phys);
        Ok(phys)
    }

    fn take_free(&mut self, region: usize, now: SimTime) -> Result<u32, Error> {
        let phys =
            self.free.pop_front().ok_or_else(|| Error::RegionFull { region: self.parts[region].spec.name.clone() })?;
        if self.units[phys as usize].state == UnitState::Dirty {
            if let Err(e) = self.erase_unit(region, phys, now) {
                self.free.push_front(phys);
                return Err(e);
            }
        }
        self.units[phys as usize] = PhysUnit::fresh(UnitState::Erased);
        Ok(phys)
    }

    fn erase_unit(&mut self, region: usize, phys: u32, now: SimTime) -> Result<OpTiming, Error> {
        let b = self.config.blocks_per_unit;
        let mut span = OpTiming { start_ns: SimTime::MAX, end_ns: now };
        self.units[phys as usize].state = UnitState::Dirty;
        for block in phys * b..(phys + 1) * b {
            let t = self.device.erase(BlockId(block), now)?;
            span.start_ns = span.start_ns.min(t.start_ns);
            span.end_ns = span.end_ns.max(t.end_ns);
            self.parts[region].ipl.erases += 1;
        }
        self.units[phys as usize] = PhysUnit::fresh(UnitState::Erased);
        Ok(span)
    }

    /// Programs the pages of a first write as one group at the unit's next pages.
    fn program_group(
        &mut self,
        region: usize,
        lu: usize,
        phys: u32,
        idx: u32,
        data: &[u8],
        now: SimTime,
    ) -> Result<OpTiming, Error> {
        let f = self.shape.flash_page_bytes;
        let n = data.len() / f;
        let seq = self.next_seq();
        let generation = self.lunits[lu].generation;
        let mut span = OpTiming { start_ns: SimTime::MAX, end_ns: now };
        for (i, page) in data.chunks(f).enumerate() {
            let tag = Tag {
                kind: PageKind::Data,
                lunit: lu as u32,
                generation,
                page: idx + i as u32,
                seq,
                index: i as u16,
                count: n as u16,
                data_crc: crc32fast::hash(page),
            };
            let unit = &mut self.units[phys as usize];
            let unit_page = unit.next_page;
            unit.next_page += 1;
            unit.data_pages += 1;
            let ppn = self.ppn(phys, unit_page);
            let t = self.device.program(ppn, now, &[Span::new(0, page), Span::new(f, &tag.encode())])?;
            span.start_ns = span.start_ns.min(t.start_ns);
            span.end_ns = span.end_ns.max(t.end_ns);
            self.parts[region].ipl.page_writes += 1;
            self.lunits[lu].map[(idx + i as u32) as usize] = Some(unit_page);
            // A new base: records logged before it (for a trimmed page) no longer apply.
            let (d, part) = (((idx + i as u32) / self.shape.parts) as usize, (idx + i as u32) % self.shape.parts);
            for r in &mut self.lunits[lu].logs[d] {
                r.parts &= !(1u64 << part);
            }
        }
        Ok(span)
    }

    /// A rewrite of pages on flash: their byte diff against the flash state, logged.
    fn log_rewrite(
        &mut self,
        region: usize,
        lu: usize,
        idx: u32,
        data: &[u8],
        now: SimTime,
    ) -> Result<OpTiming, Error> {
        let f = self.shape.flash_page_bytes;
        let k = self.shape.parts;
        let lpn0 = (lu as u32 - self.parts[region].first_unit) * self.shape.lpns_per_unit;
        let mut span = OpTiming { start_ns: SimTime::MAX, end_ns: now };
        let mut by_page: Vec<(u32, Vec<Record>)> = Vec::new();
        for (i, new) in (idx..).zip(data.chunks(f)) {
            if let Some(t) = self.read_lpn(region, lpn0 + i, now)? {
                span.end_ns = span.end_ns.max(t.end_ns);
            }
            let d = i / k;
            let base = (i % k) as usize * f;
            let records = diff_records(&self.scratch, new, base);
            match by_page.last_mut() {
                Some((last, recs)) if *last == d => recs.extend(records),
                _ => by_page.push((d, records)),
            }
        }
        for (d, mut records) in by_page {
            let mut all = std::mem::take(&mut self.lunits[lu].pending[d as usize]);
            all.append(&mut records);
            let t = self.flush_records(region, lu, d, all, span.end_ns.max(now))?;
            span.start_ns = span.start_ns.min(t.start_ns);
            span.end_ns = span.end_ns.max(t.end_ns);
        }
        if span.start_ns == SimTime::MAX {
            span.start_ns = now;
        }
        Ok(span)
    }

    /// Writes `records` of DB page `d` as one group of log sectors, or merges the unit
    /// with them when its log region has no room.
    fn flush_records(
        &mut self,
        region: usize,
        lu: usize,
        d: u32,
        records: Vec<Record>,
        now: SimTime,
    ) -> Result<OpTiming, Error> {
        if records.is_empty() {
            return Ok(OpTiming { start_ns: now, end_ns: now });
        }
        let Some(phys) = self.lunits[lu].phys else {
            return Err(Error::DeltaRefused { lpn: d * self.shape.parts, reason: DeltaRefusal::Unmapped });
        };
        let sectors = pack(&records, self.shape.sector_bytes - SECTOR_HEADER);
        let unit = self.units[phys as usize];
        let spp = self.shape.sectors_per_log_page;
        let room = unit.open_log.map_or(0, |(_, used)| spp - used) + (self.shape.log_pages - unit.log_pages) * spp;
        if sectors.len() as u32 > room {
            return self.merge(region, lu, &[], Some((d, records)), now);
        }
        let seq = self.next_seq();
        let count = sectors.len() as u8;
        let f = self.shape.flash_page_bytes;
        let s = self.shape.sector_bytes;
        let mut span = OpTiming { start_ns: SimTime::MAX, end_ns: now };
        for (i, recs) in sectors.into_iter().enumerate() {
            let mut parts = 0u64;
            for r in &recs {
                match r {
                    Record::Trim { part } => parts &= !(1u64 << part),
                    r => parts |= r.parts_mask(f),
                }
            }
            self.parts[region].ipl.log_records += recs.len() as u64;
            let sector = Sector { db_page: d, seq, index: i as u8, count, records: recs };
            let bytes = sector.encode(s);
            let unit = &mut self.units[phys as usize];
            let (page, slot, fresh) = match unit.open_log {
                Some((page, used)) if used < spp => (page, used, false),
                _ => {
                    let page = unit.next_page;
                    unit.next_page += 1;
                    unit.log_pages += 1;
                    (page, 0, true)
                }
            };
            unit.open_log = Some((page, slot + 1));
            let ppn = self.ppn(phys, page);
            let t = if fresh {
                let tag = Tag {
                    kind: PageKind::Log,
                    lunit: lu as u32,
                    generation: self.lunits[lu].generation,
                    page: 0,
                    seq,
                    index: 0,
                    count: 0,
                    data_crc: 0,
                };
                self.device.program(ppn, now, &[Span::new(0, &bytes), Span::new(f, &tag.encode())])?
            } else {
                self.device.program(ppn, now, &[Span::new(slot as usize * s, &bytes)])?
            };
            span.start_ns = span.start_ns.min(t.start_ns);
            span.end_ns = span.end_ns.max(t.end_ns);
            self.parts[region].ipl.log_sector_writes += 1;
            self.lunits[lu].logs[d as usize].push(SectorRef { page, slot, parts });
        }
        self.apply_trims(lu, d, &records);
        Ok(span)
    }

    /// Trim records take effect in the map once they are on flash.
    fn apply_trims(&mut self, lu: usize, d: u32, records: &[Record]) {
        for r in records {
            if let Record::Trim { part } = r {
                let idx = d * self.shape.parts + part;
                self.lunits[lu].map[idx as usize] = None;
                for sr in &mut self.lunits[lu].logs[d as usize] {
                    sr.parts &= !(1u64 << part);
                }
            }
        }
    }

    /// Block merge: reads the unit's live pages and log, applies the records (and
    /// `extra`, a log group that did not fit), replaces pages by `overrides`, programs
    /// the result into a fresh unit, updates the map and erases the old unit.
    fn merge(
        &mut self,
        region: usize,
        lu: usize,
        overrides: &[(u32, &[u8])],
        extra: Option<(u32, Vec<Record>)>,
        now: SimTime,
    ) -> Result<OpTiming, Error> {
        let f = self.shape.flash_page_bytes;
        let s = self.shape.sector_bytes;
        let k = self.shape.parts;
        let keeps = self.device.storage().keeps_data();
        let mut end = now;
        let mut image: Vec<Option<Vec<u8>>> = vec![None; self.shape.lpns_per_unit as usize];
        let old = self.lunits[lu].phys;
        if let Some(phys) = old {
            for idx in 0..self.shape.lpns_per_unit {
                let Some(unit_page) = self.lunits[lu].map[idx as usize] else { continue };
                let ppn = self.ppn(phys, unit_page);
                let read = self.device.read(ppn, now)?;
                end = end.max(read.timing.end_ns);
                let page = read.data.to_vec();
                if keeps && Tag::decode(read.oob).map(|t| t.data_crc == crc32fast::hash(&page)) != Ok(true) {
                    let lpn = (lu as u32 - self.parts[region].first_unit) * self.shape.lpns_per_unit + idx;
                    return Err(self.corrupted(
                        region,
                        Some(lpn),
                        ppn,
                        "the data page fails its checksum (merge)".into(),
                    ));
                }
                self.parts[region].ipl.merge_page_reads += 1;
                image[idx as usize] = Some(page);
            }
            let mut log_pages: Vec<(u32, Vec<u8>)> = Vec::new();
            for d in 0..self.shape.db_pages_per_unit {
                let refs = self.lunits[lu].logs[d as usize].clone();
                for r in refs {
                    if r.parts == 0 {
                        continue;
                    }
                    let at = match log_pages.iter().position(|(p, _)| *p == r.page) {
                        Some(at) => at,
                        None => {
                            let ppn = self.ppn(phys, r.page);
                            let read = self.device.read(ppn, now)?;
                            end = end.max(read.timing.end_ns);
                            self.parts[region].ipl.merge_page_reads += 1;
                            log_pages.push((r.page, read.data.to_vec()));
                            log_pages.len() - 1
                        }
                    };
                    if !keeps {
                        continue;
                    }
                    let bytes = &log_pages[at].1[r.slot as usize * s..(r.slot as usize + 1) * s];
                    let sector = match Sector::decode(bytes) {
                        Ok(sector) => sector,
                        Err(e) => {
                            let ppn = self.ppn(phys, r.page);
                            return Err(self.corrupted(
                                region,
                                None,
                                ppn,
                                format!("log sector {}: {e} (merge)", r.slot),
                            ));
                        }
                    };
                    for rec in sector.iter().flat_map(|s| &s.records) {
                        for part in 0..k {
                            if r.parts >> part & 1 == 1 {
                                if let Some(page) = image[(d * k + part) as usize].as_mut() {
                                    rec.apply_to_part(part, page);
                                }
                            }
                        }
                    }
                }
            }
        }
        if let Some((d, records)) = &extra {
            for rec in records {
                for part in 0..k {
                    let slot = &mut image[(d * k + part) as usize];
                    match rec {
                        Record::Trim { part: p } if *p == part => *slot = None,
                        Record::Bytes { .. } => {
                            if let Some(page) = slot.as_mut() {
                                rec.apply_to_part(part, page);
                            }
                        }
                        Record::Trim { .. } => {}
                    }
                }
            }
            self.parts[region].ipl.log_records += records.len() as u64;
        }
        for (idx, bytes) in overrides {
            image[*idx as usize] = Some(bytes.to_vec());
        }
        let live = image.iter().filter(|p| p.is_some()).count();
        let generation = self.lunits[lu].generation + 1;
        let mut start = SimTime::MAX;
        let mut new_map = vec![None; image.len()];
        let new_phys = if live == 0 {
            None
        } else {
            let phys = self.take_free(region, now)?;
            let seq = self.next_seq();
            for (i, (idx, page)) in image.iter().enumerate().filter_map(|(i, p)| p.as_ref().map(|p| (i, p))).enumerate()
            {
                let tag = Tag {
                    kind: PageKind::Merged,
                    lunit: lu as u32,
                    generation,
                    page: idx as u32,
                    seq,
                    index: i as u16,
                    count: live as u16,
                    data_crc: crc32fast::hash(page),
                };
                let ppn = self.ppn(phys, i as u32);
                let t = self.device.program(ppn, end, &[Span::new(0, page), Span::new(f, &tag.encode())])?;
                start = start.min(t.start_ns);
                end = end.max(t.end_ns);
                self.parts[region].ipl.merge_page_writes += 1;
                new_map[idx] = Some(i as u32);
            }
            self.units[phys as usize] = PhysUnit {
                state: UnitState::Live(lu as u32),
                next_page: live as u32,
                data_pages: live as u32,
                log_pages: 0,
                open_log: None,
            };
            Some(phys)
        };
        let l = &mut self.lunits[lu];
        l.phys = new_phys;
        l.generation = generation;
        l.map = new_map;
        for logs in &mut l.logs {
            logs.clear();
        }
        self.parts[region].ipl.merges += 1;
        if let Some(phys) = old {
            let t = self.erase_unit(region, phys, end)?;
            end = end.max(t.end_ns);
            self.free.push_back(phys);
        }
        Ok(OpTiming { start_ns: start.min(end), end_ns: end })
    }

    fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq - 1
    }

    /// Forgets a flash page: a trim record, written at once.
    fn trim_lpn(&mut self, region: usize, lpn: u32, now: SimTime) -> Result<Option<OpTiming>, Error> {
        self.check_range(region, lpn, 1)?;
        let (lu, idx) = self.locate(region, lpn);
        if self.lunits[lu].map[idx as usize].is_none() {
            return Ok(None);
        }
        let (d, part) = (idx / self.shape.parts, idx % self.shape.parts);
        let mut records = std::mem::take(&mut self.lunits[lu].pending[d as usize]);
        records.push(Record::Trim { part });
        self.parts[region].counters.host_trims += 1;
        self.flush_records(region, lu, d, records, now).map(Some)
    }
}

/// Records turning `old` into `new` (one flash page at `base` of its DB page): runs of
/// differing bytes, joined when the gap between them is shorter than a record header.
fn diff_records(old: &[u8], new: &[u8], base: usize) -> Vec<Record> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < new.len() {
        if old[i] == new[i] {
            i += 1;
            continue;
        }
        let start = i;
        let mut end = i + 1;
        let mut j = end;
        while j < new.len() && j - end < format::RECORD_HEADER {
            if old[j] != new[j] {
                end = j + 1;
            }
            j += 1;
        }
        out.push(Record::Bytes { offset: (base + start) as u32, bytes: new[start..end].to_vec() });
        i = end;
    }
    out
}

#[cfg(test)]
mod tests;
