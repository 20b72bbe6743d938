//! The catalog: regions' IPA schemes, tablespaces, tables, indexes and where their
//! pages are. Stored on the device as JSON in the first flash pages of the `system`
//! region, in two copies written alternately:
//!
//! ```text
//! copy c (0 or 1) occupies flash pages [c·K, (c+1)·K) of region 0, K = CATALOG_BYTES / flash page
//! offset size field (first page of the copy)
//!  0      8   magic "DFCATLG1"
//!  8      8   generation (u64 LE); copy = generation mod 2
//! 16      4   JSON length (u32 LE)
//! 20      4   crc32 of the JSON
//! 24      …   JSON, continued on the copy's next pages
//! ```
//!
//! A write goes to the copy the previous one did not use, so a torn catalog write
//! leaves the other copy intact; opening takes the valid copy with the higher
//! generation.
//!
//! An object's IPA scheme is its region's until `ALTER … SET IPA` gives it its own:
//! then `ipa_layouts` lists every scheme its pages may still have, the current one
//! last (pages adopt it lazily), and no two of them reserve the same number of bytes,
//! so a page's body end names its scheme.

use crate::delta::IpaScheme;
use crate::error::{Error, Result};
use crate::space::ObjectSpace;
use crate::types::{Column, ColumnType};
use flash::{PageDevice, RegionId};
use serde::{Deserialize, Serialize};

const MAGIC: &[u8; 8] = b"DFCATLG1";
const HEADER: usize = 24;
/// Bytes per catalog copy.
pub const CATALOG_BYTES: usize = 512 << 10;

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RegionEntry {
    pub name: String,
    pub scheme: IpaScheme,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Tablespace {
    pub name: String,
    pub region: u16,
    pub extent_pages: u32,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TableDef {
    pub id: u32,
    pub name: String,
    pub tablespace: String,
    pub columns: Vec<Column>,
    /// Column positions of the primary key (empty: none).
    pub primary_key: Vec<usize>,
    pub space: ObjectSpace,
    /// IPA schemes the table's pages may have, current last (empty: its region's).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ipa_layouts: Vec<IpaScheme>,
}

impl TableDef {
    pub fn column(&self, name: &str) -> Result<usize> {
        self.columns
            .iter()
            .position(|c| c.name.eq_ignore_ascii_case(name))
            .ok_or_else(|| Error::Invalid(format!("table {} has no column {name}", self.name)))
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct IndexDef {
    pub id: u32,
    pub name: String,
    pub table: String,
    pub columns: Vec<usize>,
    pub unique: bool,
    pub tablespace: String,
    pub root: u32,
    pub space: ObjectSpace,
    /// IPA schemes the index's pages may have, current last (empty: its region's).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ipa_layouts: Vec<IpaScheme>,
}

impl IndexDef {
    pub fn key_types(&self, table: &TableDef) -> Vec<ColumnType> {
        self.columns.iter().map(|&c| table.columns[c].ty).collect()
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Catalog {
    pub page_bytes: usize,
    pub next_object: u32,
    /// Without a log: the next page LSN to hand out.
    pub next_lsn: u64,
    /// The flash region of the write-ahead log (none: no log, or an external one).
    pub log_region: Option<u16>,
    /// The log is on an external device (its only region).
    #[serde(default)]
    pub log_external: bool,
    /// The database keeps no log and commits through NoLgn-FTL's transactions.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub nolgn: bool,
    /// The last checkpoint record (0: none yet).
    pub checkpoint_lsn: u64,
    /// The oldest log record a restart needs.
    pub log_start: u64,
    /// By flash region index.
    pub regions: Vec<RegionEntry>,
    pub tablespaces: Vec<Tablespace>,
    pub tables: Vec<TableDef>,
    pub indexes: Vec<IndexDef>,
    #[serde(skip)]
    generation: u64,
    /// Checksum of the catalog as last written by `save_if_changed`, LSN counter aside.
    #[serde(skip)]
    saved_shape: Option<u32>,
}

impl Catalog {
    pub fn new(page_bytes: usize) -> Catalog {
        Catalog {
            page_bytes,
            next_object: 1,
            next_lsn: 1,
            log_region: None,
            log_external: false,
            nolgn: false,
            checkpoint_lsn: 0,
            log_start: crate::log::FIRST_LSN,
            regions: Vec::new(),
            tablespaces: Vec::new(),
            tables: Vec::new(),
            indexes: Vec::new(),
            generation: 0,
            saved_shape: None,
        }
    }

    pub fn table(&self, name: &str) -> Result<usize> {
        self.tables
            .iter()
            .position(|t| t.name.eq_ignore_ascii_case(name))
            .ok_or_else(|| Error::Invalid(format!("no table named {name}")))
    }

    pub fn index(&self, name: &str) -> Result<usize> {
        self.indexes
            .iter()
            .position(|i| i.name.eq_ignore_ascii_case(name))
            .ok_or_else(|| Error::Invalid(format!("no index named {name}")))
    }

    pub fn tablespace(&self, name: &str) -> Result<&Tablespace> {
        self.tablespaces
            .iter()
            .find(|t| t.name.eq_ignore_ascii_case(name))
            .ok_or_else(|| Error::Invalid(format!("no tablespace named {name}")))
    }

    pub fn region(&self, name: &str) -> Option<usize> {
        self.regions.iter().position(|r| r.name.eq_ignore_ascii_case(name))
    }

    /// Indexes of a table, primary key first.
    pub fn indexes_of<'a>(&'a self, table: &'a str) -> impl Iterator<Item = usize> + 'a {
        self.indexes.iter().enumerate().filter(move |(_, i)| i.table.eq_ignore_ascii_case(table)).map(|(n, _)| n)
    }

    /// The pages of the table or index with object id `object`.
    pub(crate) fn space_of(&mut self, object: u32) -> Option<&mut ObjectSpace> {
        let tables = self.tables.iter_mut().map(|t| (t.id, &mut t.space));
        let mut all = tables.chain(self.indexes.iter_mut().map(|i| (i.id, &mut i.space)));
        all.find(|(id, _)| *id == object).map(|(_, s)| s)
    }

    /// Every table and index: (object id, its space, its IPA layouts).
    pub fn objects(&self) -> impl Iterator<Item = (u32, &ObjectSpace, &[IpaScheme])> {
        let tables = self.tables.iter().map(|t| (t.id, &t.space, &t.ipa_layouts[..]));
        tables.chain(self.indexes.iter().map(|i| (i.id, &i.space, &i.ipa_layouts[..])))
    }

    /// The IPA scheme new pages of an object get: its own, or its region's.
    pub fn scheme_of(&self, space: &ObjectSpace, layouts: &[IpaScheme]) -> IpaScheme {
        layouts.last().copied().unwrap_or(self.regions[space.region as usize].scheme)
    }

    /// DB pages held by tables and indexes.
    pub fn pages_in_use(&self) -> usize {
        let tables = self.tables.iter().map(|t| t.space.pages().count());
        tables.chain(self.indexes.iter().map(|i| i.space.pages().count())).sum()
    }

    /// The table whose PRIMARY KEY index `i` backs, if it backs one.
    pub fn primary_key_of(&self, i: usize) -> Option<usize> {
        let index = &self.indexes[i];
        let t = self.table(&index.table).ok()?;
        let table = &self.tables[t];
        let is_pkey = index.name.eq_ignore_ascii_case(&format!("{}_pkey", table.name));
        (is_pkey && !table.primary_key.is_empty()).then_some(t)
    }

    /// Puts back `before`, an earlier state of this catalog (a statement that failed),
    /// keeping the count of writes: the next write must supersede every copy written
    /// since `before` was.
    pub fn restore(&mut self, before: Catalog) {
        let generation = self.generation;
        *self = before;
        self.generation = generation;
        self.saved_shape = None;
    }

    pub fn name_taken(&self, name: &str) -> bool {
        self.table(name).is_ok() || self.indexes.iter().any(|i| i.name.eq_ignore_ascii_case(name))
    }

    /// Flash pages of region 0 the two catalog copies occupy.
    pub fn reserved_flash_pages(device: &dyn PageDevice) -> u32 {
        2 * (CATALOG_BYTES / device.page_bytes()) as u32
    }

    /// Writes the catalog to the copy the last write did not use.
    pub fn save(&mut self, device: &mut dyn PageDevice, now: nand::SimTime) -> Result<()> {
        self.saved_shape = None;
        let json = self.fitting_json()?;
        self.generation += 1;
        let mut bytes = Vec::with_capacity(json.len() + HEADER);
        bytes.extend_from_slice(MAGIC);
        bytes.extend_from_slice(&self.generation.to_le_bytes());
        bytes.extend_from_slice(&(json.len() as u32).to_le_bytes());
        bytes.extend_from_slice(&crc32fast::hash(&json).to_le_bytes());
        bytes.extend_from_slice(&json);
        let page = device.page_bytes();
        bytes.resize(bytes.len().div_ceil(page) * page, 0);
        let first = (self.generation % 2) as u32 * Self::reserved_flash_pages(device) / 2;
        // Page by page: the copy is checked whole (its crc) when read back.
        for (i, chunk) in bytes.chunks(page).enumerate() {
            device.write_pages(RegionId(0), first + i as u32, chunk, now)?;
        }
        Ok(())
    }

    /// The catalog as JSON, if it fits a catalog copy.
    fn fitting_json(&self) -> Result<Vec<u8>> {
        let json =
            serde_json::to_vec(self).map_err(|e| Error::Invalid(format!("the catalog does not serialize: {e}")))?;
        if json.len() + HEADER > CATALOG_BYTES {
            return Err(Error::Full(format!(
                "the catalog would need {} bytes; a catalog copy holds {CATALOG_BYTES}",
                json.len() + HEADER
            )));
        }
        Ok(json)
    }

    /// Whether the catalog fits a catalog copy (checked before a change that cannot be
    /// taken back, such as adding a region to the device).
    pub fn check_fits(&self) -> Result<()> {
        self.fitting_json().map(drop)
    }

    /// Writes the catalog unless only its LSN counter changed since the last call wrote
    /// it (a commit without a log: its pages may have taken new extents).
    pub fn save_if_changed(&mut self, device: &mut dyn PageDevice, now: nand::SimTime) -> Result<()> {
        let next_lsn = std::mem::replace(&mut self.next_lsn, 0);
        let shape = serde_json::to_vec(self).map(|json| crc32fast::hash(&json));
        self.next_lsn = next_lsn;
        let shape = shape.map_err(|e| Error::Invalid(format!("the catalog does not serialize: {e}")))?;
        if self.saved_shape != Some(shape) {
            self.save(device, now)?;
            self.saved_shape = Some(shape);
        }
        Ok(())
    }

    /// Reads the newer valid copy.
    pub fn load(device: &mut dyn PageDevice) -> Result<Catalog> {
        let mut best: Option<Catalog> = None;
        let mut problems = Vec::new();
        for copy in 0..2 {
            match Self::load_copy(device, copy) {
                Ok(Some(c)) if best.as_ref().map(|b| b.generation) < Some(c.generation) => best = Some(c),
                Ok(_) => {}
                Err(m) => problems.push(format!("copy {copy}: {m}")),
            }
        }
        best.ok_or_else(|| {
            Error::Corrupt(if problems.is_empty() {
                "the device holds no catalog (not a DeltaFlash database)".into()
            } else {
                format!("no readable catalog ({})", problems.join("; "))
            })
        })
    }

    fn load_copy(device: &mut dyn PageDevice, copy: u32) -> std::result::Result<Option<Catalog>, String> {
        let page = device.page_bytes();
        let first = copy * Self::reserved_flash_pages(device) / 2;
        let mut read = |lpn: u32| -> std::result::Result<Option<Vec<u8>>, String> {
            match device.read(RegionId(0), lpn, 0) {
                Ok(r) => Ok(r.map(|r| r.data.to_vec())),
                Err(e) => Err(e.to_string()),
            }
        };
        let Some(head) = read(first)? else { return Ok(None) };
        if head.len() < HEADER || &head[..8] != MAGIC {
            return Err("bad magic".into());
        }
        let generation = crate::page::le_u64(&head[8..16]);
        let len = crate::page::le_u32(&head[16..20]) as usize;
        let crc = crate::page::le_u32(&head[20..24]);
        if len + HEADER > CATALOG_BYTES || generation % 2 != copy as u64 {
            return Err(format!("header names {len} bytes, generation {generation}"));
        }
        let mut bytes = head;
        for i in 1..(len + HEADER).div_ceil(page) as u32 {
            bytes.extend(read(first + i)?.ok_or("a page of the copy is missing")?);
        }
        let json = &bytes[HEADER..HEADER + len];
        if crc32fast::hash(json) != crc {
            return Err("checksum mismatch".into());
        }
        let mut c: Catalog = serde_json::from_slice(json).map_err(|e| e.to_string())?;
        c.check_references()?;
        c.generation = generation;
        Ok(Some(c))
    }

    /// Checks what the engine indexes by without further checks: tablespaces name
    /// regions, tables tablespaces, indexes tables and their columns.
    fn check_references(&self) -> std::result::Result<(), String> {
        for ts in &self.tablespaces {
            if ts.region as usize >= self.regions.len() {
                return Err(format!("tablespace {} names region {}, which does not exist", ts.name, ts.region));
            }
        }
        for t in &self.tables {
            if let Some(&c) = t.primary_key.iter().find(|&&c| c >= t.columns.len()) {
                return Err(format!("table {}'s primary key names column {c} of {}", t.name, t.columns.len()));
            }
        }
        for i in &self.indexes {
            let t = self
                .table(&i.table)
                .map_err(|_| format!("index {} is on table {}, which does not exist", i.name, i.table))?;
            let columns = self.tables[t].columns.len();
            if let Some(&c) = i.columns.iter().find(|&&c| c >= columns) {
                return Err(format!("index {} names column {c} of table {}'s {columns}", i.name, i.table));
            }
        }
        let names = self.tables.iter().map(|t| &t.name).chain(self.indexes.iter().map(|i| &i.name));
        for ((_, _, layouts), name) in self.objects().zip(names) {
            for (k, s) in layouts.iter().enumerate() {
                if layouts[..k].iter().any(|o| o.area_bytes() == s.area_bytes()) {
                    return Err(format!("{name} lists two IPA layouts of {} bytes", s.area_bytes()));
                }
            }
        }
        Ok(())
    }
}
