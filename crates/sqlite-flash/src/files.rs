//! The file layer: SQLite's files (main database, `-wal`, `-journal`) as extents of an
//! FTL's logical pages, in simulated time. The on-flash format is in
//! `docs/format.md` (SQLite on flash).
//!
//! Layout: logical pages 0 and 1 hold the file table (two copies written alternately,
//! copy = generation mod 2; a torn write leaves the other intact, `open` takes the valid
//! copy with the higher generation). Every other logical page is free or belongs to one
//! extent of one file. A file grows by whole extents (at least double what it has, so
//! its extent list stays short); a partial-page write is a read-modify-write of the
//! logical page (in the page cache, read from flash if not dirty there), as under a
//! file system.
//!
//! Invariants:
//! - Extents never overlap and lie in `[TABLE_PAGES, logical_pages)`; free space is
//!   exactly the pages no extent holds.
//! - Bytes of a file at or beyond its size read as zeros; a truncate zeroes the tail of
//!   its last page, so a later extension shows zeros there too.
//!
//! Write-back page cache (`cache.rs`): SQLite's page writes land in a bounded cache
//! of dirty logical pages, as in Ext4's page cache, and reach the FTL at a sync (in
//! LPN order), before a file-table write (ordered, as Ext4's `data=ordered`: the
//! table never records a size whose data is still only in RAM), or when the cache
//! holds more than its bound (the pages dirty the longest go first). Partial writes
//! coalesce there until the sync. A bound of 0 writes every page through at once.
//!
//! Fault model (power cut at any flash operation):
//! - What a cut loses: the dirty pages still in the cache, i.e. writes since the last
//!   sync that were not written back yet (exactly what Ext4 loses). What it never
//!   loses: anything a completed [`FileStore::sync`] covered. After a cut each page of
//!   a file holds one of the versions it had since the last sync began.
//! - After [`FileStore::sync`] returns, each file's size, extents and bytes up to its
//!   size survive. Growth (new extents, larger sizes, new files) is recorded by the next
//!   table write: a sync, or a truncate/delete.
//! - Freeing (truncate, delete) writes the table, listing the freed extents as being
//!   trimmed, before the pages are trimmed or reused (their dirty pages are dropped),
//!   so a cut never leaves a file pointing at another file's pages; `open` trims the
//!   listed extents again (trims are idempotent) before they become free, so a file
//!   never reads another's old bytes.
//! - A page reaches the FTL whole (partial writes are merged in RAM first), so a torn
//!   write leaves the old page or the new one, never a mix, on FTLs whose page writes
//!   are atomic (all of ours rebuild from OOB-checked pages).
//!
//! SW-WAL (`swwal.rs`, when the table says so): `-wal` files are frame-aligned, and a
//! write that repeats the WAL frame SQLite just read becomes a remap queued in RAM until
//! the next sync, like a write in the page cache (its own fault model is there); the
//! frames themselves go through the page cache with their headers as tags.
//!
//! NoLgn mode ([`FileStore::set_transactional`], on NoLgn-FTL): the page cache is the
//! NoLgn paper's held pages. Its dirty pages reach the FTL only as one transaction
//! (`write_tx`, the last page with the end flag, `commit`), with the file table in
//! the same transaction when a file grew or shrank: a cut leaves the last committed
//! pages and table, never a mix. A commit point is every sync, or, grouping (SQLite's
//! `synchronous=NORMAL`), the first sync once `group_pages` page writes are held or
//! the cache is over its bound (pages of SQLite's open transaction are never written
//! before its sync, so between syncs the cache may exceed its bound by one
//! transaction, which SQLite with `cache_spill=OFF` holds in RAM anyway). A flush the
//! FTL refuses (its P2P table full) is aborted and the held pages are dropped.
//! Extents the file gives up are freed (trimmed) only after the commit that records it.

use crate::error::Error;
use flash::ftl::{Ftl, FtlKind};
use latency::LatencyHistogram;
use nand::{SimTime, SyncPoint};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// SW-WAL: frame-aligned WAL files and checkpoints by remapping (a child module, so it
/// works on the store's state; its hooks below are one line each).
#[path = "swwal.rs"]
mod swwal;

/// The host I/O stack's costs (a child module for the same reason).
#[path = "host_stack.rs"]
pub mod host_stack;

use crate::cache::{Dirty, PageCache, Tag};
use crate::clean::CleanPages;

/// A page's bytes and tag as [`FileStore::fetch`] found them.
pub(crate) type Fetched = (Vec<u8>, Tag);

/// The file [`FileStore::age`] fills; SQLite never opens it (its names are paths).
pub const AGING_FILE: &str = "deltaflash-aging";

const MAGIC: &[u8; 8] = b"DFSQLFS1";
/// Magic, generation, JSON length, crc32 of the JSON.
const HEADER: usize = 24;
/// Logical pages holding the file table (two copies).
pub const TABLE_PAGES: u32 = 2;
/// Smallest extent a file grows by, in pages.
const MIN_EXTENT_PAGES: u32 = 8;
/// The page cache's default bound: 16,384 pages (64 MiB of 4 KB pages). Linux starts
/// background writeback at `dirty_background_ratio` = 10% of free memory, hundreds of
/// MB on the NoLgn paper's emulator host; what matters for SQLite is that the bound is
/// well above what it writes between two syncs (`wal_autocheckpoint` = 1,000 pages), so
/// writes coalesce until the sync as on Ext4. Time-based writeback
/// (`dirty_expire_centisecs`) is not modelled.
pub const DEFAULT_CACHE_PAGES: usize = 16_384;

/// Consecutive logical pages of one file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Extent {
    pub first: u32,
    pub pages: u32,
}

impl Extent {
    fn end(&self) -> u64 {
        self.first as u64 + self.pages as u64
    }
}

/// One file in the table.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
struct FileEntry {
    size: u64,
    extents: Vec<Extent>,
}

impl FileEntry {
    fn allocated_pages(&self) -> u64 {
        self.extents.iter().map(|e| e.pages as u64).sum()
    }

    /// The logical page holding page `index` of the file, if allocated.
    fn lpn(&self, index: u64) -> Option<u32> {
        let mut skip = index;
        for e in &self.extents {
            if skip < e.pages as u64 {
                return Some(e.first + skip as u32);
            }
            skip -= e.pages as u64;
        }
        None
    }
}

/// The table as stored: the files, and extents freed but maybe not yet trimmed.
#[derive(Serialize, Deserialize)]
struct Table {
    files: BTreeMap<String, FileEntry>,
    trimming: Vec<Extent>,
    /// The store runs SW-WAL: `-wal` files are frame-aligned (see `swwal.rs`).
    #[serde(default)]
    sw_wal: bool,
}

/// I/O the file layer did for SQLite, in the host's units.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileCounters {
    /// Bytes SQLite asked to read (up to each file's end).
    pub read_bytes: u64,
    /// Bytes SQLite wrote.
    pub write_bytes: u64,
    /// Logical pages read from the FTL for SQLite, read-modify-write reads included.
    pub read_pages: u64,
    /// Logical pages written to the FTL with SQLite's data (after the page cache
    /// coalesced them).
    pub write_pages: u64,
    /// Partial-page writes that first had to read the page from the FTL.
    pub rmw_reads: u64,
    /// Page writes SQLite's requests made into the page cache.
    #[serde(default)]
    pub cache_writes: u64,
    /// Page reads (read-modify-write ones included) the page cache served.
    #[serde(default)]
    pub cache_hits: u64,
    /// Pages written back because the cache was over its bound.
    #[serde(default)]
    pub pressure_writebacks: u64,
    /// File-table page writes.
    pub table_writes: u64,
    /// Logical pages trimmed by truncates and deletes.
    pub trims: u64,
    /// `xSync` barriers.
    pub syncs: u64,
    /// Ext4 journal (JBD2) blocks written under the `ext4-ordered` host stack.
    #[serde(default)]
    pub journal_writes: u64,
}

/// NoLgn mode: the transactional file and its commit grouping (its pages are the
/// page cache's).
struct TxMode {
    file: String,
    group_pages: u64,
    /// SQLite runs `synchronous=NORMAL`: commit points wait for `group_pages`.
    grouping: bool,
    /// Page writes SQLite made since the last FTL commit.
    group_writes: u64,
    /// Extents given up since the last FTL commit, freed after it.
    freed: Vec<Extent>,
}

/// SQLite's files on an FTL.
pub struct FileStore {
    ftl: Box<dyn Ftl>,
    page_bytes: usize,
    now: SimTime,
    files: BTreeMap<String, FileEntry>,
    /// Free extents, sorted and coalesced.
    free: Vec<Extent>,
    /// Freed extents the table on flash may still list as being trimmed.
    trimming: Vec<Extent>,
    generation: u64,
    /// The table in RAM has growth the table on flash lacks.
    dirty: bool,
    counters: FileCounters,
    /// `Some` when the store runs SW-WAL.
    sw_wal: Option<swwal::SwWal>,
    /// `Some` in NoLgn mode.
    tx: Option<TxMode>,
    /// Dirty pages not yet on flash.
    cache: PageCache,
    /// Clean pages: what flash holds, kept in RAM (`clean.rs`).
    clean: CleanPages,
    /// The host I/O stack's switch and state.
    host: host_stack::StackState,
    /// How long SQLite's page reads and writes took on the FTL.
    latency: IoLatency,
}

/// The latencies of the logical page reads and writes the file layer sent to the FTL
/// for SQLite (those [`FileCounters::read_pages`] and [`FileCounters::write_pages`]
/// count: file-table and journal writes left out), each from its issue to its end on
/// the device, queueing behind other I/O included.
#[derive(Clone, Debug, Default)]
pub struct IoLatency {
    pub reads: LatencyHistogram,
    pub writes: LatencyHistogram,
}

impl FileStore {
    /// An empty file table on a freshly formatted FTL.
    pub fn format(ftl: Box<dyn Ftl>, now: SimTime) -> Result<FileStore, Error> {
        FileStore::format_with(ftl, now, false)
    }

    /// [`FileStore::format`], running SW-WAL if `sw_wal` (kept in the table, so `open`
    /// finds it): WAL files frame-aligned, checkpoints by remapping.
    pub fn format_with(ftl: Box<dyn Ftl>, now: SimTime, sw_wal: bool) -> Result<FileStore, Error> {
        let mut store = FileStore::empty(ftl, now)?;
        store.sw_wal = sw_wal.then(swwal::SwWal::default);
        store.save_table()?;
        Ok(store)
    }

    /// Whether the store runs SW-WAL.
    pub fn sw_wal(&self) -> bool {
        self.sw_wal.is_some()
    }

    /// Reads the file table of an FTL that [`FileStore::format`] set up.
    pub fn open(ftl: Box<dyn Ftl>, now: SimTime) -> Result<FileStore, Error> {
        let mut store = FileStore::empty(ftl, now)?;
        let mut best: Option<(u64, Table)> = None;
        let mut problems = Vec::new();
        let mut done = now;
        for copy in 0..TABLE_PAGES {
            let parsed = match store.ftl.read(copy, now)? {
                None => Err("never written".to_string()),
                Some(read) => {
                    done = done.max(read.timing.end_ns);
                    parse_table(read.data)
                }
            };
            match parsed {
                Ok((generation, _)) if generation % TABLE_PAGES as u64 != copy as u64 => {
                    problems.push(format!("copy {copy} holds generation {generation}, which belongs in the other copy"))
                }
                Ok((generation, table)) => {
                    if best.as_ref().is_none_or(|(g, _)| generation > *g) {
                        best = Some((generation, table));
                    }
                }
                Err(e) => problems.push(format!("copy {copy}: {e}")),
            }
        }
        let Some((generation, table)) = best else {
            return Err(Error::CorruptTable(format!("no valid copy ({})", problems.join("; "))));
        };
        store.now = done;
        store.generation = generation;
        store.free = free_space(&table, store.ftl.logical_pages())?;
        store.files = table.files;
        store.sw_wal = table.sw_wal.then(swwal::SwWal::default);
        // A cut may have come before these trims ended; they are idempotent.
        store.trimming = table.trimming.clone();
        store.release(table.trimming)?;
        Ok(store)
    }

    fn empty(ftl: Box<dyn Ftl>, now: SimTime) -> Result<FileStore, Error> {
        if !ftl.device().storage().keeps_data() {
            return Err(Error::NoPageData);
        }
        let logical_pages = ftl.logical_pages();
        if logical_pages < TABLE_PAGES + MIN_EXTENT_PAGES {
            return Err(Error::DeviceTooSmall { logical_pages });
        }
        Ok(FileStore {
            page_bytes: ftl.page_bytes(),
            ftl,
            now,
            files: BTreeMap::new(),
            free: vec![Extent { first: TABLE_PAGES, pages: logical_pages - TABLE_PAGES }],
            trimming: Vec::new(),
            generation: 0,
            dirty: false,
            counters: FileCounters::default(),
            sw_wal: None,
            tx: None,
            cache: PageCache::new(DEFAULT_CACHE_PAGES),
            clean: CleanPages::new(DEFAULT_CACHE_PAGES),
            host: host_stack::StackState::default(),
            latency: IoLatency::default(),
        })
    }

    /// Simulated time: when the last I/O ended (or later, after [`FileStore::advance`]).
    pub fn now(&self) -> SimTime {
        self.now
    }

    /// NoLgn mode for `file` (see the module comment); the FTL must be NoLgn-FTL.
    pub fn set_transactional(&mut self, file: &str, group_pages: u64) -> Result<(), Error> {
        if self.ftl.kind() != FtlKind::Nolgn {
            return Err(Error::Flash(flash::Error::NotTransactional { ftl: self.ftl.kind().name().into() }));
        }
        self.tx =
            Some(TxMode { file: file.to_string(), group_pages, grouping: false, group_writes: 0, freed: Vec::new() });
        self.cache.track_open();
        Ok(())
    }

    /// The page cache's bound in pages (0: every page written through at once). A
    /// smaller bound writes the pages dirty the longest back now.
    pub fn set_cache_pages(&mut self, pages: usize) -> Result<(), Error> {
        self.cache.set_bound_pages(pages);
        let now = self.now;
        self.now = self.relieve_pressure(now)?;
        Ok(())
    }

    pub fn cache_pages(&self) -> usize {
        self.cache.bound_pages()
    }

    /// How many clean pages the store keeps in RAM (0: none; `clean.rs`). A smaller
    /// bound drops the pages used the longest ago.
    pub fn set_clean_cache_pages(&mut self, pages: usize) {
        self.clean.set_bound(pages);
    }

    pub fn clean_cache_pages(&self) -> usize {
        self.clean.bound()
    }

    /// Dirty pages in the page cache now.
    pub fn dirty_pages(&self) -> usize {
        self.cache.len()
    }

    /// NoLgn mode: whether commit points wait for `group_pages` page writes.
    pub fn set_grouping(&mut self, grouping: bool) {
        if let Some(tx) = self.tx.as_mut() {
            tx.grouping = grouping;
        }
    }

    /// Whether NoLgn mode is on.
    pub fn transactional(&self) -> bool {
        self.tx.is_some()
    }

    /// NoLgn mode: SQLite left `name`'s transaction without syncing it (a rollback);
    /// the pages it wrote since the last sync are dropped.
    pub fn abandon(&mut self, name: &str) {
        if self.tx.as_ref().is_some_and(|t| t.file == name) {
            self.cache.abandon();
        }
    }

    /// Writes a whole logical page (with a tag, SW-WAL's frame header) into the page
    /// cache; returns when any pressure writeback it caused ended.
    pub(crate) fn put(&mut self, lpn: u32, page: &[u8], tag: Tag, now: SimTime) -> Result<SimTime, Error> {
        self.before_overwrite(lpn)?;
        self.cache.put(lpn, page, tag);
        self.counters.cache_writes += 1;
        if let Some(tx) = self.tx.as_mut() {
            // NoLgn: written at the next commit point only.
            tx.group_writes += 1;
            return Ok(now);
        }
        self.relieve_pressure(now)
    }

    /// Writes back the pages dirty the longest while the cache is over its bound
    /// (never in NoLgn mode, whose pages wait for a commit point); returns when the
    /// writes issued at `now` ended.
    fn relieve_pressure(&mut self, now: SimTime) -> Result<SimTime, Error> {
        let mut end = now;
        while self.tx.is_none() && self.cache.over_bound() {
            let Some((lpn, dirty)) = self.cache.take_oldest() else { break };
            end = end.max(self.write_back(lpn, &dirty.data, dirty.tag, now)?);
            self.counters.pressure_writebacks += 1;
        }
        Ok(end)
    }

    /// Hands one page to the FTL; returns when the write ended.
    pub(crate) fn write_back(&mut self, lpn: u32, data: &[u8], tag: Tag, now: SimTime) -> Result<SimTime, Error> {
        let timing = match tag {
            Some(t) => self.ftl.write_tagged(lpn, data, &t, now)?,
            None => self.ftl.write(lpn, data, now)?,
        };
        self.counters.write_pages += 1;
        self.latency.writes.record(timing.end_ns.saturating_sub(now));
        self.clean.put(lpn, data, Some(tag));
        Ok(timing.end_ns.max(now))
    }

    /// Writes back every dirty page, in LPN order, issued together (outside NoLgn
    /// mode, whose pages go only in a commit).
    fn write_back_all(&mut self) -> Result<(), Error> {
        if self.tx.is_some() {
            return Ok(());
        }
        let pages = self.cache.take_all();
        self.write_back_together(pages)
    }

    /// Writes back `pages`, issued together; returns when the last ended.
    fn write_back_together(&mut self, pages: Vec<(u32, Dirty)>) -> Result<(), Error> {
        let issued = self.now;
        let mut end = issued;
        for (lpn, dirty) in pages {
            end = end.max(self.write_back(lpn, &dirty.data, dirty.tag, issued)?);
        }
        self.now = end;
        Ok(())
    }

    /// A logical page's bytes (and tag, when `tagged`: SW-WAL's FTL keeps them) as
    /// SQLite last wrote them: from the page cache, else from flash (following a queued
    /// remap); `None` if never written. Returns when the read ended.
    pub(crate) fn fetch(&mut self, lpn: u32, tagged: bool, now: SimTime) -> Result<(Option<Fetched>, SimTime), Error> {
        let lpn = self.resolve(lpn);
        if let Some(d) = self.cache.get(lpn) {
            self.counters.cache_hits += 1;
            return Ok((Some((d.data.clone(), d.tag)), now));
        }
        if let Some(page) = self.clean.get(lpn, tagged) {
            self.counters.cache_hits += 1;
            return Ok((Some(page), now));
        }
        self.counters.read_pages += 1;
        if tagged {
            return Ok(match self.ftl.read_tagged(lpn, now)? {
                Some((read, tag)) => {
                    self.latency.reads.record(read.timing.end_ns.saturating_sub(now));
                    self.clean.put(lpn, read.data, Some(tag));
                    (Some((read.data.to_vec(), tag)), read.timing.end_ns.max(now))
                }
                None => (None, now),
            });
        }
        Ok(match self.ftl.read(lpn, now)? {
            Some(read) => {
                self.latency.reads.record(read.timing.end_ns.saturating_sub(now));
                self.clean.put(lpn, read.data, None);
                (Some((read.data.to_vec(), None)), read.timing.end_ns.max(now))
            }
            None => (None, now),
        })
    }

    /// Writes back those of `lpns` that are dirty, issued together (as a sync issues
    /// its pages); returns when the last ended. SW-WAL's queued remaps share their
    /// frames' flash pages, which must hold the frames first.
    pub(crate) fn write_back_dirty(&mut self, lpns: &[u32]) -> Result<(), Error> {
        let pages = lpns.iter().filter_map(|&lpn| self.cache.take(lpn).map(|dirty| (lpn, dirty))).collect();
        self.write_back_together(pages)
    }

    /// A remap onto `lpn` supersedes its dirty page.
    pub(crate) fn discard_dirty(&mut self, lpn: u32) {
        self.cache.take(lpn);
        self.clean.forget(lpn);
    }

    /// `lpn`'s content on flash changes by a path other than [`FileStore::write_back`]
    /// (a remap, a table or journal write).
    pub(crate) fn forget_clean(&mut self, lpn: u32) {
        self.clean.forget(lpn);
    }

    /// Lets simulated time pass (CPU work, a sleep).
    pub fn advance(&mut self, ns: u64) {
        self.now = self.now.saturating_add(ns);
    }

    pub fn page_bytes(&self) -> usize {
        self.page_bytes
    }

    /// The latencies of SQLite's page I/O since the store was opened or last reset.
    pub fn io_latency(&self) -> &IoLatency {
        &self.latency
    }

    /// Starts the latencies afresh (a measurement's start).
    pub fn reset_io_latency(&mut self) {
        self.latency.reads.reset();
        self.latency.writes.reset();
    }

    pub fn counters(&self) -> FileCounters {
        self.counters
    }

    pub fn ftl(&self) -> &dyn Ftl {
        self.ftl.as_ref()
    }

    /// The FTL, for fault injection and tools that look beneath the files; what they
    /// do may change any page, so the clean pages are dropped.
    pub fn ftl_mut(&mut self) -> &mut dyn Ftl {
        self.clean.clear();
        self.ftl.as_mut()
    }

    pub fn into_ftl(self) -> Box<dyn Ftl> {
        self.ftl
    }

    /// Logical pages no file holds.
    pub fn free_pages(&self) -> u64 {
        self.free.iter().map(|e| e.pages as u64).sum()
    }

    /// Every file and its size.
    pub fn files(&self) -> Vec<(String, u64)> {
        self.files.iter().map(|(name, f)| (name.clone(), f.size)).collect()
    }

    pub fn size(&self, name: &str) -> Option<u64> {
        self.files.get(name).map(|f| f.size)
    }

    /// Adds an empty file (recorded on flash by the next table write); a no-op if it exists.
    pub fn create(&mut self, name: &str) {
        if !self.files.contains_key(name) {
            self.files.insert(name.to_string(), FileEntry::default());
            self.dirty = true;
        }
    }

    /// Reads up to `buf.len()` bytes at `offset`; bytes beyond the file's end are
    /// zeroed. Returns how many bytes the file had there.
    pub fn read(&mut self, name: &str, offset: u64, buf: &mut [u8]) -> Result<usize, Error> {
        if self.frame_aligned(name) {
            return self.wal_read(name, offset, buf);
        }
        let size = self.entry(name)?.size;
        let avail = size.saturating_sub(offset).min(buf.len() as u64) as usize;
        buf[avail..].fill(0);
        let pb = self.page_bytes as u64;
        let issued = self.now;
        let mut end = issued;
        let mut pos = 0;
        while pos < avail {
            let at = offset + pos as u64;
            let in_page = (at % pb) as usize;
            let n = (self.page_bytes - in_page).min(avail - pos);
            let target = &mut buf[pos..pos + n];
            match self.files.get(name).and_then(|f| f.lpn(at / pb)) {
                Some(lpn) => {
                    let (page, ready) = self.fetch(lpn, false, issued)?;
                    end = end.max(ready);
                    match page {
                        Some((data, _)) => target.copy_from_slice(&data[in_page..in_page + n]),
                        None => target.fill(0),
                    }
                }
                None => target.fill(0),
            }
            pos += n;
        }
        self.now = end;
        self.counters.read_bytes += avail as u64;
        Ok(avail)
    }

    /// Writes `data` at `offset`, growing the file (and its extents) as needed. The
    /// pages go to the FTL together; partial pages are read first.
    pub fn write(&mut self, name: &str, offset: u64, data: &[u8]) -> Result<(), Error> {
        self.host_write_call();
        let result = self.write_pages(name, offset, data);
        if result.is_err() {
            // NoLgn mode: SQLite's commit failed and it will roll back (it may keep its
            // lock, so `abandon` on unlock would come too late).
            self.abandon(name);
        }
        result
    }

    fn write_pages(&mut self, name: &str, offset: u64, data: &[u8]) -> Result<(), Error> {
        if data.is_empty() {
            return Ok(());
        }
        if self.frame_aligned(name) {
            return self.wal_write(name, offset, data);
        }
        if self.try_remap_write(name, offset, data)? {
            return Ok(());
        }
        let mut old_size = self.entry(name)?.size;
        if offset > old_size {
            self.zero_tail(name, old_size, offset)?;
            old_size = self.entry(name)?.size;
        }
        let pb = self.page_bytes as u64;
        let end_offset = offset + data.len() as u64;
        self.ensure_pages(name, end_offset.div_ceil(pb))?;
        let issued = self.now;
        let mut end = issued;
        let mut page = vec![0u8; self.page_bytes];
        let mut pos = 0;
        while pos < data.len() {
            let at = offset + pos as u64;
            let index = at / pb;
            let in_page = (at % pb) as usize;
            let n = (self.page_bytes - in_page).min(data.len() - pos);
            let lpn = self.lpn(name, index)?;
            let done = if n == self.page_bytes {
                self.put(lpn, &data[pos..pos + n], None, issued)?
            } else {
                let ready = self.read_page_into(lpn, index * pb < old_size, &mut page, issued)?;
                // Bytes at or past the old end read as zeros, whatever the page held.
                if old_size < (index + 1) * pb {
                    page[old_size.saturating_sub(index * pb) as usize..].fill(0);
                }
                page[in_page..in_page + n].copy_from_slice(&data[pos..pos + n]);
                self.put(lpn, &page, None, ready)?
            };
            end = end.max(done);
            pos += n;
        }
        self.now = end;
        self.counters.write_bytes += data.len() as u64;
        if let Some(f) = self.files.get_mut(name) {
            if end_offset > f.size {
                f.size = end_offset;
                self.dirty = true;
                self.host_grew(false);
            }
        }
        Ok(())
    }

    /// Sets the file's size. Growing writes zeros over the rest of the last page;
    /// shrinking frees the extents past the new end, writes the table, then trims them.
    pub fn truncate(&mut self, name: &str, size: u64) -> Result<(), Error> {
        if self.frame_aligned(name) {
            return self.wal_truncate(name, size);
        }
        let old_size = self.entry(name)?.size;
        let pb = self.page_bytes as u64;
        if size > old_size {
            self.zero_tail(name, old_size, size)?;
            self.entry_mut(name)?.size = size;
            self.dirty = true;
            return Ok(());
        }
        if size == old_size {
            return Ok(());
        }
        let entry = self.entry_mut(name)?;
        entry.size = size;
        let freed = split_off_pages(&mut entry.extents, size.div_ceil(pb));
        if let Some(tx) = self.tx.as_mut().filter(|t| t.file == name) {
            // Recorded by the next commit's table, freed after it.
            tx.freed.extend(freed.iter().copied());
            self.drop_dirty(&freed)?;
            self.trimming.extend(freed);
            self.dirty = true;
            return Ok(());
        }
        self.free_extents(freed)
    }

    /// Growing a file from `old_size` to `new_size` without data: zeros over the rest
    /// of the old last page, which may hold bytes a truncate cut off (pages after it
    /// were trimmed or never written, and read as zeros).
    fn zero_tail(&mut self, name: &str, old_size: u64, new_size: u64) -> Result<(), Error> {
        let page_end = old_size.div_ceil(self.page_bytes as u64) * self.page_bytes as u64;
        let zeros = page_end.min(new_size) - old_size;
        self.write(name, old_size, &vec![0u8; zeros as usize])
    }

    /// Removes the file: writes the table without it, then trims its pages.
    pub fn delete(&mut self, name: &str) -> Result<(), Error> {
        self.forget_wal(name);
        let entry = self.files.remove(name).ok_or_else(|| Error::NoSuchFile(name.to_string()))?;
        self.free_extents(entry.extents)
    }

    /// Records `freed` as being trimmed in the table on flash, trims the pages and
    /// makes them free.
    fn free_extents(&mut self, freed: Vec<Extent>) -> Result<(), Error> {
        // Dropped before the table write, which would write them back.
        self.drop_dirty(&freed)?;
        self.trimming.extend(freed.iter().copied());
        self.save_table()?;
        self.release(freed)
    }

    /// Drops the dirty pages of extents a file gave up (after any queued remap from
    /// one of them reached the FTL, and forgetting remaps onto them).
    fn drop_dirty(&mut self, extents: &[Extent]) -> Result<(), Error> {
        for e in extents {
            for lpn in e.first..e.first + e.pages {
                self.before_overwrite(lpn)?;
                self.cache.take(lpn);
            }
        }
        Ok(())
    }

    /// The flush barrier: writes the table if files grew, then a commit point on the
    /// device (an image file's fdatasync, by its sync mode).
    pub fn sync(&mut self) -> Result<(), Error> {
        self.flush_remaps()?;
        if let Some(tx) = self.tx.as_ref() {
            self.cache.seal();
            if tx.grouping && tx.group_writes < tx.group_pages && !self.cache.over_bound() {
                // NORMAL: durable at the group's commit point.
                self.counters.syncs += 1;
                return Ok(());
            }
            self.commit_group()?;
        } else {
            self.write_back_all()?;
            if self.dirty {
                self.save_table()?;
            }
        }
        self.host_fsync()?;
        self.ftl.device_mut().storage_mut().sync(SyncPoint::Commit)?;
        self.counters.syncs += 1;
        Ok(())
    }

    /// Ages the device as the NoLgn-FTL paper does (§4.1) before SQLite's files exist:
    /// [`AGING_FILE`] takes `pages` logical pages, written once in order, then gets
    /// `overwrites` random whole-page overwrites, so the FTL's GC runs in its steady
    /// state. The file stays: its pages are the space a used device no longer has free.
    pub fn age(&mut self, pages: u64, overwrites: u64, rng: &mut impl rand::Rng) -> Result<(), Error> {
        if pages == 0 {
            return Ok(());
        }
        self.create(AGING_FILE);
        // Allocated whole up front: growing it by doubling would take the free share too.
        self.ensure_pages(AGING_FILE, pages)?;
        // Straight to the FTL, as the paper's direct 4 KB writes: a page cache would
        // coalesce the random overwrites.
        const CHUNK_PAGES: u64 = 64;
        let pb = self.page_bytes as u64;
        let page = vec![0xA5u8; self.page_bytes];
        // The fill in chunks issued together, then one overwrite after another.
        let mut issued = self.now;
        let mut end = issued;
        for i in 0..pages + overwrites {
            if i >= pages || i % CHUNK_PAGES == 0 {
                issued = end;
            }
            let index = if i < pages { i } else { rng.gen_range(0..pages) };
            let lpn = self.lpn(AGING_FILE, index)?;
            end = end.max(self.write_back(lpn, &page, None, issued)?);
        }
        self.now = end;
        self.counters.write_bytes += (pages + overwrites) * pb;
        self.entry_mut(AGING_FILE)?.size = pages * pb;
        self.dirty = true;
        self.sync()
    }

    /// Makes everything durable for a clean close: the table, then a checkpoint-class
    /// sync of an image file.
    pub fn flush(&mut self) -> Result<(), Error> {
        self.flush_remaps()?;
        if self.tx.is_some() {
            self.cache.seal();
            self.commit_group()?;
        }
        if self.dirty {
            self.save_table()?;
        }
        self.ftl.device_mut().storage_mut().flush()?;
        Ok(())
    }

    fn entry(&self, name: &str) -> Result<&FileEntry, Error> {
        self.files.get(name).ok_or_else(|| Error::NoSuchFile(name.to_string()))
    }

    fn entry_mut(&mut self, name: &str) -> Result<&mut FileEntry, Error> {
        self.files.get_mut(name).ok_or_else(|| Error::NoSuchFile(name.to_string()))
    }

    fn lpn(&self, name: &str, index: u64) -> Result<u32, Error> {
        self.entry(name)?
            .lpn(index)
            .ok_or_else(|| Error::CorruptTable(format!("page {index} of file {name} has no extent (a file-layer bug)")))
    }

    /// Fills `page` with the logical page (zeros when `has_data` is false or it was
    /// never written); returns when the read ended.
    fn read_page_into(&mut self, lpn: u32, has_data: bool, page: &mut [u8], now: SimTime) -> Result<SimTime, Error> {
        page.fill(0);
        if !has_data {
            return Ok(now);
        }
        let hits = self.counters.cache_hits;
        let (data, ready) = self.fetch(lpn, false, now)?;
        if self.counters.cache_hits == hits {
            self.counters.rmw_reads += 1;
        }
        if let Some((data, _)) = data {
            page.copy_from_slice(&data);
        }
        Ok(ready)
    }

    /// Gives the file at least `pages` allocated pages.
    fn ensure_pages(&mut self, name: &str, pages: u64) -> Result<(), Error> {
        let allocated = self.entry(name)?.allocated_pages();
        if pages <= allocated {
            return Ok(());
        }
        let free_pages = self.free_pages();
        let needed = pages - allocated;
        if needed > free_pages {
            return Err(Error::NoSpace { file: name.to_string(), needed_pages: needed, free_pages });
        }
        // Doubling keeps a file's extent list logarithmic in its size.
        let mut want = needed.max(allocated).max(MIN_EXTENT_PAGES as u64).min(free_pages);
        let mut got = Vec::new();
        while want > 0 {
            let fit = self.free.iter().position(|e| e.pages as u64 >= want);
            let i = match fit {
                Some(i) => i,
                None => (0..self.free.len()).max_by_key(|&i| self.free[i].pages).unwrap_or(0),
            };
            let take = (self.free[i].pages as u64).min(want) as u32;
            got.push(Extent { first: self.free[i].first, pages: take });
            self.free[i].first += take;
            self.free[i].pages -= take;
            if self.free[i].pages == 0 {
                self.free.remove(i);
            }
            want -= take as u64;
        }
        let entry = self.entry_mut(name)?;
        for e in got {
            match entry.extents.last_mut() {
                Some(last) if last.end() == e.first as u64 => last.pages += e.pages,
                _ => entry.extents.push(e),
            }
        }
        self.dirty = true;
        self.host_grew(true);
        Ok(())
    }

    /// Trims freed extents and returns them to the free list (the table that frees
    /// them is already on flash). The next table write no longer lists them.
    fn release(&mut self, freed: Vec<Extent>) -> Result<(), Error> {
        let issued = self.now;
        let mut end = issued;
        self.drop_dirty(&freed)?;
        for e in &freed {
            for lpn in e.first..e.first + e.pages {
                self.clean.forget(lpn);
                if let Some(t) = self.ftl.trim(lpn, issued)? {
                    end = end.max(t.end_ns);
                }
                self.counters.trims += 1;
            }
        }
        self.now = end;
        self.trimming.retain(|t| !freed.contains(t));
        if !freed.is_empty() {
            self.dirty = true;
        }
        self.free.extend(freed);
        self.free.sort_by_key(|e| e.first);
        let mut merged: Vec<Extent> = Vec::with_capacity(self.free.len());
        for e in self.free.drain(..) {
            match merged.last_mut() {
                Some(last) if last.end() == e.first as u64 => last.pages += e.pages,
                _ => merged.push(e),
            }
        }
        self.free = merged;
        Ok(())
    }

    /// NoLgn mode: writes the held pages (and the table, if it changed) as one FTL
    /// transaction, the last page with the end flag, commits it, then frees the
    /// extents it recorded as given up.
    fn commit_group(&mut self) -> Result<(), Error> {
        let Some(tx) = self.tx.as_mut() else { return Ok(()) };
        tx.group_writes = 0;
        let pages = self.cache.take_all();
        if pages.is_empty() {
            if self.dirty {
                self.save_table()?;
            }
            return Ok(());
        }
        let tid = self.ftl.begin_tx()?;
        if let Err(e) = self.write_group(tid, pages) {
            // The transaction's pages are rolled back (or lost): what flash holds for
            // them is not what the clean pages say.
            self.clean.clear();
            if !matches!(e, Error::Flash(flash::Error::Device(_) | flash::Error::NeedsReopen { .. })) {
                let _ = self.ftl.abort(tid, self.now);
            }
            return Err(e);
        }
        if let Err(e) = self.ftl.commit(tid, self.now) {
            self.clean.clear();
            return Err(e.into());
        }
        let freed = self.tx.as_mut().map(|t| std::mem::take(&mut t.freed)).unwrap_or_default();
        if !freed.is_empty() {
            self.release(freed)?;
        }
        Ok(())
    }

    fn write_group(&mut self, tid: u32, pages: Vec<(u32, crate::cache::Dirty)>) -> Result<(), Error> {
        let table = if self.dirty { Some(self.table_page()?) } else { None };
        let last = pages.len() - usize::from(table.is_none());
        let issued = self.now;
        let mut end = issued;
        for (i, (lpn, page)) in pages.iter().enumerate() {
            let done = self.ftl.write_tx(*lpn, &page.data, tid, i == last, issued)?.end_ns;
            end = end.max(done);
            self.latency.writes.record(done.saturating_sub(issued));
            self.clean.put(*lpn, &page.data, Some(None));
            self.counters.write_pages += 1;
        }
        if let Some((generation, copy, page)) = table {
            self.clean.forget(copy);
            end = end.max(self.ftl.write_tx(copy, &page, tid, true, issued)?.end_ns);
            self.generation = generation;
            self.dirty = false;
            self.counters.table_writes += 1;
        }
        self.now = end;
        Ok(())
    }

    /// Writes the table to the copy the previous write did not use, after the dirty
    /// pages (ordered: it never records a size whose bytes are only in RAM).
    fn save_table(&mut self) -> Result<(), Error> {
        self.write_back_all()?;
        let (generation, copy, page) = self.table_page()?;
        self.clean.forget(copy);
        self.now = self.ftl.write(copy, &page, self.now)?.end_ns.max(self.now);
        self.generation = generation;
        self.dirty = false;
        self.counters.table_writes += 1;
        Ok(())
    }

    /// The next table write: its generation, its copy's logical page, the page.
    fn table_page(&self) -> Result<(u64, u32, Vec<u8>), Error> {
        let table = Table { files: self.files.clone(), trimming: self.trimming.clone(), sw_wal: self.sw_wal.is_some() };
        let json = serde_json::to_vec(&table).map_err(|e| Error::CorruptTable(format!("encoding: {e}")))?;
        let room_bytes = self.page_bytes - HEADER;
        if json.len() > room_bytes {
            return Err(Error::TableTooLarge { bytes: json.len(), room_bytes });
        }
        let generation = self.generation + 1;
        let mut page = vec![0u8; self.page_bytes];
        page[..8].copy_from_slice(MAGIC);
        page[8..16].copy_from_slice(&generation.to_le_bytes());
        page[16..20].copy_from_slice(&(json.len() as u32).to_le_bytes());
        page[20..24].copy_from_slice(&crc32fast::hash(&json).to_le_bytes());
        page[HEADER..HEADER + json.len()].copy_from_slice(&json);
        let copy = (generation % TABLE_PAGES as u64) as u32;
        Ok((generation, copy, page))
    }
}

/// Decodes one table copy: its generation and files.
fn parse_table(page: &[u8]) -> Result<(u64, Table), String> {
    if page.len() < HEADER || &page[..8] != MAGIC {
        return Err("no file-table magic".into());
    }
    let field = |range: std::ops::Range<usize>| page[range].iter().rev().fold(0u64, |acc, &b| acc << 8 | b as u64);
    let generation = field(8..16);
    let len = field(16..20) as usize;
    let crc = field(20..24) as u32;
    let Some(json) = page.get(HEADER..HEADER + len) else {
        return Err(format!("JSON length {len} runs past the page"));
    };
    if crc32fast::hash(json) != crc {
        return Err("checksum mismatch (a torn write)".into());
    }
    let table = serde_json::from_slice(json).map_err(|e| format!("JSON: {e}"))?;
    Ok((generation, table))
}

/// The pages no file holds and no trim awaits; refuses extents out of range or
/// overlapping.
fn free_space(table: &Table, logical_pages: u32) -> Result<Vec<Extent>, Error> {
    let mut used: Vec<(Extent, &str)> =
        table.files.iter().flat_map(|(name, f)| f.extents.iter().map(move |e| (*e, name.as_str()))).collect();
    used.extend(table.trimming.iter().map(|e| (*e, "(being trimmed)")));
    used.sort_by_key(|(e, _)| e.first);
    let mut free = Vec::new();
    let mut cursor = TABLE_PAGES as u64;
    for (e, name) in used {
        if (e.first as u64) < cursor || e.end() > logical_pages as u64 || e.pages == 0 {
            return Err(Error::CorruptTable(format!(
                "file {name}: extent of {} pages at logical page {} overlaps another or lies outside pages {TABLE_PAGES}..{logical_pages}",
                e.pages, e.first
            )));
        }
        if e.first as u64 > cursor {
            free.push(Extent { first: cursor as u32, pages: (e.first as u64 - cursor) as u32 });
        }
        cursor = e.end();
    }
    if cursor < logical_pages as u64 {
        free.push(Extent { first: cursor as u32, pages: (logical_pages as u64 - cursor) as u32 });
    }
    Ok(free)
}

/// Keeps the first `keep_pages` pages of `extents`; returns the rest.
fn split_off_pages(extents: &mut Vec<Extent>, keep_pages: u64) -> Vec<Extent> {
    let mut kept = 0u64;
    let mut freed = Vec::new();
    let mut keep = Vec::new();
    for e in extents.drain(..) {
        let room = keep_pages.saturating_sub(kept);
        if room >= e.pages as u64 {
            keep.push(e);
        } else if room > 0 {
            keep.push(Extent { first: e.first, pages: room as u32 });
            freed.push(Extent { first: e.first + room as u32, pages: e.pages - room as u32 });
        } else {
            freed.push(e);
        }
        kept += e.pages as u64;
    }
    *extents = keep;
    freed
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A table page with a valid header and checksum around `json`.
    fn page_around(json: &[u8]) -> Vec<u8> {
        let mut page = vec![0u8; HEADER + json.len()];
        page[..8].copy_from_slice(MAGIC);
        page[8..16].copy_from_slice(&5u64.to_le_bytes());
        page[16..20].copy_from_slice(&(json.len() as u32).to_le_bytes());
        page[20..24].copy_from_slice(&crc32fast::hash(json).to_le_bytes());
        page[HEADER..].copy_from_slice(json);
        page
    }

    proptest::proptest! {
        /// Arbitrary pages, and arbitrary JSON behind a valid header and checksum,
        /// decode to a table or an error, never a panic.
        #[test]
        fn fuzz_file_table_decoder_never_panics(
            bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..600),
            text in "[{}\\[\\]\":,0-9a-z ]{0,200}",
        ) {
            let _ = parse_table(&bytes);
            let _ = parse_table(&page_around(&bytes));
            let _ = parse_table(&page_around(text.as_bytes()));
        }
    }

    #[test]
    fn a_table_round_trips_through_its_page() {
        let table = Table { files: BTreeMap::new(), trimming: Vec::new(), sw_wal: false };
        let json = serde_json::to_vec(&table).unwrap();
        let Ok((generation, back)) = parse_table(&page_around(&json)) else { panic!("a valid page") };
        assert_eq!(generation, 5);
        assert_eq!(serde_json::to_vec(&back).unwrap(), json);
        let mut torn = page_around(&json);
        *torn.last_mut().unwrap() ^= 1;
        assert!(matches!(parse_table(&torn), Err(e) if e.contains("checksum")));
    }
}
