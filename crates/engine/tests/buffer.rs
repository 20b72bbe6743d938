//! The buffer pool's policies: eager and non-eager cleaning, pins, replacement.

mod common;

use engine::buffer::{BufferPool, CleanerPolicy, Pages, Replacement};
use engine::journal::NoJournal;
use engine::oplog::OpKind;
use engine::page::{self, Kind};
use engine::store::{PageId, PageStore};
use engine::{Error, IpaScheme};
use flash::{Flash, IpaMode, RegionId, RegionSpec};

/// A pool with the journal its writes go through (none: these tests log nothing).
struct Pool {
    pool: BufferPool,
    journal: NoJournal,
}

impl Pool {
    fn pages(&mut self) -> Pages<'_> {
        Pages { pool: &mut self.pool, journal: &mut self.journal }
    }
    fn clean(&mut self) -> engine::Result<()> {
        self.pool.clean(&mut self.journal)
    }
}

impl std::ops::Deref for Pool {
    type Target = BufferPool;
    fn deref(&self) -> &BufferPool {
        &self.pool
    }
}

fn pool(frames: usize, replacement: Replacement, cleaner: CleanerPolicy) -> Pool {
    let flash = Flash::format(common::device(), vec![RegionSpec::new("r", IpaMode::Slc)]).unwrap();
    let mut store = PageStore::new(Box::new(flash), 4096).unwrap();
    store.set_scheme(RegionId(0), IpaScheme::new(2, 4, 4).unwrap()).unwrap();
    Pool { pool: BufferPool::new(store, frames, replacement, cleaner), journal: NoJournal::new(1) }
}

fn create(pool: &mut Pool, no: u32) {
    let body_end = pool.store().body_end(0);
    let mut p = pool.pages();
    let f = p.create(PageId { region: 0, page: no }).unwrap();
    page::init(p.page_mut(f), body_end, no, 1, Kind::Heap, 0);
    p.unpin(f);
    // A changed page stays pinned until its operation ends (and would be logged).
    pool.pool.end_op(&mut pool.journal, 0, 0, OpKind::Update, None).unwrap();
}

/// The sweeping cleaner waits for the share like the eager one, then writes every dirty
/// page (the eager one writes only down to the share).
#[test]
fn sweeping_cleaner_writes_every_dirty_page_once_past_the_share() {
    let mut p = pool(64, Replacement::Clock, CleanerPolicy::EAGER_SWEEP);
    for no in 0..8 {
        create(&mut p, no);
        p.clean().unwrap();
    }
    assert_eq!((p.dirty_frames(), p.stats().cleaner_writes), (8, 0), "at the share: nothing written yet");
    create(&mut p, 8);
    p.clean().unwrap();
    assert_eq!((p.dirty_frames(), p.stats().cleaner_writes), (0, 9), "past the share: every dirty page written");
}

#[test]
fn eager_cleaner_keeps_dirty_pages_under_the_share() {
    for replacement in [Replacement::Clock, Replacement::Lru] {
        let mut p = pool(64, replacement, CleanerPolicy::EAGER);
        for no in 0..40 {
            create(&mut p, no);
            p.clean().unwrap();
            assert!(p.dirty_frames() <= 8, "{} dirty of 64 after cleaning", p.dirty_frames());
        }
        assert!(p.stats().cleaner_writes >= 32);
        assert_eq!(p.stats().evictions, 0, "nothing needed evicting");
    }
}

/// InnoDB's cleaner lets dirty pages fill 75% of the frames, where Shore-MT's eager one
/// starts writing at 12.5%; past 75% it writes the longest-dirty pages down to it.
#[test]
fn innodb_cleaner_writes_only_past_three_quarters_of_the_frames_dirty() {
    let mut p = pool(64, Replacement::Clock, CleanerPolicy::INNODB);
    for no in 0..48 {
        create(&mut p, no);
        p.clean().unwrap();
    }
    assert_eq!((p.dirty_frames(), p.stats().cleaner_writes), (48, 0), "75% dirty: nothing written yet");
    create(&mut p, 48);
    p.clean().unwrap();
    assert_eq!((p.dirty_frames(), p.stats().cleaner_writes), (48, 1), "past 75%: the oldest page written");
}

#[test]
fn non_eager_writes_only_on_eviction_and_pins_hold() {
    let mut p = pool(8, Replacement::Clock, CleanerPolicy::NonEager);
    for no in 0..8 {
        create(&mut p, no);
        p.clean().unwrap();
    }
    assert_eq!((p.dirty_frames(), p.stats().cleaner_writes), (8, 0));
    // Pin every page: a ninth has nowhere to go.
    let pinned: Vec<_> = (0..8).map(|no| p.pages().fetch(PageId { region: 0, page: no }).unwrap()).collect();
    let err = p.pages().create(PageId { region: 0, page: 8 }).unwrap_err();
    assert!(matches!(err, Error::Full(_)), "{err}");
    for f in pinned {
        p.pages().unpin(f);
    }
    create(&mut p, 8);
    assert_eq!((p.stats().evictions, p.stats().dirty_evictions), (1, 1));
    // The evicted page comes back from flash as it was.
    let f = p.pages().fetch(PageId { region: 0, page: 0 }).unwrap();
    assert_eq!(page::page_no(p.page(f)), 0);
    p.pages().unpin(f);
}

#[test]
fn lru_evicts_the_least_recently_used() {
    let mut p = pool(8, Replacement::Lru, CleanerPolicy::NonEager);
    for no in 0..8 {
        create(&mut p, no);
    }
    p.pool.flush_all(&mut p.journal).unwrap();
    for no in (0..8).rev() {
        let mut pages = p.pages();
        let f = pages.fetch(PageId { region: 0, page: no }).unwrap();
        pages.unpin(f);
    }
    create(&mut p, 8); // evicts page 7, touched longest ago
    let misses = p.stats().misses;
    let f = p.pages().fetch(PageId { region: 0, page: 0 }).unwrap();
    p.pages().unpin(f);
    assert_eq!(p.stats().misses, misses, "page 0 stayed");
    let f = p.pages().fetch(PageId { region: 0, page: 7 }).unwrap();
    p.pages().unpin(f);
    assert_eq!(p.stats().misses, misses + 1, "page 7 was evicted");
}

/// Changes one byte of page `no` (read from flash on a miss): dirty and referenced.
fn change(pool: &mut Pool, no: u32) {
    let mut p = pool.pages();
    let f = p.fetch(PageId { region: 0, page: no }).unwrap();
    p.pool.page_bytes_mut(f)[100] ^= 0xff;
    p.unpin(f);
    pool.pool.end_op(&mut pool.journal, 0, 0, OpKind::Update, None).unwrap();
}

/// Shore-MT's clock passes over dirty pages while a clean unreferenced one is to be had,
/// and takes a dirty one only when a whole pass finds none; plain clock takes the first
/// unreferenced page the hand meets, dirty or not.
#[test]
fn clean_first_clock_evicts_a_clean_page_before_a_dirty_one() {
    for (replacement, dirty_written) in [(Replacement::Clock, 1), (Replacement::CleanFirstClock, 0)] {
        let mut p = pool(8, replacement, CleanerPolicy::NonEager);
        for no in 0..8 {
            create(&mut p, no);
        }
        p.pool.flush_all(&mut p.journal).unwrap();
        for no in 0..4 {
            change(&mut p, no);
        }
        // Every frame referenced: the hand clears them all and takes frame 0 (page 0,
        // dirty) under both; pages 1-3 are left dirty and unreferenced after the hand.
        create(&mut p, 8);
        let before = p.stats().dirty_evictions;
        assert_eq!(before, 1, "{replacement:?}");
        create(&mut p, 9);
        assert_eq!(p.stats().dirty_evictions - before, dirty_written, "{replacement:?}: page 1 or page 4");
        assert_eq!(p.stats().evictions, 2);
    }
    // With every page dirty, Shore-MT's clock takes one on its second pass.
    let mut p = pool(8, Replacement::CleanFirstClock, CleanerPolicy::NonEager);
    for no in 0..9 {
        create(&mut p, no);
    }
    assert_eq!((p.stats().evictions, p.stats().dirty_evictions), (1, 1));
}

/// Growing the pool keeps every cached page, dirty ones dirty, and new pages take the
/// added frames before anything is evicted; growing to fewer frames changes nothing.
#[test]
fn growing_keeps_every_cached_page_and_evicts_nothing_until_the_new_frames_are_used() {
    for replacement in [Replacement::Clock, Replacement::Lru] {
        let mut p = pool(8, replacement, CleanerPolicy::NonEager);
        for no in 0..8 {
            create(&mut p, no);
        }
        p.pool.grow(4);
        assert_eq!(p.frames(), 8, "a smaller size leaves the pool as it is");
        p.pool.grow(16);
        assert_eq!((p.frames(), p.cached_pages(), p.dirty_frames()), (16, 8, 8));
        for no in 8..16 {
            create(&mut p, no);
        }
        assert_eq!((p.stats().evictions, p.cached_pages()), (0, 16), "the new pages took the new frames");
        let misses = p.stats().misses;
        for no in 0..16 {
            change(&mut p, no);
        }
        assert_eq!(p.stats().misses, misses, "every page stayed cached");
        // Full again: the next page evicts one, which comes back from flash as it was.
        create(&mut p, 16);
        assert_eq!(p.stats().evictions, 1);
        for no in 0..17 {
            let f = p.pages().fetch(PageId { region: 0, page: no }).unwrap();
            assert_eq!(page::page_no(p.page(f)), no);
            p.pages().unpin(f);
        }
    }
}
