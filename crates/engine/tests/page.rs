//! Slotted pages (`engine::page`) as a black box: the slot operations against a
//! `Vec<Option<Vec<u8>>>` model, the move to another body end, and a fuzz pass over the
//! page parser.

#[path = "support/slot_ops.rs"]
mod slot_ops;

use engine::page::*;
use proptest::prelude::*;
use slot_ops::{op, Op};

/// Bytes of one slot-directory entry (offset and length, two bytes each).
const SLOT: usize = 4;

const BODY: usize = 400;

fn fresh() -> Vec<u8> {
    let mut p = vec![0u8; 512];
    init(&mut p, BODY, 7, 3, Kind::Heap, 0);
    p
}

proptest! {
    /// A page moved to another body end keeps its tuples and slot numbers, passes
    /// `check`, erases its new delta area, and refuses (unchanged) when too full.
    #[test]
    fn relayout_keeps_tuples(tuples in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 1..40), 0..12), gone in any::<usize>(), new_end in 36usize..512) {
        let mut p = fresh();
        for t in &tuples {
            insert(&mut p, BODY, t);
        }
        if !tuples.is_empty() {
            delete(&mut p, BODY, gone % tuples.len());
        }
        let before: Vec<Option<Vec<u8>>> = (0..slot_count(&p)).map(|i| get(&p, BODY, i).map(<[u8]>::to_vec)).collect();
        let old = p.clone();
        if relayout(&mut p, new_end) {
            prop_assert_eq!(body_end(&p), new_end);
            check(&p, new_end).unwrap();
            let after: Vec<Option<Vec<u8>>> = (0..slot_count(&p)).map(|i| get(&p, new_end, i).map(<[u8]>::to_vec)).collect();
            prop_assert_eq!(after, before);
            prop_assert!(p[new_end..].iter().all(|&b| b == 0xFF));
        } else {
            prop_assert_eq!(p, old);
            let live: usize = before.iter().flatten().map(Vec::len).sum();
            prop_assert!(HEADER_BYTES + live + SLOT * before.len() > new_end || new_end < HEADER_BYTES + SLOT * (before.len() + 1));
        }
    }

    /// The page against a `Vec<Option<Vec<u8>>>` model of its slots.
    #[test]
    fn page_matches_model(ops in proptest::collection::vec(op(60), 1..80)) {
        let mut p = fresh();
        let mut model: Vec<Option<Vec<u8>>> = Vec::new();
        for op in ops {
            match op {
                Op::Insert(t) => {
                    if let Some(i) = insert(&mut p, BODY, &t) {
                        if i == model.len() { model.push(Some(t)) } else { prop_assert!(model[i].is_none()); model[i] = Some(t) }
                    } else {
                        let live: usize = model.iter().flatten().map(Vec::len).sum();
                        let reuse = model.iter().any(Option::is_none);
                        let slots = 4 * (model.len() + usize::from(!reuse));
                        prop_assert!(HEADER_BYTES + live + slots + t.len() > BODY);
                    }
                }
                Op::InsertAt(i, t) => {
                    let i = i % (model.len() + 1);
                    if insert_at(&mut p, BODY, i, &t) { model.insert(i, Some(t)) }
                }
                Op::Remove(i) if !model.is_empty() => { let i = i % model.len(); remove_at(&mut p, BODY, i); model.remove(i); }
                Op::Delete(i) if !model.is_empty() => { let i = i % model.len(); delete(&mut p, BODY, i); model[i] = None; }
                Op::Replace(i, t) if !model.is_empty() => {
                    let i = i % model.len();
                    if model[i].is_some() && replace(&mut p, BODY, i, &t) { model[i] = Some(t) }
                }
                _ => {}
            }
            check(&p, BODY).unwrap();
            prop_assert!(p[BODY..].iter().all(|&b| b == 0xFF), "the delta area stays erased");
            prop_assert_eq!(slot_count(&p), model.len());
            for (i, t) in model.iter().enumerate() {
                prop_assert_eq!(get(&p, BODY, i), t.as_deref());
            }
        }
    }

    /// Fuzz pass over the page parser: arbitrary bytes are accepted or refused as
    /// corrupt, never a panic; an accepted page can be read slot by slot.
    #[test]
    fn fuzz_page_parser(mut bytes in proptest::collection::vec(any::<u8>(), 0..600), body in 0usize..600, fix in any::<bool>()) {
        if fix && bytes.len() >= HEADER_BYTES {
            bytes[16] = 1; // get past the kind check more often
        }
        if check(&bytes, body).is_ok() {
            for i in 0..slot_count(&bytes) {
                let _ = get(&bytes, body, i);
            }
            let _ = free_bytes(&bytes, body);
        }
    }
}
