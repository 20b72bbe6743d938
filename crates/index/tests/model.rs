//! Every index against a `BTreeMap`: random inserts, overwrites, deletes, point
//! queries and range scans, with nodes small enough (512 B pages) that splits, merges,
//! redistributions, FTL merges, BFTL compactions and μ-Tree GC all happen, and a
//! buffer of 2 frames so nodes go to flash and come back all the time.

use index::{build, BTree, IndexKind, IndexSpec, NodeStore, Storage};
use nand::Geometry;
use proptest::prelude::*;
use std::collections::BTreeMap;

#[derive(Clone, Debug)]
enum Op {
    Insert(u32, u32),
    Remove(u32),
    Search(u32),
    Range(u32, u32),
}

fn op(keys: u32) -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0..keys, any::<u32>()).prop_map(|(k, v)| Op::Insert(k, v)),
        3 => (0..keys).prop_map(Op::Remove),
        1 => (0..keys).prop_map(Op::Search),
        1 => (0..keys, 0..200u32).prop_map(|(k, n)| Op::Range(k, k.saturating_add(n))),
    ]
}

fn small_geometry() -> Geometry {
    let mut g = Geometry::ipl_slc();
    g.page_bytes = 512;
    g.pages_per_block = 16;
    g
}

pub fn spec(index: IndexKind, storage: Storage, node_bytes: usize) -> IndexSpec {
    IndexSpec {
        index,
        storage,
        log_share: 0.2,
        log_block_count: None,
        node_bytes,
        buffer_frames: 2,
        entries: 3000,
        compaction_threshold: 0,
        ipl_log_region_bytes: 1024,
        ipl_sector_bytes: 128,
        blocks: None,
    }
}

fn check(tree: &mut BTree<Box<dyn NodeStore>>, ops: &[Op]) {
    let mut model = BTreeMap::new();
    for op in ops {
        match *op {
            Op::Insert(k, v) => assert_eq!(tree.insert(k, v).unwrap(), model.insert(k, v).is_none(), "{op:?}"),
            Op::Remove(k) => assert_eq!(tree.remove(k).unwrap(), model.remove(&k).is_some(), "{op:?}"),
            Op::Search(k) => assert_eq!(tree.search(k).unwrap(), model.get(&k).copied(), "{op:?}"),
            Op::Range(lo, hi) => {
                let mut got = Vec::new();
                tree.range(lo, hi, |k, v| got.push((k, v))).unwrap();
                let want: Vec<(u32, u32)> = model.range(lo..=hi).map(|(&k, &v)| (k, v)).collect();
                assert_eq!(got, want, "{op:?}");
            }
        }
        assert_eq!(tree.len(), model.len() as u64);
    }
    tree.flush().unwrap();
    let mut all = Vec::new();
    tree.range(0, u32::MAX, |k, v| all.push((k, v))).unwrap();
    assert_eq!(all, model.into_iter().collect::<Vec<_>>());
}

fn run(index: IndexKind, storage: Storage, node_bytes: usize, ops: &[Op]) {
    let mut tree = build(&spec(index, storage, node_bytes), &small_geometry()).unwrap();
    check(&mut tree, ops);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    #[test]
    fn btree_on_page_ftl(ops in proptest::collection::vec(op(3000), 1..2500)) {
        run(IndexKind::Btree, Storage::Page, 512, &ops);
    }

    #[test]
    fn btree_on_bast(ops in proptest::collection::vec(op(3000), 1..2500)) {
        run(IndexKind::Btree, Storage::Bast, 512, &ops);
    }

    #[test]
    fn btree_on_fast_two_page_nodes(ops in proptest::collection::vec(op(3000), 1..2500)) {
        run(IndexKind::Btree, Storage::Fast, 1024, &ops);
    }

    #[test]
    fn bftl_on_fast(ops in proptest::collection::vec(op(3000), 1..2500)) {
        run(IndexKind::Bftl, Storage::Fast, 512, &ops);
    }

    #[test]
    fn bftl_two_page_nodes(ops in proptest::collection::vec(op(3000), 1..2500)) {
        run(IndexKind::Bftl, Storage::Fast, 1024, &ops);
    }

    #[test]
    fn ipl_btree(ops in proptest::collection::vec(op(3000), 1..2500)) {
        run(IndexKind::Ipl, Storage::Native, 512, &ops);
    }

    #[test]
    fn ipl_btree_two_page_nodes(ops in proptest::collection::vec(op(3000), 1..2500)) {
        run(IndexKind::Ipl, Storage::Native, 1024, &ops);
    }

    #[test]
    fn mutree_on_native_flash(ops in proptest::collection::vec(op(3000), 1..2500)) {
        run(IndexKind::MuTree, Storage::Native, 512, &ops);
    }
}

/// Inserts then deletes everything in random order: the tree shrinks back to one
/// empty leaf through merges at every level.
#[test]
fn grow_and_shrink_every_index() {
    use rand::seq::SliceRandom;
    use rand::SeedableRng;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
    let mut keys: Vec<u32> = (0..3000).collect();
    for (index, storage, bytes) in [
        (IndexKind::Btree, Storage::Fast, 512),
        (IndexKind::Bftl, Storage::Fast, 512),
        (IndexKind::MuTree, Storage::Native, 512),
        (IndexKind::Ipl, Storage::Native, 512),
    ] {
        keys.shuffle(&mut rng);
        let mut ops: Vec<Op> = keys.iter().map(|&k| Op::Insert(k, k ^ 0x5555)).collect();
        keys.shuffle(&mut rng);
        ops.extend(keys.iter().map(|&k| Op::Remove(k)));
        let mut tree = build(&spec(index, storage, bytes), &small_geometry()).unwrap();
        check(&mut tree, &ops[..3000]);
        assert!(tree.height() >= 3, "{index:?}: height {}", tree.height());
        check_continue(&mut tree, &ops);
        assert_eq!(tree.height(), 1, "{index:?}");
        let c = tree.store().counters();
        assert!(c.merges > 0, "{index:?}: no FTL merge, compaction or GC happened: {c:?}");
        assert!(index != IndexKind::Bftl || c.compactions > 0, "BFTL never compacted");
    }
}

fn check_continue(tree: &mut BTree<Box<dyn NodeStore>>, ops: &[Op]) {
    for op in &ops[3000..] {
        if let Op::Remove(k) = *op {
            assert!(tree.remove(k).unwrap());
            assert_eq!(tree.search(k).unwrap(), None);
        }
    }
    assert!(tree.is_empty());
}

/// Same seed, same work: every counter and the simulated time agree between two runs.
#[test]
fn same_seed_same_counters() {
    use rand::{Rng, SeedableRng};
    let once = |index, storage| {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
        let mut tree = build(&spec(index, storage, 512), &small_geometry()).unwrap();
        for _ in 0..3000 {
            tree.insert(rng.gen_range(0..3000), rng.gen()).unwrap();
        }
        tree.flush().unwrap();
        let s = tree.store();
        (s.device().counters(), s.counters(), s.usage(), s.now())
    };
    for (index, storage) in [
        (IndexKind::Btree, Storage::Bast),
        (IndexKind::Bftl, Storage::Fast),
        (IndexKind::MuTree, Storage::Native),
        (IndexKind::Ipl, Storage::Native),
    ] {
        let a = once(index, storage);
        assert_eq!(a, once(index, storage), "{index:?}");
        assert!(a.0.page_programs > 0 && a.3 > 0, "{index:?} did no flash work: {a:?}");
    }
}
