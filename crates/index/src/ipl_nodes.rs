//! The IPL B+-tree's node store (ipl-btree-in-page-logging.txt §3): each node is one
//! DB page of the IPL store (`flash::ipl`), whose erase units hold 15 nodes of 8 KB
//! and a 8 KB log region of 512 B sectors in the paper's setting. A node's first write
//! programs it; after that every change is a physiological log record added to the
//! node's in-memory log sector (written to its unit's log region when full, or when the
//! node leaves the buffer); a read returns the node with its records applied; a unit
//! whose log region is full is merged by the IPL store.
//!
//! Records are small because the on-flash image is slotted, not sorted: `level u8 |
//! 0xB7 | count u16 | next u32 | id u32 | first u32`, then `count` entries `(key u32,
//! ptr u32)` in slot order (an internal node's `first` is its leftmost child, each
//! entry's `ptr` the child right of its key). An insert appends a slot (one 8-byte and
//! one 2-byte record), a delete moves the last slot into the hole, an overwrite changes
//! 4 bytes; a split or rebalance rewrites what it must. The slot order of a node is
//! kept in RAM only while the node is buffered.
//!
//! Fault model: the IPL store's (power cuts are the IPL store's own tests; the index
//! does not recover its root after one). An image that does not decode is an error
//! naming node and DB page.

use crate::error::Error;
use crate::node::{Node, NodeId, Rec, NIL};
use crate::store::{NodeStore, StoreCounters, Usage};
use flash::ipl::{IplConfig, IplStore};
use flash::{IpaMode, RegionId, RegionSpec};
use nand::{Device, SimTime};
use rustc_hash::FxHashMap;

const MARKER: u8 = 0xB7;
const HEADER: usize = 16;

/// A buffered node in slot order, as its DB page holds it.
#[derive(Default)]
struct Slotted {
    level: u8,
    next: u32,
    first: u32,
    keys: Vec<u32>,
    ptrs: Vec<u32>,
}

/// Byte ranges of the image a change touched.
type Changes = Vec<(usize, Vec<u8>)>;

impl Slotted {
    fn entry(&self, i: usize) -> (usize, Vec<u8>) {
        let mut b = self.keys[i].to_le_bytes().to_vec();
        b.extend(self.ptrs[i].to_le_bytes());
        (HEADER + 8 * i, b)
    }

    fn count(&self) -> (usize, Vec<u8>) {
        (2, (self.keys.len() as u16).to_le_bytes().to_vec())
    }

    fn header(&self, id: NodeId) -> (usize, Vec<u8>) {
        let mut b = vec![self.level, MARKER];
        b.extend((self.keys.len() as u16).to_le_bytes());
        b.extend(self.next.to_le_bytes());
        b.extend(id.to_le_bytes());
        b.extend(self.first.to_le_bytes());
        (0, b)
    }

    /// The slot of `key` (a linear scan: cheaper than keeping a map per node).
    fn slot(&self, key: u32) -> Option<usize> {
        self.keys.iter().position(|&k| k == key)
    }

    fn put(&mut self, key: u32, ptr: u32, out: &mut Changes) {
        if let Some(i) = self.slot(key) {
            self.ptrs[i] = ptr;
            out.push((HEADER + 8 * i + 4, ptr.to_le_bytes().to_vec()));
        } else {
            self.keys.push(key);
            self.ptrs.push(ptr);
            out.push(self.entry(self.keys.len() - 1));
            out.push(self.count());
        }
    }

    /// Removes `key`'s slot, moving the last slot into it; returns the slot refilled.
    fn del(&mut self, key: u32) -> Option<usize> {
        let i = self.slot(key)?;
        self.keys.swap_remove(i);
        self.ptrs.swap_remove(i);
        (i < self.keys.len()).then_some(i)
    }

    /// Brings the slots to `node` after a split or rebalance: the slots become the
    /// node's sorted entries (so the next read finds them in order) and only the slots
    /// that differ are logged.
    fn resync(&mut self, id: NodeId, node: &Node, out: &mut Changes) {
        let skip = usize::from(!node.is_leaf());
        let (old_keys, old_ptrs) = (std::mem::take(&mut self.keys), std::mem::take(&mut self.ptrs));
        self.keys = node.keys.clone();
        self.ptrs = node.ptrs[skip..].to_vec();
        self.level = node.level;
        self.next = node.next;
        self.first = if node.is_leaf() { NIL } else { node.ptrs[0] };
        out.push(self.header(id));
        for i in 0..self.keys.len() {
            if old_keys.get(i) != Some(&self.keys[i]) || old_ptrs.get(i) != Some(&self.ptrs[i]) {
                out.push(self.entry(i));
            }
        }
    }

    fn apply(&mut self, id: NodeId, node: &Node, rec: &Rec) -> Changes {
        let mut out = Vec::new();
        match *rec {
            Rec::Put { key, ptr } => self.put(key, ptr, &mut out),
            Rec::Del { key } => {
                if let Some(i) = self.del(key) {
                    out.push(self.entry(i));
                }
                out.push(self.count());
            }
            Rec::Next(next) => {
                self.next = next;
                out.push((4, next.to_le_bytes().to_vec()));
            }
            Rec::Truncate { .. } | Rec::Reset { .. } => self.resync(id, node, &mut out),
        }
        out
    }

    /// The whole image; slots are sorted first (a whole write may reorder them), so
    /// that only entries added since are out of order when the node is read back.
    fn encode(&mut self, id: NodeId, out: &mut [u8]) {
        let mut pairs: Vec<u64> =
            self.keys.iter().zip(&self.ptrs).map(|(&k, &p)| (k as u64) << 32 | p as u64).collect();
        pairs.sort_unstable();
        for (i, pair) in pairs.into_iter().enumerate() {
            self.keys[i] = (pair >> 32) as u32;
            self.ptrs[i] = pair as u32;
        }
        out.fill(0xFF);
        let (_, h) = self.header(id);
        out[..HEADER].copy_from_slice(&h);
        for i in 0..self.keys.len() {
            let (at, b) = self.entry(i);
            out[at..at + 8].copy_from_slice(&b);
        }
    }

    /// Decodes a DB page; the node (sorted) and its slots.
    fn decode(bytes: &[u8], id: NodeId, location: &dyn Fn() -> String) -> Result<(Node, Slotted), Error> {
        let corrupt = |what| Error::Corrupt { what, location: location() };
        if bytes.len() < HEADER || bytes[1] != MARKER {
            return Err(corrupt("IPL node (no node marker)"));
        }
        let u32_at = |at: usize| u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]);
        let count = u16::from_le_bytes([bytes[2], bytes[3]]) as usize;
        if HEADER + 8 * count > bytes.len() {
            return Err(corrupt("IPL node (entry count beyond the page)"));
        }
        if u32_at(8) != id {
            return Err(corrupt("IPL node (holds another node)"));
        }
        let mut s = Slotted { level: bytes[0], next: u32_at(4), first: u32_at(12), ..Slotted::default() };
        let mut pairs = Vec::with_capacity(count);
        for i in 0..count {
            let (k, p) = (u32_at(HEADER + 8 * i), u32_at(HEADER + 8 * i + 4));
            s.keys.push(k);
            s.ptrs.push(p);
            pairs.push((k as u64) << 32 | p as u64);
        }
        // Stable sort: it takes the sorted run of the last whole write in one pass.
        pairs.sort();
        if pairs.windows(2).any(|w| w[0] >> 32 == w[1] >> 32) {
            return Err(corrupt("IPL node (a key in two slots)"));
        }
        let mut node =
            Node { level: s.level, keys: Vec::with_capacity(count), ptrs: Vec::with_capacity(count + 1), next: s.next };
        if s.level > 0 {
            node.ptrs.push(s.first);
        }
        for pair in pairs {
            node.keys.push((pair >> 32) as u32);
            node.ptrs.push(pair as u32);
        }
        Ok((node, s))
    }
}

/// Joins changes that touch adjacent bytes into one record.
fn coalesce(changes: Changes) -> Changes {
    let mut out: Changes = Vec::with_capacity(changes.len());
    for (offset, bytes) in changes {
        match out.last_mut() {
            Some((at, b)) if *at + b.len() == offset => b.extend(bytes),
            _ => out.push((offset, bytes)),
        }
    }
    out
}

pub struct IplNodes {
    ipl: IplStore,
    region: RegionId,
    node_bytes: usize,
    next_id: NodeId,
    free_ids: Vec<NodeId>,
    /// Whether the DB page holds the node's image (with logged records) as `slots` say.
    on_flash: Vec<bool>,
    slots: FxHashMap<NodeId, Slotted>,
    image: Vec<u8>,
    now: SimTime,
}

impl IplNodes {
    /// An IPL store over the whole device: units of one block, `node_bytes` DB pages,
    /// a `log_region_bytes` log region of `sector_bytes` sectors.
    pub fn new(device: Device, node_bytes: usize, log_region_bytes: u32, sector_bytes: u32) -> Result<IplNodes, Error> {
        let config = IplConfig {
            blocks_per_unit: 1,
            db_page_bytes: node_bytes as u32,
            log_region_bytes,
            sector_bytes,
            ..IplConfig::default()
        };
        let ipl = IplStore::format(device, config, vec![RegionSpec::new("index", IpaMode::None)])?;
        let region = ipl.region_id("index").ok_or_else(|| Error::Config("IPL store lost its region".into()))?;
        Ok(IplNodes {
            ipl,
            region,
            node_bytes,
            next_id: 0,
            free_ids: Vec::new(),
            on_flash: Vec::new(),
            slots: FxHashMap::default(),
            image: vec![0xFF; node_bytes],
            now: 0,
        })
    }
}

impl NodeStore for IplNodes {
    fn describe(&self) -> String {
        let c = self.ipl.config();
        format!(
            "IPL B+-tree, {} B nodes, {} nodes and a {} B log region of {} B sectors per unit",
            self.node_bytes,
            self.ipl.shape().db_pages_per_unit,
            c.log_region_bytes,
            c.sector_bytes
        )
    }

    /// One slot short of the page: an insert is logged before the split that follows it.
    fn capacity(&self, _level: u8, _height: u8) -> usize {
        (self.node_bytes - HEADER) / crate::node::ENTRY_BYTES - 1
    }

    fn allocate(&mut self) -> Result<NodeId, Error> {
        let id = match self.free_ids.pop() {
            Some(id) => id,
            None => {
                if self.next_id >= self.ipl.db_pages(self.region) {
                    return Err(Error::Full(format!("IPL store: all {} node pages in use", self.next_id)));
                }
                self.on_flash.push(false);
                self.next_id += 1;
                self.next_id - 1
            }
        };
        // A reused page is rewritten whole by its first write back (IPL logs the diff).
        self.on_flash[id as usize] = false;
        self.slots.insert(id, Slotted { next: NIL, first: NIL, ..Slotted::default() });
        Ok(id)
    }

    fn load(&mut self, id: NodeId) -> Result<Node, Error> {
        let done = self
            .ipl
            .read_page(self.region, id, &mut self.image, self.now)?
            .ok_or_else(|| Error::Corrupt { what: "IPL node (never written)", location: format!("node {id}") })?;
        self.now = self.now.max(done);
        let (node, slots) = Slotted::decode(&self.image, id, &|| format!("node {id}, DB page {id}"))?;
        self.slots.insert(id, slots);
        Ok(node)
    }

    fn logged(&mut self, id: NodeId, node: &Node, rec: &Rec) -> Result<(), Error> {
        let slots = self.slots.get_mut(&id).ok_or_else(|| Error::Corrupt {
            what: "IPL node change (node not buffered)",
            location: format!("node {id}"),
        })?;
        let changes = slots.apply(id, node, rec);
        if self.on_flash[id as usize] {
            for (offset, bytes) in coalesce(changes) {
                if let Some(t) = self.ipl.log(self.region, id, offset, &bytes, self.now)? {
                    self.now = self.now.max(t.end_ns);
                }
            }
        }
        Ok(())
    }

    fn write_back(&mut self, id: NodeId, _node: &Node) -> Result<(), Error> {
        if self.on_flash[id as usize] {
            if let Some(t) = self.ipl.flush_log(self.region, id, self.now)? {
                self.now = self.now.max(t.end_ns);
            }
            return Ok(());
        }
        let slots = self.slots.get_mut(&id).ok_or_else(|| Error::Corrupt {
            what: "IPL node write (node not buffered)",
            location: format!("node {id}"),
        })?;
        slots.encode(id, &mut self.image);
        let t = self.ipl.write_page(self.region, id, &self.image, self.now)?;
        self.now = self.now.max(t.end_ns);
        self.on_flash[id as usize] = true;
        Ok(())
    }

    fn evicted(&mut self, id: NodeId) {
        self.slots.remove(&id);
    }

    fn freed(&mut self, id: NodeId) -> Result<(), Error> {
        self.slots.remove(&id);
        self.free_ids.push(id);
        Ok(())
    }

    fn device(&self) -> &Device {
        self.ipl.device()
    }

    fn now(&self) -> SimTime {
        self.now
    }

    fn counters(&self) -> StoreCounters {
        let c = self.ipl.ipl_counters();
        StoreCounters { node_reads: c.page_reads, extra_reads: c.log_page_reads, merges: c.merges, compactions: 0 }
    }

    fn usage(&self) -> Usage {
        let per_unit = self.ipl.shape().db_pages_per_unit.max(1) as u64;
        Usage {
            used_blocks: (self.next_id as u64).div_ceil(per_unit) * self.ipl.config().blocks_per_unit as u64,
            log_blocks: 0,
            total_blocks: self.device().geometry().total_blocks() as u64,
        }
    }
}
