//! The file layer's write-back page cache: whole logical pages SQLite wrote, held
//! dirty in RAM until a sync writes them back in LPN order, or until the cache holds
//! more than its bound and the pages dirty the longest go first (the kernel's writeback
//! under memory pressure). Reads of a dirty page are served from here. Only dirty
//! pages are kept: a written-back page is dropped (SQLite's own page cache holds what
//! it reads).
//!
//! Invariants: at most one entry per logical page; an entry's age is when the page
//! first became dirty (a rewrite keeps it, as the kernel's `dirtied_when`); `by_age`
//! indexes exactly the entries.
//!
//! NoLgn mode ([`PageCache::track_open`]): the pages written since the last sync are
//! SQLite's open transaction. Each remembers the dirty version it replaced (or that
//! the page was clean), so [`PageCache::abandon`] undoes the transaction and
//! [`PageCache::seal`] (at a sync) makes it part of the group the next FTL commit
//! writes.
//!
//! Fault model: the cache is RAM; a power cut loses every page in it, that is, every
//! write since the last sync that was not yet written back (what Ext4 loses); it never
//! holds anything a completed sync covered.

use flash::ftl::TAG_BYTES;
use std::collections::{BTreeMap, HashMap};

/// A WAL frame header riding in a page's OOB (SW-WAL); `None` for an untagged page.
pub(crate) type Tag = Option<[u8; TAG_BYTES]>;

/// One dirty page.
pub(crate) struct Dirty {
    pub data: Vec<u8>,
    pub tag: Tag,
    age: u64,
}

/// What a page was before the open transaction first wrote it (NoLgn mode).
enum Before {
    Clean,
    Dirty(Vec<u8>, Tag),
}

/// Dirty logical pages in RAM.
pub(crate) struct PageCache {
    bound_pages: usize,
    pages: HashMap<u32, Dirty>,
    /// Entries by age: the writeback order under pressure.
    by_age: BTreeMap<u64, u32>,
    next_age: u64,
    /// `Some` in NoLgn mode: the open transaction's pages and what each replaced.
    open: Option<BTreeMap<u32, Before>>,
}

impl PageCache {
    pub fn new(bound_pages: usize) -> PageCache {
        PageCache { bound_pages, pages: HashMap::new(), by_age: BTreeMap::new(), next_age: 0, open: None }
    }

    pub fn bound_pages(&self) -> usize {
        self.bound_pages
    }

    pub fn set_bound_pages(&mut self, bound_pages: usize) {
        self.bound_pages = bound_pages;
    }

    /// NoLgn mode: remember the open transaction's pages from now on.
    pub fn track_open(&mut self) {
        self.open.get_or_insert_with(BTreeMap::new);
    }

    pub fn len(&self) -> usize {
        self.pages.len()
    }

    pub fn over_bound(&self) -> bool {
        self.pages.len() > self.bound_pages
    }

    pub fn get(&self, lpn: u32) -> Option<&Dirty> {
        self.pages.get(&lpn)
    }

    /// Makes `data` (with `tag`) the page's dirty content.
    pub fn put(&mut self, lpn: u32, data: &[u8], tag: Tag) {
        if let Some(open) = self.open.as_mut() {
            open.entry(lpn).or_insert_with(|| match self.pages.get(&lpn) {
                Some(d) => Before::Dirty(d.data.clone(), d.tag),
                None => Before::Clean,
            });
        }
        match self.pages.get_mut(&lpn) {
            Some(d) => {
                d.data.clear();
                d.data.extend_from_slice(data);
                d.tag = tag;
            }
            None => {
                let age = self.next_age;
                self.next_age += 1;
                self.by_age.insert(age, lpn);
                self.pages.insert(lpn, Dirty { data: data.to_vec(), tag, age });
            }
        }
    }

    /// Removes the page's entry (written back, trimmed or superseded), forgetting it
    /// in the open transaction too.
    pub fn take(&mut self, lpn: u32) -> Option<Dirty> {
        if let Some(open) = self.open.as_mut() {
            open.remove(&lpn);
        }
        let dirty = self.pages.remove(&lpn)?;
        self.by_age.remove(&dirty.age);
        Some(dirty)
    }

    /// The page dirty the longest, removed (pressure writeback). Pages of the open
    /// transaction are never chosen: NoLgn writes them only in an FTL transaction.
    pub fn take_oldest(&mut self) -> Option<(u32, Dirty)> {
        let lpn = *self.by_age.values().find(|lpn| self.open.as_ref().is_none_or(|o| !o.contains_key(lpn)))?;
        self.take(lpn).map(|d| (lpn, d))
    }

    /// Every dirty page, in LPN order, removed (a sync's writeback or a commit).
    pub fn take_all(&mut self) -> Vec<(u32, Dirty)> {
        self.by_age.clear();
        if let Some(open) = self.open.as_mut() {
            open.clear();
        }
        let mut all: Vec<(u32, Dirty)> = self.pages.drain().collect();
        all.sort_unstable_by_key(|(lpn, _)| *lpn);
        all
    }

    /// NoLgn: SQLite synced its transaction; its pages join the group to commit.
    pub fn seal(&mut self) {
        if let Some(open) = self.open.as_mut() {
            open.clear();
        }
    }

    /// NoLgn: SQLite rolled its transaction back; each page it wrote returns to what it
    /// was before (clean, or the version an earlier synced transaction left dirty).
    pub fn abandon(&mut self) {
        let Some(open) = self.open.as_mut() else { return };
        for (lpn, before) in std::mem::take(open) {
            match before {
                Before::Clean => {
                    if let Some(d) = self.pages.remove(&lpn) {
                        self.by_age.remove(&d.age);
                    }
                }
                Before::Dirty(data, tag) => {
                    if let Some(d) = self.pages.get_mut(&lpn) {
                        d.data = data;
                        d.tag = tag;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pressure_takes_the_page_dirty_the_longest_and_a_rewrite_keeps_its_age() {
        let mut c = PageCache::new(2);
        c.put(7, &[1], None);
        c.put(3, &[2], None);
        c.put(7, &[3], None);
        c.put(5, &[4], None);
        assert!(c.over_bound());
        let (lpn, d) = c.take_oldest().unwrap();
        assert_eq!((lpn, d.data), (7, vec![3]));
        assert!(!c.over_bound());
        let all: Vec<u32> = c.take_all().into_iter().map(|(l, _)| l).collect();
        assert_eq!(all, vec![3, 5]);
        assert_eq!(c.len(), 0);
    }

    #[test]
    fn abandon_restores_the_synced_version_and_drops_new_pages() {
        let mut c = PageCache::new(10);
        c.track_open();
        c.put(1, &[1], None);
        c.seal();
        c.put(1, &[2], None);
        c.put(2, &[9], None);
        assert!(c.take_oldest().is_none(), "open pages are never written back alone");
        c.abandon();
        assert_eq!(c.get(1).map(|d| d.data.clone()), Some(vec![1]));
        assert!(c.get(2).is_none());
        assert_eq!(c.take_oldest().map(|(l, _)| l), Some(1));
    }
}
