//! Logging page changes: the buffer pool's half of the write-ahead log.
//!
//! An operation (a heap insert, a B+-tree insert with its splits, the undo of one
//! update) changes pages through `BufferPool::page_mut`, which keeps each page's bytes
//! before its first change and pins it. `end_op` then stamps every changed page with the
//! LSN its record will get, and logs the difference as byte ranges with before and
//! after images (or, for an undo, a compensation record with the after images). Only
//! then may the pages be written: they were pinned until here, and writing one forces
//! the log up to its LSN first. A new page is logged as a redo-only format record.
//!
//! Changes are logged over the whole page, delta area included: a page that adopts a
//! new IPA layout (`ALTER … SET IPA`) moves its slot directory and erases its new delta
//! area, and undo and redo must restore that too.
//!
//! The journal decides what is logged: without a log ([`crate::journal::NoJournal`])
//! the same path stamps page LSNs from a counter, logs nothing, and keeps the before
//! images for an abort all the same.

use crate::buffer::{never_written, BufferPool, FrameId};
use crate::error::{Error, Result};
use crate::journal::Journal;
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
    /// Logs the change of frame `f`'s page from `before`, over the spans in
    /// `self.spans`; returns its LSN.
    #[allow(clippy::too_many_arguments)]
    fn log_change(
        &mut self,
        journal: &mut dyn Journal,
        f: FrameId,
        kind: ChangeKind,
        before: &[u8],
        tx: u64,
        prev: u64,
    ) -> Result<u64> {
        let pid = self.frames[f].page.expect("a changed frame holds a page");
        let change = Change { kind, page: pid, before, after: &self.data[self.span(f)], spans: &self.spans };
        journal.append(&mut |out| change.encode(tx, prev, out))
    }

    /// Makes the log durable up to `lsn`; returns when that is done.
    pub fn force_log(&mut self, journal: &mut dyn Journal, lsn: u64) -> Result<nand::SimTime> {
        let now = self.now();
        journal.force(lsn, self.store.device_mut(), now)
    }

    /// Logs the freshly formatted page in frame `f` (changed in this operation from all
    /// zeros) as a redo-only format record; later changes in the operation are logged
    /// against the formatted page.
    pub fn log_format(&mut self, journal: &mut dyn Journal, f: FrameId, tx: u64, prev: u64) -> Result<u64> {
        let pid = self.frames[f].page.expect("a formatted frame holds a page");
        let lsn = journal.take_page_lsn();
        let span = self.span(f);
        page::set_lsn(&mut self.data[span.clone()], lsn);
        let Some(slot) = self.op.iter().position(|(g, _)| *g == f) else {
            return Err(Error::Corrupt(format!("page {} formatted outside an operation", pid.page)));
        };
        if journal.logs_changes() {
            // Taken out while the page is logged against it.
            let mut zeros = std::mem::take(&mut self.zeros);
            zeros.resize(span.len(), 0);
            logrec::diff_spans(&zeros, &self.data[span.clone()], &mut self.spans);
            let logged = self.log_change(journal, f, ChangeKind::Format, &zeros, tx, prev);
            self.zeros = zeros;
            debug_assert_eq!(logged.as_ref().ok(), Some(&lsn));
            logged?;
            self.note_logged(f, lsn);
        }
        let snapshot = self.op[slot].1.get_or_insert_with(Vec::new);
        snapshot.clear();
        snapshot.extend_from_slice(&self.data[span]);
        Ok(lsn)
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
        // Taken out while the changes are logged against it (nothing writes a frame here).
        let base = std::mem::take(&mut self.base);
        let mut result = Ok(());
        for (f, snapshot) in touched {
            if result.is_ok() {
                let before = match &snapshot {
                    Some(copy) => &copy[..],
                    None => &base[self.span(f)],
                };
                result = self.log_page(journal, f, before, tx, &mut prev, kind, undo.as_deref_mut());
            }
            self.frames[f].in_op = false;
            self.unpin(f);
            self.spare_snapshots.extend(snapshot);
        }
        self.base = base;
        result.map(|()| prev)
    }

    #[allow(clippy::too_many_arguments)]
    fn log_page(
        &mut self,
        journal: &mut dyn Journal,
        f: FrameId,
        before: &[u8],
        tx: u64,
        prev: &mut u64,
        kind: OpKind,
        undo: Option<&mut UndoLog>,
    ) -> Result<()> {
        let pid = self.frames[f].page.expect("a changed frame holds a page");
        let span = self.span(f);
        if crate::delta::first_difference(before, &self.data[span.clone()], 0).is_none() {
            return Ok(());
        }
        let lsn = journal.take_page_lsn();
        page::set_lsn(&mut self.data[span.clone()], lsn);
        logrec::diff_spans(before, &self.data[span.clone()], &mut self.spans);
        if let (OpKind::Update, Some(undo)) = (kind, undo) {
            undo.push(*prev, pid, before, &self.spans);
        }
        if !journal.logs_changes() {
            return Ok(());
        }
        let change_kind = match kind {
            OpKind::Update => ChangeKind::Update,
            OpKind::Compensation { undo_next } => ChangeKind::Clr { undo_next },
        };
        let got = self.log_change(journal, f, change_kind, before, tx, *prev)?;
        debug_assert_eq!(got, lsn);
        *prev = lsn;
        self.note_logged(f, lsn);
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
