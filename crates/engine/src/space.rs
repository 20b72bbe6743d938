//! Page allocation: regions hand out extents, objects hand out pages from their
//! extents (and reuse pages they freed).
//!
//! An extent is `extent_pages` consecutive DB pages aligned to its size (the
//! tablespace's EXTENT SIZE). Which extents belong to which object is stored in the
//! catalog; a region's free extents are whatever no object holds.

use crate::buffer::{FrameId, PageMut, Pages};
use crate::error::{Error, Result};
use crate::logrec::{AllocHow, Body, Record};
use crate::page;
use crate::store::PageId;
use serde::{Deserialize, Serialize};

/// Which DB pages of a region are held by some object.
pub struct RegionPages {
    region: u16,
    taken: Vec<bool>,
}

impl RegionPages {
    pub fn new(region: u16, pages: u32) -> RegionPages {
        RegionPages { region, taken: vec![false; pages as usize] }
    }

    /// Marks pages held (at open, from the catalog); overlap means a corrupt catalog.
    pub fn claim(&mut self, start: u32, len: u32) -> Result<()> {
        let range = start as usize..(start + len) as usize;
        match self.taken.get_mut(range) {
            Some(pages) if pages.iter().all(|t| !t) => {
                pages.fill(true);
                Ok(())
            }
            _ => Err(Error::Corrupt(format!(
                "catalog: extent at page {start} (+{len}) of region {} overlaps another or lies beyond the region",
                self.region
            ))),
        }
    }

    /// The first free aligned extent of `len` pages.
    fn take_extent(&mut self, len: u32) -> Option<u32> {
        let len = len as usize;
        let start =
            (0..self.taken.len() / len).map(|e| e * len).find(|&s| self.taken[s..s + len].iter().all(|t| !t))?;
        self.taken[start..start + len].fill(true);
        Some(start as u32)
    }

    /// The pages no object holds, in order.
    pub fn free_pages(&self) -> impl Iterator<Item = u32> + '_ {
        self.taken.iter().enumerate().filter(|(_, taken)| !**taken).map(|(p, _)| p as u32)
    }

    pub fn release(&mut self, start: u32, len: u32) {
        self.taken[start as usize..(start + len) as usize].fill(false);
    }
}

/// The pages of one object.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObjectSpace {
    pub region: u16,
    pub extent_pages: u32,
    /// First page of each extent, in allocation order.
    pub extents: Vec<u32>,
    /// Pages handed out from the last extent.
    pub used_in_last: u32,
    /// Pages the object freed, handed out again first.
    pub free: Vec<u32>,
    /// Heap pages that lost tuples and may take inserts (not stored).
    #[serde(skip)]
    pub with_room: Vec<u32>,
}

impl ObjectSpace {
    pub fn new(region: u16, extent_pages: u32) -> ObjectSpace {
        ObjectSpace { region, extent_pages, ..Default::default() }
    }

    /// A page for the object: a freed one, the next of the last extent, or the first of
    /// a new extent.
    pub fn allocate(&mut self, regions: &mut RegionPages) -> Result<(u32, AllocHow)> {
        if let Some(p) = self.free.pop() {
            return Ok((p, AllocHow::FromFreeList));
        }
        match self.extents.last() {
            Some(&start) if self.used_in_last < self.extent_pages => {
                self.used_in_last += 1;
                Ok((start + self.used_in_last - 1, AllocHow::NextInExtent))
            }
            _ => {
                let start = regions
                    .take_extent(self.extent_pages)
                    .ok_or(Error::NoFreeExtent { region: self.region, extent_pages: self.extent_pages })?;
                self.extents.push(start);
                self.used_in_last = 1;
                Ok((start, AllocHow::NewExtent))
            }
        }
    }

    /// Repeats a logged allocation (restart redo); idempotent.
    pub fn redo_allocate(&mut self, regions: &mut RegionPages, page: u32, how: AllocHow) -> Result<()> {
        match how {
            AllocHow::FromFreeList => self.free.retain(|&p| p != page),
            AllocHow::NewExtent => {
                if !self.extents.contains(&page) {
                    regions.claim(page, self.extent_pages)?;
                    self.extents.push(page);
                    self.used_in_last = 1;
                }
            }
            AllocHow::NextInExtent => {
                if let Some(&start) = self.extents.last() {
                    if (start..start + self.extent_pages).contains(&page) {
                        self.used_in_last = self.used_in_last.max(page - start + 1);
                    }
                }
            }
        }
        Ok(())
    }

    /// Every page handed out and not freed, in allocation order.
    pub fn pages(&self) -> impl Iterator<Item = u32> + '_ {
        let n = self.extents.len();
        self.extents
            .iter()
            .enumerate()
            .flat_map(move |(i, &s)| s..s + if i + 1 == n { self.used_in_last } else { self.extent_pages })
            .filter(|p| !self.free.contains(p))
    }

    /// The last page handed out.
    pub fn last_page(&self) -> Option<u32> {
        self.extents.last().map(|&s| s + self.used_in_last - 1)
    }
}

/// What an access method works with: the pool, the object's pages and its region's
/// allocator, the object id for new pages, and the transaction it works for (its last
/// LSN in `prev`; allocations and formats are logged on the way). Pages it frees are
/// collected in `freed`: with a log they return to the free list only at commit, so an
/// undo finds them as they were.
pub struct ObjectAccess<'a> {
    pub pool: Pages<'a>,
    pub space: &'a mut ObjectSpace,
    pub regions: &'a mut RegionPages,
    pub object: u32,
    pub tx: u64,
    pub prev: u64,
    pub freed: Vec<u32>,
}

impl ObjectAccess<'_> {
    pub fn pid(&self, page: u32) -> PageId {
        PageId { region: self.space.region, page }
    }

    /// Where the delta area of the object's new pages starts (its current IPA scheme).
    pub fn body_end(&self) -> usize {
        self.pool.store().object_body_end(self.object, self.space.region)
    }

    /// Pins a page to change it; it adopts the object's current layout first if it has
    /// an older one and its tuples fit ([`ObjectAccess::adopt`]).
    pub fn fetch(&mut self, page: u32) -> Result<FrameId> {
        let pid = self.pid(page);
        let f = self.pool.fetch(pid)?;
        self.adopt(f);
        Ok(f)
    }

    /// Moves the pinned page `f` to the object's current layout (`ALTER … SET IPA`)
    /// when it has another one and its tuples fit; a logged change of the operation,
    /// so undo and redo treat it like any other.
    pub fn adopt(&mut self, f: FrameId) {
        let target = self.body_end();
        if page::body_end(self.pool.page(f)) != target {
            let mut copy = self.pool.page(f).to_vec();
            if page::relayout(&mut copy, target) {
                self.pool.page_bytes_mut(f).copy_from_slice(&copy);
            }
        }
    }

    /// Allocates and formats a page (both logged); returns its number and pinned frame.
    pub fn new_page(&mut self, kind: page::Kind, level: u8) -> Result<(u32, FrameId)> {
        let (no, how) = self.space.allocate(self.regions)?;
        let alloc = Record { tx: self.tx, prev: self.prev, body: Body::Alloc { object: self.object, page: no, how } };
        self.prev = self.pool.journal.record(&alloc)?.max(self.prev);
        let f = self.pool.create(self.pid(no))?;
        let body_end = self.body_end();
        page::init(self.pool.page_mut(f), body_end, no, self.object, kind, level);
        let Pages { pool, journal } = &mut self.pool;
        self.prev = pool.log_format(*journal, f, self.tx, self.prev)?.max(self.prev);
        Ok((no, f))
    }

    /// The frame's page for a change (logged when the operation ends).
    pub fn page_mut(&mut self, f: FrameId) -> PageMut<'_> {
        self.pool.page_mut(f)
    }

    /// The frame's bytes for a change anywhere on the page.
    pub fn page_bytes_mut(&mut self, f: FrameId) -> &mut [u8] {
        self.pool.page_bytes_mut(f)
    }

    /// Frees a page the caller has pinned (the pin goes with it).
    pub fn free_page(&mut self, page: u32) -> Result<()> {
        let pid = self.pid(page);
        if self.pool.journal.logs_changes() {
            self.pool.unpin_page(pid);
            self.freed.push(page);
        } else {
            self.pool.discard(pid)?;
            self.space.free.push(page);
        }
        Ok(())
    }
}
