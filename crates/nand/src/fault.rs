//! Power-cut injection as a storage wrapper.
//!
//! Fault model: power fails at the k-th mutating operation (program, copyback, erase;
//! counted from 1). That operation is torn and everything
//! after it fails until [`Storage::power_on`]:
//! - a torn program or copyback lands a random subset of the bits it meant to clear
//!   (each with one probability drawn per cut), and still counts as a program — the
//!   cells took charge;
//! - a torn erase erases a random prefix of the block's pages, counts the P/E cycle,
//!   and leaves the block needing another erase.
//!
//! Everything that completed before the cut is durable (there is no volatile write
//! cache). All randomness comes from the seed, so a cut replays exactly.

use crate::error::Error;
use crate::geometry::{BlockId, Geometry, Ppn};
use crate::image_format::ImageError;
use crate::storage::{Span, Storage, SyncPoint};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// What kind of operation a power cut tore.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TornOp {
    Program { ppn: Ppn },
    CopyProgram { src: Ppn, dst: Ppn },
    Erase { block: BlockId, erased_pages: u32 },
}

/// A storage that loses power at a chosen operation.
pub struct FaultyStorage<S: Storage> {
    inner: S,
    cut_at: Option<u64>,
    ops: u64,
    powered: bool,
    rng: ChaCha8Rng,
    torn: Option<TornOp>,
}

impl<S: Storage> FaultyStorage<S> {
    /// Wraps `inner`; power fails at mutating operation number `cut_at` (1-based), or
    /// never with `None`.
    pub fn new(inner: S, cut_at: Option<u64>, seed: u64) -> Self {
        FaultyStorage { inner, cut_at, ops: 0, powered: true, rng: ChaCha8Rng::seed_from_u64(seed), torn: None }
    }

    /// Counts an operation; true when power fails at this one.
    fn cuts_now(&mut self) -> Result<bool, Error> {
        if !self.powered {
            return Err(Error::PowerLost);
        }
        self.ops += 1;
        Ok(self.cut_at == Some(self.ops))
    }

    /// `intended` with only a random subset of its 1→0 transitions (relative to `old`).
    fn tear_bytes(&mut self, old: &[u8], intended: &[u8]) -> Vec<u8> {
        let land_probability: f64 = self.rng.gen();
        old.iter()
            .zip(intended)
            .map(|(&o, &n)| {
                let to_clear = o & !n;
                let mut landed = 0u8;
                for bit in 0..8 {
                    if to_clear & (1 << bit) != 0 && self.rng.gen_bool(land_probability) {
                        landed |= 1 << bit;
                    }
                }
                o & !landed
            })
            .collect()
    }

    fn raw_page(&self, ppn: Ppn) -> Vec<u8> {
        let g = self.inner.geometry();
        let mut raw = vec![0xFF; g.raw_page_bytes()];
        if let Some(d) = self.inner.data(ppn) {
            raw[..d.len()].copy_from_slice(d);
        }
        if let Some(o) = self.inner.oob(ppn) {
            let at = g.page_bytes as usize;
            raw[at..at + o.len()].copy_from_slice(o);
        }
        raw
    }
}

impl<S: Storage> Storage for FaultyStorage<S> {
    fn geometry(&self) -> &Geometry {
        self.inner.geometry()
    }
    fn keeps_data(&self) -> bool {
        self.inner.keeps_data()
    }
    fn data(&self, ppn: Ppn) -> Option<&[u8]> {
        self.inner.data(ppn)
    }
    fn oob(&self, ppn: Ppn) -> Option<&[u8]> {
        self.inner.oob(ppn)
    }
    fn memory_bytes(&self) -> u64 {
        self.inner.memory_bytes()
    }
    // Emulator memory only: not a mutating operation, so never cut.
    fn discard_payload(&mut self, ppn: Ppn) {
        self.inner.discard_payload(ppn)
    }
    fn payload_discarded(&self, ppn: Ppn) -> bool {
        self.inner.payload_discarded(ppn)
    }
    fn prefetch_block(&self, block: BlockId) {
        self.inner.prefetch_block(block)
    }
    fn prefetch_page(&self, ppn: Ppn) {
        self.inner.prefetch_page(ppn)
    }
    fn program_count(&self, ppn: Ppn) -> u8 {
        self.inner.program_count(ppn)
    }
    fn erase_count(&self, block: BlockId) -> u32 {
        self.inner.erase_count(block)
    }
    fn write_pointer(&self, block: BlockId) -> u32 {
        self.inner.write_pointer(block)
    }

    fn check_room(&self, ppn: Ppn, spans: &[Span], copy_from: Option<Ppn>) -> Result<(), Error> {
        self.inner.check_room(ppn, spans, copy_from)
    }
    fn program(&mut self, ppn: Ppn, spans: &[Span]) -> Result<(), Error> {
        if !self.cuts_now()? {
            return self.inner.program(ppn, spans);
        }
        let old = self.raw_page(ppn);
        let torn: Vec<(usize, Vec<u8>)> = spans
            .iter()
            .map(|s| {
                let range = s.offset..s.offset + s.bytes.len();
                (s.offset, self.tear_bytes(&old[range], s.bytes))
            })
            .collect();
        let torn_spans: Vec<Span> = torn.iter().map(|(o, b)| Span::new(*o, b)).collect();
        self.inner.program(ppn, &torn_spans)?;
        self.powered = false;
        self.torn = Some(TornOp::Program { ppn });
        Err(Error::PowerLost)
    }

    fn copy_program(&mut self, src: Ppn, dst: Ppn, spans: &[Span]) -> Result<(), Error> {
        if !self.cuts_now()? {
            return self.inner.copy_program(src, dst, spans);
        }
        let mut register = self.raw_page(src);
        for s in spans {
            register[s.offset..s.offset + s.bytes.len()].copy_from_slice(s.bytes);
        }
        let erased = vec![0xFF; register.len()];
        let torn = self.tear_bytes(&erased, &register);
        self.inner.program(dst, &[Span::new(0, &torn)])?;
        self.powered = false;
        self.torn = Some(TornOp::CopyProgram { src, dst });
        Err(Error::PowerLost)
    }

    fn erase(&mut self, block: BlockId) -> Result<(), Error> {
        if !self.cuts_now()? {
            return self.inner.erase(block);
        }
        let erased_pages = self.rng.gen_range(0..=self.inner.geometry().pages_per_block);
        self.inner.tear_erase(block, erased_pages)?;
        self.powered = false;
        self.torn = Some(TornOp::Erase { block, erased_pages });
        Err(Error::PowerLost)
    }

    fn tear_erase(&mut self, block: BlockId, erased_pages: u32) -> Result<(), Error> {
        self.inner.tear_erase(block, erased_pages)
    }
    fn config_area(&self) -> &[u8] {
        self.inner.config_area()
    }
    fn set_config_area(&mut self, bytes: Vec<u8>) -> Result<(), Error> {
        self.inner.set_config_area(bytes)
    }
    /// Without power nothing is synced (and no durable point recorded: the torn
    /// operation must stay "may be torn").
    fn sync(&mut self, point: SyncPoint) -> Result<(), ImageError> {
        if !self.powered {
            return Ok(());
        }
        self.inner.sync(point)
    }
    fn writable(&self, operation: &'static str) -> Result<(), Error> {
        self.inner.writable(operation)
    }
    fn powered(&self) -> bool {
        self.powered
    }
    fn power_on(&mut self) {
        self.powered = true;
        self.cut_at = None;
        self.inner.power_on();
    }
    fn may_be_torn(&self, ppn: Ppn) -> bool {
        self.inner.may_be_torn(ppn)
    }
    fn last_torn(&self) -> Option<TornOp> {
        self.torn
    }
    fn arm_power_cut(&mut self, after_ops: u64) {
        self.cut_at = Some(self.ops + after_ops.max(1));
    }
}
