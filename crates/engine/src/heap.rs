//! Heap files: tuples on slotted pages, addressed by RID (page, slot).
//!
//! Inserts go to a page that recently lost tuples, else to the last page, else to a new
//! one. An update of equal length rewrites the tuple's bytes in place (for fixed-width
//! columns only the changed bytes differ, so IPA sees a small change); a tuple of
//! another length moves within its page, or to another page, which gives it a new RID.
//! How a page makes room for inserts and such moves is the database's [`HeapSpace`].
//!
//! A page still in an older IPA layout of its object (`ALTER … SET IPA`) and too full
//! for the new delta area makes room the same way: the updated tuple moves to another
//! page, and the page adopts the new layout once the space it leaves suffices.

use crate::buffer::Pages;
use crate::error::{Error, Result};
use crate::page::{self, Kind};
use crate::space::{ObjectAccess, ObjectSpace};
use crate::store::PageId;
use serde::{Deserialize, Serialize};
use std::fmt;

/// How heap pages use their space for inserts and for updates that change a tuple's
/// length. Both keep the page format; they differ in the bytes such an update changes,
/// which is what IPA can append.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HeapSpace {
    /// Inserts fill a page to the brim; an updated tuple of another length goes to the
    /// page's free gap, and when the gap is too small the page is compacted first,
    /// moving every tuple behind the old one.
    #[default]
    Packed,
    /// MySQL InnoDB's record space. Inserts at the end of a heap leave 1/16 of the page
    /// free ("InnoDB tries to leave 1/16 of the page free for future insertions and
    /// updates of the index records", MySQL 8.0 Reference Manual 15.6.2.2, "The
    /// Physical Structure of an InnoDB Index"). An updated record no longer than the
    /// old one takes the old one's place: InnoDB's optimistic update deletes the old
    /// record, which heads the page's free list, and the insert reuses the free list's
    /// first record when it is large enough (`page_cur_insert_rec_low`,
    /// storage/innobase/page/page0cur.cc). A longer record goes to the free gap, the
    /// page reorganized first when the gap is too small, as [`HeapSpace::Packed`] does.
    Innodb,
}

impl HeapSpace {
    pub fn is_packed(&self) -> bool {
        *self == HeapSpace::Packed
    }

    /// Bytes an insert at the end of a heap leaves free on a page with this body.
    pub fn end_insert_reserve(self, body_end: usize) -> usize {
        match self {
            HeapSpace::Packed => 0,
            HeapSpace::Innodb => body_end / 16,
        }
    }
}

/// A tuple's address: page number in the object's region and slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Rid {
    pub page: u32,
    pub slot: u16,
}

impl Rid {
    pub const BYTES: usize = 6;

    /// Big-endian, so RIDs order like (page, slot) as index-key suffixes.
    pub fn encode(self) -> [u8; 6] {
        let mut b = [0; 6];
        b[..4].copy_from_slice(&self.page.to_be_bytes());
        b[4..].copy_from_slice(&self.slot.to_be_bytes());
        b
    }

    pub fn decode(b: &[u8]) -> Result<Rid> {
        if b.len() != Self::BYTES {
            return Err(Error::Corrupt(format!("a RID has 6 bytes, found {}", b.len())));
        }
        Ok(Rid { page: u32::from_be_bytes([b[0], b[1], b[2], b[3]]), slot: u16::from_be_bytes([b[4], b[5]]) })
    }
}

impl fmt::Display for Rid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "({}, {})", self.page, self.slot)
    }
}

fn check_fits(a: &ObjectAccess, tuple: &[u8]) -> Result<()> {
    let max = page::max_tuple_bytes(a.body_end());
    if tuple.len() > max {
        return Err(Error::Full(format!("a {}-byte row does not fit a page (at most {max} bytes)", tuple.len())));
    }
    Ok(())
}

/// Inserts a tuple and returns its RID.
pub fn insert(a: &mut ObjectAccess, tuple: &[u8], space: HeapSpace) -> Result<Rid> {
    check_fits(a, tuple)?;
    // Pages that lost tuples, newest first, then the last page (`with_room` only
    // shrinks on the way, from the back).
    let mut next = a.space.with_room.len();
    let mut last = a.space.last_page();
    loop {
        let (no, at_end) = match next.checked_sub(1) {
            Some(i) => {
                next = i;
                (a.space.with_room[i], false)
            }
            None => match last.take() {
                Some(no) => (no, true),
                None => break,
            },
        };
        let f = a.fetch(no)?;
        let body_end = page::body_end(a.pool.page(f));
        let reserve = if at_end { space.end_insert_reserve(body_end) } else { 0 };
        let fits = page::free_bytes(a.pool.page(f), body_end) >= tuple.len() + reserve;
        if fits {
            let slot = page::insert(a.page_mut(f), body_end, tuple);
            a.pool.unpin(f);
            let slot =
                slot.ok_or_else(|| Error::Corrupt(format!("heap page {no}: free space it claims is not there")))?;
            return Ok(Rid { page: no, slot: slot as u16 });
        }
        a.pool.unpin(f);
        a.space.with_room.retain(|&p| p != no);
    }
    let (no, f) = a.new_page(Kind::Heap, 0)?;
    let body_end = a.body_end();
    let slot = page::insert(a.page_mut(f), body_end, tuple);
    a.pool.unpin(f);
    // `check_fits` bounds a row by what an empty page holds.
    let slot = slot.ok_or_else(|| Error::Full(format!("a {}-byte row does not fit an empty page", tuple.len())))?;
    Ok(Rid { page: no, slot: slot as u16 })
}

/// Calls `read` with the tuple at `rid`; `None` if there is none.
pub fn get<T>(pool: &mut Pages<'_>, space: &ObjectSpace, rid: Rid, read: impl FnOnce(&[u8]) -> T) -> Result<Option<T>> {
    let f = pool.fetch(PageId { region: space.region, page: rid.page })?;
    let p = pool.page(f);
    let body_end = page::body_end(p);
    let out = (page::kind(p) == Kind::Heap as u8 && (rid.slot as usize) < page::slot_count(p))
        .then(|| page::get(p, body_end, rid.slot as usize))
        .flatten()
        .map(read);
    pool.unpin(f);
    Ok(out)
}

/// Replaces the tuple at `rid`; returns its RID afterwards (new if it had to move),
/// or `None` if there is no tuple at `rid`.
pub fn update(a: &mut ObjectAccess, rid: Rid, tuple: &[u8], space: HeapSpace) -> Result<Option<Rid>> {
    check_fits(a, tuple)?;
    let f = a.fetch(rid.page)?;
    let slot = rid.slot as usize;
    let p = a.pool.page(f);
    let body_end = page::body_end(p);
    if slot >= page::slot_count(p) || page::get(p, body_end, slot).is_none() {
        a.pool.unpin(f);
        return Ok(None);
    }
    // The bytes that differ, first to last (`None`: the tuple is unchanged; `Some(None)`:
    // its length changes, and `shorter` says whether it shrinks).
    let old_len = page::get(p, body_end, slot).map_or(0, <[u8]>::len);
    let shorter = tuple.len() < old_len;
    let changed = match page::get(p, body_end, slot) {
        Some(old) if old.len() == tuple.len() => {
            let first = old.iter().zip(tuple).position(|(a, b)| a != b);
            first.map(|first| {
                let last = old.iter().zip(tuple).rposition(|(a, b)| a != b).unwrap_or(first);
                Some(first..last + 1)
            })
        }
        _ => Some(None),
    };
    // `fetch` adopted the object's layout if the page had room for it.
    let adopted = body_end == a.body_end();
    let in_place = match changed {
        None => true,
        Some(_) if !adopted => false,
        // Equal length: only the bytes that differ are written (a field update touches
        // its field alone).
        Some(Some(span)) => page::write_within(&mut a.page_mut(f), body_end, slot, span.clone(), &tuple[span]),
        Some(None) if shorter && space == HeapSpace::Innodb => {
            page::overwrite_shorter(&mut a.page_mut(f), body_end, slot, tuple)
        }
        Some(None) => page::replace(a.page_mut(f), body_end, slot, tuple),
    };
    if in_place {
        a.pool.unpin(f);
        return Ok(Some(rid));
    }
    page::delete(a.page_mut(f), body_end, slot);
    a.adopt(f);
    a.pool.unpin(f);
    insert(a, tuple, space).map(Some)
}

/// Deletes the tuple at `rid`; `false` if there was none.
pub fn delete(a: &mut ObjectAccess, rid: Rid) -> Result<bool> {
    let f = a.fetch(rid.page)?;
    let slot = rid.slot as usize;
    let p = a.pool.page(f);
    let body_end = page::body_end(p);
    let present = slot < page::slot_count(p) && page::get(p, body_end, slot).is_some();
    if present {
        page::delete(a.page_mut(f), body_end, slot);
        if !a.space.with_room.contains(&rid.page) {
            a.space.with_room.push(rid.page);
        }
    }
    a.pool.unpin(f);
    Ok(present)
}

/// Visits every tuple in page order until `visit` returns `false`. A page of the space
/// that is not a heap page holds no tuples (as for [`get`]): a crash between a page's
/// allocation and its formatting leaves one.
pub fn scan(pool: &mut Pages<'_>, space: &ObjectSpace, mut visit: impl FnMut(Rid, &[u8]) -> bool) -> Result<()> {
    for no in space.pages() {
        let f = pool.fetch(PageId { region: space.region, page: no })?;
        let p = pool.page(f);
        let body_end = page::body_end(p);
        let mut go_on = true;
        let slots = if page::kind(p) == Kind::Heap as u8 { page::slot_count(p) } else { 0 };
        for slot in 0..slots {
            if let Some(t) = page::get(p, body_end, slot) {
                if !visit(Rid { page: no, slot: slot as u16 }, t) {
                    go_on = false;
                    break;
                }
            }
        }
        pool.unpin(f);
        if !go_on {
            break;
        }
    }
    Ok(())
}
