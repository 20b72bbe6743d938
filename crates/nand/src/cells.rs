//! Where a [`MemoryStorage`](crate::MemoryStorage) keeps the bytes of its programmed
//! blocks: per page a [`Cell`] (its pool buffer and where its OOB bytes are), per block
//! an OOB arena.
//!
//! A block gets a *slot* when it is first programmed and gives it back when it is
//! erased whole; slots are reused. All slots' cells sit in one array, `ppb` cells per
//! slot, so finding a page's cell costs one load from the small per-block slot table
//! and one from the cell array: the hot operations (a copyback's source, the discard of
//! a stale page, a read) touch a page of a random block, and every pointer followed on
//! the way would be a cache miss of its own.
//!
//! Arena invariant: a page's OOB is `arena[oob_at..oob_at + oob_len]` of its block's
//! arena and ends in a byte other than 0xFF (or is empty); ranges of different pages
//! never overlap; `dead` counts the arena bytes no page refers to (left behind when a
//! page's OOB grew elsewhere or was erased). The arena is compacted when those are more
//! than half of it, so it stays within twice the bytes the pages hold.

use crate::pool::NO_BUFFER;
use prefetch_index::prefetch_index;

/// No slot: the block holds no bytes in memory.
const NO_SLOT: u32 = u32::MAX;

/// One page of a resident block.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Cell {
    /// The pool buffer of its data area, or `NO_BUFFER` (erased data).
    pub(crate) data: u32,
    oob_at: u32,
    oob_len: u16,
}

impl Cell {
    const EMPTY: Cell = Cell { data: NO_BUFFER, oob_at: 0, oob_len: 0 };
}

/// Bytes of one page's cell.
pub(crate) const CELL_BYTES: usize = std::mem::size_of::<Cell>();

#[derive(Default)]
struct Arena {
    bytes: Vec<u8>,
    dead: usize,
}

impl Arena {
    /// A page's stored OOB bytes (see the arena invariant).
    fn of(&self, cell: &Cell) -> &[u8] {
        // An empty range sits at 0 (`set_oob_len`), always inside the arena.
        let at = cell.oob_at as usize;
        &self.bytes[at..at + cell.oob_len as usize]
    }
}

/// The cells and OOB arenas of every resident block.
pub(crate) struct Cells {
    ppb: usize,
    /// Per block: its slot, or `NO_SLOT`.
    slot_of: Vec<u32>,
    /// `ppb` cells per slot.
    cells: Vec<Cell>,
    arenas: Vec<Arena>,
    /// Slots of erased blocks, for the next block programmed (their cells are empty).
    free: Vec<u32>,
}

/// One resident block's cells and arena, to read and change.
pub(crate) struct BlockCells<'a> {
    pub(crate) cells: &'a mut [Cell],
    arena: &'a mut Arena,
}

impl Cells {
    pub(crate) fn new(blocks: usize, pages_per_block: usize) -> Cells {
        Cells {
            ppb: pages_per_block,
            slot_of: vec![NO_SLOT; blocks],
            cells: Vec::new(),
            arenas: Vec::new(),
            free: Vec::new(),
        }
    }

    /// Bytes of the per-block slot table (allocated up front).
    pub(crate) const SLOT_BYTES_PER_BLOCK: usize = std::mem::size_of::<u32>();

    fn slot(&self, block: usize) -> Option<usize> {
        match self.slot_of[block] {
            NO_SLOT => None,
            slot => Some(slot as usize),
        }
    }

    /// A page's cell, if its block is resident.
    pub(crate) fn cell(&self, block: usize, page: usize) -> Option<&Cell> {
        self.slot(block).map(|slot| &self.cells[slot * self.ppb + page])
    }

    /// Starts loading a page's cell into the cache, if its block is resident.
    pub(crate) fn prefetch_cell(&self, block: usize, page: usize) {
        if let Some(slot) = self.slot(block) {
            prefetch_index(&self.cells, slot * self.ppb + page);
        }
    }

    /// A resident block's cells.
    pub(crate) fn block(&self, block: usize) -> Option<&[Cell]> {
        self.slot(block).map(|slot| &self.cells[slot * self.ppb..(slot + 1) * self.ppb])
    }

    /// A page's stored OOB bytes, if its block is resident.
    pub(crate) fn oob(&self, block: usize, page: usize) -> Option<&[u8]> {
        let slot = self.slot(block)?;
        Some(self.arenas[slot].of(&self.cells[slot * self.ppb + page]))
    }

    /// A resident block's cells, if it is resident.
    pub(crate) fn get_mut(&mut self, block: usize) -> Option<BlockCells<'_>> {
        let slot = self.slot(block)?;
        Some(self.view(slot))
    }

    /// A block's cells, made resident (all pages empty) if it was not.
    pub(crate) fn resident(&mut self, block: usize) -> BlockCells<'_> {
        let slot = match self.slot(block) {
            Some(slot) => slot,
            None => {
                let slot = match self.free.pop() {
                    Some(slot) => slot as usize,
                    None => {
                        self.cells.resize(self.cells.len() + self.ppb, Cell::EMPTY);
                        self.arenas.push(Arena::default());
                        self.arenas.len() - 1
                    }
                };
                self.slot_of[block] = slot as u32;
                slot
            }
        };
        self.view(slot)
    }

    fn view(&mut self, slot: usize) -> BlockCells<'_> {
        BlockCells { cells: &mut self.cells[slot * self.ppb..(slot + 1) * self.ppb], arena: &mut self.arenas[slot] }
    }

    /// Gives a block's slot back (the block is erased whole: its cells are empty).
    pub(crate) fn release(&mut self, block: usize) {
        let Some(slot) = self.slot(block) else { return };
        debug_assert!(self.cells[slot * self.ppb..(slot + 1) * self.ppb].iter().all(|c| c.data == NO_BUFFER));
        let arena = &mut self.arenas[slot];
        arena.bytes.clear();
        arena.dead = 0;
        self.slot_of[block] = NO_SLOT;
        self.free.push(slot as u32);
    }

    /// Blocks that hold bytes in memory.
    pub(crate) fn resident_blocks(&self) -> usize {
        self.arenas.len() - self.free.len()
    }

    /// Memory of the slots (resident and free) beyond the slot table: cells and arenas.
    pub(crate) fn bytes(&self) -> u64 {
        let arenas: usize = self.arenas.iter().map(|a| std::mem::size_of::<Arena>() + a.bytes.capacity()).sum();
        (self.cells.capacity() * CELL_BYTES + arenas + self.free.capacity() * FREE_ENTRY_BYTES) as u64
    }

    /// Arena bytes of a resident block (0 if it is not), live and dead.
    #[cfg(test)]
    pub(crate) fn arena_len(&self, block: usize) -> usize {
        self.slot(block).map_or(0, |slot| self.arenas[slot].bytes.len())
    }
}

/// Bytes of a slot's entry in the free list.
const FREE_ENTRY_BYTES: usize = std::mem::size_of::<u32>();

/// Bytes of a resident block beyond the slot table, at most: its cells, an arena
/// allocated up to twice its bound (twice the bytes its pages' OOB areas hold) and its
/// slot's entry in the free list once erased.
pub(crate) fn max_block_bytes(pages_per_block: u64, oob_bytes: u64) -> u64 {
    block_cells_bytes(pages_per_block) + 4 * pages_per_block * oob_bytes
}

/// Bytes of a resident block beyond the slot table and its arena's bytes: its cells,
/// the arena's header and its slot's entry in the free list once erased.
pub(crate) fn block_cells_bytes(pages_per_block: u64) -> u64 {
    (std::mem::size_of::<Arena>() + FREE_ENTRY_BYTES) as u64 + pages_per_block * CELL_BYTES as u64
}

impl BlockCells<'_> {
    /// A page's stored OOB bytes (see the arena invariant).
    pub(crate) fn oob(&self, page: usize) -> &[u8] {
        self.arena.of(&self.cells[page])
    }

    /// A page's OOB bytes, grown with 0xFF to at least `len` bytes, for a program to
    /// change; [`BlockCells::trim_oob`] must follow. `scratch` is for a compaction.
    pub(crate) fn oob_mut(&mut self, page: usize, len: usize, scratch: &mut Vec<u8>) -> &mut [u8] {
        let (at, old) = (self.cells[page].oob_at as usize, self.cells[page].oob_len as usize);
        if len > old {
            if old == 0 {
                self.cells[page].oob_at = self.arena.bytes.len() as u32;
            } else if at + old != self.arena.bytes.len() {
                // Not the arena's last range: move the bytes to its end.
                if self.arena.dead + old > self.arena.bytes.len() / 2 {
                    self.compact(scratch);
                }
                let at = self.cells[page].oob_at as usize;
                let to = self.arena.bytes.len();
                self.arena.bytes.extend_from_within(at..at + old);
                self.arena.dead += old;
                self.cells[page].oob_at = to as u32;
            }
            let at = self.cells[page].oob_at as usize;
            self.arena.bytes.resize(at + len, 0xFF);
            self.cells[page].oob_len = len as u16;
        }
        let (at, len) = (self.cells[page].oob_at as usize, self.cells[page].oob_len as usize);
        &mut self.arena.bytes[at..at + len]
    }

    /// Drops a page's trailing 0xFF bytes from its stored OOB (restores the invariant).
    pub(crate) fn trim_oob(&mut self, page: usize) {
        let kept = self.oob(page).iter().rposition(|&b| b != 0xFF).map_or(0, |i| i + 1);
        self.set_oob_len(page, kept);
    }

    /// Replaces a page's OOB bytes with `bytes` (the rest of the area erased).
    pub(crate) fn set_oob(&mut self, page: usize, bytes: &[u8], scratch: &mut Vec<u8>) {
        self.clear_oob(page);
        self.oob_mut(page, bytes.len(), scratch).copy_from_slice(bytes);
        self.trim_oob(page);
    }

    /// Forgets a page's OOB bytes (an erase).
    pub(crate) fn clear_oob(&mut self, page: usize) {
        self.set_oob_len(page, 0);
    }

    /// Shortens a page's OOB range to `len` bytes.
    fn set_oob_len(&mut self, page: usize, len: usize) {
        let cell = &mut self.cells[page];
        let (at, old) = (cell.oob_at as usize, cell.oob_len as usize);
        if at + old == self.arena.bytes.len() {
            self.arena.bytes.truncate(at + len);
        } else {
            self.arena.dead += old - len;
        }
        cell.oob_len = len as u16;
        if len == 0 {
            cell.oob_at = 0;
        }
    }

    /// Rewrites the arena with the pages' ranges in page order and nothing between.
    fn compact(&mut self, scratch: &mut Vec<u8>) {
        scratch.clear();
        for page in 0..self.cells.len() {
            let to = scratch.len() as u32;
            scratch.extend_from_slice(self.oob(page));
            // An empty range stays at 0: anywhere else a later truncation of the
            // arena could leave it pointing past the end.
            self.cells[page].oob_at = if self.cells[page].oob_len == 0 { 0 } else { to };
        }
        std::mem::swap(&mut self.arena.bytes, scratch);
        self.arena.dead = 0;
    }
}
