//! The buffer pool: fixed frames, clock or LRU replacement, pin/unpin, dirty tracking
//! and a page cleaner (eager or non-eager).
//!
//! The engine runs one operation at a time in simulated time, so the pool takes no
//! latches; `&mut` access is the latch. Pins are the only protection a frame has across
//! calls: an access method pins every page it holds (a B+-tree descent pins at most the
//! node and its parent, then the sibling for a merge, always top-down then
//! left-to-right), and a pinned frame is never evicted or cleaned.
//!
//! The pool does not own the journal: every call that may write a page takes it, and
//! asks it for the write-ahead rule only ([`Journal::force`] up to the page's LSN).
//! [`Pages`] bundles the pool with the journal for the access methods.
//!
//! Each dirty frame keeps the page as last read or written (its base) beside the
//! working copy; at write time their difference is the change set the IPA rule looks
//! at. A clean frame is its own base, so a base is copied only at a page's first change,
//! into a slot of `BaseSlots` that the frame gives back once the page is written: the
//! bases take memory for the pages dirty at once, not for every frame ever dirtied. The pool
//! also keeps the byte ranges written since (every change goes through [`PageMut`] or
//! is noted as the whole page), and the IPA diff compares only those. Reads on a
//! miss and writes of evicted dirty pages are on the caller's critical path and advance
//! the pool's clock; cleaner writes are timed on the device but do not.

use crate::delta::{Eviction, FlashState};
use crate::error::{Error, Result};
use crate::journal::Journal;
use crate::latency::IoLatencies;
use crate::page;
use crate::store::{PageId, PageStore};
use nand::{SimTime, SyncPoint};
use serde::Serialize;
use std::collections::{BTreeSet, VecDeque};

/// Which unpinned frame gives way on a miss.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Replacement {
    /// Second chance: the hand clears a referenced frame's bit and takes the first
    /// unreferenced one, dirty or not (a dirty victim is written first).
    Clock,
    Lru,
    /// Shore-MT's clock (`bf_core_m::replacement` and `can_replace`, src/sm/bf_core.cpp):
    /// "preference is given to non-dirty pages". Over the first pass of the hand, only a
    /// clean unreferenced frame is taken; over the second, an unreferenced one, dirty or
    /// not; after that any unpinned frame. The hand clears the bits it passes (Shore-MT
    /// counts references down; one bit here). Dirty pages are then written by the
    /// cleaner and checkpoints, not by a miss, while clean frames are to be had.
    CleanFirstClock,
}

impl Replacement {
    /// Whether this is [`Replacement::Clock`], the default (a config leaves it out).
    pub fn is_clock(&self) -> bool {
        *self == Replacement::Clock
    }
}

/// When the page cleaner writes dirty pages ahead of eviction.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CleanerPolicy {
    /// Shore-MT style: once dirty frames exceed this share, write the pages that have
    /// been dirty longest (oldest first-dirty time, the order of their recovery LSNs).
    Eager { dirty_share: f64 },
    /// Once dirty frames exceed this share, write every unpinned dirty page, as a cleaner
    /// does that "flush\[es\] dirty pages eagerly when a threshold is reached" (SIGMOD'17
    /// §8.4) in sweeps: a page stays dirty only until the next sweep, not until the pages
    /// dirtied after it fill the share.
    Sweep { dirty_share: f64 },
    /// Dirty pages are written only when evicted (or at a checkpoint).
    NonEager,
}

impl CleanerPolicy {
    pub const EAGER: CleanerPolicy = CleanerPolicy::Eager { dirty_share: 0.125 };
    /// [`CleanerPolicy::EAGER`]'s threshold, writing every dirty page when it is passed.
    pub const EAGER_SWEEP: CleanerPolicy = CleanerPolicy::Sweep { dirty_share: 0.125 };
    /// MySQL InnoDB's (5.6, 5.7): its page cleaners write the oldest dirty pages once more
    /// than `innodb_max_dirty_pages_pct` of the buffer pool is dirty, "which has a default
    /// value of 75", the low water mark for earlier flushing defaulting to "0, which
    /// disables this early flushing behaviour" (MySQL 5.7 Reference Manual 14.8.3.5,
    /// Configuring Buffer Pool Flushing). Below it a page is written when evicted or by a
    /// checkpoint.
    pub const INNODB: CleanerPolicy = CleanerPolicy::Eager { dirty_share: 0.75 };
    /// Shore-MT's with its eager strategies off: the IPA paper's non-eager runs set
    /// "extreme values for the respective thresholds in Shore-MT (75% and 100%
    /// respectively)" (SIGMOD'17 §8.4), its cleaner's from 12.5% to 75% dirty frames.
    pub const SHORE_NON_EAGER: CleanerPolicy = CleanerPolicy::Eager { dirty_share: 0.75 };
}

/// Counters of the pool.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct PoolStats {
    pub hits: u64,
    pub misses: u64,
    pub evictions: u64,
    /// Evictions that had to write the page first (on the critical path).
    pub dirty_evictions: u64,
    pub cleaner_writes: u64,
    /// Pages written by checkpoints (and by `flush_all`, which a close and an explicit
    /// checkpoint take).
    pub checkpoint_writes: u64,
    pub out_of_place_writes: u64,
    pub in_place_appends: u64,
    /// Writes sent as log records to an In-Page Logging device.
    pub logged_writes: u64,
    /// Page reads from flash and the sum of their latencies (issue to data, queueing
    /// behind other I/O on the chip included).
    pub page_reads: u64,
    pub read_latency_ns: u64,
    /// Page writes (out-of-place or appends) and the sum of their latencies.
    pub page_writes: u64,
    pub write_latency_ns: u64,
    /// The parts of `write_latency_ns` of out-of-place writes and of in-place appends:
    /// an append waits at its page's chip, an out-of-place write at the region's next
    /// chip in turn, so the two queue differently.
    pub out_of_place_latency_ns: u64,
    pub append_latency_ns: u64,
    /// Simulated time callers waited: for a dirty victim's write before a read, for
    /// the log at commit, and for checkpoints (where the time of a transaction goes).
    pub eviction_wait_ns: u64,
    pub commit_wait_ns: u64,
    pub checkpoint_wait_ns: u64,
    /// Checkpoints taken.
    pub checkpoints: u64,
    /// Full-page images logged (torn-page protection; absent from reports while 0).
    #[serde(skip_serializing_if = "is_zero")]
    pub page_images: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

pub type FrameId = usize;

#[derive(Clone, Copy, Default)]
pub(crate) struct Frame {
    pub(crate) page: Option<PageId>,
    pins: u32,
    dirty: bool,
    /// When the frame last turned dirty (orders the eager cleaner's queue).
    dirty_stamp: u64,
    /// LSN of the first logged change since the page was last written (0: none).
    pub(crate) rec_lsn: u64,
    /// Changed by the operation in progress (pinned until it ends and is logged).
    pub(crate) in_op: bool,
    referenced: bool,
    last_use: u64,
    state: FlashState,
    /// The frame's slot in [`BaseSlots`] while it is dirty; none while it is clean (a
    /// page read or written is its own base until its next change).
    base: Option<u32>,
}

/// Frames over a [`PageStore`].
pub struct BufferPool {
    pub(crate) store: PageStore,
    pub(crate) frames: Vec<Frame>,
    pub(crate) data: Vec<u8>,
    bases: BaseSlots,
    /// Per frame, where its page may differ from its base: what the IPA diff compares.
    changed: Vec<Changed>,
    merge_scratch: Vec<(usize, usize)>,
    /// Cached pages: their frames by page id.
    map: PageMap,
    /// Frames holding no page.
    empty: EmptyFrames,
    /// Frames the operation in progress changed, in the order of their first change.
    pub(crate) op: Vec<FrameId>,
    /// Every byte range the operation wrote, oldest first, with its bytes before the
    /// write in `op_images` (concatenated in the same order): enough to rebuild each
    /// changed page as it was before the operation, over the ranges written.
    pub(crate) op_writes: Vec<OpWrite>,
    pub(crate) op_images: Vec<u8>,
    /// The page being logged as it was before the operation (valid over `op_ranges`).
    pub(crate) before: Vec<u8>,
    /// The written ranges of the page being logged, merged (see `oplog`).
    pub(crate) op_ranges: Vec<(usize, usize)>,
    /// The changed spans of the page being logged (reused across operations).
    pub(crate) spans: Vec<(u16, u16)>,
    replacement: Replacement,
    cleaner: CleanerPolicy,
    hand: usize,
    tick: u64,
    /// Eager cleaner: (dirty stamp, frame), oldest first; stale entries are skipped.
    dirty_queue: VecDeque<(u64, FrameId)>,
    lru: BTreeSet<(u64, FrameId)>,
    dirty: usize,
    now: SimTime,
    pub(crate) stats: PoolStats,
    /// Each page read's and write's latency, for percentiles (the sums are in `stats`).
    latencies: IoLatencies,
    /// The log's page writes at the last write-ahead sync point (see `write_frame`).
    log_pages_at_sync: u64,
    /// Torn-page protection (`None`: off): the LSN of the last checkpoint. A page whose
    /// LSN is below it gets its whole image logged before its next change (`oplog`).
    pub(crate) image_epoch: Option<u64>,
    /// Scratch for a page image.
    pub(crate) image: Vec<u8>,
}

impl BufferPool {
    /// A pool of `frames` frames (at least 8: a B+-tree split pins a few at once).
    pub fn new(store: PageStore, frames: usize, replacement: Replacement, cleaner: CleanerPolicy) -> BufferPool {
        let frames = frames.max(8);
        let bytes = store.page_bytes();
        BufferPool {
            store,
            frames: vec![Frame::default(); frames],
            data: vec![0; frames * bytes],
            bases: BaseSlots::new(frames, bytes),
            changed: vec![Changed::default(); frames],
            merge_scratch: Vec::new(),
            map: PageMap::default(),
            empty: EmptyFrames::all(frames),
            replacement,
            cleaner,
            hand: 0,
            tick: 0,
            dirty_queue: VecDeque::new(),
            lru: BTreeSet::new(),
            dirty: 0,
            now: 0,
            stats: PoolStats::default(),
            latencies: IoLatencies::default(),
            log_pages_at_sync: 0,
            op: Vec::new(),
            op_writes: Vec::new(),
            op_images: Vec::new(),
            before: Vec::new(),
            op_ranges: Vec::new(),
            spans: Vec::new(),
            image_epoch: None,
            image: Vec::new(),
        }
    }

    /// Whether changes log full-page images first (torn-page protection).
    pub fn logs_page_images(&self) -> bool {
        self.image_epoch.is_some()
    }

    /// Turns torn-page protection on from checkpoint `lsn` (`None`: off), or moves it
    /// to a new checkpoint.
    pub(crate) fn set_image_epoch(&mut self, lsn: Option<u64>) {
        self.image_epoch = lsn;
    }

    pub fn store(&self) -> &PageStore {
        &self.store
    }
    pub fn store_mut(&mut self) -> &mut PageStore {
        &mut self.store
    }
    pub fn into_store(self) -> PageStore {
        self.store
    }
    pub fn frames(&self) -> usize {
        self.frames.len()
    }
    /// Frames holding a page: the pages the pool keeps in memory.
    pub fn cached_pages(&self) -> usize {
        self.frames.iter().filter(|f| f.page.is_some()).count()
    }
    pub fn dirty_frames(&self) -> usize {
        self.dirty
    }
    pub fn stats(&self) -> PoolStats {
        self.stats
    }
    pub fn io_latencies_mut(&mut self) -> &mut IoLatencies {
        &mut self.latencies
    }
    pub fn cleaner(&self) -> CleanerPolicy {
        self.cleaner
    }
    /// The simulated time of the operation in progress.
    pub fn now(&self) -> SimTime {
        self.now
    }
    pub fn set_now(&mut self, now: SimTime) {
        self.now = now;
    }

    pub(crate) fn span(&self, f: FrameId) -> std::ops::Range<usize> {
        let b = self.store.page_bytes();
        f * b..(f + 1) * b
    }

    pub fn page(&self, f: FrameId) -> &[u8] {
        &self.data[self.span(f)]
    }

    /// The frame's page for modification; marks it dirty. The first change in an
    /// operation pins the frame until `end_op` logs it (see `oplog`); each write through
    /// the returned [`PageMut`] keeps the bytes it overwrites, for the log.
    pub fn page_mut(&mut self, f: FrameId) -> PageMut<'_> {
        self.begin_change(f);
        PageMut { pool: self, f }
    }

    /// [`BufferPool::page_mut`] as plain bytes, for a change anywhere on the page (the
    /// whole page is kept as written).
    pub fn page_bytes_mut(&mut self, f: FrameId) -> &mut [u8] {
        self.begin_change(f);
        self.keep_before(f, 0..self.store.page_bytes());
        let span = self.span(f);
        &mut self.data[span]
    }

    fn begin_change(&mut self, f: FrameId) {
        let clean = !self.frames[f].dirty;
        if clean {
            self.fill_base(f);
        }
        if !self.frames[f].in_op {
            self.op.push(f);
            self.frames[f].in_op = true;
            self.frames[f].pins += 1;
            // The page LSN `end_op` stamps.
            self.keep_before(f, 0..8);
        }
        if clean {
            self.mark_dirty(f);
        }
    }

    /// Keeps the bytes `range` of frame `f`'s page before the operation writes them.
    pub(crate) fn keep_before(&mut self, f: FrameId, range: std::ops::Range<usize>) {
        let at = self.span(f).start;
        self.op_writes.push(OpWrite { frame: f, offset: range.start as u32, len: range.len() as u32 });
        self.op_images.extend_from_slice(&self.data[at + range.start..at + range.end]);
    }

    /// Marks a frame dirty without an operation snapshot (restart redo is not logged).
    pub(crate) fn mark_dirty_for_redo(&mut self, f: FrameId) {
        if !self.frames[f].dirty {
            self.fill_base(f);
            self.mark_dirty(f);
        }
        self.changed[f].all();
    }

    /// Notes that the operation wrote `self.op_ranges` of frame `f`'s page.
    pub(crate) fn note_op_ranges(&mut self, f: FrameId) {
        self.changed[f].add(&self.op_ranges, &mut self.merge_scratch);
    }

    /// Notes that the whole of frame `f`'s page may have changed.
    pub(crate) fn note_all_changed(&mut self, f: FrameId) {
        self.changed[f].all();
    }

    /// Copies a clean frame's page to a base slot before the page first changes.
    fn fill_base(&mut self, f: FrameId) {
        if self.frames[f].base.is_none() {
            let slot = self.bases.take();
            let span = self.span(f);
            self.bases.get_mut(slot).copy_from_slice(&self.data[span]);
            self.frames[f].base = Some(slot);
        }
    }

    fn mark_dirty(&mut self, f: FrameId) {
        self.tick += 1;
        let frame = &mut self.frames[f];
        frame.dirty = true;
        frame.dirty_stamp = self.tick;
        self.dirty += 1;
        if let CleanerPolicy::Eager { .. } | CleanerPolicy::Sweep { .. } = self.cleaner {
            self.dirty_queue.push_back((self.tick, f));
            // Pages written by eviction leave stale entries; drop them now and then.
            if self.dirty_queue.len() > 4 * self.frames.len() {
                let frames = &self.frames;
                self.dirty_queue.retain(|&(stamp, f)| frames[f].dirty && frames[f].dirty_stamp == stamp);
            }
        }
    }

    fn touch(&mut self, f: FrameId) {
        let frame = &mut self.frames[f];
        frame.referenced = true;
        if self.replacement == Replacement::Lru {
            self.lru.remove(&(frame.last_use, f));
            self.tick += 1;
            frame.last_use = self.tick;
            self.lru.insert((self.tick, f));
        }
    }

    /// Pins the page, reading it on a miss.
    pub fn fetch(&mut self, pid: PageId, journal: &mut dyn Journal) -> Result<FrameId> {
        self.fetch_if_written(pid, journal)?.ok_or_else(|| never_written(pid))
    }

    /// Pins the page if it is cached or on flash (read on a miss); `None` if flash
    /// never had it.
    pub fn fetch_if_written(&mut self, pid: PageId, journal: &mut dyn Journal) -> Result<Option<FrameId>> {
        if let Some(f) = self.map.get(pid) {
            self.stats.hits += 1;
            self.frames[f].pins += 1;
            self.touch(f);
            return Ok(Some(f));
        }
        self.stats.misses += 1;
        let f = self.free_frame(journal)?;
        let span = self.span(f);
        let Some((state, done)) = self.store.fetch(pid, &mut self.data[span.clone()], self.now)? else {
            return Ok(None);
        };
        self.stats.page_reads += 1;
        self.stats.read_latency_ns += done.saturating_sub(self.now);
        self.latencies.record_read(done.saturating_sub(self.now));
        self.now = done;
        self.install(f, pid, state);
        Ok(Some(f))
    }

    /// Pins a frame for a page that is new on flash; the caller formats its bytes.
    pub fn create(&mut self, pid: PageId, journal: &mut dyn Journal) -> Result<FrameId> {
        if let Some(f) = self.map.get(pid) {
            // A freed page still cached: it starts over, and its old flash copy will
            // be replaced out-of-place.
            if self.frames[f].pins > 0 {
                return Err(Error::Corrupt(format!(
                    "page {} of region {} is allocated while in use",
                    pid.page, pid.region
                )));
            }
            self.frames[f].pins = 1;
            self.touch(f);
            if !self.frames[f].dirty {
                self.fill_base(f);
                self.mark_dirty(f);
            }
            let span = self.span(f);
            self.data[span].fill(0);
            self.changed[f].all();
            return Ok(f);
        }
        let f = self.free_frame(journal)?;
        let span = self.span(f);
        self.data[span].fill(0);
        self.install(f, pid, FlashState::default());
        let slot = self.bases.take();
        self.bases.get_mut(slot).fill(0);
        self.frames[f].base = Some(slot);
        self.changed[f].all();
        self.mark_dirty(f);
        Ok(f)
    }

    /// Pins page `pid` for restart's redo of a whole-page image, without reading flash
    /// (its copy there may be torn): its cached frame, or a new one whose bytes the
    /// caller writes in full. The page is dirty and goes out of place at its next write.
    pub(crate) fn take_for_image(&mut self, pid: PageId, journal: &mut dyn Journal) -> Result<FrameId> {
        let f = match self.map.get(pid) {
            Some(f) => {
                self.frames[f].pins += 1;
                self.frames[f].state.sealed = true;
                self.touch(f);
                f
            }
            None => {
                let f = self.free_frame(journal)?;
                self.install(f, pid, FlashState { on_flash: true, records: 0, sealed: true });
                f
            }
        };
        self.mark_dirty_for_redo(f);
        Ok(f)
    }

    fn install(&mut self, f: FrameId, pid: PageId, state: FlashState) {
        self.frames[f] = Frame { page: Some(pid), pins: 1, referenced: true, state, ..Frame::default() };
        self.empty.remove(f);
        self.changed[f].clear();
        self.map.insert(pid, f);
        self.touch(f);
    }

    /// Drops a pin on a cached page, by page.
    pub fn unpin_page(&mut self, pid: PageId) {
        let f = self.map.get(pid).expect("a pinned page is cached");
        self.unpin(f);
    }

    pub fn unpin(&mut self, f: FrameId) {
        assert!(self.frames[f].pins > 0, "unpin of an unpinned frame {f}");
        self.frames[f].pins -= 1;
    }

    /// An empty frame, or one freed by evicting a page (written first if dirty).
    fn free_frame(&mut self, journal: &mut dyn Journal) -> Result<FrameId> {
        if let Some(f) = self.empty.lowest() {
            return Ok(f);
        }
        let f = self
            .victim()
            .ok_or_else(|| Error::Full(format!("buffer pool: all {} frames are pinned", self.frames.len())))?;
        if self.frames[f].dirty {
            self.stats.dirty_evictions += 1;
            let done = self.write_frame(f, self.now, journal)?;
            self.stats.eviction_wait_ns += done.saturating_sub(self.now);
            self.now = done;
        }
        self.stats.evictions += 1;
        let frame = &mut self.frames[f];
        self.map.remove(frame.page.take().expect("victim holds a page"));
        self.lru.remove(&(frame.last_use, f));
        self.empty.insert(f);
        Ok(f)
    }

    fn victim(&mut self) -> Option<FrameId> {
        match self.replacement {
            Replacement::Lru => self.lru.iter().map(|&(_, f)| f).find(|&f| self.frames[f].pins == 0),
            Replacement::Clock => self.clock_victim(2, |_, frame| !frame.referenced),
            Replacement::CleanFirstClock => self.clock_victim(3, |pass, frame| match pass {
                0 => !frame.referenced && !frame.dirty,
                1 => !frame.referenced,
                _ => true,
            }),
        }
    }

    /// Moves the hand over up to `passes` rounds of the frames and takes the first
    /// unpinned frame `takes` accepts in its round (0, 1, …); a frame passed over loses
    /// its reference bit.
    fn clock_victim(&mut self, passes: usize, takes: impl Fn(usize, &Frame) -> bool) -> Option<FrameId> {
        let n = self.frames.len();
        for step in 0..passes * n {
            let f = self.hand;
            self.hand = (self.hand + 1) % n;
            let frame = &mut self.frames[f];
            if frame.pins > 0 {
                continue;
            }
            if takes(step / n, frame) {
                return Some(f);
            }
            frame.referenced = false;
        }
        None
    }

    /// Writes a dirty frame by the IPA rule; returns when the write ends.
    fn write_frame(&mut self, f: FrameId, now: SimTime, journal: &mut dyn Journal) -> Result<SimTime> {
        let pid = self.frames[f].page.expect("a dirty frame holds a page");
        let span = self.span(f);
        // The write-ahead rule: the log first, up to the page's LSN; and across a power
        // loss, log pages written since the last such point reach the disk before the
        // page (an image file may keep any subset of the writes since its last sync).
        let mut now = journal.force(page::lsn(&self.data[span.clone()]), self.store.device_mut(), now)?;
        let log_pages = journal.counters().map_or(0, |c| c.page_writes);
        if log_pages != self.log_pages_at_sync {
            now = self.store.device_mut().sync(SyncPoint::WriteAhead, now)?.max(now);
            self.log_pages_at_sync = log_pages;
        }
        let mut state = self.frames[f].state;
        let slot = self.frames[f].base.expect("a dirty frame holds its base");
        let (page, base) = (&mut self.data[span], self.bases.get_mut(slot));
        let changed = &self.changed[f].ranges;
        let written = self.store.write_changed(pid, page, base, changed, &mut state, now)?;
        self.changed[f].clear();
        let latency = written.done.saturating_sub(now);
        let stats = &mut self.stats;
        match written.eviction {
            Eviction::OutOfPlace(_) => {
                stats.out_of_place_writes += 1;
                stats.out_of_place_latency_ns += latency;
            }
            Eviction::Append { .. } => {
                stats.in_place_appends += 1;
                stats.append_latency_ns += latency;
            }
            Eviction::Logged => stats.logged_writes += 1,
            Eviction::Clean => {}
        }
        if written.eviction != Eviction::Clean {
            stats.page_writes += 1;
            stats.write_latency_ns += latency;
            self.latencies.record_write(latency);
        }
        let frame = &mut self.frames[f];
        frame.state = state;
        frame.dirty = false;
        frame.rec_lsn = 0;
        frame.base = None;
        self.bases.give_back(slot);
        self.dirty -= 1;
        Ok(written.done)
    }

    /// Runs the page cleaner (after each operation). Eager: while dirty frames exceed
    /// the share, write unpinned dirty pages, longest dirty first; sweep: once they
    /// exceed it, write them all, longest dirty first. Timed on the device at the pool's
    /// clock, which does not wait for them.
    pub fn clean(&mut self, journal: &mut dyn Journal) -> Result<()> {
        let (dirty_share, sweep) = match self.cleaner {
            CleanerPolicy::Eager { dirty_share } => (dirty_share, false),
            CleanerPolicy::Sweep { dirty_share } => (dirty_share, true),
            CleanerPolicy::NonEager => return Ok(()),
        };
        let limit = (dirty_share * self.frames.len() as f64) as usize;
        if self.dirty <= limit {
            return Ok(());
        }
        let clean_to = if sweep { 0 } else { limit };
        let mut pinned = Vec::new();
        while self.dirty > clean_to {
            let Some((stamp, f)) = self.dirty_queue.pop_front() else { break };
            let frame = self.frames[f];
            if !frame.dirty || frame.dirty_stamp != stamp {
                continue;
            }
            if frame.pins > 0 {
                pinned.push((stamp, f));
                continue;
            }
            self.write_frame(f, self.now, journal)?;
            self.stats.cleaner_writes += 1;
        }
        for entry in pinned.into_iter().rev() {
            self.dirty_queue.push_front(entry);
        }
        Ok(())
    }

    /// Writes every dirty page (checkpoint, close); the clock advances to the last end.
    pub fn flush_all(&mut self, journal: &mut dyn Journal) -> Result<()> {
        let mut done = self.now;
        for f in 0..self.frames.len() {
            if self.frames[f].dirty {
                done = done.max(self.write_frame(f, self.now, journal)?);
                self.stats.checkpoint_writes += 1;
            }
        }
        self.now = done;
        Ok(())
    }

    /// Dirty pages and the LSN of their first change since written (checkpoints).
    pub fn dirty_pages(&self) -> Vec<(PageId, u64)> {
        let mut out: Vec<(PageId, u64)> =
            self.frames.iter().filter(|f| f.dirty && f.rec_lsn > 0).map(|f| (f.page.unwrap(), f.rec_lsn)).collect();
        out.sort_unstable();
        out
    }

    /// Writes the dirty pages first changed before `lsn` (so the log can be cut there).
    pub fn flush_older_than(&mut self, lsn: u64, journal: &mut dyn Journal) -> Result<()> {
        let mut done = self.now;
        for f in 0..self.frames.len() {
            let frame = self.frames[f];
            if frame.dirty && frame.pins == 0 && frame.rec_lsn > 0 && frame.rec_lsn < lsn {
                done = done.max(self.write_frame(f, self.now, journal)?);
                self.stats.checkpoint_writes += 1;
            }
        }
        self.now = done;
        Ok(())
    }

    /// Drops every frame whose page changed at or after page LSN `lsn`, dirty or not,
    /// without writing it (the NoLgn journal's abort: the device dropped those writes).
    pub fn forget_changed_since(&mut self, lsn: u64) -> Result<()> {
        for f in 0..self.frames.len() {
            let Some(pid) = self.frames[f].page else { continue };
            if page::lsn(&self.data[self.span(f)]) < lsn {
                continue;
            }
            if self.frames[f].pins > 0 {
                return Err(Error::Invalid(format!("page {} of region {} is pinned", pid.page, pid.region)));
            }
            self.map.remove(pid);
            self.empty_frame(f);
        }
        Ok(())
    }

    /// Empties a frame without writing its page (the caller has unmapped it).
    fn empty_frame(&mut self, f: FrameId) {
        let frame = &mut self.frames[f];
        if frame.dirty {
            self.dirty -= 1;
        }
        if let Some(slot) = frame.base {
            self.bases.give_back(slot);
        }
        self.lru.remove(&(frame.last_use, f));
        *frame = Frame::default();
        self.empty.insert(f);
    }

    /// Forgets a page its object freed: drops its frame (the caller's pin included) and
    /// trims its flash copy.
    pub fn discard(&mut self, pid: PageId) -> Result<()> {
        let mut on_flash = true;
        if let Some(f) = self.map.remove(pid) {
            if let Some(i) = self.op.iter().position(|&g| g == f) {
                self.op.swap_remove(i);
                self.forget_writes(f);
                self.frames[f].pins -= 1;
            }
            let frame = &self.frames[f];
            assert!(frame.pins <= 1, "discarding page {pid:?} pinned {} times", frame.pins);
            on_flash = frame.state.on_flash;
            self.empty_frame(f);
        }
        if on_flash {
            self.store.trim(pid, self.now)?;
        }
        Ok(())
    }

    /// Changes the number of frames: writes every dirty page and starts empty.
    pub fn resize(&mut self, frames: usize, journal: &mut dyn Journal) -> Result<()> {
        self.flush_all(journal)?;
        if let Some(f) = self.frames.iter().position(|f| f.pins > 0) {
            return Err(Error::Invalid(format!("buffer pool resize while frame {f} is pinned")));
        }
        let frames = frames.max(8);
        let bytes = self.store.page_bytes();
        self.frames = vec![Frame::default(); frames];
        self.data = vec![0; frames * bytes];
        self.bases = BaseSlots::new(frames, bytes);
        self.changed = vec![Changed::default(); frames];
        self.map.clear();
        self.empty = EmptyFrames::all(frames);
        self.lru.clear();
        self.dirty_queue.clear();
        (self.hand, self.dirty) = (0, 0);
        Ok(())
    }

    /// Adds empty frames up to `frames`, every cached page staying where it is (for a
    /// database that grew since the pool was sized); a pool that large already stays.
    pub fn grow(&mut self, frames: usize) {
        let old = self.frames.len();
        if frames <= old {
            return;
        }
        let bytes = self.store.page_bytes();
        self.frames.resize(frames, Frame::default());
        self.data.resize(frames * bytes, 0);
        self.bases.grow(frames);
        self.changed.resize(frames, Changed::default());
        self.empty.grow(old, frames);
    }
}

/// The bases of the dirty frames, one page each. Slots given back are taken again
/// newest first, so the slots ever touched are as many as the most pages dirty at once:
/// the rest of the array, allocated zeroed and never written, takes no memory.
struct BaseSlots {
    bytes: Vec<u8>,
    page_bytes: usize,
    free: Vec<u32>,
    /// Slots below this have been taken at least once.
    used: u32,
}

impl BaseSlots {
    /// Room for `frames` bases (every frame dirty at once).
    fn new(frames: usize, page_bytes: usize) -> BaseSlots {
        BaseSlots { bytes: vec![0; frames * page_bytes], page_bytes, free: Vec::new(), used: 0 }
    }

    /// Room for `frames` bases, the slots taken so far kept (copied into a fresh
    /// zeroed array, so the part never written still takes no memory).
    fn grow(&mut self, frames: usize) {
        let mut bytes = vec![0; frames * self.page_bytes];
        let used = self.used as usize * self.page_bytes;
        bytes[..used].copy_from_slice(&self.bytes[..used]);
        self.bytes = bytes;
    }

    fn take(&mut self) -> u32 {
        self.free.pop().unwrap_or_else(|| {
            self.used += 1;
            self.used - 1
        })
    }

    fn give_back(&mut self, slot: u32) {
        self.free.push(slot);
    }

    fn get_mut(&mut self, slot: u32) -> &mut [u8] {
        let at = slot as usize * self.page_bytes;
        &mut self.bytes[at..at + self.page_bytes]
    }
}

/// The frames that hold no page, as a bitmap, taken lowest first: the order in which a
/// scan of the frames for the first empty one took them (which frame a page lands in
/// decides the clock's order, so it must not change), without that scan's cost of
/// reading every occupied frame before it on each miss while the pool is not full.
struct EmptyFrames {
    words: Vec<u64>,
    /// No word before this one has a bit set.
    first: usize,
}

impl EmptyFrames {
    fn all(frames: usize) -> EmptyFrames {
        let mut words = vec![u64::MAX; frames.div_ceil(64)];
        if !frames.is_multiple_of(64) {
            words[frames / 64] = (1 << (frames % 64)) - 1;
        }
        EmptyFrames { words, first: 0 }
    }

    /// Frames `old..frames` added, all empty.
    fn grow(&mut self, old: usize, frames: usize) {
        self.words.resize(frames.div_ceil(64), 0);
        for f in old..frames {
            self.insert(f);
        }
    }

    /// The lowest empty frame (it stays empty until [`EmptyFrames::remove`]).
    fn lowest(&mut self) -> Option<FrameId> {
        while let Some(&w) = self.words.get(self.first) {
            if w != 0 {
                return Some(self.first * 64 + w.trailing_zeros() as usize);
            }
            self.first += 1;
        }
        None
    }

    fn insert(&mut self, f: FrameId) {
        self.words[f / 64] |= 1 << (f % 64);
        self.first = self.first.min(f / 64);
    }

    fn remove(&mut self, f: FrameId) {
        self.words[f / 64] &= !(1 << (f % 64));
    }
}

/// Frames by page id: per region, a vector indexed by page number (regions allocate
/// their pages densely from 0, so it grows to about the pages in use, 4 bytes each).
/// A hit reads one entry, where a hash map reads its control bytes and a bucket.
#[derive(Default)]
struct PageMap {
    regions: Vec<Vec<u32>>,
}

impl PageMap {
    const NONE: u32 = u32::MAX;

    #[inline]
    fn get(&self, pid: PageId) -> Option<FrameId> {
        let f = *self.regions.get(pid.region as usize)?.get(pid.page as usize)?;
        (f != Self::NONE).then_some(f as FrameId)
    }

    fn insert(&mut self, pid: PageId, f: FrameId) {
        let (region, page) = (pid.region as usize, pid.page as usize);
        if self.regions.len() <= region {
            self.regions.resize_with(region + 1, Vec::new);
        }
        let frames = &mut self.regions[region];
        if frames.len() <= page {
            frames.resize(page + 1, Self::NONE);
        }
        frames[page] = f as u32;
    }

    fn remove(&mut self, pid: PageId) -> Option<FrameId> {
        let slot = self.regions.get_mut(pid.region as usize)?.get_mut(pid.page as usize)?;
        let f = std::mem::replace(slot, Self::NONE);
        (f != Self::NONE).then_some(f as FrameId)
    }

    fn clear(&mut self) {
        self.regions.clear();
    }
}

/// Where a frame's page may differ from its base: byte ranges (sorted, disjoint), or
/// the whole page (one range to `usize::MAX`) once there would be more than
/// [`Changed::MAX_RANGES`].
#[derive(Clone, Debug, Default)]
struct Changed {
    ranges: Vec<(usize, usize)>,
}

impl Changed {
    const MAX_RANGES: usize = 16;

    fn clear(&mut self) {
        self.ranges.clear();
    }

    fn all(&mut self) {
        self.ranges.clear();
        self.ranges.push((0, usize::MAX));
    }

    /// Adds sorted, disjoint ranges, merging them into the set in `merged` (scratch).
    fn add(&mut self, new: &[(usize, usize)], merged: &mut Vec<(usize, usize)>) {
        // A page changed again where it changed before (a row updated twice, the whole
        // page noted) keeps its set: the merge would rebuild the same ranges.
        if self.covers(new) {
            return;
        }
        merged.clear();
        let (mut i, mut j) = (0, 0);
        while i < self.ranges.len() || j < new.len() {
            let next = if j == new.len() || (i < self.ranges.len() && self.ranges[i].0 <= new[j].0) {
                i += 1;
                self.ranges[i - 1]
            } else {
                j += 1;
                new[j - 1]
            };
            match merged.last_mut() {
                Some(last) if next.0 <= last.1 => last.1 = last.1.max(next.1),
                _ => merged.push(next),
            }
        }
        if merged.len() > Self::MAX_RANGES {
            self.all();
        } else {
            std::mem::swap(&mut self.ranges, merged);
        }
    }

    /// Whether every range of `new` (sorted) lies within one of the set's ranges.
    fn covers(&self, new: &[(usize, usize)]) -> bool {
        let mut i = 0;
        new.iter().all(|&(from, to)| {
            while i < self.ranges.len() && self.ranges[i].1 < to {
                i += 1;
            }
            i < self.ranges.len() && self.ranges[i].0 <= from
        })
    }
}

/// A byte range an operation wrote on frame `frame`'s page.
#[derive(Clone, Copy, Debug)]
pub(crate) struct OpWrite {
    pub(crate) frame: FrameId,
    pub(crate) offset: u32,
    pub(crate) len: u32,
}

/// A pinned frame's page being changed in an operation: reads see the page, and each
/// write keeps the bytes it overwrites first ([`page::PageWrite`]).
pub struct PageMut<'a> {
    pool: &'a mut BufferPool,
    f: FrameId,
}

impl page::PageWrite for PageMut<'_> {
    fn bytes(&self) -> &[u8] {
        self.pool.page(self.f)
    }
    fn write(&mut self, range: std::ops::Range<usize>) -> &mut [u8] {
        self.pool.keep_before(self.f, range.clone());
        let at = self.pool.span(self.f).start;
        &mut self.pool.data[at + range.start..at + range.end]
    }
}

/// A page referenced (by an index, a heap scan or the log) that flash never had.
pub(crate) fn never_written(pid: PageId) -> Error {
    Error::Corrupt(format!("region {} page {} is referenced but was never written", pid.region, pid.page))
}

/// The buffer pool with the journal its page writes obey: what access methods work with.
/// Its `fetch`, `fetch_if_written` and `create` pass the journal on; everything else is
/// the pool's.
pub struct Pages<'a> {
    pub pool: &'a mut BufferPool,
    pub journal: &'a mut dyn Journal,
}

impl Pages<'_> {
    pub fn fetch(&mut self, pid: PageId) -> Result<FrameId> {
        self.pool.fetch(pid, self.journal)
    }
    pub fn fetch_if_written(&mut self, pid: PageId) -> Result<Option<FrameId>> {
        self.pool.fetch_if_written(pid, self.journal)
    }
    pub fn create(&mut self, pid: PageId) -> Result<FrameId> {
        self.pool.create(pid, self.journal)
    }
}

impl std::ops::Deref for Pages<'_> {
    type Target = BufferPool;
    fn deref(&self) -> &BufferPool {
        self.pool
    }
}

impl std::ops::DerefMut for Pages<'_> {
    fn deref_mut(&mut self) -> &mut BufferPool {
        self.pool
    }
}

#[cfg(test)]
mod tests {
    use super::{Changed, EmptyFrames};

    proptest::proptest! {
        /// Against a scan for the first empty frame, through any order of frames
        /// taken and given back.
        #[test]
        fn empty_frames_come_lowest_first(frames in 1usize..300, ops in proptest::collection::vec((proptest::bool::ANY, 0usize..300), 0..600)) {
            let mut set = EmptyFrames::all(frames);
            let mut model = vec![true; frames];
            for (take, f) in ops {
                let f = f % frames;
                if take {
                    let want = model.iter().position(|&e| e);
                    proptest::prop_assert_eq!(set.lowest(), want);
                    if let Some(w) = want {
                        set.remove(w);
                        model[w] = false;
                    }
                } else {
                    set.insert(f);
                    model[f] = true;
                }
            }
            proptest::prop_assert_eq!(set.lowest(), model.iter().position(|&e| e));
        }

        /// Against merging every range noted so far from scratch (ranges that overlap
        /// or touch joined; the whole page past `MAX_RANGES`), through any sequence of
        /// notes, repeated and contained ones included.
        #[test]
        fn changed_ranges_are_the_merge_of_every_range_noted(notes in proptest::collection::vec(proptest::collection::vec((0usize..200, 0usize..12), 0..6), 0..12)) {
            let merge = |mut all: Vec<(usize, usize)>| {
                all.sort_unstable();
                let mut out: Vec<(usize, usize)> = Vec::new();
                for r in all {
                    match out.last_mut() {
                        Some(last) if r.0 <= last.1 => last.1 = last.1.max(r.1),
                        _ => out.push(r),
                    }
                }
                out
            };
            let (mut changed, mut scratch, mut noted) = (Changed::default(), Vec::new(), Vec::new());
            let mut whole = false;
            for note in notes {
                let note = merge(note.into_iter().map(|(at, len)| (at, at + len)).collect());
                noted.extend_from_slice(&note);
                changed.add(&note, &mut scratch);
                let want = merge(noted.clone());
                whole |= want.len() > Changed::MAX_RANGES;
                let want = if whole { vec![(0, usize::MAX)] } else { want };
                proptest::prop_assert_eq!(&changed.ranges, &want);
            }
        }
    }
}
