//! The B+-tree's node entries on a slotted page, and their check when a node is read
//! from flash (the store checks every leaf and inner page it fetches):
//!
//! ```text
//! leaf:  key length u16 LE, key, value            (header `next` = right sibling)
//! inner: key length u16 LE, key, child page u32 LE (header `aux` = leftmost child)
//! ```

use crate::error::{Error, Result};
use crate::page::{self, Kind};

// Entries are checked when a node is read from flash ([`check_entries`]); the accessors
// below rely on that and, should it not hold, return empty bytes rather than panic.

pub(crate) fn key_len(t: &[u8]) -> usize {
    match t {
        [lo, hi, ..] => u16::from_le_bytes([*lo, *hi]) as usize,
        _ => 0,
    }
}
pub(crate) fn key_of(t: &[u8]) -> &[u8] {
    t.get(2..2 + key_len(t)).unwrap_or_default()
}
pub(crate) fn value_of(t: &[u8]) -> &[u8] {
    t.get(2 + key_len(t)..).unwrap_or_default()
}
/// Entry `i` of a checked node (every slot of a node holds an entry).
pub(crate) fn entry_at(p: &[u8], body_end: usize, i: usize) -> &[u8] {
    page::get(p, body_end, i).unwrap_or_default()
}

/// Checks the entries of a B+-tree node read from flash: every slot holds an entry, a
/// key fits its entry, an inner entry's child is 4 bytes, and keys ascend.
pub(crate) fn check_entries(p: &[u8], body_end: usize) -> Result<()> {
    let inner = page::kind(p) == Kind::Inner as u8;
    let mut previous: Option<&[u8]> = None;
    for i in 0..page::slot_count(p) {
        let corrupt = |m: &str| Err(Error::Corrupt(format!("B+-tree page {} entry {i}: {m}", page::page_no(p))));
        let Some(t) = page::get(p, body_end, i) else { return corrupt("empty slot") };
        if t.len() < 2 || key_len(t) + 2 > t.len() {
            return corrupt("the key runs past the entry");
        }
        if inner && value_of(t).len() != 4 {
            return corrupt("an inner entry's child is not 4 bytes");
        }
        if previous.is_some_and(|k| k >= key_of(t)) {
            return corrupt("keys out of order");
        }
        previous = Some(key_of(t));
    }
    Ok(())
}
pub(crate) fn entry(key: &[u8], value: &[u8]) -> Vec<u8> {
    let mut t = Vec::with_capacity(2 + key.len() + value.len());
    t.extend_from_slice(&(key.len() as u16).to_le_bytes());
    t.extend_from_slice(key);
    t.extend_from_slice(value);
    t
}
pub(crate) fn child_of(t: &[u8]) -> u32 {
    page::le_u32(value_of(t))
}
