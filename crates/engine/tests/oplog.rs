//! Logging by written ranges: the spans an operation logs, found over the
//! byte ranges its page mutations wrote, are the spans of a whole-page diff; and the
//! IPA write-back, which compares only the ranges written since the last flash write,
//! puts every change on flash (more pages than frames, so pages are evicted and
//! appended to).

mod common;
#[path = "support/slot_ops.rs"]
mod slot_ops;

use engine::buffer::{BufferPool, CleanerPolicy, Replacement};
use engine::journal::NoJournal;
use engine::logrec;
use engine::oplog::{OpKind, UndoLog};
use engine::page::{self, Kind};
use engine::store::{PageId, PageStore};
use engine::IpaScheme;
use flash::{Flash, IpaMode, RegionId, RegionSpec};
use proptest::prelude::*;
use slot_ops::{op, Op};

const PAGES: u32 = 12;

fn apply(pool: &mut BufferPool, f: usize, body_end: usize, op: &Op) {
    let n = page::slot_count(pool.page(f));
    match op {
        Op::Insert(t) => {
            page::insert(pool.page_mut(f), body_end, t);
        }
        Op::InsertAt(i, t) => {
            page::insert_at(pool.page_mut(f), body_end, i % (n + 1), t);
        }
        Op::Remove(i) if n > 0 => page::remove_at(pool.page_mut(f), body_end, i % n),
        Op::Delete(i) if n > 0 => page::delete(pool.page_mut(f), body_end, i % n),
        Op::Replace(i, t) if n > 0 && page::get(pool.page(f), body_end, i % n).is_some() => {
            page::replace(pool.page_mut(f), body_end, i % n, t);
        }
        _ => {}
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn logged_spans_are_the_whole_page_diff_and_write_back_keeps_every_change(
        steps in proptest::collection::vec((0..PAGES, proptest::collection::vec(op(120), 1..4)), 1..120),
    ) {
        let flash = Flash::format(common::device(), vec![RegionSpec::new("r", IpaMode::Slc)]).unwrap();
        let mut store = PageStore::new(Box::new(flash), 4096).unwrap();
        store.set_scheme(RegionId(0), IpaScheme::new(2, 4, 4).unwrap()).unwrap();
        let body_end = store.body_end(0);
        // Fewer frames than pages: pages are evicted (written by the IPA rule) and read back.
        let mut pool = BufferPool::new(store, 8, Replacement::Clock, CleanerPolicy::NonEager);
        let mut journal = NoJournal::new(1);
        for no in 0..PAGES {
            let f = pool.create(PageId { region: 0, page: no }, &mut journal).unwrap();
            page::init(pool.page_mut(f), body_end, no, 1, Kind::Heap, 0);
            pool.unpin(f);
            pool.end_op(&mut journal, 0, 0, OpKind::Update, None).unwrap();
        }
        let mut undo = UndoLog::default();
        let mut images: Vec<Vec<u8>> = Vec::new();
        for (no, ops) in steps {
            let pid = PageId { region: 0, page: no };
            let f = pool.fetch(pid, &mut journal).unwrap();
            let before = pool.page(f).to_vec();
            for op in &ops {
                apply(&mut pool, f, body_end, op);
            }
            pool.unpin(f);
            undo.clear();
            pool.end_op(&mut journal, 1, 0, OpKind::Update, Some(&mut undo)).unwrap();
            let mut spans = Vec::new();
            // Nothing ran since the operation: the page is still in frame `f`.
            logrec::diff_spans(&before, pool.page(f), &mut spans);
            let logged: Vec<(usize, Vec<u8>)> =
                undo.newest_first().flat_map(|u| u.ranges().map(|(at, b)| (at, b.to_vec())).collect::<Vec<_>>()).collect();
            let whole: Vec<(usize, Vec<u8>)> =
                spans.iter().map(|&(at, len)| (at as usize, before[at as usize..(at + len) as usize].to_vec())).collect();
            prop_assert_eq!(logged, whole);
            pool.clean(&mut journal).unwrap();
        }
        for no in 0..PAGES {
            let f = pool.fetch(PageId { region: 0, page: no }, &mut journal).unwrap();
            images.push(pool.page(f).to_vec());
            pool.unpin(f);
        }
        pool.flush_all(&mut journal).unwrap();
        // A fresh pool reads every page back from flash, delta-records applied.
        let mut fresh = BufferPool::new(pool.into_store(), 8, Replacement::Clock, CleanerPolicy::NonEager);
        for no in 0..PAGES {
            let f = fresh.fetch(PageId { region: 0, page: no }, &mut journal).unwrap();
            let on_flash = &fresh.page(f)[..body_end];
            prop_assert_eq!(on_flash, &images[no as usize][..body_end], "page {}", no);
            fresh.unpin(f);
        }
    }
}
