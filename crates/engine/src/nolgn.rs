//! The `nolgn` journal: no log at all, the database on NoLgn-FTL, whose transactional
//! writes make a commit atomic (Zhou et al., "no-logging" FTL, §3).
//!
//! Every page write and trim goes to the device's open transaction
//! ([`flash::PageDevice::start_transactions`]): the FTL writes the new version out of
//! place and keeps the old one valid until its commit, so stealing (the cleaner or an
//! eviction writing a page an open transaction changed) is safe — a power cut rolls
//! it back. The durability point is a *group commit*: mark the end, write every dirty
//! page and the catalog if it changed (the last write carries the FTL's end flag), then
//! the FTL's `commit(tid)`. Nothing is logged and restart has nothing to redo or undo:
//! recovery is the FTL's OOB scan, after which the device holds exactly the state of
//! the last group commit (catalog included).
//!
//! Grouping (the paper's NORMAL mode): the *group* is every transaction that changed a
//! page since the last group commit (statements outside transactions, DDL, count as
//! transaction 0). Several transactions may be open (the Rust API allows it), but
//! only one writes at a time ([`crate::Error::AnotherWriter`], `txn.rs`): undo writes
//! byte ranges back, so a second writer's changes to the same pages could not survive
//! the first one's abort. A commit therefore normally ends the group's last open
//! member and commits the group; the code still leaves a group open while a member is
//! open (its commit is then durable only with the group's: [`Journal::durable_lsn`]
//! counts commits, and stays below it). A checkpoint (DDL, close) commits the group
//! when no member is open and otherwise only writes the pages.
//!
//! Abort: when the aborting transaction is the group's only member, the FTL's
//! `abort(tid)` drops every write of the group, and the engine drops the buffered
//! changes (frames whose page LSN is at or above the group's first, written or not)
//! and puts back the catalog as at the group's first change (the committed one),
//! so nothing is undone page by page and nothing is written. Otherwise (the group
//! also holds statements outside transactions) the abort undoes its changes in memory
//! from before images (as without a log), and the group commits at once if no member
//! is left open.
//!
//! Back-pressure: the FTL's P2P table bounds the pages of an open FTL transaction. A
//! write that finds it full fails with the FTL's `P2pFull` error (the operation fails;
//! its caller aborts, which frees the table). A group commit that fails (the end page
//! needs a P2P entry, or any other error) rolls the whole group back as an abort does
//! and says so: every commit of the group was below `durable_lsn`, none was durable.
//!
//! Invariants: the device's transaction holds exactly the writes since the last group
//! commit or abort; `start_lsn` is at most the page LSN of every page changed in the
//! group; `catalog` is the catalog as of the last group commit while the group is open.

use crate::catalog::Catalog;
use crate::db::Database;
use crate::error::{Error, Result};
use crate::journal::{Journal, JournalKind};
use crate::txn::{Active, TxState};
use nand::{SimTime, SyncPoint};

/// The journal without a log over NoLgn-FTL (the module comment).
pub struct NolgnJournal {
    next_page_lsn: u64,
    /// Transactions with changes since the last group commit (0: outside transactions).
    members: Vec<u64>,
    /// The page LSN counter at the group's first change.
    start_lsn: u64,
    /// The catalog at the group's first change; `None` while no group is open.
    catalog: Option<Catalog>,
    /// Commits are numbered from 1; those below `durable` were in a group commit.
    next_commit: u64,
    durable: u64,
    durable_at: SimTime,
}

impl NolgnJournal {
    /// Page LSNs continue from `next_page_lsn` (kept in the catalog).
    pub fn new(next_page_lsn: u64) -> NolgnJournal {
        NolgnJournal {
            next_page_lsn,
            members: Vec::new(),
            start_lsn: next_page_lsn,
            catalog: None,
            next_commit: 1,
            durable: 1,
            durable_at: 0,
        }
    }

    /// Whether a member of the group is still open.
    fn member_open(&self, active: &Active) -> bool {
        self.members.iter().any(|m| *m != 0 && active.contains_key(m))
    }

    /// Ends the group: nothing of it is open in the device any more.
    fn close_group(&mut self) {
        self.members.clear();
        self.catalog = None;
    }
}

impl Journal for NolgnJournal {
    fn kind(&self) -> JournalKind {
        JournalKind::Nolgn
    }
    fn next_page_lsn(&self) -> u64 {
        self.next_page_lsn
    }
    fn take_page_lsn(&mut self) -> u64 {
        self.next_page_lsn += 1;
        self.next_page_lsn - 1
    }
    /// The number the next commit gets.
    fn next_lsn(&self) -> u64 {
        self.next_commit
    }
    /// Commits numbered below this are durable (their group committed).
    fn durable_lsn(&self) -> u64 {
        self.durable
    }
    fn durable_at(&self) -> SimTime {
        self.durable_at
    }
    fn nolgn(&mut self) -> Option<&mut NolgnJournal> {
        Some(self)
    }
}

impl Database {
    /// `tx` (0: outside transactions) is about to change pages or the catalog: it joins
    /// the group, which a first member opens (its catalog and LSN noted).
    pub(crate) fn nolgn_join(&mut self, tx: u64) {
        let Some(j) = self.journal.nolgn() else { return };
        if j.catalog.is_none() {
            j.start_lsn = j.next_page_lsn;
            j.catalog = Some(self.catalog.clone());
        }
        if !j.members.contains(&tx) {
            j.members.push(tx);
        }
    }

    /// Commit of `id` (already out of `active`): its number, and the group commit if
    /// no member is left open. 0 for a transaction that changed nothing.
    pub(crate) fn nolgn_commit(&mut self, id: u64) -> Result<u64> {
        let active = &self.active;
        let Some(j) = self.journal.nolgn() else { return Ok(0) };
        let number = if j.members.contains(&id) {
            j.next_commit += 1;
            j.next_commit - 1
        } else {
            0
        };
        if j.catalog.is_some() && !j.member_open(active) {
            let start = self.pool.now();
            self.commit_group(false)?;
            self.pool.stats.commit_wait_ns += self.pool.now() - start;
        }
        Ok(number)
    }

    /// Roll-back of `id` (already out of `active`), as the module comment says.
    pub(crate) fn nolgn_roll_back(&mut self, id: u64, state: TxState) -> Result<()> {
        let active = &self.active;
        let Some(j) = self.journal.nolgn() else { return Ok(()) };
        if j.members.contains(&id) && j.members.iter().all(|&m| m == id) {
            self.keep_undo(state.undo);
            return self.abort_group();
        }
        let alone = j.catalog.is_some() && !j.member_open(active);
        self.undo(id, state.last, &state.undo)?;
        self.keep_undo(state.undo);
        if alone {
            self.commit_group(false)?;
        }
        self.pool.clean(&mut *self.journal)
    }

    /// A checkpoint: the group commits if no member is open; else its pages and the
    /// catalog are written in its transaction (stolen, not yet durable).
    pub(crate) fn nolgn_checkpoint(&mut self) -> Result<()> {
        let active = &self.active;
        let Some(j) = self.journal.nolgn() else { return Ok(()) };
        if j.member_open(active) {
            self.pool.flush_all(&mut *self.journal)?;
            self.catalog.next_lsn = self.journal.next_page_lsn();
            return self.save_catalog();
        }
        self.commit_group(true)
    }

    /// The durability point: every dirty page and the catalog (`always`, or if it
    /// changed) in the device's transaction, the last one marked as its end, then the
    /// FTL's commit and a sync. A failure rolls the group back (module comment).
    fn commit_group(&mut self, always: bool) -> Result<()> {
        let now = self.pool.now();
        let result = self.write_group(always);
        let Some(j) = self.journal.nolgn() else { return Ok(()) };
        match result {
            Ok(done) => {
                j.close_group();
                j.durable = j.next_commit;
                j.durable_at = done;
                self.pool.set_now(done.max(now));
                Ok(())
            }
            Err(e) => {
                // The group cannot commit: nothing of it may stay half written. An abort
                // that fails too (a power cut) leaves it to the FTL's recovery.
                let _ = self.abort_group();
                Err(match e {
                    Error::Flash(flash::Error::P2pFull { entries }) => Error::Full(format!(
                        "NoLgn-FTL: the transaction group's pages outgrew the P2P table ({entries} entries) at its \
                         commit; the group was rolled back (commit smaller transactions or raise the FTL's p2p_entries)"
                    )),
                    other => other,
                })
            }
        }
    }

    fn write_group(&mut self, always: bool) -> Result<SimTime> {
        self.pool.store_mut().device_mut().prepare_commit_tx()?;
        self.pool.flush_all(&mut *self.journal)?;
        self.catalog.next_lsn = self.journal.next_page_lsn();
        let at = self.pool.now();
        let device = self.pool.store_mut().device_mut();
        if always {
            self.catalog.save(device, at)?;
        } else {
            self.catalog.save_if_changed(device, at)?;
        }
        let done = device.commit_tx(at)?;
        Ok(device.sync(SyncPoint::Commit, done)?.max(at))
    }

    /// Drops the group: the FTL's abort, the buffered changes, the catalog as before.
    fn abort_group(&mut self) -> Result<()> {
        let now = self.pool.now();
        let Some(j) = self.journal.nolgn() else { return Ok(()) };
        let (start, catalog) = (j.start_lsn, j.catalog.take());
        j.close_group();
        self.pool.store_mut().device_mut().abort_tx(now)?;
        self.pool.forget_changed_since(start)?;
        if let Some(catalog) = catalog {
            self.regions = crate::db::region_pages(self.pool.store(), &catalog)?;
            self.catalog = catalog;
        }
        Ok(())
    }
}
