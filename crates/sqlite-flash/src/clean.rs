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
use rustc_hash::FxHashMap;

/// No slot: the end of the use list.
const NIL: u32 = u32::MAX;

/// A kept page, linked into the use list (most recently used first).
struct Slot {
    lpn: u32,
    data: Vec<u8>,
    /// `Some(tag)` when the page's tag is known (it was written or read tagged);
    /// `None` after an untagged read, which does not see the tag.
    tag: Option<Tag>,
    /// Neighbours in the use list: `newer` toward the most recently used page.
    newer: u32,
    older: u32,
}

/// Clean logical pages in RAM, at most `bound` (0: none kept).
///
/// Every operation is O(1) and a steady stream of writes allocates nothing: the slots
/// form a doubly linked list by last use, and the page evicted to make room hands its
/// slot (and its buffer) to the page coming in. The least recently used page goes
/// first, as an ordering by use stamps would choose.
pub(crate) struct CleanPages {
    bound: usize,
    /// The slot of each kept LPN.
    index: FxHashMap<u32, u32>,
    slots: Vec<Slot>,
    /// Slots no page holds (forgotten pages), reused before the list grows.
    free: Vec<u32>,
    /// The most and the least recently used kept page.
    newest: u32,
    oldest: u32,
}

impl CleanPages {
    pub fn new(bound: usize) -> CleanPages {
        CleanPages { bound, index: FxHashMap::default(), slots: Vec::new(), free: Vec::new(), newest: NIL, oldest: NIL }
    }

    pub fn bound(&self) -> usize {
        self.bound
    }

    /// A smaller bound evicts the pages used the longest ago (and gives their memory back).
    pub fn set_bound(&mut self, bound: usize) {
        self.bound = bound;
        while self.index.len() > self.bound {
            self.evict_oldest();
        }
        for &slot in &self.free {
            self.slots[slot as usize].data = Vec::new();
        }
    }

    /// The page's bytes and tag, if kept (and, when `tagged`, its tag is known); marks
    /// it used.
    pub fn get(&mut self, lpn: u32, tagged: bool) -> Option<(Vec<u8>, Tag)> {
        let slot = *self.index.get(&lpn)?;
        let tag = match self.slots[slot as usize].tag {
            Some(tag) => tag,
            None if tagged => return None,
            None => None,
        };
        self.unlink(slot);
        self.link_newest(slot);
        Some((self.slots[slot as usize].data.clone(), tag))
    }

    /// Keeps `data` as the page's content on flash (`tag`: `Some` when known).
    pub fn put(&mut self, lpn: u32, data: &[u8], tag: Option<Tag>) {
        if self.bound == 0 {
            return;
        }
        let slot = match self.index.get(&lpn) {
            Some(&slot) => {
                self.unlink(slot);
                slot
            }
            None => {
                // Full: the page used the longest ago makes room (the new page, the
                // most recent, is never the one evicted).
                while self.index.len() >= self.bound {
                    self.evict_oldest();
                }
                let slot = self.free.pop().unwrap_or_else(|| {
                    self.slots.push(Slot { lpn, data: Vec::new(), tag: None, newer: NIL, older: NIL });
                    (self.slots.len() - 1) as u32
                });
                self.index.insert(lpn, slot);
                slot
            }
        };
        let s = &mut self.slots[slot as usize];
        s.lpn = lpn;
        s.tag = tag;
        s.data.clear();
        s.data.extend_from_slice(data);
        self.link_newest(slot);
    }

    /// The page's content on flash changed by another path.
    pub fn forget(&mut self, lpn: u32) {
        if let Some(slot) = self.index.remove(&lpn) {
            self.unlink(slot);
            self.free.push(slot);
        }
    }

    pub fn clear(&mut self) {
        self.index.clear();
        self.slots.clear();
        self.free.clear();
        self.newest = NIL;
        self.oldest = NIL;
    }

    /// Drops the page used the longest ago; its slot keeps its buffer for reuse.
    fn evict_oldest(&mut self) {
        let slot = self.oldest;
        if slot == NIL {
            return;
        }
        self.unlink(slot);
        self.index.remove(&self.slots[slot as usize].lpn);
        self.free.push(slot);
    }

    /// Takes `slot` out of the use list.
    fn unlink(&mut self, slot: u32) {
        let Slot { newer, older, .. } = self.slots[slot as usize];
        match newer {
            NIL => self.newest = older,
            n => self.slots[n as usize].older = older,
        }
        match older {
            NIL => self.oldest = newer,
            o => self.slots[o as usize].newer = newer,
        }
    }

    /// Puts `slot` (not in the list) at its most recently used end.
    fn link_newest(&mut self, slot: u32) {
        let old_newest = self.newest;
        let s = &mut self.slots[slot as usize];
        s.newer = NIL;
        s.older = old_newest;
        match old_newest {
            NIL => self.oldest = slot,
            n => self.slots[n as usize].newer = slot,
        }
        self.newest = slot;
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

    /// The reference: a list by last use, most recent last, searched in full.
    #[derive(Default)]
    struct Model {
        bound: usize,
        pages: Vec<(u32, Vec<u8>, Option<Tag>)>,
    }

    impl Model {
        fn put(&mut self, lpn: u32, data: &[u8], tag: Option<Tag>) {
            if self.bound == 0 {
                return;
            }
            self.pages.retain(|p| p.0 != lpn);
            self.pages.push((lpn, data.to_vec(), tag));
            while self.pages.len() > self.bound {
                self.pages.remove(0);
            }
        }

        fn get(&mut self, lpn: u32, tagged: bool) -> Option<(Vec<u8>, Tag)> {
            let at = self.pages.iter().position(|p| p.0 == lpn)?;
            let tag = match self.pages[at].2 {
                Some(tag) => tag,
                None if tagged => return None,
                None => None,
            };
            let page = self.pages.remove(at);
            self.pages.push(page);
            Some((self.pages.last().unwrap().1.clone(), tag))
        }
    }

    proptest::proptest! {
        /// Any sequence of puts, gets, forgets, bound changes and clears keeps exactly
        /// the pages (bytes and tags) a plain least-recently-used list keeps.
        #[test]
        fn keeps_what_a_plain_lru_list_keeps(
            ops in proptest::collection::vec((0u8..16, 0u32..12, proptest::num::u8::ANY), 1..300),
        ) {
            let (mut c, mut m) = (CleanPages::new(4), Model { bound: 4, ..Model::default() });
            for (op, lpn, byte) in ops {
                let data = vec![byte; 1 + (byte as usize % 5)];
                let tag = match byte % 3 {
                    0 => None,
                    1 => Some(None),
                    _ => Some(Some([byte; flash::ftl::TAG_BYTES])),
                };
                match op {
                    0..=6 => {
                        c.put(lpn, &data, tag);
                        m.put(lpn, &data, tag);
                    }
                    7..=11 => {
                        let tagged = byte % 2 == 0;
                        proptest::prop_assert_eq!(c.get(lpn, tagged), m.get(lpn, tagged));
                    }
                    12 | 13 => {
                        c.forget(lpn);
                        m.pages.retain(|p| p.0 != lpn);
                    }
                    14 => {
                        let bound = lpn as usize % 7;
                        c.set_bound(bound);
                        m.bound = bound;
                        let excess = m.pages.len().saturating_sub(bound);
                        m.pages.drain(..excess);
                    }
                    _ => {
                        c.clear();
                        m.pages.clear();
                    }
                }
                proptest::prop_assert_eq!(c.index.len(), m.pages.len());
            }
            for lpn in 0..12 {
                proptest::prop_assert_eq!(c.get(lpn, false), m.get(lpn, false));
            }
        }
    }
}
