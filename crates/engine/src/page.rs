//! The NSM slotted page: header, tuples growing up, a slot directory growing down, and
//! the reserved delta-record area at the very end (it must be erased when the page is
//! written out-of-place, so appends land in the flash page's erased tail).
//!
//! ```text
//! offset   size  field
//!  0        8    page LSN (u64 LE; its low bytes change most, so IPA records only those)
//!  8        4    page number within its region
//! 12        4    object id
//! 16        1    kind: 1 heap, 2 B+-tree leaf, 3 B+-tree inner
//! 17        1    level (B+-tree: 0 = leaf)
//! 18        2    slot count
//! 20        2    free_start: end of the tuple area
//! 22        2    free_end: start of the slot directory
//! 24        4    next page (heap chain / right sibling leaf), NO_PAGE if none
//! 28        4    aux (B+-tree inner: leftmost child)
//! 32        …    tuples
//! free_end  4·k  slot directory, slot i at body_end − 4(i+1): tuple offset u16, length u16
//! body_end  D    delta-record area, D = N·(1+3M+3V), 0xFF when written out-of-place
//! ```
//!
//! A deleted slot has offset 0. Tuples never overlap and lie in [32, free_start).
//! Methods take the page as a byte slice plus its `body_end`; [`check`] validates an
//! untrusted page before any other method touches it.
//!
//! Every function that changes a page writes through [`PageWrite::write`], naming the
//! byte range it is about to write: a buffer frame notes those ranges, so the log and
//! the IPA diff compare only them (see `oplog`), not the whole page.
//!
//! A page carries its own layout: free_end + 4·slot count is its `body_end` ([`body_end`])
//! whatever its tuples do, so pages of one object may differ in delta area while an
//! `ALTER … SET IPA` is being adopted ([`relayout`] moves a page to another one).

use crate::error::{Error, Result};
use prefetch_index::prefetch_index;

pub const HEADER_BYTES: usize = 32;
/// Bytes of a tuple's slot entry in the slot directory at the body's end.
pub const SLOT_BYTES: usize = 4;
/// "No page" in page links.
pub const NO_PAGE: u32 = u32::MAX;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    Heap = 1,
    Leaf = 2,
    Inner = 3,
}

/// Bytes a page mutation writes to: plain bytes, or a buffer frame that notes the
/// ranges written (they must cover every byte that changes).
pub trait PageWrite {
    /// The page, to read.
    fn bytes(&self) -> &[u8];
    /// Bytes `range` of the page, about to be written.
    fn write(&mut self, range: std::ops::Range<usize>) -> &mut [u8];
}

impl PageWrite for [u8] {
    fn bytes(&self) -> &[u8] {
        self
    }
    fn write(&mut self, range: std::ops::Range<usize>) -> &mut [u8] {
        &mut self[range]
    }
}

impl PageWrite for Vec<u8> {
    fn bytes(&self) -> &[u8] {
        self
    }
    fn write(&mut self, range: std::ops::Range<usize>) -> &mut [u8] {
        &mut self[range]
    }
}

impl<P: PageWrite + ?Sized> PageWrite for &mut P {
    fn bytes(&self) -> &[u8] {
        (**self).bytes()
    }
    fn write(&mut self, range: std::ops::Range<usize>) -> &mut [u8] {
        (**self).write(range)
    }
}

fn u16_at(p: &[u8], at: usize) -> usize {
    u16::from_le_bytes([p[at], p[at + 1]]) as usize
}
fn set_u16(p: &mut (impl PageWrite + ?Sized), at: usize, v: usize) {
    p.write(at..at + 2).copy_from_slice(&(v as u16).to_le_bytes());
}
fn u32_at(p: &[u8], at: usize) -> u32 {
    le_u32(&p[at..at + 4])
}

/// A little-endian integer from up to 8 bytes (more are ignored); decoding never panics
/// on the bytes themselves, only slicing can, and callers slice fixed widths.
pub fn le_u64(b: &[u8]) -> u64 {
    b.iter().take(8).rev().fold(0, |v, &x| v << 8 | x as u64)
}
/// [`le_u64`] of up to 4 bytes.
pub fn le_u32(b: &[u8]) -> u32 {
    le_u64(&b[..b.len().min(4)]) as u32
}
fn set_u32(p: &mut (impl PageWrite + ?Sized), at: usize, v: u32) {
    p.write(at..at + 4).copy_from_slice(&v.to_le_bytes());
}

/// Formats an empty page (the delta area, from `body_end`, erased).
pub fn init(mut p: impl PageWrite, body_end: usize, page_no: u32, object: u32, kind: Kind, level: u8) {
    let len = p.bytes().len();
    p.write(body_end..len).fill(0xFF);
    clear(p, body_end, page_no, object, kind, level);
}

/// Empties the body of a page (LSN and links zeroed), leaving its delta area as it is.
pub fn clear(mut p: impl PageWrite, body_end: usize, page_no: u32, object: u32, kind: Kind, level: u8) {
    let header = p.write(0..body_end);
    header.fill(0);
    header[16] = kind as u8;
    header[17] = level;
    set_u32(header, 8, page_no);
    set_u32(header, 12, object);
    set_u16(header, 20, HEADER_BYTES);
    set_u16(header, 22, body_end);
    set_u32(header, 24, NO_PAGE);
    set_u32(header, 28, NO_PAGE);
}

pub fn lsn(p: &[u8]) -> u64 {
    le_u64(&p[0..8])
}
pub fn set_lsn(p: &mut (impl PageWrite + ?Sized), lsn: u64) {
    p.write(0..8).copy_from_slice(&lsn.to_le_bytes());
}
pub fn page_no(p: &[u8]) -> u32 {
    u32_at(p, 8)
}
pub fn object(p: &[u8]) -> u32 {
    u32_at(p, 12)
}
pub fn kind(p: &[u8]) -> u8 {
    p[16]
}
pub fn level(p: &[u8]) -> u8 {
    p[17]
}
pub fn slot_count(p: &[u8]) -> usize {
    u16_at(p, 18)
}
fn free_start(p: &[u8]) -> usize {
    u16_at(p, 20)
}
/// Start of the slot directory (metadata from here to the delta area).
pub fn free_end(p: &[u8]) -> usize {
    u16_at(p, 22)
}
pub fn next(p: &[u8]) -> u32 {
    u32_at(p, 24)
}
pub fn set_next(p: &mut (impl PageWrite + ?Sized), v: u32) {
    set_u32(p, 24, v)
}
pub fn aux(p: &[u8]) -> u32 {
    u32_at(p, 28)
}
pub fn set_aux(p: &mut (impl PageWrite + ?Sized), v: u32) {
    set_u32(p, 28, v)
}

fn slot_at(body_end: usize, i: usize) -> usize {
    body_end - SLOT_BYTES * (i + 1)
}

/// Prefetches every cache line of the page's body at once, before a search probes it:
/// a binary search waits for two dependent misses per probe (the slot, then its tuple),
/// where the lines fetched together overlap their misses. About 4% of a TPC-C run.
pub fn warm(p: &[u8], body_end: usize) {
    let body = p.get(..body_end).unwrap_or_default();
    for line in (0..body.len()).step_by(64) {
        prefetch_index(body, line);
    }
}

/// The tuple in slot `i`, `None` if deleted.
pub fn get(p: &[u8], body_end: usize, i: usize) -> Option<&[u8]> {
    let s = slot_at(body_end, i);
    let (off, len) = (u16_at(p, s), u16_at(p, s + 2));
    (off != 0).then(|| &p[off..off + len])
}

/// Overwrites bytes `span` of the tuple in slot `i` with `bytes` (an in-place update
/// of equal length that writes only the bytes that differ); `false` if the slot is empty.
pub fn write_within(
    p: &mut (impl PageWrite + ?Sized),
    body_end: usize,
    i: usize,
    span: std::ops::Range<usize>,
    bytes: &[u8],
) -> bool {
    let s = slot_at(body_end, i);
    let (off, len) = (u16_at(p.bytes(), s), u16_at(p.bytes(), s + 2));
    if off == 0 || span.end > len {
        return false;
    }
    p.write(off + span.start..off + span.end).copy_from_slice(bytes);
    true
}

/// Where the page's delta area starts, as its header says: free_end + 4·slot count
/// (every slot operation keeps this sum). Trusted only after [`check`] on a page read
/// from flash.
pub fn body_end(p: &[u8]) -> usize {
    free_end(p) + SLOT_BYTES * slot_count(p)
}

/// Moves the page to the layout whose body ends at `new_end`: compacts its tuples if
/// that makes room, moves the slot directory to end at `new_end` and erases the new
/// delta area (from `new_end` on). `false`, with the page unchanged, if its tuples and
/// slots do not fit the new body.
pub fn relayout(p: &mut [u8], new_end: usize) -> bool {
    let old_end = body_end(p);
    let n = slot_count(p);
    if new_end == old_end {
        return true;
    }
    if new_end > p.len() || new_end < HEADER_BYTES + SLOT_BYTES * (n + 1) {
        return false;
    }
    let live: usize = (0..n).filter_map(|i| get(p, old_end, i)).map(<[u8]>::len).sum();
    if HEADER_BYTES + live + SLOT_BYTES * n > new_end {
        return false;
    }
    if free_start(p) + SLOT_BYTES * n > new_end {
        compact(p, old_end);
    }
    let slots = p[old_end - SLOT_BYTES * n..old_end].to_vec();
    p[new_end - SLOT_BYTES * n..new_end].copy_from_slice(&slots);
    // Bytes between the tuples and the moved directory are free space: zero them, as
    // a fresh page has them.
    let gap_end = new_end - SLOT_BYTES * n;
    let start = free_start(p);
    p[start..gap_end].fill(0);
    set_u16(p, 22, gap_end);
    p[new_end..].fill(0xFF);
    true
}

/// Bytes free for one more tuple and its slot, counting space a compaction would win.
pub fn free_bytes(p: &[u8], body_end: usize) -> usize {
    let live: usize = (0..slot_count(p)).filter_map(|i| get(p, body_end, i)).map(<[u8]>::len).sum();
    let slots = SLOT_BYTES * slot_count(p);
    (body_end - HEADER_BYTES - slots - live).saturating_sub(SLOT_BYTES)
}

/// Bytes of tuples and slots in use (for B+-tree fill decisions).
pub fn used_bytes(p: &[u8], body_end: usize) -> usize {
    body_end - HEADER_BYTES - SLOT_BYTES - free_bytes(p, body_end)
}

/// Most bytes one tuple may have on a page with this body.
pub fn max_tuple_bytes(body_end: usize) -> usize {
    body_end - HEADER_BYTES - SLOT_BYTES
}

/// Room at the contiguous free gap, compacting first if that makes room.
fn make_room(p: &mut impl PageWrite, body_end: usize, len: usize, new_slot: bool) -> bool {
    let need = len + if new_slot { SLOT_BYTES } else { 0 };
    if free_end(p.bytes()) - free_start(p.bytes()) >= need {
        return true;
    }
    if free_bytes(p.bytes(), body_end) + SLOT_BYTES < need {
        return false;
    }
    compact(p, body_end);
    free_end(p.bytes()) - free_start(p.bytes()) >= need
}

/// Moves live tuples together, in slot order, to one contiguous tuple area.
fn compact(p: &mut (impl PageWrite + ?Sized), body_end: usize) {
    let bytes = p.bytes();
    let n = slot_count(bytes);
    // The live tuples copied out back to back (one buffer, not one per tuple), with
    // their slots and lengths.
    let mut packed = Vec::new();
    let mut tuples = Vec::new();
    for i in 0..n {
        if let Some(t) = get(bytes, body_end, i) {
            packed.extend_from_slice(t);
            tuples.push((i, t.len()));
        }
    }
    let mut at = HEADER_BYTES;
    for (i, len) in tuples {
        let from = at - HEADER_BYTES;
        p.write(at..at + len).copy_from_slice(&packed[from..from + len]);
        set_u16(p, slot_at(body_end, i), at);
        at += len;
    }
    set_u16(p, 20, at);
}

fn place(p: &mut impl PageWrite, tuple: &[u8]) -> usize {
    let at = free_start(p.bytes());
    p.write(at..at + tuple.len()).copy_from_slice(tuple);
    set_u16(p, 20, at + tuple.len());
    at
}

/// Appends a tuple in a new slot (or reuses a deleted one); `None` if it does not fit.
pub fn insert(mut p: impl PageWrite, body_end: usize, tuple: &[u8]) -> Option<usize> {
    let bytes = p.bytes();
    let n = slot_count(bytes);
    let reuse = (0..n).find(|&i| u16_at(bytes, slot_at(body_end, i)) == 0);
    if tuple.is_empty() || !make_room(&mut p, body_end, tuple.len(), reuse.is_none()) {
        return None;
    }
    let i = reuse.unwrap_or(n);
    if reuse.is_none() {
        set_u16(&mut p, 18, n + 1);
        set_u16(&mut p, 22, slot_at(body_end, n));
    }
    let at = place(&mut p, tuple);
    set_slot(&mut p, body_end, i, at, tuple.len());
    Some(i)
}

fn set_slot(p: &mut impl PageWrite, body_end: usize, i: usize, offset: usize, len: usize) {
    let s = slot_at(body_end, i);
    let slot = p.write(s..s + SLOT_BYTES);
    set_u16(slot, 0, offset);
    set_u16(slot, 2, len);
}

/// Inserts a tuple as slot `i`, shifting later slots up by one (B+-tree order).
pub fn insert_at(mut p: impl PageWrite, body_end: usize, i: usize, tuple: &[u8]) -> bool {
    let n = slot_count(p.bytes());
    assert!(i <= n, "slot {i} beyond {n}");
    if tuple.is_empty() || !make_room(&mut p, body_end, tuple.len(), true) {
        return false;
    }
    // Slots [i, n) move one place down in memory (to higher slot numbers).
    let lo = slot_at(body_end, n);
    let hi = slot_at(body_end, i) + SLOT_BYTES;
    p.write(lo..hi).copy_within(SLOT_BYTES.., 0);
    set_u16(&mut p, 18, n + 1);
    set_u16(&mut p, 22, slot_at(body_end, n));
    let at = place(&mut p, tuple);
    set_slot(&mut p, body_end, i, at, tuple.len());
    true
}

/// Removes slot `i`, shifting later slots down (B+-tree order).
pub fn remove_at(mut p: impl PageWrite, body_end: usize, i: usize) {
    let n = slot_count(p.bytes());
    assert!(i < n, "slot {i} beyond {n}");
    let s = slot_at(body_end, i);
    let lo = slot_at(body_end, n - 1);
    let moved = p.write(lo..s + SLOT_BYTES);
    moved.copy_within(..s - lo, SLOT_BYTES);
    moved[..SLOT_BYTES].fill(0);
    set_u16(&mut p, 18, n - 1);
    set_u16(&mut p, 22, lo + SLOT_BYTES);
}

/// Marks slot `i` deleted (heap: the slot number stays reserved). The tuple's bytes
/// are left as they are: only the slot changes, which keeps a delete small for IPA.
pub fn delete(mut p: impl PageWrite, body_end: usize, i: usize) {
    let s = slot_at(body_end, i);
    p.write(s..s + SLOT_BYTES).fill(0);
}

/// Writes `tuple`, shorter than the tuple in slot `i`, over that tuple's first bytes and
/// shortens the slot; the tail it no longer uses is free space a compaction wins back.
/// `false` if the slot is empty or its tuple is not longer.
pub fn overwrite_shorter(p: &mut (impl PageWrite + ?Sized), body_end: usize, i: usize, tuple: &[u8]) -> bool {
    let s = slot_at(body_end, i);
    let (off, len) = (u16_at(p.bytes(), s), u16_at(p.bytes(), s + 2));
    if off == 0 || tuple.is_empty() || tuple.len() >= len {
        return false;
    }
    p.write(off..off + tuple.len()).copy_from_slice(tuple);
    set_u16(p, s + 2, tuple.len());
    true
}

/// Replaces the tuple in slot `i`: in place when the length is unchanged, else
/// elsewhere on the page. `false` if it does not fit.
pub fn replace(mut p: impl PageWrite, body_end: usize, i: usize, tuple: &[u8]) -> bool {
    let s = slot_at(body_end, i);
    let (off, len) = (u16_at(p.bytes(), s), u16_at(p.bytes(), s + 2));
    if len == tuple.len() {
        p.write(off..off + len).copy_from_slice(tuple);
        return true;
    }
    // Free the old copy first so a compaction can reuse its bytes.
    let old = p.bytes()[off..off + len].to_vec();
    p.write(s..s + SLOT_BYTES).fill(0);
    if !make_room(&mut p, body_end, tuple.len(), false) {
        // Put the old tuple back where a compaction may have left room for it.
        assert!(make_room(&mut p, body_end, old.len(), false), "room for the tuple just removed");
        let at = place(&mut p, &old);
        set_slot(&mut p, body_end, i, at, old.len());
        return false;
    }
    let at = place(&mut p, tuple);
    set_slot(&mut p, body_end, i, at, tuple.len());
    true
}

/// Validates the structure of a page read from flash: the header fits, slots point
/// inside the tuple area and do not overlap. Every other function may assume this.
pub fn check(p: &[u8], body_end: usize) -> Result<()> {
    let corrupt = |m: String| Err(Error::Corrupt(format!("page {}: {m}", if p.len() >= 12 { page_no(p) } else { 0 })));
    if p.len() < HEADER_BYTES || body_end > p.len() || body_end < HEADER_BYTES + SLOT_BYTES {
        return corrupt(format!("{} bytes cannot hold a page with a {body_end}-byte body", p.len()));
    }
    if !matches!(kind(p), 1..=3) {
        return corrupt(format!("unknown page kind {}", kind(p)));
    }
    let (n, start, end) = (slot_count(p), free_start(p), free_end(p));
    if start < HEADER_BYTES || start > end || end > body_end || end + SLOT_BYTES * n != body_end {
        return corrupt(format!("free space [{start}, {end}) and {n} slots do not fit the {body_end}-byte body"));
    }
    let mut spans: Vec<(usize, usize)> = Vec::with_capacity(n);
    for i in 0..n {
        let s = slot_at(body_end, i);
        let (off, len) = (u16_at(p, s), u16_at(p, s + 2));
        if off == 0 {
            continue;
        }
        if off < HEADER_BYTES || len == 0 || off + len > start {
            return corrupt(format!("slot {i} points at [{off}, {}) outside the tuple area", off + len));
        }
        spans.push((off, off + len));
    }
    spans.sort_unstable();
    if spans.windows(2).any(|w| w[0].1 > w[1].0) {
        return corrupt("two tuples overlap".into());
    }
    Ok(())
}
