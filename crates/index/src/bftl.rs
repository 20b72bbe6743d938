//! BFTL (Wu, Kuo, Chang 2003/2007) over a conventional FTL (FAST in the IPL paper).
//!
//! Every change to a node becomes an index unit (`node u32` and a [`Rec`]) in the
//! reservation buffer, one flash page of RAM; a full buffer is committed to the next
//! free logical page, shared by the units of many nodes. The node translation table
//! (NTT) lists, per node, the logical pages holding its units, oldest first; a node is
//! rebuilt by reading them all and applying its units in order (then those still in the
//! reservation buffer). When a node's list grows beyond the compaction threshold (4 for
//! 2 KB nodes, 32 for 8 KB, as in BFTL and the IPL paper), the node is compacted: read,
//! and written as fresh units in pages of its own, which replace the list.
//!
//! A logical page no list names any more is reused by later commits (our choice; the
//! IPL paper notes BFTL proposes no garbage collection at this level). Page format:
//! units back to back, ended by node id 0xFFFF_FFFF (erased bytes) or the page end.
//!
//! Beside each written page the store keeps in RAM where its units start, by node (a
//! page of 2 KB holds ~150 units of many nodes). A rebuild still reads every page of
//! the node's list from flash, but decodes only the node's own units of it instead of
//! walking all of them: the flash operations are the same, the CPU time of the
//! simulation is not (the walk was ~half of a run with 8 KB nodes).
//!
//! Fault model: that of the FTL; a unit that does not decode, or whose node id in the
//! page is not the node the directory names, is an error naming node and page.

use crate::error::Error;
use crate::node::{capacity_of, Node, NodeId, Rec};
use crate::store::{NodeStore, StoreCounters, Usage};
use flash::ftl::Ftl;
use nand::{Device, SimTime};
use rustc_hash::FxHashMap;

/// Where an index unit starts: its node and its byte offset in the page.
type Unit = (NodeId, u32);

pub struct Bftl {
    ftl: Box<dyn Ftl>,
    node_bytes: usize,
    threshold: usize,
    log_blocks: u32,
    /// Node → logical pages holding its units, oldest first.
    ntt: FxHashMap<NodeId, Vec<u32>>,
    /// Logical page → how many NTT lists name it.
    page_refs: Vec<u32>,
    /// Logical page → its units as `(node, byte offset)`, sorted (see the module doc).
    units_at: Vec<Vec<Unit>>,
    free_pages: Vec<u32>,
    next_page: u32,
    /// The reservation buffer: encoded units, and each unit's node and offset.
    reserved: Vec<u8>,
    reserved_units: Vec<Unit>,
    next_id: NodeId,
    free_ids: Vec<NodeId>,
    live: Vec<bool>,
    page: Vec<u8>,
    now: SimTime,
    counters: StoreCounters,
}

impl Bftl {
    /// `threshold`: most NTT pages per node before a compaction (0: 4 for nodes of one
    /// flash page, else 32).
    pub fn new(ftl: Box<dyn Ftl>, node_bytes: usize, threshold: usize, log_blocks: u32) -> Result<Bftl, Error> {
        let page = ftl.page_bytes();
        if node_bytes < 64 {
            return Err(Error::Config(format!("BFTL node size {node_bytes} B is below 64 B")));
        }
        let threshold = match threshold {
            0 if node_bytes <= page => 4,
            0 => 32,
            t => t,
        };
        Ok(Bftl {
            ftl,
            node_bytes,
            threshold,
            log_blocks,
            ntt: FxHashMap::default(),
            page_refs: Vec::new(),
            units_at: Vec::new(),
            free_pages: Vec::new(),
            next_page: 0,
            reserved: Vec::with_capacity(page),
            reserved_units: Vec::new(),
            next_id: 0,
            free_ids: Vec::new(),
            live: Vec::new(),
            page: vec![0xFF; page],
            now: 0,
            counters: StoreCounters::default(),
        })
    }

    fn take_page(&mut self) -> Result<u32, Error> {
        if let Some(lpn) = self.free_pages.pop() {
            return Ok(lpn);
        }
        if self.next_page >= self.ftl.logical_pages() {
            return Err(Error::Full(format!("BFTL: all {} logical pages hold live units", self.next_page)));
        }
        self.next_page += 1;
        self.page_refs.push(0);
        self.units_at.push(Vec::new());
        Ok(self.next_page - 1)
    }

    fn release(&mut self, lpn: u32) {
        let refs = &mut self.page_refs[lpn as usize];
        *refs -= 1;
        if *refs == 0 {
            self.free_pages.push(lpn);
            self.units_at[lpn as usize] = Vec::new();
        }
    }

    /// Writes `units` (whose starts `at` lists, sorted) to logical page `lpn`.
    fn write_page(&mut self, lpn: u32, units: &[u8], at: Vec<Unit>) -> Result<(), Error> {
        self.page.fill(0xFF);
        self.page[..units.len()].copy_from_slice(units);
        let t = self.ftl.write(lpn, &self.page, self.now)?;
        self.now = self.now.max(t.end_ns);
        self.units_at[lpn as usize] = at;
        Ok(())
    }

    /// Writes the reservation buffer to a fresh page and compacts nodes over threshold.
    fn commit(&mut self) -> Result<(), Error> {
        if self.reserved.is_empty() {
            return Ok(());
        }
        let lpn = self.take_page()?;
        let units = std::mem::take(&mut self.reserved);
        let mut at = std::mem::take(&mut self.reserved_units);
        at.sort_unstable();
        let mut nodes: Vec<NodeId> = at.iter().map(|&(id, _)| id).collect();
        nodes.dedup();
        self.write_page(lpn, &units, at)?;
        self.reserved = units;
        self.reserved.clear();
        // Units of a node freed since stay in the page but no list names them.
        nodes.retain(|&id| self.live[id as usize]);
        for &id in &nodes {
            self.ntt.entry(id).or_default().push(lpn);
            self.page_refs[lpn as usize] += 1;
        }
        for id in nodes {
            if self.ntt.get(&id).is_some_and(|l| l.len() > self.threshold) {
                self.compact(id)?;
            }
        }
        Ok(())
    }

    /// Rewrites node `id` as its own units in pages of its own.
    fn compact(&mut self, id: NodeId) -> Result<(), Error> {
        let node = self.rebuild(id, false)?;
        let mut pages = Vec::new();
        let mut units = Vec::with_capacity(self.page.len());
        let mut at = Vec::new();
        let mut unit = Vec::with_capacity(16);
        for rec in node.rebuild_records() {
            unit.clear();
            unit.extend(id.to_le_bytes());
            rec.encode(&mut unit);
            if units.len() + unit.len() > self.page.len() {
                let lpn = self.take_page()?;
                self.write_page(lpn, &units, std::mem::take(&mut at))?;
                pages.push(lpn);
                units.clear();
            }
            at.push((id, units.len() as u32));
            units.extend_from_slice(&unit);
        }
        let lpn = self.take_page()?;
        self.write_page(lpn, &units, at)?;
        pages.push(lpn);
        for &p in &pages {
            self.page_refs[p as usize] += 1;
        }
        for old in self.ntt.insert(id, pages).unwrap_or_default() {
            self.release(old);
        }
        self.counters.compactions += 1;
        self.counters.merges += 1;
        Ok(())
    }

    /// Node `id` from its NTT pages and the reservation buffer. The first pages, as
    /// many as a node image takes, count as node reads; the rest (and every read of a
    /// compaction, `for_load == false`) as additional reads.
    fn rebuild(&mut self, id: NodeId, for_load: bool) -> Result<Node, Error> {
        let list = self.ntt.get(&id).cloned().unwrap_or_default();
        let in_buffer = |u: &&Unit| u.0 == id;
        if list.is_empty() && !self.reserved_units.iter().any(|u| in_buffer(&u)) {
            return Err(Error::Corrupt { what: "BFTL node (no index units)", location: format!("node {id}") });
        }
        let node_pages = self.node_bytes.div_ceil(self.page.len());
        let mut node = Node::empty_leaf();
        for (i, &lpn) in list.iter().enumerate() {
            let read = self.ftl.read(lpn, self.now)?.ok_or_else(|| Error::Corrupt {
                what: "BFTL page (never written)",
                location: format!("node {id}, logical page {lpn}"),
            })?;
            self.now = self.now.max(read.timing.end_ns);
            if for_load && i < node_pages {
                self.counters.node_reads += 1;
            } else {
                self.counters.extra_reads += 1;
            }
            let at = &self.units_at[lpn as usize];
            let first = at.partition_point(|&(owner, _)| owner < id);
            let own = at[first..].iter().take_while(|&&(owner, _)| owner == id);
            apply_units(read.data, own, &mut node, &|| format!("node {id}, logical page {lpn}"))?;
        }
        let own = self.reserved_units.iter().filter(in_buffer);
        apply_units(&self.reserved, own, &mut node, &|| format!("node {id}, reservation buffer"))?;
        Ok(node)
    }
}

/// Applies to `node` the units of `units` that `own` points at (all of one node, in
/// page order), checking that each names that node.
fn apply_units<'a>(
    units: &[u8],
    own: impl Iterator<Item = &'a Unit>,
    node: &mut Node,
    location: &dyn Fn() -> String,
) -> Result<(), Error> {
    for &(id, at) in own {
        let at = at as usize;
        let owner = units.get(at..at + 4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
        if owner != Some(id) {
            return Err(Error::Corrupt { what: "BFTL index unit (another node's)", location: location() });
        }
        let Some((rec, _)) = Rec::decode(&units[at + 4..], location)? else {
            return Err(Error::Corrupt { what: "BFTL index unit (node without record)", location: location() });
        };
        node.apply(&rec)
            .map_err(|e| Error::Corrupt { what: "BFTL index unit", location: format!("{}: {e}", location()) })?;
    }
    Ok(())
}

impl NodeStore for Bftl {
    fn describe(&self) -> String {
        format!(
            "BFTL on the {} FTL, {} B nodes, compaction beyond {} pages",
            self.ftl.kind().name(),
            self.node_bytes,
            self.threshold
        )
    }

    fn capacity(&self, level: u8, _height: u8) -> usize {
        capacity_of(self.node_bytes, level == 0)
    }

    fn allocate(&mut self) -> Result<NodeId, Error> {
        let id = self.free_ids.pop().unwrap_or_else(|| {
            self.live.push(false);
            self.next_id += 1;
            self.next_id - 1
        });
        self.live[id as usize] = true;
        Ok(id)
    }

    fn load(&mut self, id: NodeId) -> Result<Node, Error> {
        self.rebuild(id, true)
    }

    fn logged(&mut self, id: NodeId, _node: &Node, rec: &Rec) -> Result<(), Error> {
        if self.reserved.len() + 4 + rec.encoded_bytes() > self.page.len() {
            self.commit()?;
        }
        self.reserved_units.push((id, self.reserved.len() as u32));
        self.reserved.extend(id.to_le_bytes());
        rec.encode(&mut self.reserved);
        Ok(())
    }

    /// Nothing to do: every change is already an index unit.
    fn write_back(&mut self, _id: NodeId, _node: &Node) -> Result<(), Error> {
        Ok(())
    }

    fn freed(&mut self, id: NodeId) -> Result<(), Error> {
        for lpn in self.ntt.remove(&id).unwrap_or_default() {
            self.release(lpn);
        }
        self.live[id as usize] = false;
        self.free_ids.push(id);
        Ok(())
    }

    fn sync(&mut self) -> Result<(), Error> {
        self.commit()
    }

    fn device(&self) -> &Device {
        self.ftl.device()
    }

    fn now(&self) -> SimTime {
        self.now
    }

    fn counters(&self) -> StoreCounters {
        let c = self.ftl.counters();
        let mut out = self.counters;
        out.merges += c.merges_switch + c.merges_partial + c.merges_full;
        out
    }

    fn usage(&self) -> Usage {
        let ppb = self.device().geometry().pages_per_block;
        let mut blocks: Vec<u32> =
            (0..self.next_page).filter(|&p| self.page_refs[p as usize] > 0).map(|p| p / ppb).collect();
        blocks.dedup();
        Usage {
            used_blocks: blocks.len() as u64,
            log_blocks: self.log_blocks as u64,
            total_blocks: self.device().geometry().total_blocks() as u64,
        }
    }
}
