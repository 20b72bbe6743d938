//! Page allocation: host pages round-robin over the region's chips, GC destination
//! pages on the victim's chip, erased blocks into each chip's free pool.
//!
//! Invariants: each chip has at most one open host block and one open GC block, filled
//! in page order (so the last programmed page of a block is the newest program in it,
//! which the rebuild relies on); the host never takes a chip's last free block, which
//! GC needs to move pages.

use super::*;

impl Region {
    /// Takes the next host page, round-robin over chips, skipping chips that cannot
    /// free space. Returns the chip slot, the page, and when it can be programmed (after
    /// any foreground GC the allocation ran: the host write waits for it).
    pub(super) fn allocate_host(&mut self, dev: &mut Device, now: SimTime) -> Result<(usize, Ppn, SimTime), Error> {
        for _ in 0..self.chips.len() {
            let slot = self.round_robin;
            self.round_robin = (self.round_robin + 1) % self.chips.len();
            let mut ready = now;
            if self.chip_state[slot].host.is_none() {
                while self.chip_state[slot].free.len() <= self.spec.gc.foreground_free_blocks as usize {
                    match self.collect(dev, slot, Collect::Foreground, ready)? {
                        Some(end) => ready = end,
                        None => break,
                    }
                }
            }
            if let Some(ppn) = self.page_on(slot, Stream::Host) {
                return Ok((slot, ppn, ready));
            }
        }
        Err(Error::RegionFull { region: self.name.clone() })
    }

    /// The next page of the chip's host or GC block, opening a new block if needed.
    pub(super) fn page_on(&mut self, slot: usize, stream: Stream) -> Option<Ppn> {
        let has_room = match stream {
            Stream::Host => self.chip_state[slot].host.is_some(),
            Stream::Gc => self.chip_state[slot].gc.is_some(),
        };
        if !has_room {
            // The host never takes a chip's last free block: GC needs it to move pages.
            let reserve = if stream == Stream::Host { 1 } else { 0 };
            if self.chip_state[slot].free.len() <= reserve {
                return None;
            }
            let Reverse((_, block)) = self.chip_state[slot].free.pop()?;
            let local = self.local_block(slot, block);
            self.blocks.set_state(local, BlockState::Active);
            let cursor = Some(Cursor { block, next: 0 });
            match stream {
                Stream::Host => self.chip_state[slot].host = cursor,
                Stream::Gc => self.chip_state[slot].gc = cursor,
            }
        }
        let usable = self.usable_per_block;
        let cursor_slot = match stream {
            Stream::Host => &mut self.chip_state[slot].host,
            Stream::Gc => &mut self.chip_state[slot].gc,
        };
        let cursor = cursor_slot.as_mut().expect("opened above");
        let (block, index) = (cursor.block, cursor.next);
        cursor.next += 1;
        if cursor.next == usable {
            *cursor_slot = None;
            let local = self.local_block(slot, block);
            self.blocks.set_state(local, BlockState::Full);
        }
        Some(self.geometry.ppn(self.block_id(slot, block), index * self.stride))
    }

    /// Puts an erased block into the chip's free pool.
    pub(super) fn release_block(&mut self, dev: &Device, slot: usize, b: u32) {
        let erase_count = dev.storage().erase_count(self.block_id(slot, b));
        let local = self.local_block(slot, b);
        self.blocks.set(local, BlockSnapshot { state: BlockState::Free, valid: 0, erase_count, last_write_seq: 0 });
        self.chip_state[slot].free.push(Reverse((erase_count, b)));
    }
}
