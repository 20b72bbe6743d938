//! Logging page changes: the buffer pool's half of the write-ahead log.
//!
//! An operation (a heap insert, a B+-tree insert with its splits, the undo of one
//! update) changes pages through `BufferPool::page_mut`, which pins each page at its
//! first change and keeps the bytes of every range written before the write (page
//! mutations name the ranges they write, [`page::PageWrite`]). `end_op` then rebuilds
//! each changed page as it was, over those ranges only, stamps it with the LSN its
//! record will get, and logs the difference as byte ranges with before and after images
//! (or, for an undo, a compensation record with the after images). Only then may the
//! pages be written: they were pinned until here, and writing one forces the log up to
//! its LSN first. A new page is logged as a redo-only format record.
//!
//! Invariant: the ranges written cover every byte the operation changed, so the diff
//! over them (ranges fewer than 8 bytes apart merged first) gives exactly the spans a
//! diff of the whole page would, and the log bytes do not depend on the tracking. Bytes
//! written with their old value are found equal and not logged.
//!
//! Changes are logged over the whole page, delta area included: a page that adopts a
//! new IPA layout (`ALTER … SET IPA`) moves its slot directory and erases its new delta
//! area, and undo and redo must restore that too.
//!
//! Torn-page protection (full-page images, as PostgreSQL's `full_page_writes`): where
//! a DB page spans flash pages that the device does not write atomically, the first
//! change to a page after a checkpoint (its LSN is below the checkpoint's) logs the
//! whole page as it was (an image record), then the change. Restart installs the image
//! without reading the flash copy, which a cut may have left half new, and redoes the
//! changes after it; `docs/format.md` argues why every page a cut can tear has an image
//! in the redo range.
//!
//! The journal decides what is logged: without a log ([`crate::journal::NoJournal`])
//! the same path stamps page LSNs from a counter, logs nothing, and keeps the before
//! images for an abort all the same.

use crate::buffer::{never_written, BufferPool, FrameId};
use crate::error::{Error, Result};
use crate::journal::{Journal, Room};
use crate::logrec::{self, Change, ChangeKind, Range};
use crate::page;
use crate::store::PageId;

/// What an undo needs of a transaction's logged updates: per update its page, the
/// LSN before it and the before images of its ranges. The images of all updates share
/// two buffers, so logging an update allocates nothing once they have grown.
#[derive(Debug, Default)]
pub struct UndoLog {
    entries: Vec<UndoEntry>,
    spans: Vec<(u16, u16)>,
    images: Vec<u8>,
}

#[derive(Debug)]
struct UndoEntry {
    prev: u64,
    page: PageId,
    /// Where the entry's spans and before images start in the shared buffers.
    spans_from: usize,
    images_from: usize,
}

/// One update to undo: its page, the LSN before it, and its before images.
pub struct Undo<'a> {
    pub prev: u64,
    pub page: PageId,
    spans: &'a [(u16, u16)],
    images: &'a [u8],
}

impl Undo<'_> {
    /// (offset, before image) of each changed range.
    pub fn ranges(&self) -> impl Iterator<Item = (usize, &[u8])> {
        let mut at = 0;
        self.spans.iter().map(move |&(offset, len)| {
            at += len as usize;
            (offset as usize, &self.images[at - len as usize..at])
        })
    }
}

impl UndoLog {
    fn push(&mut self, prev: u64, page: PageId, before: &[u8], spans: &[(u16, u16)]) {
        self.entries.push(UndoEntry { prev, page, spans_from: self.spans.len(), images_from: self.images.len() });
        self.spans.extend_from_slice(spans);
        for &(offset, len) in spans {
            self.images.extend_from_slice(&before[offset as usize..offset as usize + len as usize]);
        }
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Pages the updates changed, each counted once.
    pub fn distinct_pages(&self) -> usize {
        let pages: std::collections::HashSet<PageId> = self.entries.iter().map(|e| e.page).collect();
        pages.len()
    }

    /// Updates logged so far.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn clear(&mut self) {
        self.entries.clear();
        self.spans.clear();
        self.images.clear();
    }

    /// The updates, newest first.
    pub fn newest_first(&self) -> impl Iterator<Item = Undo<'_>> {
        (0..self.entries.len()).rev().map(move |i| {
            let e = &self.entries[i];
            let (spans_to, images_to) = match self.entries.get(i + 1) {
                Some(next) => (next.spans_from, next.images_from),
                None => (self.spans.len(), self.images.len()),
            };
            Undo {
                prev: e.prev,
                page: e.page,
                spans: &self.spans[e.spans_from..spans_to],
                images: &self.images[e.images_from..images_to],
            }
        })
    }
}

/// How `end_op` logs the changes.
#[derive(Clone, Copy, Debug)]
pub enum OpKind {
    Update,
    /// The changes undo an update; undo continues at `undo_next`.
    Compensation {
        undo_next: u64,
    },
}

impl BufferPool {
    /// Logs the change of frame `f`'s page from `self.before`, over the spans in
    /// `self.spans`; returns its LSN.
    fn log_change(
        &mut self,
        journal: &mut dyn Journal,
        f: FrameId,
        kind: ChangeKind,
        tx: u64,
        prev: u64,
        room: Room,
    ) -> Result<u64> {
        let pid = self.frames[f].page.expect("a changed frame holds a page");
        let change =
            Change { kind, page: pid, before: &self.before, after: &self.data[self.span(f)], spans: &self.spans };
        journal.append(room, &mut |out| change.encode(tx, prev, out))
    }

    /// Makes the log durable up to `lsn`; returns when that is done.
    pub fn force_log(&mut self, journal: &mut dyn Journal, lsn: u64) -> Result<nand::SimTime> {
        let now = self.now();
        journal.force(lsn, self.store.device_mut(), now)
    }

    /// Writes log pages ahead of the next force if more than `buffer_bytes` wait for it.
    pub fn write_log_ahead(&mut self, journal: &mut dyn Journal, buffer_bytes: u64) -> Result<()> {
        let now = self.now();
        journal.write_ahead(buffer_bytes, self.store.device_mut(), now)
    }

    /// Logs the freshly formatted page in frame `f` (changed in this operation from all
    /// zeros) as a redo-only format record; later changes in the operation are logged
    /// against the formatted page.
    pub fn log_format(&mut self, journal: &mut dyn Journal, f: FrameId, tx: u64, prev: u64) -> Result<u64> {
        let pid = self.frames[f].page.expect("a formatted frame holds a page");
        let lsn = journal.take_page_lsn();
        let span = self.span(f);
        page::set_lsn(&mut self.data[span.clone()], lsn);
        if !self.op.contains(&f) {
            return Err(Error::Corrupt(format!("page {} formatted outside an operation", pid.page)));
        }
        if journal.logs_changes() {
            self.before.clear();
            self.before.resize(span.len(), 0);
            logrec::diff_spans(&self.before, &self.data[span], &mut self.spans);
            let logged = self.log_change(journal, f, ChangeKind::Format, tx, prev, Room::Ordinary);
            debug_assert_eq!(logged.as_ref().ok(), Some(&lsn));
            logged?;
            self.note_logged(f, lsn);
        }
        // Later changes in the operation are logged against the formatted page.
        self.note_all_changed(f);
        self.forget_writes(f);
        self.keep_before(f, 0..8);
        Ok(lsn)
    }

    /// Drops what the operation kept of frame `f`'s writes.
    pub(crate) fn forget_writes(&mut self, f: FrameId) {
        let (mut from, mut kept) = (0, 0);
        let mut i = 0;
        while i < self.op_writes.len() {
            let w = self.op_writes[i];
            let len = w.len as usize;
            if w.frame == f {
                self.op_writes.remove(i);
            } else {
                self.op_images.copy_within(from..from + len, kept);
                kept += len;
                i += 1;
            }
            from += len;
        }
        self.op_images.truncate(kept);
    }

    fn note_logged(&mut self, f: FrameId, lsn: u64) {
        if self.frames[f].rec_lsn == 0 {
            self.frames[f].rec_lsn = lsn;
        }
    }

    /// Ends the operation: logs each changed page (chained from `prev`), unpins them,
    /// and returns the last LSN. An update's before images go to `undo` when given.
    pub fn end_op(
        &mut self,
        journal: &mut dyn Journal,
        tx: u64,
        mut prev: u64,
        kind: OpKind,
        mut undo: Option<&mut UndoLog>,
    ) -> Result<u64> {
        let touched = std::mem::take(&mut self.op);
        let mut result = Ok(());
        for &f in &touched {
            // The IPA diff must see the writes even if logging failed.
            self.rebuild_before(f);
            self.note_op_ranges(f);
            if result.is_ok() {
                result = self.log_page(journal, f, tx, &mut prev, kind, undo.as_deref_mut());
            }
            if result.is_err() {
                // Not logged, so neither undo nor restart could take it back: the page
                // returns to how it was before the operation (`log_page` put back the
                // LSN it stamped).
                self.restore_before(f);
            }
            self.frames[f].in_op = false;
            self.unpin(f);
        }
        self.op = touched;
        self.op.clear();
        self.op_writes.clear();
        self.op_images.clear();
        result.map(|()| prev)
    }

    /// Rebuilds frame `f`'s page as it was before the operation in `self.before`, over
    /// the ranges the operation wrote (merged when fewer than 8 bytes apart, so no
    /// logged span reaches outside them) in `self.op_ranges`.
    fn rebuild_before(&mut self, f: FrameId) {
        let page = self.span(f);
        self.before.resize(page.len(), 0);
        let ranges = &mut self.op_ranges;
        ranges.clear();
        ranges.extend(self.op_writes.iter().filter(|w| w.frame == f).map(|w| {
            let at = w.offset as usize;
            (at, at + w.len as usize)
        }));
        ranges.sort_unstable();
        let mut merged = 0;
        for i in 0..ranges.len() {
            let (from, to) = ranges[i];
            if merged > 0 && from < ranges[merged - 1].1 + logrec::MERGE_GAP {
                ranges[merged - 1].1 = ranges[merged - 1].1.max(to);
            } else {
                ranges[merged] = (from, to);
                merged += 1;
            }
        }
        ranges.truncate(merged);
        let data = &self.data[page];
        for &(from, to) in ranges.iter() {
            self.before[from..to].copy_from_slice(&data[from..to]);
        }
        // Newest first, so each byte ends with its image from before the first write.
        let mut end = self.op_images.len();
        for w in self.op_writes.iter().rev() {
            let len = w.len as usize;
            if w.frame == f {
                let at = w.offset as usize;
                self.before[at..at + len].copy_from_slice(&self.op_images[end - len..end]);
            }
            end -= len;
        }
    }

    /// Puts back frame `f`'s bytes from `self.before` over `self.op_ranges` (which
    /// [`Self::rebuild_before`] filled for it); a refused `log_page` put back its LSN.
    fn restore_before(&mut self, f: FrameId) {
        let span = self.span(f);
        let page = &mut self.data[span];
        for &(from, to) in &self.op_ranges {
            page[from..to].copy_from_slice(&self.before[from..to]);
        }
    }

    /// Logs frame `f`'s change against `self.before` over `self.op_ranges`, if any.
    fn log_page(
        &mut self,
        journal: &mut dyn Journal,
        f: FrameId,
        tx: u64,
        prev: &mut u64,
        kind: OpKind,
        undo: Option<&mut UndoLog>,
    ) -> Result<()> {
        let pid = self.frames[f].page.expect("a changed frame holds a page");
        let span = self.span(f);
        let after = &self.data[span.clone()];
        let changed = self
            .op_ranges
            .iter()
            .any(|&(from, to)| crate::delta::first_difference(&self.before[from..to], &after[from..to], 0).is_some());
        if !changed {
            return Ok(());
        }
        if journal.logs_changes() && self.image_epoch.is_some_and(|epoch| page::lsn(&self.before) < epoch) {
            // A rollback's images use the log's room set aside for rollbacks.
            let room = if let OpKind::Compensation { .. } = kind { Room::Rollback } else { Room::Ordinary };
            self.log_image(journal, f, room)?;
        }
        let lsn = journal.take_page_lsn();
        let old_lsn = page::lsn(&self.data[span.clone()]);
        page::set_lsn(&mut self.data[span.clone()], lsn);
        logrec::diff_spans_in(&self.before, &self.data[span.clone()], &self.op_ranges, &mut self.spans);
        if journal.logs_changes() {
            let (change_kind, room) = match (kind, &undo) {
                (OpKind::Update, Some(_)) => {
                    let before_bytes = self.spans.iter().map(|&(_, len)| u64::from(len)).sum();
                    (ChangeKind::Update, Room::Update { tx, before_bytes })
                }
                (OpKind::Update, None) => (ChangeKind::Update, Room::Ordinary),
                (OpKind::Compensation { undo_next }, _) => (ChangeKind::Clr { undo_next }, Room::Rollback),
            };
            match self.log_change(journal, f, change_kind, tx, *prev, room) {
                Ok(got) => debug_assert_eq!(got, lsn),
                Err(e) => {
                    page::set_lsn(&mut self.data[span], old_lsn);
                    return Err(e);
                }
            }
        }
        self.store.note_change(pid, &self.spans, &self.data[span]);
        // Only a change that was logged gets an undo entry: one the log refused is
        // taken back by `end_op`.
        if let (OpKind::Update, Some(undo)) = (kind, undo) {
            undo.push(*prev, pid, &self.before, &self.spans);
        }
        if journal.logs_changes() {
            *prev = lsn;
            self.note_logged(f, lsn);
        }
        Ok(())
    }

    /// Logs frame `f`'s page as it was before the operation (its bytes, with
    /// `self.before` over `self.op_ranges`) as an image record.
    fn log_image(&mut self, journal: &mut dyn Journal, f: FrameId, room: Room) -> Result<()> {
        let pid = self.frames[f].page.expect("a changed frame holds a page");
        let span = self.span(f);
        self.image.clear();
        self.image.extend_from_slice(&self.data[span]);
        for &(from, to) in &self.op_ranges {
            self.image[from..to].copy_from_slice(&self.before[from..to]);
        }
        let image = &self.image;
        journal.append(room, &mut |out| logrec::encode_image(pid, image, out))?;
        self.stats.page_images += 1;
        Ok(())
    }

    /// Redo of a page's whole image (restart): the page becomes what `fill` writes over
    /// a zeroed frame, whatever its flash copy holds (not read: it may be torn). The
    /// caller has checked that the record fits the page.
    pub fn redo_image(
        &mut self,
        journal: &mut dyn Journal,
        pid: PageId,
        lsn: u64,
        fill: impl FnOnce(&mut [u8]),
    ) -> Result<()> {
        let f = self.take_for_image(pid, journal)?;
        let span = self.span(f);
        let page = &mut self.data[span];
        page.fill(0);
        fill(page);
        self.note_logged(f, lsn);
        self.unpin(f);
        Ok(())
    }

    /// Redo of one logged change (restart): applies the after images unless the page
    /// already has them (its LSN is at least `lsn`). A format starts from a zero page,
    /// creating the page if flash never had it.
    pub fn redo(
        &mut self,
        journal: &mut dyn Journal,
        pid: PageId,
        lsn: u64,
        ranges: &[Range],
        format: bool,
    ) -> Result<()> {
        let f = match (format, self.fetch_if_written(pid, journal)?) {
            (_, Some(f)) => f,
            (true, None) => self.create(pid, journal)?,
            (false, None) => return Err(never_written(pid)),
        };
        let span = self.span(f);
        // The page already has the change (a format also needs the page formatted).
        let p = &self.data[span.clone()];
        if page::lsn(p) >= lsn && (!format || page::kind(p) != 0) {
            self.unpin(f);
            return Ok(());
        }
        self.mark_dirty_for_redo(f);
        let p = &mut self.data[span];
        if format {
            p.fill(0);
        }
        for r in ranges {
            let at = r.offset as usize;
            let end = at + r.after.len();
            if end > p.len() {
                self.unpin(f);
                return Err(Error::Corrupt(format!("log record for page {} writes beyond its end", pid.page)));
            }
            p[at..end].copy_from_slice(&r.after);
        }
        page::set_lsn(p, lsn);
        self.note_logged(f, lsn);
        self.unpin(f);
        Ok(())
    }
}
