//! Rebuild: the maps from an OOB scan.

use super::*;

impl Region {
    /// Rebuilds a region from flash by scanning every programmed page's OOB, then
    /// verifying candidates newest first. Returns the region and when the scan ended.
    pub(crate) fn rebuild(
        spec: RegionSpec,
        chips: Vec<u32>,
        dev: &mut Device,
        now: SimTime,
    ) -> Result<(Region, SimTime), Error> {
        if !dev.storage().keeps_data() {
            return Err(Error::Config(format!(
                "region {}: a metadata-only device keeps no OOB bytes and cannot be rebuilt",
                spec.name
            )));
        }
        let mut r = Region::empty(spec, chips, dev)?;
        let mut done = now;
        // (lpn, newest first by (seq, gen), ppn)
        type Candidate = (u32, Reverse<(u64, u32)>, u32);
        let mut candidates: Vec<Candidate> = Vec::new();
        let mut max_seq = 0;
        for slot in 0..r.chips.len() {
            for b in 0..r.geometry.blocks_per_chip {
                let block = r.block_id(slot, b);
                if dev.storage().write_pointer(block) == 0 {
                    r.release_block(dev, slot, b);
                    continue;
                }
                let local_block = r.local_block(slot, b);
                r.blocks[local_block].state = BlockState::Full;
                r.blocks[local_block].erase_count = dev.storage().erase_count(block);
                for i in 0..r.usable_per_block {
                    let ppn = r.geometry.ppn(block, i * r.stride);
                    if dev.storage().program_count(ppn) == 0 {
                        continue;
                    }
                    let (timing, oob_bytes) = dev.read_oob(ppn, now)?;
                    done = done.max(timing.end_ns);
                    let Some(h) = Header::decode(oob_bytes) else {
                        continue;
                    };
                    if h.lpn >= r.logical_pages {
                        continue;
                    }
                    let local = r.local_page(ppn);
                    r.pages[local].owner = match h.kind {
                        PageKind::Data => {
                            r.lpns[h.lpn as usize].copies += 1;
                            h.lpn
                        }
                        PageKind::Tombstone => TOMBSTONE_BIT | h.lpn,
                    };
                    let last = &mut r.blocks[local_block].last_write_seq;
                    *last = (*last).max(h.seq);
                    max_seq = max_seq.max(h.seq);
                    candidates.push((h.lpn, Reverse((h.seq, h.gen)), ppn.0));
                }
            }
        }
        candidates.sort_unstable();
        let mut i = 0;
        while i < candidates.len() {
            let lpn = candidates[i].0;
            let mut j = i;
            while j < candidates.len() && candidates[j].0 == lpn {
                j += 1;
            }
            for &(_, _, ppn) in &candidates[i..j] {
                let read = dev.read(Ppn(ppn), now)?;
                done = done.max(read.timing.end_ns);
                if let PageCheck::Valid { header, slots, append_floor, torn_tail } =
                    oob::check_page(read.data, read.oob)
                {
                    r.adopt(Ppn(ppn), header, slots, append_floor, torn_tail);
                    break;
                }
            }
            i = j;
        }
        r.next_seq = max_seq + 1;
        Ok((r, done))
    }

    /// Makes a verified page the live copy of its lpn (during rebuild).
    pub(super) fn adopt(&mut self, ppn: Ppn, header: Header, slots: u8, floor: u32, torn_tail: bool) {
        let lpn = header.lpn;
        let local = self.local_page(ppn);
        match header.kind {
            PageKind::Data => {
                self.lpns[lpn as usize].ppn = ppn.0;
                let mut flags = if header.sealed { SEALED } else { 0 };
                if torn_tail {
                    flags |= SEALED | TORN_TAIL;
                }
                self.pages[local] = PageMeta { owner: lpn, floor, slots, flags };
            }
            PageKind::Tombstone => {
                if self.lpns[lpn as usize].copies == 0 {
                    return;
                }
                self.tombstones.insert(lpn, ppn.0);
            }
        }
        self.mark_live(ppn);
    }
}
