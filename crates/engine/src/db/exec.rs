//! Statements: DDL (regions, tablespaces, tables, indexes, drops, `ALTER` in
//! [`crate::alter`]) and DML routed to
//! the row operations of [`Database`], with the access-path choice for WHERE clauses
//! and the schema printed back as DDL.

use super::txn::Transaction;
use crate::btree;
use crate::catalog::{Catalog, IndexDef, RegionEntry, TableDef, Tablespace};
use crate::db::{coerce, extent_pages, pages, Database, Object, QueryResult, TableId, LOG, SYSTEM};
use crate::error::{Error, Result};
use crate::heap::{self, Rid};
use crate::space::{ObjectSpace, RegionPages};
use crate::sql::{self, AlterChange, Condition, SetExpr, Statement};
use crate::types::{self, Column, Value};
use flash::{IpaMode, RegionId, RegionSpec};

/// The transaction statements run in.
#[derive(Debug, Default)]
pub(crate) enum SqlTx {
    /// None: each statement runs in one of its own.
    #[default]
    None,
    /// The one `BEGIN` opened.
    Open(Transaction),
    /// A statement in it failed, and it was rolled back: statements are refused until
    /// `ROLLBACK` (a `COMMIT` ends it too, saying that nothing was committed).
    Failed { id: u64, cause: String },
}

impl Database {
    /// Runs `;`-separated statements; errors name the statement's line. The first
    /// error stops the run.
    ///
    /// Outside `BEGIN` … `COMMIT` each statement runs in a transaction of its own: one
    /// that fails changes nothing. Inside, a transaction is all or nothing, as in
    /// PostgreSQL: a statement that fails (or does not parse) rolls the transaction
    /// back and leaves it failed; every later statement is refused with "current
    /// transaction is aborted, commands ignored until ROLLBACK" until `ROLLBACK` ends
    /// it, and a `COMMIT` ends it with an error saying nothing was committed. DDL runs
    /// outside transactions and is followed by a checkpoint; a DDL statement that fails
    /// leaves the catalog as it was.
    pub fn execute(&mut self, text: &str) -> Result<Vec<QueryResult>> {
        self.roll_back_dropped()?;
        let statements = match sql::parse(text) {
            Ok(statements) => statements,
            Err(e) => return Err(self.fail_transaction(e)),
        };
        let mut out = Vec::new();
        for located in statements {
            let result = self.run_in_transaction(located.statement).map_err(|e| match e {
                Error::Invalid(m) => Error::Invalid(format!("line {}: {m}", located.line)),
                Error::Duplicate { object, key } => {
                    Error::Duplicate { object: format!("line {}: {object}", located.line), key }
                }
                other => other,
            })?;
            out.push(result);
        }
        Ok(out)
    }

    /// Runs one parsed statement as [`Database::execute`] does (a shell that parsed it
    /// itself, to report positions in its whole input).
    pub fn execute_statement(&mut self, st: Statement) -> Result<QueryResult> {
        self.refuse_after_file_failure()?;
        self.run_in_transaction(st)
    }

    /// Fails the transaction `BEGIN` opened, if one is open, for `error` that arose
    /// outside [`Database::execute_statement`] (a statement that does not parse): it is
    /// rolled back and refuses statements until `ROLLBACK`. Returns the error to
    /// report, saying so when a transaction was failed.
    pub fn fail_transaction(&mut self, error: Error) -> Error {
        match std::mem::take(&mut self.sql_tx) {
            SqlTx::Open(tx) => {
                self.sql_tx = SqlTx::Failed { id: tx.id(), cause: error.brief() };
                match self.abort(tx) {
                    Ok(()) => rolled_back(error),
                    Err(e) => e,
                }
            }
            other => {
                self.sql_tx = other;
                error
            }
        }
    }

    /// Whether statements run inside a transaction `BEGIN` opened (failed or not).
    pub fn in_transaction(&self) -> bool {
        !matches!(self.sql_tx, SqlTx::None)
    }

    fn run_in_transaction(&mut self, st: Statement) -> Result<QueryResult> {
        match std::mem::take(&mut self.sql_tx) {
            SqlTx::None => self.run_alone(st),
            SqlTx::Open(tx) => self.run_in(tx, st),
            SqlTx::Failed { id, cause } => match st {
                Statement::Rollback => Ok(QueryResult::Done("ROLLBACK".into())),
                Statement::Commit => Err(Error::TransactionFailed { id, cause, ended: true }),
                _ => {
                    self.sql_tx = SqlTx::Failed { id, cause: cause.clone() };
                    Err(Error::TransactionFailed { id, cause, ended: false })
                }
            },
        }
    }

    /// A statement outside `BEGIN` … `COMMIT`.
    fn run_alone(&mut self, st: Statement) -> Result<QueryResult> {
        match st {
            Statement::Begin => {
                self.sql_tx = SqlTx::Open(self.begin());
                Ok(QueryResult::Done("BEGIN".into()))
            }
            Statement::Commit | Statement::Rollback => Err(Error::Invalid("no transaction is open".into())),
            st if is_ddl(&st) => self.run_ddl(st),
            st => {
                let tx = self.begin();
                match self.run(tx.id(), st) {
                    Ok(result) => {
                        self.commit(tx)?;
                        Ok(result)
                    }
                    Err(e) => {
                        self.abort(tx)?;
                        Err(e)
                    }
                }
            }
        }
    }

    /// A statement inside `BEGIN` … `COMMIT`: any error fails the transaction.
    fn run_in(&mut self, tx: Transaction, st: Statement) -> Result<QueryResult> {
        let result = match st {
            Statement::Commit => {
                self.commit(tx)?;
                return Ok(QueryResult::Done("COMMIT".into()));
            }
            Statement::Rollback => {
                self.abort(tx)?;
                return Ok(QueryResult::Done("ROLLBACK".into()));
            }
            Statement::Begin => Err(Error::Invalid("a transaction is already open".into())),
            st if is_ddl(&st) => {
                Err(Error::Invalid("DDL inside a transaction is not supported; COMMIT or ROLLBACK first".into()))
            }
            st => self.run(tx.id(), st),
        };
        self.sql_tx = SqlTx::Open(tx);
        result.map_err(|e| self.fail_transaction(e))
    }

    /// Runs a DDL statement, then a checkpoint. If it fails, the catalog is put back
    /// as it was, with the IPA layouts the store keeps, and the pages of objects it
    /// had made are freed: the session goes on as if it had not run. Except where the
    /// statement got past its point of no return: a drop (or the swap of a move) whose
    /// catalog was written and whose pages were being freed stays done, and a region
    /// added to the device stays (the device cannot remove one).
    fn run_ddl(&mut self, st: Statement) -> Result<QueryResult> {
        let before = self.catalog.clone();
        match self.run(0, st) {
            Ok(result) => {
                self.checkpoint()?;
                Ok(result)
            }
            Err(e) => {
                let ids: Vec<u32> = self.catalog.objects().map(|(id, _, _)| id).collect();
                let dropped = before.objects().any(|(id, _, _)| !ids.contains(&id));
                if !dropped && before.regions.len() == self.catalog.regions.len() {
                    self.restore_catalog(before)?;
                }
                Err(e)
            }
        }
    }

    /// Puts back `before`, the catalog before a DDL statement that failed, and frees
    /// the pages of the objects it lacks (after a checkpoint that writes `before` again
    /// and moves restart's redo past their logged changes, as
    /// [`Database::free_objects`] does).
    fn restore_catalog(&mut self, before: Catalog) -> Result<()> {
        let kept: Vec<u32> = before.objects().map(|(id, _, _)| id).collect();
        let made: Vec<(u32, ObjectSpace)> = self
            .catalog
            .objects()
            .filter(|(id, _, _)| !kept.contains(id))
            .map(|(id, space, _)| (id, space.clone()))
            .collect();
        self.catalog.restore(before);
        for (id, _) in &made {
            self.pool.store_mut().set_layouts(*id, &[]);
        }
        let layouts: Vec<(u32, Vec<crate::delta::IpaScheme>)> =
            self.catalog.objects().map(|(id, _, layouts)| (id, layouts.to_vec())).collect();
        for (id, layouts) in layouts {
            self.pool.store_mut().set_layouts(id, &layouts);
        }
        if made.is_empty() {
            return Ok(());
        }
        let spaces: Vec<ObjectSpace> = made.into_iter().map(|(_, space)| space).collect();
        self.free_objects(&spaces)
    }

    /// Runs the statements of a `.sql` file (a schema, a load script).
    pub fn execute_file(&mut self, path: &std::path::Path) -> Result<Vec<QueryResult>> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::Invalid(format!("{}: {e}", path.display())))?;
        self.execute(&text).map_err(|e| match e {
            Error::Invalid(m) => Error::Invalid(format!("{}: {m}", path.display())),
            other => other,
        })
    }

    fn run(&mut self, tx: u64, st: Statement) -> Result<QueryResult> {
        check_new_names(&st)?;
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
            Statement::Alter { kind, name, change: AlterChange::Ipa { scheme, mode } } => {
                self.alter_ipa(kind, &name, scheme, mode)
            }
            Statement::Alter { kind, name, change: AlterChange::Tablespace(ts) } => {
                self.alter_tablespace(kind, &name, &ts)
            }
            Statement::Insert { table, columns, rows } => {
                let t = self.catalog.table(&table)?;
                let n = rows.len();
                for row in rows {
                    let values = self.row_from(t, columns.as_deref(), row)?;
                    self.insert_row(tx, t, &values)?;
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
                    let replaced: Vec<(usize, Value)> =
                        (0..new.len()).filter(|&c| old[c] != new[c]).map(|c| (c, old[c].clone())).collect();
                    self.replace_row(tx, t, *rid, &replaced, &new)?;
                }
                Ok(QueryResult::Count { verb: "updated", rows: rows.len() })
            }
            Statement::Delete { table, filter } => {
                let t = self.catalog.table(&table)?;
                let rows = self.find(t, &filter)?;
                for (rid, old) in &rows {
                    self.delete_row(tx, t, *rid, old)?;
                }
                Ok(QueryResult::Count { verb: "deleted", rows: rows.len() })
            }
            Statement::Begin | Statement::Commit | Statement::Rollback => unreachable!("handled by the caller"),
        }
    }

    fn create_region(&mut self, name: &str, o: &sql::RegionOptions) -> Result<QueryResult> {
        if self.catalog.region(name).is_some() {
            return Err(Error::Invalid(format!("region {name} already exists")));
        }
        let cell = self.page_device().device().geometry().cell;
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
        if o.foreground_gc == Some(true) {
            spec.gc.background_free_blocks = spec.gc.foreground_free_blocks;
        }
        self.pool.store().check_scheme(scheme)?;
        // The device cannot take a region back: the catalog must have room for it first.
        self.catalog.regions.push(RegionEntry { name: name.into(), scheme });
        let fits = self.catalog.check_fits();
        self.catalog.regions.pop();
        fits?;
        let now = self.pool.now();
        let id = self.pool.store_mut().device_mut().add_region(spec, now)?;
        self.pool.store_mut().set_scheme(id, scheme)?;
        self.catalog.regions.push(RegionEntry { name: name.into(), scheme });
        let pages = self.pool.store().pages_in(id.0 as u16);
        self.regions.push(RegionPages::new(id.0 as u16, pages));
        self.save_catalog()?;
        let chips = self.page_device().chips(id).len();
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
        if region.eq_ignore_ascii_case(LOG) && self.catalog.log_region == Some(r as u16) {
            return Err(Error::Invalid("the log region holds the write-ahead log, not tablespaces".into()));
        }
        let extent_pages = extent_pages(extent_bytes, self.catalog.page_bytes)?;
        self.catalog.tablespaces.push(Tablespace { name: name.into(), region: r as u16, extent_pages });
        self.save_catalog()?;
        Ok(QueryResult::Done(format!("tablespace {name} in region {region}, extents of {extent_pages} pages")))
    }

    pub(crate) fn new_space(&mut self, tablespace: &str) -> Result<(u32, ObjectSpace)> {
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
            ipa_layouts: Vec::new(),
        };
        table.primary_key = primary_key.iter().map(|k| table.column(k)).collect::<Result<_>>()?;
        let ts = table.tablespace.clone();
        self.catalog.tables.push(table);
        let t = self.catalog.tables.len() - 1;
        if !primary_key.is_empty() {
            self.create_index(&format!("{name}_pkey"), t, &primary_key, true, &ts)?;
        }
        self.save_catalog()?;
        Ok(QueryResult::Done(format!("table {name} in tablespace {ts}")))
    }

    fn create_index(&mut self, name: &str, t: usize, cols: &[String], unique: bool, ts: &str) -> Result<QueryResult> {
        if self.catalog.name_taken(name) {
            return Err(Error::Invalid(format!("a table or index named {name} already exists")));
        }
        let columns: Vec<usize> = cols.iter().map(|c| self.catalog.tables[t].column(c)).collect::<Result<_>>()?;
        let (id, space) = self.new_space(ts)?;
        let table = self.catalog.tables[t].name.clone();
        let tablespace = self.catalog.tablespace(ts)?.name.clone();
        let def = IndexDef {
            id,
            name: name.into(),
            table,
            columns,
            unique,
            tablespace,
            root: 0,
            space,
            ipa_layouts: Vec::new(),
        };
        self.catalog.indexes.push(def);
        let index = self.catalog.indexes.len() - 1;
        // On failure the statement's caller puts the catalog back and frees the pages.
        let tx = self.begin();
        let built = self.with_object(tx.id(), Object::Index(index), btree::create).and_then(|root| {
            self.catalog.indexes[index].root = root;
            self.index_existing_rows(tx.id(), index, t)
        });
        if let Err(e) = built {
            self.abort(tx)?;
            return Err(e);
        }
        self.commit(tx)?;
        self.save_catalog()?;
        Ok(QueryResult::Done(format!("index {name} on {}", self.catalog.tables[t].name)))
    }

    /// Enters the rows table `t` holds into its new index `index`. The scan holds the
    /// pool, so it first collects each row's key and RID (the keys concatenated, not the
    /// rows: memory in proportion to the keys), then inserts them in key order: each
    /// lands after the last in its leaf, so its log record holds the entry and not the
    /// slots an insertion in the middle would shift (in table order, a 1.2 M-row table
    /// filled its 460 MB log: over 380 bytes per entry).
    fn index_existing_rows(&mut self, tx: u64, index: usize, t: usize) -> Result<()> {
        let (def, tdef) = (&self.catalog.indexes[index], &self.catalog.tables[t]);
        let mut keys = Vec::new();
        let mut entries = Vec::new();
        let mut corrupt = None;
        heap::scan(&mut pages!(self), &tdef.space, |rid, bytes| {
            match types::decode_some(&tdef.columns, bytes, |c| def.columns.contains(&c)) {
                Ok(row) => {
                    let start = keys.len();
                    crate::db::push_index_key(def, tdef, rid, &row, &mut keys);
                    entries.push((start..keys.len(), rid));
                }
                Err(m) => corrupt = Some(crate::db::corrupt_row(tdef, rid, m)),
            }
            corrupt.is_none()
        })?;
        if let Some(e) = corrupt {
            return Err(e);
        }
        // Stable: of two rows with one key (a unique index refuses them), the second
        // in table order is the one reported.
        entries.sort_by(|(a, _), (b, _)| keys[a.clone()].cmp(&keys[b.clone()]));
        for (key, rid) in entries {
            if !self.index_insert_key(tx, index, rid, &keys[key])? {
                let row = self.read_row(t, rid)?.ok_or_else(|| {
                    crate::db::corrupt_row(&self.catalog.tables[t], rid, "vanished while it was indexed".into())
                })?;
                return Err(self.duplicate(index, &row));
            }
        }
        Ok(())
    }

    /// Trims and releases the pages of objects the catalog no longer lists. A
    /// checkpoint first makes that catalog durable and moves restart's redo past every
    /// logged change of those pages (redo must not meet a page that was trimmed).
    pub(crate) fn free_objects(&mut self, spaces: &[ObjectSpace]) -> Result<()> {
        self.checkpoint()?;
        for space in spaces {
            for page in space.pages().collect::<Vec<_>>() {
                self.pool.discard(crate::store::PageId { region: space.region, page })?;
            }
            for &start in &space.extents {
                self.regions[space.region as usize].release(start, space.extent_pages);
            }
        }
        Ok(())
    }

    /// `DROP INDEX`: not of an index that backs a PRIMARY KEY (the constraint would
    /// stop holding while the schema still declares it).
    fn drop_index(&mut self, name: &str) -> Result<QueryResult> {
        let i = self.catalog.index(name)?;
        if let Some(t) = self.catalog.primary_key_of(i) {
            let (index, table) = (&self.catalog.indexes[i].name, &self.catalog.tables[t].name);
            return Err(Error::Invalid(format!(
                "index {index} backs the PRIMARY KEY of table {table} and cannot be dropped \
                 (DROP TABLE {table} drops it with the table)"
            )));
        }
        let index = self.catalog.indexes.remove(i);
        self.free_objects(&[index.space])?;
        Ok(QueryResult::Done(format!("dropped index {}", index.name)))
    }

    /// `DROP TABLE`: the table and its indexes leave the catalog in one write.
    fn drop_table(&mut self, name: &str) -> Result<QueryResult> {
        let t = self.catalog.table(name)?;
        let table = self.catalog.tables.remove(t);
        let mut spaces = vec![table.space];
        let indexes = std::mem::take(&mut self.catalog.indexes);
        for index in indexes {
            if index.table.eq_ignore_ascii_case(&table.name) {
                spaces.push(index.space);
            } else {
                self.catalog.indexes.push(index);
            }
        }
        self.free_objects(&spaces)?;
        Ok(QueryResult::Done(format!("dropped table {}", table.name)))
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
        for i in self.catalog.indexes_of(&def.name) {
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
            Some((i, lo, hi, _)) => self.index_range(i, &lo, &hi, usize::MAX)?,
            None => {
                let mut rids = Vec::new();
                heap::scan(&mut pages!(self), &self.catalog.tables[t].space, |rid, _| {
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
            let spec = self.page_device().region_spec(RegionId(i));
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
            if spec.gc.background_free_blocks == spec.gc.foreground_free_blocks {
                opts.push("GC=FOREGROUND".into());
            }
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
            out += &alter_ipa_ddl("TABLE", &t.name, &t.ipa_layouts);
            for i in self.catalog.indexes_of(&t.name) {
                let ix = &self.catalog.indexes[i];
                if self.catalog.primary_key_of(i).is_some() {
                    out += &alter_ipa_ddl("INDEX", &ix.name, &ix.ipa_layouts);
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
                out += &alter_ipa_ddl("INDEX", &ix.name, &ix.ipa_layouts);
            }
        }
        out
    }
}

/// The `ALTER … SET IPA` that gives an object its own current scheme (none if it has
/// its region's).
fn alter_ipa_ddl(kind: &str, name: &str, layouts: &[crate::delta::IpaScheme]) -> String {
    match layouts.last() {
        Some(s) if s.enabled() => format!("ALTER {kind} {name} SET IPA = {s} V = {};\n", s.v),
        Some(s) => format!("ALTER {kind} {name} SET IPA = {s};\n"),
        None => String::new(),
    }
}

/// Checks the names a statement brings into the catalog as the parser does (for a
/// statement built in code).
fn check_new_names(st: &Statement) -> Result<()> {
    let names: Vec<&str> = match st {
        Statement::CreateRegion { name, .. }
        | Statement::CreateTablespace { name, .. }
        | Statement::CreateIndex { name, .. } => vec![name],
        Statement::CreateTable { name, columns, .. } => {
            std::iter::once(name.as_str()).chain(columns.iter().map(|c| c.name.as_str())).collect()
        }
        _ => Vec::new(),
    };
    for name in names {
        sql::check_name(name).map_err(|m| Error::Invalid(format!("{}: {m}", sql::shorten(name))))?;
    }
    Ok(())
}

fn is_ddl(st: &Statement) -> bool {
    matches!(
        st,
        Statement::CreateRegion { .. }
            | Statement::CreateTablespace { .. }
            | Statement::CreateTable { .. }
            | Statement::CreateIndex { .. }
            | Statement::DropTable(_)
            | Statement::DropIndex(_)
            | Statement::Alter { .. }
    )
}

/// What the error of a statement that failed its transaction adds.
const FAILED_TRANSACTION: &str = "(the transaction failed and was rolled back; statements are refused until ROLLBACK)";

fn rolled_back(e: Error) -> Error {
    match e {
        Error::Invalid(m) => Error::Invalid(format!("{m} {FAILED_TRANSACTION}")),
        Error::Full(m) => Error::Full(format!("{m} {FAILED_TRANSACTION}")),
        Error::Parse { line, column, token, message } => {
            Error::Parse { line, column, token, message: format!("{message} {FAILED_TRANSACTION}") }
        }
        Error::Duplicate { object, key } => Error::Duplicate { object, key: format!("{key} {FAILED_TRANSACTION}") },
        other => other,
    }
}
