//! The `Database`: create or open one on a page device, the Rust API (begin/commit,
//! insert, get, update, delete, range scans) and the row and index operations under
//! it. Statements (`Database::execute`) are in the child module `exec`, transactions
//! in `txn`, the `nolgn` journal's transaction groups in `nolgn_group`; restart is in
//! `recovery.rs`.
//!
//! Every table is a heap file; its primary key, if any, is a unique B+-tree index named
//! `<table>_pkey`, and every index maps its key (plus the RID when not unique) to the
//! row's RID. Each change stamps the pages it touches with a fresh LSN from the
//! database's [`Journal`], which also decides when a commit is durable.
//!
//! The database names no concrete device: it works on a [`PageDevice`] (NoFTL regions,
//! an FTL volume). [`Database::create`] and [`Database::open`] are the NoFTL
//! conveniences over a raw [`nand::Device`].
//!
//! Time is simulated: the pool's clock is the time of the operation in progress; I/O
//! on the critical path advances it. Callers that model terminals set it with
//! [`Database::set_now`] before an operation and read it back after.

use crate::btree;
use crate::buffer::{BufferPool, CleanerPolicy, PoolStats, Replacement};
use crate::catalog::{Catalog, RegionEntry, Tablespace};
use crate::delta::IpaScheme;
use crate::error::{Error, Result};
use crate::heap::{self, HeapSpace, Rid};
use crate::journal::{AriesJournal, Journal, JournalKind, NoJournal};
use crate::nolgn::NolgnJournal;
use crate::space::{ObjectSpace, RegionPages};
use crate::store::{ObjectCounters, PageStore};
use crate::types::{self, Column, ColumnType, Value};
use flash::{Flash, IpaMode, PageDevice, RegionId, RegionSpec};
use nand::{Device, SimTime};
pub use txn::Transaction;
use txn::{Active, Dropped};

mod exec;
mod nolgn_group;
pub mod txn;

/// How big the buffer pool is.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum BufferSize {
    Pages(usize),
    /// A share of the pages the database holds when it is opened (at least 64 pages).
    Share(f64),
}

impl BufferSize {
    fn frames(self, catalog: &Catalog) -> usize {
        match self {
            BufferSize::Pages(n) => n,
            BufferSize::Share(s) => ((catalog.pages_in_use() as f64 * s) as usize).max(64),
        }
    }
}

/// Engine settings that are not stored with the database.
#[derive(Clone, Debug)]
pub struct DbOptions {
    /// DB page size for a new database (4, 8 or 16 KiB); an existing one keeps its own.
    pub page_bytes: usize,
    pub buffer: BufferSize,
    pub replacement: Replacement,
    pub cleaner: CleanerPolicy,
    /// Extent size of the `system` tablespace, in bytes.
    pub system_extent_bytes: u64,
    /// The journal of a new database: an ARIES write-ahead log in its own region,
    /// none (a commit writes its pages and syncs), or nolgn (no log, commits are
    /// NoLgn-FTL transactions; the device must have them). An existing database keeps
    /// its own.
    pub journal: JournalKind,
    /// Chips of a new database's log region. Every commit programs a log page, so
    /// one chip caps commits at about one per page-program time; more chips let
    /// commits of different terminals program in parallel.
    pub log_chips: u32,
    /// Take a checkpoint when this share of the log region is in use.
    pub checkpoint_log_share: f64,
    /// Group commit: commits within this many simulated nanoseconds share one log
    /// flush (0: every commit forces the log).
    pub group_commit_ns: SimTime,
    /// Log bytes a transaction may leave unforced before their full pages are written
    /// ahead of its commit (the log buffer: bounds a long transaction's log in memory).
    pub log_buffer_bytes: u64,
    /// How heap pages make room for inserts and for updates that change a row's length.
    pub heap_space: HeapSpace,
}

impl Default for DbOptions {
    fn default() -> Self {
        DbOptions {
            page_bytes: 4096,
            buffer: BufferSize::Pages(1024),
            replacement: Replacement::Clock,
            cleaner: CleanerPolicy::EAGER,
            system_extent_bytes: 128 << 10,
            journal: JournalKind::Aries,
            log_chips: 1,
            checkpoint_log_share: 0.3,
            group_commit_ns: 0,
            log_buffer_bytes: 4 << 20,
            heap_space: HeapSpace::Packed,
        }
    }
}

/// What a statement returns.
#[derive(Clone, Debug, PartialEq)]
pub enum QueryResult {
    Rows {
        columns: Vec<String>,
        rows: Vec<Vec<Value>>,
    },
    /// Rows inserted, updated or deleted.
    Count {
        verb: &'static str,
        rows: usize,
    },
    Done(String),
}

/// A table handle; valid until the next `DROP`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TableId(pub(crate) usize);

/// Per-object I/O, named.
#[derive(Clone, Debug)]
pub struct ObjectStats {
    pub name: String,
    pub kind: &'static str,
    pub region: String,
    pub scheme: IpaScheme,
    pub counters: ObjectCounters,
}

pub struct Database {
    pub(crate) pool: BufferPool,
    /// Owned here, lent to the pool for each call that may write a page.
    pub(crate) journal: Box<dyn Journal>,
    pub(crate) catalog: Catalog,
    pub(crate) regions: Vec<RegionPages>,
    pub(crate) options: DbOptions,
    /// Tells this database's transactions from another's.
    pub(crate) instance: u64,
    pub(crate) next_tx: u64,
    pub(crate) active: Active,
    /// Transactions dropped while open, to roll back at the next call.
    pub(crate) dropped: Dropped,
    /// The transaction statements run in (`BEGIN` opened it).
    pub(crate) sql_tx: exec::SqlTx,
    /// When the open commit group's log flush is due.
    pub(crate) group_deadline: Option<SimTime>,
    /// The log's end when flash last held everything with a checkpoint (after a
    /// checkpoint, or a restart that found nothing to do): a close at that same end with
    /// no dirty page has nothing to write, so a session that only read leaves the device
    /// (and its image file) untouched.
    pub(crate) clean_at_lsn: Option<u64>,
    /// Share of the log in use right after the last checkpoint (spaces out the
    /// checkpoints a long transaction takes).
    pub(crate) log_share_at_checkpoint: f64,
    /// Scratch for a row's bytes and for a key's (no allocation per operation).
    row: Vec<u8>,
    key: Vec<u8>,
    /// Finished transactions' undo buffers, kept for the next ones (no regrowth): one
    /// per transaction that was open at once.
    pub(crate) spare_undo: Vec<crate::oplog::UndoLog>,
}

/// Blocks per chip a device of `chips` chips like `g` needs so that a log formatted
/// over all of it ([`Database::create_with_external_log`]: one region with
/// the default spec) has a ring of at least `ring_bytes`: the ring takes half of the
/// region's logical pages, which are its pages less the over-provisioning, and that
/// must leave GC its spare blocks.
pub fn external_log_blocks_per_chip(g: &nand::Geometry, chips: u32, ring_bytes: u64) -> u64 {
    let spec = flash::RegionSpec::new(LOG, flash::IpaMode::None);
    let logical_share = 1.0 - spec.over_provisioning;
    let block_bytes = f64::from(g.pages_per_block) * f64::from(g.page_bytes);
    let blocks =
        (ring_bytes as f64 / crate::log::RING_SHARE / logical_share / block_bytes / f64::from(chips.max(1))).ceil();
    // The floor of the logical pages may cost a page: one block more covers it.
    let spare = f64::from(spec.gc.foreground_free_blocks + 1) / spec.over_provisioning;
    (blocks + 1.0).max(spare.ceil() + 1.0) as u64
}

/// Names of the regions every database has: the catalog's and the log's.
pub const SYSTEM: &str = "system";
pub const LOG: &str = "log";

/// Whether a region holds tables and indexes (not the `system` or `log` region).
pub fn is_data_region(name: &str) -> bool {
    name != SYSTEM && name != LOG
}

/// The pool and the journal of a database, split from its other fields.
macro_rules! pages {
    ($db:expr) => {
        $crate::buffer::Pages { pool: &mut $db.pool, journal: &mut *$db.journal }
    };
}
pub(crate) use pages;

/// The regions a new database starts with: `system` and, with a log in it, `log`.
fn initial_regions(options: &DbOptions, log_in_device: bool) -> Vec<RegionSpec> {
    let chips = |name: &str, n: u32| RegionSpec { max_chips: Some(n), ..RegionSpec::new(name, IpaMode::None) };
    let mut specs = vec![chips(SYSTEM, 1)];
    if log_in_device {
        specs.push(chips(LOG, options.log_chips.max(1)));
    }
    specs
}

impl Database {
    /// Formats `device` as NoFTL regions, a one-chip `system` region (catalog and the
    /// `system` tablespace) and, with an ARIES journal, a `log` region of
    /// `options.log_chips` chips, and returns an empty database.
    pub fn create(device: Device, options: DbOptions) -> Result<Database> {
        let specs = initial_regions(&options, options.journal == JournalKind::Aries);
        let flash = Flash::format(device, specs)?;
        Database::create_on_regions(Box::new(flash), None, options)
    }

    /// Like [`Database::create`], with the write-ahead log on a device of its own (one
    /// region over all of it): unmetered, in that its I/O is neither timed on nor
    /// counted with the database device.
    pub fn create_with_external_log(device: Device, log_device: Device, options: DbOptions) -> Result<Database> {
        let flash = Flash::format(device, initial_regions(&options, false))?;
        Database::create_on_with_external_log(Box::new(flash), log_device, options)
    }

    /// Like [`Database::create_on`], with the write-ahead log on a device of its own (as
    /// [`Database::create_with_external_log`]): a device without regions gets `system`
    /// added; a device that has regions must have exactly that one.
    pub fn create_on_with_external_log(
        mut device: Box<dyn PageDevice>,
        log_device: Device,
        options: DbOptions,
    ) -> Result<Database> {
        if options.journal != JournalKind::Aries {
            return Err(Error::Invalid("an external log needs the aries journal".into()));
        }
        if device.region_count() == 0 {
            for spec in initial_regions(&options, false) {
                device.add_region(spec, 0)?;
            }
        }
        let log = Flash::format(log_device, vec![RegionSpec::new(LOG, IpaMode::None)])?;
        Database::create_on_regions(device, Some(Box::new(log)), options)
    }

    /// Creates an empty database on any page device. A device without regions gets
    /// `system` and (ARIES) `log` added, sized by the device's own rules; a device
    /// that has regions must have exactly those, in that order.
    pub fn create_on(mut device: Box<dyn PageDevice>, options: DbOptions) -> Result<Database> {
        let specs = initial_regions(&options, options.journal == JournalKind::Aries);
        if device.region_count() == 0 {
            for spec in specs.iter().cloned() {
                device.add_region(spec, 0)?;
            }
        }
        Database::create_on_regions(device, None, options)
    }

    fn create_on_regions(
        device: Box<dyn PageDevice>,
        external_log: Option<Box<dyn PageDevice>>,
        options: DbOptions,
    ) -> Result<Database> {
        let log_in_device = options.journal == JournalKind::Aries && external_log.is_none();
        let names: Vec<&str> = (0..device.region_count()).map(|i| device.region_name(RegionId(i))).collect();
        let wanted: Vec<&str> = if log_in_device { vec![SYSTEM, LOG] } else { vec![SYSTEM] };
        if names != wanted {
            return Err(Error::Invalid(format!(
                "a new database needs the regions {wanted:?} on its device, which has {names:?}"
            )));
        }
        let mut store = PageStore::new(device, options.page_bytes)?;
        let mut catalog = Catalog::new(options.page_bytes);
        catalog.regions.push(RegionEntry { name: SYSTEM.into(), scheme: IpaScheme::NONE });
        if log_in_device {
            catalog.regions.push(RegionEntry { name: LOG.into(), scheme: IpaScheme::NONE });
            catalog.log_region = Some(1);
        }
        catalog.log_external = external_log.is_some();
        let extent_pages = extent_pages(options.system_extent_bytes, options.page_bytes)?;
        catalog.tablespaces.push(Tablespace { name: SYSTEM.into(), region: 0, extent_pages });
        let journal: Box<dyn Journal> = match (options.journal, catalog.log_region) {
            (JournalKind::Aries, Some(region)) => {
                Box::new(AriesJournal::new(store.device(), RegionId(region as usize), None))
            }
            (JournalKind::Aries, None) => Box::new(AriesJournal::new(store.device(), RegionId(0), external_log)),
            (JournalKind::None, _) => Box::new(NoJournal::new(catalog.next_lsn)),
            (JournalKind::Nolgn, _) => {
                store.device_mut().start_transactions()?;
                catalog.nolgn = true;
                Box::new(NolgnJournal::new(catalog.next_lsn))
            }
        };
        let mut db = Database::assemble(store, journal, catalog, options)?;
        db.take_checkpoint()?;
        Ok(db)
    }

    /// Opens a NoFTL database: rebuilds the regions by scan, reads the catalog, and
    /// restarts from the log (redo, undo of unfinished transactions, a checkpoint).
    pub fn open(device: Device, options: DbOptions) -> Result<Database> {
        Database::open_or_keep(device, options).map_err(|failed| failed.0)
    }

    /// Opens a database on any page device (its regions already rebuilt), as
    /// [`Database::open`] does from the catalog on.
    pub fn open_on(device: Box<dyn PageDevice>, options: DbOptions) -> Result<Database> {
        let mut db = Database::open_without_restart(device, 0, None, options)?;
        if db.catalog.log_external {
            return Err(Error::Invalid(
                "this database keeps its log on an external device: open it with open_with_external_log".into(),
            ));
        }
        db.restart()?;
        Ok(db)
    }

    /// Opens a database whose log is on an external device.
    pub fn open_with_external_log(device: Device, log_device: Device, options: DbOptions) -> Result<Database> {
        let (flash, done) = Flash::open(device, 0)?;
        let log = Flash::open(log_device, done)?.0;
        let mut db = Database::open_without_restart(Box::new(flash), done, Some(Box::new(log)), options)?;
        db.restart()?;
        Ok(db)
    }

    /// [`Database::open`] that hands the device back when the restart fails (a power cut
    /// during recovery), so it can be powered on and opened again.
    pub fn open_or_keep(
        device: Device,
        options: DbOptions,
    ) -> std::result::Result<Database, Box<(Error, Option<Device>)>> {
        let (flash, done) = Flash::open_or_keep(device, 0).map_err(|failed| {
            let (e, device) = *failed;
            Box::new((Error::from(e), Some(device)))
        })?;
        Database::open_on_or_keep(Box::new(flash), done, options)
    }

    /// [`Database::open_on`] that hands the device back when the restart fails (a
    /// power cut during recovery); `done` is when the device's own open ended.
    pub fn open_on_or_keep(
        device: Box<dyn PageDevice>,
        done: SimTime,
        options: DbOptions,
    ) -> std::result::Result<Database, Box<(Error, Option<Device>)>> {
        let mut db = Database::open_without_restart(device, done, None, options).map_err(|e| Box::new((e, None)))?;
        if db.catalog.log_external {
            let e = Error::Invalid(
                "this database keeps its log on an external device: open it with open_with_external_log".into(),
            );
            return Err(Box::new((e, Some(db.crash()))));
        }
        match db.restart() {
            Ok(()) => Ok(db),
            Err(e) => Err(Box::new((e, Some(db.crash())))),
        }
    }

    /// Reads the catalog and sets up the pool and the journal the database keeps;
    /// `done` is when the device's own open ended.
    fn open_without_restart(
        mut device: Box<dyn PageDevice>,
        done: SimTime,
        external_log: Option<Box<dyn PageDevice>>,
        options: DbOptions,
    ) -> Result<Database> {
        PageStore::check_keeps_data(device.as_ref())?;
        let catalog = Catalog::load(device.as_mut())?;
        let mut store = PageStore::new(device, catalog.page_bytes)?;
        for (i, r) in catalog.regions.iter().enumerate() {
            store.set_scheme(RegionId(i), r.scheme)?;
        }
        for (id, _, layouts) in catalog.objects() {
            store.set_layouts(id, layouts);
        }
        let journal: Box<dyn Journal> = match (catalog.log_region, catalog.log_external, external_log) {
            (Some(region), false, None) => Box::new(AriesJournal::new(store.device(), RegionId(region as usize), None)),
            (None, true, Some(log)) => Box::new(AriesJournal::new(store.device(), RegionId(0), Some(log))),
            (None, false, None) if catalog.nolgn => {
                store.device_mut().start_transactions()?;
                Box::new(NolgnJournal::new(catalog.next_lsn))
            }
            (None, false, None) => Box::new(NoJournal::new(catalog.next_lsn)),
            (_, true, None) => {
                return Err(Error::Invalid(
                    "this database keeps its log on an external device: open it with open_with_external_log".into(),
                ))
            }
            (_, _, Some(_)) => {
                return Err(Error::Invalid("this database keeps its log in its own log region, not externally".into()))
            }
        };
        let mut db = Database::assemble(store, journal, catalog, options)?;
        db.pool.set_now(done);
        Ok(db)
    }

    fn assemble(store: PageStore, journal: Box<dyn Journal>, catalog: Catalog, options: DbOptions) -> Result<Database> {
        let regions = region_pages(&store, &catalog)?;
        let frames = options.buffer.frames(&catalog);
        let images = crate::journal::needs_page_images(journal.kind(), store.device(), catalog.page_bytes)?;
        let mut pool = BufferPool::new(store, frames, options.replacement, options.cleaner);
        pool.set_image_epoch(images.then_some(catalog.checkpoint_lsn));
        Ok(Database {
            pool,
            journal,
            catalog,
            regions,
            options,
            instance: txn::next_instance(),
            next_tx: 1,
            active: Active::new(),
            dropped: Dropped::default(),
            sql_tx: Default::default(),
            group_deadline: None,
            clean_at_lsn: None,
            log_share_at_checkpoint: 0.0,
            row: Vec::new(),
            key: Vec::new(),
            spare_undo: Default::default(),
        })
    }

    pub(crate) fn save_catalog(&mut self) -> Result<()> {
        // On NoLgn-FTL the write joins the device's transaction as a change of its own.
        self.nolgn_join(0);
        let now = self.pool.now();
        self.catalog.save(self.pool.store_mut().device_mut(), now)
    }

    /// Checkpoints, makes the device durable (an image file is written) and returns it.
    pub fn close(self) -> Result<Device> {
        Ok(self.close_with_log()?.0)
    }

    /// [`Database::close`], also returning an external log device (made durable too).
    pub fn close_with_log(self) -> Result<(Device, Option<Device>)> {
        let (device, log) = self.close_on()?;
        Ok((device.into_device(), log.map(|l| l.into_device())))
    }

    /// [`Database::close`] on any page device: returns it (and an external log's).
    #[allow(clippy::type_complexity)]
    pub fn close_on(mut self) -> Result<(Box<dyn PageDevice>, Option<Box<dyn PageDevice>>)> {
        self.refuse_after_file_failure()?;
        let clean = self.journal.logs_changes()
            && self.clean_at_lsn == Some(self.journal.next_lsn())
            && self.pool.dirty_frames() == 0;
        if !clean {
            self.checkpoint()?;
        }
        let log = match self.journal.take_external() {
            Some(mut device) => {
                device.flush()?;
                Some(device)
            }
            None => None,
        };
        let mut device = self.pool.into_store().into_device();
        device.flush()?;
        Ok((device, log))
    }

    /// Simulates a crash: returns the device as it is, dropping the buffer pool, the
    /// unwritten log tail and every transaction in progress.
    pub fn crash(self) -> Device {
        self.crash_with_log().0
    }

    /// [`Database::crash`], also returning an external log device.
    pub fn crash_with_log(mut self) -> (Device, Option<Device>) {
        let log = self.journal.take_external().map(|l| l.into_device());
        (self.pool.into_store().into_device().into_device(), log)
    }

    /// The log's counters (`None` without a log).
    pub fn log_counters(&self) -> Option<crate::log::LogCounters> {
        self.journal.counters()
    }

    /// The log's truncation point and durable end (`None` without a log).
    pub fn log_lsns(&self) -> Option<(u64, u64)> {
        self.journal.logs_changes().then(|| (self.journal.start_lsn(), self.journal.durable_lsn()))
    }

    /// Which journal the database keeps.
    pub fn journal_kind(&self) -> JournalKind {
        self.journal.kind()
    }

    pub fn now(&self) -> SimTime {
        self.pool.now()
    }
    pub fn set_now(&mut self, now: SimTime) {
        self.pool.set_now(now);
    }
    pub fn catalog(&self) -> &Catalog {
        &self.catalog
    }
    /// Writes the DB pages of the data regions that no object holds once, with zeros,
    /// in page order, leaving the last `keep_free(region)` free pages of each region
    /// unwritten: the device then holds data as one in use does, not as a freshly
    /// formatted one whose free space is erased and costs GC nothing. An object that
    /// takes such a page later formats it in the buffer without reading it. The clock
    /// moves on to the last write's end. Returns the DB pages written.
    pub fn fill_free_pages(&mut self, keep_free: &dyn Fn(RegionId) -> u32) -> Result<u64> {
        let device = self.pool.store().device();
        let per_db_page = (self.catalog.page_bytes / device.page_bytes()) as u32;
        let data: Vec<usize> =
            (0..self.regions.len()).filter(|&r| is_data_region(device.region_name(RegionId(r)))).collect();
        let filler = vec![0u8; self.catalog.page_bytes];
        let (start, mut end, mut written) = (self.now(), self.now(), 0);
        for r in data {
            let free: Vec<u32> = self.regions[r].free_pages().collect();
            let fill = free.len().saturating_sub(keep_free(RegionId(r)) as usize);
            for &page in &free[..fill] {
                let device = self.pool.store_mut().device_mut();
                end = end.max(device.write_pages(RegionId(r), page * per_db_page, &filler, start)?.end_ns);
                written += 1;
            }
        }
        self.set_now(end);
        Ok(written)
    }
    /// The page device the database lives on.
    pub fn page_device(&self) -> &dyn PageDevice {
        self.pool.store().device()
    }
    pub fn pool_stats(&self) -> PoolStats {
        self.pool.stats()
    }
    pub fn io_latencies_mut(&mut self) -> &mut crate::latency::IoLatencies {
        self.pool.io_latencies_mut()
    }
    pub fn buffer_frames(&self) -> usize {
        self.pool.frames()
    }
    /// Bytes of the pages the buffer pool holds now.
    pub fn buffer_cached_bytes(&self) -> u64 {
        (self.pool.cached_pages() * self.pool.store().page_bytes()) as u64
    }

    /// Resizes the buffer pool to a share of the pages the database holds now (the
    /// driver does this after loading, as the paper sizes buffers).
    pub fn set_buffer(&mut self, size: BufferSize) -> Result<()> {
        self.options.buffer = size;
        self.pool.resize(size.frames(&self.catalog), &mut *self.journal)
    }

    /// Grows the buffer pool to `size` of the pages the database holds now, keeping
    /// every cached page (for a database that grew since the pool was sized, as the
    /// precondition's aging grows it); a pool that large already stays as it is.
    pub fn grow_buffer(&mut self, size: BufferSize) {
        self.options.buffer = size;
        self.pool.grow(size.frames(&self.catalog));
    }

    /// Height and page count of an index.
    pub fn index_shape(&mut self, name: &str) -> Result<(u32, usize)> {
        let def = &self.catalog.indexes[self.catalog.index(name)?];
        let height = btree::height(&mut pages!(self), &def.space, def.root)?;
        let pages = btree::pages(&mut pages!(self), &def.space, def.root)?.len();
        Ok((height, pages))
    }

    /// I/O per table and index.
    pub fn object_stats(&self) -> Vec<ObjectStats> {
        let counters = self.pool.store().counters();
        let region_of = |space: &ObjectSpace| &self.catalog.regions[space.region as usize];
        let tables = self.catalog.tables.iter().map(|t| (t.name.clone(), "table"));
        let indexes = self.catalog.indexes.iter().map(|i| (i.name.clone(), "index"));
        tables
            .chain(indexes)
            .zip(self.catalog.objects())
            .map(|((name, kind), (id, space, layouts))| ObjectStats {
                name,
                kind,
                region: region_of(space).name.clone(),
                scheme: self.catalog.scheme_of(space, layouts),
                counters: counters.get(&id).copied().unwrap_or_default(),
            })
            .collect()
    }

    // ---- the Rust API ----------------------------------------------------------------

    pub fn table_id(&self, name: &str) -> Result<TableId> {
        self.catalog.table(name).map(TableId)
    }

    pub fn columns(&self, t: TableId) -> &[Column] {
        &self.catalog.tables[t.0].columns
    }

    /// Inserts a row (values in column order); returns its RID.
    pub fn insert(&mut self, tx: &Transaction, t: TableId, values: &[Value]) -> Result<Rid> {
        self.changing(tx, |db, id| {
            let values = db.coerce_row(t, values)?;
            db.insert_row(id, t.0, &values)
        })
    }

    /// The row with primary key `key`.
    pub fn get(&mut self, tx: &Transaction, t: TableId, key: &[Value]) -> Result<Option<Vec<Value>>> {
        self.enter(tx)?;
        let rid = self.lookup_pk(t.0, key)?;
        match rid {
            Some(rid) => self.read_row(t.0, rid),
            None => Ok(None),
        }
    }

    /// Columns `columns` (in that order) of the row with primary key `key`; only they are
    /// decoded.
    pub fn get_columns(
        &mut self,
        tx: &Transaction,
        t: TableId,
        key: &[Value],
        columns: &[usize],
    ) -> Result<Option<Vec<Value>>> {
        self.enter(tx)?;
        self.check_columns(t.0, columns)?;
        let Some(rid) = self.lookup_pk(t.0, key)? else { return Ok(None) };
        let def = &self.catalog.tables[t.0];
        let row = heap::get(&mut pages!(self), &def.space, rid, |b| types::decode_columns(&def.columns, b, columns))?;
        row.transpose().map_err(|m| corrupt_row(def, rid, m))
    }

    fn check_columns(&self, t: usize, columns: &[usize]) -> Result<()> {
        let def = &self.catalog.tables[t];
        match columns.iter().find(|&&c| c >= def.columns.len()) {
            Some(c) => Err(Error::Invalid(format!("table {} has no column {c}", def.name))),
            None => Ok(()),
        }
    }

    /// Sets columns of the row with primary key `key`; `false` if there is none.
    pub fn update(&mut self, tx: &Transaction, t: TableId, key: &[Value], sets: &[(usize, Value)]) -> Result<bool> {
        Ok(self.update_columns(tx, t, key, &[], |_| Ok(sets))?.is_some())
    }

    /// Reads the columns `read` of the row with primary key `key` (only they are
    /// decoded) and sets the columns `change` computes from their values, given in
    /// `read`'s order; returns the `read` columns after the change, or `None` if there is
    /// no such row.
    ///
    /// Sets of fixed-width columns that no index covers change only their bytes in the
    /// row where it lies (the row is not decoded and encoded again); any other set takes
    /// the whole-row way of [`Database::update_with`].
    pub fn update_columns<S: AsRef<[(usize, Value)]>>(
        &mut self,
        tx: &Transaction,
        t: TableId,
        key: &[Value],
        read: &[usize],
        change: impl FnOnce(&[Value]) -> Result<S>,
    ) -> Result<Option<Vec<Value>>> {
        self.changing(tx, |db, id| {
            db.check_columns(t.0, read)?;
            let Some(rid) = db.lookup_pk(t.0, key)? else { return Ok(None) };
            let mut tuple = std::mem::take(&mut db.row);
            let result = db.update_fields(id, t.0, rid, read, &mut tuple, change);
            db.row = tuple;
            result
        })
    }

    /// [`Database::update_columns`] on row `rid`, its bytes read into `tuple`.
    fn update_fields<S: AsRef<[(usize, Value)]>>(
        &mut self,
        tx: u64,
        t: usize,
        rid: Rid,
        read: &[usize],
        tuple: &mut Vec<u8>,
        change: impl FnOnce(&[Value]) -> Result<S>,
    ) -> Result<Option<Vec<Value>>> {
        let def = &self.catalog.tables[t];
        let found = heap::get(&mut pages!(self), &def.space, rid, |b| {
            tuple.clear();
            tuple.extend_from_slice(b);
            types::decode_columns(&def.columns, b, read)
        })?;
        let Some(values) = found else { return Ok(None) };
        let mut values = values.map_err(|m| corrupt_row(def, rid, m))?;
        let sets = change(&values)?;
        let sets = sets.as_ref();
        let def = &self.catalog.tables[t];
        let in_place = sets.iter().all(|&(c, _)| types::fixed_range(&def.columns, c).is_some() && !self.indexed(t, c));
        if !in_place {
            let mut row = types::decode_row(&def.columns, tuple).map_err(|m| corrupt_row(def, rid, m))?;
            let mut replaced = Vec::with_capacity(sets.len());
            for (c, v) in sets {
                let col = def.columns.get(*c).ok_or_else(|| Error::Invalid(format!("no column {c}")))?;
                replaced.push((*c, std::mem::replace(&mut row[*c], coerce(col, v)?)));
            }
            self.replace_row(tx, t, rid, &replaced, &row)?;
            return Ok(Some(read.iter().map(|&c| row[c].clone()).collect()));
        }
        for (c, v) in sets {
            let col = &def.columns[*c];
            let v = coerce(col, v)?;
            let (byte, bit) = (c / 8, 1u8 << (c % 8));
            if v == Value::Null {
                tuple[byte] |= bit;
            } else {
                tuple[byte] &= !bit;
            }
            // `decode_columns` checked that the row holds every fixed-width column.
            if let Some(range) = types::fixed_range(&def.columns, *c) {
                types::encode_fixed(col.ty, &v, &mut tuple[range]);
            }
            for (k, _) in read.iter().enumerate().filter(|(_, &r)| r == *c) {
                values[k] = v.clone();
            }
        }
        let space = self.options.heap_space;
        let moved = self.with_object(tx, Object::Table(t), |a| heap::update(a, rid, tuple, space))?;
        let new_rid = moved.ok_or_else(|| Error::Corrupt(format!("row {rid} vanished during an update")))?;
        if new_rid != rid {
            let def = &self.catalog.tables[t];
            let row = types::decode_row(&def.columns, tuple).map_err(|m| corrupt_row(def, new_rid, m))?;
            self.reindex(tx, t, rid, new_rid, &[], &row)?;
        }
        Ok(Some(values))
    }

    /// Whether an index of table `t` covers column `c`.
    fn indexed(&self, t: usize, c: usize) -> bool {
        let table = &self.catalog.tables[t].name;
        self.catalog.indexes.iter().any(|i| i.columns.contains(&c) && i.table.eq_ignore_ascii_case(table))
    }

    /// Reads the row with primary key `key` and sets the columns `change` computes from
    /// it (one lookup for a read-modify-write); returns the updated row, or `None` if
    /// there is none.
    pub fn update_with(
        &mut self,
        tx: &Transaction,
        t: TableId,
        key: &[Value],
        change: impl FnOnce(&[Value]) -> Result<Vec<(usize, Value)>>,
    ) -> Result<Option<Vec<Value>>> {
        self.changing(tx, |db, id| {
            let Some(rid) = db.lookup_pk(t.0, key)? else { return Ok(None) };
            let Some(mut row) = db.read_row(t.0, rid)? else { return Ok(None) };
            let sets = change(&row)?;
            let mut replaced = Vec::with_capacity(sets.len());
            for (c, v) in sets {
                let col =
                    db.catalog.tables[t.0].columns.get(c).ok_or_else(|| Error::Invalid(format!("no column {c}")))?;
                replaced.push((c, std::mem::replace(&mut row[c], coerce(col, &v)?)));
            }
            db.replace_row(id, t.0, rid, &replaced, &row)?;
            Ok(Some(row))
        })
    }

    /// Adds `delta` to a numeric column of the row with primary key `key`.
    pub fn add(&mut self, tx: &Transaction, t: TableId, key: &[Value], column: usize, delta: &Value) -> Result<bool> {
        let sum = |old: &Value| old.add(delta).ok_or_else(|| Error::Invalid(format!("cannot add {delta} to {old}")));
        Ok(self.update_columns(tx, t, key, &[column], |row| Ok([(column, sum(&row[0])?)]))?.is_some())
    }

    /// Deletes the row with primary key `key`; `false` if there is none.
    pub fn delete(&mut self, tx: &Transaction, t: TableId, key: &[Value]) -> Result<bool> {
        self.changing(tx, |db, id| {
            let Some(rid) = db.lookup_pk(t.0, key)? else { return Ok(false) };
            let Some(old) = db.read_row(t.0, rid)? else { return Ok(false) };
            db.delete_row(id, t.0, rid, &old)?;
            Ok(true)
        })
    }

    /// Rows whose primary key lies in [`lo`, `hi`] (a prefix of the key columns bounds
    /// all rows starting with it), in key order.
    pub fn scan(&mut self, tx: &Transaction, t: TableId, lo: &[Value], hi: &[Value]) -> Result<Vec<Vec<Value>>> {
        self.enter(tx)?;
        let index = self.pk_index(t.0)?;
        self.scan_rows(t.0, index, lo, hi, usize::MAX)
    }

    /// Visits every row of table `t`, in storage order, decoding one at a time: a check
    /// or an export over a large table need not hold it in memory as [`Database::scan`]
    /// does.
    pub fn for_each_row(&mut self, tx: &Transaction, t: TableId, mut visit: impl FnMut(&[Value])) -> Result<()> {
        self.enter(tx)?;
        let table = &self.catalog.tables[t.0];
        let mut bad = None;
        heap::scan(&mut pages!(self), &table.space, |rid, bytes| match types::decode_row(&table.columns, bytes) {
            Ok(row) => {
                visit(&row);
                true
            }
            Err(m) => {
                bad = Some(corrupt_row(table, rid, m));
                false
            }
        })?;
        bad.map_or(Ok(()), Err)
    }

    /// Rows of table `t` whose key in its index `index` lies in [`lo`, `hi`] (bounds are
    /// prefixes of the index columns, as in [`Database::scan`]), in key order, at most
    /// `limit` of them.
    pub fn scan_index(
        &mut self,
        tx: &Transaction,
        t: TableId,
        index: &str,
        lo: &[Value],
        hi: &[Value],
        limit: usize,
    ) -> Result<Vec<Vec<Value>>> {
        self.enter(tx)?;
        let i = self.catalog.index(index)?;
        if !self.catalog.indexes[i].table.eq_ignore_ascii_case(&self.catalog.tables[t.0].name) {
            return Err(Error::Invalid(format!("index {index} is not on table {}", self.catalog.tables[t.0].name)));
        }
        self.scan_rows(t.0, i, lo, hi, limit)
    }

    fn scan_rows(
        &mut self,
        t: usize,
        index: usize,
        lo: &[Value],
        hi: &[Value],
        limit: usize,
    ) -> Result<Vec<Vec<Value>>> {
        let types = self.catalog.indexes[index].key_types(&self.catalog.tables[t]);
        let lo = self.coerce_key(&types, lo)?;
        let hi = self.coerce_key(&types, hi)?;
        let rids = self.index_range(index, &lo, &hi, limit)?;
        let mut out = Vec::with_capacity(rids.len());
        for rid in rids {
            out.extend(self.read_row(t, rid)?);
        }
        Ok(out)
    }

    // ---- rows and indexes --------------------------------------------------------------

    pub(crate) fn coerce_row(&self, t: TableId, values: &[Value]) -> Result<Vec<Value>> {
        let cols = &self.catalog.tables[t.0].columns;
        if values.len() != cols.len() {
            return Err(Error::Invalid(format!(
                "table {} has {} columns, {} values given",
                self.catalog.tables[t.0].name,
                cols.len(),
                values.len()
            )));
        }
        cols.iter().zip(values).map(|(c, v)| coerce(c, v)).collect()
    }

    fn index_key(&self, index: usize, t: usize, rid: Rid, row: &[Value]) -> Vec<u8> {
        let mut key = Vec::with_capacity(16);
        push_index_key(&self.catalog.indexes[index], &self.catalog.tables[t], rid, row, &mut key);
        key
    }

    pub(crate) fn index_insert(&mut self, tx: u64, index: usize, t: usize, rid: Rid, row: &[Value]) -> Result<()> {
        let key = self.index_key(index, t, rid, row);
        if !self.index_insert_key(tx, index, rid, &key)? {
            return Err(self.duplicate(index, row));
        }
        Ok(())
    }

    /// Inserts `key` → `rid` into index `index`; `false` if a unique index holds the key.
    pub(crate) fn index_insert_key(&mut self, tx: u64, index: usize, rid: Rid, key: &[u8]) -> Result<bool> {
        let root = self.catalog.indexes[index].root;
        self.with_object(tx, Object::Index(index), |a| btree::insert(a, root, key, &rid.encode()))
    }

    /// The error for a row whose key a unique index already holds.
    pub(crate) fn duplicate(&self, index: usize, row: &[Value]) -> Error {
        let def = &self.catalog.indexes[index];
        let shown: Vec<String> = def.columns.iter().map(|&c| crate::error::shorten(&row[c].to_string())).collect();
        Error::Duplicate { object: def.name.clone(), key: format!("({})", shown.join(", ")) }
    }

    fn index_delete(&mut self, tx: u64, index: usize, t: usize, rid: Rid, row: &[Value]) -> Result<()> {
        let key = self.index_key(index, t, rid, row);
        let root = self.catalog.indexes[index].root;
        if !self.with_object(tx, Object::Index(index), |a| btree::delete(a, root, &key))? {
            return Err(Error::Corrupt(format!(
                "index {} lacks an entry for RID {rid}",
                self.catalog.indexes[index].name
            )));
        }
        Ok(())
    }

    fn unique_conflict(&mut self, index: usize, t: usize, row: &[Value], except: Option<Rid>) -> Result<bool> {
        if !unique_key(&self.catalog.indexes[index], row) {
            return Ok(false);
        }
        let key = self.index_key(index, t, Rid { page: 0, slot: 0 }, row);
        let def = &self.catalog.indexes[index];
        let found = btree::get(&mut pages!(self), &def.space, def.root, &key, Rid::decode)?;
        Ok(match found {
            Some(rid) => Some(rid?) != except,
            None => false,
        })
    }

    /// Whether index `i` is on table `t`.
    fn index_of(&self, i: usize, t: usize) -> bool {
        self.catalog.indexes[i].table.eq_ignore_ascii_case(&self.catalog.tables[t].name)
    }

    pub(crate) fn insert_row(&mut self, tx: u64, t: usize, values: &[Value]) -> Result<Rid> {
        // Indexes by position, primary key first (no list of them is collected).
        let indexes = 0..self.catalog.indexes.len();
        for i in indexes.clone() {
            if self.index_of(i, t) && self.unique_conflict(i, t, values, None)? {
                return Err(self.duplicate(i, values));
            }
        }
        let mut row = std::mem::take(&mut self.row);
        types::encode_row(&self.catalog.tables[t].columns, values, &mut row);
        let space = self.options.heap_space;
        let rid = self.with_object(tx, Object::Table(t), |a| heap::insert(a, &row, space));
        self.row = row;
        let rid = rid?;
        for i in indexes {
            if self.index_of(i, t) {
                self.index_insert(tx, i, t, rid, values)?;
            }
        }
        Ok(rid)
    }

    pub(crate) fn read_row(&mut self, t: usize, rid: Rid) -> Result<Option<Vec<Value>>> {
        self.read_columns(t, rid, |_| true)
    }

    /// Row `rid` with the columns `wanted` turns down left NULL.
    fn read_columns(&mut self, t: usize, rid: Rid, wanted: impl Fn(usize) -> bool) -> Result<Option<Vec<Value>>> {
        let def = &self.catalog.tables[t];
        let row = heap::get(&mut pages!(self), &def.space, rid, |b| types::decode_some(&def.columns, b, &wanted))?;
        row.transpose().map_err(|m| corrupt_row(def, rid, m))
    }

    /// Replaces row `rid` by `new`; `replaced` holds the old values of the columns that
    /// were set (the row is otherwise as `new`).
    pub(crate) fn replace_row(
        &mut self,
        tx: u64,
        t: usize,
        rid: Rid,
        replaced: &[(usize, Value)],
        new: &[Value],
    ) -> Result<()> {
        for i in 0..self.catalog.indexes.len() {
            // An unchanged key keeps the row's own entry, so it cannot collide.
            if self.index_of(i, t)
                && key_changed(self, i, replaced, new)
                && self.unique_conflict(i, t, new, Some(rid))?
            {
                return Err(self.duplicate(i, new));
            }
        }
        let mut row = std::mem::take(&mut self.row);
        types::encode_row(&self.catalog.tables[t].columns, new, &mut row);
        let space = self.options.heap_space;
        let moved = self.with_object(tx, Object::Table(t), |a| heap::update(a, rid, &row, space));
        self.row = row;
        let new_rid = moved?.ok_or_else(|| Error::Corrupt(format!("row {rid} vanished during an update")))?;
        self.reindex(tx, t, rid, new_rid, replaced, new)
    }

    /// Moves the index entries of a row updated from `rid` to `new_rid` (which may be
    /// the same), where a key changed or the row moved.
    fn reindex(
        &mut self,
        tx: u64,
        t: usize,
        rid: Rid,
        new_rid: Rid,
        replaced: &[(usize, Value)],
        new: &[Value],
    ) -> Result<()> {
        let mut old: Option<Vec<Value>> = None;
        for i in 0..self.catalog.indexes.len() {
            if self.index_of(i, t) && (key_changed(self, i, replaced, new) || new_rid != rid) {
                let old = old.get_or_insert_with(|| {
                    // In reverse, so a column set twice gets its first, original value.
                    let mut old = new.to_vec();
                    for (c, v) in replaced.iter().rev() {
                        old[*c] = v.clone();
                    }
                    old
                });
                self.index_delete(tx, i, t, rid, old)?;
                self.index_insert(tx, i, t, new_rid, new)?;
            }
        }
        Ok(())
    }

    pub(crate) fn delete_row(&mut self, tx: u64, t: usize, rid: Rid, old: &[Value]) -> Result<()> {
        for i in 0..self.catalog.indexes.len() {
            if self.index_of(i, t) {
                self.index_delete(tx, i, t, rid, old)?;
            }
        }
        self.with_object(tx, Object::Table(t), |a| heap::delete(a, rid))?;
        Ok(())
    }

    fn pk_index(&self, t: usize) -> Result<usize> {
        let table = &self.catalog.tables[t].name;
        let is_pk = |name: &str| name.strip_prefix(table.as_str()) == Some("_pkey");
        self.catalog
            .indexes
            .iter()
            .position(|i| is_pk(&i.name))
            .ok_or_else(|| Error::Invalid(format!("table {table} has no primary key")))
    }

    fn coerce_key(&self, types: &[ColumnType], values: &[Value]) -> Result<Vec<u8>> {
        if values.len() > types.len() {
            return Err(Error::Invalid(format!("a key of {} columns, {} values given", types.len(), values.len())));
        }
        let mut key = Vec::new();
        encode_coerced_key(types.iter().copied(), values, &mut key)?;
        Ok(key)
    }

    fn lookup_pk(&mut self, t: usize, key: &[Value]) -> Result<Option<Rid>> {
        let index = self.pk_index(t)?;
        let def = &self.catalog.indexes[index];
        if key.len() != def.columns.len() {
            return Err(Error::Invalid(format!(
                "the primary key has {} columns, {} given",
                def.columns.len(),
                key.len()
            )));
        }
        let columns = &self.catalog.tables[t].columns;
        let mut bytes = std::mem::take(&mut self.key);
        bytes.clear();
        let found = encode_coerced_key(def.columns.iter().map(|&c| columns[c].ty), key, &mut bytes)
            .and_then(|()| btree::get(&mut pages!(self), &def.space, def.root, &bytes, Rid::decode));
        self.key = bytes;
        found?.transpose()
    }

    /// RIDs of entries whose key lies between `lo` and `hi`, where `hi` bounds every
    /// key it is a prefix of.
    pub(crate) fn index_range(&mut self, index: usize, lo: &[u8], hi: &[u8], limit: usize) -> Result<Vec<Rid>> {
        let def = &self.catalog.indexes[index];
        let mut out = Vec::new();
        btree::scan(&mut pages!(self), &def.space, def.root, lo, |key, value| {
            if out.len() >= limit || (key > hi && !key.starts_with(hi)) {
                return false;
            }
            out.extend(Rid::decode(value));
            true
        })?;
        Ok(out)
    }
}

/// Appends the key of `row` (at `rid`) in index `def` of `table` to `key`: the indexed
/// columns in key encoding, then the RID unless the key must be unique. A key with a
/// NULL is never a duplicate (SQL: NULL equals nothing, so a UNIQUE index holds any
/// number of them), so it carries the RID in a unique index too.
pub(crate) fn push_index_key(
    def: &crate::catalog::IndexDef,
    table: &crate::catalog::TableDef,
    rid: Rid,
    row: &[Value],
    key: &mut Vec<u8>,
) {
    for &c in &def.columns {
        types::encode_key_part(table.columns[c].ty, &row[c], key);
    }
    if !unique_key(def, row) {
        key.extend_from_slice(&rid.encode());
    }
}

/// Whether the key of `row` in index `def` must be unique: the index is, and no key
/// column is NULL.
fn unique_key(def: &crate::catalog::IndexDef, row: &[Value]) -> bool {
    def.unique && def.columns.iter().all(|&c| row[c] != Value::Null)
}

#[derive(Clone, Copy)]
pub(crate) enum Object {
    Table(usize),
    Index(usize),
}

/// Which pages of each region the catalog's objects (and the catalog itself) hold.
pub(crate) fn region_pages(store: &PageStore, catalog: &Catalog) -> Result<Vec<RegionPages>> {
    let mut regions = Vec::new();
    for i in 0..catalog.regions.len() {
        let pages = if Some(i as u16) == catalog.log_region { 0 } else { store.pages_in(i as u16) };
        regions.push(RegionPages::new(i as u16, pages));
    }
    let per_db_page = (catalog.page_bytes / store.device().page_bytes()) as u32;
    let reserved = Catalog::reserved_flash_pages(store.device()).div_ceil(per_db_page);
    regions[0].claim(0, reserved)?;
    let spaces = catalog.tables.iter().map(|t| &t.space).chain(catalog.indexes.iter().map(|i| &i.space));
    for space in spaces {
        let region = regions.get_mut(space.region as usize).ok_or_else(|| {
            Error::Corrupt(format!("catalog: an object lives in region {}, which does not exist", space.region))
        })?;
        for &start in &space.extents {
            region.claim(start, space.extent_pages)?;
        }
    }
    Ok(regions)
}

/// Whether `replaced` changes a column of index `i` (`new` being the row after).
fn key_changed(db: &Database, i: usize, replaced: &[(usize, Value)], new: &[Value]) -> bool {
    let index_columns = &db.catalog.indexes[i].columns;
    replaced.iter().any(|(c, v)| index_columns.contains(c) && *v != new[*c])
}

pub(crate) fn corrupt_row(def: &crate::catalog::TableDef, rid: Rid, m: String) -> Error {
    Error::Corrupt(format!("table {} row {rid}: {m}", def.name))
}

/// Appends the key bytes of `values`, each coerced to its column type of `types`.
fn encode_coerced_key(types: impl Iterator<Item = ColumnType>, values: &[Value], out: &mut Vec<u8>) -> Result<()> {
    for (ty, v) in types.zip(values) {
        let v = ty.coerce(v).map_err(Error::Invalid)?;
        types::encode_key_part(ty, &v, out);
    }
    Ok(())
}

pub(crate) fn coerce(col: &Column, v: &Value) -> Result<Value> {
    let v = col.ty.coerce(v).map_err(|m| Error::Invalid(format!("column {}: {m}", col.name)))?;
    if v == Value::Null && !col.nullable {
        return Err(Error::Invalid(format!("column {} may not be NULL", col.name)));
    }
    Ok(v)
}

pub(crate) fn extent_pages(bytes: u64, page_bytes: usize) -> Result<u32> {
    if bytes == 0 || !bytes.is_multiple_of(page_bytes as u64) || bytes / page_bytes as u64 > 1 << 16 {
        return Err(Error::Invalid(format!(
            "EXTENT SIZE {bytes} must be a positive multiple of the {page_bytes}-byte page (at most 65536 pages)"
        )));
    }
    Ok((bytes / page_bytes as u64) as u32)
}
