//! Statements: DDL (regions, tablespaces, tables, indexes, drops, `ALTER` in
//! [`crate::alter`]) and DML routed to
//! the row operations of [`Database`], with the access-path choice for WHERE clauses
//! and the schema printed back as DDL.

use crate::btree;
use crate::catalog::{IndexDef, RegionEntry, TableDef, Tablespace};
use crate::db::{coerce, extent_pages, pages, Database, Object, QueryResult, TableId, LOG, SYSTEM};
use crate::error::{Error, Result};
use crate::heap::{self, Rid};
use crate::space::{ObjectSpace, RegionPages};
use crate::sql::{self, AlterChange, Condition, SetExpr, Statement};
use crate::types::{self, Column, Value};
use flash::{IpaMode, RegionId, RegionSpec};

impl Database {
    /// Runs `;`-separated statements; errors name the statement's line.
    ///
    /// A DML statement runs in the open transaction (`BEGIN` … `COMMIT`/`ROLLBACK`) or
    /// in one of its own; a statement that fails rolls its transaction back. DDL runs
    /// outside transactions and is followed by a checkpoint.
    pub fn execute(&mut self, text: &str) -> Result<Vec<QueryResult>> {
        self.roll_back_dropped()?;
        let mut out = Vec::new();
        for located in sql::parse(text)? {
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

    fn run_in_transaction(&mut self, st: Statement) -> Result<QueryResult> {
        let ddl = matches!(
            st,
            Statement::CreateRegion { .. }
                | Statement::CreateTablespace { .. }
                | Statement::CreateTable { .. }
                | Statement::CreateIndex { .. }
                | Statement::DropTable(_)
                | Statement::DropIndex(_)
                | Statement::Alter { .. }
        );
        match st {
            Statement::Begin if self.sql_tx.is_some() => Err(Error::Invalid("a transaction is already open".into())),
            Statement::Begin => {
                self.sql_tx = Some(self.begin());
                Ok(QueryResult::Done("BEGIN".into()))
            }
            Statement::Commit | Statement::Rollback => {
                let Some(tx) = self.sql_tx.take() else {
                    return Err(Error::Invalid("no transaction is open".into()));
                };
                if st == Statement::Commit {
                    self.commit(tx)?;
                    Ok(QueryResult::Done("COMMIT".into()))
                } else {
                    self.abort(tx)?;
                    Ok(QueryResult::Done("ROLLBACK".into()))
                }
            }
            _ if ddl && self.sql_tx.is_some() => {
                Err(Error::Invalid("DDL inside a transaction is not supported; COMMIT or ROLLBACK first".into()))
            }
            _ if ddl => {
                let result = self.run(0, st)?;
                self.checkpoint()?;
                Ok(result)
            }
            _ => {
                let (tx, own) = match self.sql_tx.take() {
                    Some(tx) => (tx, false),
                    None => (self.begin(), true),
                };
                match self.run(tx.id(), st) {
                    Ok(result) if own => {
                        self.commit(tx)?;
                        Ok(result)
                    }
                    Ok(result) => {
                        self.sql_tx = Some(tx);
                        Ok(result)
                    }
                    Err(e) => {
                        self.abort(tx)?;
                        Err(if own { e } else { rolled_back(e) })
                    }
                }
            }
        }
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
        self.pool.store().check_scheme(scheme)?;
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
        let tx = self.begin();
        let root = self.with_object(tx.id(), Object::Index(index), btree::create);
        self.catalog.indexes[index].root = match root {
            Ok(root) => root,
            Err(e) => {
                self.abort(tx)?;
                self.catalog.indexes.pop();
                return Err(e);
            }
        };
        if let Err(e) = self.index_existing_rows(tx.id(), index, t) {
            self.abort(tx)?;
            self.drop_index(name)?;
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

    /// Trims and releases the pages of an object the catalog no longer lists. A
    /// checkpoint first makes that catalog durable and moves restart's redo past every
    /// logged change of those pages (redo must not meet a page that was trimmed).
    pub(crate) fn free_object(&mut self, space: &ObjectSpace) -> Result<()> {
        self.checkpoint()?;
        for page in space.pages().collect::<Vec<_>>() {
            self.pool.discard(crate::store::PageId { region: space.region, page })?;
        }
        for &start in &space.extents {
            self.regions[space.region as usize].release(start, space.extent_pages);
        }
        Ok(())
    }

    fn drop_index(&mut self, name: &str) -> Result<QueryResult> {
        let index = self.catalog.indexes.remove(self.catalog.index(name)?);
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
                if ix.name == format!("{}_pkey", t.name) {
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

fn rolled_back(e: Error) -> Error {
    match e {
        Error::Invalid(m) => Error::Invalid(format!("{m} (the transaction was rolled back)")),
        Error::Duplicate { object, key } => {
            Error::Duplicate { object: format!("{object} (the transaction was rolled back)"), key }
        }
        other => other,
    }
}
