//! Page data buffers for [`MemoryStorage`](crate::MemoryStorage).
//!
//! Buffers are named by a `u32` id; reference counts sit in a dense array of their own.
//! A copyback shares its source's buffer (one count in a small, cache-resident array
//! goes up) instead of copying the page, and an erase hands ids back to a free list.
//! Memory therefore grows to the peak number of distinct page images held at once.
//!
//! A buffer is kept as it was written while it is hot, and packed (LZ4) once it is cold:
//! the buffers that became raw most recently stay raw, [`HOT_BYTES`] of them, and a
//! buffer that drops out of that window is compressed in memory. A program onto a packed page (an in-place
//! append) unpacks it and makes it hot again. A read of a packed page unpacks a copy that
//! stays beside the packed bytes until a later mutation drops it, once more than
//! [`UNPACKED_PAGES`] such copies exist: a read takes `&self` and hands out a slice, so
//! the copy must outlive it. The bytes a page reads are always exactly those programmed:
//! packing is invisible to the device, its rules and checks, its timing and its image
//! file (which holds raw pages).
//!
//! A page of one repeated byte (all zeroes, a fill pattern such as an aging run's
//! ballast) is kept once: the pool holds a reference to it for good, so every page
//! programmed with it shares that buffer, and a later change copies it (copy on write).
//! At most 256 such buffers exist.
use prefetch_index::prefetch_index;
use std::cell::{OnceCell, RefCell};
use std::collections::VecDeque;

/// Id of no buffer (an erased page).
pub(crate) const NO_BUFFER: u32 = u32::MAX;

/// Bytes of the buffers that became raw most recently, kept raw: 8 GiB (2,097,152 pages
/// of 4 KiB). Packing costs CPU and changes no result, so a run pays for it only where
/// memory is the limit: TPC-C on the paper's emulator, 10 warehouses, whose data pages
/// compress 1.62× with LZ4 (the block format of `lz4_flex`), kept 39% less device memory
/// with a window of 16 MiB and took 46% more CPU, nearly all of it packing the pages
/// loading and aging wrote (docs/benchmarks.md). The largest device the catalogue's
/// runs keep that fits this 24 GiB machine, NoLgn's FEMU device aged to a quarter free,
/// holds about 5 GiB (`reproduce --plan`), so no such run packs; a device beyond the
/// window packs the pages written longest ago instead of running out of memory.
pub(crate) const HOT_BYTES: usize = 8 << 30;
/// Copies of packed pages that reads unpacked, kept until a mutation drops them.
pub(crate) const UNPACKED_PAGES: usize = 1024;
/// A packed image must save at least this share of the page (1/8), or the page stays raw.
const MIN_SAVING_SHIFT: u32 = 3;

/// The most a buffer's bookkeeping takes besides its page: its entry, reference count
/// and queued flag, a free-list entry and a hot-window entry.
pub(crate) const MAX_BOOKKEEPING_BYTES: u64 = (std::mem::size_of::<Buffer>() + 3 * 4 + 1) as u64;

/// The bytes of one buffer.
enum Buffer {
    /// Not in use (on the free list).
    Free,
    /// As written: hot, or not worth packing.
    Raw(Box<[u8]>),
    /// Packed (boxed, so that every id's entry stays two words and a tag).
    Packed(Box<PackedPage>),
}

/// A page packed: its LZ4 block, and a copy a read unpacked.
struct PackedPage {
    bytes: Box<[u8]>,
    unpacked: OnceCell<Box<[u8]>>,
}

impl PackedPage {
    /// Bytes it holds besides an unpacked copy.
    fn held(&self) -> u64 {
        (self.bytes.len() + std::mem::size_of::<PackedPage>()) as u64
    }
}

pub(crate) struct PagePool {
    page_bytes: usize,
    buffers: Vec<Buffer>,
    refs: Vec<u32>,
    free: Vec<u32>,
    /// `uniform[b]`: the shared buffer of a page whose bytes are all `b`, or `NO_BUFFER`.
    uniform: Box<[u32; 256]>,
    /// Buffers that became raw, in that order, each once (`queued`): the window's
    /// oldest is packed first. An id freed while queued keeps its entry, so the queue
    /// never holds more entries than there are ids.
    hot: VecDeque<u32>,
    queued: Vec<bool>,
    hot_limit: usize,
    /// Ids whose packed buffer a read unpacked (filled through `&self`).
    unpacked: RefCell<Vec<u32>>,
    unpacked_limit: usize,
    /// Raw buffers kept and packed bytes held, for [`PagePool::bytes_in_use`].
    raw_buffers: u64,
    packed_bytes: u64,
}

impl PagePool {
    pub(crate) fn new(page_bytes: usize) -> Self {
        Self::with_limits(page_bytes, HOT_BYTES / page_bytes.max(1), UNPACKED_PAGES)
    }

    /// A pool that keeps `hot_limit` buffers raw since their last write and up to
    /// `unpacked_limit` copies unpacked by reads.
    pub(crate) fn with_limits(page_bytes: usize, hot_limit: usize, unpacked_limit: usize) -> Self {
        PagePool {
            page_bytes,
            buffers: Vec::new(),
            refs: Vec::new(),
            free: Vec::new(),
            uniform: Box::new([NO_BUFFER; 256]),
            hot: VecDeque::new(),
            queued: Vec::new(),
            hot_limit,
            unpacked: RefCell::new(Vec::new()),
            unpacked_limit,
            raw_buffers: 0,
            packed_bytes: 0,
        }
    }

    /// A buffer holding `bytes` (which must be one page long); shared when they are one
    /// repeated byte.
    pub(crate) fn alloc_with(&mut self, bytes: &[u8]) -> u32 {
        let Some((&first, rest)) = bytes.split_first() else { return self.alloc_raw(bytes.into()) };
        // All bytes equal iff the page equals itself shifted by one (one memcmp, which
        // stops at the first difference: at once for most data).
        if rest != &bytes[..rest.len()] {
            return self.alloc_raw(bytes.into());
        }
        let id = match self.uniform[first as usize] {
            NO_BUFFER => {
                // The pool's own reference keeps it for good.
                let id = self.alloc_raw(bytes.into());
                self.uniform[first as usize] = id;
                id
            }
            id => id,
        };
        self.share(id)
    }

    /// A new hot buffer with one reference holding `page`.
    fn alloc_raw(&mut self, page: Box<[u8]>) -> u32 {
        debug_assert_eq!(page.len(), self.page_bytes);
        let id = match self.free.pop() {
            Some(id) => id,
            None => {
                let id = self.refs.len() as u32;
                assert!(id < NO_BUFFER, "page pool exhausted");
                self.buffers.push(Buffer::Free);
                self.refs.push(0);
                self.queued.push(false);
                id
            }
        };
        self.buffers[id as usize] = Buffer::Raw(page);
        self.raw_buffers += 1;
        self.refs[id as usize] = 1;
        self.touch(id);
        id
    }

    /// Bytes the buffers some page (or the pool's table of repeated-byte pages) holds,
    /// raw, packed and unpacked by reads, plus the per-buffer bookkeeping.
    pub(crate) fn bytes_in_use(&self) -> u64 {
        let per_id = (std::mem::size_of::<Buffer>() + std::mem::size_of::<u32>() + 1) as u64;
        let copies = self.unpacked.borrow().len() as u64;
        (self.raw_buffers + copies) * self.page_bytes as u64
            + self.packed_bytes
            + self.refs.len() as u64 * per_id
            + self.hot.len() as u64 * 4
    }

    pub(crate) fn get(&self, id: u32) -> &[u8] {
        match &self.buffers[id as usize] {
            Buffer::Raw(page) => page,
            Buffer::Packed(p) => p.unpacked.get_or_init(|| {
                self.unpacked.borrow_mut().push(id);
                unpack(&p.bytes, self.page_bytes)
            }),
            Buffer::Free => panic!("page buffer {id} read after it was freed"),
        }
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
            self.forget(id);
            self.free.push(id);
        }
    }

    /// Drops the bytes of `id` and their count.
    fn forget(&mut self, id: u32) {
        match std::mem::replace(&mut self.buffers[id as usize], Buffer::Free) {
            Buffer::Raw(_) => self.raw_buffers -= 1,
            Buffer::Packed(p) => self.packed_bytes -= p.held(),
            Buffer::Free => {}
        }
    }

    /// A buffer only this holder references, with the same bytes (copy on write), raw
    /// and hot, ready for [`PagePool::get_unique_mut`]; an erased page (`NO_BUFFER`)
    /// becomes a buffer of 0xFF bytes.
    pub(crate) fn make_unique(&mut self, id: u32) -> u32 {
        if id == NO_BUFFER {
            return self.alloc_raw(vec![0xFF; self.page_bytes].into());
        }
        if self.refs[id as usize] > 1 {
            let copy: Box<[u8]> = self.get(id).into();
            self.release(id);
            return self.alloc_raw(copy);
        }
        let buffer = &mut self.buffers[id as usize];
        if let Buffer::Packed(p) = buffer {
            // A read that just checked the program's bits usually unpacked it already.
            let page = p.unpacked.take().unwrap_or_else(|| unpack(&p.bytes, self.page_bytes));
            self.packed_bytes -= p.held();
            self.raw_buffers += 1;
            *buffer = Buffer::Raw(page);
        }
        self.touch(id);
        id
    }

    pub(crate) fn get_unique_mut(&mut self, id: u32) -> &mut [u8] {
        debug_assert_eq!(self.refs[id as usize], 1, "buffer {id} is shared");
        match &mut self.buffers[id as usize] {
            Buffer::Raw(page) => page,
            _ => panic!("buffer {id} written before make_unique"),
        }
    }

    /// Marks `id` as written (raw and in the hot window); packs the buffers that fall
    /// out of the window and drops the copies reads unpacked once there are too many.
    fn touch(&mut self, id: u32) {
        if !std::mem::replace(&mut self.queued[id as usize], true) {
            self.hot.push_back(id);
        }
        while self.hot.len() > self.hot_limit {
            let Some(old) = self.hot.pop_front() else { break };
            self.queued[old as usize] = false;
            self.pack(old);
        }
        if self.unpacked.get_mut().len() > self.unpacked_limit {
            for old in std::mem::take(self.unpacked.get_mut()) {
                if let Buffer::Packed(p) = &mut self.buffers[old as usize] {
                    p.unpacked.take();
                }
            }
        }
    }

    /// Compresses a raw buffer in place when that saves enough.
    fn pack(&mut self, id: u32) {
        let buffer = &mut self.buffers[id as usize];
        let Buffer::Raw(page) = buffer else { return };
        let packed = lz4_flex::block::compress(page);
        if packed.len() > page.len() - (page.len() >> MIN_SAVING_SHIFT) {
            return;
        }
        let packed = PackedPage { bytes: packed.into(), unpacked: OnceCell::new() };
        self.raw_buffers -= 1;
        self.packed_bytes += packed.held();
        *buffer = Buffer::Packed(Box::new(packed));
    }
}

/// The page an LZ4 block packed.
fn unpack(packed: &[u8], page_bytes: usize) -> Box<[u8]> {
    let page = lz4_flex::block::decompress(packed, page_bytes).expect("a page the pool packed unpacks");
    debug_assert_eq!(page.len(), page_bytes);
    page.into()
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

    /// A page of records: compressible as database pages are, different per `seed`.
    fn page(seed: u32, bytes: usize) -> Vec<u8> {
        (0..bytes as u32).map(|i| if i % 16 < 12 { (seed + i / 64) as u8 } else { (i * seed) as u8 }).collect()
    }

    #[test]
    fn cold_pages_are_packed_and_read_back_exactly() {
        let mut pool = PagePool::with_limits(4096, 4, 2);
        let ids: Vec<u32> = (1..=64).map(|s| pool.alloc_with(&page(s, 4096))).collect();
        // 60 of the 64 pages are cold and packed: far less than 64 raw pages.
        assert!(pool.bytes_in_use() < 64 * 4096 * 3 / 4, "{} bytes", pool.bytes_in_use());
        for (s, &id) in (1..=64).zip(&ids) {
            assert_eq!(pool.get(id), &page(s, 4096)[..], "page {s}");
        }
        // A write to a packed page unpacks it; the bytes are those written.
        let id = pool.make_unique(ids[0]);
        assert_eq!(id, ids[0]);
        pool.get_unique_mut(id)[0] &= 0x0F;
        let mut want = page(1, 4096);
        want[0] &= 0x0F;
        assert_eq!(pool.get(id), &want[..]);
        // Writes drop the copies reads unpacked.
        let unpacked = pool.bytes_in_use();
        for s in 100..104 {
            pool.alloc_with(&page(s, 4096));
        }
        assert!(pool.bytes_in_use() < unpacked + 4 * 4096, "the unpacked copies stay");
    }

    #[test]
    fn an_incompressible_page_stays_raw() {
        let mut pool = PagePool::with_limits(4096, 1, 1);
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let noise: Vec<u8> = (0..4096)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 32) as u8
            })
            .collect();
        let a = pool.alloc_with(&noise);
        pool.alloc_with(&page(2, 4096));
        assert!(matches!(pool.buffers[a as usize], Buffer::Raw(_)));
        assert_eq!(pool.get(a), &noise[..]);
    }

    proptest::proptest! {
        /// Against a model that keeps every page raw: writes (AND, as NAND programs),
        /// shares, releases and reads give the same bytes whatever is packed.
        #[test]
        fn packing_never_changes_a_page(
            ops in proptest::collection::vec((0u8..5, 0usize..8, 0usize..64, 0u8..=255), 1..300)
        ) {
            let mut pool = PagePool::with_limits(64, 2, 1);
            let mut held: Vec<(u32, Vec<u8>)> = Vec::new();
            for (kind, slot, at, byte) in ops {
                match kind {
                    0 => {
                        let bytes: Vec<u8> = (0..64).map(|i| if i < at { byte } else { (i as u8) & 0xF0 }).collect();
                        held.push((pool.alloc_with(&bytes), bytes));
                    }
                    1 if !held.is_empty() => {
                        let (id, bytes) = held[slot % held.len()].clone();
                        held.push((pool.share(id), bytes));
                    }
                    2 if !held.is_empty() => {
                        let (id, _) = held.swap_remove(slot % held.len());
                        pool.release(id);
                    }
                    3 if !held.is_empty() => {
                        let i = slot % held.len();
                        let id = pool.make_unique(held[i].0);
                        pool.get_unique_mut(id)[at] &= byte;
                        held[i].0 = id;
                        held[i].1[at] &= byte;
                    }
                    _ => {}
                }
                for (id, bytes) in &held {
                    proptest::prop_assert_eq!(pool.get(*id), &bytes[..]);
                }
            }
        }
    }
}
