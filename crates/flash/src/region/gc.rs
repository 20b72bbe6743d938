//! GC.

use super::*;

impl Region {
    // ---- garbage collection ----------------------------------------------------------

    /// After a host write: one background collection if the chip runs low, and one
    /// static wear-levelling move if the chip erased since the last check.
    pub(super) fn background_gc(&mut self, dev: &mut Device, slot: usize, now: SimTime) -> Result<(), Error> {
        if self.chip_state[slot].free.len() < self.spec.gc.background_free_blocks as usize {
            self.collect(dev, slot, Collect::Background, now)?;
        }
        if let Some(threshold) = self.spec.wear.static_threshold {
            if std::mem::take(&mut self.chip_state[slot].erased_since_wear_check)
                && self.chip_state[slot].free.len() > self.spec.gc.foreground_free_blocks as usize
            {
                if let Some(victim) = policy::choose_wear_victim(&self.blocks[self.chip_range(slot)], threshold) {
                    self.collect_block(dev, slot, victim as u32, Collect::WearLevel, now)?;
                }
            }
        }
        Ok(())
    }

    /// Collects one victim on the chip; false if no block has anything to reclaim.
    pub(super) fn collect(&mut self, dev: &mut Device, slot: usize, why: Collect, now: SimTime) -> Result<bool, Error> {
        let victim = policy::choose_victim(
            &self.blocks[self.chip_range(slot)],
            self.usable_per_block,
            self.spec.gc.policy,
            self.next_seq,
        );
        match victim {
            Some(v) => {
                self.collect_block(dev, slot, v as u32, why, now)?;
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// Moves a block's live pages to the chip's GC block, then erases it.
    pub(super) fn collect_block(
        &mut self,
        dev: &mut Device,
        slot: usize,
        b: u32,
        why: Collect,
        now: SimTime,
    ) -> Result<(), Error> {
        let block = self.block_id(slot, b);
        self.check_victim_mappings(block);
        for i in 0..self.usable_per_block {
            let src = self.geometry.ppn(block, i * self.stride);
            if self.is_live(src) {
                let Some(dst) = self.page_on(dev, slot, Stream::Gc, now)? else {
                    return Err(Error::RegionFull { region: self.name.clone() });
                };
                self.migrate(dev, src, dst, now)?;
                self.counters.gc_page_migrations += 1;
                if why == Collect::WearLevel {
                    self.counters.wl_page_migrations += 1;
                }
            }
        }
        match why {
            Collect::Foreground => self.counters.foreground_gc_collections += 1,
            Collect::Background => self.counters.background_gc_collections += 1,
            Collect::WearLevel => {}
        }
        self.erase_victim(dev, slot, b, now)
    }

    /// Asserts that every live data page of a victim is its lpn's mapping. Besides
    /// checking the invariant, the independent loads overlap their cache misses, so the
    /// mapping updates during migration find the entries in cache.
    pub(super) fn check_victim_mappings(&self, block: BlockId) {
        for i in 0..self.usable_per_block {
            let src = self.geometry.ppn(block, i * self.stride);
            let owner = self.pages[self.local_page(src)].owner;
            if self.is_live(src) && owner & TOMBSTONE_BIT == 0 {
                assert_eq!(self.lpns[owner as usize].ppn, src.0, "live page {src:?} is not the mapping of lpn {owner}");
            }
        }
    }

    /// Copies a live page to `dst` (same chip) and moves the mapping.
    pub(super) fn migrate(&mut self, dev: &mut Device, src: Ppn, dst: Ppn, now: SimTime) -> Result<(), Error> {
        let src_local = self.local_page(src);
        let meta = self.pages[src_local];
        let page_bytes = self.page_bytes();
        let slots_bytes = meta.slots as usize * oob::SLOT_BYTES;
        let result = if !self.keeps_data {
            dev.copyback(src, dst, now, &[Span::new(page_bytes, &self.filler[..oob::HEADER_BYTES + slots_bytes])])
        } else {
            let (data, oob_bytes) = dev.peek(src);
            let mut header = Header::decode(oob_bytes).expect("a live page has a verified header");
            header.gen += 1;
            header.slots_at_program = meta.slots;
            let torn_tail = meta.flags & TORN_TAIL != 0;
            if torn_tail {
                // Torn bytes are not covered by any slot: re-base the page on what it
                // holds now (read + program, not copyback) and keep it sealed.
                header.erased_from = oob::erased_from(data) as u32;
                header.segment_crcs = oob::segment_crcs(&data[..header.erased_from as usize]);
                header.sealed = true;
            }
            let mut new_oob = header.encode().to_vec();
            new_oob.extend_from_slice(&oob_bytes[oob::HEADER_BYTES..oob::HEADER_BYTES + slots_bytes]);
            if torn_tail {
                let data = data.to_vec();
                let read = dev.read(src, now).map(|r| r.timing);
                read.and_then(|_| dev.program(dst, now, &[Span::new(0, &data), Span::new(page_bytes, &new_oob)]))
            } else {
                dev.copyback(src, dst, now, &[Span::new(page_bytes, &new_oob)])
            }
        };
        result.map_err(|e| self.device_error(e))?;
        let owner = meta.owner;
        if owner & TOMBSTONE_BIT != 0 {
            self.tombstones.insert(owner & !TOMBSTONE_BIT, dst.0);
        } else {
            self.lpns[owner as usize].ppn = dst.0;
        }
        self.pages[src_local].flags |= MOVED;
        self.mark_dead(src);
        let flags = if meta.flags & TORN_TAIL != 0 { SEALED } else { meta.flags & SEALED };
        self.place(dst, PageMeta { flags, ..meta });
        Ok(())
    }

    /// Erases a collected block and forgets the copies it held; a worn-out block is
    /// retired instead (its stale copies stay on flash and keep counting).
    pub(super) fn erase_victim(&mut self, dev: &mut Device, slot: usize, b: u32, now: SimTime) -> Result<(), Error> {
        let block = self.block_id(slot, b);
        let local = self.local_block(slot, b);
        match dev.erase(block, now) {
            Ok(_) => {}
            Err(nand::Error::WornOut { .. }) => {
                // The moved pages' old copies stay on flash beside their new ones.
                let ppb = self.geometry.pages_per_block as usize;
                for page in local * ppb..(local + 1) * ppb {
                    let meta = self.pages[page];
                    if meta.flags & MOVED != 0 && meta.owner & TOMBSTONE_BIT == 0 {
                        self.lpns[meta.owner as usize].copies += 1;
                    }
                }
                self.blocks[local] = BlockSnapshot { state: BlockState::Retired, valid: 0, ..self.blocks[local] };
                self.counters.retired_blocks += 1;
                return Ok(());
            }
            Err(e) => return Err(self.device_error(e)),
        }
        let ppb = self.geometry.pages_per_block as usize;
        for page in local * ppb..(local + 1) * ppb {
            let PageMeta { owner, flags, .. } = std::mem::replace(&mut self.pages[page], PageMeta::EMPTY);
            if owner == NONE || owner & TOMBSTONE_BIT != 0 || flags & MOVED != 0 {
                continue;
            }
            let copies = &mut self.lpns[owner as usize].copies;
            *copies -= 1;
            if *copies == 0 {
                if let Some(t) = self.tombstones.remove(&owner) {
                    // The last old copy is gone: the trim record is no longer needed.
                    self.mark_dead(Ppn(t));
                }
            }
        }
        self.release_block(dev, slot, b);
        self.chip_state[slot].erased_since_wear_check = true;
        self.counters.gc_erases += 1;
        Ok(())
    }
}
