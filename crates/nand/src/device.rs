//! The device: NAND rules and timing over a [`Storage`].
//!
//! Every operation is checked before it touches storage; an illegal one is refused with
//! an [`Error`] that names chip, block, page and (for the bit rule) the byte offset:
//! - a program may only clear bits (1→0); one needing 0→1 is refused;
//! - a page takes at most `nop` programs between erases if it is an LSB/SLC page, and
//!   exactly one if it is a CSB/MSB page;
//! - the first program of each page in a block goes in page order (pages may be
//!   skipped, as pSLC skips MSB pages, but never revisited);
//! - a copyback stays on one chip and targets an erased page;
//! - an erase beyond the block's rated endurance is refused.
//!
//! Each operation is timed on the chip and channel timelines from the caller's `now`.

use crate::error::Error;
use crate::geometry::{BlockId, Geometry, PageType, Ppn};
use crate::storage::{Span, Storage};
use crate::timing::{OpTiming, SimTime, Timelines};
use serde::{Deserialize, Serialize};

/// Operation counts since the device was created or restarted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceCounters {
    pub page_reads: u64,
    pub oob_reads: u64,
    /// First programs of erased pages (out-of-place writes, GC by read+program).
    pub page_programs: u64,
    /// Programs of already-programmed pages (in-place appends).
    pub reprograms: u64,
    pub copybacks: u64,
    pub erases: u64,
    pub bytes_to_device: u64,
    pub bytes_from_device: u64,
}

/// A page read: when it completed and its bytes (all 0xFF where erased; the OOB is the
/// whole area, although the storage keeps only its programmed part).
pub struct PageRead<'a> {
    pub timing: OpTiming,
    pub data: &'a [u8],
    pub oob: &'a [u8],
}

/// A whole-page read by a rebuild scan ([`Device::scan_read`]): `data` is `None` when the
/// page's payload was discarded (only its OOB is left to look at).
pub struct ScanRead<'a> {
    pub timing: OpTiming,
    pub data: Option<&'a [u8]>,
    pub oob: &'a [u8],
}

/// A page in range, split into its block, its index in the block and its chip.
#[derive(Clone, Copy, Debug)]
struct Address {
    ppn: Ppn,
    block: BlockId,
    page: u32,
    chip: u32,
}

/// An emulated NAND device.
pub struct Device {
    storage: Box<dyn Storage>,
    geometry: Geometry,
    timelines: Timelines,
    counters: DeviceCounters,
    /// The geometry's page and block counts, for the range check of every operation.
    total_pages: u32,
    total_blocks: u32,
    erased_data: Box<[u8]>,
    /// The OOB area of the page last read: the stored bytes, then 0xFF.
    oob_register: Box<[u8]>,
}

impl Device {
    pub fn new(storage: Box<dyn Storage>) -> Self {
        let geometry = storage.geometry().clone();
        Device {
            timelines: Timelines::new(geometry.chips(), geometry.channels, geometry.latencies.host_queue_depth),
            counters: DeviceCounters::default(),
            total_pages: geometry.total_pages(),
            total_blocks: geometry.total_blocks(),
            erased_data: vec![0xFF; geometry.page_bytes as usize].into_boxed_slice(),
            oob_register: vec![0xFF; geometry.oob_bytes as usize].into_boxed_slice(),
            storage,
            geometry,
        }
    }

    pub fn geometry(&self) -> &Geometry {
        &self.geometry
    }

    pub fn storage(&self) -> &dyn Storage {
        self.storage.as_ref()
    }

    pub fn storage_mut(&mut self) -> &mut dyn Storage {
        self.storage.as_mut()
    }

    pub fn counters(&self) -> DeviceCounters {
        self.counters
    }

    pub fn timelines(&self) -> &Timelines {
        &self.timelines
    }

    /// Restores power after a cut (volatile state — timelines, counters — survives in
    /// the emulator; a flash manager must rebuild its own state by scanning).
    pub fn power_on(&mut self) {
        self.storage.power_on();
    }

    /// Whether a power cut could have interrupted the last program of `ppn` (it lies
    /// after the last durable point, see [`Storage::may_be_torn`]). A rebuild treats a
    /// page that fails its check as torn only when this holds; otherwise the page
    /// completed and was damaged later: corruption. Out of range: false.
    pub fn may_be_torn(&self, ppn: Ppn) -> bool {
        ppn.0 < self.total_pages && self.storage.may_be_torn(ppn)
    }

    /// Page bytes (data, whole OOB area) without timing or counting, for inspection,
    /// GC bookkeeping and tests. Takes `&mut self` because the OOB area is assembled
    /// in the device's register from the bytes the storage keeps.
    pub fn peek(&mut self, ppn: Ppn) -> (&[u8], &[u8]) {
        let stored = self.storage.oob(ppn).unwrap_or(&[]);
        let n = stored.len().min(self.oob_register.len());
        self.oob_register[..n].copy_from_slice(&stored[..n]);
        self.oob_register[n..].fill(0xFF);
        (self.storage.data(ppn).unwrap_or(&self.erased_data), &self.oob_register)
    }

    fn check_ppn(&self, ppn: Ppn) -> Result<(), Error> {
        let limit = self.total_pages;
        if ppn.0 >= limit {
            return Err(Error::OutOfRange { what: "page", value: ppn.0 as u64, limit: limit as u64 });
        }
        Ok(())
    }

    /// Where a page in range is: split once per operation, used by every check after.
    fn address(&self, ppn: Ppn) -> Result<Address, Error> {
        self.check_ppn(ppn)?;
        let block = self.geometry.block_of(ppn);
        Ok(Address { ppn, block, page: self.geometry.page_in_block(ppn), chip: self.geometry.chip_of_block(block) })
    }

    fn check_block(&self, block: BlockId) -> Result<(), Error> {
        let limit = self.total_blocks;
        if block.0 >= limit {
            return Err(Error::OutOfRange { what: "block", value: block.0 as u64, limit: limit as u64 });
        }
        Ok(())
    }

    fn check_powered(&self) -> Result<(), Error> {
        if self.storage.powered() {
            Ok(())
        } else {
            Err(Error::PowerLost)
        }
    }

    fn check_spans(&self, spans: &[Span]) -> Result<usize, Error> {
        let raw = self.geometry.raw_page_bytes();
        let mut bytes = 0;
        for s in spans {
            if s.offset.checked_add(s.bytes.len()).is_none_or(|end| end > raw) {
                return Err(Error::SpanOutOfPage { offset: s.offset, len: s.bytes.len(), raw_page_bytes: raw });
            }
            bytes += s.bytes.len();
        }
        Ok(bytes)
    }

    /// Checks that a page may take its first program now, given its block's write pointer.
    fn check_first_program(&self, at: Address, write_pointer: u32) -> Result<(), Error> {
        if at.page < write_pointer {
            let (chip, block, page) = self.geometry.locate(at.ppn);
            return Err(Error::OutOfOrder { chip, block, page, write_pointer });
        }
        Ok(())
    }

    /// Checks NOP and the bit rule for a program of an already-programmed page.
    fn check_reprogram(&self, ppn: Ppn, page_type: PageType, count: u8, spans: &[Span]) -> Result<(), Error> {
        let limit = self.geometry.nop_of(page_type);
        if count >= limit {
            let (chip, block, page) = self.geometry.locate(ppn);
            return Err(Error::NopExceeded { chip, block, page, page_type, limit });
        }
        let data = self.storage.data(ppn).unwrap_or(&self.erased_data);
        let oob = self.storage.oob(ppn).unwrap_or(&[]);
        let page_bytes = data.len();
        for s in spans {
            for (i, &new) in s.bytes.iter().enumerate() {
                let at = s.offset + i;
                // Past the stored OOB bytes the area is erased (0xFF).
                let old = if at < page_bytes { data[at] } else { oob.get(at - page_bytes).copied().unwrap_or(0xFF) };
                if new & !old != 0 {
                    let (chip, block, page) = self.geometry.locate(ppn);
                    return Err(Error::BitRaise { chip, block, page, offset: at });
                }
            }
        }
        Ok(())
    }

    /// Tells the emulator that `ppn` is garbage for good: the flash manager will neither
    /// read nor append to it before its block is erased, so its data bytes need not be
    /// kept (memory in proportion to live data). The page keeps its OOB, program count
    /// and state: it still takes an erase before reuse, and OOB reads (rebuild scans)
    /// see it as before. A later read, append or copyback of it is
    /// [`Error::PayloadDiscarded`]. Not a NAND command: untimed and uncounted; an
    /// erased page is left alone.
    pub fn discard_payload(&mut self, ppn: Ppn) -> Result<(), Error> {
        self.check_ppn(ppn)?;
        self.storage.discard_payload(ppn);
        Ok(())
    }

    /// Warms the emulator's memory of a block's pages (buffer reference counts, OOB
    /// bytes) before a GC copies them: each copyback touches them at random places,
    /// and fetched together up front their cache misses overlap instead of stalling
    /// every copy in turn. Not a NAND command: untimed, uncounted, changes nothing.
    pub fn prefetch_block(&self, block: BlockId) {
        if block.0 < self.total_blocks {
            self.storage.prefetch_block(block);
        }
    }

    /// Starts loading the emulator's memory of one page (its cell, its program count)
    /// into the cache, for a caller that knows it will soon overwrite or discard it.
    /// Not a NAND command: untimed, uncounted, changes nothing.
    pub fn prefetch_page(&self, ppn: Ppn) {
        if ppn.0 < self.total_pages {
            self.storage.prefetch_page(ppn);
        }
    }

    /// Refuses `operation` on a page whose payload was discarded.
    fn check_not_discarded(&self, ppn: Ppn, operation: &'static str) -> Result<(), Error> {
        if self.storage.payload_discarded(ppn) {
            let (chip, block, page) = self.geometry.locate(ppn);
            return Err(Error::PayloadDiscarded { chip, block, page, operation });
        }
        Ok(())
    }

    /// Reads a whole page (data and OOB cross the channel).
    pub fn read(&mut self, ppn: Ppn, now: SimTime) -> Result<PageRead<'_>, Error> {
        let timing = self.timed_page_read(ppn, now)?;
        let (data, oob) = self.peek(ppn);
        Ok(PageRead { timing, data, oob })
    }

    /// [`Device::read`] for a caller that looks only at the data bytes: timed and
    /// counted the same (data and OOB cross the channel), but the OOB area is not
    /// assembled, which spares a cache miss on the emulator's OOB bytes per read.
    pub fn read_data(&mut self, ppn: Ppn, now: SimTime) -> Result<(OpTiming, &[u8]), Error> {
        let timing = self.timed_page_read(ppn, now)?;
        Ok((timing, self.storage.data(ppn).unwrap_or(&self.erased_data)))
    }

    /// The checks, timing and count of a whole-page read.
    fn timed_page_read(&mut self, ppn: Ppn, now: SimTime) -> Result<OpTiming, Error> {
        self.check_ppn(ppn)?;
        self.check_not_discarded(ppn, "read")?;
        self.timed_whole_read(ppn, now)
    }

    /// Times and counts a whole-page read of a page in range.
    fn timed_whole_read(&mut self, ppn: Ppn, now: SimTime) -> Result<OpTiming, Error> {
        let timing = self.timed_read(ppn, now, self.geometry.raw_page_bytes())?;
        self.counters.page_reads += 1;
        Ok(timing)
    }

    /// A whole-page read for a rebuild scan that reads every programmed page, stale ones
    /// included: timed and counted exactly as [`Device::read`] (on a chip the stale bytes
    /// would cross the channel), but a page whose payload was discarded comes back with
    /// `data: None` instead of an error, so the scan can still decide from its OOB that
    /// the page is older than what it keeps.
    pub fn scan_read(&mut self, ppn: Ppn, now: SimTime) -> Result<ScanRead<'_>, Error> {
        self.check_ppn(ppn)?;
        let discarded = self.storage.payload_discarded(ppn);
        let timing = self.timed_whole_read(ppn, now)?;
        let (data, oob) = self.peek(ppn);
        Ok(ScanRead { timing, data: (!discarded).then_some(data), oob })
    }

    /// Reads only a page's OOB bytes (array read, short transfer).
    pub fn read_oob(&mut self, ppn: Ppn, now: SimTime) -> Result<(OpTiming, &[u8]), Error> {
        let timing = self.timed_read(ppn, now, self.geometry.oob_bytes as usize)?;
        self.counters.oob_reads += 1;
        Ok((timing, self.peek(ppn).1))
    }

    /// Checks and times an array read of `ppn` followed by a transfer of `bytes`.
    fn timed_read(&mut self, ppn: Ppn, now: SimTime, bytes: usize) -> Result<OpTiming, Error> {
        self.check_powered()?;
        let at = self.address(ppn)?;
        let page_type = self.geometry.page_type(at.page);
        let chip = at.chip;
        self.counters.bytes_from_device += bytes as u64;
        Ok(self.timelines.read(
            chip,
            self.geometry.channel_of_chip(chip),
            now,
            self.geometry.latencies.read_array_ns(page_type),
            self.geometry.latencies.transfer_ns(bytes),
        ))
    }

    /// Programs `spans` of a page: a first program if the page is erased, otherwise a
    /// re-program (append) subject to NOP and the bit rule. Only the span bytes cross
    /// the channel.
    pub fn program(&mut self, ppn: Ppn, now: SimTime, spans: &[Span]) -> Result<OpTiming, Error> {
        self.storage.mutable("program")?;
        let at = self.address(ppn)?;
        let bytes = self.check_spans(spans)?;
        let page_type = self.geometry.page_type(at.page);
        let (count, write_pointer) = self.storage.program_state(ppn, at.block);
        if count == 0 {
            self.check_first_program(at, write_pointer)?;
        } else {
            self.check_not_discarded(ppn, "append")?;
            self.check_reprogram(ppn, page_type, count, spans)?;
        }
        self.storage.check_room(ppn, spans, None)?;
        let chip = at.chip;
        let timing = self.timelines.program(
            chip,
            self.geometry.channel_of_chip(chip),
            now,
            self.geometry.latencies.program_array_ns(page_type),
            self.geometry.latencies.transfer_ns(bytes),
        );
        if count == 0 {
            self.counters.page_programs += 1;
        } else {
            self.counters.reprograms += 1;
        }
        self.counters.bytes_to_device += bytes as u64;
        self.storage.program(ppn, spans)?;
        Ok(timing)
    }

    /// Copies page `src` to erased page `dst` on the same chip without moving the data
    /// over the channel; `spans` replace bytes in the page register on the way (e.g. a
    /// new OOB header). Only the source OOB (read out so the controller can update it)
    /// and the span bytes cross the channel.
    pub fn copyback(&mut self, src: Ppn, dst: Ppn, now: SimTime, spans: &[Span]) -> Result<OpTiming, Error> {
        self.storage.mutable("copyback")?;
        let (from, to) = (self.address(src)?, self.address(dst)?);
        self.check_not_discarded(src, "copyback")?;
        let bytes = self.check_spans(spans)?;
        let (src_chip, dst_chip) = (from.chip, to.chip);
        if src_chip != dst_chip {
            return Err(Error::CopybackAcrossChips { src_chip, dst_chip });
        }
        let (count, write_pointer) = self.storage.program_state(dst, to.block);
        if count != 0 {
            let (chip, block, page) = self.geometry.locate(dst);
            let page_type = self.geometry.page_type(page);
            return Err(Error::NopExceeded { chip, block, page, page_type, limit: 1 });
        }
        self.check_first_program(to, write_pointer)?;
        self.storage.check_room(dst, spans, Some(src))?;
        let src_type = self.geometry.page_type(from.page);
        let dst_type = self.geometry.page_type(to.page);
        let lat = &self.geometry.latencies;
        let timing = self.timelines.copyback(
            src_chip,
            self.geometry.channel_of_chip(src_chip),
            now,
            lat.read_array_ns(src_type),
            lat.program_array_ns(dst_type),
            lat.transfer_ns(bytes + self.geometry.oob_bytes as usize),
        );
        self.counters.copybacks += 1;
        self.counters.bytes_to_device += bytes as u64;
        self.counters.bytes_from_device += self.geometry.oob_bytes as u64;
        self.storage.copy_program(src, dst, spans)?;
        Ok(timing)
    }

    /// Erases a block.
    pub fn erase(&mut self, block: BlockId, now: SimTime) -> Result<OpTiming, Error> {
        self.storage.mutable("erase")?;
        self.check_block(block)?;
        let erases = self.storage.erase_count(block);
        if erases >= self.geometry.endurance {
            let chip = self.geometry.chip_of_block(block);
            return Err(Error::WornOut {
                chip,
                block: block.0 % self.geometry.blocks_per_chip,
                erases,
                endurance: self.geometry.endurance,
            });
        }
        let chip = self.geometry.chip_of_block(block);
        let timing = self.timelines.chip_only(chip, now, self.geometry.latencies.erase_ns);
        self.counters.erases += 1;
        self.storage.erase(block)?;
        Ok(timing)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geometry::CellType;
    use crate::geometry::Latencies;
    use crate::storage::MemoryStorage;

    fn geometry(cell: CellType) -> Geometry {
        Geometry {
            channels: 1,
            chips_per_channel: 2,
            blocks_per_chip: 4,
            pages_per_block: 6,
            page_bytes: 512,
            oob_bytes: 64,
            cell,
            nop: 3,
            endurance: 2,
            latencies: Latencies::mlc_typical(),
        }
    }

    fn device(cell: CellType) -> Device {
        Device::new(Box::new(MemoryStorage::new(geometry(cell), true)))
    }

    #[test]
    fn bit_raise_is_refused_with_location() {
        let mut d = device(CellType::Slc);
        let g = d.geometry().clone();
        let ppn = g.ppn(g.block_id(1, 2), 0);
        d.program(ppn, 0, &[Span::new(100, &[0x0F])]).unwrap();
        let err = d.program(ppn, 0, &[Span::new(100, &[0x1F])]).unwrap_err();
        assert_eq!(err, Error::BitRaise { chip: 1, block: 2, page: 0, offset: 100 });
        assert!(err.to_string().contains("offset 100"), "{err}");
        d.program(ppn, 0, &[Span::new(100, &[0x03]), Span::new(560, &[0])]).unwrap();
        assert_eq!(d.peek(ppn).0[100], 0x03);
        assert_eq!(d.peek(ppn).1[560 - 512], 0);
    }

    /// A device whose page images may take `images` buffers of 512 bytes.
    fn budgeted(images: u64) -> Device {
        let budget = images * crate::pool::PagePool::buffer_bytes(512);
        Device::new(Box::new(MemoryStorage::with_page_budget(geometry(CellType::Slc), true, Some(budget))))
    }

    /// A page of data that is not one repeated byte (those share one image).
    fn page_of(seed: u8) -> Vec<u8> {
        (0..512).map(|i| seed ^ (i as u8)).collect()
    }

    #[test]
    fn a_program_past_the_page_budget_is_refused_and_changes_nothing() {
        let mut d = budgeted(3);
        for p in 0..3 {
            d.program(Ppn(p), 0, &[Span::new(0, &page_of(p as u8))]).unwrap();
        }
        let (before, now) = (d.counters(), d.timelines().chip_busy_ns(0));
        let err = d.program(Ppn(3), 0, &[Span::new(0, &page_of(3))]).unwrap_err();
        let Error::PageBudget { operation, chip, block, page, budget_bytes, resident_bytes, .. } = err.clone() else {
            panic!("{err}")
        };
        assert_eq!((operation, chip, block, page), ("program", 0, 0, 3));
        assert_eq!((budget_bytes, resident_bytes), (3 * 520, 3 * 520));
        let text = err.to_string();
        assert!(text.contains("(device: 2 chips × 4 blocks × 6 pages of 512 bytes)"), "{text}");
        assert!(text.contains("--max-memory, device.max_memory_bytes") && text.contains("--no-data"), "{text}");
        assert_eq!((d.counters(), d.timelines().chip_busy_ns(0)), (before, now), "counted and timed nothing");
        assert_eq!((d.storage().program_count(Ppn(3)), d.storage().write_pointer(BlockId(0))), (0, 3));
        // An append onto a page's own image and an OOB-only program take no new image;
        // a copyback takes one only when it changes data bytes.
        d.program(Ppn(0), 0, &[Span::new(7, &[0])]).unwrap();
        d.program(Ppn(3), 0, &[Span::new(512, &[0])]).unwrap();
        assert!(matches!(d.copyback(Ppn(0), Ppn(6), 0, &[Span::new(0, &[0])]), Err(Error::PageBudget { .. })));
        assert_eq!(d.storage().program_count(Ppn(6)), 0);
        d.copyback(Ppn(0), Ppn(6), 0, &[Span::new(512, &[0])]).unwrap();
        // An erase gives back the images no other page shares (pages 1 and 2), for reuse.
        d.erase(BlockId(0), 0).unwrap();
        for p in 0..2 {
            d.program(Ppn(p), 0, &[Span::new(0, &page_of(9))]).unwrap();
        }
    }

    #[test]
    fn nop_counts_every_program() {
        let mut d = device(CellType::Slc);
        for _ in 0..3 {
            d.program(Ppn(0), 0, &[Span::new(0, &[0xFF])]).unwrap();
        }
        assert!(matches!(d.program(Ppn(0), 0, &[]), Err(Error::NopExceeded { limit: 3, .. })));
    }

    #[test]
    fn msb_pages_take_one_program() {
        let mut d = device(CellType::Mlc);
        d.program(Ppn(0), 0, &[Span::new(0, &[0xF0])]).unwrap();
        d.program(Ppn(1), 0, &[Span::new(0, &[0xF0])]).unwrap();
        d.program(Ppn(0), 0, &[Span::new(1, &[0x00])]).unwrap();
        let err = d.program(Ppn(1), 0, &[Span::new(1, &[0x00])]).unwrap_err();
        assert!(matches!(err, Error::NopExceeded { page_type: PageType::Msb, limit: 1, .. }));
    }

    #[test]
    fn first_programs_go_in_order_but_may_skip() {
        let mut d = device(CellType::Mlc);
        d.program(Ppn(2), 0, &[]).unwrap(); // skips pages 0 and 1 (as pSLC skips MSB pages)
        let err = d.program(Ppn(1), 0, &[]).unwrap_err();
        assert_eq!(err, Error::OutOfOrder { chip: 0, block: 0, page: 1, write_pointer: 3 });
        d.program(Ppn(4), 0, &[]).unwrap();
    }

    #[test]
    fn erase_resets_and_endurance_is_enforced() {
        let mut d = device(CellType::Slc);
        d.program(Ppn(0), 0, &[Span::new(0, &[0])]).unwrap();
        d.erase(BlockId(0), 0).unwrap();
        assert_eq!(d.peek(Ppn(0)).0[0], 0xFF);
        d.program(Ppn(0), 0, &[Span::new(0, &[0])]).unwrap();
        d.erase(BlockId(0), 0).unwrap();
        assert!(matches!(d.erase(BlockId(0), 0), Err(Error::WornOut { erases: 2, endurance: 2, .. })));
    }

    #[test]
    fn copyback_stays_on_chip_and_moves_few_bytes() {
        let mut d = device(CellType::Slc);
        let g = d.geometry().clone();
        let page = vec![7u8; 512];
        d.program(Ppn(0), 0, &[Span::new(0, &page)]).unwrap();
        let other_chip = g.ppn(g.block_id(1, 0), 0);
        assert!(matches!(d.copyback(Ppn(0), other_chip, 0, &[]), Err(Error::CopybackAcrossChips { .. })));
        let dst = g.ppn(g.block_id(0, 1), 0);
        let before = d.counters().bytes_to_device;
        d.copyback(Ppn(0), dst, 0, &[Span::new(512, &[1, 2])]).unwrap();
        assert_eq!(d.counters().bytes_to_device - before, 2);
        assert_eq!(d.peek(dst).0, &page[..]);
        assert!(d.copyback(Ppn(0), dst, 0, &[]).is_err(), "destination must be erased");
    }

    #[test]
    fn read_data_is_a_read_without_the_oob() {
        let (mut a, mut b) = (device(CellType::Slc), device(CellType::Slc));
        let data: Vec<u8> = (0..512).map(|i| (i * 7) as u8).collect();
        for d in [&mut a, &mut b] {
            d.program(Ppn(3), 0, &[Span::new(0, &data), Span::new(512, &[1, 2])]).unwrap();
        }
        let read = a.read(Ppn(3), 10).unwrap();
        let (timing, got) = (read.timing, read.data.to_vec());
        assert_eq!(b.read_data(Ppn(3), 10).unwrap(), (timing, &data[..]));
        assert_eq!(got, data);
        assert_eq!(a.counters(), b.counters(), "timed and counted as a whole-page read");
        assert_eq!(b.read_data(Ppn(4), 20).unwrap().1, &[0xFF; 512][..], "an erased page");
        b.discard_payload(Ppn(3)).unwrap();
        assert!(matches!(b.read_data(Ppn(3), 30), Err(Error::PayloadDiscarded { .. })));
    }

    #[test]
    fn a_discarded_page_keeps_its_oob_and_refuses_data_access() {
        let mut d = device(CellType::Slc);
        let g = d.geometry().clone();
        let ppn = g.ppn(g.block_id(0, 1), 2);
        let data: Vec<u8> = (0..512).map(|i| i as u8).collect();
        d.program(ppn, 0, &[Span::new(0, &data), Span::new(512, &[7, 8])]).unwrap();
        let held = d.storage().memory_bytes();
        d.discard_payload(ppn).unwrap();
        assert!(d.storage().memory_bytes() < held, "the page's buffer is released");
        let err = d.read(ppn, 0).err().unwrap();
        assert_eq!(err, Error::PayloadDiscarded { chip: 0, block: 1, page: 2, operation: "read" });
        assert!(err.to_string().contains("chip 0 block 1 page 2"), "{err}");
        let append = d.program(ppn, 0, &[Span::new(0, &[0])]).unwrap_err();
        assert!(matches!(append, Error::PayloadDiscarded { operation: "append", .. }), "{append}");
        let dst = g.ppn(g.block_id(0, 2), 0);
        assert!(matches!(d.copyback(ppn, dst, 0, &[]), Err(Error::PayloadDiscarded { operation: "copyback", .. })));
        // The OOB (what a rebuild scan reads) and the program count stay.
        assert_eq!(&d.read_oob(ppn, 0).unwrap().1[..2], &[7, 8]);
        // A scan read is timed and counted as a whole-page read but brings no data.
        let (reads, bytes) = (d.counters().page_reads, d.counters().bytes_from_device);
        let scan = d.scan_read(ppn, 0).unwrap();
        assert!(scan.data.is_none() && scan.oob[..2] == [7, 8]);
        assert_eq!(d.counters().page_reads, reads + 1);
        assert_eq!(d.counters().bytes_from_device - bytes, g.raw_page_bytes() as u64);
        let whole = g.ppn(g.block_id(0, 3), 0);
        d.program(whole, 0, &[Span::new(0, &data)]).unwrap();
        assert_eq!(d.scan_read(whole, 0).unwrap().data, Some(&data[..]));
        assert_eq!(d.storage().program_count(ppn), 1);
        // An erase ends the discard: the page is erased and programmable again.
        d.erase(g.block_id(0, 1), 0).unwrap();
        assert_eq!(d.read(ppn, 0).unwrap().data[0], 0xFF);
        d.program(ppn, 0, &[Span::new(0, &[0x34])]).unwrap();
        assert_eq!(d.read(ppn, 0).unwrap().data[0], 0x34);
        // Discarding an erased page changes nothing.
        d.discard_payload(Ppn(0)).unwrap();
        assert!(!d.storage().payload_discarded(Ppn(0)));
    }

    #[test]
    fn out_of_range_and_bad_spans_are_errors() {
        let mut d = device(CellType::Slc);
        assert!(matches!(d.read(Ppn(10_000), 0), Err(Error::OutOfRange { .. })));
        assert!(matches!(d.erase(BlockId(99), 0), Err(Error::OutOfRange { .. })));
        assert!(matches!(d.program(Ppn(0), 0, &[Span::new(570, &[0; 10])]), Err(Error::SpanOutOfPage { .. })));
    }

    #[test]
    fn timing_lsb_faster_than_msb_and_deltas_faster_than_pages() {
        let mut d = device(CellType::Mlc);
        let lsb = d.program(Ppn(0), 0, &[Span::new(0, &[0; 512])]).unwrap();
        let g = d.geometry().clone();
        let msb_ppn = g.ppn(g.block_id(1, 0), 1);
        let msb = d.program(msb_ppn, 0, &[Span::new(0, &[0; 512])]).unwrap();
        assert!(lsb.end_ns - lsb.start_ns < msb.end_ns - msb.start_ns);
        let t0 = d.timelines().chip_free_at(0);
        let delta = d.program(Ppn(0), t0, &[Span::new(0, &[0; 8])]).unwrap();
        assert!(delta.end_ns - delta.start_ns < lsb.end_ns - lsb.start_ns);
    }
}
