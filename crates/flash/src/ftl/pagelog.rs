//! The out-of-place page store under the page-mapping FTL and DFTL: allocation striped
//! over every chip of the device (round-robin per stream, keeping the chips' live pages
//! within about a block of each other), tombstones, greedy or cost-benefit GC, OOB format and
//! the rebuild scan. The two FTLs differ only in where the logical-to-physical map lives
//! (controller RAM, or translation pages on flash behind a cache); they plug into the
//! store through [`Remap`], which GC calls for every live page it moves. The host side of
//! their reads, writes and trims is the store's too ([`PageLog::host_read`],
//! [`PageLog::host_program`] with [`PageLog::host_done`], [`PageLog::host_trim`]), and
//! so are their counters: each FTL only updates its map in between.
//!
//! OOB of every page (little-endian; version 1 is 28 bytes, version 2 is 52 bytes and
//! carries a caller's tag, written only by the page FTL's `write_tagged`):
//!
//! ```text
//! offset size field
//!  0      1   kind: 0xDA data page, 0x7B tombstone (trim record), 0x7A translation page,
//!             0x3E remap record (page FTL)
//!  1      1   format version: 1 untagged, 2 tagged
//!  2      2   zero
//!  4      4   id: lpn (data, tombstone), translation page number (translation), 0 (remap)
//!  8      8   seq: write sequence number of the logical write (GC copies keep it)
//! 16      4   gen: migration generation (GC copies add 1)
//! 20      4   crc32 of the page's data bytes (0 for a tombstone, which has none)
//! version 1:
//! 24      4   crc32 of bytes 0..24
//! version 2 (data pages only):
//! 24     24   the caller's tag (a SQLite WAL frame header)
//! 48      4   crc32 of bytes 0..48
//! ```
//!
//! A remap record's data (page FTL, `Ftl::remap`): magic `DFREMAP1`, a u32 count, then
//! per entry the destination lpn (u32) and the seq (u64) of the data page it now reads;
//! the rest of the page is zero. An entry is a candidate of its lpn with the record's
//! own (seq, gen): when it is the lpn's newest, the rebuild maps the lpn to the newest
//! whole copy of the data page with that seq (GC copies keep seq, so the entry stays
//! right however often the page moves).
//!
//! An FTL may put its own OOB bytes right after the header ([`ProgramOptions::tail`]:
//! NoLgn-FTL's transaction metadata); GC copies them unless [`Remap::migrating`] asks
//! for them erased, and the rebuild shows them to the FTL's [`ScanHook`].
//!
//! Invariants:
//! - a physical page is live iff its bit in `live` is set; `valid` of each block counts
//!   its live pages; `owner` remembers what every programmed page holds, live or stale,
//!   until its block is erased;
//! - `copies[lpn]` counts the data pages of `lpn` and the remap-record entries naming
//!   `lpn` on flash, live or stale; a trim's
//!   tombstone stays live while that count is above zero, so a rebuild (newest page per
//!   lpn wins) cannot resurrect trimmed data; once the last old copy is erased the
//!   tombstone dies with it;
//! - a page [`PageLog::retire`]d (dead for good: a newer whole copy of its lpn or
//!   translation page, or a durable trim, supersedes it, so no rebuild reads it) has its
//!   payload discarded on the device ([`nand::Device::discard_payload`]) at the end of
//!   the host operation (of the next one, for pages retired by background GC's
//!   [`Remap::settle`]), and always before any erase, so a queued page is never a later
//!   incarnation of itself. Tombstones, remap records and NoLgn end pages are killed
//!   but keep their bytes: rebuilds read them whole even when dead;
//! - GC copies a victim's live pages (copyback, same seq, gen + 1), erases the victim,
//!   and once the collection (or the run of collections a foreground GC makes) is over,
//!   lets the map owner write what the moves changed where its map lives on flash
//!   ([`Remap::settle`]). A power cut in between loses nothing: the rebuild takes data
//!   from the pages' OOB. Programs are durable when they return (no volatile cache).
//!
//! Fault model: power may fail at any program, copyback or erase (`nand::FaultyStorage`).
//! A torn program fails a CRC and is ignored by the scan, so the lpn falls back to its
//! previous copy; a torn erase leaves a block the scan treats as full of dead pages. After
//! any device error the in-memory state may disagree with flash: the store refuses work
//! ([`Error::NeedsReopen`]) until rebuilt. A worn-out block is not retired: its erase
//! error ends the FTL's life (the baselines are measured far from endurance).

use super::FtlCounters;
use crate::error::Error;
use crate::policy::{BlockSnapshot, BlockState, BlockTable};
use crate::spec::GcConfig;
use nand::{BlockId, Device, Geometry, OpTiming, Ppn, SimTime, Span};
use prefetch_index::prefetch_index;
use rustc_hash::FxHashMap;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// "No page" in maps.
pub(crate) const NONE: u32 = u32::MAX;
/// Bytes of the OOB header (version 1).
pub(crate) const OOB_BYTES: usize = 28;
/// Bytes of a tagged OOB header (version 2).
pub(crate) const TAGGED_OOB_BYTES: usize = 52;
/// A caller's tag in a version-2 header.
pub(crate) use super::TAG_BYTES;
const RECORD_MAGIC: &[u8; 8] = b"DFREMAP1";
/// Bytes of one remap-record entry: destination lpn and target seq.
const RECORD_ENTRY_BYTES: usize = 12;
/// Ids (lpns, translation page numbers) stay below this, so an owner fits in a u32.
const ID_LIMIT: u32 = 1 << 30;
const VERSION: u8 = 1;

/// What a physical page holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Owner {
    Data(u32),
    Tombstone(u32),
    Translation(u32),
    /// A remap record (page FTL); its entries are in the page data.
    Remap,
}

impl Owner {
    fn pack(self) -> u32 {
        match self {
            Owner::Data(id) => id,
            Owner::Tombstone(id) => ID_LIMIT | id,
            Owner::Translation(id) => (2 * ID_LIMIT) | id,
            Owner::Remap => 3 * ID_LIMIT,
        }
    }

    fn unpack(v: u32) -> Option<Owner> {
        let id = v & (ID_LIMIT - 1);
        match v >> 30 {
            0 => Some(Owner::Data(id)),
            1 => Some(Owner::Tombstone(id)),
            2 => Some(Owner::Translation(id)),
            3 if id == 0 => Some(Owner::Remap),
            _ => None,
        }
    }

    fn kind_byte(self) -> u8 {
        match self {
            Owner::Data(_) => 0xDA,
            Owner::Tombstone(_) => 0x7B,
            Owner::Translation(_) => 0x7A,
            Owner::Remap => 0x3E,
        }
    }
}

/// Encodes remap-record entries `(dst lpn, target seq)` into a page.
pub(crate) fn encode_record(entries: &[(u32, u64)], page_bytes: usize) -> Vec<u8> {
    let mut page = vec![0u8; page_bytes];
    page[..8].copy_from_slice(RECORD_MAGIC);
    page[8..12].copy_from_slice(&(entries.len() as u32).to_le_bytes());
    for (i, (dst, seq)) in entries.iter().enumerate() {
        let at = 12 + i * RECORD_ENTRY_BYTES;
        page[at..at + 4].copy_from_slice(&dst.to_le_bytes());
        page[at + 4..at + 12].copy_from_slice(&seq.to_le_bytes());
    }
    page
}

/// Entries a remap record of `page_bytes` holds.
pub(crate) fn record_capacity(page_bytes: usize) -> usize {
    page_bytes.saturating_sub(12) / RECORD_ENTRY_BYTES
}

/// Decodes a remap record's entries; `None` if the bytes are not one.
pub(crate) fn decode_record(page: &[u8]) -> Option<Vec<(u32, u64)>> {
    if page.get(..8)? != RECORD_MAGIC {
        return None;
    }
    let n = u32::from_le_bytes(page.get(8..12)?.try_into().ok()?) as usize;
    (0..n)
        .map(|i| {
            let e = page.get(12 + i * RECORD_ENTRY_BYTES..12 + (i + 1) * RECORD_ENTRY_BYTES)?;
            Some((u32::from_le_bytes(e[..4].try_into().ok()?), u64::from_le_bytes(e[4..].try_into().ok()?)))
        })
        .collect()
}

/// The decoded OOB header of a page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Header {
    pub owner: Owner,
    pub seq: u64,
    pub gen: u32,
    pub data_crc: u32,
    /// The caller's tag of a tagged data page (version 2).
    pub tag: Option<[u8; TAG_BYTES]>,
}

impl Header {
    /// Bytes of this header in the OOB; an FTL's own OOB bytes follow it.
    pub fn oob_bytes(&self) -> usize {
        if self.tag.is_some() {
            TAGGED_OOB_BYTES
        } else {
            OOB_BYTES
        }
    }

    pub fn encode(&self) -> Vec<u8> {
        let len = self.oob_bytes();
        let version = if self.tag.is_some() { 2 } else { VERSION };
        let mut b = vec![0u8; len];
        b[0] = self.owner.kind_byte();
        b[1] = version;
        let id = match self.owner {
            Owner::Data(id) | Owner::Tombstone(id) | Owner::Translation(id) => id,
            Owner::Remap => 0,
        };
        b[4..8].copy_from_slice(&id.to_le_bytes());
        b[8..16].copy_from_slice(&self.seq.to_le_bytes());
        b[16..20].copy_from_slice(&self.gen.to_le_bytes());
        b[20..24].copy_from_slice(&self.data_crc.to_le_bytes());
        if let Some(tag) = &self.tag {
            b[24..48].copy_from_slice(tag);
        }
        let crc = crc32fast::hash(&b[..len - 4]);
        b[len - 4..].copy_from_slice(&crc.to_le_bytes());
        b
    }

    /// Decodes and checks a header; `None` if erased, torn or not an FTL page.
    pub fn decode(oob: &[u8]) -> Option<Header> {
        let len = match oob.get(1)? {
            &VERSION => OOB_BYTES,
            2 => TAGGED_OOB_BYTES,
            _ => return None,
        };
        let b = oob.get(..len)?;
        let u32_at = |o: usize| u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]);
        if crc32fast::hash(&b[..len - 4]) != u32_at(len - 4) || b[2] != 0 || b[3] != 0 {
            return None;
        }
        let id = u32_at(4);
        if id >= ID_LIMIT {
            return None;
        }
        let owner = match b[0] {
            0xDA => Owner::Data(id),
            0x7B => Owner::Tombstone(id),
            0x7A => Owner::Translation(id),
            0x3E if id == 0 => Owner::Remap,
            _ => return None,
        };
        let tag = match (len, owner) {
            (OOB_BYTES, _) => None,
            (_, Owner::Data(_)) => {
                let mut t = [0u8; TAG_BYTES];
                t.copy_from_slice(&b[24..48]);
                Some(t)
            }
            _ => return None,
        };
        let mut seq = [0u8; 8];
        seq.copy_from_slice(&b[8..16]);
        Some(Header { owner, seq: u64::from_le_bytes(seq), gen: u32_at(16), data_crc: u32_at(20), tag })
    }

    /// [`Header::decode`], or the header with one flipped bit put right.
    pub fn decode_or_repair(oob: &[u8]) -> Option<Header> {
        Header::decode(oob).or_else(|| super::repair_one_bit(oob, TAGGED_OOB_BYTES, Header::decode))
    }

    /// Whether a page read whole: its data matches the header's CRC.
    pub fn verifies(&self, data: &[u8]) -> bool {
        match self.owner {
            Owner::Tombstone(_) => self.data_crc == 0,
            Owner::Data(_) | Owner::Translation(_) | Owner::Remap => crc32fast::hash(data) == self.data_crc,
        }
    }
}

/// What [`PageLog::program_with`] writes beyond a plain page.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ProgramOptions<'a> {
    /// A caller's tag in a data page's header (version 2; the page FTL's `write_tagged`,
    /// whose caller checked the device's OOB has room).
    pub tag: Option<&'a [u8; TAG_BYTES]>,
    /// The FTL's own OOB bytes after the header (NoLgn-FTL's transaction metadata).
    pub tail: &'a [u8],
    /// A data page leaves the lpn's tombstone live until [`PageLog::forget_tombstone`]
    /// (a transaction's page, which may still be rolled back).
    pub keep_tombstone: bool,
}

/// The store's view of the map owner, called by GC.
pub(crate) trait Remap {
    /// GC moved the live data, translation or remap-record page `owner` from `src` to
    /// `dst`.
    fn moved(&mut self, owner: Owner, src: Ppn, dst: Ppn);
    /// Called once GC on `chip` is over (its victims erased, no collection running):
    /// write what the moves changed where the map lives on flash (DFTL's batch update),
    /// best on that chip ([`Place::Near`]). Those writes may start GC again;
    /// the store does not call `settle` within `settle`, so that GC's moves are this
    /// call's to write or to leave for the next. Writing them during a collection
    /// instead would let a batch outgrow the victim's free blocks with no GC allowed to
    /// make more.
    fn settle(&mut self, log: &mut PageLog, dev: &mut Device, chip: usize, now: SimTime) -> Result<SimTime, Error>;
    /// Whether GC must pass over `block` (NoLgn-FTL's lock bit: the block holds an old
    /// version a transaction may still roll back to).
    fn locked(&self, _block: u32) -> bool {
        false
    }
    /// GC is about to copy the live page `src` to `dst` (before [`Remap::moved`]);
    /// returns how many OOB bytes after the header the copy clears to 0xFF (0 keeps them).
    fn migrating(&mut self, _log: &mut PageLog, _src: Ppn, _dst: Ppn) -> usize {
        0
    }
    /// GC will soon move a page of `owner`: start loading into the cache what
    /// [`Remap::moved`] will change. Changes nothing.
    fn prefetch_moved(&self, _owner: Owner) {}
}

/// What an FTL adds to the rebuild scan: it sees every decoded header first, then may
/// read more, then says which pages may be an lpn's newest copy.
pub(crate) trait ScanHook {
    fn seen(&mut self, _ppn: Ppn, _header: &Header, _oob: &[u8]) {}
    /// Between the OOB pass and the candidate pass; returns when its reads ended.
    fn between(&mut self, _dev: &mut Device, now: SimTime) -> Result<SimTime, Error> {
        Ok(now)
    }
    fn accept(&self, _ppn: Ppn) -> bool {
        true
    }
}

impl ScanHook for () {}

/// Allocation streams: each chip fills one block per stream, so GC copies (cold) and
/// translation pages (hot) do not share blocks with host writes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Stream {
    Host = 0,
    Gc = 1,
    Translation = 2,
}

/// Which chip [`PageLog::allocate`] takes a page on.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Place {
    /// This chip or none (GC's moves stay on the victim's chip).
    Chip(usize),
    /// This chip if it has room, else as [`Place::Striped`]. DFTL's batch update goes to
    /// the chip GC ran on: its translation pages go stale fast, so that chip's next
    /// victims come cheap, where the same pages striped over every chip cost three
    /// times the GC (`ftl-bench --ftl dftl --blocks-per-chip 1024 --over-provisioning
    /// 0.2`).
    Near(usize),
    /// The first chip of the striping order that has room.
    Striped,
}

#[derive(Clone, Copy, Debug)]
struct Cursor {
    block: u32,
    next: u32,
}

#[derive(Default)]
struct Chip {
    /// (erase count, block in chip), least worn first (dynamic wear levelling).
    free: BinaryHeap<Reverse<(u32, u32)>>,
    open: [Option<Cursor>; 3],
}

/// What a rebuild scan found.
pub(crate) struct Scan {
    /// lpn → ppn of its newest whole data page, NONE if unmapped or trimmed.
    pub data: Vec<u32>,
    /// Translation page number → ppn of its newest whole copy, NONE if none.
    pub translation: Vec<u32>,
    /// (lpn, remap record ppn) for each lpn whose newest state is a remap-record entry
    /// (its `data` entry is then the entry's target page).
    pub via: Vec<(u32, u32)>,
    pub done: SimTime,
}

/// The page store of one FTL over the whole device.
pub(crate) struct PageLog {
    name: &'static str,
    geometry: Geometry,
    keeps_data: bool,
    gc: GcConfig,
    blocks: BlockTable,
    owner: Vec<u32>,
    live: Vec<u64>,
    chips: Vec<Chip>,
    copies: Vec<u32>,
    tombstones: FxHashMap<u32, u32>,
    /// Remap-record ppn → the lpns its entries name (each counted in `copies`).
    records: FxHashMap<u32, Vec<u32>>,
    next_seq: u64,
    /// Next chip of each stream's round-robin. One cursor per stream: with a shared
    /// one, translation writes interleaved with host writes in a fixed rhythm would
    /// steer every host write to the same few chips, whose live data then overflows.
    round_robin: [usize; 3],
    /// Live pages per chip.
    chip_live: Vec<u32>,
    /// Scratch list of the chips an allocation tries, kept so allocating needs no heap.
    order: Vec<usize>,
    /// A victim is being collected: the only allocations are its moves, which run no
    /// GC of their own and may take the chip's last free block.
    collecting: bool,
    /// [`Remap::settle`] is running: GC its writes start leaves its moves to it.
    settling: bool,
    poisoned: bool,
    /// The FTL's counters: the store keeps the host, flash and GC counts, the FTL adds
    /// its own (remaps, translation pages, transaction copies). A GC copyback counts as
    /// one read (the array read into the page register) and one program; tombstones,
    /// remap records and translation pages count as programs. `gc_lock_migrations`:
    /// valid pages GC copied beyond what the policy's own victim held, because that
    /// victim was locked (NoLgn-FTL; 0 for FTLs without lock bits).
    pub counters: FtlCounters,
    /// 0xFF bytes standing in for payloads on a metadata-only device.
    filler: Box<[u8]>,
    /// Retired pages whose payloads the device has not been told to discard yet.
    retired: Vec<u32>,
    /// Live pages the rebuild found corrupt (the newest copy of their lpn, damaged
    /// although they completed), and what is wrong: host reads of them fail. A page
    /// leaves the set when it dies (its lpn rewritten or trimmed); GC moves the entry
    /// with the page.
    corrupt: FxHashMap<u32, &'static str>,
}

impl PageLog {
    /// The heap bytes of the store's owner map, block table and scratch.
    pub fn mapping_bytes(&self) -> u64 {
        use crate::heap;
        heap::vec(&self.owner)
            + heap::vec(&self.live)
            + self.blocks.heap_bytes()
            + heap::vec_with(&self.chips, |c| heap::heap(&c.free))
            + heap::vec(&self.copies)
            + heap::map(&self.tombstones)
            + heap::map_with(&self.records, heap::vec)
            + heap::vec(&self.chip_live)
            + heap::vec(&self.order)
            + heap::boxed(&self.filler)
            + heap::vec(&self.retired)
    }

    /// Physical pages a store over `geometry` leaves for logical pages and translation
    /// pages, after over-provisioning; refuses settings GC cannot live with. `streams`
    /// is how many allocation streams the FTL writes (2, or 3 with translation pages):
    /// each keeps an open block per chip, beside the free blocks foreground GC keeps.
    pub fn capacity(name: &str, geometry: &Geometry, op: f64, gc: &GcConfig, streams: u32) -> Result<u64, Error> {
        if !(0.0..1.0).contains(&op) {
            return Err(Error::Config(format!("{name} FTL: over-provisioning {op} must be in [0, 1)")));
        }
        if gc.foreground_free_blocks < 2 || gc.background_free_blocks < gc.foreground_free_blocks {
            return Err(Error::Config(format!(
                "{name} FTL: GC thresholds foreground {} / background {} free blocks: foreground must be at least 2 (a victim's moves may need a new GC block, and the writes after the collection another) and background at least foreground",
                gc.foreground_free_blocks, gc.background_free_blocks
            )));
        }
        if (geometry.oob_bytes as usize) < OOB_BYTES {
            return Err(Error::Config(format!(
                "{name} FTL: the device's {}-byte OOB cannot hold the {OOB_BYTES}-byte page header",
                geometry.oob_bytes
            )));
        }
        let total = geometry.total_pages() as u64;
        let logical = (total as f64 * (1.0 - op)).floor() as u64;
        let per_chip = gc.foreground_free_blocks as u64 + streams as u64;
        let reserve = geometry.chips() as u64 * per_chip * geometry.pages_per_block as u64;
        if total - logical < reserve {
            return Err(Error::Config(format!(
                "{name} FTL: over-provisioning {op:.3} leaves {} spare pages; GC needs at least {reserve} ({per_chip} blocks per chip: {} free for foreground GC and one open block for each of {streams} write streams)",
                total - logical,
                gc.foreground_free_blocks
            )));
        }
        if logical == 0 || logical >= ID_LIMIT as u64 {
            return Err(Error::Config(format!("{name} FTL: {logical} logical pages (must be 1..{ID_LIMIT})")));
        }
        Ok(logical)
    }

    fn empty(name: &'static str, dev: &Device, gc: GcConfig, logical_pages: u32) -> PageLog {
        let geometry = dev.geometry().clone();
        let (chips, bpc, ppb) = (geometry.chips() as usize, geometry.blocks_per_chip, geometry.pages_per_block);
        PageLog {
            name,
            keeps_data: dev.storage().keeps_data(),
            gc,
            blocks: BlockTable::new(chips, bpc, ppb),
            owner: vec![NONE; geometry.total_pages() as usize],
            live: vec![0; (geometry.total_pages() as usize).div_ceil(64)],
            chips: (0..geometry.chips()).map(|_| Chip::default()).collect(),
            copies: vec![0; logical_pages as usize],
            tombstones: FxHashMap::default(),
            records: FxHashMap::default(),
            order: Vec::new(),
            next_seq: 1,
            round_robin: [0; 3],
            chip_live: vec![0; geometry.chips() as usize],
            collecting: false,
            settling: false,
            poisoned: false,
            counters: FtlCounters::default(),
            filler: vec![0xFF; geometry.page_bytes as usize].into_boxed_slice(),
            retired: Vec::new(),
            corrupt: FxHashMap::default(),
            geometry,
        }
    }

    /// A store with every block erased and free (blocks not erased are erased at `now`).
    pub fn format(
        name: &'static str,
        dev: &mut Device,
        gc: GcConfig,
        logical_pages: u32,
        now: SimTime,
    ) -> Result<PageLog, Error> {
        let mut log = PageLog::empty(name, dev, gc, logical_pages);
        for b in 0..log.geometry.total_blocks() {
            if dev.storage().write_pointer(BlockId(b)) != 0 {
                dev.erase(BlockId(b), now)?;
            }
            log.release_block(dev, b);
        }
        Ok(log)
    }

    /// Rebuilds a store by scanning every programmed page's OOB, then verifying the
    /// candidates of each lpn and translation page newest first (a full read checks the
    /// data CRC). Returns the store and what the scan found.
    pub fn rebuild(
        name: &'static str,
        dev: &mut Device,
        gc: GcConfig,
        logical_pages: u32,
        translation_pages: u32,
        now: SimTime,
    ) -> Result<(PageLog, Scan), Error> {
        PageLog::rebuild_with(name, dev, gc, logical_pages, translation_pages, &mut (), now)
    }

    /// [`PageLog::rebuild`] with an FTL's scan hook.
    pub fn rebuild_with<H: ScanHook>(
        name: &'static str,
        dev: &mut Device,
        gc: GcConfig,
        logical_pages: u32,
        translation_pages: u32,
        hook: &mut H,
        now: SimTime,
    ) -> Result<(PageLog, Scan), Error> {
        if !dev.storage().keeps_data() {
            return Err(Error::Config(format!(
                "{name} FTL: a metadata-only device keeps no OOB bytes and cannot be rebuilt"
            )));
        }
        let mut log = PageLog::empty(name, dev, gc, logical_pages);
        let mut done = now;
        // (key: lpn, or 2^32 + translation page number; newest first by (seq, gen); ppn;
        // for a remap-record entry the seq of its target data page, else 0)
        type Candidate = (u64, Reverse<(u64, u32)>, u32, u64);
        let mut candidates: Vec<Candidate> = Vec::new();
        // Data pages by seq, for remap-record entries: (gen, ppn).
        let mut by_seq: FxHashMap<u64, Vec<(u32, u32)>> = FxHashMap::default();
        let mut max_seq = 0;
        let ppb = log.geometry.pages_per_block;
        // Per block, its last programmed page: the only one a cut can have torn.
        let mut last_in_block = vec![NONE; log.geometry.total_blocks() as usize];
        for b in 0..log.geometry.total_blocks() {
            let block = BlockId(b);
            if dev.storage().write_pointer(block) == 0 {
                log.release_block(dev, b);
                continue;
            }
            log.blocks.set_state(b as usize, BlockState::Full);
            log.blocks.set_erase_count(b as usize, dev.storage().erase_count(block));
            let last = (0..ppb).rev().map(|i| log.geometry.ppn(block, i)).find(|&p| dev.storage().program_count(p) > 0);
            last_in_block[b as usize] = last.map_or(NONE, |p| p.0);
            for i in 0..ppb {
                let ppn = log.geometry.ppn(block, i);
                if dev.storage().program_count(ppn) == 0 {
                    continue;
                }
                let tearable = Some(ppn) == last && dev.may_be_torn(ppn);
                let (timing, oob) = dev.read_oob(ppn, now)?;
                done = done.max(timing.end_ns);
                let h = match Header::decode(oob) {
                    Some(h) => h,
                    None if tearable => continue,
                    None => match Header::decode_or_repair(oob) {
                        Some(h) => h,
                        None => return Err(log.corrupted(None, ppn, "the OOB header is unreadable")),
                    },
                };
                hook.seen(ppn, &h, oob);
                let key = match h.owner {
                    Owner::Data(lpn) | Owner::Tombstone(lpn) if lpn < logical_pages => lpn as u64,
                    Owner::Translation(t) if t < translation_pages => (1 << 32) | t as u64,
                    Owner::Remap => {
                        // Its entries are in the data: read it whole (a torn record
                        // never returned, so none of its remaps happened).
                        let read = dev.read(ppn, now)?;
                        done = done.max(read.timing.end_ns);
                        if !h.verifies(read.data) && !tearable {
                            return Err(log.corrupted(None, ppn, "a remap record fails its checksum"));
                        }
                        let Some(entries) = h.verifies(read.data).then(|| decode_record(read.data)).flatten() else {
                            continue;
                        };
                        let mut dsts = Vec::with_capacity(entries.len());
                        for &(dst, target) in entries.iter().filter(|e| e.0 < logical_pages && e.1 != 0) {
                            log.copies[dst as usize] += 1;
                            dsts.push(dst);
                            candidates.push((dst as u64, Reverse((h.seq, h.gen)), ppn.0, target));
                        }
                        log.records.insert(ppn.0, dsts);
                        NONE as u64
                    }
                    _ => continue,
                };
                if let Owner::Data(lpn) = h.owner {
                    log.copies[lpn as usize] += 1;
                    by_seq.entry(h.seq).or_default().push((h.gen, ppn.0));
                }
                log.owner[ppn.0 as usize] = h.owner.pack();
                let last = log.blocks[b as usize].last_write_seq.max(h.seq);
                log.blocks.set_last_write_seq(b as usize, last);
                max_seq = max_seq.max(h.seq);
                if key != NONE as u64 {
                    candidates.push((key, Reverse((h.seq, h.gen)), ppn.0, 0));
                }
            }
        }
        for copies in by_seq.values_mut() {
            copies.sort_unstable_by_key(|&(gen, _)| Reverse(gen));
        }
        done = done.max(hook.between(dev, done)?);
        candidates.sort_unstable();
        let mut scan = Scan {
            data: vec![NONE; logical_pages as usize],
            translation: vec![NONE; translation_pages as usize],
            via: Vec::new(),
            done,
        };
        // A page that fails its check was torn only if it is its block's last programmed
        // page and the device's durable point says a cut may have interrupted it.
        let tearable = |dev: &Device, p: u32| {
            last_in_block[dev.geometry().block_of(Ppn(p)).0 as usize] == p && dev.may_be_torn(Ppn(p))
        };
        for group in candidates.chunk_by(|a, b| a.0 == b.0) {
            for &(key, _, ppn, target) in group {
                if !hook.accept(Ppn(ppn)) {
                    continue;
                }
                if target != 0 {
                    // A remap entry: the lpn reads the newest whole copy of its target,
                    // or fails if that copy completed and was damaged since.
                    let mut found = None;
                    for &(_, p) in by_seq.get(&target).map_or(&[][..], |v| v.as_slice()) {
                        let torn = tearable(dev, p);
                        let read = dev.read(Ppn(p), now)?;
                        scan.done = scan.done.max(read.timing.end_ns);
                        let Some(h) = Header::decode_or_repair(read.oob).filter(|h| h.seq == target) else { continue };
                        if h.verifies(read.data) || !torn {
                            if !h.verifies(read.data) {
                                log.corrupt.insert(p, "the data fails its checksum");
                            }
                            found = Some(p);
                            break;
                        }
                    }
                    let Some(p) = found else { continue };
                    scan.data[key as usize] = p;
                    scan.via.push((key as u32, ppn));
                    for page in [Ppn(p), Ppn(ppn)] {
                        if !log.is_live(page) {
                            log.mark_live(page);
                        }
                    }
                    break;
                }
                let torn = tearable(dev, ppn);
                let read = dev.read(Ppn(ppn), now)?;
                scan.done = scan.done.max(read.timing.end_ns);
                let header = Header::decode_or_repair(read.oob);
                let Some(h) = header.filter(|h| h.verifies(read.data)) else {
                    match header.map(|h| h.owner) {
                        _ if torn => continue,
                        Some(Owner::Data(lpn)) => {
                            // Completed and damaged since: the lpn reads an error, never
                            // an older copy.
                            scan.data[lpn as usize] = ppn;
                            log.corrupt.insert(ppn, "the data fails its checksum");
                            if !log.is_live(Ppn(ppn)) {
                                log.mark_live(Ppn(ppn));
                            }
                            break;
                        }
                        Some(Owner::Translation(t)) => {
                            return Err(log.corrupted(
                                None,
                                Ppn(ppn),
                                &format!("translation page {t} fails its checksum"),
                            ))
                        }
                        _ => return Err(log.corrupted(None, Ppn(ppn), "the page fails its checksum")),
                    }
                };
                match h.owner {
                    Owner::Data(lpn) => scan.data[lpn as usize] = ppn,
                    Owner::Tombstone(lpn) => {
                        if log.copies[lpn as usize] == 0 {
                            break;
                        }
                        log.tombstones.insert(lpn, ppn);
                    }
                    Owner::Translation(t) => scan.translation[t as usize] = ppn,
                    Owner::Remap => continue,
                }
                // A data page may already be live as a remap entry's target.
                if !log.is_live(Ppn(ppn)) {
                    log.mark_live(Ppn(ppn));
                }
                break;
            }
        }
        log.next_seq = max_seq + 1;
        Ok((log, scan))
    }

    // ---- accessors and bookkeeping ----------------------------------------------------

    pub fn geometry(&self) -> &Geometry {
        &self.geometry
    }

    pub fn keeps_data(&self) -> bool {
        self.keeps_data
    }

    pub fn page_bytes(&self) -> usize {
        self.geometry.page_bytes as usize
    }

    /// Logical pages of the FTL over this store.
    pub fn logical_pages(&self) -> u32 {
        self.copies.len() as u32
    }

    /// Refuses work after a device error, and a logical page beyond the FTL's capacity.
    pub fn check_lpn(&self, lpn: u32) -> Result<(), Error> {
        self.check_usable()?;
        super::check_lpn(self.name, lpn, self.logical_pages())
    }

    /// Refuses work after a device error, until the FTL is reopened.
    pub fn check_usable(&self) -> Result<(), Error> {
        if self.poisoned {
            return Err(Error::NeedsReopen { region: format!("{} FTL", self.name) });
        }
        Ok(())
    }

    /// Poisons the store on a device error (its state may now disagree with flash).
    pub fn device_error(&mut self, e: nand::Error) -> Error {
        self.poisoned = true;
        Error::Device(e)
    }

    /// Wraps an error from an operation that may have left flash and RAM apart.
    pub fn poison(&mut self, e: Error) -> Error {
        self.poisoned = true;
        e
    }

    /// Makes a programmed page live again (NoLgn-FTL keeps a commit's witness page).
    pub fn revive(&mut self, ppn: Ppn) {
        self.mark_live(ppn);
    }

    /// The live tombstone of a trimmed lpn.
    pub fn tombstone(&self, lpn: u32) -> Option<Ppn> {
        self.tombstones.get(&lpn).map(|&p| Ppn(p))
    }

    /// Kills an lpn's tombstone: a data page kept out of [`PageLog::program_with`]'s
    /// reach (a transaction's) now supersedes it.
    pub fn forget_tombstone(&mut self, lpn: u32) {
        if let Some(t) = self.tombstones.remove(&lpn) {
            self.kill(Ppn(t));
        }
    }

    fn mark_live(&mut self, ppn: Ppn) {
        debug_assert!(!self.is_live(ppn), "page {ppn:?} is already live");
        let i = ppn.0 as usize;
        self.live[i / 64] |= 1 << (i % 64);
        self.blocks.add_valid(self.geometry.block_of(ppn).0 as usize);
        self.chip_live[self.geometry.chip_of(ppn) as usize] += 1;
    }

    /// The error for a damaged page that completed (`lpn` when known).
    fn corrupted(&self, lpn: Option<u32>, ppn: Ppn, what: &str) -> Error {
        let block = self.geometry.block_of(ppn);
        Error::Corrupted {
            region: format!("{} FTL", self.name),
            lpn,
            block: block.0,
            page: self.geometry.page_in_block(ppn),
            what: what.into(),
        }
    }

    /// Marks a page stale (its lpn or translation page moved on).
    pub fn kill(&mut self, ppn: Ppn) {
        debug_assert!(self.is_live(ppn), "page {ppn:?} is not live");
        if !self.corrupt.is_empty() {
            self.corrupt.remove(&ppn.0);
        }
        let i = ppn.0 as usize;
        self.live[i / 64] &= !(1 << (i % 64));
        self.blocks.sub_valid(self.geometry.block_of(ppn).0 as usize);
        self.chip_live[self.geometry.chip_of(ppn) as usize] -= 1;
    }

    /// Starts loading what retiring `ppn` will touch: its live bit, its block's entry
    /// and, with page bytes, the device's cell of it (a hint; changes nothing).
    pub fn prefetch_old_copy(&self, dev: &Device, ppn: Ppn) {
        prefetch_index(&self.live, ppn.0 as usize / 64);
        self.blocks.prefetch(self.geometry.block_of(ppn).0 as usize);
        if self.keeps_data {
            dev.prefetch_page(ppn);
        }
    }

    /// Starts loading the victim-index word retiring `ppn` moves its block between (its
    /// block's entry should be in the cache: see [`PageLog::prefetch_old_copy`]).
    pub fn prefetch_bucket(&self, ppn: Ppn) {
        self.blocks.prefetch_bucket(self.geometry.block_of(ppn).0 as usize);
    }

    /// Kills a page that is dead for good: no rebuild will read it (a newer whole copy
    /// of what it holds supersedes it), so its payload is discarded on the device at
    /// the end of the host operation (see the module invariants).
    pub fn retire(&mut self, ppn: Ppn) {
        self.kill(ppn);
        if self.keeps_data {
            self.retired.push(ppn.0);
        }
    }

    /// Tells the device to discard the payloads of the pages retired since the last
    /// call. Runs before every erase, so none of them has been erased since it died.
    fn discard_retired(&mut self, dev: &mut Device) -> Result<(), Error> {
        for ppn in self.retired.drain(..) {
            dev.discard_payload(Ppn(ppn)).map_err(|e| {
                self.poisoned = true;
                Error::Device(e)
            })?;
        }
        Ok(())
    }

    /// What a programmed page holds (until its block is erased).
    pub fn owner_of(&self, ppn: Ppn) -> Option<Owner> {
        Owner::unpack(self.owner[ppn.0 as usize])
    }

    pub fn is_live(&self, ppn: Ppn) -> bool {
        let i = ppn.0 as usize;
        self.live[i / 64] & (1 << (i % 64)) != 0
    }

    fn release_block(&mut self, dev: &Device, b: u32) {
        let erase_count = dev.storage().erase_count(BlockId(b));
        self.blocks
            .set(b as usize, BlockSnapshot { state: BlockState::Free, valid: 0, erase_count, last_write_seq: 0 });
        let chip = self.geometry.chip_of_block(BlockId(b));
        self.chips[chip as usize].free.push(Reverse((erase_count, b % self.geometry.blocks_per_chip)));
    }

    // ---- writes -----------------------------------------------------------------------

    /// Takes the next page of `stream`, placed as `place` says. Outside GC this may
    /// first collect on the chip (foreground GC), then let the map owner write what GC
    /// moved ([`Remap::settle`]); the page is ready when both have finished, the
    /// returned time.
    pub fn allocate<R: Remap>(
        &mut self,
        dev: &mut Device,
        remap: &mut R,
        stream: Stream,
        place: Place,
        now: SimTime,
    ) -> Result<(Ppn, SimTime), Error> {
        self.check_usable()?;
        let page = match place {
            Place::Chip(c) => self.page_on(dev, remap, c, stream, now)?,
            Place::Near(c) => match self.page_on(dev, remap, c, stream, now)? {
                Some(page) => Some(page),
                None => self.striped(dev, remap, stream, now)?,
            },
            Place::Striped => self.striped(dev, remap, stream, now)?,
        };
        page.ok_or_else(|| Error::RegionFull { region: format!("{} FTL", self.name) })
    }

    /// A page of `stream` on the first chip of the striping order that has one.
    fn striped<R: Remap>(
        &mut self,
        dev: &mut Device,
        remap: &mut R,
        stream: Stream,
        now: SimTime,
    ) -> Result<Option<(Ppn, SimTime)>, Error> {
        let limit = self.near_full_pages();
        if self.chip_live.iter().all(|&live| u64::from(live) <= limit) {
            // No chip is near full (nearly always): the order is the round robin itself.
            let (chips, start) = (self.chips.len(), self.round_robin[stream as usize]);
            return self.first_page_of(dev, remap, stream, now, (0..chips).map(|i| (start + i) % chips));
        }
        // Taken out of `self` while in use (`page_on` needs `&mut self`), put back after.
        let mut order = std::mem::take(&mut self.order);
        order.clear();
        self.striping_order(stream, limit, &mut order);
        let result = self.first_page_of(dev, remap, stream, now, order.iter().copied());
        self.order = order;
        result
    }

    /// A page of `stream` on the first of `chips` that has one; that chip's successor
    /// is where the stream's next striped write starts.
    fn first_page_of<R: Remap>(
        &mut self,
        dev: &mut Device,
        remap: &mut R,
        stream: Stream,
        now: SimTime,
        chips: impl Iterator<Item = usize>,
    ) -> Result<Option<(Ppn, SimTime)>, Error> {
        for c in chips {
            let result = self.page_on(dev, remap, c, stream, now);
            if let Ok(Some(_)) = result {
                self.round_robin[stream as usize] = (c + 1) % self.chips.len();
            }
            if !matches!(result, Ok(None)) {
                return result;
            }
        }
        Ok(None)
    }

    /// The live pages above which a chip is near full: its live pages leave it less
    /// spare room than GC needs (its foreground free blocks, an open block per stream
    /// and one more).
    fn near_full_pages(&self) -> u64 {
        let ppb = self.geometry.pages_per_block as u64;
        let streams = Stream::Translation as u64 + 1;
        let reserve_blocks = self.gc.foreground_free_blocks as u64 + streams + 1;
        (self.geometry.blocks_per_chip as u64).saturating_sub(reserve_blocks) * ppb
    }

    /// The chips a striped write tries, in order: round-robin from the stream's cursor,
    /// but a chip near full (more live pages than `limit`, [`PageLog::near_full_pages`])
    /// comes after the others. GC moves pages only within a chip, so the chips' live
    /// data drifts apart (each lpn lands on whichever chip the stripe was at), and
    /// without this the fullest chip runs out of room while the others have plenty.
    /// Only chips near full are passed over: balancing all of them against each other
    /// concentrates the writes on a few chips and costs a third of the throughput
    /// (TPC-C on the page FTL).
    fn striping_order(&self, stream: Stream, limit: u64, order: &mut Vec<usize>) {
        let chips = self.chips.len();
        let start = self.round_robin[stream as usize];
        let near_full = |c: &usize| self.chip_live[*c] as u64 > limit;
        let round = (0..chips).map(|i| (start + i) % chips);
        order.extend(round.clone().filter(|c| !near_full(c)));
        order.extend(round.filter(near_full));
    }

    /// The next page of `stream` on `chip`, after foreground GC (and the map owner's
    /// [`Remap::settle`]) if the stream needs a new block and the chip is low on free
    /// ones.
    fn page_on<R: Remap>(
        &mut self,
        dev: &mut Device,
        remap: &mut R,
        chip: usize,
        stream: Stream,
        now: SimTime,
    ) -> Result<Option<(Ppn, SimTime)>, Error> {
        let s = stream as usize;
        let mut ready = now;
        if self.chips[chip].open[s].is_none() && !self.collecting {
            let mut collected = false;
            // Bounded: a collection that frees nothing net cannot loop forever.
            for _ in 0..self.geometry.blocks_per_chip {
                if self.chips[chip].free.len() > self.gc.foreground_free_blocks as usize {
                    break;
                }
                match self.collect(dev, remap, chip, ready)? {
                    Some(end) => (ready, collected) = (end, true),
                    None => break,
                }
            }
            if collected {
                ready = self.settle(dev, remap, chip, ready)?;
            }
        }
        if self.chips[chip].open[s].is_none() {
            // A chip's last free block is kept for its own GC to move pages into.
            let reserve = if self.collecting && stream == Stream::Gc { 0 } else { 1 };
            if self.chips[chip].free.len() <= reserve {
                return Ok(None);
            }
            let Some(Reverse((_, b))) = self.chips[chip].free.pop() else { return Ok(None) };
            let block = self.geometry.block_id(chip as u32, b).0;
            self.blocks.set_state(block as usize, BlockState::Active);
            self.chips[chip].open[s] = Some(Cursor { block, next: 0 });
        }
        let ppb = self.geometry.pages_per_block;
        let slot = &mut self.chips[chip].open[s];
        let Some(cursor) = slot.as_mut() else { return Ok(None) };
        let (block, index) = (cursor.block, cursor.next);
        cursor.next += 1;
        if cursor.next == ppb {
            *slot = None;
            self.blocks.set_state(block as usize, BlockState::Full);
        }
        Ok(Some((self.geometry.ppn(BlockId(block), index), ready)))
    }

    /// Programs an allocated page with `owner`'s bytes (a tombstone has none) and a
    /// fresh sequence number, and makes it live. A data page supersedes the lpn's
    /// tombstone; a tombstone is remembered until the lpn's last old copy is erased.
    /// The caller kills the page this one replaces.
    pub fn program(
        &mut self,
        dev: &mut Device,
        ppn: Ppn,
        owner: Owner,
        data: &[u8],
        now: SimTime,
    ) -> Result<OpTiming, Error> {
        self.program_with(dev, ppn, owner, data, ProgramOptions::default(), now)
    }

    /// [`PageLog::program`] with `options` (a tag, OOB bytes after the header, a kept
    /// tombstone). A remap record's entries count as copies of their lpns and supersede
    /// their tombstones.
    pub fn program_with(
        &mut self,
        dev: &mut Device,
        ppn: Ppn,
        owner: Owner,
        data: &[u8],
        options: ProgramOptions<'_>,
        now: SimTime,
    ) -> Result<OpTiming, Error> {
        let seq = self.next_seq;
        self.next_seq += 1;
        let page_bytes = self.page_bytes();
        let result = if !self.keeps_data {
            let len = if matches!(owner, Owner::Tombstone(_)) { 0 } else { page_bytes };
            dev.program(ppn, now, &[Span::new(0, &self.filler[..len]), Span::new(page_bytes, &[0xFF; OOB_BYTES])])
        } else {
            let data_crc = if matches!(owner, Owner::Tombstone(_)) { 0 } else { crc32fast::hash(data) };
            let mut oob = Header { owner, seq, gen: 0, data_crc, tag: options.tag.copied() }.encode();
            oob.extend_from_slice(options.tail);
            dev.program(ppn, now, &[Span::new(0, data), Span::new(page_bytes, &oob)])
        };
        let timing = result.map_err(|e| self.device_error(e))?;
        self.counters.flash_programs += 1;
        match owner {
            Owner::Data(lpn) => {
                self.copies[lpn as usize] += 1;
                if !options.keep_tombstone {
                    self.forget_tombstone(lpn);
                }
            }
            Owner::Tombstone(lpn) => {
                if let Some(t) = self.tombstones.insert(lpn, ppn.0) {
                    self.kill(Ppn(t));
                }
            }
            Owner::Translation(_) => {}
            Owner::Remap => {
                let dsts: Vec<u32> = decode_record(data).unwrap_or_default().iter().map(|e| e.0).collect();
                for &lpn in &dsts {
                    self.copies[lpn as usize] += 1;
                    self.forget_tombstone(lpn);
                }
                self.records.insert(ppn.0, dsts);
            }
        }
        self.owner[ppn.0 as usize] = owner.pack();
        self.mark_live(ppn);
        self.blocks.set_last_write_seq(self.geometry.block_of(ppn).0 as usize, seq);
        Ok(timing)
    }

    /// Reads a page for the FTL (host data or a translation page).
    pub fn read<'d>(&mut self, dev: &'d mut Device, ppn: Ppn, now: SimTime) -> Result<nand::PageRead<'d>, Error> {
        self.counters.flash_reads += 1;
        match dev.read(ppn, now) {
            Ok(r) => Ok(r),
            Err(e) => {
                self.poisoned = true;
                Err(Error::Device(e))
            }
        }
    }

    // ---- host operations: what the FTLs over the store do alike ------------------------

    /// A host read of the page the FTL's map names for it, `ppn` (NONE when unmapped or
    /// trimmed: `None`, nothing read).
    pub fn host_read<'d>(
        &mut self,
        dev: &'d mut Device,
        ppn: u32,
        now: SimTime,
    ) -> Result<Option<nand::PageRead<'d>>, Error> {
        self.counters.host_reads += 1;
        if ppn == NONE {
            return Ok(None);
        }
        if let Some(what) = self.corrupt.get(&ppn) {
            let lpn = match self.owner_of(Ppn(ppn)) {
                Some(Owner::Data(lpn) | Owner::Tombstone(lpn)) => Some(lpn),
                _ => None,
            };
            return Err(self.corrupted(lpn, Ppn(ppn), what));
        }
        self.read(dev, Ppn(ppn), now).map(Some)
    }

    /// Allocates a page on the host stream (foreground GC may run first) and programs
    /// `owner`'s bytes into it. The caller then updates its map (after this: the
    /// allocation's GC may have moved the page the map named) and calls
    /// [`PageLog::host_done`].
    pub fn host_program<R: Remap>(
        &mut self,
        dev: &mut Device,
        map: &mut R,
        owner: Owner,
        data: &[u8],
        options: ProgramOptions<'_>,
        now: SimTime,
    ) -> Result<(Ppn, OpTiming), Error> {
        let (ppn, ready) = self.allocate(dev, map, Stream::Host, Place::Striped, now)?;
        let timing = self.program_with(dev, ppn, owner, data, options, ready)?;
        Ok((ppn, timing))
    }

    /// Ends a host operation whose page [`PageLog::host_program`] wrote at `ppn`: counts
    /// a data page as a host write and a tombstone as a host trim, then runs background
    /// GC on the page's chip from `end`, when the program ended.
    pub fn host_done<R: Remap>(&mut self, dev: &mut Device, map: &mut R, ppn: Ppn, end: SimTime) -> Result<(), Error> {
        self.discard_retired(dev)?;
        match self.owner_of(ppn) {
            Some(Owner::Data(_)) => self.counters.host_writes += 1,
            Some(Owner::Tombstone(_)) => self.counters.host_trims += 1,
            _ => {}
        }
        let chip = self.geometry.chip_of(ppn) as usize;
        self.background_gc(dev, map, chip, end)
    }

    /// A host trim of `lpn`, which the map points at `old`: nothing when `old` is NONE,
    /// else a tombstone, then `unmap` takes `lpn` out of the map (after the tombstone's
    /// allocation, so from wherever its GC moved the page), then background GC.
    pub fn host_trim<R: Remap>(
        &mut self,
        dev: &mut Device,
        map: &mut R,
        lpn: u32,
        old: u32,
        now: SimTime,
        unmap: impl FnOnce(&mut R, &mut PageLog) -> Result<(), Error>,
    ) -> Result<Option<OpTiming>, Error> {
        if old == NONE {
            return Ok(None);
        }
        let (ppn, timing) = self.host_program(dev, map, Owner::Tombstone(lpn), &[], ProgramOptions::default(), now)?;
        unmap(map, self)?;
        self.host_done(dev, map, ppn, timing.end_ns)?;
        Ok(Some(timing))
    }

    // ---- garbage collection -----------------------------------------------------------

    /// After a host operation on `chip` (at `now`, its completion): one background
    /// collection if the chip runs low on free blocks, then the map owner's
    /// [`Remap::settle`].
    pub fn background_gc<R: Remap>(
        &mut self,
        dev: &mut Device,
        remap: &mut R,
        chip: usize,
        now: SimTime,
    ) -> Result<(), Error> {
        if !self.collecting && self.chips[chip].free.len() < self.gc.background_free_blocks as usize {
            if let Some(end) = self.collect(dev, remap, chip, now)? {
                self.settle(dev, remap, chip, end)?;
            }
        }
        Ok(())
    }

    /// Lets the map owner write what GC moved ([`Remap::settle`]), unless it is doing
    /// so already (this GC ran for one of its writes).
    fn settle<R: Remap>(
        &mut self,
        dev: &mut Device,
        remap: &mut R,
        chip: usize,
        now: SimTime,
    ) -> Result<SimTime, Error> {
        if self.settling {
            return Ok(now);
        }
        // Not poisoned on error: device errors poisoned the store where they happened,
        // and a write that found no room leaves its moves pending, the map whole.
        self.settling = true;
        let result = remap.settle(self, dev, chip, now);
        self.settling = false;
        result
    }

    /// Collects one victim on `chip` chosen by the configured policy; returns when its
    /// erase ends, or `None` if no block has anything to reclaim.
    fn collect<R: Remap>(
        &mut self,
        dev: &mut Device,
        remap: &mut R,
        chip: usize,
        now: SimTime,
    ) -> Result<Option<SimTime>, Error> {
        let bpc = self.geometry.blocks_per_chip as usize;
        let ppb = self.geometry.pages_per_block;
        let (policy, seq) = (self.gc.policy, self.next_seq);
        let Some(mut victim) = self.blocks.choose_victim(chip, policy, seq, ppb) else {
            return Ok(None);
        };
        let locked = |i: usize| remap.locked((chip * bpc + i) as u32);
        if locked(victim) {
            // Locked blocks are no candidates; the next choice may hold more valid pages.
            let Some(second) = self.blocks.choose_victim_skipping(chip, policy, seq, ppb, locked) else {
                return Ok(None);
            };
            let blocks = self.blocks.chip(chip);
            self.counters.gc_lock_migrations += blocks[second].valid.saturating_sub(blocks[victim].valid) as u64;
            victim = second;
        }
        self.collecting = true;
        let result = self.collect_block(dev, remap, chip, (chip * bpc + victim) as u32, now);
        self.collecting = false;
        result.map(Some).map_err(|e| self.poison(e))
    }

    /// Starts loading what moving and erasing a victim's pages updates, at random places
    /// (its data pages' copy counts, the map entries the moves change), all at once, so
    /// their misses overlap instead of stalling each move in turn.
    fn prefetch_victim_owners<R: Remap>(&self, remap: &R, block: BlockId) {
        let first = self.geometry.ppn(block, 0).0 as usize;
        for &packed in &self.owner[first..first + self.geometry.pages_per_block as usize] {
            if let Some(owner) = Owner::unpack(packed) {
                if let Owner::Data(lpn) = owner {
                    prefetch_index(&self.copies, lpn as usize);
                }
                remap.prefetch_moved(owner);
            }
        }
    }

    /// Moves a block's live pages to the chip's GC block (each operation after the
    /// previous one ends), then erases the block.
    fn collect_block<R: Remap>(
        &mut self,
        dev: &mut Device,
        remap: &mut R,
        chip: usize,
        b: u32,
        now: SimTime,
    ) -> Result<SimTime, Error> {
        let mut t = now;
        let block = BlockId(b);
        let page_bytes = self.page_bytes();
        dev.prefetch_block(block);
        self.prefetch_victim_owners(remap, block);
        for i in 0..self.geometry.pages_per_block {
            let src = self.geometry.ppn(block, i);
            if !self.is_live(src) {
                continue;
            }
            let Some(owner) = Owner::unpack(self.owner[src.0 as usize]) else {
                return Err(Error::NeedsReopen { region: format!("{} FTL", self.name) });
            };
            let (dst, _) = self.allocate(dev, remap, Stream::Gc, Place::Chip(chip), t)?;
            let clear = remap.migrating(self, src, dst);
            let oob = if self.keeps_data {
                let Some(h) = Header::decode_or_repair(dev.peek(src).1) else {
                    return Err(Error::NeedsReopen { region: format!("{} FTL", self.name) });
                };
                let mut oob = Header { gen: h.gen + 1, ..h }.encode();
                let len = (oob.len() + clear).min(self.geometry.oob_bytes as usize);
                oob.resize(len.max(oob.len()), 0xFF);
                oob
            } else {
                vec![0xFF; OOB_BYTES]
            };
            let timing = dev.copyback(src, dst, t, &[Span::new(page_bytes, &oob)])?;
            t = timing.end_ns;
            self.counters.flash_reads += 1;
            self.counters.flash_programs += 1;
            self.counters.gc_page_migrations += 1;
            match owner {
                Owner::Tombstone(lpn) => {
                    self.tombstones.insert(lpn, dst.0);
                }
                Owner::Data(lpn) => {
                    self.copies[lpn as usize] += 1;
                    remap.moved(owner, src, dst);
                }
                Owner::Translation(_) => remap.moved(owner, src, dst),
                Owner::Remap => {
                    let dsts = self.records.get(&src.0).cloned().unwrap_or_default();
                    for &lpn in &dsts {
                        self.copies[lpn as usize] += 1;
                    }
                    self.records.insert(dst.0, dsts);
                    remap.moved(owner, src, dst);
                }
            }
            self.owner[dst.0 as usize] = owner.pack();
            // A corrupt page moves as it is (its data still fails the header's CRC).
            let corrupt = if self.corrupt.is_empty() { None } else { self.corrupt.remove(&src.0) };
            self.kill(src);
            self.mark_live(dst);
            if let Some(what) = corrupt {
                self.corrupt.insert(dst.0, what);
            }
            let seq = self.blocks[b as usize].last_write_seq;
            let dst_block = self.geometry.block_of(dst).0 as usize;
            self.blocks.set_last_write_seq(dst_block, self.blocks[dst_block].last_write_seq.max(seq));
        }
        self.discard_retired(dev)?;
        let timing = dev.erase(block, t)?;
        let ppb = self.geometry.pages_per_block as usize;
        for p in b as usize * ppb..(b as usize + 1) * ppb {
            let lpns = match Owner::unpack(std::mem::replace(&mut self.owner[p], NONE)) {
                Some(Owner::Data(lpn)) => vec![lpn],
                Some(Owner::Remap) => self.records.remove(&(p as u32)).unwrap_or_default(),
                _ => continue,
            };
            for lpn in lpns {
                let copies = &mut self.copies[lpn as usize];
                *copies -= 1;
                if *copies == 0 {
                    if let Some(t) = self.tombstones.remove(&lpn) {
                        // The last old copy is gone: the trim record is no longer needed.
                        self.kill(Ppn(t));
                    }
                }
            }
        }
        self.release_block(dev, b);
        self.counters.gc_erases += 1;
        Ok(timing.end_ns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trip_and_torn_headers_fail() {
        let tagged = Header { owner: Owner::Data(5), seq: 3, gen: 1, data_crc: 9, tag: Some([7; TAG_BYTES]) };
        for h in [tagged, Header { owner: Owner::Remap, seq: 4, gen: 0, data_crc: 1, tag: None }] {
            let mut b = h.encode();
            assert_eq!(Header::decode(&b), Some(h));
            b[13] ^= 0x01;
            assert_eq!(Header::decode(&b), None);
        }
        let entries = vec![(3, 17), (9, 1 << 33)];
        assert_eq!(decode_record(&encode_record(&entries, 4096)), Some(entries));
        assert_eq!(decode_record(&[0u8; 64]), None);
        for owner in [Owner::Data(7), Owner::Tombstone(9), Owner::Translation(3)] {
            let h = Header { owner, seq: 1 << 40, gen: 2, data_crc: 0xABCD, tag: None };
            let mut b = h.encode();
            assert_eq!(Header::decode(&b), Some(h));
            assert_eq!(Owner::unpack(owner.pack()), Some(owner));
            b[13] ^= 0x01; // one bit of seq differs from what the CRC covers
            assert_eq!(Header::decode(&b), None);
        }
        assert_eq!(Header::decode(&[0xFF; 64]), None);
    }

    proptest::proptest! {
        /// Arbitrary OOB bytes never panic the decoder; what it accepts re-encodes.
        #[test]
        fn fuzz_header_decoder(oob in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..64)) {
            if let Some(h) = Header::decode(&oob) {
                let b = h.encode();
                proptest::prop_assert_eq!(&b[..], &oob[..b.len()]);
            }
        }
    }
}
