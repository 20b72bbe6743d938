//! Traditional B+-tree nodes as logical pages of a conventional FTL (page mapping,
//! BAST, FAST): node `id` is logical pages `id·k .. id·k + k` for a node of k flash
//! pages. A dirty node leaving the buffer is written whole (k page writes); what that
//! costs in merges is the FTL's business, which is the point of the IPL paper's §4.2.
//!
//! Freed node numbers are reused; nothing is trimmed (a B+-tree on a block device
//! does not trim). Fault model: that of the FTL below; a node page the FTL reports as
//! never written, or whose bytes do not decode, is an error naming node and page.

use crate::error::Error;
use crate::node::{capacity_of, Node, NodeId};
use crate::store::{NodeStore, StoreCounters, Usage};
use flash::ftl::Ftl;
use nand::{Device, SimTime};

pub struct FtlStore {
    ftl: Box<dyn Ftl>,
    node_bytes: usize,
    pages_per_node: u32,
    log_blocks: u32,
    next_id: NodeId,
    free_ids: Vec<NodeId>,
    live: Vec<bool>,
    scratch: Vec<u8>,
    now: SimTime,
    node_reads: u64,
}

impl FtlStore {
    /// `log_blocks`: the FTL's log blocks (BAST, FAST), reported apart in [`Usage`].
    pub fn new(ftl: Box<dyn Ftl>, node_bytes: usize, log_blocks: u32) -> Result<FtlStore, Error> {
        let page = ftl.page_bytes();
        if node_bytes == 0 || !node_bytes.is_multiple_of(page) {
            return Err(Error::Config(format!(
                "node size {node_bytes} B is not a multiple of the {page}-byte flash page"
            )));
        }
        Ok(FtlStore {
            pages_per_node: (node_bytes / page) as u32,
            ftl,
            node_bytes,
            log_blocks,
            next_id: 0,
            free_ids: Vec::new(),
            live: Vec::new(),
            scratch: vec![0xFF; node_bytes],
            now: 0,
            node_reads: 0,
        })
    }

    fn lpn(&self, id: NodeId, j: u32) -> u32 {
        id * self.pages_per_node + j
    }
}

impl NodeStore for FtlStore {
    fn describe(&self) -> String {
        format!("btree on the {} FTL, {} B nodes", self.ftl.kind().name(), self.node_bytes)
    }

    fn capacity(&self, level: u8, _height: u8) -> usize {
        capacity_of(self.node_bytes, level == 0)
    }

    fn allocate(&mut self) -> Result<NodeId, Error> {
        let id = match self.free_ids.pop() {
            Some(id) => id,
            None => {
                let id = self.next_id;
                if (id as u64 + 1) * self.pages_per_node as u64 > self.ftl.logical_pages() as u64 {
                    return Err(Error::Full(format!(
                        "{} logical pages of the {} FTL hold no node {id} more",
                        self.ftl.logical_pages(),
                        self.ftl.kind().name()
                    )));
                }
                self.next_id += 1;
                self.live.push(false);
                id
            }
        };
        self.live[id as usize] = true;
        Ok(id)
    }

    fn load(&mut self, id: NodeId) -> Result<Node, Error> {
        // `id` may come from a child pointer read back from flash.
        if id >= self.next_id {
            return Err(Error::Corrupt { what: "child pointer (no such node)", location: format!("node {id}") });
        }
        let page = self.ftl.page_bytes();
        for j in 0..self.pages_per_node {
            let lpn = self.lpn(id, j);
            let read = self.ftl.read(lpn, self.now)?.ok_or_else(|| Error::Corrupt {
                what: "node page (never written)",
                location: format!("node {id}, logical page {lpn}"),
            })?;
            self.now = self.now.max(read.timing.end_ns);
            self.scratch[j as usize * page..(j as usize + 1) * page].copy_from_slice(read.data);
            self.node_reads += 1;
        }
        let lpn = self.lpn(id, 0);
        let (stored, node) = Node::decode(&self.scratch, &|| format!("node {id}, logical page {lpn}"))?;
        if stored != id {
            return Err(Error::Corrupt { what: "node image (holds another node)", location: format!("node {id}") });
        }
        Ok(node)
    }

    fn write_back(&mut self, id: NodeId, node: &Node) -> Result<(), Error> {
        self.scratch.fill(0xFF);
        node.encode(id, &mut self.scratch);
        let page = self.ftl.page_bytes();
        for j in 0..self.pages_per_node {
            let lpn = self.lpn(id, j);
            let t = self.ftl.write(lpn, &self.scratch[j as usize * page..(j as usize + 1) * page], self.now)?;
            self.now = self.now.max(t.end_ns);
        }
        Ok(())
    }

    fn freed(&mut self, id: NodeId) -> Result<(), Error> {
        self.live[id as usize] = false;
        self.free_ids.push(id);
        Ok(())
    }

    fn device(&self) -> &Device {
        self.ftl.device()
    }

    fn now(&self) -> SimTime {
        self.now
    }

    fn counters(&self) -> StoreCounters {
        let c = self.ftl.counters();
        StoreCounters {
            node_reads: self.node_reads,
            merges: c.merges_switch + c.merges_partial + c.merges_full,
            ..StoreCounters::default()
        }
    }

    fn usage(&self) -> Usage {
        let ppb = self.device().geometry().pages_per_block;
        let mut blocks: Vec<u32> = (0..self.next_id)
            .filter(|&id| self.live[id as usize])
            .flat_map(|id| (0..self.pages_per_node).map(move |j| id * self.pages_per_node + j))
            .map(|lpn| lpn / ppb)
            .collect();
        blocks.dedup();
        blocks.sort_unstable();
        blocks.dedup();
        Usage {
            used_blocks: blocks.len() as u64,
            log_blocks: self.log_blocks as u64,
            total_blocks: self.device().geometry().total_blocks() as u64,
        }
    }
}
