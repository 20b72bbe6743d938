//! Rebuild: the region's maps from a scan of every programmed page's OOB, telling
//! pages torn by a power cut from pages corrupted after they completed.
//!
//! Per lpn the candidates are tried newest first by (seq, gen). A whole page wins. A
//! damaged page is either *torn* (the program a cut interrupted; the previous version
//! is then the committed one and wins) or *corrupt* (a completed page damaged later;
//! the lpn is reported corrupt and no older copy is ever returned).
//!
//! Why only the last programmed page of a block can be torn: a cut tears the program
//! in flight on a chip, which is the newest first program in its block (blocks fill in
//! page order, see `alloc.rs`). After the cut the rebuild marks every programmed block
//! full, so no block ever takes another first program after a torn one: the torn page
//! stays its block's last programmed page through any number of later rebuilds, and
//! any damaged page with a programmed page after it in its block completed, so it is
//! corrupt. The classification is therefore stable. The last programmed page of a
//! block is torn only if the device's durable point also says a cut may have
//! interrupted it ([`nand::Device::may_be_torn`]: programmed after the last sync or
//! clean close); otherwise it completed and a failed check is corruption. A page torn
//! by a cut stays "may be torn" through later durable points until its block is
//! erased, so that verdict is stable too (see docs/safety.md, "The durable point").
//!
//! The other operations:
//! - appends (`write_delta`): a cut tears only the page's last append, which the page
//!   check reports as a torn tail; a damaged earlier append, or stray bytes before the
//!   end of the last good append, is corrupt (`oob::check_page`). A torn tail on a
//!   page whose program count has not changed since the durable point is a completed
//!   last append damaged later: corrupt.
//! - GC copies: the copy is the newest program of the GC block, so a torn copy is
//!   torn and the source (erased only after the copy) wins with the same seq. A copy
//!   corrupted later is corrupt even while its source survives: the copy may have
//!   taken appends the source lacks, so the source is older data.
//! - trim records and corrupt markers carry everything in their header; a torn one is
//!   torn like any first program.
//! - interrupted erases erase a prefix of whole pages; the pages left are completed
//!   (stale) pages and are judged like any other.
//! - write groups: a version with parts > 1 is accepted only if every part is present
//!   (whole or corrupt, not torn) or its lpn holds a newer version (which proves the
//!   group completed: the region writes one thing at a time). Otherwise the cut hit
//!   the group, and every lpn keeps its previous version. So that the group's
//!   surviving parts can never later be taken for a whole group (once the lpns of its
//!   missing parts are written again), the rebuild rewrites each lpn holding such a
//!   part with its previous version under a new seq.
//!
//! A damaged page whose header cannot be read even after repair (more than two bit
//! errors), and which is not torn, cannot be attributed to an lpn; the rebuild then
//! refuses the region ([`Error::Corrupted`] with no lpn) rather than risk older data.

use super::*;
use crate::oob::Damage;
use std::ops::Range;

/// What the rebuild learned about one programmed page.
#[derive(Clone, Copy)]
enum Status {
    Valid {
        slots: u8,
        floor: u32,
        torn_tail: bool,
    },
    /// Damaged, the newest program of its block, and programmed after the last durable
    /// point: torn by a cut.
    Torn,
    /// Damaged although it completed: a later program in its block, or the durable
    /// point, proves it.
    Corrupt(Damage),
}

/// A page whose header names an lpn of the region.
struct Candidate {
    header: Header,
    ppn: u32,
    /// The page is the last programmed page of its block.
    newest_in_block: bool,
}

/// The scan's candidates and what has been learned about them.
struct Scan {
    /// Sorted by lpn, then newest first by (seq, gen).
    candidates: Vec<Candidate>,
    by_lpn: HashMap<u32, Range<usize>>,
    status: HashMap<u32, Status>,
    groups: HashMap<(u32, u64), bool>,
    done: SimTime,
    now: SimTime,
}

impl Scan {
    /// Reads and checks candidate `i` (once).
    fn status(&mut self, dev: &mut Device, i: usize) -> Result<Status, Error> {
        let c = &self.candidates[i];
        if let Some(&s) = self.status.get(&c.ppn) {
            return Ok(s);
        }
        let may_be_torn = dev.may_be_torn(Ppn(c.ppn));
        let read = dev.read(Ppn(c.ppn), self.now)?;
        self.done = self.done.max(read.timing.end_ns);
        let s = match oob::check_page(read.data, read.oob) {
            PageCheck::Valid { torn_tail: true, .. } if !may_be_torn => Status::Corrupt(Damage::LastAppend),
            PageCheck::Valid { slots, append_floor, torn_tail, .. } => {
                Status::Valid { slots, floor: append_floor, torn_tail }
            }
            PageCheck::Damaged { .. } if c.newest_in_block && may_be_torn => Status::Torn,
            PageCheck::Damaged { damage, .. } => Status::Corrupt(damage),
        };
        self.status.insert(c.ppn, s);
        Ok(s)
    }

    /// Whether the write group of candidate `i` completed (see the module comment).
    fn group_complete(&mut self, dev: &mut Device, i: usize, logical_pages: u32) -> Result<bool, Error> {
        let h = self.candidates[i].header;
        if h.parts <= 1 {
            return Ok(true);
        }
        let key = (h.group_first(), h.seq);
        if let Some(&known) = self.groups.get(&key) {
            return Ok(known);
        }
        let mut complete = true;
        for part in 0..h.parts {
            let lpn = h.group_first() as u64 + part as u64;
            let range = if lpn < logical_pages as u64 { self.by_lpn.get(&(lpn as u32)).cloned() } else { None };
            let mut present = false;
            for j in range.unwrap_or(0..0) {
                let c = self.candidates[j].header;
                if c.seq < h.seq {
                    break;
                }
                let proves = c.seq > h.seq || (c.part == part && c.parts == h.parts);
                if proves && !matches!(self.status(dev, j)?, Status::Torn) {
                    present = true;
                    break;
                }
            }
            if !present {
                complete = false;
                break;
            }
        }
        self.groups.insert(key, complete);
        Ok(complete)
    }
}

impl Region {
    /// Rebuilds a region from flash by scanning every programmed page's OOB, then
    /// checking candidates newest first (see the module comment), then rewriting the
    /// lpns of groups a cut interrupted. Returns the region and when the rebuild ended.
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
        let mut scan = Scan {
            candidates: Vec::new(),
            by_lpn: HashMap::new(),
            status: HashMap::new(),
            groups: HashMap::new(),
            done: now,
            now,
        };
        let mut max_seq = 0;
        for slot in 0..r.chips.len() {
            for b in 0..r.geometry.blocks_per_chip {
                let block = r.block_id(slot, b);
                if dev.storage().write_pointer(block) == 0 {
                    r.release_block(dev, slot, b);
                    continue;
                }
                let local_block = r.local_block(slot, b);
                r.blocks.set_state(local_block, BlockState::Full);
                r.blocks.set_erase_count(local_block, dev.storage().erase_count(block));
                let programmed: Vec<u32> = (0..r.usable_per_block)
                    .filter(|i| dev.storage().program_count(r.geometry.ppn(block, i * r.stride)) > 0)
                    .collect();
                let last_programmed = programmed.last().copied();
                for i in programmed {
                    let last = Some(i) == last_programmed;
                    let ppn = r.geometry.ppn(block, i * r.stride);
                    let (timing, oob_bytes) = dev.read_oob(ppn, now)?;
                    scan.done = scan.done.max(timing.end_ns);
                    let header = Header::decode(oob_bytes).filter(|h| h.lpn < r.logical_pages);
                    let Some(h) = header else {
                        if let Some(version) = oob::older_format(oob_bytes) {
                            return Err(Error::Config(format!(
                                "region {}: block {} page {} was written in OOB format version {version}; this build reads only version 2 (write groups): re-create the image",
                                r.name,
                                block.0,
                                i * r.stride
                            )));
                        }
                        if last && dev.may_be_torn(ppn) {
                            r.rebuild_report.torn_pages += 1;
                            continue;
                        }
                        return Err(Error::Corrupted {
                            region: r.name.clone(),
                            lpn: None,
                            block: block.0,
                            page: i * r.stride,
                            what: Damage::Header.name().into(),
                        });
                    };
                    let local = r.local_page(ppn);
                    r.pages[local].owner = match h.kind {
                        PageKind::Data | PageKind::Corrupt => {
                            r.lpns[h.lpn as usize].copies += 1;
                            h.lpn
                        }
                        PageKind::Tombstone => TOMBSTONE_BIT | h.lpn,
                    };
                    let last_seq = r.blocks[local_block].last_write_seq.max(h.seq);
                    r.blocks.set_last_write_seq(local_block, last_seq);
                    max_seq = max_seq.max(h.seq);
                    scan.candidates.push(Candidate { header: h, ppn: ppn.0, newest_in_block: last });
                }
            }
        }
        scan.candidates.sort_unstable_by_key(|c| (c.header.lpn, Reverse((c.header.seq, c.header.gen)), c.ppn));
        let mut start = 0;
        while start < scan.candidates.len() {
            let lpn = scan.candidates[start].header.lpn;
            let end = start + scan.candidates[start..].iter().take_while(|c| c.header.lpn == lpn).count();
            scan.by_lpn.insert(lpn, start..end);
            start = end;
        }
        r.next_seq = max_seq + 1;
        let mut repair = Vec::new();
        for lpn in 0..r.logical_pages {
            let Some(range) = scan.by_lpn.get(&lpn).cloned() else {
                continue;
            };
            for i in range {
                let status = scan.status(dev, i)?;
                let (header, ppn) = (scan.candidates[i].header, Ppn(scan.candidates[i].ppn));
                if !matches!(status, Status::Torn) && !scan.group_complete(dev, i, r.logical_pages)? {
                    // Part of a group the cut interrupted: never committed.
                    if repair.last() != Some(&lpn) {
                        repair.push(lpn);
                    }
                    continue;
                }
                match (status, header.kind) {
                    (Status::Torn, _) => {
                        r.rebuild_report.torn_pages += 1;
                        continue;
                    }
                    (Status::Corrupt(damage), _) => r.adopt_corrupt(lpn, ppn, damage.name()),
                    (Status::Valid { .. }, PageKind::Corrupt) => {
                        r.adopt_corrupt(lpn, ppn, "GC moved it after an earlier rebuild found it corrupt")
                    }
                    (Status::Valid { slots, floor, torn_tail }, _) => r.adopt(ppn, header, slots, floor, torn_tail),
                }
                break;
            }
        }
        r.rebuild_report.torn_groups = scan.groups.values().filter(|&&complete| !complete).count() as u64;
        let mut done = scan.done;
        for lpn in repair {
            done = r.repair(dev, lpn, done)?;
        }
        Ok((r, done))
    }

    /// Makes a verified page the live copy of its lpn (during rebuild).
    fn adopt(&mut self, ppn: Ppn, header: Header, slots: u8, floor: u32, torn_tail: bool) {
        let lpn = header.lpn;
        let local = self.local_page(ppn);
        match header.kind {
            PageKind::Data | PageKind::Corrupt => {
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

    /// Makes a corrupt page (or corrupt marker) the live state of its lpn: it stays on
    /// flash, and reads fail, until the lpn is written or trimmed.
    fn adopt_corrupt(&mut self, lpn: u32, ppn: Ppn, what: &str) {
        self.lpns[lpn as usize].ppn = ppn.0;
        let local = self.local_page(ppn);
        self.pages[local] = PageMeta { owner: lpn, flags: CORRUPT, ..PageMeta::EMPTY };
        self.corrupt.insert(lpn, what.to_string());
        self.rebuild_report.corrupt_lpns += 1;
        self.mark_live(ppn);
    }

    /// Rewrites `lpn`'s current state under a new seq (after a torn group): its whole
    /// bytes, a corrupt marker, or a trim record. Returns when the write ended.
    fn repair(&mut self, dev: &mut Device, lpn: u32, now: SimTime) -> Result<SimTime, Error> {
        let ppn = self.lpns[lpn as usize].ppn;
        let end = if ppn == NONE {
            self.write_record(dev, PageKind::Tombstone, lpn, now)?.1.end_ns
        } else if self.pages[self.local_page(Ppn(ppn))].flags & CORRUPT != 0 {
            self.write_record(dev, PageKind::Corrupt, lpn, now)?.1.end_ns
        } else {
            let floor = self.pages[self.local_page(Ppn(ppn))].floor as usize;
            let read = dev.read(Ppn(ppn), now).map_err(|e| self.device_error(e))?;
            let mut bytes = vec![0xFF; read.data.len()];
            bytes[..floor].copy_from_slice(&read.data[..floor]);
            let at = read.timing.end_ns;
            self.write(dev, lpn, &bytes, at)?.end_ns
        };
        self.rebuild_report.repaired_lpns += 1;
        Ok(end)
    }
}
