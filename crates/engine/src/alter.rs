//! Online layout changes: `ALTER TABLE|INDEX name SET IPA = NxM [V = v] [MODE m]` and
//! `ALTER TABLE|INDEX name SET TABLESPACE t`, on a live database.
//!
//! **SET IPA** gives the object an [N×M] scheme of its own and is only a catalog change
//! (saved, then the checkpoint every DDL takes). Pages adopt the new layout lazily: the
//! next operation that changes a page moves its slot directory to the new body end
//! (a logged change like any other, so undo and restart redo restore or repeat it), and
//! the store writes a page whose layout differs from its flash copy out-of-place. Until
//! then a page keeps reading, and taking delta-records, under its old scheme: the
//! catalog lists every scheme the object's pages may have (`ipa_layouts`, current last),
//! no two with the same delta-area size, so a page's own header names its scheme. A
//! page too full for a larger delta area keeps its layout until it has room.
//!
//! **SET TABLESPACE** copies the object into the target tablespace under one
//! transaction (a table's rows and then all of its indexes, whose entries name the new
//! RIDs; an index is rebuilt from its table), then swaps the copies in and frees the
//! old pages with one catalog write. A table takes its indexes along into the target
//! tablespace, as a layout places an index with its table (`bench --schema`, the
//! advisor's DDL): a table moved to an IPA region has its indexes there too. To keep
//! an index elsewhere, move it back on its own with `ALTER INDEX … SET TABLESPACE`. The copies carry names ending in
//! [`MOVING`] until the swap; a restart drops such leftovers of an interrupted move
//! (the catalog still names the originals), so a crash at any point leaves the object
//! either where it was or where it went.
//!
//! The MODE of an IPA scheme is the region's (its flash pages are programmed that way):
//! an ALTER may name it only to check it, and a scheme with IPA needs a region whose mode
//! is not `none` — move the object to such a region with SET TABLESPACE first.

use crate::btree;
use crate::catalog::{IndexDef, TableDef};
use crate::db::{pages, Database, Object, QueryResult};
use crate::delta::IpaScheme;
use crate::error::{Error, Result};
use crate::heap;
use crate::space::ObjectSpace;
use crate::sql::ObjectKind;
use crate::types;
use flash::{IpaMode, RegionId};

/// Suffix of the copies an interrupted `SET TABLESPACE` leaves (not a valid SQL name).
pub const MOVING: &str = "~moving";

impl Database {
    /// `ALTER TABLE|INDEX name SET IPA = scheme [MODE mode]`: new pages of the object
    /// get `scheme`, existing ones adopt it at their next change.
    pub fn alter_ipa(
        &mut self,
        kind: ObjectKind,
        name: &str,
        scheme: IpaScheme,
        mode: Option<IpaMode>,
    ) -> Result<QueryResult> {
        let (id, space, layouts) = self.object_entry(kind, name)?;
        let region = space.region;
        let region_name = self.catalog.regions[region as usize].name.clone();
        let region_mode = self.page_device().region_spec(RegionId(region as usize)).ipa_mode;
        if let Some(mode) = mode.filter(|&m| m != region_mode) {
            return Err(Error::Invalid(format!(
                "{name} lies in region {region_name}, whose IPA mode is {}, not {}: the mode is the region's; \
                 move {name} with ALTER … SET TABLESPACE to a tablespace in a {} region first",
                region_mode.name(),
                mode.name(),
                mode.name()
            )));
        }
        if scheme.enabled() && region_mode == IpaMode::None {
            return Err(Error::Invalid(format!(
                "{name} lies in region {region_name}, whose IPA mode is none: IPA [{scheme}] needs a region \
                 with IPA_MODE slc, pslc or odd-mlc (move {name} there with ALTER … SET TABLESPACE)"
            )));
        }
        self.pool.store().check_scheme(scheme).map_err(|e| match e {
            Error::Invalid(m) => Error::Invalid(format!("{name}: {m}")),
            other => other,
        })?;
        let current = self.catalog.scheme_of(&space, &layouts);
        let mut next = if layouts.is_empty() { vec![current] } else { layouts };
        if current == scheme {
            return Ok(QueryResult::Done(format!("{name} already has IPA [{scheme}] V={}", scheme.v)));
        }
        if let Some(clash) = next.iter().find(|s| s.area_bytes() == scheme.area_bytes() && **s != scheme) {
            return Err(Error::Invalid(format!(
                "{name}: IPA [{scheme}] V={} reserves {} bytes per page, as [{clash}] V={} does, which pages of \
                 {name} may still have; a page could not tell them apart (pick another V)",
                scheme.v,
                scheme.area_bytes(),
                clash.v
            )));
        }
        next.retain(|s| *s != scheme);
        next.push(scheme);
        self.pool.store_mut().set_layouts(id, &next);
        *self.layouts_mut(kind, name)? = next;
        self.save_catalog()?;
        Ok(QueryResult::Done(format!(
            "{name}: IPA [{scheme}] V={} ({} bytes per page) in region {region_name}; pages adopt it at their next change",
            scheme.v,
            scheme.area_bytes()
        )))
    }

    /// `ALTER TABLE|INDEX name SET TABLESPACE ts`: copies the object (a table with all
    /// of its indexes) into `ts` and swaps the copy in.
    pub fn alter_tablespace(&mut self, kind: ObjectKind, name: &str, ts: &str) -> Result<QueryResult> {
        let target = self.catalog.tablespace(ts)?.clone();
        if self.catalog.log_region == Some(target.region) {
            return Err(Error::Invalid("the log region holds the write-ahead log, not tables".into()));
        }
        let (_, space, _) = self.object_entry(kind, name)?;
        let current_ts = match kind {
            ObjectKind::Table => &self.catalog.tables[self.catalog.table(name)?].tablespace,
            ObjectKind::Index => &self.catalog.indexes[self.catalog.index(name)?].tablespace,
        };
        let in_target = |ts: &str, region: u16| ts.eq_ignore_ascii_case(&target.name) && region == target.region;
        let indexes_in_target = kind == ObjectKind::Index
            || self
                .catalog
                .indexes_of(name)
                .all(|i| in_target(&self.catalog.indexes[i].tablespace, self.catalog.indexes[i].space.region));
        if in_target(current_ts, space.region) && indexes_in_target {
            return Ok(QueryResult::Done(format!("{name} is already in tablespace {}", target.name)));
        }
        let tx = self.begin();
        let built = match kind {
            ObjectKind::Table => self.copy_table(tx.id(), name, &target.name),
            ObjectKind::Index => self.copy_index(tx.id(), name, &target.name).map(|i| vec![i]),
        };
        let copies = match built {
            Ok(copies) => copies,
            Err(e) => {
                self.abort(tx)?;
                self.drop_copies()?;
                return Err(e);
            }
        };
        self.commit(tx)?;
        // The swap: originals out, copies renamed; one catalog write makes it durable.
        let mut freed: Vec<ObjectSpace> = Vec::new();
        if kind == ObjectKind::Table {
            let t = self.catalog.table(name)?;
            freed.push(self.catalog.tables.remove(t).space);
            let copy = self.catalog.table(&format!("{name}{MOVING}"))?;
            self.catalog.tables[copy].name = name.to_string();
        }
        let originals: Vec<String> =
            copies.iter().map(|&c| self.catalog.indexes[c].name.trim_end_matches(MOVING).to_string()).collect();
        let with_indexes = match (kind, originals.is_empty()) {
            (ObjectKind::Table, false) => format!(" with its indexes {}", originals.join(", ")),
            _ => String::new(),
        };
        for original in originals {
            let i = self.catalog.index(&original)?;
            freed.push(self.catalog.indexes.remove(i).space);
        }
        for ix in &mut self.catalog.indexes {
            if let Some(base) = ix.name.strip_suffix(MOVING) {
                ix.name = base.to_string();
            }
            if let Some(base) = ix.table.strip_suffix(MOVING) {
                ix.table = base.to_string();
            }
        }
        self.free_objects(&freed)?;
        let region = &self.catalog.regions[target.region as usize].name;
        Ok(QueryResult::Done(format!("{name}{with_indexes} moved to tablespace {} (region {region})", target.name)))
    }

    /// Drops the copies an interrupted `SET TABLESPACE` left (at restart, or when the
    /// move fails); the originals are untouched.
    pub(crate) fn drop_copies(&mut self) -> Result<()> {
        let mut freed = Vec::new();
        self.catalog.indexes.retain(|i| {
            let copy = i.name.ends_with(MOVING) || i.table.ends_with(MOVING);
            if copy {
                freed.push(i.space.clone());
            }
            !copy
        });
        self.catalog.tables.retain(|t| {
            let copy = t.name.ends_with(MOVING);
            if copy {
                freed.push(t.space.clone());
            }
            !copy
        });
        if freed.is_empty() {
            return Ok(());
        }
        self.free_objects(&freed)
    }

    /// Copies table `name` with its rows into tablespace `ts` as `name~moving`, and
    /// each of its indexes over the copy, also into `ts`; returns the indexes'
    /// positions.
    fn copy_table(&mut self, tx: u64, name: &str, ts: &str) -> Result<Vec<usize>> {
        let t = self.catalog.table(name)?;
        let (id, space) = self.new_space(ts)?;
        let original = &self.catalog.tables[t];
        let copy = TableDef {
            id,
            name: format!("{}{MOVING}", original.name),
            tablespace: self.catalog.tablespace(ts)?.name.clone(),
            columns: original.columns.clone(),
            primary_key: original.primary_key.clone(),
            space,
            ipa_layouts: Vec::new(),
        };
        let mut rows = Vec::new();
        heap::scan(&mut pages!(self), &original.space, |_, bytes| {
            rows.push(bytes.to_vec());
            true
        })?;
        self.catalog.tables.push(copy);
        let c = self.catalog.tables.len() - 1;
        let mut placed = Vec::with_capacity(rows.len());
        let space = self.options.heap_space;
        for bytes in rows {
            let rid = self.with_object(tx, Object::Table(c), |a| heap::insert(a, &bytes, space))?;
            let row = types::decode_row(&self.catalog.tables[c].columns, &bytes)
                .map_err(|m| Error::Corrupt(format!("table {name}: {m}")))?;
            placed.push((rid, row));
        }
        let indexes: Vec<usize> = self.catalog.indexes_of(name).collect();
        let mut copies = Vec::new();
        for i in indexes {
            let def = self.index_copy(i, ts, &format!("{name}{MOVING}"))?;
            self.catalog.indexes.push(def);
            let n = self.catalog.indexes.len() - 1;
            copies.push(n);
            self.catalog.indexes[n].root = self.with_object(tx, Object::Index(n), btree::create)?;
            for (rid, row) in &placed {
                self.index_insert(tx, n, c, *rid, row)?;
            }
        }
        Ok(copies)
    }

    /// Builds index `name` anew in tablespace `ts` as `name~moving`, from its table.
    fn copy_index(&mut self, tx: u64, name: &str, ts: &str) -> Result<usize> {
        let i = self.catalog.index(name)?;
        let table = self.catalog.indexes[i].table.clone();
        let def = self.index_copy(i, ts, &table)?;
        let t = self.catalog.table(&table)?;
        self.catalog.indexes.push(def);
        let n = self.catalog.indexes.len() - 1;
        self.catalog.indexes[n].root = self.with_object(tx, Object::Index(n), btree::create)?;
        let cols = self.catalog.tables[t].columns.clone();
        let mut rows = Vec::new();
        heap::scan(&mut pages!(self), &self.catalog.tables[t].space, |rid, bytes| {
            rows.push((rid, types::decode_row(&cols, bytes)));
            true
        })?;
        for (rid, row) in rows {
            let row = row.map_err(|m| Error::Corrupt(format!("table {table}: {m}")))?;
            self.index_insert(tx, n, t, rid, &row)?;
        }
        Ok(n)
    }

    /// An empty copy of index `i`'s definition in tablespace `ts`, on table `table`.
    fn index_copy(&mut self, i: usize, ts: &str, table: &str) -> Result<IndexDef> {
        let (id, space) = self.new_space(ts)?;
        let original = &self.catalog.indexes[i];
        Ok(IndexDef {
            id,
            name: format!("{}{MOVING}", original.name),
            table: table.to_string(),
            columns: original.columns.clone(),
            unique: original.unique,
            tablespace: self.catalog.tablespace(ts)?.name.clone(),
            root: 0,
            space,
            ipa_layouts: Vec::new(),
        })
    }

    /// The id, pages and IPA layouts of a table or index.
    fn object_entry(&self, kind: ObjectKind, name: &str) -> Result<(u32, ObjectSpace, Vec<IpaScheme>)> {
        Ok(match kind {
            ObjectKind::Table => {
                let t = &self.catalog.tables[self.catalog.table(name)?];
                (t.id, t.space.clone(), t.ipa_layouts.clone())
            }
            ObjectKind::Index => {
                let i = &self.catalog.indexes[self.catalog.index(name)?];
                (i.id, i.space.clone(), i.ipa_layouts.clone())
            }
        })
    }

    fn layouts_mut(&mut self, kind: ObjectKind, name: &str) -> Result<&mut Vec<IpaScheme>> {
        Ok(match kind {
            ObjectKind::Table => {
                let t = self.catalog.table(name)?;
                &mut self.catalog.tables[t].ipa_layouts
            }
            ObjectKind::Index => {
                let i = self.catalog.index(name)?;
                &mut self.catalog.indexes[i].ipa_layouts
            }
        })
    }
}
