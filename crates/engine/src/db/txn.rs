//! Transactions: begin, commit (made durable by the journal), abort (undo with
//! compensation records), the operation wrapper that logs each access-method call, and
//! checkpoints with log-space reclamation.
//!
//! One transaction writes at a time (the driver interleaves terminals in simulated
//! time, not inside the engine), so a physical undo of byte ranges is always correct:
//! nothing else changed those bytes since. The engine enforces it: while one open
//! transaction has uncommitted changes, another one's change is refused
//! ([`Error::AnotherWriter`]); transactions that only read may be open beside it.
//!
//! A transaction is all or nothing: an operation that fails after it changed data
//! (a row stored but its index entry refused, a B+-tree split the log ran out of room
//! for) leaves the transaction failed. A failed transaction refuses every further
//! operation ([`Error::TransactionFailed`]) and its commit rolls it back and reports
//! that; only its abort ends it quietly. An operation refused before it changed
//! anything (a duplicate key, a value of the wrong type, another writer) leaves the
//! transaction as it was.
//!
//! The [`Transaction`] type enforces the rules: only [`Database::begin`] makes one,
//! `commit` and `abort` take it by value (a finished transaction cannot be presented
//! again), and one that is not open in the database it is given to (another
//! database's, or one the database rolled back) is [`Error::UnknownTransaction`]. A
//! transaction dropped while open is rolled back at the database's next call that
//! takes a transaction, commits, aborts, checkpoints or runs statements; `begin`
//! cannot fail, so it leaves the rollback to the new transaction's first call, before
//! that one changes anything.

use crate::db::{pages, Database, Object};
use crate::error::{Error, Result};
use crate::journal::{JournalKind, Room};
use crate::logrec::{Body, Record};
use crate::oplog::{OpKind, UndoLog};
use crate::page::PageWrite;
use crate::space::ObjectAccess;
use nand::SyncPoint;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Share of the log in use past which an operation of an open transaction first takes
/// a checkpoint: it cuts the log back to what the open transactions and the dirty pages
/// still need, so a long transaction can use the room before its start (commits
/// checkpoint sooner, at `checkpoint_log_share`; where that is set above this share,
/// it holds here too, so a run that asks for late checkpoints gets them).
const MID_TRANSACTION_CHECKPOINT_SHARE: f64 = 0.5;

/// Share of the log a transaction must add after a checkpoint before its operations
/// take the next one. A checkpoint cannot cut the log below an open transaction's first
/// record, so a long transaction keeps the log past half full; without this step it
/// would checkpoint before every operation. At most 1/step checkpoints per log's worth.
/// (Commits do not wait for it: a fuzzy checkpoint cuts the log only back to the
/// previous one, so a commit often takes a second checkpoint right after the first.)
const MID_TRANSACTION_CHECKPOINT_STEP: f64 = 0.05;

/// What the engine keeps for a transaction in progress.
#[derive(Debug, Default)]
pub(crate) struct TxState {
    pub first: u64,
    pub last: u64,
    pub undo: UndoLog,
    /// Pages freed by the transaction: (object, page), returned to the free list at commit.
    pub frees: Vec<(u32, u32)>,
    /// With full-page images: pages whose image its rollback may log, room set aside.
    pub image_room_pages: usize,
    /// Why the transaction failed (an operation failed after it changed data): it
    /// refuses further operations and its commit rolls it back.
    pub failed: Option<String>,
}

pub(crate) type Active = BTreeMap<u64, TxState>;
/// Ids of transactions dropped while open, shared with them.
pub(crate) type Dropped = Arc<Mutex<Vec<u64>>>;

/// A failed write or sync of the device's file while a commit was made durable leaves
/// its outcome unknown; other errors stay as they are.
fn outcome_unknown(e: Error) -> Error {
    if e.is_file_failure() {
        Error::CommitOutcomeUnknown(Box::new(e))
    } else {
        e
    }
}

/// Numbers database instances, so a transaction is only accepted by its own.
pub(crate) fn next_instance() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// A transaction in progress, made by [`Database::begin`] and ended by
/// [`Database::commit`] or [`Database::abort`]; dropped while open, it is rolled back.
///
/// A finished transaction cannot be used again:
///
/// ```compile_fail,E0382
/// fn twice(db: &mut engine::Database) -> engine::Result<()> {
///     let tx = db.begin();
///     db.commit(tx)?;
///     db.commit(tx)?; // `tx` was moved by the first commit
///     Ok(())
/// }
/// ```
#[must_use = "a transaction is committed or aborted; dropped, it is rolled back"]
#[derive(Debug)]
pub struct Transaction {
    id: u64,
    db: u64,
    /// Where `drop` reports the transaction while it is open (`None` once finished).
    dropped: Option<Dropped>,
}

impl Transaction {
    pub fn id(&self) -> u64 {
        self.id
    }
}

impl Drop for Transaction {
    fn drop(&mut self) {
        if let Some(dropped) = self.dropped.take() {
            dropped.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).push(self.id);
        }
    }
}

impl Database {
    pub fn begin(&mut self) -> Transaction {
        self.next_tx += 1;
        let id = self.next_tx - 1;
        let undo = self.spare_undo.pop().unwrap_or_default();
        self.active.insert(id, TxState { undo, ..TxState::default() });
        Transaction { id, db: self.instance, dropped: Some(self.dropped.clone()) }
    }

    /// Rolls back the transactions dropped while open, then checks that `tx` is open
    /// here and has not failed; returns its id.
    pub(crate) fn enter(&mut self, tx: &Transaction) -> Result<u64> {
        let id = self.open_here(tx)?;
        match self.active.get(&id).and_then(|s| s.failed.clone()) {
            Some(cause) => Err(Error::TransactionFailed { id, cause, ended: false }),
            None => Ok(id),
        }
    }

    /// Rolls back the transactions dropped while open, then checks that `tx` is open
    /// here (failed or not); returns its id.
    fn open_here(&mut self, tx: &Transaction) -> Result<u64> {
        self.roll_back_dropped()?;
        if tx.db != self.instance || !self.active.contains_key(&tx.id) {
            return Err(Error::UnknownTransaction { id: tx.id });
        }
        Ok(tx.id)
    }

    /// Runs `change` for `tx` (entered first); if it fails after it changed data, the
    /// transaction is failed: what it did so far would be half an operation.
    pub(crate) fn changing<T>(
        &mut self,
        tx: &Transaction,
        change: impl FnOnce(&mut Self, u64) -> Result<T>,
    ) -> Result<T> {
        let id = self.enter(tx)?;
        let updates = |db: &Self| db.active.get(&id).map(|s| (s.undo.len(), s.frees.len()));
        let before = updates(self);
        let result = change(self, id);
        if let Err(e) = &result {
            if updates(self) != before {
                if let Some(state) = self.active.get_mut(&id) {
                    state.failed = Some(e.brief());
                }
            }
        }
        result
    }

    pub(crate) fn roll_back_dropped(&mut self) -> Result<()> {
        self.refuse_after_file_failure()?;
        let ids = std::mem::take(&mut *self.dropped.lock().unwrap_or_else(|poisoned| poisoned.into_inner()));
        for id in ids {
            if let Some(state) = self.active.remove(&id) {
                self.roll_back(id, state)?;
            }
        }
        Ok(())
    }

    /// Refuses work once a write or sync of the device's file failed (the device refuses
    /// every later mutation, and memory may hold changes the file lacks, such as a
    /// commit whose outcome is unknown): [`Error::Stopped`] until reopened.
    pub(crate) fn refuse_after_file_failure(&self) -> Result<()> {
        match self.pool.store().device().device().storage().writable("work after a failed write") {
            Err(cause @ nand::Error::Io { .. }) => Err(Error::Stopped { cause: cause.to_string() }),
            _ => Ok(()),
        }
    }

    /// Ends `tx` here: checks it, takes its state and disarms its drop.
    fn finish(&mut self, tx: &mut Transaction) -> Result<(u64, TxState)> {
        let id = self.open_here(tx)?;
        tx.dropped = None;
        Ok((id, self.active.remove(&id).unwrap_or_default()))
    }

    /// Commits: frees the pages the transaction released, logs the commit and makes it
    /// durable, then lets the page cleaner and, when the log is filling, a checkpoint
    /// run. Returns the commit record's LSN (0 without a log or without changes).
    ///
    /// Without a group-commit window the log is forced now and the simulated clock
    /// waits for it. With a window W, commits share flushes: the first commit of a
    /// group sets its deadline to its time + W; the group's log pages are written at
    /// the deadline, as soon as a later commit, a page write, a checkpoint or
    /// [`Database::flush_log`] needs it. Until then `durable_lsn` is below the commit.
    ///
    /// Without a log, a commit that changed pages writes every dirty page, the catalog
    /// if the transaction changed it, and syncs the device. On NoLgn-FTL (`nolgn`) it
    /// does so in the FTL's transaction and commits that, once no other transaction
    /// sharing it is open (`crate::nolgn`); it returns the commit's number, durable
    /// once `durable_lsn` is above it.
    ///
    /// A failed write or sync of the device's file while the commit is made durable is
    /// [`Error::CommitOutcomeUnknown`]; one after it (the page cleaner, a checkpoint)
    /// does not fail the commit. Either way the database then refuses work until it is
    /// reopened ([`Error::Stopped`]).
    ///
    /// A failed transaction is rolled back instead, and the commit returns
    /// [`Error::TransactionFailed`] with `ended` set.
    pub fn commit(&mut self, mut tx: Transaction) -> Result<u64> {
        let (id, mut state) = self.finish(&mut tx)?;
        if let Some(cause) = state.failed.take() {
            self.roll_back(id, state)?;
            return Err(Error::TransactionFailed { id, cause, ended: true });
        }
        // Committing, it will not roll back: its room in the log is free for the rest.
        self.journal.release_rollback_room(id);
        let changed = !state.undo.is_empty() || !state.frees.is_empty();
        self.keep_undo(std::mem::take(&mut state.undo));
        let mut prev = state.last;
        for (object, page) in state.frees {
            prev = self.journal.record(&Record { tx: id, prev, body: Body::Free { object, page } })?.max(prev);
            if let Some(space) = self.catalog.space_of(object) {
                space.free.push(page);
            }
        }
        let mut commit = 0;
        if self.journal.logs_changes() {
            if prev > 0 {
                commit = self.journal.record(&Record { tx: id, prev, body: Body::Commit })?;
                self.group_commit(commit).map_err(outcome_unknown)?;
                self.journal.record(&Record { tx: id, prev: commit, body: Body::End })?;
            }
        } else if self.journal.kind() == JournalKind::Nolgn {
            commit = self.nolgn_commit(id).map_err(outcome_unknown)?;
        } else if changed {
            self.commit_without_log().map_err(outcome_unknown)?;
        }
        // Committed: a failed file write from here on is the next call's refusal.
        let after = self
            .pool
            .clean(&mut *self.journal)
            .and_then(|()| self.checkpoint_if_log_past(self.journal.used_share(), self.options.checkpoint_log_share));
        match after {
            Err(e) if !e.is_file_failure() => Err(e),
            _ => Ok(commit),
        }
    }

    /// The durability point without a log: the pages, the catalog, a sync.
    fn commit_without_log(&mut self) -> Result<()> {
        let now = self.pool.now();
        self.pool.flush_all(&mut *self.journal)?;
        self.catalog.next_lsn = self.journal.next_page_lsn();
        let at = self.pool.now();
        self.catalog.save_if_changed(self.pool.store_mut().device_mut(), at)?;
        let done = self.pool.store_mut().device_mut().sync(SyncPoint::Commit, at)?.max(at);
        self.pool.stats.commit_wait_ns += done - now;
        self.pool.set_now(done);
        Ok(())
    }

    fn group_commit(&mut self, commit: u64) -> Result<()> {
        let now = self.pool.now();
        let window = self.options.group_commit_ns;
        if window == 0 {
            let forced = self.pool.force_log(&mut *self.journal, commit)?;
            let done = self.pool.store_mut().device_mut().sync(SyncPoint::Commit, forced)?.max(now);
            self.pool.stats.commit_wait_ns += done - now;
            self.pool.set_now(done);
            return Ok(());
        }
        match self.group_deadline {
            Some(deadline) if now > deadline => self.flush_group()?,
            Some(_) => {}
            None => self.group_deadline = Some(now + window),
        }
        Ok(())
    }

    /// When the open commit group's log flush is due (`None`: no group is open).
    pub fn group_deadline(&self) -> Option<nand::SimTime> {
        self.group_deadline
    }

    /// Writes the open commit group's log pages at its deadline (the clock is left as
    /// it was); `durable_at` then tells when they were durable.
    pub fn flush_group(&mut self) -> Result<()> {
        let Some(deadline) = self.group_deadline.take() else { return Ok(()) };
        let now = self.pool.now();
        self.pool.set_now(deadline);
        let end = self.log_end_lsn();
        let forced = self.pool.force_log(&mut *self.journal, end);
        let synced = forced.and_then(|at| Ok(self.pool.store_mut().device_mut().sync(SyncPoint::Commit, at)?));
        self.pool.set_now(now);
        synced.map(|_| ())
    }

    /// Counts simulated time a caller waited for its commit to become durable (a
    /// closed-loop driver waiting for its group's flush).
    pub fn add_commit_wait(&mut self, ns: u64) {
        self.pool.stats.commit_wait_ns += ns;
    }

    /// Writes the log's pending group now; returns when it is durable.
    pub fn flush_log(&mut self) -> Result<nand::SimTime> {
        self.group_deadline = None;
        let lsn = self.journal.next_lsn();
        let forced = self.pool.force_log(&mut *self.journal, lsn)?;
        Ok(self.pool.store_mut().device_mut().sync(SyncPoint::Commit, forced)?)
    }

    /// Everything below this LSN is in the log on flash.
    pub fn durable_lsn(&self) -> u64 {
        self.journal.durable_lsn()
    }

    /// When the log last became durable up to `durable_lsn`.
    pub fn durable_at(&self) -> nand::SimTime {
        self.journal.durable_at()
    }

    /// The LSN the next log record gets (0 without a log).
    pub fn log_end_lsn(&self) -> u64 {
        self.journal.next_lsn()
    }

    /// Sets the group-commit window (0: every commit forces the log); a group open
    /// under the old window keeps its deadline.
    pub fn set_group_commit(&mut self, window_ns: nand::SimTime) {
        self.options.group_commit_ns = window_ns;
    }

    /// Rolls back: undoes the transaction's updates newest first, logging a
    /// compensation record for each, and ends it.
    pub fn abort(&mut self, mut tx: Transaction) -> Result<()> {
        let (id, state) = self.finish(&mut tx)?;
        self.roll_back(id, state)
    }

    fn roll_back(&mut self, id: u64, state: TxState) -> Result<()> {
        if self.journal.kind() == JournalKind::Nolgn {
            return self.nolgn_roll_back(id, state);
        }
        let last = self.undo(id, state.last, &state.undo)?;
        self.keep_undo(state.undo);
        if self.journal.logs_changes() && last > 0 {
            self.journal.record_in(Room::Rollback, &Record { tx: id, prev: last, body: Body::End })?;
        }
        self.journal.release_rollback_room(id);
        self.pool.clean(&mut *self.journal)
    }

    /// Keeps a finished transaction's undo buffers for a later one.
    pub(crate) fn keep_undo(&mut self, mut undo: UndoLog) {
        undo.clear();
        self.spare_undo.push(undo);
    }

    /// Applies the before images in `undo`, newest first, each logged as a compensation;
    /// returns the last LSN logged.
    pub(crate) fn undo(&mut self, tx: u64, mut last: u64, undo: &UndoLog) -> Result<u64> {
        for e in undo.newest_first() {
            let f = self.pool.fetch(e.page, &mut *self.journal)?;
            let mut p = self.pool.page_mut(f);
            for (offset, before) in e.ranges() {
                p.write(offset..offset + before.len()).copy_from_slice(before);
            }
            self.pool.unpin(f);
            last = self.pool.end_op(&mut *self.journal, tx, last, OpKind::Compensation { undo_next: e.prev }, None)?;
            self.pool.write_log_ahead(&mut *self.journal, self.options.log_buffer_bytes)?;
        }
        Ok(last)
    }

    /// Another open transaction than `tx` that has changed data, if any. Undo writes a
    /// transaction's byte ranges back as they were, which is right only if no other
    /// transaction changed those pages since: so a transaction may not change data
    /// while another one's changes are uncommitted (readers may stay open beside it).
    fn other_writer(&self, tx: u64) -> Option<u64> {
        self.active.iter().find(|&(&id, s)| id != tx && (s.last > 0 || !s.undo.is_empty())).map(|(&id, _)| id)
    }

    /// Runs one access-method call for `tx` on `object`, then logs the pages it changed
    /// (also when it failed, so an abort can undo the part that happened).
    pub(crate) fn with_object<T>(
        &mut self,
        tx: u64,
        object: Object,
        call: impl FnOnce(&mut ObjectAccess) -> Result<T>,
    ) -> Result<T> {
        if let Some(writer) = self.other_writer(tx) {
            return Err(Error::AnotherWriter { id: tx, writer });
        }
        self.nolgn_join(tx);
        let used = self.journal.used_share();
        if self.log_share_at_checkpoint + MID_TRANSACTION_CHECKPOINT_STEP <= used {
            self.checkpoint_if_log_past(used, MID_TRANSACTION_CHECKPOINT_SHARE.max(self.options.checkpoint_log_share))?;
        }
        self.pool.write_log_ahead(&mut *self.journal, self.options.log_buffer_bytes)?;
        let prev = self.active.entry(tx).or_default().last;
        let first_candidate = self.journal.next_lsn();
        let (space, id) = match object {
            Object::Table(t) => {
                let def = &mut self.catalog.tables[t];
                (&mut def.space, def.id)
            }
            Object::Index(i) => {
                let def = &mut self.catalog.indexes[i];
                (&mut def.space, def.id)
            }
        };
        let regions = &mut self.regions[space.region as usize];
        let mut a = ObjectAccess { pool: pages!(self), space, regions, object: id, tx, prev, freed: Vec::new() };
        let result = call(&mut a);
        let (prev, freed) = (a.prev, std::mem::take(&mut a.freed));
        let state = self.active.entry(tx).or_default();
        let last = self.pool.end_op(&mut *self.journal, tx, prev, OpKind::Update, Some(&mut state.undo))?;
        if state.first == 0 && last > state.last {
            state.first = first_candidate;
        }
        state.last = last;
        state.frees.extend(freed.into_iter().map(|p| (id, p)));
        result
    }

    /// Writes every dirty page, then takes a checkpoint: after it the log holds nothing
    /// a restart needs (what `close` does).
    pub fn checkpoint(&mut self) -> Result<()> {
        self.roll_back_dropped()?;
        self.pool.flush_all(&mut *self.journal)?;
        self.take_checkpoint()
    }

    /// Takes a checkpoint if the log's `used` share (its `used_share`, which the caller
    /// has at hand) is past `share`.
    fn checkpoint_if_log_past(&mut self, used: f64, share: f64) -> Result<()> {
        if self.journal.logs_changes() && used > share {
            return self.take_checkpoint();
        }
        Ok(())
    }

    /// A fuzzy checkpoint: writes the pages dirty since before the previous checkpoint
    /// (so the log can always be cut back to it), logs the active transactions and the
    /// dirty-page table, forces the log, stores the catalog pointing at the checkpoint,
    /// and cuts the log at the oldest LSN a restart still needs.
    pub(crate) fn take_checkpoint(&mut self) -> Result<()> {
        let start = self.pool.now();
        let result = self.write_checkpoint().and_then(|()| {
            // The catalog now points at the checkpoint: make it durable too.
            let now = self.pool.now();
            let done = self.pool.store_mut().device_mut().sync(SyncPoint::Checkpoint, now)?;
            self.pool.set_now(done.max(now));
            Ok(())
        });
        let waited = self.pool.now().saturating_sub(start);
        self.pool.stats.checkpoint_wait_ns += waited;
        if result.is_ok() {
            self.clean_at_lsn = Some(self.journal.next_lsn());
            self.log_share_at_checkpoint = self.journal.used_share();
            self.pool.stats.checkpoints += 1;
        }
        result
    }

    fn write_checkpoint(&mut self) -> Result<()> {
        if self.journal.kind() == JournalKind::Nolgn {
            return self.nolgn_checkpoint();
        }
        if !self.journal.logs_changes() {
            self.catalog.next_lsn = self.journal.next_page_lsn();
            return self.save_catalog();
        }
        self.pool.flush_older_than(self.catalog.checkpoint_lsn, &mut *self.journal)?;
        let active: Vec<(u64, u64, u64)> =
            self.active.iter().filter(|(_, s)| s.last > 0).map(|(&tx, s)| (tx, s.last, s.first)).collect();
        let dirty = self.pool.dirty_pages();
        let lsn = self.journal.record_in(
            Room::Checkpoint,
            &Record { tx: 0, prev: 0, body: Body::Checkpoint { active: active.clone(), dirty: dirty.clone() } },
        )?;
        let done = self.pool.force_log(&mut *self.journal, lsn)?;
        self.pool.set_now(done.max(self.pool.now()));
        let mut start = dirty.iter().map(|d| d.1).chain(active.iter().map(|a| a.2)).fold(lsn, u64::min);
        if self.pool.logs_page_images() {
            // A page dirty since before this checkpoint has its image after the previous
            // one (the pages dirty since before that were written above): restart redoes
            // from there (docs/format.md, torn-page protection).
            if self.catalog.checkpoint_lsn > 0 {
                start = start.min(self.catalog.checkpoint_lsn);
            }
            self.pool.set_image_epoch(Some(lsn));
            // Every page an open transaction changed is now below the checkpoint: its
            // rollback logs an image of each, so room for them is set aside.
            let image_bytes = crate::logrec::image_record_bytes(self.pool.store().page_bytes()) as u64;
            for (&tx, state) in self.active.iter_mut() {
                let pages = state.undo.distinct_pages();
                if pages > state.image_room_pages {
                    self.journal.set_aside_for_rollback(tx, (pages - state.image_room_pages) as u64 * image_bytes);
                    state.image_room_pages = pages;
                }
            }
        }
        self.catalog.checkpoint_lsn = lsn;
        self.catalog.log_start = start;
        self.save_catalog()?;
        self.journal.truncate(start);
        Ok(())
    }
}
