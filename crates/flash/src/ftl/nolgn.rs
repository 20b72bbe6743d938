//! NoLgn-FTL (Zhou et al., "no-logging" FTL): a page-mapping FTL whose transactional
//! writes keep the old version valid until commit, so a database needs no log.
//!
//! A transaction gets a tid from [`Ftl::begin_tx`]; each [`Ftl::write_tx`] writes the
//! new page out of place with LPN (the page store's header), old PPN, tid and the end
//! flag in its OOB, maps the LPN to it (reads see it), leaves the old page live, adds a
//! P2P entry (tid, new PPN, old PPN) to a bounded table in controller RAM and sets the
//! lock bit of the old page's block. [`Ftl::commit`] (after the end page is written)
//! invalidates the old pages, clears their lock bits and drops the P2P entries;
//! [`Ftl::abort`] maps the old pages again and invalidates the new ones.
//! Allocation, GC and the rebuild scan are the page store's (`super::pagelog`).
//!
//! OOB of every page: the page store's 28-byte header, then 12 bytes (little-endian):
//!
//! ```text
//! offset size field
//! 28      4   tid (bits 0..31) | end flag (bit 31)
//! 32      4   old PPN (0xFFFFFFFF: the LPN had no data page, or a trim record)
//! 36      4   crc32 of bytes 28..36
//! ```
//!
//! A page written outside a transaction, or stripped of its metadata by GC, has bytes
//! 28..40 erased (0xFF).
//!
//! Invariants:
//! - `l2p[lpn]` is the live page of `lpn`, an uncommitted one included; every page of
//!   an open transaction is in `pending`, and its P2P entry names it and its old page.
//! - A block's lock count is the number of live old versions open transactions hold in
//!   it; GC never collects a block whose count is above 0 (the lock bit). P2P entries
//!   never exceed `p2p_entries`: a write that needs one more is refused
//!   ([`Error::P2pFull`], nothing written), and the caller commits or aborts.
//! - A live page that carries the tag of a committed transaction is in `tagged`. While
//!   any such page other than the end page is live, the end page stays live too, as a
//!   *witness*, even after its LPN moved on: the scan needs it to know the tag was
//!   committed. (The paper strips the metadata when GC copies a committed page; pages
//!   GC never touches keep it, and without the witness a recovery would roll them back
//!   to old versions that may be erased.) GC copies pages of open transactions and
//!   witnesses with their metadata and strips it from the other committed pages.
//! - Tids grow: after a rebuild they continue above every tid on flash, so a tid never
//!   names pages of two transactions.
//!
//! - A superseded page's payload is discarded (`PageLog::retire`) once no open
//!   transaction or recovery needs it: old versions at commit (not before: the lock
//!   keeps them live), rewritten and aborted transaction pages (a rebuild rejects their
//!   tid before reading them). End pages are only killed: every rebuild reads each end
//!   page on flash whole.
//!
//! Fault model: as the page store (a power cut at any program, copyback or erase;
//! torn pages fail their CRCs). Recovery is a full scan: a tid whose whole end page is
//! on flash committed; the pages of any other tid are ignored, so each of its LPNs
//! falls back to its newest older page, the old version, which the lock bit kept.
//! Open transactions do not survive a restart (their host is gone): the rebuilt FTL
//! has an empty P2P table and no lock bits.

use super::pagelog::{Header, Owner, PageLog, ProgramOptions, Remap, ScanHook, NONE, OOB_BYTES};
use super::{device_accessors, Ftl, FtlConfig, FtlCounters, FtlKind, FtlRead};
use crate::error::Error;
use nand::{Device, OpTiming, Ppn, SimTime};
use prefetch_index::prefetch_index;
use std::collections::{BTreeMap, HashMap, HashSet};

/// Bytes of transaction metadata after the page store's header.
pub const TX_BYTES: usize = 12;
/// The end flag in the tid field.
const END: u32 = 1 << 31;

/// The transaction metadata of a page's OOB.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Tag {
    tid: u32,
    end: bool,
    old: u32,
}

impl Tag {
    fn encode(&self) -> [u8; TX_BYTES] {
        let mut b = [0u8; TX_BYTES];
        b[..4].copy_from_slice(&(self.tid | if self.end { END } else { 0 }).to_le_bytes());
        b[4..8].copy_from_slice(&self.old.to_le_bytes());
        let crc = crc32fast::hash(&b[..8]);
        b[8..].copy_from_slice(&crc.to_le_bytes());
        b
    }

    /// `Ok(None)` for erased bytes (no transaction), `Err` for bytes that are neither.
    fn decode(b: &[u8]) -> Result<Option<Tag>, ()> {
        let b = b.get(..TX_BYTES).ok_or(())?;
        if b.iter().all(|&x| x == 0xFF) {
            return Ok(None);
        }
        let u32_at = |o: usize| u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]);
        if crc32fast::hash(&b[..8]) != u32_at(8) {
            return Err(());
        }
        let field = u32_at(0);
        Ok(Some(Tag { tid: field & !END, end: field & END != 0, old: u32_at(4) }))
    }
}

/// A P2P entry (and the LPN, which the paper reads from the new page's OOB).
#[derive(Clone, Copy, Debug)]
struct Entry {
    lpn: u32,
    new: u32,
    old: u32,
}

#[derive(Default)]
struct OpenTx {
    entries: Vec<Entry>,
    end: Option<u32>,
}

/// A committed transaction some of whose live pages still carry its tag.
#[derive(Clone, Copy, Debug)]
struct Committed {
    /// Its end page.
    end: u32,
    /// Live tagged pages other than the end page.
    members: u32,
    /// The end page is live only as evidence (its LPN moved on).
    witness: bool,
}

/// Mapping and transaction state in controller RAM; the page store's GC calls it.
struct State {
    l2p: Vec<u32>,
    open: BTreeMap<u32, OpenTx>,
    p2p_used: u32,
    p2p_entries: u32,
    /// Live pages of open transactions → tid.
    pending: HashMap<u32, u32>,
    /// Live pages carrying a committed transaction's tag → tid.
    tagged: HashMap<u32, u32>,
    committed: HashMap<u32, Committed>,
    /// Per block: live old versions open transactions hold (lock bit = count > 0).
    locks: Vec<u32>,
    pages_per_block: u32,
}

impl State {
    fn block(&self, ppn: u32) -> usize {
        (ppn / self.pages_per_block) as usize
    }

    /// The live page `old` (NONE: none) is superseded (overwrite, trim, commit): it dies
    /// unless it stays as a witness. Its payload is discarded unless it is an end page,
    /// which every rebuild reads whole to learn whether its transaction committed.
    fn supersede(&mut self, log: &mut PageLog, old: u32) {
        if old == NONE {
            return;
        }
        let end = self.tagged.get(&old).and_then(|tid| self.committed.get(tid)).is_some_and(|c| c.end == old);
        if self.retire(log, old) {
            if end {
                log.kill(Ppn(old));
            } else {
                log.retire(Ppn(old));
            }
        }
    }

    /// A live page is superseded: returns whether the caller kills it. A committed end
    /// page with live members stays, as a witness.
    fn retire(&mut self, log: &mut PageLog, ppn: u32) -> bool {
        let Some(&tid) = self.tagged.get(&ppn) else { return true };
        let Some(c) = self.committed.get_mut(&tid) else { return true };
        if c.end == ppn {
            if c.members > 0 {
                c.witness = true;
                return false;
            }
            self.tagged.remove(&ppn);
            self.committed.remove(&tid);
            return true;
        }
        self.tagged.remove(&ppn);
        self.drop_member(log, tid);
        true
    }

    /// One fewer live tagged member of committed `tid`; the witness goes with the last.
    fn drop_member(&mut self, log: &mut PageLog, tid: u32) {
        let Some(c) = self.committed.get_mut(&tid) else { return };
        c.members = c.members.saturating_sub(1);
        if c.members == 0 && c.witness {
            let end = c.end;
            self.committed.remove(&tid);
            self.tagged.remove(&end);
            log.kill(Ppn(end));
        }
    }
}

impl Remap for State {
    fn moved(&mut self, owner: Owner, src: Ppn, dst: Ppn) {
        if let Owner::Data(lpn) = owner {
            // A witness is not its LPN's mapping and moves without it.
            if self.l2p[lpn as usize] == src.0 {
                self.l2p[lpn as usize] = dst.0;
            }
        }
    }

    fn settle(&mut self, _: &mut PageLog, _: &mut Device, _: usize, now: SimTime) -> Result<SimTime, Error> {
        Ok(now)
    }

    fn prefetch_moved(&self, owner: Owner) {
        if let Owner::Data(lpn) = owner {
            prefetch_index(&self.l2p, lpn as usize);
        }
    }

    fn locked(&self, block: u32) -> bool {
        self.locks[block as usize] > 0
    }

    fn migrating(&mut self, log: &mut PageLog, src: Ppn, dst: Ppn) -> usize {
        if let Some(tid) = self.pending.remove(&src.0) {
            self.pending.insert(dst.0, tid);
            if let Some(e) = self.open.get_mut(&tid).and_then(|t| t.entries.iter_mut().find(|e| e.new == src.0)) {
                e.new = dst.0;
            }
            if let Some(t) = self.open.get_mut(&tid).filter(|t| t.end == Some(src.0)) {
                t.end = Some(dst.0);
            }
            log.counters.gc_tx_migrations += 1;
            return 0;
        }
        let Some(tid) = self.tagged.remove(&src.0) else { return 0 };
        let Some(c) = self.committed.get_mut(&tid) else { return TX_BYTES };
        if c.end == src.0 {
            if c.members > 0 {
                c.end = dst.0;
                self.tagged.insert(dst.0, tid);
                log.counters.gc_tx_migrations += 1;
                return 0;
            }
            self.committed.remove(&tid);
            return TX_BYTES;
        }
        self.drop_member(log, tid);
        TX_BYTES
    }
}

/// What the rebuild scan learns about transactions.
#[derive(Default)]
struct Recovery {
    tags: HashMap<u32, Tag>,
    /// Pages whose metadata bytes are damaged: never taken (the open fails if one of
    /// them completed, see [`nand::Device::may_be_torn`]).
    bad: HashSet<u32>,
    ends: Vec<(u32, u32)>,
    /// Tids whose whole end page is on flash → that page.
    committed: HashMap<u32, u32>,
    max_tid: u32,
}

impl ScanHook for Recovery {
    fn seen(&mut self, ppn: Ppn, header: &Header, oob: &[u8]) {
        match Tag::decode(oob.get(header.oob_bytes()..).unwrap_or_default()) {
            Ok(None) => {}
            Ok(Some(tag)) => {
                self.max_tid = self.max_tid.max(tag.tid);
                if tag.end {
                    self.ends.push((tag.tid, ppn.0));
                }
                self.tags.insert(ppn.0, tag);
            }
            Err(()) => {
                self.bad.insert(ppn.0);
            }
        }
    }

    fn between(&mut self, dev: &mut Device, now: SimTime) -> Result<SimTime, Error> {
        let mut done = now;
        if let Some(ppn) = self.bad.iter().copied().filter(|&p| !dev.may_be_torn(Ppn(p))).min() {
            let g = dev.geometry();
            return Err(Error::Corrupted {
                region: "nolgn FTL".into(),
                lpn: None,
                block: g.block_of(Ppn(ppn)).0,
                page: g.page_in_block(Ppn(ppn)),
                what: "the transaction metadata fails its checksum although the page completed".into(),
            });
        }
        for &(tid, ppn) in &self.ends {
            // An end page that completed commits its transaction even if damaged since
            // (the damage is its own lpn's, found by the candidate pass).
            let completed = !dev.may_be_torn(Ppn(ppn));
            let read = dev.read(Ppn(ppn), now)?;
            done = done.max(read.timing.end_ns);
            if completed || Header::decode(read.oob).is_some_and(|h| h.verifies(read.data)) {
                self.committed.insert(tid, ppn);
            }
        }
        Ok(done)
    }

    fn accept(&self, ppn: Ppn) -> bool {
        !self.bad.contains(&ppn.0) && self.tags.get(&ppn.0).is_none_or(|t| self.committed.contains_key(&t.tid))
    }
}

/// NoLgn-FTL over a whole device.
pub struct NolgnFtl {
    dev: Device,
    log: PageLog,
    state: State,
    next_tid: u32,
}

fn logical_pages(dev: &Device, config: &FtlConfig) -> Result<u32, Error> {
    if (dev.geometry().oob_bytes as usize) < OOB_BYTES + TX_BYTES {
        return Err(Error::Config(format!(
            "nolgn FTL: the device's {}-byte OOB cannot hold the {}-byte page header and transaction metadata",
            dev.geometry().oob_bytes,
            OOB_BYTES + TX_BYTES
        )));
    }
    if config.p2p_entries == 0 {
        return Err(Error::Config("nolgn FTL: the P2P table needs at least 1 entry".into()));
    }
    Ok(PageLog::capacity("nolgn", dev.geometry(), config.over_provisioning, &config.gc, 2)? as u32)
}

impl NolgnFtl {
    /// A fresh FTL over the device: every block erased, nothing mapped.
    pub fn format(mut dev: Device, config: &FtlConfig) -> Result<NolgnFtl, Error> {
        let logical = logical_pages(&dev, config)?;
        let log = PageLog::format("nolgn", &mut dev, config.gc.clone(), logical, 0)?;
        Ok(NolgnFtl::assemble(dev, log, config, vec![NONE; logical as usize], 1))
    }

    /// Rebuilds by a full OOB scan from `now` (see the module comment); returns the FTL
    /// and when the scan ended.
    pub fn open(mut dev: Device, config: &FtlConfig, now: SimTime) -> Result<(NolgnFtl, SimTime), Error> {
        let logical = logical_pages(&dev, config)?;
        let mut rec = Recovery::default();
        let (log, scan) = PageLog::rebuild_with("nolgn", &mut dev, config.gc.clone(), logical, 0, &mut rec, now)?;
        let mut ftl = NolgnFtl::assemble(dev, log, config, scan.data, rec.max_tid + 1);
        let state = &mut ftl.state;
        for &ppn in &state.l2p {
            let Some(tag) = rec.tags.get(&ppn) else { continue };
            let Some(&end) = rec.committed.get(&tag.tid) else { continue };
            state.tagged.insert(ppn, tag.tid);
            let c = state.committed.entry(tag.tid).or_insert(Committed { end, members: 0, witness: true });
            if ppn == end {
                c.witness = false;
            } else {
                c.members += 1;
            }
        }
        for c in state.committed.values() {
            if c.witness && c.members > 0 {
                ftl.log.revive(Ppn(c.end));
            }
        }
        let witnesses: Vec<(u32, u32)> =
            state.committed.iter().filter(|(_, c)| c.witness).map(|(&tid, c)| (c.end, tid)).collect();
        state.tagged.extend(witnesses);
        Ok((ftl, scan.done))
    }

    fn assemble(dev: Device, log: PageLog, config: &FtlConfig, l2p: Vec<u32>, next_tid: u32) -> NolgnFtl {
        let blocks = dev.geometry().total_blocks() as usize;
        let pages_per_block = dev.geometry().pages_per_block;
        NolgnFtl {
            dev,
            log,
            state: State {
                l2p,
                open: BTreeMap::new(),
                p2p_used: 0,
                p2p_entries: config.p2p_entries,
                pending: HashMap::new(),
                tagged: HashMap::new(),
                committed: HashMap::new(),
                locks: vec![0; blocks],
                pages_per_block,
            },
            next_tid,
        }
    }

    /// Refuses a non-transactional change to a page an open transaction holds.
    fn check_not_pending(&self, lpn: u32) -> Result<(), Error> {
        let cur = self.state.l2p[lpn as usize];
        match self.state.pending.get(&cur) {
            Some(&tid) => Err(Error::Transaction {
                tid,
                what: format!("logical page {lpn} belongs to this open transaction; commit or abort it first"),
            }),
            None => Ok(()),
        }
    }

    /// Pages of open transactions (the P2P table's entries in use).
    pub fn p2p_used(&self) -> u32 {
        self.state.p2p_used
    }

    /// Blocks whose lock bit is set.
    pub fn locked_blocks(&self) -> usize {
        self.state.locks.iter().filter(|&&n| n > 0).count()
    }

    /// Programs a data page of `lpn` on a fresh page, with a transaction's tag in its
    /// OOB or none (a transaction's page leaves the lpn's tombstone live: it may still
    /// be rolled back).
    fn put(&mut self, lpn: u32, data: &[u8], tag: Option<Tag>, now: SimTime) -> Result<(Ppn, OpTiming), Error> {
        let tail = tag.map(|t| t.encode());
        let options = ProgramOptions {
            tail: tail.as_ref().map_or(&[], |t| &t[..]),
            keep_tombstone: tag.is_some(),
            ..Default::default()
        };
        self.log.host_program(&mut self.dev, &mut self.state, Owner::Data(lpn), data, options, now)
    }

    fn open_tx(&mut self, tid: u32) -> Result<&mut OpenTx, Error> {
        self.state.open.get_mut(&tid).ok_or_else(|| Error::Transaction { tid, what: "no such open transaction".into() })
    }
}

impl Ftl for NolgnFtl {
    fn kind(&self) -> FtlKind {
        FtlKind::Nolgn
    }
    fn logical_pages(&self) -> u32 {
        self.log.logical_pages()
    }
    device_accessors!(dev);

    fn read(&mut self, lpn: u32, now: SimTime) -> Result<Option<FtlRead<'_>>, Error> {
        self.log.check_lpn(lpn)?;
        Ok(self.log.host_read(&mut self.dev, self.state.l2p[lpn as usize], now)?.map(FtlRead::from))
    }

    fn write(&mut self, lpn: u32, data: &[u8], now: SimTime) -> Result<OpTiming, Error> {
        self.log.check_lpn(lpn)?;
        super::check_payload(self.log.keeps_data(), data, self.log.page_bytes())?;
        self.check_not_pending(lpn)?;
        let (ppn, timing) = self.put(lpn, data, None, now)?;
        let old = std::mem::replace(&mut self.state.l2p[lpn as usize], ppn.0);
        self.state.supersede(&mut self.log, old);
        self.log.host_done(&mut self.dev, &mut self.state, ppn, timing.end_ns)?;
        Ok(timing)
    }

    fn trim(&mut self, lpn: u32, now: SimTime) -> Result<Option<OpTiming>, Error> {
        self.log.check_lpn(lpn)?;
        self.check_not_pending(lpn)?;
        let old = self.state.l2p[lpn as usize];
        self.log.host_trim(&mut self.dev, &mut self.state, lpn, old, now, |state, log| {
            let old = std::mem::replace(&mut state.l2p[lpn as usize], NONE);
            state.supersede(log, old);
            Ok(())
        })
    }

    fn counters(&self) -> FtlCounters {
        self.log.counters
    }

    fn mapping_bytes(&self) -> u64 {
        use crate::heap;
        let s = &self.state;
        self.log.mapping_bytes()
            + heap::vec(&s.l2p)
            + heap::btree_map_with(&s.open, |tx| heap::vec(&tx.entries))
            + heap::map(&s.pending)
            + heap::map(&s.tagged)
            + heap::map(&s.committed)
            + heap::vec(&s.locks)
    }

    fn begin_tx(&mut self) -> Result<u32, Error> {
        self.log.check_usable()?;
        let tid = self.next_tid;
        if tid >= END {
            return Err(Error::Config("nolgn FTL: the 31-bit transaction ids are used up".into()));
        }
        self.next_tid += 1;
        self.state.open.insert(tid, OpenTx::default());
        Ok(tid)
    }

    fn write_tx(&mut self, lpn: u32, data: &[u8], tid: u32, end: bool, now: SimTime) -> Result<OpTiming, Error> {
        self.log.check_lpn(lpn)?;
        super::check_payload(self.log.keeps_data(), data, self.log.page_bytes())?;
        let (limit, used) = (self.state.p2p_entries, self.state.p2p_used);
        let cur = self.state.l2p[lpn as usize];
        let holder = self.state.pending.get(&cur).copied();
        let tombstone = self.log.tombstone(lpn).map_or(NONE, |p| p.0);
        let tx = self.open_tx(tid)?;
        if tx.end.is_some() {
            return Err(Error::Transaction { tid, what: format!("written after its end page (logical page {lpn})") });
        }
        let rewrite = match holder {
            Some(h) if h != tid => {
                return Err(Error::Transaction {
                    tid,
                    what: format!("logical page {lpn} belongs to open transaction {h}"),
                })
            }
            Some(_) => tx.entries.iter().position(|e| e.new == cur),
            None => None,
        };
        let old = match rewrite {
            Some(i) => tx.entries[i].old,
            None if cur != NONE => cur,
            None => tombstone,
        };
        if rewrite.is_none() && used >= limit {
            return Err(Error::P2pFull { entries: limit });
        }
        // Locked before the allocation, whose GC must not move the old version.
        let lock = (rewrite.is_none() && old != NONE).then(|| self.state.block(old));
        if let Some(b) = lock {
            self.state.locks[b] += 1;
        }
        let (ppn, timing) = match self.put(lpn, data, Some(Tag { tid, end, old }), now) {
            Ok(done) => done,
            Err(e) => {
                if let Some(b) = lock {
                    self.state.locks[b] -= 1;
                }
                return Err(e);
            }
        };
        let state = &mut self.state;
        let tx = state.open.get_mut(&tid).ok_or_else(|| Error::Transaction { tid, what: "vanished".into() })?;
        match rewrite {
            Some(i) => {
                // Where the earlier page is now: the allocation's GC may have moved it.
                let earlier = std::mem::replace(&mut tx.entries[i].new, ppn.0);
                state.pending.remove(&earlier);
                // Not an end page (none is written after it): never read again.
                self.log.retire(Ppn(earlier));
            }
            None => {
                tx.entries.push(Entry { lpn, new: ppn.0, old });
                state.p2p_used += 1;
            }
        }
        if end {
            tx.end = Some(ppn.0);
        }
        state.pending.insert(ppn.0, tid);
        state.l2p[lpn as usize] = ppn.0;
        self.log.host_done(&mut self.dev, &mut self.state, ppn, timing.end_ns)?;
        Ok(timing)
    }

    fn commit(&mut self, tid: u32, _now: SimTime) -> Result<(), Error> {
        self.log.check_usable()?;
        let tx = self.open_tx(tid)?;
        let Some(end) = tx.end.or(tx.entries.is_empty().then_some(NONE)) else {
            return Err(Error::Transaction { tid, what: "commit before its end page was written".into() });
        };
        let Some(tx) = self.state.open.remove(&tid) else { return Ok(()) };
        self.state.p2p_used -= tx.entries.len() as u32;
        for e in &tx.entries {
            self.state.pending.remove(&e.new);
            self.state.tagged.insert(e.new, tid);
            if e.old == NONE {
                continue;
            }
            let b = self.state.block(e.old);
            self.state.locks[b] -= 1;
            if self.log.tombstone(e.lpn) == Some(Ppn(e.old)) {
                self.log.forget_tombstone(e.lpn);
            } else {
                self.state.supersede(&mut self.log, e.old);
            }
        }
        if end != NONE {
            let members = tx.entries.len() as u32 - 1;
            self.state.committed.insert(tid, Committed { end, members, witness: false });
        }
        Ok(())
    }

    fn abort(&mut self, tid: u32, _now: SimTime) -> Result<(), Error> {
        self.log.check_usable()?;
        if self.open_tx(tid)?.end.is_some() {
            return Err(Error::Transaction {
                tid,
                what: "abort after its end page: a recovery would find it committed; commit it".into(),
            });
        }
        let Some(tx) = self.state.open.remove(&tid) else { return Ok(()) };
        self.state.p2p_used -= tx.entries.len() as u32;
        for e in tx.entries.iter().rev() {
            self.state.pending.remove(&e.new);
            // A rebuild rejects it (its tid has no end page) and never reads it.
            self.log.retire(Ppn(e.new));
            let tombstone = self.log.tombstone(e.lpn) == Some(Ppn(e.old));
            self.state.l2p[e.lpn as usize] = if tombstone { NONE } else { e.old };
            if e.old != NONE {
                let b = self.state.block(e.old);
                self.state.locks[b] -= 1;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tag_round_trip_erased_and_damaged() {
        for tag in [Tag { tid: 7, end: true, old: 12 }, Tag { tid: END - 1, end: false, old: NONE }] {
            let mut b = tag.encode();
            assert_eq!(Tag::decode(&b), Ok(Some(tag)));
            b[5] ^= 1;
            assert_eq!(Tag::decode(&b), Err(()));
        }
        assert_eq!(Tag::decode(&[0xFF; TX_BYTES]), Ok(None));
        assert_eq!(Tag::decode(&[0xFF; 4]), Err(()));
    }
}
