//! The storage seam: where a device's persistent state lives.
//!
//! A [`Storage`] keeps everything that survives a power cycle: page bytes (data then
//! OOB), per-page program counts, per-block erase counts and write pointers, and the
//! controller's small configuration area. It applies programs as NAND does — stored =
//! old AND new, so bits only ever go 1→0 — but it does not judge legality: the
//! [`Device`](crate::Device) checks the rules before it calls in. Implementations:
//! [`MemoryStorage`] (sparse in memory, optionally persisted to an image file) and
//! [`FaultyStorage`](crate::FaultyStorage) (a power-cut wrapper).
//!
//! Invariant: a page whose program count is 0 is erased (reads as all 0xFF).

use crate::geometry::{BlockId, Geometry, Ppn};
use std::path::PathBuf;
use std::sync::Arc;

/// Bytes to program at `offset` of the raw page (data area first, then OOB).
#[derive(Clone, Copy, Debug)]
pub struct Span<'a> {
    pub offset: usize,
    pub bytes: &'a [u8],
}

impl<'a> Span<'a> {
    pub fn new(offset: usize, bytes: &'a [u8]) -> Self {
        Span { offset, bytes }
    }
}

/// The power failed during or before this operation; nothing more can be done until
/// the storage is powered on again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PowerCut;

/// Persistent state of a NAND device.
pub trait Storage: Send {
    fn geometry(&self) -> &Geometry;
    /// False for a metadata-only store (fast write-amplification runs): data and OOB
    /// bytes are dropped and every page reads as erased.
    fn keeps_data(&self) -> bool;
    /// Data bytes of a page, or `None` when the page holds none (erased).
    fn data(&self, ppn: Ppn) -> Option<&[u8]>;
    /// OOB bytes of a page, or `None` when erased.
    fn oob(&self, ppn: Ppn) -> Option<&[u8]>;
    fn program_count(&self, ppn: Ppn) -> u8;
    fn erase_count(&self, block: BlockId) -> u32;
    /// Lowest page index a first program may still target in this block
    /// (`pages_per_block` when the block must be erased first).
    fn write_pointer(&self, block: BlockId) -> u32;
    /// Programs the spans (stored = old AND new) and counts one program.
    fn program(&mut self, ppn: Ppn, spans: &[Span]) -> Result<(), PowerCut>;
    /// Programs erased `dst` with the content of `src` in which `spans` replace bytes
    /// (copyback with data input); counts one program on `dst`.
    fn copy_program(&mut self, src: Ppn, dst: Ppn, spans: &[Span]) -> Result<(), PowerCut>;
    /// Erases a block and counts a P/E cycle.
    fn erase(&mut self, block: BlockId) -> Result<(), PowerCut>;
    /// An erase interrupted by a power cut: pages `[0, erased_pages)` are erased, the
    /// rest keep their bytes, the block counts the cycle and must be erased again before
    /// any first program.
    fn tear_erase(&mut self, block: BlockId, erased_pages: u32);
    /// Bytes the flash manager keeps in the controller's configuration area (its region
    /// layout). Persisted with the device, not timed.
    fn config_area(&self) -> &[u8];
    fn set_config_area(&mut self, bytes: Vec<u8>);
    /// Makes the state durable where the store has a durable form (an image file).
    fn flush(&mut self) -> Result<(), crate::ImageError>;
    /// False after a power cut, until [`Storage::power_on`].
    fn powered(&self) -> bool {
        true
    }
    /// Restores power after a cut. A no-op for stores that cannot lose power.
    fn power_on(&mut self) {}
    /// The operation the last power cut tore, for stores that inject cuts.
    fn last_torn(&self) -> Option<crate::TornOp> {
        None
    }
}

/// One page's bytes. Page data is reference-counted so that a copyback shares it with
/// its source instead of copying 4 KiB; a later append to either copy unshares it.
#[derive(Clone, Default)]
pub(crate) struct PageCell {
    pub(crate) data: Option<Arc<[u8]>>,
    pub(crate) oob: Option<Box<[u8]>>,
}

/// Sparse in-memory storage: a block costs memory only once it has been programmed, and
/// an erase frees it. With a path attached, [`Storage::flush`] writes an image file.
pub struct MemoryStorage {
    pub(crate) geometry: Geometry,
    pub(crate) keep_data: bool,
    pub(crate) program_counts: Vec<u8>,
    pub(crate) erase_counts: Vec<u32>,
    pub(crate) write_pointers: Vec<u16>,
    pub(crate) blocks: Vec<Option<Box<[PageCell]>>>,
    pub(crate) config_area: Vec<u8>,
    pub(crate) image_path: Option<PathBuf>,
}

impl MemoryStorage {
    /// A fresh, fully erased device. `keep_data = false` keeps metadata only.
    pub fn new(geometry: Geometry, keep_data: bool) -> Self {
        let blocks = geometry.total_blocks() as usize;
        MemoryStorage {
            program_counts: vec![0; geometry.total_pages() as usize],
            erase_counts: vec![0; blocks],
            write_pointers: vec![0; blocks],
            blocks: (0..blocks).map(|_| None).collect(),
            config_area: Vec::new(),
            image_path: None,
            keep_data,
            geometry,
        }
    }

    /// Number of blocks that currently hold bytes in memory.
    pub fn resident_blocks(&self) -> usize {
        self.blocks.iter().filter(|b| b.is_some()).count()
    }

    fn cell(&self, ppn: Ppn) -> Option<&PageCell> {
        let block = self.geometry.block_of(ppn).0 as usize;
        let page = self.geometry.page_in_block(ppn) as usize;
        self.blocks[block].as_ref().map(|cells| &cells[page])
    }

    fn cell_mut(&mut self, ppn: Ppn) -> &mut PageCell {
        let block = self.geometry.block_of(ppn).0 as usize;
        let page = self.geometry.page_in_block(ppn) as usize;
        let pages = self.geometry.pages_per_block as usize;
        let cells = self.blocks[block]
            .get_or_insert_with(|| vec![PageCell::default(); pages].into_boxed_slice());
        &mut cells[page]
    }

    fn note_program(&mut self, ppn: Ppn) {
        let count = &mut self.program_counts[ppn.0 as usize];
        *count = count.saturating_add(1);
        let block = self.geometry.block_of(ppn);
        let page = self.geometry.page_in_block(ppn);
        let wp = &mut self.write_pointers[block.0 as usize];
        *wp = (*wp).max(page as u16 + 1);
    }
}

/// ANDs `spans` into a page cell (NAND programming semantics).
fn and_spans(cell: &mut PageCell, page_bytes: usize, oob_bytes: usize, spans: &[Span]) {
    for span in spans {
        let end = span.offset + span.bytes.len();
        if span.offset < page_bytes {
            let data_end = end.min(page_bytes);
            let src = &span.bytes[..data_end - span.offset];
            match &mut cell.data {
                // Fast path: a whole-page first program.
                None if span.offset == 0 && src.len() == page_bytes => {
                    cell.data = Some(Arc::from(src));
                }
                slot => {
                    let data = slot.get_or_insert_with(|| Arc::from(vec![0xFF; page_bytes]));
                    let data = Arc::make_mut(data);
                    for (d, s) in data[span.offset..data_end].iter_mut().zip(src) {
                        *d &= *s;
                    }
                }
            }
        }
        if end > page_bytes {
            let oob_start = span.offset.max(page_bytes);
            let src = &span.bytes[oob_start - span.offset..];
            let oob = cell
                .oob
                .get_or_insert_with(|| vec![0xFF; oob_bytes].into_boxed_slice());
            for (d, s) in oob[oob_start - page_bytes..].iter_mut().zip(src) {
                *d &= *s;
            }
        }
    }
}

impl Storage for MemoryStorage {
    fn geometry(&self) -> &Geometry {
        &self.geometry
    }

    fn keeps_data(&self) -> bool {
        self.keep_data
    }

    fn data(&self, ppn: Ppn) -> Option<&[u8]> {
        self.cell(ppn).and_then(|c| c.data.as_deref())
    }

    fn oob(&self, ppn: Ppn) -> Option<&[u8]> {
        self.cell(ppn).and_then(|c| c.oob.as_deref())
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

    fn program(&mut self, ppn: Ppn, spans: &[Span]) -> Result<(), PowerCut> {
        if self.keep_data {
            let (page_bytes, oob_bytes) = (
                self.geometry.page_bytes as usize,
                self.geometry.oob_bytes as usize,
            );
            and_spans(self.cell_mut(ppn), page_bytes, oob_bytes, spans);
        }
        self.note_program(ppn);
        Ok(())
    }

    fn copy_program(&mut self, src: Ppn, dst: Ppn, spans: &[Span]) -> Result<(), PowerCut> {
        if self.keep_data {
            let (page_bytes, oob_bytes) = (
                self.geometry.page_bytes as usize,
                self.geometry.oob_bytes as usize,
            );
            let mut register = self.cell(src).cloned().unwrap_or_default();
            // Data input replaces bytes in the page register before the program.
            for span in spans {
                let end = span.offset + span.bytes.len();
                if span.offset < page_bytes {
                    let data = register
                        .data
                        .get_or_insert_with(|| Arc::from(vec![0xFF; page_bytes]));
                    let data_end = end.min(page_bytes);
                    Arc::make_mut(data)[span.offset..data_end]
                        .copy_from_slice(&span.bytes[..data_end - span.offset]);
                }
                if end > page_bytes {
                    let oob_start = span.offset.max(page_bytes);
                    let oob = register
                        .oob
                        .get_or_insert_with(|| vec![0xFF; oob_bytes].into_boxed_slice());
                    oob[oob_start - page_bytes..end - page_bytes]
                        .copy_from_slice(&span.bytes[oob_start - span.offset..]);
                }
            }
            *self.cell_mut(dst) = register;
        }
        self.note_program(dst);
        Ok(())
    }

    fn erase(&mut self, block: BlockId) -> Result<(), PowerCut> {
        self.tear_erase(block, self.geometry.pages_per_block);
        self.write_pointers[block.0 as usize] = 0;
        Ok(())
    }

    fn tear_erase(&mut self, block: BlockId, erased_pages: u32) {
        let ppb = self.geometry.pages_per_block;
        let erased_pages = erased_pages.min(ppb);
        let first = (block.0 * ppb) as usize;
        self.program_counts[first..first + erased_pages as usize].fill(0);
        if erased_pages == ppb {
            self.blocks[block.0 as usize] = None;
        } else if let Some(cells) = &mut self.blocks[block.0 as usize] {
            for cell in &mut cells[..erased_pages as usize] {
                *cell = PageCell::default();
            }
        }
        self.erase_counts[block.0 as usize] += 1;
        self.write_pointers[block.0 as usize] = ppb as u16;
    }

    fn config_area(&self) -> &[u8] {
        &self.config_area
    }

    fn set_config_area(&mut self, bytes: Vec<u8>) {
        self.config_area = bytes;
    }

    fn flush(&mut self) -> Result<(), crate::ImageError> {
        match self.image_path.clone() {
            Some(path) => crate::image::write_image(self, &path),
            None => Ok(()),
        }
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
    fn program_ands_and_counts() {
        let mut s = MemoryStorage::new(tiny(), true);
        let p = Ppn(1);
        assert_eq!(s.data(p), None);
        s.program(p, &[Span::new(10, &[0x0F, 0xF0]), Span::new(512, &[0x00])])
            .unwrap();
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
        s.program(Ppn(0), &[Span::new(0, &page), Span::new(512, &[1, 2, 3])])
            .unwrap();
        s.copy_program(Ppn(0), Ppn(4), &[Span::new(513, &[9])])
            .unwrap();
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
        s.tear_erase(BlockId(0), 2);
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
    fn metadata_only_store_drops_bytes() {
        let mut s = MemoryStorage::new(tiny(), false);
        s.program(Ppn(0), &[Span::new(0, &[0])]).unwrap();
        assert_eq!(s.data(Ppn(0)), None);
        assert_eq!(s.program_count(Ppn(0)), 1);
    }
}
