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
use crate::journal::{Journal, JournalKind};
use nand::SimTime;

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

    /// `tx` (0: outside transactions) is about to change pages or the catalog: it joins
    /// the group, which a first member opens with `catalog` (the catalog before it).
    pub(crate) fn join(&mut self, tx: u64, catalog: impl FnOnce() -> Catalog) {
        if self.catalog.is_none() {
            self.start_lsn = self.next_page_lsn;
            self.catalog = Some(catalog());
        }
        if !self.members.contains(&tx) {
            self.members.push(tx);
        }
    }

    /// The number of `id`'s commit: the next one if it changed something, else 0.
    pub(crate) fn number_commit(&mut self, id: u64) -> u64 {
        if self.members.contains(&id) {
            self.next_commit += 1;
            self.next_commit - 1
        } else {
            0
        }
    }

    /// Whether a group is open (a member changed something since the last group commit).
    pub(crate) fn group_open(&self) -> bool {
        self.catalog.is_some()
    }

    /// Whether `id` is the group's only member.
    pub(crate) fn only_member(&self, id: u64) -> bool {
        self.members.contains(&id) && self.members.iter().all(|&m| m == id)
    }

    /// Whether a member of the group is still open (`is_open` says which are).
    pub(crate) fn member_open(&self, is_open: impl Fn(u64) -> bool) -> bool {
        self.members.iter().any(|&m| m != 0 && is_open(m))
    }

    /// The group committed, durable at `done`: it ends.
    pub(crate) fn committed(&mut self, done: SimTime) {
        self.close_group();
        self.durable = self.next_commit;
        self.durable_at = done;
    }

    /// The group is dropped: it ends, giving back its first page LSN and the catalog as
    /// it was before it (`None` if no group was open).
    pub(crate) fn drop_group(&mut self) -> (u64, Option<Catalog>) {
        let dropped = (self.start_lsn, self.catalog.take());
        self.close_group();
        dropped
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
}
