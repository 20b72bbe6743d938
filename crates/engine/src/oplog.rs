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
//! Without a log the same path stamps page LSNs from a counter and logs nothing.

use crate::buffer::{never_written, BufferPool, FrameId};
use crate::error::{Error, Result};
use crate::logrec::{self, Body, Range, Record};
use crate::page;
use crate::store::PageId;

/// What an undo needs of a logged update.
#[derive(Clone, Debug)]
pub struct UndoEntry {
    pub lsn: u64,
    pub prev: u64,
    pub page: PageId,
    pub ranges: Vec<Range>,
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
    fn take_page_lsn(&mut self) -> u64 {
        match &self.log {
            Some(log) => log.next_lsn(),
            None => {
                self.counter_lsn += 1;
                self.counter_lsn - 1
            }
        }
    }

    /// Appends a record (no-op without a log); returns its LSN or 0.
    pub fn log_record(&mut self, record: &Record) -> Result<u64> {
        match &mut self.log {
            Some(log) => log.append(record),
            None => Ok(0),
        }
    }

    /// Makes the log durable up to `lsn`; returns when that is done.
    pub fn force_log(&mut self, lsn: u64) -> Result<nand::SimTime> {
        let now = self.now();
        let flash = match &mut self.log_flash {
            Some(external) => external,
            None => self.store.flash_mut(),
        };
        match &mut self.log {
            Some(log) => log.force(lsn, flash, now),
            None => Ok(now),
        }
    }

    pub fn has_log(&self) -> bool {
        self.log.is_some()
    }

    /// Logs the freshly formatted page in frame `f` (changed in this operation from all
    /// zeros) as a redo-only format record; later changes in the operation are logged
    /// against the formatted page.
    pub fn log_format(&mut self, f: FrameId, tx: u64, prev: u64) -> Result<u64> {
        let pid = self.frames[f].page.expect("a formatted frame holds a page");
        let body_end = self.store.body_end(pid.region);
        let lsn = self.take_page_lsn();
        let span = self.span(f);
        page::set_lsn(&mut self.data[span.clone()], lsn);
        let Some(slot) = self.op.iter().position(|(g, _)| *g == f) else {
            return Err(Error::Corrupt(format!("page {} formatted outside an operation", pid.page)));
        };
        if self.log.is_some() {
            let zeros = vec![0u8; body_end];
            let ranges = logrec::diff_ranges(&zeros, &self.data[span.start..span.start + body_end]);
            let got = self.log_record(&Record { tx, prev, body: Body::Format { page: pid, ranges } })?;
            debug_assert_eq!(got, lsn);
            self.note_logged(f, lsn);
        }
        let snapshot = &mut self.op[slot].1;
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
    /// and returns the last LSN and what an undo of the updates needs.
    pub fn end_op(&mut self, tx: u64, mut prev: u64, kind: OpKind) -> Result<(u64, Vec<UndoEntry>)> {
        let mut undo = Vec::new();
        let touched = std::mem::take(&mut self.op);
        let mut result = Ok(());
        for (f, snapshot) in touched {
            if result.is_ok() {
                result = self.log_page(f, &snapshot, tx, &mut prev, kind, &mut undo);
            }
            self.frames[f].in_op = false;
            self.unpin(f);
            self.spare_snapshots.push(snapshot);
        }
        result.map(|()| (prev, undo))
    }

    fn log_page(
        &mut self,
        f: FrameId,
        before: &[u8],
        tx: u64,
        prev: &mut u64,
        kind: OpKind,
        undo: &mut Vec<UndoEntry>,
    ) -> Result<()> {
        let pid = self.frames[f].page.expect("a changed frame holds a page");
        let body_end = self.store.body_end(pid.region);
        let span = self.span(f);
        if before[..body_end] == self.data[span.start..span.start + body_end] {
            return Ok(());
        }
        let lsn = self.take_page_lsn();
        page::set_lsn(&mut self.data[span.clone()], lsn);
        if self.log.is_none() {
            return Ok(());
        }
        let ranges = logrec::diff_ranges(&before[..body_end], &self.data[span.start..span.start + body_end]);
        let body = match kind {
            OpKind::Update => Body::Update { page: pid, ranges: ranges.clone() },
            OpKind::Compensation { undo_next } => Body::Clr { page: pid, undo_next, ranges: ranges.clone() },
        };
        let got = self.log_record(&Record { tx, prev: *prev, body })?;
        debug_assert_eq!(got, lsn);
        if let OpKind::Update = kind {
            undo.push(UndoEntry { lsn, prev: *prev, page: pid, ranges });
        }
        *prev = lsn;
        self.note_logged(f, lsn);
        Ok(())
    }

    /// Redo of one logged change (restart): applies the after images unless the page
    /// already has them (its LSN is at least `lsn`). A format starts from a zero page,
    /// creating the page if flash never had it.
    pub fn redo(&mut self, pid: PageId, lsn: u64, ranges: &[Range], format: bool) -> Result<()> {
        let f = match (format, self.fetch_if_written(pid)?) {
            (_, Some(f)) => f,
            (true, None) => self.create(pid)?,
            (false, None) => return Err(never_written(pid)),
        };
        let span = self.span(f);
        // The page already has the change (a format also needs the page formatted).
        let p = &self.data[span.clone()];
        if page::lsn(p) >= lsn && (!format || page::kind(p) != 0) {
            self.unpin(f);
            return Ok(());
        }
        let body_end = self.store.body_end(pid.region);
        self.mark_dirty_for_redo(f);
        let p = &mut self.data[span];
        if format {
            p[..body_end].fill(0);
        }
        for r in ranges {
            let at = r.offset as usize;
            let end = at + r.after.len();
            if end > body_end {
                self.unpin(f);
                return Err(Error::Corrupt(format!("log record for page {} writes beyond its body", pid.page)));
            }
            p[at..end].copy_from_slice(&r.after);
        }
        page::set_lsn(p, lsn);
        self.note_logged(f, lsn);
        self.unpin(f);
        Ok(())
    }
}
