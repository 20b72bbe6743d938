//! The `Database`: create or open one on a device, run DDL and DML, and the Rust API
//! (begin/commit, insert, get, update, delete, range scans).
//!
//! Every table is a heap file; its primary key, if any, is a unique B+-tree index named
//! `<table>_pkey`, and every index maps its key (plus the RID when not unique) to the
//! row's RID. Each change stamps the pages it touches with a fresh LSN; until the
//! write-ahead log exists (issue 4) an LSN is a counter, and changes are durable once
//! [`Database::checkpoint`] or [`Database::close`] returned.
//!
//! Time is simulated: the pool's clock is the time of the operation in progress; I/O
//! on the critical path advances it. Callers that model terminals set it with
//! [`Database::set_now`] before an operation and read it back after.

use crate::btree;
use crate::buffer::{BufferPool, CleanerPolicy, PoolStats, Replacement};
use crate::catalog::{Catalog, IndexDef, RegionEntry, TableDef, Tablespace};
use crate::delta::IpaScheme;
use crate::error::{Error, Result};
use crate::heap::{self, Rid};
use crate::space::{ObjectAccess, ObjectSpace, RegionPages};
use crate::sql::{self, Condition, SetExpr, Statement};
use crate::store::{ObjectCounters, PageStore};
use crate::types::{self, Column, ColumnType, Value};
use flash::{Flash, IpaMode, RegionId, RegionSpec};
use nand::{Device, SimTime};

/// How big the buffer pool is.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum BufferSize {
    Pages(usize),
    /// A share of the pages the database holds when it is opened (at least 64 pages).
    Share(f64),
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
}

impl Default for DbOptions {
    fn default() -> Self {
        DbOptions {
            page_bytes: 4096,
            buffer: BufferSize::Pages(1024),
            replacement: Replacement::Clock,
            cleaner: CleanerPolicy::EAGER,
            system_extent_bytes: 128 << 10,
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
pub struct TableId(usize);

/// A transaction in progress. Abort and recovery come with the log (issue 4).
#[derive(Debug)]
pub struct Transaction {
    pub id: u64,
}

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
    pool: BufferPool,
    catalog: Catalog,
    regions: Vec<RegionPages>,
    options: DbOptions,
    next_tx: u64,
    row: Vec<u8>,
}

const SYSTEM: &str = "system";

impl Database {
    /// Formats `device` with a one-chip `system` region (catalog and the `system`
    /// tablespace) and returns an empty database.
    pub fn create(device: Device, options: DbOptions) -> Result<Database> {
        let mut spec = RegionSpec::new(SYSTEM, IpaMode::None);
        spec.max_chips = Some(1);
        let flash = Flash::format(device, vec![spec])?;
        let store = PageStore::new(flash, options.page_bytes)?;
        let mut catalog = Catalog::new(options.page_bytes);
        catalog.regions.push(RegionEntry { name: SYSTEM.into(), scheme: IpaScheme::NONE });
        let extent_pages = extent_pages(options.system_extent_bytes, options.page_bytes)?;
        catalog.tablespaces.push(Tablespace { name: SYSTEM.into(), region: 0, extent_pages });
        let mut db = Database::assemble(store, catalog, options)?;
        db.save_catalog()?;
        Ok(db)
    }

    /// Opens a database: rebuilds the regions by scan, reads the catalog.
    pub fn open(device: Device, options: DbOptions) -> Result<Database> {
        let (flash, done) = Flash::open(device, 0)?;
        let geometry_page = flash.device().geometry().page_bytes as usize;
        let mut probe = PageStore::new(flash, geometry_page.max(4096))?;
        let catalog = Catalog::load(&mut probe)?;
        let mut store = PageStore::new(probe.into_flash(), catalog.page_bytes)?;
        for (i, r) in catalog.regions.iter().enumerate() {
            store.set_scheme(RegionId(i), r.scheme)?;
        }
        let mut db = Database::assemble(store, catalog, options)?;
        db.pool.set_now(done);
        Ok(db)
    }

    fn assemble(store: PageStore, catalog: Catalog, options: DbOptions) -> Result<Database> {
        let mut regions = Vec::new();
        for i in 0..catalog.regions.len() {
            regions.push(RegionPages::new(i as u16, store.pages_in(i as u16)));
        }
        let per_db_page = (catalog.page_bytes / store.flash().device().geometry().page_bytes as usize) as u32;
        let reserved = Catalog::reserved_flash_pages(&store).div_ceil(per_db_page);
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
        let used: usize = catalog.tables.iter().map(|t| t.space.pages().count()).sum::<usize>()
            + catalog.indexes.iter().map(|i| i.space.pages().count()).sum::<usize>();
        let frames = match options.buffer {
            BufferSize::Pages(n) => n,
            BufferSize::Share(s) => ((used as f64 * s) as usize).max(64),
        };
        let pool = BufferPool::new(store, frames, options.replacement, options.cleaner);
        Ok(Database { pool, catalog, regions, options, next_tx: 1, row: Vec::new() })
    }

    fn save_catalog(&mut self) -> Result<()> {
        let now = self.pool.now();
        self.catalog.save(self.pool.store_mut(), now)
    }

    /// Writes every dirty page and the catalog (what `close` keeps).
    pub fn checkpoint(&mut self) -> Result<()> {
        self.pool.flush_all()?;
        self.save_catalog()?;
        Ok(())
    }

    /// Checkpoints, makes the device durable (an image file is written) and returns it.
    pub fn close(mut self) -> Result<Device> {
        self.checkpoint()?;
        let mut flash = self.pool.into_store().into_flash();
        flash.flush()?;
        Ok(flash.into_device())
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
    pub fn flash(&self) -> &Flash {
        self.pool.store().flash()
    }
    pub fn pool_stats(&self) -> PoolStats {
        self.pool.stats()
    }
    pub fn buffer_frames(&self) -> usize {
        self.pool.frames()
    }

    /// Resizes the buffer pool to a share of the pages the database holds now (the
    /// driver does this after loading, as the paper sizes buffers).
    pub fn set_buffer(&mut self, size: BufferSize) -> Result<()> {
        let used: usize = self.catalog.tables.iter().map(|t| t.space.pages().count()).sum::<usize>()
            + self.catalog.indexes.iter().map(|i| i.space.pages().count()).sum::<usize>();
        let frames = match size {
            BufferSize::Pages(n) => n,
            BufferSize::Share(s) => ((used as f64 * s) as usize).max(64),
        };
        self.options.buffer = size;
        self.pool.resize(frames)
    }

    /// Height and page count of an index.
    pub fn index_shape(&mut self, name: &str) -> Result<(u32, usize)> {
        let def = self
            .catalog
            .indexes
            .iter()
            .find(|i| i.name.eq_ignore_ascii_case(name))
            .ok_or_else(|| Error::Invalid(format!("no index named {name}")))?;
        let height = btree::height(&mut self.pool, &def.space, def.root)?;
        let pages = btree::pages(&mut self.pool, &def.space, def.root)?.len();
        Ok((height, pages))
    }

    /// I/O per table and index.
    pub fn object_stats(&self) -> Vec<ObjectStats> {
        let counters = self.pool.store().counters();
        let region_of = |space: &ObjectSpace| &self.catalog.regions[space.region as usize];
        let tables = self.catalog.tables.iter().map(|t| (t.id, t.name.clone(), "table", region_of(&t.space)));
        let indexes = self.catalog.indexes.iter().map(|i| (i.id, i.name.clone(), "index", region_of(&i.space)));
        tables
            .chain(indexes)
            .map(|(id, name, kind, region)| ObjectStats {
                name,
                kind,
                region: region.name.clone(),
                scheme: region.scheme,
                counters: counters.get(&id).copied().unwrap_or_default(),
            })
            .collect()
    }

    // ---- transactions ----------------------------------------------------------------

    pub fn begin(&mut self) -> Transaction {
        self.next_tx += 1;
        Transaction { id: self.next_tx - 1 }
    }

    /// Ends a transaction; the page cleaner runs. (Forcing the log comes with issue 4.)
    pub fn commit(&mut self, _tx: Transaction) -> Result<()> {
        self.pool.clean()
    }

    fn take_lsn(&mut self) -> u64 {
        self.catalog.next_lsn += 1;
        self.catalog.next_lsn - 1
    }

    // ---- the Rust API ----------------------------------------------------------------

    pub fn table_id(&self, name: &str) -> Result<TableId> {
        self.catalog.table(name).map(TableId)
    }

    pub fn columns(&self, t: TableId) -> &[Column] {
        &self.catalog.tables[t.0].columns
    }

    /// Inserts a row (values in column order); returns its RID.
    pub fn insert(&mut self, _tx: &Transaction, t: TableId, values: &[Value]) -> Result<Rid> {
        let values = self.coerce_row(t, values)?;
        self.insert_row(t.0, &values)
    }

    /// The row with primary key `key`.
    pub fn get(&mut self, _tx: &Transaction, t: TableId, key: &[Value]) -> Result<Option<Vec<Value>>> {
        let rid = self.lookup_pk(t.0, key)?;
        match rid {
            Some(rid) => self.read_row(t.0, rid),
            None => Ok(None),
        }
    }

    /// Sets columns of the row with primary key `key`; `false` if there is none.
    pub fn update(&mut self, _tx: &Transaction, t: TableId, key: &[Value], sets: &[(usize, Value)]) -> Result<bool> {
        let Some(rid) = self.lookup_pk(t.0, key)? else { return Ok(false) };
        let Some(old) = self.read_row(t.0, rid)? else { return Ok(false) };
        let mut new = old.clone();
        for (c, v) in sets {
            let col =
                self.catalog.tables[t.0].columns.get(*c).ok_or_else(|| Error::Invalid(format!("no column {c}")))?;
            new[*c] = coerce(col, v)?;
        }
        self.replace_row(t.0, rid, &old, &new)?;
        Ok(true)
    }

    /// Adds `delta` to a numeric column of the row with primary key `key`.
    pub fn add(&mut self, tx: &Transaction, t: TableId, key: &[Value], column: usize, delta: &Value) -> Result<bool> {
        let Some(rid) = self.lookup_pk(t.0, key)? else { return Ok(false) };
        let Some(old) = self.read_row(t.0, rid)? else { return Ok(false) };
        let sum =
            old[column].add(delta).ok_or_else(|| Error::Invalid(format!("cannot add {delta} to {}", old[column])))?;
        self.update(tx, t, key, &[(column, sum)])
    }

    /// Deletes the row with primary key `key`; `false` if there is none.
    pub fn delete(&mut self, _tx: &Transaction, t: TableId, key: &[Value]) -> Result<bool> {
        let Some(rid) = self.lookup_pk(t.0, key)? else { return Ok(false) };
        let Some(old) = self.read_row(t.0, rid)? else { return Ok(false) };
        self.delete_row(t.0, rid, &old)?;
        Ok(true)
    }

    /// Rows whose primary key lies in [`lo`, `hi`] (a prefix of the key columns bounds
    /// all rows starting with it), in key order.
    pub fn scan(&mut self, _tx: &Transaction, t: TableId, lo: &[Value], hi: &[Value]) -> Result<Vec<Vec<Value>>> {
        let index = self.pk_index(t.0)?;
        let types = self.catalog.indexes[index].key_types(&self.catalog.tables[t.0]);
        let lo = self.coerce_key(&types, lo)?;
        let hi = self.coerce_key(&types, hi)?;
        let rids = self.index_range(index, &lo, &hi)?;
        let mut out = Vec::with_capacity(rids.len());
        for rid in rids {
            out.extend(self.read_row(t.0, rid)?);
        }
        Ok(out)
    }

    // ---- statements ------------------------------------------------------------------

    /// Runs `;`-separated statements; errors name the statement's line.
    pub fn execute(&mut self, text: &str) -> Result<Vec<QueryResult>> {
        let mut out = Vec::new();
        for located in sql::parse(text)? {
            let result = self.run(located.statement).map_err(|e| match e {
                Error::Invalid(m) => Error::Invalid(format!("line {}: {m}", located.line)),
                Error::Duplicate { object, key } => {
                    Error::Duplicate { object: format!("line {}: {object}", located.line), key }
                }
                other => other,
            })?;
            out.push(result);
            self.pool.clean()?;
        }
        Ok(out)
    }

    /// Runs the statements of a `.sql` file (a schema, a load script).
    pub fn execute_file(&mut self, path: &std::path::Path) -> Result<Vec<QueryResult>> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::Invalid(format!("{}: {e}", path.display())))?;
        self.execute(&text).map_err(|e| match e {
            Error::Invalid(m) => Error::Invalid(format!("{}: {m}", path.display())),
            other => other,
        })
    }

    fn run(&mut self, st: Statement) -> Result<QueryResult> {
        match st {
            Statement::CreateRegion { name, options } => self.create_region(&name, &options),
            Statement::CreateTablespace { name, region, extent_bytes } => {
                self.create_tablespace(&name, &region, extent_bytes.unwrap_or(128 << 10))
            }
            Statement::CreateTable { name, columns, primary_key, tablespace } => {
                self.create_table(&name, columns, primary_key, tablespace.as_deref().unwrap_or(SYSTEM))
            }
            Statement::CreateIndex { name, unique, table, columns, tablespace } => {
                let t = self.catalog.table(&table)?;
                let ts = tablespace.unwrap_or_else(|| self.catalog.tables[t].tablespace.clone());
                self.create_index(&name, t, &columns, unique, &ts)
            }
            Statement::DropTable(name) => self.drop_table(&name),
            Statement::DropIndex(name) => self.drop_index(&name),
            Statement::Insert { table, columns, rows } => {
                let t = self.catalog.table(&table)?;
                let n = rows.len();
                for row in rows {
                    let values = self.row_from(t, columns.as_deref(), row)?;
                    self.insert_row(t, &values)?;
                }
                Ok(QueryResult::Count { verb: "inserted", rows: n })
            }
            Statement::Select { table, columns, filter } => {
                let t = self.catalog.table(&table)?;
                let def = &self.catalog.tables[t];
                let picks: Vec<usize> = match &columns {
                    None => (0..def.columns.len()).collect(),
                    Some(cols) => cols.iter().map(|c| def.column(c)).collect::<Result<_>>()?,
                };
                let names = picks.iter().map(|&c| def.columns[c].name.clone()).collect();
                let rows = self.find(t, &filter)?;
                let rows = rows.into_iter().map(|(_, r)| picks.iter().map(|&c| r[c].clone()).collect()).collect();
                Ok(QueryResult::Rows { columns: names, rows })
            }
            Statement::Update { table, sets, filter } => {
                let t = self.catalog.table(&table)?;
                let def = &self.catalog.tables[t];
                let sets: Vec<(usize, SetExpr)> =
                    sets.into_iter().map(|(c, e)| Ok((def.column(&c)?, e))).collect::<Result<_>>()?;
                let rows = self.find(t, &filter)?;
                for (rid, old) in &rows {
                    let new = self.apply_sets(t, old, &sets)?;
                    self.replace_row(t, *rid, old, &new)?;
                }
                Ok(QueryResult::Count { verb: "updated", rows: rows.len() })
            }
            Statement::Delete { table, filter } => {
                let t = self.catalog.table(&table)?;
                let rows = self.find(t, &filter)?;
                for (rid, old) in &rows {
                    self.delete_row(t, *rid, old)?;
                }
                Ok(QueryResult::Count { verb: "deleted", rows: rows.len() })
            }
            Statement::Begin => Ok(QueryResult::Done("BEGIN".into())),
            Statement::Commit => {
                self.pool.clean()?;
                Ok(QueryResult::Done("COMMIT".into()))
            }
        }
    }

    fn create_region(&mut self, name: &str, o: &sql::RegionOptions) -> Result<QueryResult> {
        if self.catalog.region(name).is_some() {
            return Err(Error::Invalid(format!("region {name} already exists")));
        }
        let cell = self.flash().device().geometry().cell;
        let default_mode = if cell == nand::CellType::Slc { IpaMode::Slc } else { IpaMode::OddMlc };
        let mode = o.ipa_mode.unwrap_or(if o.scheme.is_some() { default_mode } else { IpaMode::None });
        let mut options = o.clone();
        if mode != IpaMode::None && options.scheme.is_none() {
            options.scheme = Some((2, 4));
        }
        let scheme = options.ipa_scheme().map_err(|m| Error::Invalid(format!("region {name}: {m}")))?;
        if mode == IpaMode::None && scheme.enabled() {
            return Err(Error::Invalid(format!("region {name}: IPA={scheme} needs an IPA_MODE other than none")));
        }
        let mut spec = RegionSpec::new(name, mode);
        spec.max_size_bytes = o.max_size_bytes;
        spec.max_chips = o.max_chips;
        spec.max_channels = o.max_channels;
        if let Some(op) = o.over_provisioning {
            spec.over_provisioning = op;
        }
        self.pool.store().check_scheme(scheme)?;
        let now = self.pool.now();
        let id = self.pool.store_mut().flash_mut().add_region(spec, now)?;
        self.pool.store_mut().set_scheme(id, scheme)?;
        self.catalog.regions.push(RegionEntry { name: name.into(), scheme });
        let pages = self.pool.store().pages_in(id.0 as u16);
        self.regions.push(RegionPages::new(id.0 as u16, pages));
        self.save_catalog()?;
        let chips = self.flash().region(id).chips().len();
        Ok(QueryResult::Done(format!(
            "region {name}: {chips} chip(s), {pages} pages of {} KiB, IPA mode {}, scheme [{scheme}] V={} ({} bytes reserved per page)",
            self.catalog.page_bytes >> 10,
            mode.name(),
            scheme.v,
            scheme.area_bytes()
        )))
    }

    fn create_tablespace(&mut self, name: &str, region: &str, extent_bytes: u64) -> Result<QueryResult> {
        if self.catalog.tablespace(name).is_ok() {
            return Err(Error::Invalid(format!("tablespace {name} already exists")));
        }
        let r = self.catalog.region(region).ok_or_else(|| Error::Invalid(format!("no region named {region}")))?;
        let extent_pages = extent_pages(extent_bytes, self.catalog.page_bytes)?;
        self.catalog.tablespaces.push(Tablespace { name: name.into(), region: r as u16, extent_pages });
        self.save_catalog()?;
        Ok(QueryResult::Done(format!("tablespace {name} in region {region}, extents of {extent_pages} pages")))
    }

    fn new_space(&mut self, tablespace: &str) -> Result<(u32, ObjectSpace)> {
        let ts = self.catalog.tablespace(tablespace)?;
        let space = ObjectSpace::new(ts.region, ts.extent_pages);
        self.catalog.next_object += 1;
        Ok((self.catalog.next_object - 1, space))
    }

    fn create_table(
        &mut self,
        name: &str,
        defs: Vec<sql::ColumnDef>,
        mut primary_key: Vec<String>,
        tablespace: &str,
    ) -> Result<QueryResult> {
        if self.catalog.name_taken(name) {
            return Err(Error::Invalid(format!("a table or index named {name} already exists")));
        }
        let inline: Vec<String> = defs.iter().filter(|d| d.primary_key).map(|d| d.name.clone()).collect();
        if !inline.is_empty() {
            if !primary_key.is_empty() || inline.len() > 1 {
                return Err(Error::Invalid(format!("table {name} declares its primary key twice")));
            }
            primary_key = inline;
        }
        let mut columns: Vec<Column> = Vec::new();
        for d in defs {
            if columns.iter().any(|c| c.name.eq_ignore_ascii_case(&d.name)) {
                return Err(Error::Invalid(format!("table {name} has two columns named {}", d.name)));
            }
            let in_pk = primary_key.iter().any(|k| k.eq_ignore_ascii_case(&d.name));
            columns.push(Column { name: d.name, ty: d.ty, nullable: !d.not_null && !in_pk });
        }
        let (id, space) = self.new_space(tablespace)?;
        let mut table = TableDef {
            id,
            name: name.into(),
            tablespace: self.catalog.tablespace(tablespace)?.name.clone(),
            columns,
            primary_key: Vec::new(),
            space,
        };
        table.primary_key = primary_key.iter().map(|k| table.column(k)).collect::<Result<_>>()?;
        let ts = table.tablespace.clone();
        self.catalog.tables.push(table);
        let t = self.catalog.tables.len() - 1;
        if !primary_key.is_empty() {
            if let Err(e) = self.create_index(&format!("{name}_pkey"), t, &primary_key, true, &ts) {
                self.catalog.tables.pop();
                return Err(e);
            }
        }
        self.save_catalog()?;
        Ok(QueryResult::Done(format!("table {name} in tablespace {ts}")))
    }

    fn create_index(&mut self, name: &str, t: usize, cols: &[String], unique: bool, ts: &str) -> Result<QueryResult> {
        if self.catalog.name_taken(name) {
            return Err(Error::Invalid(format!("a table or index named {name} already exists")));
        }
        let columns: Vec<usize> = cols.iter().map(|c| self.catalog.tables[t].column(c)).collect::<Result<_>>()?;
        let (id, mut space) = self.new_space(ts)?;
        let lsn = self.take_lsn();
        let mut a = ObjectAccess {
            pool: &mut self.pool,
            space: &mut space,
            regions: &mut self.regions[space_region(ts, &self.catalog)?],
            object: id,
            lsn,
        };
        let root = btree::create(&mut a)?;
        let table = self.catalog.tables[t].name.clone();
        let tablespace = self.catalog.tablespace(ts)?.name.clone();
        let def = IndexDef { id, name: name.into(), table, columns, unique, tablespace, root, space };
        self.catalog.indexes.push(def);
        let index = self.catalog.indexes.len() - 1;
        // Index the rows already there.
        let mut rows = Vec::new();
        let tdef = &self.catalog.tables[t];
        let cols = tdef.columns.clone();
        heap::scan(&mut self.pool, &tdef.space, |rid, bytes| {
            rows.push((rid, types::decode_row(&cols, bytes)));
            true
        })?;
        for (rid, row) in rows {
            let row = row.map_err(|m| Error::Corrupt(format!("table {}: {m}", self.catalog.tables[t].name)))?;
            if let Err(e) = self.index_insert(index, t, rid, &row) {
                self.drop_index(name)?;
                return Err(e);
            }
        }
        self.save_catalog()?;
        Ok(QueryResult::Done(format!("index {name} on {}", self.catalog.tables[t].name)))
    }

    fn free_object(&mut self, space: &ObjectSpace) -> Result<()> {
        for page in space.pages().collect::<Vec<_>>() {
            self.pool.discard(crate::store::PageId { region: space.region, page })?;
        }
        for &start in &space.extents {
            self.regions[space.region as usize].release(start, space.extent_pages);
        }
        Ok(())
    }

    fn drop_index(&mut self, name: &str) -> Result<QueryResult> {
        let i = self
            .catalog
            .indexes
            .iter()
            .position(|i| i.name.eq_ignore_ascii_case(name))
            .ok_or_else(|| Error::Invalid(format!("no index named {name}")))?;
        let index = self.catalog.indexes.remove(i);
        self.free_object(&index.space)?;
        self.save_catalog()?;
        Ok(QueryResult::Done(format!("dropped index {}", index.name)))
    }

    fn drop_table(&mut self, name: &str) -> Result<QueryResult> {
        let t = self.catalog.table(name)?;
        let indexes: Vec<String> =
            self.catalog.indexes_of(name).map(|i| self.catalog.indexes[i].name.clone()).collect();
        for i in indexes {
            self.drop_index(&i)?;
        }
        let table = self.catalog.tables.remove(t);
        self.free_object(&table.space)?;
        self.save_catalog()?;
        Ok(QueryResult::Done(format!("dropped table {}", table.name)))
    }

    // ---- rows and indexes --------------------------------------------------------------

    fn coerce_row(&self, t: TableId, values: &[Value]) -> Result<Vec<Value>> {
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

    fn row_from(&self, t: usize, names: Option<&[String]>, values: Vec<Value>) -> Result<Vec<Value>> {
        let def = &self.catalog.tables[t];
        let Some(names) = names else { return self.coerce_row(TableId(t), &values) };
        if names.len() != values.len() {
            return Err(Error::Invalid(format!("{} columns named, {} values given", names.len(), values.len())));
        }
        let mut row = vec![Value::Null; def.columns.len()];
        for (n, v) in names.iter().zip(values) {
            let c = def.column(n)?;
            row[c] = v;
        }
        self.coerce_row(TableId(t), &row)
    }

    fn apply_sets(&self, t: usize, old: &[Value], sets: &[(usize, SetExpr)]) -> Result<Vec<Value>> {
        let def = &self.catalog.tables[t];
        let mut new = old.to_vec();
        for (c, e) in sets {
            let v = match e {
                SetExpr::Value(v) => v.clone(),
                SetExpr::Add(other, delta) => {
                    let base = &old[def.column(other)?];
                    base.add(delta).ok_or_else(|| Error::Invalid(format!("cannot add {delta} to {base}")))?
                }
            };
            new[*c] = coerce(&def.columns[*c], &v)?;
        }
        Ok(new)
    }

    fn access(&mut self, object: Object) -> ObjectAccess<'_> {
        self.catalog.next_lsn += 1;
        let lsn = self.catalog.next_lsn - 1;
        let (space, object) = match object {
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
        ObjectAccess { pool: &mut self.pool, space, regions, object, lsn }
    }

    fn index_key(&self, index: usize, t: usize, rid: Rid, row: &[Value]) -> Vec<u8> {
        let def = &self.catalog.indexes[index];
        let table = &self.catalog.tables[t];
        let mut key = Vec::with_capacity(16);
        for &c in &def.columns {
            types::encode_key_part(table.columns[c].ty, &row[c], &mut key);
        }
        if !def.unique {
            key.extend_from_slice(&rid.encode());
        }
        key
    }

    fn index_insert(&mut self, index: usize, t: usize, rid: Rid, row: &[Value]) -> Result<()> {
        let key = self.index_key(index, t, rid, row);
        let root = self.catalog.indexes[index].root;
        if !btree::insert(&mut self.access(Object::Index(index)), root, &key, &rid.encode())? {
            let def = &self.catalog.indexes[index];
            let shown: Vec<String> = def.columns.iter().map(|&c| row[c].to_string()).collect();
            return Err(Error::Duplicate { object: def.name.clone(), key: format!("({})", shown.join(", ")) });
        }
        Ok(())
    }

    fn index_delete(&mut self, index: usize, t: usize, rid: Rid, row: &[Value]) -> Result<()> {
        let key = self.index_key(index, t, rid, row);
        let root = self.catalog.indexes[index].root;
        if !btree::delete(&mut self.access(Object::Index(index)), root, &key)? {
            return Err(Error::Corrupt(format!(
                "index {} lacks an entry for RID {rid}",
                self.catalog.indexes[index].name
            )));
        }
        Ok(())
    }

    fn unique_conflict(&mut self, index: usize, t: usize, row: &[Value], except: Option<Rid>) -> Result<bool> {
        let def = &self.catalog.indexes[index];
        if !def.unique {
            return Ok(false);
        }
        let key = self.index_key(index, t, Rid { page: 0, slot: 0 }, row);
        let def = &self.catalog.indexes[index];
        let found = btree::get(&mut self.pool, &def.space, def.root, &key)?;
        Ok(match found {
            Some(v) => Some(Rid::decode(&v)?) != except,
            None => false,
        })
    }

    fn insert_row(&mut self, t: usize, values: &[Value]) -> Result<Rid> {
        let indexes: Vec<usize> = self.catalog.indexes_of(&self.catalog.tables[t].name.clone()).collect();
        for &i in &indexes {
            if self.unique_conflict(i, t, values, None)? {
                let def = &self.catalog.indexes[i];
                let shown: Vec<String> = def.columns.iter().map(|&c| values[c].to_string()).collect();
                return Err(Error::Duplicate { object: def.name.clone(), key: format!("({})", shown.join(", ")) });
            }
        }
        let mut row = std::mem::take(&mut self.row);
        types::encode_row(&self.catalog.tables[t].columns, values, &mut row);
        let rid = heap::insert(&mut self.access(Object::Table(t)), &row);
        self.row = row;
        let rid = rid?;
        for i in indexes {
            self.index_insert(i, t, rid, values)?;
        }
        Ok(rid)
    }

    fn read_row(&mut self, t: usize, rid: Rid) -> Result<Option<Vec<Value>>> {
        let def = &self.catalog.tables[t];
        let row = heap::get(&mut self.pool, &def.space, rid, |b| types::decode_row(&def.columns, b))?;
        row.transpose().map_err(|m| Error::Corrupt(format!("table {} row {rid}: {m}", def.name)))
    }

    fn replace_row(&mut self, t: usize, rid: Rid, old: &[Value], new: &[Value]) -> Result<()> {
        let indexes: Vec<usize> = self.catalog.indexes_of(&self.catalog.tables[t].name.clone()).collect();
        for &i in &indexes {
            if self.unique_conflict(i, t, new, Some(rid))? {
                let def = &self.catalog.indexes[i];
                let shown: Vec<String> = def.columns.iter().map(|&c| new[c].to_string()).collect();
                return Err(Error::Duplicate { object: def.name.clone(), key: format!("({})", shown.join(", ")) });
            }
        }
        let mut row = std::mem::take(&mut self.row);
        types::encode_row(&self.catalog.tables[t].columns, new, &mut row);
        let moved = heap::update(&mut self.access(Object::Table(t)), rid, &row);
        self.row = row;
        let new_rid = moved?.ok_or_else(|| Error::Corrupt(format!("row {rid} vanished during an update")))?;
        for i in indexes {
            let changed = self.catalog.indexes[i].columns.iter().any(|&c| old[c] != new[c]);
            if changed || new_rid != rid {
                self.index_delete(i, t, rid, old)?;
                self.index_insert(i, t, new_rid, new)?;
            }
        }
        Ok(())
    }

    fn delete_row(&mut self, t: usize, rid: Rid, old: &[Value]) -> Result<()> {
        let indexes: Vec<usize> = self.catalog.indexes_of(&self.catalog.tables[t].name.clone()).collect();
        for i in indexes {
            self.index_delete(i, t, rid, old)?;
        }
        heap::delete(&mut self.access(Object::Table(t)), rid)?;
        Ok(())
    }

    fn pk_index(&self, t: usize) -> Result<usize> {
        let name = format!("{}_pkey", self.catalog.tables[t].name);
        self.catalog
            .indexes
            .iter()
            .position(|i| i.name == name)
            .ok_or_else(|| Error::Invalid(format!("table {} has no primary key", self.catalog.tables[t].name)))
    }

    fn coerce_key(&self, types: &[ColumnType], values: &[Value]) -> Result<Vec<u8>> {
        if values.len() > types.len() {
            return Err(Error::Invalid(format!("a key of {} columns, {} values given", types.len(), values.len())));
        }
        let mut key = Vec::new();
        for (ty, v) in types.iter().zip(values) {
            let v = ty.coerce(v).map_err(Error::Invalid)?;
            types::encode_key_part(*ty, &v, &mut key);
        }
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
        let key = self.coerce_key(&def.key_types(&self.catalog.tables[t]), key)?;
        let def = &self.catalog.indexes[index];
        btree::get(&mut self.pool, &def.space, def.root, &key)?.map(|v| Rid::decode(&v)).transpose()
    }

    /// RIDs of entries whose key lies between `lo` and `hi`, where `hi` bounds every
    /// key it is a prefix of.
    fn index_range(&mut self, index: usize, lo: &[u8], hi: &[u8]) -> Result<Vec<Rid>> {
        let def = &self.catalog.indexes[index];
        let mut out = Vec::new();
        btree::scan(&mut self.pool, &def.space, def.root, lo, |key, value| {
            if key > hi && !key.starts_with(hi) {
                return false;
            }
            out.extend(Rid::decode(value));
            true
        })?;
        Ok(out)
    }

    /// Rows matching every condition, through the index that covers most of them.
    fn find(&mut self, t: usize, filter: &[Condition]) -> Result<Vec<(Rid, Vec<Value>)>> {
        let def = &self.catalog.tables[t];
        let mut conds = Vec::with_capacity(filter.len());
        for c in filter {
            let (name, lo, hi) = match c {
                Condition::Eq(n, v) => (n, v, v),
                Condition::Between(n, lo, hi) => (n, lo, hi),
            };
            let col = def.column(name)?;
            let ty = def.columns[col].ty;
            let enc = |v: &Value| -> Result<Vec<u8>> {
                let v = ty.coerce(v).map_err(|m| Error::Invalid(format!("column {name}: {m}")))?;
                Ok(types::encode_key(&[ty], &[v]))
            };
            conds.push((col, enc(lo)?, enc(hi)?));
        }
        // The best index: the most leading columns bound by `=`, then one range.
        let mut best: Option<(usize, Vec<u8>, Vec<u8>, usize)> = None;
        for i in self.catalog.indexes_of(&def.name.clone()) {
            let (mut lo, mut hi, mut score) = (Vec::new(), Vec::new(), 0);
            for &c in &self.catalog.indexes[i].columns {
                let Some((_, l, h)) = conds.iter().find(|(col, _, _)| *col == c) else { break };
                lo.extend_from_slice(l);
                hi.extend_from_slice(h);
                score += 2;
                if l != h {
                    score -= 1;
                    break;
                }
            }
            if score > 0 && best.as_ref().is_none_or(|b| b.3 < score) {
                best = Some((i, lo, hi, score));
            }
        }
        let candidates: Vec<Rid> = match best {
            Some((i, lo, hi, _)) => self.index_range(i, &lo, &hi)?,
            None => {
                let mut rids = Vec::new();
                heap::scan(&mut self.pool, &self.catalog.tables[t].space, |rid, _| {
                    rids.push(rid);
                    true
                })?;
                rids
            }
        };
        let mut out = Vec::new();
        for rid in candidates {
            let Some(row) = self.read_row(t, rid)? else { continue };
            let cols = &self.catalog.tables[t].columns;
            let matches = conds.iter().all(|(c, lo, hi)| {
                let key = types::encode_key(&[cols[*c].ty], &[row[*c].clone()]);
                row[*c] != Value::Null && lo.as_slice() <= key.as_slice() && key.as_slice() <= hi.as_slice()
            });
            if matches {
                out.push((rid, row));
            }
        }
        Ok(out)
    }

    /// The schema as DDL that would recreate it.
    pub fn schema(&self) -> String {
        let mut out = String::new();
        for (i, r) in self.catalog.regions.iter().enumerate().skip(1) {
            let spec = self.flash().region(RegionId(i)).spec();
            let mut opts = vec![format!("IPA_MODE={}", spec.ipa_mode.name())];
            if r.scheme.enabled() {
                opts.push(format!("IPA={}", r.scheme));
                opts.push(format!("V={}", r.scheme.v));
            }
            if let Some(s) = spec.max_size_bytes {
                opts.push(format!("MAX_SIZE={}K", s >> 10));
            }
            opts.extend(spec.max_chips.map(|c| format!("MAX_CHIPS={c}")));
            opts.extend(spec.max_channels.map(|c| format!("MAX_CHANNELS={c}")));
            opts.push(format!("OVER_PROVISIONING={}", spec.over_provisioning));
            out += &format!("CREATE REGION {} ({});\n", r.name, opts.join(", "));
        }
        for ts in self.catalog.tablespaces.iter().skip(1) {
            let region = &self.catalog.regions[ts.region as usize].name;
            let extent = (ts.extent_pages as usize * self.catalog.page_bytes) >> 10;
            out += &format!("CREATE TABLESPACE {} (REGION={region}, EXTENT SIZE {extent}K);\n", ts.name);
        }
        for t in &self.catalog.tables {
            let mut cols: Vec<String> = t
                .columns
                .iter()
                .map(|c| format!("{} {}{}", c.name, c.ty, if c.nullable { "" } else { " NOT NULL" }))
                .collect();
            if !t.primary_key.is_empty() {
                let pk: Vec<&str> = t.primary_key.iter().map(|&c| t.columns[c].name.as_str()).collect();
                cols.push(format!("PRIMARY KEY ({})", pk.join(", ")));
            }
            out += &format!("CREATE TABLE {} ({}) TABLESPACE {};\n", t.name, cols.join(", "), t.tablespace);
            for i in self.catalog.indexes_of(&t.name) {
                let ix = &self.catalog.indexes[i];
                if ix.name == format!("{}_pkey", t.name) {
                    continue;
                }
                let cols: Vec<&str> = ix.columns.iter().map(|&c| t.columns[c].name.as_str()).collect();
                out += &format!(
                    "CREATE {}INDEX {} ON {} ({}) TABLESPACE {};\n",
                    if ix.unique { "UNIQUE " } else { "" },
                    ix.name,
                    t.name,
                    cols.join(", "),
                    ix.tablespace
                );
            }
        }
        out
    }
}

#[derive(Clone, Copy)]
enum Object {
    Table(usize),
    Index(usize),
}

fn coerce(col: &Column, v: &Value) -> Result<Value> {
    let v = col.ty.coerce(v).map_err(|m| Error::Invalid(format!("column {}: {m}", col.name)))?;
    if v == Value::Null && !col.nullable {
        return Err(Error::Invalid(format!("column {} may not be NULL", col.name)));
    }
    Ok(v)
}

fn extent_pages(bytes: u64, page_bytes: usize) -> Result<u32> {
    if bytes == 0 || !bytes.is_multiple_of(page_bytes as u64) || bytes / page_bytes as u64 > 1 << 16 {
        return Err(Error::Invalid(format!(
            "EXTENT SIZE {bytes} must be a positive multiple of the {page_bytes}-byte page (at most 65536 pages)"
        )));
    }
    Ok((bytes / page_bytes as u64) as u32)
}

fn space_region(ts: &str, catalog: &Catalog) -> Result<usize> {
    Ok(catalog.tablespace(ts)?.region as usize)
}
