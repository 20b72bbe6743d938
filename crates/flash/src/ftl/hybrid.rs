//! What the block-mapped FTLs share: the naive block FTL ([`super::block`]) and the
//! log-block FTLs BAST ([`super::bast`]) and FAST ([`super::fast`]) differ only in where
//! a page goes when it cannot be written into its data block and in how they merge.
//!
//! Addressing: logical page `lpn` is page `lpn % P` ("offset") of logical block
//! `lpn / P` (`lbn`), P = pages per block. Page `i` of a data block holds offset `i`.
//!
//! Invariants (checked by `debug_assert`s and by the model tests):
//! - `loc[lpn]` is the physical page of the live version of `lpn`, or NONE when the page
//!   was never written or was trimmed; every page on flash that `loc` does not name is
//!   stale.
//! - A host page goes straight into its data block when the block's write pointer has
//!   not passed its offset (the block's erased tail, in page order); otherwise the scheme
//!   writes it elsewhere. Hence a live version outside the data block implies the data
//!   block's write pointer is past its offset.
//! - Every program carries a sequence number: a host write or trim takes a new one, a
//!   merge copy keeps its source's, and every page of a block also carries the block's
//!   allocation number `bseq` (taken from the same counter when the block was opened).
//! - A merge programs every copy before it erases a source; blocks without trim records
//!   are erased before blocks with them, and those oldest first, so a trim record
//!   outlives every older version of its page.
//! - Payload discard ([`nand::Device::discard_payload`], on devices that keep data): a
//!   data page's bytes are dropped once a rebuild can never pick it, i.e. once a page of
//!   the same lpn with a greater (seq, bseq) key is durable:
//!   - the live version, and a shadow (below), when a newer write or trim record of its
//!     lpn has been programmed (after the program returns: a torn one is ignored by the
//!     rebuild, which then still needs the old version);
//!   - a merge source in a FAST random log block (which outlives the merge) once its
//!     own copy is programmed, if the copy's block is newer than the source's (the
//!     rebuild's tie goes to the newer block). FAST's partial merge may copy such a page
//!     into an *older* SW block; that source would win a rebuild's tie, so it keeps its
//!     bytes as the lpn's *shadow* until the version is superseded, copied into a block
//!     newer than the shadow's, or its block is erased. Sources in data and log blocks
//!     are left alone: the merge erases their blocks before it returns (discarding
//!     each of them first only cost time);
//!   - at open, every data page whose seq is below its lpn's newest valid event.
//!
//!   Why that is safe: the FTL never lets a rebuild resurrect an older version (that is
//!   what the power-cut model tests check), so while a page with a smaller key is on
//!   flash, some whole page with a greater key (the current version, a copy of it that
//!   only goes after a newer one is durable, or a trim record) is on flash too, and the
//!   discarded page loses the comparison. The block FTL's trim writes no record, so a
//!   trimmed page is not discarded (a cut before its block's erase brings it back).
//!   Trim records have no payload and are never discarded. A discarded page stays on
//!   flash with its OOB: the rebuild reads it ([`nand::Device::scan_read`], timed as a
//!   whole-page read as before) and trusts its header without the data CRC (it was
//!   whole when discarded); if one ever won, `open` fails rather than map it.
//!
//! Rebuild (`open`): every programmed page is read and checked (header CRC and data
//! CRC, so a torn program is ignored). For each lpn the newest valid version by `seq`
//! wins, ties (a page and its merge copy) going to the newer block; a winning trim
//! record unmaps the page. The scheme then claims the blocks of each lbn; an lbn whose
//! blocks are not in a state its merges leave between operations (a merge was cut
//! short) is *normalised* before the next write or trim: its live pages are copied
//! into a fresh data block and its old blocks erased, by the same crash-safe merge.
//! Reads are served from the newest versions meanwhile; `open` itself only reads.
//!
//! Fault model: the emulator's (`nand::FaultyStorage`): a cut tears the operation in
//! flight; everything acknowledged before is durable. After any device error the FTL
//! refuses work until reopened ([`Error::NeedsReopen`]). A worn-out block is such an
//! error: these baselines do not retire blocks.

use super::{device_accessors, Ftl, FtlConfig, FtlCounters, FtlKind, FtlRead};
use crate::error::Error;
use nand::{BlockId, Device, Geometry, OpTiming, Ppn, SimTime, Span};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap};

pub(crate) const NONE: u32 = u32::MAX;
/// Marks a trim record in `owner`.
pub(crate) const TRIM_BIT: u32 = 1 << 31;

// ---- the OOB header ----------------------------------------------------------------

/// Bytes of the OOB header (see `docs/format.md`, "Conventional FTLs").
pub(crate) const HEADER_BYTES: usize = 32;
const VERSION: u8 = 1;
const KIND_DATA: u8 = 0xB0;
const KIND_TRIM: u8 = 0xB7;

/// What a block was opened for (stored in every page it holds).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Role {
    Free,
    /// Pages at their own offset of one lbn (merge destinations, first writes).
    Data,
    /// The log block of one lbn: BAST's log, FAST's sequential log.
    Log,
    /// A FAST random log block shared by all lbns.
    RandomLog,
}

impl Role {
    fn byte(self) -> u8 {
        match self {
            Role::Free => 0xFF,
            Role::Data => 1,
            Role::Log => 2,
            Role::RandomLog => 3,
        }
    }
    fn from_byte(b: u8) -> Option<Role> {
        match b {
            1 => Some(Role::Data),
            2 => Some(Role::Log),
            3 => Some(Role::RandomLog),
            _ => None,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Header {
    pub trim: bool,
    pub role: Role,
    pub lpn: u32,
    pub seq: u64,
    pub bseq: u64,
    pub data_crc: u32,
}

impl Header {
    pub fn encode(&self) -> [u8; HEADER_BYTES] {
        let mut b = [0u8; HEADER_BYTES];
        b[0] = if self.trim { KIND_TRIM } else { KIND_DATA };
        b[1] = self.role.byte();
        b[2] = VERSION;
        b[4..8].copy_from_slice(&self.lpn.to_le_bytes());
        b[8..16].copy_from_slice(&self.seq.to_le_bytes());
        b[16..24].copy_from_slice(&self.bseq.to_le_bytes());
        b[24..28].copy_from_slice(&self.data_crc.to_le_bytes());
        let crc = crc32fast::hash(&b[..28]);
        b[28..32].copy_from_slice(&crc.to_le_bytes());
        b
    }

    /// Decodes a header; `None` if erased, torn or not ours.
    pub fn decode(oob: &[u8]) -> Option<Header> {
        let b = oob.get(..HEADER_BYTES)?;
        let word = |o: usize| u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]);
        let dword = |o: usize| u64::from(word(o)) | u64::from(word(o + 4)) << 32;
        if crc32fast::hash(&b[..28]) != word(28) || b[2] != VERSION || b[3] != 0 {
            return None;
        }
        let trim = match b[0] {
            KIND_DATA => false,
            KIND_TRIM => true,
            _ => return None,
        };
        Some(Header {
            trim,
            role: Role::from_byte(b[1])?,
            lpn: word(4),
            seq: dword(8),
            bseq: dword(16),
            data_crc: word(24),
        })
    }

    /// [`Header::decode`], or the header with one flipped bit put right.
    pub fn decode_or_repair(oob: &[u8]) -> Option<Header> {
        Header::decode(oob).or_else(|| super::repair_one_bit(oob, HEADER_BYTES, Header::decode))
    }

    /// The header of a page as read, if the page is whole.
    pub fn check(data: &[u8], oob: &[u8]) -> Option<Header> {
        let h = Header::decode(oob)?;
        (h.trim || crc32fast::hash(data) == h.data_crc).then_some(h)
    }
}

// ---- the shared state --------------------------------------------------------------

#[derive(Clone, Copy, Debug)]
pub(crate) struct BlockMeta {
    /// What the block was opened as (on flash); the scheme decides its current use.
    pub role: Role,
    pub bseq: u64,
}

/// What a page program writes.
#[derive(Clone, Copy)]
pub(crate) enum Payload<'a> {
    Data(&'a [u8]),
    Trim,
}

/// Mapping state and mechanism shared by the block-mapped FTLs.
pub(crate) struct Core {
    pub dev: Device,
    pub g: Geometry,
    kind: FtlKind,
    pub ppb: u32,
    pub logical_blocks: u32,
    keeps_data: bool,
    /// lbn → data block, or NONE.
    pub data: Vec<u32>,
    /// lpn → ppn of the live version, or NONE.
    pub loc: Vec<u32>,
    /// ppn → lpn (with TRIM_BIT for a trim record) of a valid page, or NONE.
    pub owner: Vec<u32>,
    pub blocks: Vec<BlockMeta>,
    /// (erase count, block) of erased-or-garbage blocks, least worn first.
    free: BinaryHeap<Reverse<(u32, u32)>>,
    /// lpn → ppn of the trim record that is the page's newest event.
    pub tombs: HashMap<u32, u32>,
    next_seq: u64,
    pub counters: FtlCounters,
    poisoned: bool,
    /// lpn → a whole copy of its live version in a newer block than the live page (FAST's
    /// partial merge from a random log block): a rebuild would pick it, so its payload
    /// stays until the version is superseded or copied into a newer block, or its block
    /// is erased (see the module invariants).
    shadows: HashMap<u32, u32>,
    /// lpn → what is wrong with its live version: the rebuild found it damaged although
    /// it completed, so reads fail (never an older version) until the lpn is written or
    /// trimmed. Merges copy such a page as it is.
    corrupt: HashMap<u32, &'static str>,
    /// Lbns the rebuild found mid-merge, with their blocks: normalised before the next
    /// write or trim (so `open` only reads and a cut there cannot lose the device).
    pending: Vec<(u32, Vec<u32>)>,
    /// Issue time of the next device operation within the current host operation.
    clock: SimTime,
    started: Option<SimTime>,
    filler: Box<[u8]>,
}

impl Core {
    /// An FTL over the whole device with every block free; `spare_blocks` are kept
    /// beyond the data blocks (log blocks and merge destinations).
    pub fn new(dev: Device, config: &FtlConfig, spare_blocks: u32) -> Result<Core, Error> {
        let g = dev.geometry().clone();
        let name = config.kind.name();
        if (g.oob_bytes as usize) < HEADER_BYTES {
            return Err(Error::Config(format!(
                "{name} FTL: the device's {}-byte OOB cannot hold the {HEADER_BYTES}-byte page header",
                g.oob_bytes
            )));
        }
        if !(0.0..1.0).contains(&config.over_provisioning) {
            return Err(Error::Config(format!(
                "{name} FTL: over-provisioning {} is not in [0, 1)",
                config.over_provisioning
            )));
        }
        let total = g.total_blocks();
        let logical_blocks = (total as f64 * (1.0 - config.over_provisioning)).floor() as u32;
        if logical_blocks == 0 || logical_blocks.saturating_add(spare_blocks) > total {
            return Err(Error::Config(format!(
                "{name} FTL: {total} blocks cannot hold {logical_blocks} data blocks (over-provisioning {}) plus the {spare_blocks} spare blocks it needs",
                config.over_provisioning
            )));
        }
        let ppb = g.pages_per_block;
        Ok(Core {
            keeps_data: dev.storage().keeps_data(),
            kind: config.kind,
            ppb,
            logical_blocks,
            data: vec![NONE; logical_blocks as usize],
            loc: vec![NONE; (logical_blocks * ppb) as usize],
            owner: vec![NONE; g.total_pages() as usize],
            blocks: vec![BlockMeta { role: Role::Free, bseq: 0 }; total as usize],
            free: BinaryHeap::new(),
            tombs: HashMap::new(),
            shadows: HashMap::new(),
            corrupt: HashMap::new(),
            next_seq: 1,
            counters: FtlCounters::default(),
            poisoned: false,
            pending: Vec::new(),
            clock: 0,
            started: None,
            filler: vec![0xFF; g.raw_page_bytes()].into_boxed_slice(),
            g,
            dev,
        })
    }

    pub fn lbn(&self, lpn: u32) -> u32 {
        lpn / self.ppb
    }
    pub fn offset(&self, lpn: u32) -> u32 {
        lpn % self.ppb
    }
    pub fn ppn(&self, block: u32, page: u32) -> u32 {
        block * self.ppb + page
    }
    /// First page of `block` that may still take a first program.
    pub fn write_pointer(&self, block: u32) -> u32 {
        self.dev.storage().write_pointer(BlockId(block))
    }
    /// True when `ppn` holds the live version of its lpn.
    pub fn is_live(&self, ppn: u32) -> bool {
        let o = self.owner[ppn as usize];
        o & TRIM_BIT == 0 && o != NONE && self.loc[o as usize] == ppn
    }
    /// True when `ppn` holds the trim record that is its lpn's newest event.
    pub fn is_current_trim(&self, ppn: u32) -> bool {
        let o = self.owner[ppn as usize];
        o != NONE && o & TRIM_BIT != 0 && self.tombs.get(&(o & !TRIM_BIT)) == Some(&ppn)
    }

    /// Allocation number of the block holding `ppn`.
    fn bseq_of(&self, ppn: u32) -> u64 {
        self.blocks[(ppn / self.ppb) as usize].bseq
    }

    /// Drops the payload of a data page no rebuild can pick (see the module invariants).
    fn discard(&mut self, ppn: u32) -> Result<(), Error> {
        debug_assert!(self.owner[ppn as usize] & TRIM_BIT == 0 && !self.is_live(ppn));
        self.dev.discard_payload(Ppn(ppn))?;
        Ok(())
    }

    fn check_lpn(&self, lpn: u32) -> Result<(), Error> {
        if self.poisoned {
            return Err(Error::NeedsReopen { region: format!("{} FTL", self.kind.name()) });
        }
        super::check_lpn(self.kind.name(), lpn, self.logical_blocks * self.ppb)
    }

    fn take_seq(&mut self) -> u64 {
        self.next_seq += 1;
        self.next_seq - 1
    }

    // ---- time: the steps of one host operation run one after another ------------

    fn begin(&mut self, now: SimTime) {
        self.clock = now;
        self.started = None;
    }
    fn step(&mut self, t: OpTiming) {
        self.started.get_or_insert(t.start_ns);
        self.clock = t.end_ns;
    }
    fn finish(&self) -> OpTiming {
        OpTiming { start_ns: self.started.unwrap_or(self.clock), end_ns: self.clock }
    }

    // ---- device operations ---------------------------------------------------------

    /// Programs a new version (or trim record) of `lpn` at page `page` of `block` and
    /// makes it the page's newest event.
    pub fn program_new(&mut self, block: u32, page: u32, lpn: u32, payload: Payload) -> Result<u32, Error> {
        let ppn = self.ppn(block, page);
        let meta = self.blocks[block as usize];
        debug_assert!(meta.role != Role::Free && page >= self.write_pointer(block));
        let seq = self.take_seq();
        let pb = self.g.page_bytes as usize;
        let (trim, data) = match payload {
            Payload::Data(d) => (false, d),
            Payload::Trim => (true, &self.filler[..pb]),
        };
        let header = Header { trim, role: meta.role, lpn, seq, bseq: meta.bseq, data_crc: crc32fast::hash(data) };
        let oob = header.encode();
        let result = match (trim, self.keeps_data) {
            (false, true) => self.dev.program(Ppn(ppn), self.clock, &[Span::new(0, data), Span::new(pb, &oob)]),
            (true, true) => self.dev.program(Ppn(ppn), self.clock, &[Span::new(pb, &oob)]),
            (false, false) => self.dev.program(Ppn(ppn), self.clock, &[Span::new(0, &self.filler)]),
            (true, false) => self.dev.program(Ppn(ppn), self.clock, &[Span::new(pb, &self.filler[pb..])]),
        };
        self.step(result?);
        self.counters.flash_programs += 1;
        let old = self.loc[lpn as usize];
        if trim {
            self.owner[ppn as usize] = lpn | TRIM_BIT;
            self.loc[lpn as usize] = NONE;
            self.tombs.insert(lpn, ppn);
        } else {
            self.owner[ppn as usize] = lpn;
            self.loc[lpn as usize] = ppn;
            self.tombs.remove(&lpn);
        }
        // The new event is durable and newer than every version on flash.
        if self.keeps_data {
            if old != NONE {
                self.discard(old)?;
            }
            if let Some(shadow) = self.shadows.remove(&lpn) {
                self.discard(shadow)?;
            }
        }
        Ok(ppn)
    }

    /// Copies the live page `src` to page `page` of `block` (copyback on one chip, read
    /// and program across chips), keeping its lpn and seq, and moves the mapping.
    fn copy(&mut self, src: u32, block: u32, page: u32) -> Result<(), Error> {
        let dst = self.ppn(block, page);
        let lpn = self.owner[src as usize];
        debug_assert!(self.is_live(src));
        let meta = self.blocks[block as usize];
        let pb = self.g.page_bytes as usize;
        let oob = if self.keeps_data {
            let (_, oob) = self.dev.peek(Ppn(src));
            let h = Header::decode_or_repair(oob)
                .ok_or_else(|| Error::Config(format!("{} FTL: live page {src} lost its header", self.kind.name())))?;
            Header { role: meta.role, bseq: meta.bseq, ..h }.encode()
        } else {
            [0xFF; HEADER_BYTES]
        };
        if self.g.chip_of(Ppn(src)) == self.g.chip_of(Ppn(dst)) {
            let t = self.dev.copyback(Ppn(src), Ppn(dst), self.clock, &[Span::new(pb, &oob)])?;
            self.step(t);
        } else {
            let read = self.dev.read(Ppn(src), self.clock)?;
            let (t, data) = (read.timing, read.data.to_vec());
            self.step(t);
            let t = self.dev.program(Ppn(dst), self.clock, &[Span::new(0, &data), Span::new(pb, &oob)])?;
            self.step(t);
        }
        self.counters.flash_reads += 1;
        self.counters.flash_programs += 1;
        self.counters.gc_page_migrations += 1;
        self.owner[dst as usize] = lpn;
        self.loc[lpn as usize] = dst;
        if self.keeps_data {
            // The copy is durable; a source (or shadow) in an older block loses the
            // rebuild's tie to it. Only a random log block outlives this merge.
            let newer = meta.bseq;
            if let Some(&shadow) = self.shadows.get(&lpn) {
                if self.bseq_of(shadow) < newer {
                    self.shadows.remove(&lpn);
                    self.discard(shadow)?;
                }
            }
            if self.blocks[(src / self.ppb) as usize].role == Role::RandomLog {
                if self.bseq_of(src) < newer {
                    self.discard(src)?;
                } else {
                    let previous = self.shadows.insert(lpn, src);
                    debug_assert!(previous.is_none(), "lpn {lpn} has two shadows");
                }
            }
        }
        Ok(())
    }

    /// Copies the live pages of `lbn` at offsets `range` to the same offsets of `block`.
    pub fn copy_live(&mut self, lbn: u32, block: u32, range: std::ops::Range<u32>) -> Result<(), Error> {
        for i in range {
            let src = self.loc[(lbn * self.ppb + i) as usize];
            if src != NONE {
                self.copy(src, block, i)?;
            }
        }
        Ok(())
    }

    /// Opens a block for `role` (least worn first), erasing it first if a cut left
    /// it programmed.
    pub fn allocate(&mut self, role: Role) -> Result<u32, Error> {
        let Some(Reverse((_, block))) = self.free.pop() else {
            return Err(Error::Config(format!("{} FTL: no free block left (mapping bug)", self.kind.name())));
        };
        if self.write_pointer(block) != 0 {
            let t = self.dev.erase(BlockId(block), self.clock)?;
            self.step(t);
            self.counters.gc_erases += 1;
        }
        let bseq = self.take_seq();
        self.blocks[block as usize] = BlockMeta { role, bseq };
        Ok(block)
    }

    /// Erases a block none of whose pages is live and returns it to the free pool.
    /// Trim records it held are no longer needed (see the erase order above).
    pub fn erase(&mut self, block: u32) -> Result<(), Error> {
        debug_assert!((0..self.ppb).all(|i| !self.is_live(self.ppn(block, i))), "erasing a live page");
        let t = self.dev.erase(BlockId(block), self.clock)?;
        self.step(t);
        self.counters.gc_erases += 1;
        self.forget(block);
        Ok(())
    }

    /// Drops the page owners of a block and puts it in the free pool.
    fn forget(&mut self, block: u32) {
        for i in 0..self.ppb {
            let ppn = self.ppn(block, i);
            let o = self.owner[ppn as usize];
            if self.is_current_trim(ppn) {
                self.tombs.remove(&(o & !TRIM_BIT));
            } else if o != NONE && !self.shadows.is_empty() && self.shadows.get(&o) == Some(&ppn) {
                self.shadows.remove(&o);
            }
            self.owner[ppn as usize] = NONE;
        }
        self.blocks[block as usize] = BlockMeta { role: Role::Free, bseq: 0 };
        let erases = self.dev.storage().erase_count(BlockId(block));
        self.free.push(Reverse((erases, block)));
    }

    /// Erases blocks in the safe order: those without trim records first, then the
    /// rest oldest first.
    pub fn erase_all(&mut self, mut blocks: Vec<u32>) -> Result<(), Error> {
        let has_trim = |c: &Core, b: u32| (0..c.ppb).any(|i| c.owner[c.ppn(b, i) as usize] & TRIM_BIT != 0);
        blocks.sort_by_key(|&b| (has_trim(self, b), self.blocks[b as usize].bseq));
        for b in blocks {
            self.erase(b)?;
        }
        Ok(())
    }

    /// Full merge: copies every live page of `lbn` into a fresh data block in page
    /// order and makes it the data block. Returns the old data block (the caller erases
    /// it with the other sources).
    pub fn merge_full(&mut self, lbn: u32) -> Result<u32, Error> {
        let block = self.allocate(Role::Data)?;
        self.copy_live(lbn, block, 0..self.ppb)?;
        self.counters.merges_full += 1;
        Ok(std::mem::replace(&mut self.data[lbn as usize], block))
    }

    /// Normalises the lbns the rebuild found mid-merge: a full merge from the newest
    /// versions into a fresh data block, then their old blocks erased in the safe order.
    fn normalise_pending(&mut self) -> Result<(), Error> {
        while let Some((lbn, old)) = self.pending.last().cloned() {
            debug_assert_eq!(self.data[lbn as usize], NONE);
            self.merge_full(lbn)?;
            self.erase_all(old)?;
            self.pending.pop();
        }
        Ok(())
    }

    /// True when every valid page of `block` is a data page of `lbn` at its own offset
    /// (the block can serve as the data block of `lbn`).
    pub fn data_shaped(&self, block: u32, lbn: u32) -> bool {
        (0..self.ppb).all(|i| {
            let o = self.owner[self.ppn(block, i) as usize];
            o == NONE || o == lbn * self.ppb + i
        })
    }

    /// True when pages 0..k of `block` hold the live versions of offsets 0..k of `lbn`
    /// and nothing else was programmed: the block can become the data block by a
    /// switch (k = P) or partial merge.
    pub fn in_order(&self, block: u32, lbn: u32) -> bool {
        let k = self.write_pointer(block);
        k > 0 && (0..k).all(|i| self.loc[(lbn * self.ppb + i) as usize] == self.ppn(block, i))
    }

    /// Turns log block `block` (in order, see [`Core::in_order`]) into the data block
    /// of `lbn`: a switch merge if it is full, else a partial merge that copies the
    /// remaining live pages into it. Erases the old data block.
    pub fn switch_or_partial(&mut self, lbn: u32, block: u32) -> Result<(), Error> {
        let k = self.write_pointer(block);
        if k == self.ppb {
            self.counters.merges_switch += 1;
        } else {
            self.copy_live(lbn, block, k..self.ppb)?;
            self.counters.merges_partial += 1;
        }
        let old = std::mem::replace(&mut self.data[lbn as usize], block);
        if old != NONE {
            self.erase(old)?;
        }
        Ok(())
    }

    /// Writes `lpn` into its data block if the block's erased tail reaches its offset
    /// (opening a data block for an lbn that has none). `None` when it cannot.
    fn try_direct(&mut self, lpn: u32, payload: Payload) -> Result<Option<u32>, Error> {
        let (lbn, off) = (self.lbn(lpn), self.offset(lpn));
        let mut block = self.data[lbn as usize];
        if matches!(payload, Payload::Trim) || (block != NONE && self.write_pointer(block) > off) {
            return Ok(None);
        }
        if block == NONE {
            block = self.allocate(Role::Data)?;
            self.data[lbn as usize] = block;
        }
        self.program_new(block, off, lpn, payload).map(Some)
    }
}

// ---- the scheme seam -----------------------------------------------------------------

/// Blocks found on flash for one lbn (Data and Log roles), oldest first.
pub(crate) type LbnBlocks = BTreeMap<u32, Vec<u32>>;

/// What distinguishes the block FTL, BAST and FAST.
pub(crate) trait Scheme: Send + Sized + 'static {
    const KIND: FtlKind;
    /// Blocks needed beyond the data blocks.
    fn spare_blocks(config: &FtlConfig) -> Result<u32, Error>;
    fn new(config: &FtlConfig) -> Self;
    /// Writes a page (or trim record) that cannot go into its data block directly.
    fn write_elsewhere(&mut self, core: &mut Core, lpn: u32, payload: Payload) -> Result<(), Error>;
    /// Makes a trim of a mapped page durable.
    fn trim(&mut self, core: &mut Core, lpn: u32) -> Result<(), Error> {
        self.write_elsewhere(core, lpn, Payload::Trim)
    }
    /// Rebuild: claims the blocks found for each lbn and the random log blocks (oldest
    /// first); returns the lbns to normalise with the blocks to erase after.
    fn adopt(&mut self, core: &mut Core, lbns: LbnBlocks, random_logs: Vec<u32>) -> Vec<(u32, Vec<u32>)>;
    /// The log blocks in use (for the invariant check after a rebuild).
    fn log_blocks(&self) -> Vec<u32>;
    /// The heap bytes of the scheme's log-block maps.
    fn mapping_bytes(&self) -> u64;
}

/// An FTL built from the shared core and a scheme.
pub(crate) struct Hybrid<S: Scheme> {
    core: Core,
    scheme: S,
}

/// Lays out a fresh FTL: erases every programmed block.
pub(crate) fn format<S: Scheme>(device: Device, config: &FtlConfig) -> Result<Box<dyn Ftl>, Error> {
    let mut core = Core::new(device, config, S::spare_blocks(config)?)?;
    for b in 0..core.g.total_blocks() {
        if core.write_pointer(b) != 0 {
            core.dev.erase(BlockId(b), 0)?;
        }
        core.forget(b);
    }
    Ok(Box::new(Hybrid { core, scheme: S::new(config) }))
}

/// Rebuilds an FTL from the OOB bytes on flash (see the module comment), starting at
/// `now`; returns it and when the scan ended.
pub(crate) fn open<S: Scheme>(
    device: Device,
    config: &FtlConfig,
    now: SimTime,
) -> Result<(Box<dyn Ftl>, SimTime), Error> {
    let name = config.kind.name();
    if !device.storage().keeps_data() {
        return Err(Error::Config(format!(
            "{name} FTL: a metadata-only device keeps no OOB bytes and cannot be rebuilt"
        )));
    }
    let mut core = Core::new(device, config, S::spare_blocks(config)?)?;
    let mut done = now;
    // Newest (seq, bseq) per lpn.
    let mut newest: Vec<(u64, u64)> = vec![(0, 0); core.loc.len()];
    let mut lbns = LbnBlocks::new();
    let mut random_logs = Vec::new();
    let mut max_seq = 0;
    for b in 0..core.g.total_blocks() {
        let mut found: Option<(Role, u64, u32)> = None;
        for i in 0..core.write_pointer(b) {
            let ppn = core.ppn(b, i);
            if core.dev.storage().program_count(Ppn(ppn)) == 0 {
                continue;
            }
            // Torn only if the durable point says a cut may have interrupted it; any
            // other damaged page completed. (A block here keeps taking programs after a
            // rebuild, so being its last page proves nothing.)
            let tearable = core.dev.may_be_torn(Ppn(ppn));
            // A discarded page was whole when its payload was dropped: its header stands.
            let read = core.dev.scan_read(Ppn(ppn), now)?;
            done = done.max(read.timing.end_ns);
            let header = match read.data {
                Some(data) => Header::check(data, read.oob).map(|h| (h, false)).or_else(|| {
                    (!tearable).then(|| Header::decode_or_repair(read.oob).map(|h| (h, !h.trim))).flatten()
                }),
                None => Header::decode(read.oob).map(|h| (h, false)),
            };
            core.counters.flash_reads += 1;
            let Some((h, damaged)) = header else {
                if tearable {
                    continue;
                }
                return Err(Error::Corrupted {
                    region: format!("{name} FTL"),
                    lpn: None,
                    block: b,
                    page: i,
                    what: "the OOB header is unreadable".into(),
                });
            };
            if h.lpn >= core.loc.len() as u32 {
                continue;
            }
            let lbn = if h.role == Role::RandomLog { NONE } else { h.lpn / core.ppb };
            match found {
                None => found = Some((h.role, h.bseq, lbn)),
                Some(f) if f == (h.role, h.bseq, lbn) => {}
                Some(_) => {
                    return Err(Error::CorruptLayout(format!(
                        "{name} FTL: block {b} holds pages of different allocations or logical blocks"
                    )))
                }
            }
            max_seq = max_seq.max(h.seq).max(h.bseq);
            core.owner[ppn as usize] = if h.trim { h.lpn | TRIM_BIT } else { h.lpn };
            let key = (h.seq, h.bseq);
            if key > newest[h.lpn as usize] {
                newest[h.lpn as usize] = key;
                core.loc[h.lpn as usize] = if h.trim { NONE } else { ppn };
                if damaged {
                    core.corrupt.insert(h.lpn, "the data fails its checksum");
                } else {
                    core.corrupt.remove(&h.lpn);
                }
                if h.trim {
                    core.tombs.insert(h.lpn, ppn);
                } else {
                    core.tombs.remove(&h.lpn);
                }
            }
        }
        match found {
            None => core.forget(b),
            Some((role, bseq, lbn)) => {
                core.blocks[b as usize] = BlockMeta { role, bseq };
                if role == Role::RandomLog {
                    random_logs.push(b);
                } else {
                    lbns.entry(lbn).or_default().push(b);
                }
            }
        }
    }
    core.next_seq = max_seq + 1;
    discard_older_versions(&mut core, &newest)?;
    for blocks in lbns.values_mut() {
        blocks.sort_by_key(|&b| core.blocks[b as usize].bseq);
    }
    random_logs.sort_by_key(|&b| core.blocks[b as usize].bseq);
    let mut scheme = S::new(config);
    core.pending = scheme.adopt(&mut core, lbns, random_logs);
    debug_assert!(
        {
            let mut claimed: Vec<u32> = core.data.iter().copied().filter(|&b| b != NONE).collect();
            claimed.extend(scheme.log_blocks());
            claimed.extend(core.pending.iter().flat_map(|(_, blocks)| blocks.iter().copied()));
            claimed.sort_unstable();
            let in_use: Vec<u32> =
                (0..core.g.total_blocks()).filter(|&b| core.blocks[b as usize].role != Role::Free).collect();
            claimed == in_use
        },
        "after a rebuild every block in use is a data, log or pending block, once"
    );
    Ok((Box::new(Hybrid { core, scheme }), done))
}

/// After the scan: refuses a rebuild whose newest version of a page was discarded (a
/// broken discard rule; mapping it would fail every read), then drops the payload of
/// every data page older than its lpn's newest valid event (an image reloads stale
/// bytes; they can never win a later rebuild, see the module invariants).
fn discard_older_versions(core: &mut Core, newest: &[(u64, u64)]) -> Result<(), Error> {
    let name = core.kind.name();
    for (lpn, &ppn) in core.loc.iter().enumerate() {
        if ppn != NONE && core.dev.storage().payload_discarded(Ppn(ppn)) {
            return Err(Error::CorruptLayout(format!(
                "{name} FTL: the newest version of page {lpn} (ppn {ppn}) has no payload: it was discarded while a rebuild could still need it"
            )));
        }
    }
    for ppn in 0..core.owner.len() as u32 {
        let lpn = core.owner[ppn as usize];
        if lpn == NONE || lpn & TRIM_BIT != 0 || core.loc[lpn as usize] == ppn {
            continue;
        }
        if core.dev.storage().payload_discarded(Ppn(ppn)) {
            continue;
        }
        let seq = Header::decode(core.dev.peek(Ppn(ppn)).1).map_or(u64::MAX, |h| h.seq);
        if seq < newest[lpn as usize].0 {
            core.discard(ppn)?;
        }
    }
    Ok(())
}

impl<S: Scheme> Hybrid<S> {
    /// Runs a mutating operation; a device error poisons the FTL.
    fn run(
        &mut self,
        now: SimTime,
        op: impl FnOnce(&mut Core, &mut S) -> Result<(), Error>,
    ) -> Result<OpTiming, Error> {
        self.core.begin(now);
        match self.core.normalise_pending().and_then(|()| op(&mut self.core, &mut self.scheme)) {
            Ok(()) => Ok(self.core.finish()),
            Err(e) => {
                self.core.poisoned = true;
                Err(e)
            }
        }
    }
}

impl<S: Scheme> Ftl for Hybrid<S> {
    fn kind(&self) -> FtlKind {
        S::KIND
    }
    fn logical_pages(&self) -> u32 {
        self.core.logical_blocks * self.core.ppb
    }
    device_accessors!(core.dev);

    fn read(&mut self, lpn: u32, now: SimTime) -> Result<Option<FtlRead<'_>>, Error> {
        self.core.check_lpn(lpn)?;
        let ppn = self.core.loc[lpn as usize];
        if ppn == NONE {
            return Ok(None);
        }
        if let Some(what) = self.core.corrupt.get(&lpn) {
            return Err(Error::Corrupted {
                region: format!("{} FTL", self.core.kind.name()),
                lpn: Some(lpn),
                block: ppn / self.core.ppb,
                page: ppn % self.core.ppb,
                what: what.to_string(),
            });
        }
        self.core.counters.host_reads += 1;
        self.core.counters.flash_reads += 1;
        match self.core.dev.read(Ppn(ppn), now) {
            Ok(read) => Ok(Some(read.into())),
            Err(e) => {
                self.core.poisoned = true;
                Err(e.into())
            }
        }
    }

    /// On a metadata-only device the payload is not stored and may be empty.
    fn write(&mut self, lpn: u32, data: &[u8], now: SimTime) -> Result<OpTiming, Error> {
        self.core.check_lpn(lpn)?;
        let expected = self.page_bytes();
        if self.core.keeps_data && data.len() != expected {
            return Err(Error::WrongPayloadSize { got: data.len(), expected });
        }
        let timing = self.run(now, |core, scheme| {
            if core.try_direct(lpn, Payload::Data(data))?.is_none() {
                scheme.write_elsewhere(core, lpn, Payload::Data(data))?;
            }
            Ok(())
        })?;
        self.core.corrupt.remove(&lpn);
        self.core.counters.host_writes += 1;
        Ok(timing)
    }

    fn trim(&mut self, lpn: u32, now: SimTime) -> Result<Option<OpTiming>, Error> {
        self.core.check_lpn(lpn)?;
        if self.core.loc[lpn as usize] == NONE {
            return Ok(None);
        }
        let timing = self.run(now, |core, scheme| scheme.trim(core, lpn))?;
        self.core.corrupt.remove(&lpn);
        self.core.counters.host_trims += 1;
        Ok(Some(timing))
    }

    fn counters(&self) -> FtlCounters {
        self.core.counters
    }

    fn mapping_bytes(&self) -> u64 {
        use crate::heap;
        let c = &self.core;
        heap::vec(&c.data)
            + heap::vec(&c.loc)
            + heap::vec(&c.owner)
            + heap::vec(&c.blocks)
            + heap::heap(&c.free)
            + heap::map(&c.tombs)
            + heap::map(&c.shadows)
            + heap::map(&c.corrupt)
            + heap::vec_with(&c.pending, |(_, blocks)| heap::vec(blocks))
            + self.scheme.mapping_bytes()
    }
}
