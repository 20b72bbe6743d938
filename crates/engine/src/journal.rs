//! The journal: the one seam the database commits through, owned by the `Database`.
//!
//! A journal stamps page changes with LSNs, logs them (or not), tells the buffer pool
//! how far it must be forced before a page with a given LSN may be written (the
//! write-ahead rule, [`Journal::force`]), makes commits durable, and at restart hands
//! recovery the records to redo and undo ([`Journal::recover`]).
//!
//! Kinds ([`JournalKind`]):
//! - `aries`: today's write-ahead log ([`crate::log::Log`]) on the database device's
//!   `log` region or on a device of its own; restart is ARIES (analysis, redo, undo).
//! - `none`: no log. Page LSNs come from a counter. A commit writes every dirty page
//!   and syncs the device; an abort undoes from in-memory before images. Atomicity of a
//!   commit that writes several pages rests on the device (an FTL that makes page
//!   groups atomic); on a device that does not, a power cut during a commit, or the
//!   write of an uncommitted page the buffer pool evicted, can leave a partial
//!   transaction on flash. Restart has nothing to redo or undo.
//! - `nolgn`: no log, on NoLgn-FTL ([`crate::nolgn::NolgnJournal`]): every page write
//!   goes to the FTL's open transaction, a commit is the FTL's `commit(tid)` after the
//!   dirty pages, so steal is safe and a commit atomic; restart is the FTL's scan.
//!
//! Torn pages ([`needs_page_images`]): a DB page of several flash pages on a device
//! that does not write them atomically (a conventional FTL) can be left half new, half
//! old by a cut. The ARIES log then carries full-page images that restart repairs such a
//! page from; the `none` journal has no log to repair it from and is refused there.

use crate::error::{Error, Result};
use crate::log::{Log, LogCounters, LoggedRecord};
use flash::{PageDevice, RegionId};
use nand::SimTime;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Which journal a new database keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum JournalKind {
    /// An ARIES write-ahead log.
    Aries,
    /// No log: commits write their pages and sync.
    None,
    /// No log, on NoLgn-FTL: commits are the FTL's transactions.
    Nolgn,
}

impl JournalKind {
    pub fn name(self) -> &'static str {
        match self {
            JournalKind::Aries => "aries",
            JournalKind::None => "none",
            JournalKind::Nolgn => "nolgn",
        }
    }
}

impl std::str::FromStr for JournalKind {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "aries" => Ok(JournalKind::Aries),
            "none" => Ok(JournalKind::None),
            "nolgn" => Ok(JournalKind::Nolgn),
            other => Err(format!("unknown journal `{other}` (expected aries, none or nolgn)")),
        }
    }
}

/// Whether a database with journal `kind` on `device`, with DB pages of `page_bytes`,
/// must log full-page images to repair torn pages: its pages span several flash pages
/// that the device writes one by one. Refused where the journal has no log.
pub fn needs_page_images(kind: JournalKind, device: &dyn PageDevice, page_bytes: usize) -> Result<bool> {
    let flash_page_bytes = device.page_bytes();
    if page_bytes <= flash_page_bytes || device.atomic_page_groups() {
        return Ok(false);
    }
    match kind {
        JournalKind::Aries => Ok(true),
        JournalKind::None | JournalKind::Nolgn => Err(Error::Invalid(format!(
            "DB pages of {page_bytes} bytes span {} flash pages of {flash_page_bytes} bytes, which {} writes one \
             by one: a power cut between them tears the page, and the `{}` journal keeps no log to repair it from; \
             use the aries journal (it logs full-page images) or {flash_page_bytes}-byte DB pages",
            page_bytes / flash_page_bytes,
            storage_name(device),
            kind.name()
        ))),
    }
}

/// What `device` is, for messages: a conventional FTL by its kind, else its type.
fn storage_name(device: &dyn PageDevice) -> String {
    match device.as_any().downcast_ref::<flash::FtlVolume>() {
        Some(volume) => format!("a conventional FTL (ftl:{})", volume.ftl().kind().name()),
        None => "this device".into(),
    }
}

/// How the database logs changes and makes commits durable. The provided methods are
/// those of a journal without a log (no records, nothing to force, truncate or recover);
/// a journal with a log overrides every one of them.
pub trait Journal: Send + std::any::Any {
    fn kind(&self) -> JournalKind;
    /// Whether changes are logged as records (else pages only get LSNs stamped).
    fn logs_changes(&self) -> bool {
        false
    }
    /// The LSN the next page change gets.
    fn next_page_lsn(&self) -> u64;
    /// Stamps a page change: its LSN. With a log, the change's record, appended next,
    /// gets this LSN.
    fn take_page_lsn(&mut self) -> u64;
    /// Appends the record `encode` writes, using the log's room as `room` says; returns
    /// its LSN (0 when nothing is logged).
    fn append(&mut self, _room: Room, _encode: &mut dyn FnMut(&mut Vec<u8>)) -> Result<u64> {
        Ok(0)
    }
    /// Transaction `tx` has ended (committed, or rolled back to its start): the room
    /// set aside for its rollback is free again.
    fn release_rollback_room(&mut self, _tx: u64) {}
    /// Sets `bytes` more of the log's room aside for transaction `tx`'s rollback (the
    /// page images its compensation records will need after a checkpoint).
    fn set_aside_for_rollback(&mut self, _tx: u64, _bytes: u64) {}
    /// The write-ahead rule and the commit point: makes the log durable up to `lsn`
    /// (pages are on `device` unless the log has a device of its own); returns when
    /// that is done.
    fn force(&mut self, _lsn: u64, _device: &mut dyn PageDevice, now: SimTime) -> Result<SimTime> {
        Ok(now)
    }
    /// Writes log pages ahead of the next force when more than `buffer_bytes` wait for
    /// it, so a long transaction's log does not pile up in memory; nobody waits for
    /// them until then.
    fn write_ahead(&mut self, _buffer_bytes: u64, _device: &mut dyn PageDevice, _now: SimTime) -> Result<()> {
        Ok(())
    }
    /// The LSN the next log record gets (0 without a log).
    fn next_lsn(&self) -> u64;
    /// Everything below this LSN is durable (0 without a log).
    fn durable_lsn(&self) -> u64;
    /// When the log last became durable up to `durable_lsn`.
    fn durable_at(&self) -> SimTime;
    /// The truncation point (0 without a log).
    fn start_lsn(&self) -> u64 {
        0
    }
    /// Share of the log's capacity in use (a checkpoint is due when it grows).
    fn used_share(&self) -> f64 {
        0.0
    }
    /// Moves the truncation point forward to `lsn`.
    fn truncate(&mut self, _lsn: u64) {}
    fn counters(&self) -> Option<LogCounters> {
        None
    }
    /// Restart: reads the log from `start` and returns the records recovery redoes and
    /// undoes (none without a log), and when the reads ended.
    fn recover(
        &mut self,
        _device: &mut dyn PageDevice,
        _start: u64,
        now: SimTime,
    ) -> Result<(Vec<LoggedRecord>, SimTime)> {
        Ok((Vec::new(), now))
    }
    /// The log's own device, if it has one (taken out at close or crash).
    fn take_external(&mut self) -> Option<Box<dyn PageDevice>> {
        None
    }
}

/// Which of the log's room a record may use. Every logged update of an open transaction
/// sets room aside for the compensation record that would undo it, so a rollback always
/// fits: once the log is full, new updates are refused, not the rollback that must
/// follow them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Room {
    /// Leaves the room set aside for rollbacks free (and a few pages more).
    Ordinary,
    /// An update transaction `tx` may roll back, with `before_bytes` of before images:
    /// as `Ordinary`, and sets room aside for its compensation.
    Update { tx: u64, before_bytes: u64 },
    /// A checkpoint (what lets the log be cut back): may use the spare pages, not the
    /// room set aside for rollbacks.
    Checkpoint,
    /// A compensation record or the end of a rollback: may use the room set aside.
    Rollback,
}

/// Room set aside for the compensation of an update record of `len` bytes with
/// `before_bytes` of before images: the CLR carries those as its after images and no
/// before images of its own, so it is the update without them plus its `undo_next`
/// (and a margin).
fn compensation_room(len: u64, before_bytes: u64) -> u64 {
    len.saturating_sub(before_bytes) + 16
}

/// Log pages ordinary records leave free beyond the room set aside for rollbacks: for
/// the end records of rollbacks and for checkpoints, which cut the log back.
const SPARE_PAGES: u64 = 16;

/// The device the log's pages are on: its own, or the database's.
fn log_device<'a>(
    external: &'a mut Option<Box<dyn PageDevice>>,
    device: &'a mut dyn PageDevice,
) -> &'a mut dyn PageDevice {
    match external {
        Some(d) => d.as_mut(),
        None => device,
    }
}

/// The ARIES write-ahead log as a journal.
pub struct AriesJournal {
    log: Log,
    region: RegionId,
    /// The log's own device; `None`: a region of the database device.
    external: Option<Box<dyn PageDevice>>,
    /// Per open transaction, the log bytes set aside for its rollback, and their sum.
    rollback_room: BTreeMap<u64, u64>,
    rollback_total: u64,
}

impl AriesJournal {
    /// A journal over an empty log on `region` of `device` (the database device, or
    /// `external`'s when given).
    pub fn new(device: &dyn PageDevice, region: RegionId, external: Option<Box<dyn PageDevice>>) -> AriesJournal {
        let log = match &external {
            Some(d) => Log::create(d.as_ref(), region),
            None => Log::create(device, region),
        };
        AriesJournal { log, region, external, rollback_room: BTreeMap::new(), rollback_total: 0 }
    }
}

impl Journal for AriesJournal {
    fn kind(&self) -> JournalKind {
        JournalKind::Aries
    }
    fn logs_changes(&self) -> bool {
        true
    }
    fn next_page_lsn(&self) -> u64 {
        self.log.next_lsn()
    }
    fn take_page_lsn(&mut self) -> u64 {
        self.log.next_lsn()
    }
    fn append(&mut self, room: Room, encode: &mut dyn FnMut(&mut Vec<u8>)) -> Result<u64> {
        let kept = self.rollback_total + SPARE_PAGES * self.log.page_payload();
        match room {
            Room::Ordinary => self.log.append_encoded(encode, |_| kept),
            Room::Checkpoint => self.log.append_encoded(encode, |_| self.rollback_total),
            Room::Rollback => self.log.append_encoded(encode, |_| 0),
            Room::Update { tx, before_bytes } => {
                let lsn = self.log.append_encoded(encode, |len| kept + compensation_room(len, before_bytes))?;
                let room = compensation_room(self.log.next_lsn() - lsn, before_bytes);
                *self.rollback_room.entry(tx).or_default() += room;
                self.rollback_total += room;
                Ok(lsn)
            }
        }
    }
    fn release_rollback_room(&mut self, tx: u64) {
        if let Some(room) = self.rollback_room.remove(&tx) {
            self.rollback_total -= room;
        }
    }
    fn set_aside_for_rollback(&mut self, tx: u64, bytes: u64) {
        *self.rollback_room.entry(tx).or_default() += bytes;
        self.rollback_total += bytes;
    }
    fn force(&mut self, lsn: u64, device: &mut dyn PageDevice, now: SimTime) -> Result<SimTime> {
        self.log.force(lsn, log_device(&mut self.external, device), now)
    }
    fn write_ahead(&mut self, buffer_bytes: u64, device: &mut dyn PageDevice, now: SimTime) -> Result<()> {
        self.log.write_ahead(buffer_bytes, log_device(&mut self.external, device), now)
    }
    fn next_lsn(&self) -> u64 {
        self.log.next_lsn()
    }
    fn durable_lsn(&self) -> u64 {
        self.log.durable_lsn()
    }
    fn durable_at(&self) -> SimTime {
        self.log.durable_at()
    }
    fn start_lsn(&self) -> u64 {
        self.log.start_lsn()
    }
    fn used_share(&self) -> f64 {
        self.log.used_share()
    }
    fn truncate(&mut self, lsn: u64) {
        self.log.truncate(lsn);
    }
    fn counters(&self) -> Option<LogCounters> {
        Some(self.log.counters())
    }
    fn recover(
        &mut self,
        device: &mut dyn PageDevice,
        start: u64,
        now: SimTime,
    ) -> Result<(Vec<LoggedRecord>, SimTime)> {
        let (log, records, done) = Log::open(log_device(&mut self.external, device), self.region, start, now)?;
        self.log = log;
        Ok((records, done))
    }
    fn take_external(&mut self) -> Option<Box<dyn PageDevice>> {
        self.external.take()
    }
}

/// No log: page LSNs from a counter, nothing to force or recover.
pub struct NoJournal {
    next_page_lsn: u64,
}

impl NoJournal {
    /// Page LSNs continue from `next_page_lsn` (kept in the catalog).
    pub fn new(next_page_lsn: u64) -> NoJournal {
        NoJournal { next_page_lsn }
    }
}

impl Journal for NoJournal {
    fn kind(&self) -> JournalKind {
        JournalKind::None
    }
    fn next_page_lsn(&self) -> u64 {
        self.next_page_lsn
    }
    fn take_page_lsn(&mut self) -> u64 {
        self.next_page_lsn += 1;
        self.next_page_lsn - 1
    }
    fn next_lsn(&self) -> u64 {
        0
    }
    fn durable_lsn(&self) -> u64 {
        0
    }
    fn durable_at(&self) -> SimTime {
        0
    }
}

impl dyn Journal + '_ {
    /// Appends `record` (ordinary room); returns its LSN (0 when nothing is logged).
    pub fn record(&mut self, record: &crate::logrec::Record) -> Result<u64> {
        self.record_in(Room::Ordinary, record)
    }

    /// Appends `record` using the log's room as `room` says.
    pub fn record_in(&mut self, room: Room, record: &crate::logrec::Record) -> Result<u64> {
        self.append(room, &mut |out| record.encode(out))
    }
}
