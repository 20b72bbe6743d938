//! Page data buffers for [`MemoryStorage`](crate::MemoryStorage).
//!
//! Buffers live in large chunks and are named by a `u32` id; reference counts sit in a
//! dense array of their own. A copyback shares its source's buffer (one count in a
//! small, cache-resident array goes up) instead of copying the page, and an erase hands
//! buffers back to a free list rather than to the allocator. Memory therefore grows to
//! the peak number of distinct page images held at once and is reused from there.
//!
//! A page of one repeated byte (all zeroes, a fill pattern such as an aging run's
//! ballast) is kept once: the pool holds a reference to it for good, so every page
//! programmed with it shares that buffer, and a later change copies it (copy on write).
//! At most 256 such buffers exist.
//!
//! An optional budget bounds the bytes of the buffers the pool has allocated (each
//! buffer's page bytes, its reference count and, at worst, its free-list entry): the
//! store asks [`PagePool::has_room`] before a program, so a program that would take
//! the pool past it is refused before anything changes. Freed buffers are reused
//! first and cost the budget nothing more.
use prefetch_index::prefetch_index;

const CHUNK_PAGES: usize = 256;

/// Id of no buffer (an erased page).
pub(crate) const NO_BUFFER: u32 = u32::MAX;

pub(crate) struct PagePool {
    page_bytes: usize,
    /// Each chunk holds up to `CHUNK_PAGES` buffers and grows as buffers are added.
    chunks: Vec<Vec<u8>>,
    refs: Vec<u32>,
    free: Vec<u32>,
    /// `uniform[b]`: the shared buffer of a page whose bytes are all `b`, or `NO_BUFFER`.
    uniform: Box<[u32; 256]>,
    /// The most bytes the allocated buffers may take (`u64::MAX`: no budget).
    budget_bytes: u64,
}

/// Bytes a buffer's bookkeeping adds to its page bytes: its reference count and, once
/// freed, its free-list entry.
const BUFFER_OVERHEAD_BYTES: u64 = 4 + 4;

impl PagePool {
    pub(crate) fn new(page_bytes: usize) -> Self {
        PagePool {
            page_bytes,
            chunks: Vec::new(),
            refs: Vec::new(),
            free: Vec::new(),
            uniform: Box::new([NO_BUFFER; 256]),
            budget_bytes: u64::MAX,
        }
    }

    /// Bounds the bytes of the allocated buffers (`None`: no bound).
    pub(crate) fn set_budget(&mut self, budget_bytes: Option<u64>) {
        self.budget_bytes = budget_bytes.unwrap_or(u64::MAX);
    }

    /// The budget, if there is one.
    pub(crate) fn budget(&self) -> Option<u64> {
        (self.budget_bytes != u64::MAX).then_some(self.budget_bytes)
    }

    /// Bytes one buffer takes against the budget.
    pub(crate) fn buffer_bytes(page_bytes: u64) -> u64 {
        page_bytes + BUFFER_OVERHEAD_BYTES
    }

    /// Bytes the allocated buffers take against the budget (free ones included: their
    /// memory stays with the pool).
    pub(crate) fn allocated_bytes(&self) -> u64 {
        self.refs.len() as u64 * Self::buffer_bytes(self.page_bytes as u64)
    }

    /// Whether `buffers` more buffers stay within the budget (freed ones first).
    pub(crate) fn has_room(&self, buffers: usize) -> bool {
        let new = buffers.saturating_sub(self.free.len()) as u64;
        new == 0 || self.allocated_bytes() + new * Self::buffer_bytes(self.page_bytes as u64) <= self.budget_bytes
    }

    /// Whether `id` (not `NO_BUFFER`) has one holder only: changing it takes no new buffer.
    pub(crate) fn is_unique(&self, id: u32) -> bool {
        id != NO_BUFFER && self.refs[id as usize] == 1
    }

    /// A buffer holding `bytes` (which must be one page long); shared when they are one
    /// repeated byte.
    pub(crate) fn alloc_with(&mut self, bytes: &[u8]) -> u32 {
        let Some((&first, rest)) = bytes.split_first() else { return self.alloc_copy(bytes) };
        // All bytes equal iff the page equals itself shifted by one (one memcmp, which
        // stops at the first difference: at once for most data).
        if rest != &bytes[..rest.len()] {
            return self.alloc_copy(bytes);
        }
        let id = match self.uniform[first as usize] {
            NO_BUFFER => {
                // The pool's own reference keeps it for good.
                let id = self.alloc_copy(bytes);
                self.uniform[first as usize] = id;
                id
            }
            id => id,
        };
        self.share(id)
    }

    /// A new buffer of its own holding `bytes`.
    fn alloc_copy(&mut self, bytes: &[u8]) -> u32 {
        self.alloc(|page| page.copy_from_slice(bytes), |chunk| chunk.extend_from_slice(bytes))
    }

    /// A buffer of erased (0xFF) bytes.
    fn alloc_erased(&mut self) -> u32 {
        let n = self.page_bytes;
        self.alloc(|page| page.fill(0xFF), |chunk| chunk.resize(chunk.len() + n, 0xFF))
    }

    /// A buffer with one reference, filled by `reuse` (a freed buffer) or by `append`
    /// (a new buffer at the end of the last chunk). New buffers are appended rather than
    /// zeroed first: on a fresh device nearly every program takes a new buffer.
    fn alloc(&mut self, reuse: impl FnOnce(&mut [u8]), append: impl FnOnce(&mut Vec<u8>)) -> u32 {
        let id = match self.free.pop() {
            Some(id) => {
                reuse(self.get_mut(id));
                id
            }
            None => {
                let id = self.refs.len() as u32;
                assert!(id < NO_BUFFER, "page pool exhausted");
                if self.refs.len().is_multiple_of(CHUNK_PAGES) {
                    self.chunks.push(Vec::with_capacity(CHUNK_PAGES * self.page_bytes));
                }
                let chunk = self.chunks.last_mut().expect("a chunk with room");
                append(chunk);
                debug_assert_eq!(chunk.len(), (id as usize % CHUNK_PAGES + 1) * self.page_bytes);
                self.refs.push(0);
                id
            }
        };
        self.refs[id as usize] = 1;
        id
    }

    /// Bytes of the buffers some page (or the pool's table of repeated-byte pages)
    /// holds, plus their reference counts.
    pub(crate) fn bytes_in_use(&self) -> u64 {
        let in_use = (self.refs.len() - self.free.len()) as u64;
        in_use * self.page_bytes as u64 + self.refs.len() as u64 * 4
    }

    pub(crate) fn get(&self, id: u32) -> &[u8] {
        let (chunk, slot) = (id as usize / CHUNK_PAGES, id as usize % CHUNK_PAGES);
        &self.chunks[chunk][slot * self.page_bytes..(slot + 1) * self.page_bytes]
    }

    fn get_mut(&mut self, id: u32) -> &mut [u8] {
        let (chunk, slot) = (id as usize / CHUNK_PAGES, id as usize % CHUNK_PAGES);
        &mut self.chunks[chunk][slot * self.page_bytes..(slot + 1) * self.page_bytes]
    }

    /// Starts loading the reference count of `id` into the cache (see
    /// [`crate::Device::prefetch_block`]).
    pub(crate) fn prefetch_refs(&self, id: u32) {
        prefetch_index(&self.refs, id as usize);
    }

    /// One more holder of `id`.
    pub(crate) fn share(&mut self, id: u32) -> u32 {
        if id != NO_BUFFER {
            self.refs[id as usize] += 1;
        }
        id
    }

    /// One holder fewer; the buffer is free when none remain.
    pub(crate) fn release(&mut self, id: u32) {
        if id == NO_BUFFER {
            return;
        }
        let refs = &mut self.refs[id as usize];
        *refs -= 1;
        if *refs == 0 {
            self.free.push(id);
        }
    }

    /// A buffer only this holder references, with the same bytes (copy on write);
    /// an erased page (`NO_BUFFER`) becomes a buffer of 0xFF bytes.
    pub(crate) fn make_unique(&mut self, id: u32) -> u32 {
        if id == NO_BUFFER {
            return self.alloc_erased();
        }
        if self.refs[id as usize] == 1 {
            return id;
        }
        let copy = self.get(id).to_vec();
        self.release(id);
        self.alloc_copy(&copy)
    }

    pub(crate) fn get_unique_mut(&mut self, id: u32) -> &mut [u8] {
        debug_assert_eq!(self.refs[id as usize], 1, "buffer {id} is shared");
        self.get_mut(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn share_release_and_copy_on_write() {
        let mut pool = PagePool::new(8);
        let a = pool.alloc_with(&[1, 2, 3, 4, 5, 6, 7, 8]);
        let b = pool.share(a);
        assert_eq!(a, b);
        let c = pool.make_unique(b);
        assert_ne!(c, a);
        pool.get_unique_mut(c)[0] = 9;
        assert_eq!(pool.get(a)[0], 1);
        pool.release(a);
        // `a` is free again and is reused before the pool grows.
        let d = pool.alloc_with(&[8, 7, 6, 5, 4, 3, 2, 1]);
        assert_eq!(d, a);
        let e = pool.make_unique(NO_BUFFER);
        assert_eq!(pool.get(e), &[0xFF; 8]);
    }

    #[test]
    fn pages_of_one_repeated_byte_share_a_buffer_until_changed() {
        let mut pool = PagePool::new(8);
        let a = pool.alloc_with(&[0xA5; 8]);
        let b = pool.alloc_with(&[0xA5; 8]);
        assert_eq!(a, b, "one buffer for every page of 0xA5");
        assert_ne!(pool.alloc_with(&[0; 8]), a);
        let mixed = pool.alloc_with(&[0xA5, 0xA5, 0xA5, 0xA5, 0xA5, 0xA5, 0xA5, 0]);
        assert_ne!(mixed, a);
        let c = pool.make_unique(b);
        assert_ne!(c, a, "a change copies the shared buffer");
        pool.get_unique_mut(c)[0] = 0;
        assert_eq!(pool.get(a), &[0xA5; 8]);
        pool.release(a); // `b` went with the copy: no page holds the shared buffer now
        assert_eq!(pool.alloc_with(&[0xA5; 8]), a, "the pool keeps it while no page holds it");
    }

    #[test]
    fn the_budget_counts_allocated_buffers_and_freed_ones_are_room() {
        let mut pool = PagePool::new(8);
        pool.set_budget(Some(2 * PagePool::buffer_bytes(8)));
        assert!(pool.has_room(2) && !pool.has_room(3));
        let a = pool.alloc_with(&[1, 2, 3, 4, 5, 6, 7, 8]);
        let _b = pool.alloc_with(&[2, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(pool.allocated_bytes(), 2 * 16);
        assert!(!pool.has_room(1));
        pool.release(a);
        assert!(pool.has_room(1), "a freed buffer is reused, not allocated");
        pool.set_budget(None);
        assert!(pool.has_room(1_000_000) && pool.budget().is_none());
    }
}
