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
        over_provisioning: None,
        gc: None,
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

/// The shrunk case of a 1,024-case run of `bftl_on_fast`: BFTL on FAST read a node unit
/// back empty ("truncate to 31 keys of a node holding 0").
#[test]
fn bftl_on_fast_keeps_every_node_unit() {
    run(
        IndexKind::Bftl,
        Storage::Fast,
        512,
        &[
            Op::Insert(0, 0),
            Op::Insert(856, 0),
            Op::Insert(5, 0),
            Op::Insert(1313, 0),
            Op::Insert(1316, 0),
            Op::Insert(1, 0),
            Op::Insert(2, 0),
            Op::Insert(1317, 0),
            Op::Insert(1318, 0),
            Op::Insert(6, 0),
            Op::Insert(2126, 0),
            Op::Insert(1314, 0),
            Op::Insert(1319, 0),
            Op::Insert(2127, 0),
            Op::Insert(1315, 0),
            Op::Insert(2128, 0),
            Op::Insert(2129, 0),
            Op::Insert(1320, 0),
            Op::Insert(264, 0),
            Op::Insert(2130, 0),
            Op::Insert(3, 0),
            Op::Insert(7, 0),
            Op::Insert(8, 0),
            Op::Insert(9, 0),
            Op::Insert(10, 0),
            Op::Insert(1321, 0),
            Op::Insert(66, 0),
            Op::Insert(11, 0),
            Op::Insert(12, 0),
            Op::Insert(1322, 0),
            Op::Insert(13, 0),
            Op::Insert(2131, 0),
            Op::Insert(14, 0),
            Op::Insert(15, 0),
            Op::Insert(1323, 0),
            Op::Insert(1324, 0),
            Op::Insert(1325, 0),
            Op::Insert(16, 0),
            Op::Insert(17, 0),
            Op::Insert(67, 0),
            Op::Insert(2132, 0),
            Op::Insert(1667, 0),
            Op::Insert(18, 0),
            Op::Insert(2133, 0),
            Op::Insert(2134, 0),
            Op::Insert(2135, 0),
            Op::Insert(19, 0),
            Op::Insert(2136, 0),
            Op::Insert(2137, 0),
            Op::Insert(2138, 0),
            Op::Insert(20, 0),
            Op::Insert(2139, 0),
            Op::Insert(2140, 0),
            Op::Insert(2141, 0),
            Op::Insert(21, 0),
            Op::Insert(22, 0),
            Op::Insert(23, 0),
            Op::Insert(24, 0),
            Op::Insert(25, 0),
            Op::Insert(2142, 0),
            Op::Insert(26, 0),
            Op::Insert(27, 0),
            Op::Insert(2172, 0),
            Op::Insert(1326, 0),
            Op::Insert(28, 0),
            Op::Insert(29, 0),
            Op::Insert(2125, 0),
            Op::Insert(30, 0),
            Op::Insert(68, 0),
            Op::Insert(2143, 0),
            Op::Insert(31, 0),
            Op::Insert(32, 0),
            Op::Insert(1327, 0),
            Op::Insert(2144, 0),
            Op::Insert(1328, 0),
            Op::Insert(69, 0),
            Op::Insert(2145, 0),
            Op::Insert(2146, 0),
            Op::Insert(33, 0),
            Op::Insert(34, 0),
            Op::Insert(35, 0),
            Op::Insert(2147, 0),
            Op::Insert(36, 100418907),
            Op::Insert(1229, 2743232908),
            Op::Insert(2357, 2175280535),
            Op::Insert(363, 145626734),
            Op::Insert(878, 3156772606),
            Op::Insert(2490, 1420921532),
            Op::Insert(958, 3393790462),
            Op::Insert(1487, 2421534807),
            Op::Insert(1785, 4149347071),
            Op::Insert(916, 3842559720),
            Op::Insert(537, 4234481882),
            Op::Insert(243, 3925290640),
            Op::Insert(1312, 1467365951),
            Op::Insert(2854, 692578336),
            Op::Insert(594, 3958969706),
            Op::Insert(4, 3903653050),
            Op::Insert(65, 2526928282),
            Op::Remove(856),
            Op::Insert(784, 2214517498),
            Op::Insert(1275, 1555933252),
            Op::Insert(468, 1549269309),
            Op::Insert(2019, 1762065209),
            Op::Insert(301, 3931027504),
            Op::Insert(2835, 1015555554),
            Op::Insert(228, 839194788),
            Op::Insert(2044, 2155007843),
            Op::Insert(1538, 4271304621),
            Op::Insert(1482, 2856891251),
            Op::Insert(2171, 4115000180),
            Op::Insert(1789, 3308591476),
            Op::Insert(1476, 3213743000),
            Op::Insert(867, 3943992444),
            Op::Insert(2391, 3672176117),
            Op::Insert(998, 2757375032),
            Op::Insert(1914, 220618746),
            Op::Insert(1479, 2404571033),
            Op::Insert(2360, 2895475854),
            Op::Insert(1666, 2450958573),
            Op::Insert(2729, 1362128713),
            Op::Insert(638, 2698246964),
            Op::Insert(1519, 793307926),
            Op::Insert(2263, 3799034925),
            Op::Insert(394, 2810502652),
            Op::Insert(781, 3316314451),
            Op::Insert(372, 4161821814),
            Op::Insert(2041, 1364067320),
            Op::Remove(2125),
            Op::Insert(1900, 4070461363),
        ],
    );
}
