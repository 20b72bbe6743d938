//! The storage seam: where a device's persistent state lives.
//!
//! A [`Storage`] keeps everything that survives a power cycle: page bytes (data then
//! OOB), per-page program counts, per-block erase counts and write pointers, and the
//! controller's small configuration area. It applies programs as NAND does — stored =
//! old AND new, so bits only ever go 1→0 — but it does not judge legality: the
//! [`Device`](crate::Device) checks the rules before it calls in. Implementations:
//! [`MemoryStorage`] (sparse in memory; with an image file attached every mutation is
//! written through to the file, see [`crate::image`]) and
//! [`FaultyStorage`](crate::FaultyStorage) (a power-cut wrapper).
//!
//! Invariant: a page whose program count is 0 is erased (reads as all 0xFF). With an
//! image attached, memory is the read cache of the file (write-through): every
//! mutation that returns `Ok` has reached the file (a completed `pwrite`), so process
//! death loses nothing; [`Storage::sync`] decides what also survives a power loss.

use crate::cells::{self, BlockCells, Cells};
use crate::durable::DurablePoint;
use crate::error::Error;
use crate::geometry::{BlockId, Geometry, Ppn};
use crate::image_format::ImageError;
use crate::pool::{PagePool, NO_BUFFER};
use image_file::ImageFile;
use prefetch_index::prefetch_index;

pub(crate) mod image_file;

/// Bytes to program at `offset` of the raw page (data area first, then OOB).
#[derive(Clone, Copy, Debug)]
pub struct Span<'a> {
    pub offset: usize,
    pub bytes: &'a [u8],
}

/// Bytes bound for one area of a page, at an offset within that area.
type AreaPart<'a> = Option<(usize, &'a [u8])>;

impl<'a> Span<'a> {
    pub fn new(offset: usize, bytes: &'a [u8]) -> Self {
        Span { offset, bytes }
    }

    /// The span's data-area part (offset in the data area, bytes) and OOB part (offset
    /// in the OOB area, bytes), given the page's data size.
    fn split(&self, page_bytes: usize) -> (AreaPart<'a>, AreaPart<'a>) {
        let in_data = page_bytes.saturating_sub(self.offset).min(self.bytes.len());
        let (data, oob) = self.bytes.split_at(in_data);
        let data = (!data.is_empty()).then_some((self.offset, data));
        let oob = (!oob.is_empty()).then(|| (self.offset + in_data - page_bytes, oob));
        (data, oob)
    }
}

/// A point where an upper layer wants its writes durable; what happens there depends on
/// the store's sync mode (see [`crate::SyncMode`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncPoint {
    /// A transaction commit returned to its caller.
    Commit,
    /// An explicit durability point (checkpoint, clean close, `flush`).
    Checkpoint,
    /// The write-ahead rule across a power loss: the log pages written so far must be
    /// durable before the data pages written next reach the device.
    WriteAhead,
}

/// Persistent state of a NAND device.
pub trait Storage: Send {
    fn geometry(&self) -> &Geometry;
    /// False for a metadata-only store (fast write-amplification runs): data and OOB
    /// bytes are dropped and every page reads as erased.
    fn keeps_data(&self) -> bool;
    /// Data bytes of a page, or `None` when the page holds none (erased).
    fn data(&self, ppn: Ppn) -> Option<&[u8]>;
    /// The leading OOB bytes of a page, or `None` when erased. The slice may be shorter
    /// than the OOB area (or empty): the bytes past it read 0xFF. [`MemoryStorage`]
    /// keeps a page's OOB up to its last byte that is not 0xFF; [`Device`](crate::Device)
    /// reads hand out the whole area.
    fn oob(&self, ppn: Ppn) -> Option<&[u8]>;
    fn program_count(&self, ppn: Ppn) -> u8;
    fn erase_count(&self, block: BlockId) -> u32;
    /// Lowest page index a first program may still target in this block
    /// (`pages_per_block` when the block must be erased first).
    fn write_pointer(&self, block: BlockId) -> u32;
    /// A page's program count and the write pointer of its block (`block`), in one
    /// call: the device checks both before every program and copyback.
    fn program_state(&self, ppn: Ppn, block: BlockId) -> (u8, u32) {
        (self.program_count(ppn), self.write_pointer(block))
    }
    /// Refuses, before anything changes, a program of `spans` on `ppn` (a copyback onto
    /// it when `copy_from` is its source) that would take the store's memory past its
    /// budget ([`Error::PageBudget`]); the device asks before it times the operation.
    /// Stores without a budget accept every one.
    fn check_room(&self, _ppn: Ppn, _spans: &[Span], _copy_from: Option<Ppn>) -> Result<(), Error> {
        Ok(())
    }
    /// Programs the spans (stored = old AND new) and counts one program. Errors:
    /// [`Error::PowerLost`] (a cut), [`Error::ReadOnly`], [`Error::Io`] (write-through).
    fn program(&mut self, ppn: Ppn, spans: &[Span]) -> Result<(), Error>;
    /// Programs erased `dst` with the content of `src` in which `spans` replace bytes
    /// (copyback with data input); counts one program on `dst`.
    fn copy_program(&mut self, src: Ppn, dst: Ppn, spans: &[Span]) -> Result<(), Error>;
    /// Erases a block and counts a P/E cycle.
    fn erase(&mut self, block: BlockId) -> Result<(), Error>;
    /// An erase interrupted by a power cut: pages `[0, erased_pages)` are erased, the
    /// rest keep their bytes, the block counts the cycle and must be erased again before
    /// any first program.
    fn tear_erase(&mut self, block: BlockId, erased_pages: u32) -> Result<(), Error>;
    /// Stops keeping a programmed page's data bytes: the flash manager will never read
    /// it again (garbage until its block is erased). Its OOB, program count and state
    /// stay as they are; the next erase of its block ends the discard. Not a NAND
    /// operation (nothing is timed, counted, written through or torn): emulator memory
    /// only. A no-op for stores that keep every page's bytes.
    fn discard_payload(&mut self, _ppn: Ppn) {}
    /// Whether the page's payload was discarded since its block was last erased.
    fn payload_discarded(&self, _ppn: Ppn) -> bool {
        false
    }
    /// Loads what the store keeps for a block's pages into the cache, ahead of a GC
    /// that copies them one by one (see [`crate::Device::prefetch_block`]). Changes
    /// nothing; a no-op for stores without such state.
    fn prefetch_block(&self, _block: BlockId) {}
    /// Starts loading what the store keeps for one page (see
    /// [`crate::Device::prefetch_page`]). Changes nothing.
    fn prefetch_page(&self, _ppn: Ppn) {}
    /// Bytes the flash manager keeps in the controller's configuration area (its region
    /// layout). Persisted with the device, not timed.
    fn config_area(&self) -> &[u8];
    fn set_config_area(&mut self, bytes: Vec<u8>) -> Result<(), Error>;
    /// Bytes the store keeps in memory for the device's state (page images, OOB,
    /// per-page and per-block metadata), for reports of memory use against what a run
    /// wrote.
    fn memory_bytes(&self) -> u64;
    /// A durability point: an image-backed store `fdatasync`s here as its sync mode
    /// says. A no-op for stores without a durable form.
    fn sync(&mut self, _point: SyncPoint) -> Result<(), ImageError> {
        Ok(())
    }
    /// Makes the state durable: a [`SyncPoint::Checkpoint`].
    fn flush(&mut self) -> Result<(), ImageError> {
        self.sync(SyncPoint::Checkpoint)
    }
    /// Refuses a mutation before anything changes: [`Error::ReadOnly`] for a read-only
    /// image, [`Error::Io`] once a write-through has failed.
    fn writable(&self, _operation: &'static str) -> Result<(), Error> {
        Ok(())
    }
    /// False after a power cut, until [`Storage::power_on`].
    fn powered(&self) -> bool {
        true
    }
    /// The checks before any mutation, in one call: [`Error::PowerLost`] after a cut,
    /// else what [`Storage::writable`] says.
    fn mutable(&self, operation: &'static str) -> Result<(), Error> {
        if !self.powered() {
            return Err(Error::PowerLost);
        }
        self.writable(operation)
    }
    /// Restores power after a cut (or a restart): what completed before it is known
    /// only from the last durable point. A no-op for stores that cannot lose power.
    fn power_on(&mut self) {}
    /// Whether a power cut could have interrupted the last program of `ppn`: it was
    /// programmed (or its block erased) after the last durable point and not seen
    /// complete since power-on (see `durable.rs`). A page for which this is false
    /// completed: a failed check on it is corruption, never a torn write. Stores
    /// without a record answer true (every page may be torn).
    fn may_be_torn(&self, _ppn: Ppn) -> bool {
        true
    }
    /// The operation the last power cut tore, for stores that inject cuts.
    fn last_torn(&self) -> Option<crate::TornOp> {
        None
    }
    /// Arms another power cut `after_ops` mutating operations from now, for stores that
    /// inject cuts (a cut during recovery). A no-op elsewhere.
    fn arm_power_cut(&mut self, _after_ops: u64) {}
}

/// Sparse in-memory storage: a block costs memory only once it has been programmed, and
/// an erase frees its page buffers (its cells wait for the next block programmed). With
/// an image file attached (`create_image`, `open_image`), every mutation is written
/// through to it.
pub struct MemoryStorage {
    pub(crate) geometry: Geometry,
    pub(crate) keep_data: bool,
    pub(crate) program_counts: Vec<u8>,
    pub(crate) erase_counts: Vec<u32>,
    pub(crate) write_pointers: Vec<u16>,
    /// Bytes of the programmed blocks (see [`crate::cells`]).
    pub(crate) blocks: Cells,
    /// One bit per page: its payload was discarded (see [`Storage::discard_payload`]).
    discarded: Vec<u64>,
    pub(crate) pool: PagePool,
    pub(crate) config_area: Vec<u8>,
    pub(crate) image: Option<ImageFile>,
    /// What was complete at the last durability point (see `durable.rs`).
    pub(crate) durable: DurablePoint,
    /// Scratch page register (OOB part) for copybacks.
    register: Vec<u8>,
    /// Scratch arena for compacting a block's OOB bytes.
    compact_scratch: Vec<u8>,
}

impl MemoryStorage {
    /// A fresh, fully erased device. `keep_data = false` keeps metadata only.
    pub fn new(geometry: Geometry, keep_data: bool) -> Self {
        let blocks = geometry.total_blocks() as usize;
        MemoryStorage {
            program_counts: vec![0; geometry.total_pages() as usize],
            erase_counts: vec![0; blocks],
            write_pointers: vec![0; blocks],
            blocks: Cells::new(blocks, geometry.pages_per_block as usize),
            discarded: vec![0; (geometry.total_pages() as usize).div_ceil(64)],
            config_area: Vec::new(),
            image: None,
            durable: DurablePoint::fresh(&geometry),
            register: Vec::new(),
            compact_scratch: Vec::new(),
            pool: PagePool::new(geometry.page_bytes as usize),
            keep_data,
            geometry,
        }
    }

    /// Bounds the bytes the page images take in memory (`None`: no bound): a program or
    /// copyback that would need a new image past it fails with [`Error::PageBudget`]
    /// and changes nothing. The per-page and per-block arrays (allocated here) and the
    /// cells and OOB bytes of programmed blocks are not counted: they are the caller's
    /// up-front share (see `workloads::limits::bookkeeping_bytes`).
    pub fn set_page_budget(&mut self, budget_bytes: Option<u64>) {
        self.pool.set_budget(budget_bytes);
    }

    /// A fresh device as [`MemoryStorage::new`] makes it, its page images bounded as
    /// [`MemoryStorage::set_page_budget`] says.
    pub fn with_page_budget(geometry: Geometry, keep_data: bool, budget_bytes: Option<u64>) -> Self {
        let mut s = MemoryStorage::new(geometry, keep_data);
        s.set_page_budget(budget_bytes);
        s
    }

    /// New page images a program of `spans` may take: none without data bytes or onto a
    /// page image of its own; one for the first span with data bytes, and one more for a
    /// second (the first may have shared a repeated-byte image, which the second then
    /// copies); a copyback at most one (its image is the source's until changed).
    fn images_needed(&self, ppn: Ppn, spans: &[Span], copy_from: Option<Ppn>) -> usize {
        let page_bytes = self.geometry.page_bytes as usize;
        let data_spans = spans.iter().filter(|s| s.offset < page_bytes && !s.bytes.is_empty()).take(2).count();
        match copy_from {
            Some(_) => data_spans.min(1),
            None if self.pool.is_unique(self.buffer_id(ppn)) => 0,
            None => data_spans,
        }
    }

    /// Number of blocks that currently hold bytes in memory.
    pub fn resident_blocks(&self) -> usize {
        self.blocks.resident_blocks()
    }

    /// (block, page in block) of a page, as indices.
    fn split(&self, ppn: Ppn) -> (usize, usize) {
        (self.geometry.block_of(ppn).0 as usize, self.geometry.page_in_block(ppn) as usize)
    }

    /// The pool buffer holding a page's data, or `NO_BUFFER`.
    fn buffer_id(&self, ppn: Ppn) -> u32 {
        let (block, page) = self.split(ppn);
        self.blocks.cell(block, page).map_or(NO_BUFFER, |c| c.data)
    }

    /// Sets a page's data buffer and OOB bytes while loading an image (`oob`: the whole
    /// area; `data` `None` for an erased data area).
    pub(crate) fn load_cells(&mut self, ppn: Ppn, data: Option<&[u8]>, oob: &[u8]) {
        let (block, page) = self.split(ppn);
        let id = data.map_or(NO_BUFFER, |d| self.pool.alloc_with(d));
        let mut cells = self.blocks.resident(block);
        let old = std::mem::replace(&mut cells.cells[page].data, id);
        cells.set_oob(page, oob, &mut self.compact_scratch);
        self.pool.release(old);
    }

    /// Counts a program in memory and writes it through: `first` when the page was
    /// erased before it, `spans` the ranges it changed.
    fn note_program(&mut self, ppn: Ppn, first: bool, spans: &[Span]) -> Result<(), Error> {
        let count = &mut self.program_counts[ppn.0 as usize];
        *count = count.saturating_add(1);
        let count = *count;
        let block = self.geometry.block_of(ppn);
        let page = self.geometry.page_in_block(ppn);
        let wp = &mut self.write_pointers[block.0 as usize];
        *wp = (*wp).max(page as u16 + 1);
        self.durable.programmed(ppn.0, block.0);
        let Some(mut image) = self.image.take() else { return Ok(()) };
        let mut raw = std::mem::take(&mut self.register);
        raw.clear();
        if self.keep_data {
            self.raw_page_into(ppn, &mut raw);
        }
        let written = image.write_program(ppn, count, &raw, spans, first);
        self.register = raw;
        self.image = Some(image);
        written
    }

    /// Data then OOB bytes of a page, erased parts as 0xFF.
    pub(crate) fn raw_page_into(&self, ppn: Ppn, raw: &mut Vec<u8>) {
        let g = &self.geometry;
        match self.data(ppn) {
            Some(d) => raw.extend_from_slice(d),
            None => raw.resize(raw.len() + g.page_bytes as usize, 0xFF),
        }
        let oob = self.oob(ppn).unwrap_or(&[]);
        raw.extend_from_slice(oob);
        raw.resize(raw.len() + g.oob_bytes as usize - oob.len(), 0xFF);
    }

    /// Places a programmed page's stored bytes (data then OOB) while loading an image.
    pub(crate) fn load_page(&mut self, ppn: Ppn, raw: &[u8]) {
        let (data, oob) = raw.split_at(self.geometry.page_bytes as usize);
        // A data area still all 0xFF (an OOB-only program) needs no buffer.
        self.load_cells(ppn, data.iter().any(|&b| b != 0xFF).then_some(data), oob);
    }

    /// Erases pages `[0, erased_pages)` of a block in memory and counts the cycle; the
    /// block then needs another erase before a first program.
    fn erase_prefix(&mut self, block: BlockId, erased_pages: u32) {
        let ppb = self.geometry.pages_per_block;
        let first = (block.0 * ppb) as usize;
        self.program_counts[first..first + erased_pages as usize].fill(0);
        for p in first..first + erased_pages as usize {
            self.discarded[p / 64] &= !(1 << (p % 64));
        }
        if let Some(mut cells) = self.blocks.get_mut(block.0 as usize) {
            for page in 0..erased_pages as usize {
                self.pool.release(std::mem::replace(&mut cells.cells[page].data, NO_BUFFER));
                cells.clear_oob(page);
            }
        }
        if erased_pages == ppb {
            // Now all erased: the cells go back for reuse.
            self.blocks.release(block.0 as usize);
        }
        self.erase_counts[block.0 as usize] += 1;
        self.write_pointers[block.0 as usize] = ppb as u16;
        self.durable.erased(block.0, erased_pages);
    }

    fn write_erase(&mut self, block: BlockId, erased_pages: u32, complete: bool) -> Result<(), Error> {
        let count = self.erase_counts[block.0 as usize];
        match &mut self.image {
            Some(image) => image.write_erase(block, count, erased_pages, complete),
            None => Ok(()),
        }
    }
}

/// Memory an in-memory device of some geometry takes (see [`Geometry::memory_footprint`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryFootprint {
    /// Allocated when the device is built: the per-page and per-block metadata arrays.
    pub upfront_bytes: u64,
    /// With every page resident and holding data (the most a data-keeping device takes).
    pub max_with_data_bytes: u64,
    /// The most a metadata-only device (`keep_data = false`) takes: its arrays alone.
    pub max_metadata_only_bytes: u64,
    /// What a block takes once programmed, besides its page images and OOB bytes: its
    /// cells (a page image id and an OOB place per page).
    pub block_cells_bytes: u64,
    /// What one page image takes against a [`MemoryStorage::set_page_budget`] budget:
    /// its bytes and their bookkeeping.
    pub page_image_bytes: u64,
}

impl Geometry {
    /// Bytes a [`MemoryStorage`] of this geometry needs, computed before allocating
    /// anything, so a caller can refuse a device larger than memory. Counts the arrays
    /// `MemoryStorage` keeps (allocator overhead aside).
    pub fn memory_footprint(&self) -> MemoryFootprint {
        let blocks = self.total_blocks() as u64;
        let pages = self.total_pages() as u64;
        let per_block = (std::mem::size_of::<u32>()                 // erase count
            + std::mem::size_of::<u16>()                            // write pointer
            + Cells::SLOT_BYTES_PER_BLOCK) as u64;
        // + one program count and one discard bit per page, + the durable point.
        let upfront_bytes =
            pages + pages.div_ceil(64) * 8 + blocks * per_block + crate::durable::DurablePoint::bytes_for(self);
        // A resident block: its cells (a buffer id, an OOB offset and length per page)
        // and its OOB arena (see `cells`); per page a pool buffer with its reference
        // count and, at worst, a free-list entry.
        let cells = cells::max_block_bytes(self.pages_per_block as u64, self.oob_bytes as u64);
        let per_page_buffer = PagePool::buffer_bytes(self.page_bytes as u64);
        let max_with_data_bytes = upfront_bytes + blocks * cells + pages * per_page_buffer;
        MemoryFootprint {
            upfront_bytes,
            max_with_data_bytes,
            max_metadata_only_bytes: upfront_bytes,
            block_cells_bytes: cells::block_cells_bytes(self.pages_per_block as u64),
            page_image_bytes: PagePool::buffer_bytes(self.page_bytes as u64),
        }
    }
}

/// ANDs `spans` into page `page` of `cells` (NAND programming semantics).
fn and_spans(
    pool: &mut PagePool,
    cells: &mut BlockCells<'_>,
    page: usize,
    page_bytes: usize,
    spans: &[Span],
    scratch: &mut Vec<u8>,
) {
    let mut oob_end = 0;
    for span in spans {
        let (data_part, oob_part) = span.split(page_bytes);
        if let Some((at, src)) = data_part {
            let data = &mut cells.cells[page].data;
            if *data == NO_BUFFER && src.len() == page_bytes {
                // Fast path: a whole-page first program.
                *data = pool.alloc_with(src);
            } else {
                *data = pool.make_unique(*data);
                for (d, s) in pool.get_unique_mut(*data)[at..at + src.len()].iter_mut().zip(src) {
                    *d &= *s;
                }
            }
        }
        if let Some((at, src)) = oob_part {
            oob_end = oob_end.max(at + src.len());
        }
    }
    if oob_end == 0 {
        return;
    }
    let oob = cells.oob_mut(page, oob_end, scratch);
    for span in spans {
        if let (_, Some((at, src))) = span.split(page_bytes) {
            for (d, s) in oob[at..at + src.len()].iter_mut().zip(src) {
                *d &= *s;
            }
        }
    }
    cells.trim_oob(page);
}

impl Storage for MemoryStorage {
    fn geometry(&self) -> &Geometry {
        &self.geometry
    }

    fn keeps_data(&self) -> bool {
        self.keep_data
    }

    fn data(&self, ppn: Ppn) -> Option<&[u8]> {
        match self.buffer_id(ppn) {
            NO_BUFFER => None,
            id => Some(self.pool.get(id)),
        }
    }

    fn oob(&self, ppn: Ppn) -> Option<&[u8]> {
        if self.program_counts[ppn.0 as usize] == 0 {
            return None;
        }
        let (block, page) = self.split(ppn);
        self.blocks.oob(block, page)
    }

    fn program_count(&self, ppn: Ppn) -> u8 {
        self.program_counts[ppn.0 as usize]
    }

    fn erase_count(&self, block: BlockId) -> u32 {
        self.erase_counts[block.0 as usize]
    }

    fn write_pointer(&self, block: BlockId) -> u32 {
        self.write_pointers[block.0 as usize] as u32
    }

    fn check_room(&self, ppn: Ppn, spans: &[Span], copy_from: Option<Ppn>) -> Result<(), Error> {
        // Two new images are the most any program takes: with room for them (always,
        // without a budget) nothing more is asked.
        if !self.keep_data || self.pool.has_room(2) || self.pool.has_room(self.images_needed(ppn, spans, copy_from)) {
            return Ok(());
        }
        let g = &self.geometry;
        let (chip, block, page) = g.locate(ppn);
        Err(Error::PageBudget {
            operation: if copy_from.is_some() { "copyback" } else { "program" },
            chip,
            block,
            page,
            budget_bytes: self.pool.budget().unwrap_or(u64::MAX),
            resident_bytes: self.pool.allocated_bytes(),
            chips: g.chips(),
            blocks_per_chip: g.blocks_per_chip,
            pages_per_block: g.pages_per_block,
            page_bytes: g.page_bytes,
        })
    }

    fn program(&mut self, ppn: Ppn, spans: &[Span]) -> Result<(), Error> {
        self.writable("program")?;
        let first = self.program_counts[ppn.0 as usize] == 0;
        if self.keep_data {
            let page_bytes = self.geometry.page_bytes as usize;
            let (block, page) = self.split(ppn);
            let mut cells = self.blocks.resident(block);
            and_spans(&mut self.pool, &mut cells, page, page_bytes, spans, &mut self.compact_scratch);
        }
        self.note_program(ppn, first, spans)
    }

    fn copy_program(&mut self, src: Ppn, dst: Ppn, spans: &[Span]) -> Result<(), Error> {
        self.writable("copyback")?;
        if self.keep_data {
            let page_bytes = self.geometry.page_bytes as usize;
            // Share the source's data buffer rather than copying it.
            let mut data = self.pool.share(self.buffer_id(src));
            let mut register = std::mem::take(&mut self.register);
            register.clear();
            register.extend_from_slice(self.oob(src).unwrap_or(&[]));
            // Data input replaces bytes in the page register before the program.
            for span in spans {
                let (data_part, oob_part) = span.split(page_bytes);
                if let Some((at, src)) = data_part {
                    data = self.pool.make_unique(data);
                    self.pool.get_unique_mut(data)[at..at + src.len()].copy_from_slice(src);
                }
                if let Some((at, src)) = oob_part {
                    if register.len() < at + src.len() {
                        register.resize(at + src.len(), 0xFF);
                    }
                    register[at..at + src.len()].copy_from_slice(src);
                }
            }
            let (block, page) = self.split(dst);
            let mut cells = self.blocks.resident(block);
            cells.set_oob(page, &register, &mut self.compact_scratch);
            let old = std::mem::replace(&mut cells.cells[page].data, data);
            self.pool.release(old);
            self.register = register;
        }
        // The destination was erased: the whole raw page is written through.
        self.note_program(dst, true, &[])
    }

    fn erase(&mut self, block: BlockId) -> Result<(), Error> {
        self.writable("erase")?;
        let ppb = self.geometry.pages_per_block;
        self.erase_prefix(block, ppb);
        self.write_pointers[block.0 as usize] = 0;
        self.write_erase(block, ppb, true)
    }

    fn tear_erase(&mut self, block: BlockId, erased_pages: u32) -> Result<(), Error> {
        self.writable("erase")?;
        let erased_pages = erased_pages.min(self.geometry.pages_per_block);
        self.erase_prefix(block, erased_pages);
        self.write_erase(block, erased_pages, false)
    }

    fn discard_payload(&mut self, ppn: Ppn) {
        let p = ppn.0 as usize;
        let (block, page) = self.split(ppn);
        let id =
            self.blocks.get_mut(block).map_or(NO_BUFFER, |c| std::mem::replace(&mut c.cells[page].data, NO_BUFFER));
        // A page holding a buffer is programmed; only one without needs its count read.
        if id == NO_BUFFER && self.program_counts[p] == 0 {
            return;
        }
        self.pool.release(id);
        self.discarded[p / 64] |= 1 << (p % 64);
    }

    fn prefetch_block(&self, block: BlockId) {
        let Some(cells) = self.blocks.block(block.0 as usize) else { return };
        // The reference counts a copyback raises and the OOB bytes it reads, of the
        // pages that still hold a payload (a discarded page is garbage: GC skips it).
        for (page, cell) in cells.iter().enumerate() {
            if cell.data != NO_BUFFER {
                self.pool.prefetch_refs(cell.data);
                if let Some(oob) = self.blocks.oob(block.0 as usize, page) {
                    prefetch_index(oob, 0);
                }
            }
        }
    }

    fn prefetch_page(&self, ppn: Ppn) {
        let (block, page) = self.split(ppn);
        self.blocks.prefetch_cell(block, page);
        prefetch_index(&self.program_counts, ppn.0 as usize);
    }

    fn payload_discarded(&self, ppn: Ppn) -> bool {
        let p = ppn.0 as usize;
        self.discarded[p / 64] & (1 << (p % 64)) != 0
    }

    fn config_area(&self) -> &[u8] {
        &self.config_area
    }

    fn writable(&self, operation: &'static str) -> Result<(), Error> {
        self.image.as_ref().map_or(Ok(()), |image| image.writable(operation))
    }

    fn set_config_area(&mut self, bytes: Vec<u8>) -> Result<(), Error> {
        self.writable("configuration write")?;
        if let Some(image) = &mut self.image {
            image.write_config(&bytes)?;
        }
        self.config_area = bytes;
        Ok(())
    }

    fn memory_bytes(&self) -> u64 {
        self.geometry.memory_footprint().upfront_bytes + self.blocks.bytes() + self.pool.bytes_in_use()
    }

    /// Syncs as the image's mode says; once the device's writes are durable (always,
    /// without an image), records the durable point and writes its changed entries.
    fn sync(&mut self, point: SyncPoint) -> Result<(), ImageError> {
        if let Some(image) = &mut self.image {
            if !image.sync(point)? {
                return Ok(());
            }
        }
        let changed = self.durable.record(&self.program_counts, &self.erase_counts);
        match &mut self.image {
            Some(image) => {
                let config = self.durable.record_config(image.config_generation());
                image.write_durable_point(&self.durable, &changed, config, point)
            }
            None => Ok(()),
        }
    }

    fn power_on(&mut self) {
        self.durable.power_lost();
    }

    fn may_be_torn(&self, ppn: Ppn) -> bool {
        let block = self.geometry.block_of(ppn);
        self.durable.may_be_torn(
            ppn.0,
            block.0,
            self.program_counts[ppn.0 as usize],
            self.erase_counts[block.0 as usize],
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tiny() -> Geometry {
        let mut g = Geometry::paper_emulator();
        g.channels = 1;
        g.chips_per_channel = 1;
        g.blocks_per_chip = 4;
        g.pages_per_block = 4;
        g.page_bytes = 512;
        g.oob_bytes = 64;
        g
    }

    #[test]
    fn spans_split_at_the_data_oob_boundary() {
        let bytes = [1, 2, 3, 4];
        assert_eq!(Span::new(510, &bytes).split(512), (Some((510, &bytes[..2])), Some((0, &bytes[2..]))));
        assert_eq!(Span::new(0, &bytes).split(512), (Some((0, &bytes[..])), None));
        assert_eq!(Span::new(520, &bytes).split(512), (None, Some((8, &bytes[..]))));
        let mut s = MemoryStorage::new(tiny(), true);
        s.program(Ppn(0), &[Span::new(510, &[0x0F, 0x1F, 0x2F, 0x3F])]).unwrap();
        assert_eq!(&s.data(Ppn(0)).unwrap()[510..], &[0x0F, 0x1F]);
        // The OOB is kept up to its last programmed byte that is not 0xFF.
        assert_eq!(s.oob(Ppn(0)).unwrap(), &[0x2F, 0x3F]);
    }

    #[test]
    fn program_ands_and_counts() {
        let mut s = MemoryStorage::new(tiny(), true);
        let p = Ppn(1);
        assert_eq!(s.data(p), None);
        s.program(p, &[Span::new(10, &[0x0F, 0xF0]), Span::new(512, &[0x00])]).unwrap();
        let d = s.data(p).unwrap();
        assert_eq!((d[9], d[10], d[11], d[12]), (0xFF, 0x0F, 0xF0, 0xFF));
        assert_eq!(s.oob(p).unwrap()[0], 0);
        s.program(p, &[Span::new(10, &[0x3C])]).unwrap();
        assert_eq!(s.data(p).unwrap()[10], 0x0C);
        assert_eq!(s.program_count(p), 2);
        assert_eq!(s.write_pointer(BlockId(0)), 2);
    }

    #[test]
    fn copyback_shares_then_unshares() {
        let mut s = MemoryStorage::new(tiny(), true);
        let page = vec![0x55u8; 512];
        s.program(Ppn(0), &[Span::new(0, &page), Span::new(512, &[1, 2, 3])]).unwrap();
        s.copy_program(Ppn(0), Ppn(4), &[Span::new(513, &[9])]).unwrap();
        assert_eq!(s.data(Ppn(4)).unwrap(), &page[..]);
        assert_eq!(&s.oob(Ppn(4)).unwrap()[..3], &[1, 9, 3]);
        s.program(Ppn(4), &[Span::new(0, &[0x05])]).unwrap();
        assert_eq!(s.data(Ppn(4)).unwrap()[0], 0x05);
        assert_eq!(s.data(Ppn(0)).unwrap()[0], 0x55, "source must not change");
    }

    #[test]
    fn erase_frees_and_torn_erase_blocks_programs() {
        let mut s = MemoryStorage::new(tiny(), true);
        for p in 0..4 {
            s.program(Ppn(p), &[Span::new(0, &[0])]).unwrap();
        }
        s.tear_erase(BlockId(0), 2).unwrap();
        assert_eq!(s.program_count(Ppn(1)), 0);
        assert_eq!(s.data(Ppn(1)), None);
        assert_eq!(s.program_count(Ppn(2)), 1);
        assert_eq!(s.write_pointer(BlockId(0)), 4);
        s.erase(BlockId(0)).unwrap();
        assert_eq!(s.erase_count(BlockId(0)), 2);
        assert_eq!(s.write_pointer(BlockId(0)), 0);
        assert_eq!(s.resident_blocks(), 0);
    }

    #[test]
    fn footprint_matches_the_arrays_a_new_store_allocates() {
        let g = tiny();
        let f = g.memory_footprint();
        let s = MemoryStorage::new(g.clone(), true);
        let arrays = s.program_counts.len()
            + crate::durable::DurablePoint::bytes_for(&g) as usize
            + s.discarded.len() * 8
            + s.erase_counts.len() * 4
            + s.write_pointers.len() * 2
            + g.total_blocks() as usize * 4;
        assert_eq!(f.upfront_bytes, arrays as u64);
        assert_eq!(f.max_metadata_only_bytes, f.upfront_bytes);
        let all_pages = (g.total_pages() * g.page_bytes) as u64;
        assert!(f.max_with_data_bytes > f.upfront_bytes + all_pages);
        // 4,000,000 blocks per chip of the paper's device: refused by size, not by trying.
        let mut huge = Geometry::paper_emulator();
        huge.blocks_per_chip = 4_000_000;
        assert!(huge.memory_footprint().max_with_data_bytes > 1 << 40);
    }

    /// The whole OOB area of a page as a reader sees it: the stored bytes, then 0xFF.
    fn oob_area(s: &MemoryStorage, ppn: Ppn) -> Vec<u8> {
        let mut area = s.oob(ppn).map(<[u8]>::to_vec).unwrap_or_default();
        assert!(area.last() != Some(&0xFF), "stored OOB of {ppn:?} ends in 0xFF: {area:?}");
        area.resize(s.geometry.oob_bytes as usize, 0xFF);
        area
    }

    #[test]
    fn oob_costs_the_bytes_written_not_the_area() {
        let mut g = tiny();
        g.pages_per_block = 256;
        let mut s = MemoryStorage::new(g.clone(), true);
        for p in 0..256 {
            s.program(Ppn(p), &[Span::new(512, &[p as u8 & 0x7F; 8])]).unwrap();
        }
        assert_eq!(s.blocks.arena_len(0), 256 * 8, "8 bytes per page, not the 64-byte area");
        // Appends to early pages move their bytes to the arena's end; the dead bytes
        // are compacted away before they outgrow the live ones.
        for round in 0..3 {
            for p in 0..256 {
                s.program(Ppn(p), &[Span::new(512 + 8 + 8 * round, &[1; 8])]).unwrap();
            }
            let (arena, live) = (s.blocks.arena_len(0), 256 * (16 + 8 * round));
            assert!(arena <= 2 * live + 64, "arena {arena} for {live} live bytes");
        }
        for p in 0..256 {
            let mut want = vec![p as u8 & 0x7F; 8];
            want.extend_from_slice(&[1; 24]);
            want.resize(64, 0xFF);
            assert_eq!(oob_area(&s, Ppn(p)), want, "page {p}");
        }
    }

    /// The case the property below found: a compaction placed the empty
    /// OOB range of an unwritten page at the arena's end; a torn erase then truncated
    /// the arena below it, and reading that page's OOB panicked.
    #[test]
    fn an_empty_oob_range_survives_a_compaction_and_a_torn_erase() {
        let mut s = MemoryStorage::new(tiny(), true);
        s.program(Ppn(12), &[Span::new(512 + 12, &[0; 20])]).unwrap();
        s.program(Ppn(13), &[Span::new(512, &[0])]).unwrap();
        s.program(Ppn(14), &[Span::new(512 + 63, &[0xFF])]).unwrap();
        // Grows page 12's OOB while it is not the arena's last range: compaction.
        s.program(Ppn(12), &[Span::new(512 + 31, &[0, 0])]).unwrap();
        s.tear_erase(BlockId(3), 2).unwrap();
        // Pages 12 and 13 erased, 14 programmed with no change, 15 never programmed.
        for p in 12..16 {
            assert_eq!(oob_area(&s, Ppn(p)), vec![0xFF; 64], "page {p}");
        }
    }

    proptest::proptest! {
        /// Against a model that keeps every page's whole OOB area: programs (AND),
        /// copybacks with data input, whole and torn erases give the same OOB bytes.
        #[test]
        fn oob_arena_matches_whole_areas(
            ops in proptest::collection::vec((0u8..6, 0u32..16, 0usize..64, proptest::collection::vec(0u8..=255, 1..24)), 1..400)
        ) {
            let g = tiny(); // 4 blocks of 4 pages, 64 OOB bytes
            let mut s = MemoryStorage::new(g.clone(), true);
            let mut model = vec![vec![0xFFu8; 64]; 16];
            let mut counts = [0u32; 16];
            for (kind, ppn, at, bytes) in ops {
                let len = bytes.len().min(64 - at);
                let bytes = &bytes[..len];
                match kind {
                    0..=2 => {
                        s.program(Ppn(ppn), &[Span::new(512 + at, bytes)]).unwrap();
                        for (m, b) in model[ppn as usize][at..at + len].iter_mut().zip(bytes) {
                            *m &= *b;
                        }
                        counts[ppn as usize] += 1;
                    }
                    3 => {
                        // Copyback to the next erased page of another block, if any.
                        let Some(dst) = (0..16).find(|&d| d / 4 != ppn / 4 && counts[d as usize] == 0) else { continue };
                        s.copy_program(Ppn(ppn), Ppn(dst), &[Span::new(512 + at, bytes)]).unwrap();
                        let mut register = model[ppn as usize].clone();
                        register[at..at + len].copy_from_slice(bytes);
                        model[dst as usize] = register;
                        counts[dst as usize] += 1;
                    }
                    4 => {
                        let block = ppn / 4;
                        s.erase(BlockId(block)).unwrap();
                        for p in block * 4..block * 4 + 4 {
                            model[p as usize].fill(0xFF);
                            counts[p as usize] = 0;
                        }
                    }
                    _ => {
                        let (block, pages) = (ppn / 4, at as u32 % 5);
                        s.tear_erase(BlockId(block), pages).unwrap();
                        for p in block * 4..block * 4 + pages {
                            model[p as usize].fill(0xFF);
                            counts[p as usize] = 0;
                        }
                    }
                }
                for p in 0..16 {
                    proptest::prop_assert_eq!(&oob_area(&s, Ppn(p)), &model[p as usize], "page {}", p);
                }
            }
        }
    }

    #[test]
    fn metadata_only_store_drops_bytes() {
        let mut s = MemoryStorage::new(tiny(), false);
        s.program(Ppn(0), &[Span::new(0, &[0])]).unwrap();
        assert_eq!(s.data(Ppn(0)), None);
        assert_eq!(s.program_count(Ppn(0)), 1);
    }
}
