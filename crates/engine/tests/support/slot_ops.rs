//! Slot operations on a page, and a proptest strategy for them, shared by the tests of
//! pages alone (`page.rs`) and of the buffer pool's logging (`oplog.rs`).

use proptest::prelude::*;

#[derive(Debug, Clone)]
pub enum Op {
    Insert(Vec<u8>),
    InsertAt(usize, Vec<u8>),
    Remove(usize),
    Delete(usize),
    Replace(usize, Vec<u8>),
}

/// One slot operation with tuples of 1 to `max_tuple - 1` bytes.
pub fn op(max_tuple: usize) -> impl Strategy<Value = Op> {
    let t = move || proptest::collection::vec(any::<u8>(), 1..max_tuple);
    prop_oneof![
        t().prop_map(Op::Insert),
        (any::<usize>(), t()).prop_map(|(i, t)| Op::InsertAt(i, t)),
        any::<usize>().prop_map(Op::Remove),
        any::<usize>().prop_map(Op::Delete),
        (any::<usize>(), t()).prop_map(|(i, t)| Op::Replace(i, t)),
    ]
}
