//! The file layer's clean pages: logical pages as they are on flash, kept after a
//! write-back, an FTL commit or a read, so that a later read of the page (or the read
//! a partial-page write needs first) is served from RAM. Linux's page cache keeps
//! clean pages until memory pressure evicts them, least recently used first; without
//! them, every WAL frame rewritten after a checkpoint (frames straddle pages) and every
//! page SQLite re-reads would cost a flash read the kernel never issues.
//!
//! Invariant: an entry equals what the FTL returns for its LPN now. Every path that
//! changes an LPN's content other than through the entry's own write (a trim, a remap,
//! a table or journal write, an aborted FTL transaction, a tool reaching beneath the
//! files) forgets the entry, or clears the whole cache. A power cut loses it with the
//! rest of RAM; it never holds anything that is not on flash.

use crate::cache::Tag;
use std::collections::{BTreeMap, HashMap};

struct Entry {
    data: Vec<u8>,
    /// `Some(tag)` when the page's tag is known (it was written or read tagged);
    /// `None` after an untagged read, which does not see the tag.
    tag: Option<Tag>,
    stamp: u64,
}

/// Clean logical pages in RAM, at most `bound` (0: none kept).
pub(crate) struct CleanPages {
    bound: usize,
    pages: HashMap<u32, Entry>,
    /// Entries by last use: the eviction order.
    by_use: BTreeMap<u64, u32>,
    next_stamp: u64,
}

impl CleanPages {
    pub fn new(bound: usize) -> CleanPages {
        CleanPages { bound, pages: HashMap::new(), by_use: BTreeMap::new(), next_stamp: 0 }
    }

    pub fn bound(&self) -> usize {
        self.bound
    }

    /// A smaller bound evicts the pages used the longest ago.
    pub fn set_bound(&mut self, bound: usize) {
        self.bound = bound;
        self.evict();
    }

    /// The page's bytes and tag, if kept (and, when `tagged`, its tag is known); marks
    /// it used.
    pub fn get(&mut self, lpn: u32, tagged: bool) -> Option<(Vec<u8>, Tag)> {
        let stamp = self.next_stamp;
        let entry = self.pages.get_mut(&lpn)?;
        let tag = match entry.tag {
            Some(tag) => tag,
            None if tagged => return None,
            None => None,
        };
        self.by_use.remove(&entry.stamp);
        entry.stamp = stamp;
        self.by_use.insert(stamp, lpn);
        self.next_stamp += 1;
        Some((entry.data.clone(), tag))
    }

    /// Keeps `data` as the page's content on flash (`tag`: `Some` when known).
    pub fn put(&mut self, lpn: u32, data: &[u8], tag: Option<Tag>) {
        if self.bound == 0 {
            return;
        }
        self.forget(lpn);
        let stamp = self.next_stamp;
        self.next_stamp += 1;
        self.pages.insert(lpn, Entry { data: data.to_vec(), tag, stamp });
        self.by_use.insert(stamp, lpn);
        self.evict();
    }

    /// The page's content on flash changed by another path.
    pub fn forget(&mut self, lpn: u32) {
        if let Some(e) = self.pages.remove(&lpn) {
            self.by_use.remove(&e.stamp);
        }
    }

    pub fn clear(&mut self) {
        self.pages.clear();
        self.by_use.clear();
    }

    fn evict(&mut self) {
        while self.pages.len() > self.bound {
            let Some((_, lpn)) = self.by_use.pop_first() else { break };
            self.pages.remove(&lpn);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_most_recently_used_pages_within_its_bound() {
        let mut c = CleanPages::new(2);
        c.put(1, b"a", Some(None));
        c.put(2, b"b", Some(None));
        assert!(c.get(1, false).is_some());
        c.put(3, b"c", Some(None));
        assert!(c.get(2, false).is_none(), "2 was used the longest ago");
        assert_eq!(c.get(1, false).unwrap().0, b"a");
        assert_eq!(c.get(3, false).unwrap().0, b"c");
        c.set_bound(0);
        assert!(c.get(1, false).is_none() && c.get(3, false).is_none());
        c.put(4, b"d", Some(None));
        assert!(c.get(4, false).is_none(), "a bound of 0 keeps nothing");
    }

    #[test]
    fn an_untagged_read_does_not_answer_a_tagged_one_and_forget_drops_the_page() {
        let mut c = CleanPages::new(4);
        c.put(1, b"a", None);
        assert!(c.get(1, true).is_none());
        assert!(c.get(1, false).is_some());
        let tag = Some([7u8; flash::ftl::TAG_BYTES]);
        c.put(2, b"b", Some(tag));
        assert_eq!(c.get(2, true).unwrap().1, tag);
        c.forget(2);
        assert!(c.get(2, false).is_none());
        c.clear();
        assert!(c.get(1, false).is_none());
    }
}
