//! μ-Tree (Kang et al., EMSOFT 2007) on native flash: every write puts a whole
//! root-to-node path into one flash page, so a leaf change costs one page program.
//!
//! Page layout for a tree of height h: the node at level l (leaf 0) sits at byte
//! `P − P/2^l` and takes `P/2^(l+1)` bytes; the root (level h−1) takes the rest,
//! `P/2^(h−1)`. Offsets do not depend on the height, so a page written before the tree
//! grew still decodes; capacities do, and the shared tree splits a node that a height
//! change left too large on its next change. A path write moves every node on it to the
//! new page; a node keeps a logical number whose page is held in RAM (equivalent to
//! the physical pointers of the original, which the path write rewrites anyway).
//! μ-Tree has no usable leaf chain: a leaf moves on every write, and its left
//! neighbour (not on the path) would keep a stale pointer.
//!
//! Space: pages are written in order through an active block; when only one free
//! block is left, GC takes the full block with the fewest valid pages, copies its
//! valid pages (read and program) and erases it. Fault model: the device's; a page
//! whose node slot does not decode is an error naming node and page.

use crate::error::Error;
use crate::node::{capacity_of, Node, NodeId, HEADER_BYTES};
use crate::store::{NodeStore, StoreCounters, Usage};
use nand::{BlockId, Device, SimTime, Span};

const NONE: u32 = u32::MAX;
/// Free blocks kept for GC's copies.
const RESERVE_BLOCKS: usize = 1;

pub struct MuTree {
    device: Device,
    page_bytes: usize,
    ppb: u32,
    loc: Vec<u32>,
    level: Vec<u8>,
    /// Per page: nodes whose current copy it holds.
    page_valid: Vec<u8>,
    /// Per block: pages with `page_valid > 0`.
    block_valid: Vec<u32>,
    is_free: Vec<bool>,
    free_blocks: Vec<u32>,
    /// (block, next page) being filled.
    active: Option<(u32, u32)>,
    free_ids: Vec<NodeId>,
    page: Vec<u8>,
    now: SimTime,
    counters: StoreCounters,
}

impl MuTree {
    pub fn new(device: Device) -> Result<MuTree, Error> {
        let g = device.geometry().clone();
        if g.total_blocks() < 3 {
            return Err(Error::Config("μ-Tree needs at least 3 blocks".into()));
        }
        let total = g.total_blocks();
        Ok(MuTree {
            page_bytes: g.page_bytes as usize,
            ppb: g.pages_per_block,
            loc: Vec::new(),
            level: Vec::new(),
            page_valid: vec![0; g.total_pages() as usize],
            block_valid: vec![0; total as usize],
            is_free: vec![true; total as usize],
            free_blocks: (0..total).rev().collect(),
            active: None,
            free_ids: Vec::new(),
            page: vec![0xFF; g.page_bytes as usize],
            now: 0,
            counters: StoreCounters::default(),
            device,
        })
    }

    /// Offset of the slot of a node at `level`.
    fn slot_offset(&self, level: u8) -> usize {
        self.page_bytes - (self.page_bytes >> level)
    }

    /// The next erased page; `collect` lets GC run first when space is short.
    fn next_page(&mut self, collect: bool) -> Result<u32, Error> {
        if let Some((block, next)) = self.active {
            if next < self.ppb {
                self.active = Some((block, next + 1));
                return Ok(block * self.ppb + next);
            }
            self.active = None;
        }
        while collect && self.free_blocks.len() <= RESERVE_BLOCKS {
            self.collect()?;
            if let Some((block, next)) = self.active {
                if next < self.ppb {
                    self.active = Some((block, next + 1));
                    return Ok(block * self.ppb + next);
                }
                self.active = None;
            }
        }
        let block = self.free_blocks.pop().ok_or_else(|| Error::Full("μ-Tree: no free block left".into()))?;
        self.is_free[block as usize] = false;
        self.active = Some((block, 1));
        Ok(block * self.ppb)
    }

    fn set_valid(&mut self, ppn: u32, delta: i32) {
        let before = self.page_valid[ppn as usize];
        let after = (before as i32 + delta) as u8;
        self.page_valid[ppn as usize] = after;
        let block = (ppn / self.ppb) as usize;
        match (before, after) {
            (0, a) if a > 0 => self.block_valid[block] += 1,
            (b, 0) if b > 0 => self.block_valid[block] -= 1,
            _ => {}
        }
    }

    fn program_page(&mut self, ppn: u32) -> Result<(), Error> {
        let t = self.device.program(nand::Ppn(ppn), self.now, &[Span::new(0, &self.page)])?;
        self.now = self.now.max(t.end_ns);
        Ok(())
    }

    /// GC: copies the valid pages of the fullest-of-garbage block and erases it.
    fn collect(&mut self) -> Result<(), Error> {
        let active = self.active.map(|(b, _)| b);
        let victim = (0..self.block_valid.len() as u32)
            .filter(|&b| !self.is_free[b as usize] && Some(b) != active)
            .min_by_key(|&b| self.block_valid[b as usize])
            .ok_or_else(|| Error::Full("μ-Tree: no block to collect".into()))?;
        if self.block_valid[victim as usize] >= self.ppb {
            return Err(Error::Full(format!(
                "μ-Tree: every block is full of valid pages ({} blocks)",
                self.is_free.len()
            )));
        }
        for i in 0..self.ppb {
            let old = victim * self.ppb + i;
            if self.page_valid[old as usize] == 0 {
                continue;
            }
            let read = self.device.read(nand::Ppn(old), self.now)?;
            self.now = self.now.max(read.timing.end_ns);
            self.page.copy_from_slice(read.data);
            let new = self.next_page(false)?;
            self.program_page(new)?;
            let mut level = 0u8;
            while self.page_bytes >> level > 0 && self.slot_offset(level) + HEADER_BYTES <= self.page_bytes {
                let off = self.slot_offset(level);
                let slot = &self.page[off..];
                if Node::is_image(slot) {
                    let id = u32::from_le_bytes([slot[8], slot[9], slot[10], slot[11]]) as usize;
                    if id < self.loc.len() && self.loc[id] == old && self.level[id] == level {
                        self.loc[id] = new;
                        self.set_valid(old, -1);
                        self.set_valid(new, 1);
                    }
                }
                level += 1;
            }
            if self.page_valid[old as usize] != 0 {
                return Err(Error::Corrupt {
                    what: "μ-Tree page (a node located here has no slot)",
                    location: format!("page {old}"),
                });
            }
        }
        let t = self.device.erase(BlockId(victim), self.now)?;
        self.now = self.now.max(t.end_ns);
        self.is_free[victim as usize] = true;
        self.free_blocks.push(victim);
        self.counters.merges += 1;
        Ok(())
    }
}

impl NodeStore for MuTree {
    fn describe(&self) -> String {
        format!("μ-Tree on native flash, {} B pages", self.page_bytes)
    }

    fn capacity(&self, level: u8, height: u8) -> usize {
        let shift = if level + 1 >= height { level } else { level + 1 };
        capacity_of(self.page_bytes >> shift.min(31), level == 0)
    }

    fn leaf_chain(&self) -> bool {
        false
    }

    fn wants_paths(&self) -> bool {
        true
    }

    fn allocate(&mut self) -> Result<NodeId, Error> {
        Ok(self.free_ids.pop().unwrap_or_else(|| {
            self.loc.push(NONE);
            self.level.push(0);
            (self.loc.len() - 1) as NodeId
        }))
    }

    fn load(&mut self, id: NodeId) -> Result<Node, Error> {
        // `id` may come from a child pointer read back from flash.
        let ppn = self.loc.get(id as usize).copied().unwrap_or(NONE);
        if ppn == NONE {
            return Err(Error::Corrupt { what: "μ-Tree node (never written)", location: format!("node {id}") });
        }
        let off = self.slot_offset(self.level[id as usize]);
        let read = self.device.read(nand::Ppn(ppn), self.now)?;
        self.now = self.now.max(read.timing.end_ns);
        self.counters.node_reads += 1;
        let (stored, node) = Node::decode(&read.data[off..], &|| format!("node {id}, page {ppn}, offset {off}"))?;
        if stored != id {
            return Err(Error::Corrupt { what: "μ-Tree slot (holds another node)", location: format!("page {ppn}") });
        }
        Ok(node)
    }

    /// Nothing to do: every change reached flash with its path.
    fn write_back(&mut self, _id: NodeId, _node: &Node) -> Result<(), Error> {
        Ok(())
    }

    fn freed(&mut self, id: NodeId) -> Result<(), Error> {
        let ppn = std::mem::replace(&mut self.loc[id as usize], NONE);
        if ppn != NONE {
            self.set_valid(ppn, -1);
        }
        self.free_ids.push(id);
        Ok(())
    }

    fn write_paths(&mut self, paths: &[Vec<(NodeId, &Node)>]) -> Result<(), Error> {
        for path in paths {
            for (i, &(id, node)) in path.iter().enumerate() {
                let off = self.slot_offset(node.level);
                let root = i + 1 == path.len();
                let end = if root { self.page_bytes } else { off + (self.page_bytes >> (node.level + 1)) };
                if off + node.image_bytes() > end {
                    return Err(Error::Full(format!(
                        "μ-Tree: node {id} at level {} needs {} B, its slot has {} B (the tree is too tall for a {} B page)",
                        node.level,
                        node.image_bytes(),
                        end - off,
                        self.page_bytes
                    )));
                }
            }
            // GC (inside next_page) uses the page buffer, so the page is built after it.
            let ppn = self.next_page(true)?;
            self.page.fill(0xFF);
            for &(id, node) in path {
                let off = self.slot_offset(node.level);
                node.encode(id, &mut self.page[off..]);
            }
            self.program_page(ppn)?;
            for &(id, node) in path {
                let old = std::mem::replace(&mut self.loc[id as usize], ppn);
                if old != NONE {
                    self.set_valid(old, -1);
                }
                self.level[id as usize] = node.level;
                self.set_valid(ppn, 1);
            }
        }
        Ok(())
    }

    fn device(&self) -> &Device {
        &self.device
    }

    fn now(&self) -> SimTime {
        self.now
    }

    fn counters(&self) -> StoreCounters {
        self.counters
    }

    fn usage(&self) -> Usage {
        Usage {
            used_blocks: self.block_valid.iter().filter(|&&v| v > 0).count() as u64,
            log_blocks: 0,
            total_blocks: self.block_valid.len() as u64,
        }
    }
}
