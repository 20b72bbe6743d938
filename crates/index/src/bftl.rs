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
//! units back to back, grouped by node (a commit sorts the reservation buffer by node,
//! keeping each node's units in the order they were made), ended by node id
//! 0xFFFF_FFFF (erased bytes) or the page end. An NTT entry is a page and the byte
//! range of the node's units in it, so a rebuild reads every page of the list from
//! flash as before but decodes only its own units, not the ~150 units of many nodes a
//! 2 KB page holds (that walk was half the CPU time of a run with 8 KB nodes; the
//! flash operations are the same either way).
//!
//! Fault model: that of the FTL; a unit that does not decode, or that names another
//! node inside a node's range, is an error naming node and page.

use crate::error::Error;
use crate::node::{capacity_of, Node, NodeId, Rec};
use crate::store::{NodeStore, StoreCounters, Usage};
use flash::ftl::Ftl;
use nand::{Device, SimTime};
use rustc_hash::FxHashMap;

/// A node's units in one logical page: bytes `start..end` of it.
#[derive(Clone, Copy, Debug)]
struct Extent {
    lpn: u32,
    start: u32,
    end: u32,
}

pub struct Bftl {
    ftl: Box<dyn Ftl>,
    node_bytes: usize,
    threshold: usize,
    log_blocks: u32,
    /// Node → where its units are, oldest first.
    ntt: FxHashMap<NodeId, Vec<Extent>>,
    /// Logical page → how many NTT lists name it.
    page_refs: Vec<u32>,
    free_pages: Vec<u32>,
    next_page: u32,
    /// The reservation buffer: encoded units, and each unit's node and byte range.
    reserved: Vec<u8>,
    reserved_units: Vec<(NodeId, u32, u32)>,
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
        Ok(self.next_page - 1)
    }

    fn release(&mut self, lpn: u32) {
        let refs = &mut self.page_refs[lpn as usize];
        *refs -= 1;
        if *refs == 0 {
            self.free_pages.push(lpn);
        }
    }

    fn write_page(&mut self, lpn: u32, units: &[u8]) -> Result<(), Error> {
        self.page.fill(0xFF);
        self.page[..units.len()].copy_from_slice(units);
        let t = self.ftl.write(lpn, &self.page, self.now)?;
        self.now = self.now.max(t.end_ns);
        Ok(())
    }

    /// Writes the reservation buffer, grouped by node, to a fresh page and compacts
    /// nodes over threshold.
    fn commit(&mut self) -> Result<(), Error> {
        if self.reserved.is_empty() {
            return Ok(());
        }
        let lpn = self.take_page()?;
        let mut order = std::mem::take(&mut self.reserved_units);
        // By node, then by offset: each node's units together, in the order made.
        order.sort_unstable();
        let mut grouped = Vec::with_capacity(self.reserved.len());
        let mut extents: Vec<(NodeId, Extent)> = Vec::new();
        for &(id, start, end) in &order {
            let from = grouped.len() as u32;
            grouped.extend_from_slice(&self.reserved[start as usize..end as usize]);
            let to = grouped.len() as u32;
            match extents.last_mut() {
                Some((last, e)) if *last == id => e.end = to,
                _ => extents.push((id, Extent { lpn, start: from, end: to })),
            }
        }
        self.write_page(lpn, &grouped)?;
        self.reserved.clear();
        order.clear();
        self.reserved_units = order;
        // Units of a node freed since stay in the page but no list names them.
        extents.retain(|&(id, _)| self.live[id as usize]);
        for &(id, extent) in &extents {
            self.ntt.entry(id).or_default().push(extent);
            self.page_refs[lpn as usize] += 1;
        }
        for (id, _) in extents {
            if self.ntt.get(&id).is_some_and(|l| l.len() > self.threshold) {
                self.compact(id)?;
            }
        }
        Ok(())
    }

    /// Rewrites node `id` as its own units in pages of its own.
    fn compact(&mut self, id: NodeId) -> Result<(), Error> {
        let node = self.rebuild(id, false)?;
        let mut extents = Vec::new();
        let mut units = Vec::with_capacity(self.page.len());
        let mut unit = Vec::with_capacity(16);
        for rec in node.rebuild_records() {
            unit.clear();
            unit.extend(id.to_le_bytes());
            rec.encode(&mut unit);
            if units.len() + unit.len() > self.page.len() {
                let lpn = self.take_page()?;
                self.write_page(lpn, &units)?;
                extents.push(Extent { lpn, start: 0, end: units.len() as u32 });
                units.clear();
            }
            units.extend_from_slice(&unit);
        }
        let lpn = self.take_page()?;
        self.write_page(lpn, &units)?;
        extents.push(Extent { lpn, start: 0, end: units.len() as u32 });
        for e in &extents {
            self.page_refs[e.lpn as usize] += 1;
        }
        for old in self.ntt.insert(id, extents).unwrap_or_default() {
            self.release(old.lpn);
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
        if list.is_empty() && !self.reserved_units.iter().any(|u| u.0 == id) {
            return Err(Error::Corrupt { what: "BFTL node (no index units)", location: format!("node {id}") });
        }
        let node_pages = self.node_bytes.div_ceil(self.page.len());
        // Room for a full node up front: a rebuild appends up to capacity + 1 entries
        // (an insert is logged before the split that follows it).
        let room = capacity_of(self.node_bytes, true) + 2;
        let mut node = Node { keys: Vec::with_capacity(room), ptrs: Vec::with_capacity(room), ..Node::empty_leaf() };
        for (i, e) in list.iter().enumerate() {
            let lpn = e.lpn;
            let location = || format!("node {id}, logical page {lpn}");
            let read = self
                .ftl
                .read(lpn, self.now)?
                .ok_or_else(|| Error::Corrupt { what: "BFTL page (never written)", location: location() })?;
            self.now = self.now.max(read.timing.end_ns);
            if for_load && i < node_pages {
                self.counters.node_reads += 1;
            } else {
                self.counters.extra_reads += 1;
            }
            let units = read
                .data
                .get(e.start as usize..e.end as usize)
                .ok_or_else(|| Error::Corrupt { what: "BFTL page (shorter than its units)", location: location() })?;
            apply_units(units, id, &mut node, &location)?;
        }
        for &(owner, start, end) in &self.reserved_units {
            if owner == id {
                let units = &self.reserved[start as usize..end as usize];
                apply_units(units, id, &mut node, &|| format!("node {id}, reservation buffer"))?;
            }
        }
        Ok(node)
    }
}

/// Applies `units` (all of node `id`, back to back) to `node`.
fn apply_units(units: &[u8], id: NodeId, node: &mut Node, location: &dyn Fn() -> String) -> Result<(), Error> {
    let mut at = 0;
    while at < units.len() {
        let owner = units.get(at..at + 4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
        if owner != Some(id) {
            return Err(Error::Corrupt { what: "BFTL index unit (another node's)", location: location() });
        }
        let Some((rec, used)) = Rec::decode(&units[at + 4..], location)? else {
            return Err(Error::Corrupt { what: "BFTL index unit (node without record)", location: location() });
        };
        node.apply(&rec)
            .map_err(|e| Error::Corrupt { what: "BFTL index unit", location: format!("{}: {e}", location()) })?;
        at += 4 + used;
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
        let start = self.reserved.len() as u32;
        self.reserved.extend(id.to_le_bytes());
        rec.encode(&mut self.reserved);
        self.reserved_units.push((id, start, self.reserved.len() as u32));
        Ok(())
    }

    /// Nothing to do: every change is already an index unit.
    fn write_back(&mut self, _id: NodeId, _node: &Node) -> Result<(), Error> {
        Ok(())
    }

    fn freed(&mut self, id: NodeId) -> Result<(), Error> {
        for e in self.ntt.remove(&id).unwrap_or_default() {
            self.release(e.lpn);
        }
        // Its units still in the reservation buffer go too: the id is reused, and the
        // next node under it must not inherit them at the commit or a rebuild.
        self.reserved_units.retain(|&(owner, _, _)| owner != id);
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
