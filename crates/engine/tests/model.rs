//! The engine against simple models: a table with a primary key and a secondary
//! index versus a `BTreeMap`, through inserts, updates that grow and shrink rows,
//! deletes, point and range queries, checkpoints and reopens, with a buffer small
//! enough that pages are evicted (and appended to) all the time.

mod common;

use engine::buffer::{CleanerPolicy, Replacement};
use engine::db::BufferSize;
use engine::types::Value;
use engine::{Database, DbOptions, QueryResult};
use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeMap;

const SCHEMA: &str = "
CREATE REGION r (IPA_MODE=SLC, IPA=2x4, V=6, MAX_CHIPS=2);
CREATE TABLESPACE ts (REGION=r, EXTENT SIZE 16K);
CREATE TABLE kv (k BIGINT PRIMARY KEY, v INT NOT NULL, s VARCHAR(300)) TABLESPACE ts;
CREATE INDEX kv_v ON kv(v) TABLESPACE ts;
";

#[derive(Clone, Debug)]
enum Op {
    Insert(i64, i32, usize),
    SetV(i64, i32),
    SetS(i64, usize),
    Delete(i64),
    Get(i64),
    Range(i64, i64),
    ByV(i32),
    Checkpoint,
    Reopen,
}

fn op() -> impl Strategy<Value = Op> {
    let k = || 0i64..300;
    prop_oneof![
        8 => (k(), 0i32..20, 0usize..300).prop_map(|(k, v, n)| Op::Insert(k, v, n)),
        4 => (k(), 0i32..20).prop_map(|(k, v)| Op::SetV(k, v)),
        3 => (k(), 0usize..300).prop_map(|(k, n)| Op::SetS(k, n)),
        4 => k().prop_map(Op::Delete),
        3 => k().prop_map(Op::Get),
        1 => (k(), k()).prop_map(|(a, b)| Op::Range(a.min(b), a.max(b))),
        1 => (0i32..20).prop_map(Op::ByV),
        1 => Just(Op::Checkpoint),
        1 => Just(Op::Reopen),
    ]
}

fn text(k: i64, n: usize) -> String {
    (0..n).map(|i| (b'a' + ((k as usize + i) % 26) as u8) as char).collect()
}

fn options() -> DbOptions {
    DbOptions { buffer: BufferSize::Pages(10), ..DbOptions::default() }
}

fn pool_options(lru: bool, eager: bool) -> DbOptions {
    DbOptions {
        replacement: if lru { Replacement::Lru } else { Replacement::Clock },
        cleaner: if eager { CleanerPolicy::EAGER } else { CleanerPolicy::NonEager },
        ..options()
    }
}

fn row(k: i64, v: i32, s: &str) -> Vec<Value> {
    vec![Value::Int(k), Value::Int(v as i64), Value::Text(s.into())]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn table_and_indexes_match_a_btreemap(ops in proptest::collection::vec(op(), 1..250), lru: bool, eager: bool) {
        let options = || pool_options(lru, eager);
        let mut db = Database::create(common::device(), options()).unwrap();
        db.execute(SCHEMA).unwrap();
        let mut model: BTreeMap<i64, (i32, String)> = BTreeMap::new();
        for op in ops {
            let t = db.table_id("kv").unwrap();
            let tx = db.begin();
            match op {
                Op::Insert(k, v, n) => {
                    let s = text(k, n);
                    let r = db.insert(&tx, t, &row(k, v, &s));
                    prop_assert_eq!(r.is_ok(), !model.contains_key(&k), "{:?}", r);
                    model.entry(k).or_insert((v, s));
                }
                Op::SetV(k, v) => {
                    let done = db.update(&tx, t, &[Value::Int(k)], &[(1, Value::Int(v as i64))]).unwrap();
                    prop_assert_eq!(done, model.contains_key(&k));
                    if let Some(e) = model.get_mut(&k) { e.0 = v }
                }
                Op::SetS(k, n) => {
                    let s = text(k + 1, n);
                    let done = db.update(&tx, t, &[Value::Int(k)], &[(2, Value::Text(s.clone()))]).unwrap();
                    prop_assert_eq!(done, model.contains_key(&k));
                    if let Some(e) = model.get_mut(&k) { e.1 = s }
                }
                Op::Delete(k) => {
                    prop_assert_eq!(db.delete(&tx, t, &[Value::Int(k)]).unwrap(), model.remove(&k).is_some());
                }
                Op::Get(k) => {
                    let got = db.get(&tx, t, &[Value::Int(k)]).unwrap();
                    prop_assert_eq!(got, model.get(&k).map(|(v, s)| row(k, *v, s)));
                }
                Op::Range(a, b) => {
                    let got = db.scan(&tx, t, &[Value::Int(a)], &[Value::Int(b)]).unwrap();
                    let want: Vec<_> = model.range(a..=b).map(|(k, (v, s))| row(*k, *v, s)).collect();
                    prop_assert_eq!(got, want);
                }
                Op::ByV(v) => {
                    let r = db.execute(&format!("SELECT k FROM kv WHERE v = {v}")).unwrap().pop().unwrap();
                    let QueryResult::Rows { rows, .. } = r else { panic!() };
                    let mut got: Vec<i64> = rows.iter().map(|r| match r[0] { Value::Int(k) => k, _ => panic!() }).collect();
                    got.sort();
                    let want: Vec<i64> = model.iter().filter(|(_, e)| e.0 == v).map(|(k, _)| *k).collect();
                    prop_assert_eq!(got, want);
                }
                Op::Checkpoint => db.checkpoint().unwrap(),
                Op::Reopen => {
                    db.commit(tx).unwrap();
                    let device = db.close().unwrap();
                    db = Database::open(device, options()).unwrap();
                    continue;
                }
            }
            db.commit(tx).unwrap();
        }
        let tx = db.begin();
        let t = db.table_id("kv").unwrap();
        let all = db.scan(&tx, t, &[], &[]).unwrap();
        prop_assert_eq!(all.len(), model.len());
    }
}

/// Long keys make a deep tree fast: thousands of inserts split leaves and inner nodes,
/// deleting most of them merges nodes and collapses the root; order holds throughout
/// and after a reopen.
#[test]
fn deep_btree_splits_merges_and_reopens() {
    let mut db = Database::create(common::device(), options()).unwrap();
    db.execute(
        "CREATE REGION r (IPA_MODE=SLC, IPA=2x3);
         CREATE TABLESPACE ts (REGION=r);
         CREATE TABLE t (k VARCHAR(200) PRIMARY KEY, n INT) TABLESPACE ts;",
    )
    .unwrap();
    let t = db.table_id("t").unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let mut model = BTreeMap::new();
    let key = |i: u32| format!("{:08}{}", i.wrapping_mul(2_654_435_761) % 100_000_000, "x".repeat(180));
    for batch in 0..30 {
        let tx = db.begin();
        for i in batch * 100..(batch + 1) * 100 {
            let k = key(i);
            db.insert(&tx, t, &[Value::Text(k.clone()), Value::Int(i as i64)]).unwrap();
            model.insert(k, i);
        }
        db.commit(tx).unwrap();
    }
    let check = |db: &mut Database, model: &BTreeMap<String, u32>| {
        let tx = db.begin();
        let got: Vec<String> = db
            .scan(&tx, t, &[], &[])
            .unwrap()
            .into_iter()
            .map(|r| match &r[0] {
                Value::Text(s) => s.clone(),
                _ => panic!(),
            })
            .collect();
        assert_eq!(got, model.keys().cloned().collect::<Vec<_>>());
        db.commit(tx).unwrap();
    };
    check(&mut db, &model);
    let (height, pages) = db.index_shape("t_pkey").unwrap();
    assert!(height >= 3 && pages > 150, "height {height}, {pages} pages");
    let mut keys: Vec<String> = model.keys().cloned().collect();
    while keys.len() > 3 {
        let k = keys.swap_remove(rng.gen_range(0..keys.len()));
        let tx = db.begin();
        assert!(db.delete(&tx, t, &[Value::Text(k.clone())]).unwrap());
        db.commit(tx).unwrap();
        model.remove(&k);
        if keys.len().is_multiple_of(500) {
            check(&mut db, &model);
        }
    }
    check(&mut db, &model);
    let (height, pages) = db.index_shape("t_pkey").unwrap();
    assert_eq!((height, pages), (1, 1), "after merges the root is a leaf again");
    let device = db.close().unwrap();
    let mut db = Database::open(device, options()).unwrap();
    check(&mut db, &model);
    let tx = db.begin();
    let (k, n) = model.iter().next().unwrap();
    assert_eq!(db.get(&tx, t, &[Value::Text(k.clone())]).unwrap().unwrap()[1], Value::Int(*n as i64));
}
