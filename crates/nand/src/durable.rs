//! The durable point: which pages were programmed and complete at the last moment the
//! device's writes were known durable, so that a flash manager can tell a page a power
//! cut may have torn from a page that completed and was damaged later.
//!
//! A cut tears only the operation in flight. After power returns nothing on the chip
//! says which operation that was: a page that fails its check may be torn, or may have
//! completed and rotted since. The host does know, at a durability point (a commit or
//! checkpoint sync, a clean close), that no operation is in flight and every page on
//! the device is complete. The durable point records that moment: per block its erase
//! count and per page its program count. After a restart a page *may be torn* only if
//! its block was erased since the record, or its program count changed since (it was
//! first programmed or appended to after it). Every other page completed, so a failed
//! check on it is corruption.
//!
//! Within one power session the device also knows which programs it saw complete; a
//! record advances a page only to such a program. So a page torn by a cut before the
//! session stays "may be torn" through any number of later records until its block is
//! erased: the flash managers leave a torn page unused, and its verdict never flips to
//! corrupt. A block whose state at the record is not fully known (a torn erase from an
//! earlier session, an image written before records existed) keeps its old entry, so
//! all its pages stay "may be torn" until it is erased and refilled.
//!
//! The record is host metadata, like the configuration area: not a NAND program, not
//! timed. [`crate::MemoryStorage`] keeps it in memory and, with an image attached,
//! writes the entries that changed to the image after the data is synced (a record
//! never claims a page the disk might not hold; see `docs/safety.md`, "The durable
//! point").

use crate::geometry::Geometry;

/// Erase-count entry of a block whose state was never recorded.
const UNKNOWN: u32 = 0;

/// The last durable record and what the current power session saw complete.
pub(crate) struct DurablePoint {
    pages_per_block: usize,
    /// Per block: its erase count + 1 at the record, or [`UNKNOWN`].
    erase: Vec<u32>,
    /// Per page: its program count at the record.
    counts: Vec<u8>,
    /// One bit per page: its last program completed in this power session.
    complete: Vec<u64>,
    /// One bit per block: programmed or erased since the last record.
    dirty: Vec<u64>,
    /// Generation of the configuration area at the record (image files; 0 without
    /// one). Configuration writes are synced before they return, so a newer valid
    /// configuration slot than this was complete: if none passes its checksum on open,
    /// the newest was damaged after it completed, and an older one must not stand in.
    config_generation: u64,
}

/// A block's entry of the record, as stored: erase count + 1 (0: unknown), then the
/// program count of each of its pages.
pub(crate) struct Entry<'a> {
    pub erase: u32,
    pub counts: &'a [u8],
}

fn bit(bits: &[u64], i: usize) -> bool {
    bits[i / 64] & (1 << (i % 64)) != 0
}

fn set(bits: &mut [u64], i: usize) {
    bits[i / 64] |= 1 << (i % 64);
}

fn clear(bits: &mut [u64], i: usize) {
    bits[i / 64] &= !(1 << (i % 64));
}

impl DurablePoint {
    /// A fresh device: every block recorded erased (nothing on it can be torn).
    pub(crate) fn fresh(geometry: &Geometry) -> Self {
        let mut point = Self::unknown(geometry);
        point.erase.fill(1);
        point
    }

    /// A device whose state was never recorded: every programmed page may be torn.
    pub(crate) fn unknown(geometry: &Geometry) -> Self {
        let (blocks, pages) = (geometry.total_blocks() as usize, geometry.total_pages() as usize);
        DurablePoint {
            pages_per_block: geometry.pages_per_block as usize,
            erase: vec![UNKNOWN; blocks],
            counts: vec![0; pages],
            complete: vec![0; pages.div_ceil(64)],
            dirty: vec![0; blocks.div_ceil(64)],
            config_generation: 0,
        }
    }

    /// Bytes this keeps per device of `geometry` (for the memory footprint).
    pub(crate) fn bytes_for(geometry: &Geometry) -> u64 {
        let (blocks, pages) = (geometry.total_blocks() as u64, geometry.total_pages() as u64);
        blocks * 4 + pages + pages.div_ceil(64) * 8 + blocks.div_ceil(64) * 8
    }

    /// A program of page `ppn` (in `block`) completed.
    pub(crate) fn programmed(&mut self, ppn: u32, block: u32) {
        set(&mut self.complete, ppn as usize);
        set(&mut self.dirty, block as usize);
    }

    /// The first `erased_pages` pages of `block` were erased (all of them: a completed
    /// erase).
    pub(crate) fn erased(&mut self, block: u32, erased_pages: u32) {
        let first = block as usize * self.pages_per_block;
        for p in first..first + erased_pages as usize {
            clear(&mut self.complete, p);
        }
        set(&mut self.dirty, block as usize);
    }

    /// Power was lost (or the host restarted): which programs completed is forgotten.
    pub(crate) fn power_lost(&mut self) {
        self.complete.fill(0);
    }

    /// Whether a cut could have interrupted the last program of page `ppn` of `block`,
    /// given the page's current program count and the block's erase count.
    pub(crate) fn may_be_torn(&self, ppn: u32, block: u32, count: u8, erase_count: u32) -> bool {
        if bit(&self.complete, ppn as usize) {
            return false;
        }
        self.erase[block as usize] != erase_count.wrapping_add(1) || self.counts[ppn as usize] != count
    }

    /// Records the current state (every page complete: the caller is at a durability
    /// point) as far as this session knows it; returns the blocks whose entry changed.
    pub(crate) fn record(&mut self, counts: &[u8], erase_counts: &[u32]) -> Vec<u32> {
        let mut changed = Vec::new();
        for word in 0..self.dirty.len() {
            let mut bits = std::mem::take(&mut self.dirty[word]);
            while bits != 0 {
                let b = word * 64 + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                if self.record_block(b, counts, erase_counts[b]) {
                    changed.push(b as u32);
                }
            }
        }
        changed
    }

    /// Advances block `b`'s entry to what this session saw complete; true if it changed.
    fn record_block(&mut self, b: usize, counts: &[u8], erase_count: u32) -> bool {
        let pages = b * self.pages_per_block..(b + 1) * self.pages_per_block;
        let erase = erase_count.wrapping_add(1);
        if self.erase[b] != erase {
            // Erased since the record: known whole only if every programmed page was
            // seen complete (always so after an erase in this session).
            if !pages.clone().all(|p| counts[p] == 0 || bit(&self.complete, p)) {
                return false;
            }
            self.erase[b] = erase;
            self.counts[pages.clone()].copy_from_slice(&counts[pages]);
            return true;
        }
        let mut changed = false;
        for p in pages {
            if bit(&self.complete, p) && self.counts[p] != counts[p] {
                self.counts[p] = counts[p];
                changed = true;
            }
        }
        changed
    }

    /// Records the configuration generation; true if it changed.
    pub(crate) fn record_config(&mut self, generation: u64) -> bool {
        std::mem::replace(&mut self.config_generation, generation) != generation
    }

    /// The configuration generation at the record.
    pub(crate) fn config_generation(&self) -> u64 {
        self.config_generation
    }

    /// Block `b`'s entry, to persist it.
    pub(crate) fn entry(&self, b: u32) -> Entry<'_> {
        let first = b as usize * self.pages_per_block;
        Entry { erase: self.erase[b as usize], counts: &self.counts[first..first + self.pages_per_block] }
    }

    /// Loads a persisted record: `erase` per block (erase count + 1, 0 unknown), then
    /// `counts` per page, and the configuration generation.
    pub(crate) fn load(geometry: &Geometry, erase: Vec<u32>, counts: Vec<u8>, config_generation: u64) -> Self {
        let mut point = Self::unknown(geometry);
        point.erase = erase;
        point.counts = counts;
        point.config_generation = config_generation;
        point
    }

    /// Every block's entry, for writing a whole image.
    pub(crate) fn entries(&self) -> (&[u32], &[u8]) {
        (&self.erase, &self.counts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geometry::Latencies;
    use crate::geometry::{CellType, Geometry};

    fn geometry() -> Geometry {
        Geometry {
            channels: 1,
            chips_per_channel: 1,
            blocks_per_chip: 2,
            pages_per_block: 4,
            page_bytes: 512,
            oob_bytes: 64,
            cell: CellType::Slc,
            nop: 4,
            endurance: 100,
            latencies: Latencies::slc_typical(),
        }
    }

    #[test]
    fn pages_after_the_record_may_be_torn_and_pages_before_it_not() {
        let mut d = DurablePoint::fresh(&geometry());
        let mut counts = vec![0u8; 8];
        let erases = vec![0u32; 2];
        counts[..2].fill(1);
        d.programmed(0, 0);
        d.programmed(1, 0);
        d.record(&counts, &erases);
        counts[2] = 1; // programmed after the record
        counts[0] = 2; // appended after the record
        d.programmed(2, 0);
        d.programmed(0, 0);
        d.power_lost();
        assert!(d.may_be_torn(0, 0, 2, 0), "an append after the record");
        assert!(!d.may_be_torn(1, 0, 1, 0), "complete at the record");
        assert!(d.may_be_torn(2, 0, 1, 0), "programmed after the record");
        assert!(d.may_be_torn(1, 0, 1, 1), "its block erased since");
    }

    #[test]
    fn a_torn_page_stays_may_be_torn_across_later_records() {
        let mut d = DurablePoint::fresh(&geometry());
        let mut counts = vec![0u8; 8];
        let erases = vec![0u32; 2];
        counts[0] = 1;
        d.programmed(0, 0);
        d.record(&counts, &erases);
        counts[1] = 1; // the cut tore this program
        d.programmed(1, 0);
        d.power_lost();
        counts[4] = 1; // the next session writes elsewhere, then records
        d.programmed(4, 1);
        d.record(&counts, &erases);
        d.power_lost();
        assert!(d.may_be_torn(1, 0, 1, 0));
        assert!(!d.may_be_torn(0, 0, 1, 0));
        assert!(!d.may_be_torn(4, 1, 1, 0));
    }

    #[test]
    fn an_unknown_block_becomes_known_once_erased_and_refilled() {
        let mut d = DurablePoint::unknown(&geometry());
        let mut counts = vec![1u8, 1, 0, 0, 0, 0, 0, 0];
        let mut erases = vec![0u32; 2];
        d.erased(1, 0);
        d.record(&counts, &erases);
        assert!(d.may_be_torn(0, 0, 1, 0), "never recorded");
        erases[0] = 1;
        counts[..2].fill(0);
        d.erased(0, 4);
        counts[0] = 1;
        d.programmed(0, 0);
        assert_eq!(d.record(&counts, &erases), vec![0]);
        d.power_lost();
        assert!(!d.may_be_torn(0, 0, 1, 1));
    }
}

#[cfg(test)]
mod image_tests {
    use crate::storage::{MemoryStorage, Span, Storage, SyncPoint};
    use crate::{Geometry, Ppn};

    fn geometry() -> Geometry {
        let mut g = Geometry::paper_emulator();
        (g.channels, g.chips_per_channel, g.blocks_per_chip, g.pages_per_block) = (1, 1, 4, 4);
        (g.page_bytes, g.oob_bytes) = (512, 64);
        g
    }

    #[test]
    fn an_image_keeps_its_durable_point_and_an_old_image_has_none() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("dev.img");
        let mut s = MemoryStorage::create_image(&path, geometry(), true).unwrap();
        for p in 0..2 {
            s.program(Ppn(p), &[Span::new(0, &[p as u8])]).unwrap();
        }
        s.sync(SyncPoint::Commit).unwrap();
        s.program(Ppn(2), &[Span::new(0, &[2])]).unwrap();
        s.program(Ppn(0), &[Span::new(1, &[0])]).unwrap();
        drop(s);
        let s = MemoryStorage::open_image(&path).unwrap();
        let torn: Vec<bool> = (0..3).map(|p| s.may_be_torn(Ppn(p))).collect();
        assert_eq!(torn, [true, false, true], "page 0 appended and page 2 programmed after the record");
        drop(s);

        // An image written before the area existed: no record, every page may be torn.
        let len = std::fs::metadata(&path).unwrap().len() - 4 * 4 - 16 - 8;
        std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(len).unwrap();
        let mut s = MemoryStorage::open_image(&path).unwrap();
        assert!((0..3).all(|p| s.may_be_torn(Ppn(p))));
        s.flush().unwrap();
        drop(s);
        let s = MemoryStorage::open_image(&path).unwrap();
        assert!((0..3).all(|p| s.may_be_torn(Ppn(p))), "a block never seen whole stays unknown");
        drop(s);
        std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(len + 3).unwrap();
        let err = MemoryStorage::open_image(&path).err().expect("a cut-short area is refused");
        assert!(err.to_string().contains("durable point"), "{err}");
    }

    #[test]
    fn a_damaged_newest_configuration_that_completed_is_refused_not_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("dev.img");
        let mut s = MemoryStorage::create_image(&path, geometry(), true).unwrap();
        s.set_config_area(b"one region".to_vec()).unwrap();
        s.set_config_area(b"two regions".to_vec()).unwrap(); // generation 2, in slot 1
        s.sync(SyncPoint::Commit).unwrap();
        drop(s);
        let slot1 = 4096 + (1 << 20) + 16;
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[slot1] ^= 0x04;
        std::fs::write(&path, &bytes).unwrap();
        let err = MemoryStorage::open_image(&path).err().expect("an older layout must not stand in");
        assert!(err.to_string().contains("configuration generation 2"), "{err}");

        // Not yet covered by a durable point: the damaged newest slot may be a torn
        // write, and the previous configuration stands.
        bytes[slot1] ^= 0x04;
        std::fs::write(&path, &bytes).unwrap();
        let mut s = MemoryStorage::open_image(&path).unwrap();
        s.set_config_area(b"three".to_vec()).unwrap(); // generation 3, in slot 0
        drop(s);
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[4096 + 16] ^= 0x04;
        std::fs::write(&path, &bytes).unwrap();
        let s = MemoryStorage::open_image(&path).unwrap();
        assert_eq!(s.config_area(), b"two regions");
    }
}
