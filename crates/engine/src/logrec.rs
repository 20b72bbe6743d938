//! Write-ahead log records: physiological byte-range before/after images per page,
//! redo-only page formats and allocations, transaction ends, checkpoints, and full-page
//! images (torn-page protection where a DB page spans flash pages that the device does
//! not write atomically).
//!
//! ```text
//! offset size field
//!  0      4   record length in bytes, header included (u32 LE)
//!  4      4   crc32 of bytes [8, length)
//!  8      1   kind: 1 update, 2 CLR, 3 format, 4 alloc, 5 free, 6 commit, 7 end, 8 checkpoint,
//!             9 page image
//!  9      8   transaction id (0 for none)
//! 17      8   LSN of the transaction's previous record (0 for none)
//! 25      …   payload
//!
//! update    region u16, page u32, n u16, n × (offset u16, len u16, before[len], after[len])
//! CLR       region u16, page u32, undo_next u64, n u16, n × (offset u16, len u16, after[len])
//! format    region u16, page u32, n u16, n × (offset u16, len u16, bytes[len])   (over a zero page)
//! alloc     object u32, page u32, how u8 (0 next in extent, 1 new extent, 2 from the free list)
//! free      object u32, page u32
//! commit, end: no payload
//! checkpoint n u32, n × (tx u64, last LSN u64, first LSN u64), m u32, m × (region u16, page u32, recLSN u64)
//! image     region u16, page u32, len u16, bytes[len]   (the whole page; transaction 0)
//! ```
//!
//! An LSN is the byte offset of a record in the log stream.

use crate::error::{Error, Result};
use crate::store::PageId;

pub const HEADER_BYTES: usize = 25;

/// A changed byte range of a page.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Range {
    pub offset: u16,
    pub before: Vec<u8>,
    pub after: Vec<u8>,
}

/// How a page was allocated to its object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AllocHow {
    NextInExtent,
    NewExtent,
    FromFreeList,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Body {
    Update {
        page: PageId,
        ranges: Vec<Range>,
    },
    /// Compensation: the undo of an update; `undo_next` is where undo continues.
    Clr {
        page: PageId,
        undo_next: u64,
        ranges: Vec<Range>,
    },
    /// A freshly formatted page (redo-only); ranges over an all-zero page.
    Format {
        page: PageId,
        ranges: Vec<Range>,
    },
    Alloc {
        object: u32,
        page: u32,
        how: AllocHow,
    },
    Free {
        object: u32,
        page: u32,
    },
    Commit,
    End,
    Checkpoint {
        active: Vec<(u64, u64, u64)>,
        dirty: Vec<(PageId, u64)>,
    },
    /// The whole page as it was before the change logged next (redo-only, no
    /// transaction): restart installs it in place of the flash copy, which may be torn.
    Image {
        page: PageId,
        bytes: Vec<u8>,
    },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    pub tx: u64,
    pub prev: u64,
    pub body: Body,
}

fn put_page(out: &mut Vec<u8>, p: PageId) {
    out.extend_from_slice(&p.region.to_le_bytes());
    out.extend_from_slice(&p.page.to_le_bytes());
}

/// Writes `n` ranges given as (offset, before image, after image); the before images
/// only `with_before` (they may be empty otherwise).
fn put_ranges<'a>(
    out: &mut Vec<u8>,
    n: usize,
    ranges: impl Iterator<Item = (u16, &'a [u8], &'a [u8])>,
    with_before: bool,
) {
    out.extend_from_slice(&(n as u16).to_le_bytes());
    for (offset, before, after) in ranges {
        out.extend_from_slice(&offset.to_le_bytes());
        out.extend_from_slice(&(after.len() as u16).to_le_bytes());
        if with_before {
            out.extend_from_slice(before);
        }
        out.extend_from_slice(after);
    }
}

fn put_owned_ranges(out: &mut Vec<u8>, ranges: &[Range], with_before: bool) {
    let iter = ranges.iter().map(|r| (r.offset, &r.before[..], &r.after[..]));
    put_ranges(out, ranges.len(), iter, with_before);
}

/// Frames a record: header (length and CRC filled in last), then the payload.
fn framed(out: &mut Vec<u8>, kind: u8, tx: u64, prev: u64, payload: impl FnOnce(&mut Vec<u8>)) {
    let start = out.len();
    out.extend_from_slice(&[0; 8]);
    out.push(kind);
    out.extend_from_slice(&tx.to_le_bytes());
    out.extend_from_slice(&prev.to_le_bytes());
    payload(out);
    let len = (out.len() - start) as u32;
    out[start..start + 4].copy_from_slice(&len.to_le_bytes());
    let crc = crc32fast::hash(&out[start + 8..]);
    out[start + 4..start + 8].copy_from_slice(&crc.to_le_bytes());
}

const IMAGE_KIND: u8 = 9;

/// Bytes of an image record of a page of `page_bytes` bytes.
pub fn image_record_bytes(page_bytes: usize) -> usize {
    HEADER_BYTES + 8 + page_bytes
}

fn put_image(out: &mut Vec<u8>, page: PageId, bytes: &[u8]) {
    put_page(out, page);
    out.extend_from_slice(&(bytes.len() as u16).to_le_bytes());
    out.extend_from_slice(bytes);
}

/// Encodes the image record of `page` holding `bytes` (the whole page), as
/// [`Record::encode`] of a [`Body::Image`] would, without copying the page first.
pub fn encode_image(page: PageId, bytes: &[u8], out: &mut Vec<u8>) {
    framed(out, IMAGE_KIND, 0, 0, |out| put_image(out, page, bytes));
}

/// What kind of page-change record [`Change::encode`] writes.
#[derive(Clone, Copy, Debug)]
pub enum ChangeKind {
    Update,
    Clr { undo_next: u64 },
    Format,
}

/// A page change as spans over the page's images, encoded without copying the ranges
/// out first (the logging hot path). It encodes exactly as the [`Record`] with the same
/// ranges would.
pub struct Change<'a> {
    pub kind: ChangeKind,
    pub page: PageId,
    pub before: &'a [u8],
    pub after: &'a [u8],
    /// (offset, length) of each changed range.
    pub spans: &'a [(u16, u16)],
}

impl Change<'_> {
    pub fn encode(&self, tx: u64, prev: u64, out: &mut Vec<u8>) {
        let kind = match self.kind {
            ChangeKind::Update => 1,
            ChangeKind::Clr { .. } => 2,
            ChangeKind::Format => 3,
        };
        framed(out, kind, tx, prev, |out| {
            put_page(out, self.page);
            if let ChangeKind::Clr { undo_next } = self.kind {
                out.extend_from_slice(&undo_next.to_le_bytes());
            }
            let ranges = self.spans.iter().map(|&(at, len)| {
                let span = at as usize..at as usize + len as usize;
                (at, &self.before[span.clone()], &self.after[span])
            });
            let with_before = matches!(self.kind, ChangeKind::Update);
            put_ranges(out, self.spans.len(), ranges, with_before);
        });
    }
}

impl Record {
    /// Appends the encoded record to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        let kind = match &self.body {
            Body::Update { .. } => 1,
            Body::Clr { .. } => 2,
            Body::Format { .. } => 3,
            Body::Alloc { .. } => 4,
            Body::Free { .. } => 5,
            Body::Commit => 6,
            Body::End => 7,
            Body::Checkpoint { .. } => 8,
            Body::Image { .. } => IMAGE_KIND,
        };
        framed(out, kind, self.tx, self.prev, |out| self.encode_payload(out));
    }

    fn encode_payload(&self, out: &mut Vec<u8>) {
        match &self.body {
            Body::Update { page, ranges } => {
                put_page(out, *page);
                put_owned_ranges(out, ranges, true);
            }
            Body::Clr { page, undo_next, ranges } => {
                put_page(out, *page);
                out.extend_from_slice(&undo_next.to_le_bytes());
                put_owned_ranges(out, ranges, false);
            }
            Body::Format { page, ranges } => {
                put_page(out, *page);
                put_owned_ranges(out, ranges, false);
            }
            Body::Alloc { object, page, how } => {
                out.extend_from_slice(&object.to_le_bytes());
                out.extend_from_slice(&page.to_le_bytes());
                out.push(*how as u8);
            }
            Body::Free { object, page } => {
                out.extend_from_slice(&object.to_le_bytes());
                out.extend_from_slice(&page.to_le_bytes());
            }
            Body::Commit | Body::End => {}
            Body::Checkpoint { active, dirty } => {
                out.extend_from_slice(&(active.len() as u32).to_le_bytes());
                for (tx, last, first) in active {
                    for v in [tx, last, first] {
                        out.extend_from_slice(&v.to_le_bytes());
                    }
                }
                out.extend_from_slice(&(dirty.len() as u32).to_le_bytes());
                for (p, rec) in dirty {
                    put_page(out, *p);
                    out.extend_from_slice(&rec.to_le_bytes());
                }
            }
            Body::Image { page, bytes } => put_image(out, *page, bytes),
        }
    }

    /// Decodes the record at the start of `bytes`; returns it and its length. `None`
    /// when the bytes end before the record does or its checksum fails (a torn tail).
    pub fn decode(bytes: &[u8]) -> Result<Option<(Record, usize)>> {
        if bytes.len() < HEADER_BYTES {
            return Ok(None);
        }
        let len = crate::page::le_u32(&bytes[0..4]) as usize;
        if len < HEADER_BYTES || len > bytes.len() {
            return Ok(None);
        }
        let crc = crate::page::le_u32(&bytes[4..8]);
        if crc32fast::hash(&bytes[8..len]) != crc {
            return Ok(None);
        }
        let mut r = Reader { b: &bytes[HEADER_BYTES..len] };
        let kind = bytes[8];
        let tx = crate::page::le_u64(&bytes[9..17]);
        let prev = crate::page::le_u64(&bytes[17..25]);
        let body = match kind {
            1 => Body::Update { page: r.page()?, ranges: r.ranges(true)? },
            2 => {
                let page = r.page()?;
                let undo_next = r.u64()?;
                Body::Clr { page, undo_next, ranges: r.ranges(false)? }
            }
            3 => Body::Format { page: r.page()?, ranges: r.ranges(false)? },
            4 => {
                let (object, page) = (r.u32()?, r.u32()?);
                let how = match r.take(1)?[0] {
                    0 => AllocHow::NextInExtent,
                    1 => AllocHow::NewExtent,
                    2 => AllocHow::FromFreeList,
                    h => return Err(corrupt(format!("alloc record with mode {h}"))),
                };
                Body::Alloc { object, page, how }
            }
            5 => Body::Free { object: r.u32()?, page: r.u32()? },
            6 => Body::Commit,
            7 => Body::End,
            8 => {
                let n = r.u32()? as usize;
                let mut active = Vec::with_capacity(n.min(1 << 16));
                for _ in 0..n {
                    active.push((r.u64()?, r.u64()?, r.u64()?));
                }
                let m = r.u32()? as usize;
                let mut dirty = Vec::with_capacity(m.min(1 << 16));
                for _ in 0..m {
                    dirty.push((r.page()?, r.u64()?));
                }
                Body::Checkpoint { active, dirty }
            }
            IMAGE_KIND => {
                let page = r.page()?;
                let len = crate::page::le_u32(r.take(2)?) as usize;
                Body::Image { page, bytes: r.take(len)?.to_vec() }
            }
            k => return Err(corrupt(format!("unknown record kind {k}"))),
        };
        if !r.b.is_empty() {
            return Err(corrupt(format!("{} bytes after a kind-{kind} record's payload", r.b.len())));
        }
        Ok(Some((Record { tx, prev, body }, len)))
    }
}

fn corrupt(m: String) -> Error {
    Error::Corrupt(format!("log record: {m}"))
}

struct Reader<'a> {
    b: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        if self.b.len() < n {
            return Err(corrupt(format!("payload ends {} bytes early", n - self.b.len())));
        }
        let (head, rest) = self.b.split_at(n);
        self.b = rest;
        Ok(head)
    }
    fn u32(&mut self) -> Result<u32> {
        Ok(crate::page::le_u32(self.take(4)?))
    }
    fn u64(&mut self) -> Result<u64> {
        Ok(crate::page::le_u64(self.take(8)?))
    }
    fn page(&mut self) -> Result<PageId> {
        let region = crate::page::le_u32(self.take(2)?) as u16;
        Ok(PageId { region, page: self.u32()? })
    }
    /// Ranges with their after images, and their before images `with_before`.
    fn ranges(&mut self, with_before: bool) -> Result<Vec<Range>> {
        let n = crate::page::le_u32(self.take(2)?) as u16 as usize;
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            let offset = crate::page::le_u32(self.take(2)?) as u16;
            let len = crate::page::le_u32(self.take(2)?) as u16 as usize;
            let before = if with_before { self.take(len)?.to_vec() } else { Vec::new() };
            out.push(Range { offset, before, after: self.take(len)?.to_vec() });
        }
        Ok(out)
    }
}

/// Changed bytes fewer than this many bytes apart are logged as one range.
pub const MERGE_GAP: usize = 8;

/// Changed ranges between two page images as (offset, length) into `out` (cleared
/// first); ranges closer than [`MERGE_GAP`] bytes merge.
pub fn diff_spans(before: &[u8], after: &[u8], out: &mut Vec<(u16, u16)>) {
    out.clear();
    push_spans(before, after, 0, out);
}

/// [`diff_spans`] over the byte ranges `[from, to)` in `ranges`, which hold every
/// difference, are sorted and lie at least [`MERGE_GAP`] bytes apart: the same spans,
/// found without reading the rest of the page (whose bytes in `before` may be stale).
pub fn diff_spans_in(before: &[u8], after: &[u8], ranges: &[(usize, usize)], out: &mut Vec<(u16, u16)>) {
    out.clear();
    for &(from, to) in ranges {
        push_spans(&before[from..to], &after[from..to], from, out);
    }
}

/// Appends the spans of `before` against `after`, offset by `base`.
fn push_spans(before: &[u8], after: &[u8], base: usize, out: &mut Vec<(u16, u16)>) {
    let n = before.len().min(after.len());
    let mut i = 0;
    while let Some(start) = crate::delta::first_difference(before, after, i) {
        // The range ends before the first 8 (MERGE_GAP) equal bytes or the end. A word
        // compare finds the last differing byte of the next 8 at once.
        let mut end = start + 1;
        while end + 8 <= n {
            let x = crate::delta::xor_word(before, after, end);
            if x == 0 {
                break;
            }
            end += 8 - x.leading_zeros() as usize / 8;
        }
        if end + 8 > n {
            if let Some(last) = (end..n).rev().find(|&j| before[j] != after[j]) {
                end = last + 1;
            }
        }
        out.push(((base + start) as u16, (end - start) as u16));
        i = end;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn samples() -> Vec<Record> {
        let page = PageId { region: 2, page: 77 };
        let r = Range { offset: 9, before: vec![1, 2], after: vec![3, 4] };
        let a = Range { before: Vec::new(), ..r.clone() };
        vec![
            Record { tx: 5, prev: 100, body: Body::Update { page, ranges: vec![r] } },
            Record { tx: 5, prev: 120, body: Body::Clr { page, undo_next: 100, ranges: vec![a.clone()] } },
            Record { tx: 5, prev: 0, body: Body::Format { page, ranges: vec![a] } },
            Record { tx: 5, prev: 1, body: Body::Alloc { object: 3, page: 9, how: AllocHow::NewExtent } },
            Record { tx: 5, prev: 1, body: Body::Free { object: 3, page: 9 } },
            Record { tx: 5, prev: 1, body: Body::Commit },
            Record { tx: 5, prev: 1, body: Body::End },
            Record { tx: 0, prev: 0, body: Body::Checkpoint { active: vec![(5, 9, 3)], dirty: vec![(page, 44)] } },
            Record { tx: 0, prev: 0, body: Body::Image { page, bytes: (0..=255).collect() } },
        ]
    }

    #[test]
    fn records_round_trip_and_a_torn_one_reads_as_absent() {
        for r in samples() {
            let mut bytes = Vec::new();
            r.encode(&mut bytes);
            assert_eq!(Record::decode(&bytes).unwrap(), Some((r.clone(), bytes.len())));
            assert_eq!(Record::decode(&bytes[..bytes.len() - 1]).unwrap(), None);
            let mut flipped = bytes.clone();
            *flipped.last_mut().unwrap() ^= 1;
            assert_eq!(Record::decode(&flipped).unwrap(), None);
        }
    }

    #[test]
    fn an_image_encodes_as_its_record_and_has_the_size_it_is_counted_at() {
        let page = PageId { region: 3, page: 12 };
        let bytes: Vec<u8> = (0..4096u32).map(|i| i as u8).collect();
        let (mut fast, mut slow) = (Vec::new(), Vec::new());
        encode_image(page, &bytes, &mut fast);
        Record { tx: 0, prev: 0, body: Body::Image { page, bytes: bytes.clone() } }.encode(&mut slow);
        assert_eq!(fast, slow);
        assert_eq!(fast.len(), image_record_bytes(4096));
    }

    proptest! {
        #[test]
        fn diff_spans_rebuild_the_page_and_encode_like_records(before in proptest::collection::vec(any::<u8>(), 150), edits in proptest::collection::vec((0usize..150, any::<u8>()), 0..12), kind in 0u8..3) {
            let mut after = before.clone();
            for (i, v) in edits { after[i] = v; }
            let mut spans = Vec::new();
            diff_spans(&before, &after, &mut spans);
            let mut rebuilt = before.clone();
            let mut ranges = Vec::new();
            for &(at, len) in &spans {
                let span = at as usize..at as usize + len as usize;
                rebuilt[span.clone()].copy_from_slice(&after[span.clone()]);
                let b = if kind == 0 { before[span.clone()].to_vec() } else { Vec::new() };
                ranges.push(Range { offset: at, before: b, after: after[span].to_vec() });
            }
            prop_assert_eq!(&rebuilt, &after);
            // Each range starts and ends with a changed byte; ranges are 8 or more equal
            // bytes apart (closer ones merge).
            for &(at, len) in &spans {
                let (first, last) = (at as usize, at as usize + len as usize - 1);
                prop_assert!(before[first] != after[first] && before[last] != after[last]);
            }
            for w in spans.windows(2) {
                prop_assert!(w[1].0 as usize >= (w[0].0 + w[0].1) as usize + 8);
            }
            // The span encoding is byte-for-byte the record encoding.
            let page = PageId { region: 1, page: 3 };
            let (change_kind, body) = match kind {
                0 => (ChangeKind::Update, Body::Update { page, ranges }),
                1 => (ChangeKind::Clr { undo_next: 40 }, Body::Clr { page, undo_next: 40, ranges }),
                _ => (ChangeKind::Format, Body::Format { page, ranges }),
            };
            let (mut fast, mut slow) = (Vec::new(), Vec::new());
            Change { kind: change_kind, page, before: &before, after: &after, spans: &spans }.encode(7, 9, &mut fast);
            Record { tx: 7, prev: 9, body }.encode(&mut slow);
            prop_assert_eq!(fast, slow);
        }

        /// Over ranges that hold every change (widened at random, merged when closer
        /// than MERGE_GAP), the spans are those of the whole-page diff, even when
        /// `before` is garbage outside the ranges.
        #[test]
        fn diff_spans_in_covering_ranges_equals_the_whole_page_diff(before in proptest::collection::vec(any::<u8>(), 300), edits in proptest::collection::vec((0usize..300, any::<u8>(), 0usize..12, 0usize..12), 0..16), noise in any::<u8>()) {
            let mut after = before.clone();
            let mut ranges: Vec<(usize, usize)> = Vec::new();
            for &(i, v, left, right) in &edits {
                after[i] = v;
                ranges.push((i.saturating_sub(left), (i + 1 + right).min(300)));
            }
            ranges.sort_unstable();
            let mut merged: Vec<(usize, usize)> = Vec::new();
            for (from, to) in ranges {
                match merged.last_mut() {
                    Some(last) if from < last.1 + MERGE_GAP => last.1 = last.1.max(to),
                    _ => merged.push((from, to)),
                }
            }
            let mut stale = vec![noise; 300];
            for &(from, to) in &merged {
                stale[from..to].copy_from_slice(&before[from..to]);
            }
            let (mut whole, mut within) = (Vec::new(), Vec::new());
            diff_spans(&before, &after, &mut whole);
            diff_spans_in(&stale, &after, &merged, &mut within);
            prop_assert_eq!(within, whole);
        }

        /// Fuzz pass over the log record decoder: arbitrary bytes (and valid records
        /// with bytes changed, CRC fixed) decode, read as absent, or are refused.
        #[test]
        fn fuzz_log_record_decoder(bytes in proptest::collection::vec(any::<u8>(), 0..120), pick in 0usize..9, at in any::<usize>(), v in any::<u8>()) {
            let _ = Record::decode(&bytes);
            let mut enc = Vec::new();
            samples()[pick].encode(&mut enc);
            let i = 8 + at % (enc.len() - 8);
            enc[i] = v;
            let crc = crc32fast::hash(&enc[8..]);
            enc[4..8].copy_from_slice(&crc.to_le_bytes());
            let _ = Record::decode(&enc);
        }
    }
}
