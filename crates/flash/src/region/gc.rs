//! Garbage collection and static wear levelling: a victim's live pages move to the
//! chip's GC block, then the victim is erased.
//!
//! Invariants: every live page of a victim is moved before the erase, and programs are
//! durable when they return, so a power cut at any point leaves at least one whole copy
//! of every live page (the rebuild prefers the higher `gen`). Pages of a write group in
//! progress are live but not yet mapped (`PENDING`); they move like any live page and
//! the group's pending list follows them. A page the rebuild found corrupt moves as a
//! corrupt marker, so the lpn stays reported corrupt after the damaged page is erased.
//!
//! Timing: the copies and the erase take device time in order, each issued when the
//! previous one ends, the erase after the last copy (the erase must not start before
//! the copies are safe).

use super::*;

impl Region {
    /// After a host write: one background collection if the chip runs low, and one
    /// static wear-levelling move if the chip erased since the last check.
    pub(super) fn background_gc(&mut self, dev: &mut Device, slot: usize, now: SimTime) -> Result<(), Error> {
        let mut t = now;
        if self.chip_state[slot].free.len() < self.spec.gc.background_free_blocks as usize {
            if let Some(end) = self.collect(dev, slot, Collect::Background, t)? {
                t = end;
            }
        }
        if let Some(threshold) = self.spec.wear.static_threshold {
            if std::mem::take(&mut self.chip_state[slot].erased_since_wear_check)
                && self.chip_state[slot].free.len() > self.spec.gc.foreground_free_blocks as usize
            {
                if let Some(victim) = policy::choose_wear_victim(self.blocks.chip(slot), threshold) {
                    self.collect_block(dev, slot, victim as u32, Collect::WearLevel, t)?;
                }
            }
        }
        Ok(())
    }

    /// Collects one victim on the chip; returns when its erase ends, or `None` if no
    /// block has anything to reclaim.
    pub(super) fn collect(
        &mut self,
        dev: &mut Device,
        slot: usize,
        why: Collect,
        now: SimTime,
    ) -> Result<Option<SimTime>, Error> {
        // A rebuild closes the open blocks, so a chip may come back with no GC room:
        // only a victim whose live pages fit can be collected.
        let chip = &self.chip_state[slot];
        let gc_room = chip.gc.map_or(0, |c| self.usable_per_block - c.next);
        let room = gc_room + chip.free.len() as u32 * self.usable_per_block;
        let victim = self.blocks.choose_victim(slot, self.spec.gc.policy, self.next_seq, room);
        match victim {
            Some(v) => self.collect_block(dev, slot, v as u32, why, now).map(Some),
            None => Ok(None),
        }
    }

    /// Moves a block's live pages to the chip's GC block, then erases it. Returns when
    /// the erase ends.
    pub(super) fn collect_block(
        &mut self,
        dev: &mut Device,
        slot: usize,
        b: u32,
        why: Collect,
        now: SimTime,
    ) -> Result<SimTime, Error> {
        let local = self.local_block(slot, b);
        self.prefetch_victim_owners(slot, b);
        dev.prefetch_block(self.block_id(slot, b));
        // Out of the victim index while its pages move: each move would otherwise shift
        // it one valid-count bucket down.
        self.blocks.set_state(local, BlockState::Collecting);
        let moved = self.move_live_pages(dev, slot, b, why, now);
        let t = match moved {
            Ok(t) => t,
            Err(e) => {
                self.blocks.set_state(local, BlockState::Full);
                return Err(e);
            }
        };
        match why {
            Collect::Foreground => self.counters.foreground_gc_collections += 1,
            Collect::Background => self.counters.background_gc_collections += 1,
            Collect::WearLevel => {}
        }
        self.erase_victim(dev, slot, b, t)
    }

    /// Moves the live pages of victim `b` to the chip's GC block; returns when the last
    /// copy ends.
    fn move_live_pages(
        &mut self,
        dev: &mut Device,
        slot: usize,
        b: u32,
        why: Collect,
        now: SimTime,
    ) -> Result<SimTime, Error> {
        let block = self.block_id(slot, b);
        let first_page = self.local_block(slot, b) * self.geometry.pages_per_block as usize;
        let mut t = now;
        for i in 0..self.usable_per_block {
            let src_local = first_page + (i * self.stride) as usize;
            if self.live_at(src_local) {
                let Some(dst) = self.page_on(slot, Stream::Gc) else {
                    return Err(Error::RegionFull { region: self.name.clone() });
                };
                let src = self.geometry.ppn(block, i * self.stride);
                t = self.migrate(dev, src, src_local, dst, t)?;
                self.counters.gc_page_migrations += 1;
                if why == Collect::WearLevel {
                    self.counters.wl_page_migrations += 1;
                }
            }
        }
        Ok(t)
    }

    /// Prefetches the map entries of the lpns whose pages a victim holds, before GC
    /// needs them: the moves rewrite the live pages' mappings and the erase the dead
    /// pages' copy counts, one page at a time, each a likely cache miss. Prefetches
    /// retire at once, so the loop goes on issuing them while earlier ones are in
    /// flight (plain loads filled the reorder buffer after a dozen misses).
    fn prefetch_victim_owners(&self, slot: usize, b: u32) {
        let ppb = self.geometry.pages_per_block as usize;
        let first_page = self.local_block(slot, b) * ppb;
        for meta in &self.pages[first_page..first_page + ppb] {
            if meta.owner != NONE && meta.owner & TOMBSTONE_BIT == 0 {
                prefetch_index(&self.lpns, meta.owner as usize);
            }
        }
    }

    /// Copies a live page to `dst` (same chip) and moves the mapping; returns when the
    /// copy ends.
    /// `src_local` is the local page of `src`.
    fn migrate(
        &mut self,
        dev: &mut Device,
        src: Ppn,
        src_local: usize,
        dst: Ppn,
        now: SimTime,
    ) -> Result<SimTime, Error> {
        let meta = self.pages[src_local];
        let page_bytes = self.page_bytes();
        let slots_bytes = meta.slots as usize * oob::SLOT_BYTES;
        let result = if !self.keeps_data {
            dev.copyback(src, dst, now, &[Span::new(page_bytes, &self.filler[..oob::HEADER_BYTES + slots_bytes])])
        } else {
            let (data, oob_bytes) = dev.peek(src);
            let Some(mut header) = Header::decode(oob_bytes) else {
                // A live page was verified when written or rebuilt; an unreadable header
                // now means the flash changed under us.
                let (block, page) = (self.geometry.block_of(src).0, self.geometry.page_in_block(src));
                self.poisoned = true;
                return Err(Error::Corrupted {
                    region: self.name.clone(),
                    lpn: (meta.owner & TOMBSTONE_BIT == 0).then_some(meta.owner),
                    block,
                    page,
                    what: "the OOB header of a live page became unreadable before GC moved it".into(),
                });
            };
            header.gen += 1;
            if meta.flags & CORRUPT != 0 && header.kind == PageKind::Data {
                // Keep the verdict, not the damaged bytes.
                let marker = Header {
                    gen: header.gen,
                    part: header.part,
                    parts: header.parts,
                    ..Header::new(PageKind::Corrupt, header.lpn, header.seq, &[])
                };
                dev.program(dst, now, &[Span::new(page_bytes, &marker.encode())])
            } else {
                header.slots_at_program = meta.slots;
                let torn_tail = meta.flags & TORN_TAIL != 0;
                if torn_tail {
                    // Torn bytes are not covered by any slot: re-base the page on what it
                    // holds now (read + program, not copyback) and keep it sealed.
                    header.erased_from = oob::erased_from(data) as u32;
                    header.segment_crcs = oob::segment_crcs(&data[..header.erased_from as usize]);
                    header.sealed = true;
                }
                let mut new_oob = std::mem::take(&mut self.oob_scratch);
                new_oob.clear();
                new_oob.extend_from_slice(&header.encode());
                new_oob.extend_from_slice(&oob_bytes[oob::HEADER_BYTES..oob::HEADER_BYTES + slots_bytes]);
                let result = if torn_tail {
                    let data = data.to_vec();
                    let read = dev.read(src, now).map(|r| r.timing);
                    read.and_then(|r| {
                        dev.program(dst, r.end_ns, &[Span::new(0, &data), Span::new(page_bytes, &new_oob)])
                    })
                } else {
                    dev.copyback(src, dst, now, &[Span::new(page_bytes, &new_oob)])
                };
                self.oob_scratch = new_oob;
                result
            }
        };
        let timing = result.map_err(|e| self.device_error(e))?;
        let owner = meta.owner;
        if owner & TOMBSTONE_BIT != 0 {
            self.tombstones.insert(owner & !TOMBSTONE_BIT, dst.0);
        } else if meta.flags & PENDING != 0 {
            if let Some(part) = self.pending.iter_mut().find(|p| **p == src.0) {
                *part = dst.0;
            }
        } else {
            let mapping = &mut self.lpns[owner as usize].ppn;
            assert_eq!(*mapping, src.0, "live page {src:?} is not the mapping of lpn {owner}");
            *mapping = dst.0;
        }
        self.pages[src_local].flags |= MOVED;
        self.mark_dead(src);
        let flags = if meta.flags & TORN_TAIL != 0 { SEALED } else { meta.flags & (SEALED | PENDING | CORRUPT) };
        self.place(dst, PageMeta { flags, ..meta });
        Ok(timing.end_ns)
    }

    /// Erases a collected block and forgets the copies it held; a worn-out block is
    /// retired instead (its stale copies stay on flash and keep counting). Returns when
    /// the erase ends.
    fn erase_victim(&mut self, dev: &mut Device, slot: usize, b: u32, now: SimTime) -> Result<SimTime, Error> {
        let block = self.block_id(slot, b);
        let local = self.local_block(slot, b);
        let end = match dev.erase(block, now) {
            Ok(timing) => timing.end_ns,
            Err(nand::Error::WornOut { .. }) => {
                // The moved pages' old copies stay on flash beside their new ones.
                let ppb = self.geometry.pages_per_block as usize;
                for page in local * ppb..(local + 1) * ppb {
                    let meta = self.pages[page];
                    if meta.flags & MOVED != 0 && meta.owner & TOMBSTONE_BIT == 0 {
                        self.lpns[meta.owner as usize].copies += 1;
                    }
                }
                self.blocks.set(local, BlockSnapshot { state: BlockState::Retired, valid: 0, ..self.blocks[local] });
                self.counters.retired_blocks += 1;
                return Ok(now);
            }
            Err(e) => return Err(self.device_error(e)),
        };
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
        Ok(end)
    }
}
