//! Restart after a crash (ARIES): analysis from the last checkpoint, redo repeating
//! history from the oldest page change not known to be on flash (each page's LSN says
//! whether it already holds a change), and undo of the transactions that had not
//! committed, newest change first, with compensation records. A cut during restart is
//! survivable: the redo is idempotent and the undo resumes from the compensation
//! records it already logged.
//!
//! With torn-page protection (full-page images, see `oplog`), redo starts no later than
//! the log's start (which then reaches back to the checkpoint before the last one), and
//! a page with an image or a format record in the redo range is never read from flash:
//! its records before the first of them are skipped, each image is installed whole,
//! and the changes after it are redone on top.

use crate::db::Database;
use crate::error::{Error, Result};
use crate::journal::Room;
use crate::log::LoggedRecord;
use crate::logrec::{Body, Range, Record};
use crate::oplog::OpKind;
use crate::page::PageWrite;
use crate::store::PageId;
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
                Body::Image { page, .. } => {
                    dirty.entry(*page).or_insert(*lsn);
                }
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
        let mut redo_from = dirty.values().copied().min().unwrap_or(checkpoint).min(checkpoint.max(1));
        let images = self.pool.logs_page_images();
        if images {
            redo_from = redo_from.min(self.catalog.log_start.max(1));
        }
        let first_image = first_images(&records, redo_from, images);
        let page_bytes = self.pool.store().page_bytes();

        // Redo: repeat history.
        for (lsn, r) in records.iter().filter(|(lsn, _)| *lsn >= redo_from) {
            match &r.body {
                // A change the page's first image in the redo range already holds.
                Body::Update { page, .. } | Body::Clr { page, .. }
                    if first_image.get(page).is_some_and(|&first| *lsn < first) => {}
                Body::Update { page, ranges } | Body::Clr { page, ranges, .. } => {
                    self.pool.redo(&mut *self.journal, *page, *lsn, ranges, false)?
                }
                Body::Format { page, ranges } if images => {
                    check_ranges(*page, ranges, page_bytes)?;
                    self.pool.redo_image(&mut *self.journal, *page, *lsn, |p| {
                        for r in ranges {
                            p[r.offset as usize..r.offset as usize + r.after.len()].copy_from_slice(&r.after);
                        }
                        crate::page::set_lsn(p, *lsn);
                    })?
                }
                Body::Format { page, ranges } => self.pool.redo(&mut *self.journal, *page, *lsn, ranges, true)?,
                Body::Image { page, bytes } => {
                    if bytes.len() != page_bytes {
                        return Err(Error::Corrupt(format!(
                            "log record {lsn}: an image of {} bytes for region {} page {}, whose pages have {page_bytes}",
                            bytes.len(),
                            page.region,
                            page.page
                        )));
                    }
                    self.pool.redo_image(&mut *self.journal, *page, *lsn, |p| p.copy_from_slice(bytes))?
                }
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

/// Per page, the LSN of its first image record (and, with `formats`, format record) at
/// or after `redo_from`: redo starts that page there.
fn first_images(records: &[LoggedRecord], redo_from: u64, formats: bool) -> HashMap<PageId, u64> {
    let mut first = HashMap::new();
    for (lsn, r) in records.iter().filter(|(lsn, _)| *lsn >= redo_from) {
        match &r.body {
            Body::Image { page, .. } => first.entry(*page).or_insert(*lsn),
            Body::Format { page, .. } if formats => first.entry(*page).or_insert(*lsn),
            _ => continue,
        };
    }
    first
}

/// A format record's ranges must lie within the page.
fn check_ranges(page: PageId, ranges: &[Range], page_bytes: usize) -> Result<()> {
    match ranges.iter().find(|r| r.offset as usize + r.after.len() > page_bytes) {
        Some(r) => Err(Error::Corrupt(format!(
            "log record for region {} page {} writes bytes {}..{}, beyond its {page_bytes} bytes",
            page.region,
            page.page,
            r.offset,
            r.offset as usize + r.after.len()
        ))),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use crate::db::{Database, DbOptions};
    use crate::error::Error;
    use crate::journal::JournalKind;
    use crate::types::Value;
    use crate::QueryResult;
    use flash::ftl::{FtlConfig, FtlKind};
    use flash::{FtlVolume, PageDevice, RegionId};
    use nand::{Device, Geometry, MemoryStorage};

    /// 4 KiB flash pages under a page-level FTL; DB pages of 8 KiB span two of them.
    fn volume() -> FtlVolume {
        let geometry = Geometry {
            channels: 1,
            chips_per_channel: 4,
            blocks_per_chip: 64,
            pages_per_block: 32,
            ..Geometry::paper_emulator()
        };
        let device = Device::new(Box::new(MemoryStorage::new(geometry, true)));
        let ftl = flash::ftl::format(device, &FtlConfig::new(FtlKind::Page)).unwrap();
        FtlVolume::format(ftl, Vec::new(), 0).unwrap()
    }

    fn options(journal: JournalKind) -> DbOptions {
        DbOptions { page_bytes: 8192, journal, ..DbOptions::default() }
    }

    fn values(db: &mut Database) -> Vec<Vec<Value>> {
        let mut rows = match db.execute("SELECT id, v FROM t").unwrap().pop() {
            Some(QueryResult::Rows { rows, .. }) => rows,
            other => panic!("{other:?}"),
        };
        rows.sort_by_key(|r| match r[0] {
            Value::Int(id) => id,
            _ => panic!("{r:?}"),
        });
        rows
    }

    /// Every flash page of region `rg`, as the volume holds it.
    fn flash_pages(device: &mut dyn PageDevice, rg: RegionId) -> Vec<Option<Vec<u8>>> {
        (0..device.logical_pages(rg)).map(|lpn| device.read(rg, lpn, 0).unwrap().map(|r| r.data.to_vec())).collect()
    }

    /// A cut between the two flash pages of a DB page's write leaves the first new and
    /// the second old. The change was logged with the page's image before it (its first
    /// change since the checkpoint), so restart installs the image instead of reading
    /// the torn copy and redoes the change: every row has its committed value.
    #[test]
    fn a_torn_multi_part_page_is_repaired_from_its_image() {
        let mut db = Database::create_on(Box::new(volume()), options(JournalKind::Aries)).unwrap();
        assert!(db.pool.logs_page_images(), "8 KiB DB pages on 4 KiB FTL pages need images");
        db.execute(
            "CREATE REGION rg (IPA_MODE=SLC); CREATE TABLESPACE ts (REGION=rg);
             CREATE TABLE t (id INT, v INT, pad CHAR(100)) TABLESPACE ts;",
        )
        .unwrap();
        let inserts: Vec<String> = (0..60).map(|id| format!("({id}, 0, 'row {id}')")).collect();
        db.execute(&format!("INSERT INTO t VALUES {}", inserts.join(", "))).unwrap();
        db.checkpoint().unwrap();
        let rg = db.page_device().region_id("rg").unwrap();
        let before = flash_pages(db.pool.store_mut().device_mut(), rg);

        db.execute("UPDATE t SET v = 7").unwrap();
        assert!(db.pool_stats().page_images > 0, "the update logged the page's image");
        // The page is written (after the log, by the write-ahead rule), then the cut.
        db.pool.flush_all(&mut *db.journal).unwrap();
        let mut device = db.pool.into_store().into_device();
        let after = flash_pages(device.as_mut(), rg);
        let mut torn = 0;
        for part in (1..before.len()).step_by(2) {
            if before[part - 1] != after[part - 1] {
                let old = before[part].as_ref().expect("the page's second flash page was written before");
                device.write_pages(rg, part as u32, old, 0).unwrap();
                torn += 1;
            }
        }
        assert!(torn > 0, "a DB page of the table changed");

        let mut db = Database::open_on(device, options(JournalKind::Aries)).unwrap();
        let want: Vec<Vec<Value>> = (0..60).map(|id| vec![Value::Int(id), Value::Int(7)]).collect();
        assert_eq!(values(&mut db), want);
    }

    /// The `none` journal has no log to repair a torn page from: refused where DB pages
    /// span flash pages the device writes one by one, with what to do instead.
    #[test]
    fn a_journal_without_a_log_is_refused_where_pages_can_tear() {
        let Err(Error::Invalid(m)) = Database::create_on(Box::new(volume()), options(JournalKind::None)) else {
            panic!("the none journal on 8 KiB pages over a page FTL is accepted");
        };
        for part in ["8192", "4096", "ftl:page", "`none` journal", "aries"] {
            assert!(m.contains(part), "{part} not in: {m}");
        }
        let fits = DbOptions { page_bytes: 4096, ..options(JournalKind::None) };
        let db = Database::create_on(Box::new(volume()), fits).unwrap();
        assert!(!db.pool.logs_page_images());
    }
}
