//! The database's side of the `nolgn` journal ([`crate::nolgn`]): transactions join
//! the device's transaction group, a commit or checkpoint commits the group once no
//! member is open, and a roll-back drops it or undoes its member in it.

use super::txn::TxState;
use super::Database;
use crate::error::{Error, Result};
use crate::journal::Journal;
use crate::nolgn::NolgnJournal;
use nand::{SimTime, SyncPoint};
use std::any::Any;

/// The NoLgn journal's group, when the database runs on one (`None` for the others).
fn nolgn(journal: &mut Box<dyn Journal>) -> Option<&mut NolgnJournal> {
    (journal.as_mut() as &mut dyn Any).downcast_mut::<NolgnJournal>()
}

impl Database {
    /// `tx` (0: outside transactions) is about to change pages or the catalog: it joins
    /// the group, which a first member opens (its catalog and LSN noted).
    pub(crate) fn nolgn_join(&mut self, tx: u64) {
        let catalog = &self.catalog;
        let Some(j) = nolgn(&mut self.journal) else { return };
        j.join(tx, || catalog.clone());
    }

    /// Commit of `id` (already out of `active`): its number, and the group commit if
    /// no member is left open. 0 for a transaction that changed nothing.
    pub(crate) fn nolgn_commit(&mut self, id: u64) -> Result<u64> {
        let active = &self.active;
        let Some(j) = nolgn(&mut self.journal) else { return Ok(0) };
        let number = j.number_commit(id);
        if j.group_open() && !j.member_open(|m| active.contains_key(&m)) {
            let start = self.pool.now();
            self.commit_group(false)?;
            self.pool.stats.commit_wait_ns += self.pool.now() - start;
        }
        Ok(number)
    }

    /// Roll-back of `id` (already out of `active`), as [`crate::nolgn`]'s comment says.
    pub(crate) fn nolgn_roll_back(&mut self, id: u64, state: TxState) -> Result<()> {
        let active = &self.active;
        let Some(j) = nolgn(&mut self.journal) else { return Ok(()) };
        if j.only_member(id) {
            self.keep_undo(state.undo);
            return self.abort_group();
        }
        let alone = j.group_open() && !j.member_open(|m| active.contains_key(&m));
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
        let Some(j) = nolgn(&mut self.journal) else { return Ok(()) };
        if j.member_open(|m| active.contains_key(&m)) {
            self.pool.flush_all(&mut *self.journal)?;
            self.catalog.next_lsn = self.journal.next_page_lsn();
            return self.save_catalog();
        }
        self.commit_group(true)
    }

    /// The durability point: every dirty page and the catalog (`always`, or if it
    /// changed) in the device's transaction, the last one marked as its end, then the
    /// FTL's commit and a sync. A failure rolls the group back ([`crate::nolgn`]'s comment).
    fn commit_group(&mut self, always: bool) -> Result<()> {
        let now = self.pool.now();
        let result = self.write_group(always);
        let Some(j) = nolgn(&mut self.journal) else { return Ok(()) };
        match result {
            Ok(done) => {
                j.committed(done);
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
        let Some(j) = nolgn(&mut self.journal) else { return Ok(()) };
        let (start, catalog) = j.drop_group();
        self.pool.store_mut().device_mut().abort_tx(now)?;
        self.pool.forget_changed_since(start)?;
        if let Some(catalog) = catalog {
            self.regions = super::region_pages(self.pool.store(), &catalog)?;
            self.catalog = catalog;
        }
        Ok(())
    }
}
