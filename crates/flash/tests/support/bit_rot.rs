//! Test-only storage whose pages rot: bits flip in completed pages while the device is
//! off, as they do on a real chip.

use nand::{BlockId, Geometry, MemoryStorage, Ppn, Span, Storage, SyncPoint};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// A flipped bit: raw page offset (data, then OOB) and the bit.
pub type Flip = (Ppn, usize, u8);

/// Test-only storage: `MemoryStorage` whose pages can rot. Flips armed in the shared
/// list land at the next power-on (bits that flipped while the device was off); a
/// rotten page reads with its flips until it is programmed again or erased, and a
/// copyback copies the rotten bytes, as a real on-chip copy would.
pub struct BitRot {
    inner: MemoryStorage,
    armed: Arc<Mutex<Vec<Flip>>>,
    rotten: HashMap<Ppn, (Vec<u8>, Vec<u8>)>,
}

impl BitRot {
    /// `inner` with no rotten page; flips pushed to `armed` land at the next power-on.
    pub fn new(inner: MemoryStorage, armed: Arc<Mutex<Vec<Flip>>>) -> Self {
        BitRot { inner, armed, rotten: HashMap::new() }
    }

    fn raw(&self, ppn: Ppn) -> Vec<u8> {
        let g = self.inner.geometry();
        let mut raw = vec![0xFF; g.raw_page_bytes()];
        if let Some(d) = self.data(ppn) {
            raw[..d.len()].copy_from_slice(d);
        }
        if let Some(o) = self.oob(ppn) {
            // The store keeps the OOB's leading bytes; the rest reads 0xFF.
            raw[g.page_bytes as usize..][..o.len()].copy_from_slice(o);
        }
        raw
    }

    fn forget_block(&mut self, block: BlockId) {
        let g = self.inner.geometry().clone();
        self.rotten.retain(|&ppn, _| g.block_of(ppn) != block);
    }
}

impl Storage for BitRot {
    fn geometry(&self) -> &Geometry {
        self.inner.geometry()
    }
    fn keeps_data(&self) -> bool {
        true
    }
    fn data(&self, ppn: Ppn) -> Option<&[u8]> {
        self.rotten.get(&ppn).map(|(d, _)| &d[..]).or_else(|| self.inner.data(ppn))
    }
    fn oob(&self, ppn: Ppn) -> Option<&[u8]> {
        self.rotten.get(&ppn).map(|(_, o)| &o[..]).or_else(|| self.inner.oob(ppn))
    }
    fn memory_bytes(&self) -> u64 {
        self.inner.memory_bytes()
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
    fn program(&mut self, ppn: Ppn, spans: &[Span]) -> Result<(), nand::Error> {
        self.rotten.remove(&ppn);
        self.inner.program(ppn, spans)
    }
    fn copy_program(&mut self, src: Ppn, dst: Ppn, spans: &[Span]) -> Result<(), nand::Error> {
        if !self.rotten.contains_key(&src) {
            return self.inner.copy_program(src, dst, spans);
        }
        let mut raw = self.raw(src);
        for s in spans {
            raw[s.offset..s.offset + s.bytes.len()].copy_from_slice(s.bytes);
        }
        self.inner.program(dst, &[Span::new(0, &raw)])
    }
    fn erase(&mut self, block: BlockId) -> Result<(), nand::Error> {
        self.forget_block(block);
        self.inner.erase(block)
    }
    fn tear_erase(&mut self, block: BlockId, erased_pages: u32) -> Result<(), nand::Error> {
        self.forget_block(block);
        self.inner.tear_erase(block, erased_pages)
    }
    fn config_area(&self) -> &[u8] {
        self.inner.config_area()
    }
    fn set_config_area(&mut self, bytes: Vec<u8>) -> Result<(), nand::Error> {
        self.inner.set_config_area(bytes)
    }
    fn sync(&mut self, point: SyncPoint) -> Result<(), nand::ImageError> {
        self.inner.sync(point)
    }
    fn may_be_torn(&self, ppn: Ppn) -> bool {
        self.inner.may_be_torn(ppn)
    }
    fn power_on(&mut self) {
        self.inner.power_on();
        let flips = std::mem::take(&mut *self.armed.lock().unwrap());
        let page_bytes = self.inner.geometry().page_bytes as usize;
        for (ppn, offset, bit) in flips {
            let mut raw = self.raw(ppn);
            raw[offset] ^= 1 << bit;
            self.rotten.insert(ppn, (raw[..page_bytes].to_vec(), raw[page_bytes..].to_vec()));
        }
    }
}

/// Runs `case(seed, power_loss)` for every seed below `cases`, after a clean close and
/// after a power loss; a case returns whether a read reported the flip as corruption
/// (`None`: no page to flip). With at least `enough` seeds some flip must have reached
/// a newest copy and been reported (flips land in stale pages too).
#[allow(dead_code)] // corruption.rs compiles this module without the integrity runs
pub fn run_flip_cases(label: &str, cases: u64, enough: u64, mut case: impl FnMut(u64, bool) -> Option<bool>) {
    let mut reported = 0;
    for seed in 0..cases {
        for power_loss in [false, true] {
            reported += u32::from(case(seed, power_loss) == Some(true));
        }
    }
    if cases >= enough {
        assert!(reported > 0, "{label}: no flip was ever reported");
    }
}

/// Arms one flipped bit in a random page of `device` that the durable point proves
/// complete (programmed, and `!may_be_torn`); it lands at the next power-on. `None`
/// when no page is complete.
#[allow(dead_code)] // corruption.rs compiles this module without the integrity runs
pub fn flip_a_completed_page(device: &nand::Device, armed: &Mutex<Vec<Flip>>, rng: &mut impl rand::Rng) -> Option<Ppn> {
    let g = device.geometry();
    let complete: Vec<Ppn> = (0..g.total_pages())
        .map(Ppn)
        .filter(|&p| device.storage().program_count(p) > 0 && !device.may_be_torn(p))
        .collect();
    if complete.is_empty() {
        return None;
    }
    let ppn = complete[rng.gen_range(0..complete.len())];
    armed.lock().unwrap().push((ppn, rng.gen_range(0..g.raw_page_bytes()), rng.gen_range(0..8)));
    Some(ppn)
}
