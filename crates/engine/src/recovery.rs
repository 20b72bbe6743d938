//! Restart after a crash (ARIES): analysis from the last checkpoint, redo repeating
//! history from the oldest page change not known to be on flash (each page's LSN says
//! whether it already holds a change), and undo of the transactions that had not
//! committed, newest change first, with compensation records. A cut during restart is
//! survivable: the redo is idempotent and the undo resumes from the compensation
//! records it already logged.

use crate::db::Database;
use crate::error::{Error, Result};
use crate::journal::Room;
use crate::logrec::{Body, Record};
use crate::oplog::OpKind;
use crate::page::PageWrite;
use std::collections::{BTreeMap, HashMap};

impl Database {
    /// Brings the database back to its last committed state: the journal says what to
    /// redo and undo (nothing without a log); then drops what an interrupted
    /// `ALTER … SET TABLESPACE` left.
    pub(crate) fn restart(&mut self) -> Result<()> {
        self.redo_and_undo()?;
        self.drop_copies()
    }

    fn redo_and_undo(&mut self) -> Result<()> {
        if !self.journal.logs_changes() {
            return Ok(());
        }
        let now = self.pool.now();
        let device = self.pool.store.device_mut();
        let (records, read) = self.journal.recover(device, self.catalog.log_start, now)?;
        self.pool.set_now(read);
        let checkpoint = self.catalog.checkpoint_lsn;

        // Analysis: transactions still open and pages possibly dirty at the crash.
        let mut open: BTreeMap<u64, u64> = BTreeMap::new();
        let mut committed: Vec<u64> = Vec::new();
        let mut dirty: HashMap<crate::store::PageId, u64> = HashMap::new();
        let mut max_tx = 0;
        for (lsn, r) in records.iter().filter(|(lsn, _)| *lsn >= checkpoint) {
            max_tx = max_tx.max(r.tx);
            match &r.body {
                Body::Checkpoint { active, dirty: pages } if *lsn == checkpoint => {
                    for &(tx, last, _) in active {
                        open.insert(tx, last);
                        max_tx = max_tx.max(tx);
                    }
                    for &(p, rec) in pages {
                        dirty.entry(p).or_insert(rec);
                    }
                }
                Body::Checkpoint { .. } => {}
                Body::End => {
                    open.remove(&r.tx);
                    committed.retain(|&t| t != r.tx);
                }
                Body::Commit => {
                    open.insert(r.tx, *lsn);
                    committed.push(r.tx);
                }
                body => {
                    open.insert(r.tx, *lsn);
                    if let Body::Update { page, .. } | Body::Clr { page, .. } | Body::Format { page, .. } = body {
                        dirty.entry(*page).or_insert(*lsn);
                    }
                }
            }
        }
        self.next_tx = self.next_tx.max(max_tx + 1);
        if open.is_empty() && dirty.is_empty() && records.iter().all(|(lsn, _)| *lsn <= checkpoint) {
            // A clean shutdown: the checkpoint is the log's last record, and no
            // transaction was active and no page dirty at it. Nothing to redo or undo,
            // nothing to write.
            self.clean_at_lsn = Some(self.journal.next_lsn());
            return Ok(());
        }
        let redo_from = dirty.values().copied().min().unwrap_or(checkpoint).min(checkpoint.max(1));

        // Redo: repeat history.
        for (lsn, r) in records.iter().filter(|(lsn, _)| *lsn >= redo_from) {
            match &r.body {
                Body::Update { page, ranges } | Body::Clr { page, ranges, .. } => {
                    self.pool.redo(&mut *self.journal, *page, *lsn, ranges, false)?
                }
                Body::Format { page, ranges } => self.pool.redo(&mut *self.journal, *page, *lsn, ranges, true)?,
                Body::Alloc { object, page, how } if *lsn > checkpoint => {
                    let Some(space) = self.catalog.space_of(*object) else { continue };
                    space.redo_allocate(&mut self.regions[space.region as usize], *page, *how)?;
                }
                Body::Free { object, page } if *lsn > checkpoint => {
                    if let Some(space) = self.catalog.space_of(*object) {
                        if !space.free.contains(page) {
                            space.free.push(*page);
                        }
                    }
                }
                _ => {}
            }
        }

        // Undo the losers, newest change first across all of them.
        let by_lsn: HashMap<u64, &Record> = records.iter().map(|(lsn, r)| (*lsn, r)).collect();
        for tx in committed {
            let last = open.remove(&tx).unwrap_or(0);
            self.journal.record_in(Room::Rollback, &Record { tx, prev: last, body: Body::End })?;
        }
        let mut todo: BTreeMap<u64, (u64, u64)> = open.iter().map(|(&tx, &last)| (last, (tx, last))).collect();
        while let Some((lsn, (tx, last))) = todo.pop_last() {
            let record = by_lsn.get(&lsn).ok_or_else(|| {
                Error::Corrupt(format!("transaction {tx} needs log record {lsn}, which the log no longer holds"))
            })?;
            let (next, logged) = match &record.body {
                Body::Update { page, ranges } => {
                    let f = self.pool.fetch(*page, &mut *self.journal)?;
                    let mut p = self.pool.page_mut(f);
                    for r in ranges {
                        p.write(r.offset as usize..r.offset as usize + r.before.len()).copy_from_slice(&r.before);
                    }
                    self.pool.unpin(f);
                    let kind = OpKind::Compensation { undo_next: record.prev };
                    let clr = self.pool.end_op(&mut *self.journal, tx, last, kind, None)?;
                    (record.prev, clr)
                }
                Body::Clr { undo_next, .. } => (*undo_next, last),
                _ => (record.prev, last),
            };
            if next == 0 {
                self.journal.record_in(Room::Rollback, &Record { tx, prev: logged, body: Body::End })?;
            } else {
                todo.insert(next, (tx, logged));
            }
        }
        self.checkpoint()
    }
}
