//! The node-store seam: where B+-tree nodes live on flash. The one B+-tree algorithm
//! ([`crate::BTree`]) and its LRU node buffer sit above it; each implementation decides
//! what a change costs on flash.
//!
//! Call protocol (from the tree): a node not in the buffer is [`NodeStore::load`]ed;
//! every change is applied in the buffer and then reported with
//! [`NodeStore::logged`] (log-based stores keep the record); a dirty node leaving the
//! buffer (or at a flush) is passed to [`NodeStore::write_back`]; a store that
//! [`NodeStore::wants_paths`] gets, at the end of each operation, the root-to-node paths
//! of every node the operation changed ([`NodeStore::write_paths`]). Nodes changed by
//! the running operation stay in the buffer until it ends.

use crate::error::Error;
use crate::node::{Node, NodeId, Rec};
use nand::{Device, SimTime};

/// Index-level read breakdown and merge count, beside the device's own counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StoreCounters {
    /// Flash page reads that fetch node images (a node of k pages counts k).
    pub node_reads: u64,
    /// Further page reads to rebuild a node: IPL log sectors, BFTL index-unit pages.
    pub extra_reads: u64,
    /// FTL merges, BFTL compactions, μ-Tree GC collections, IPL block merges.
    pub merges: u64,
    /// BFTL compactions (also counted in `merges`).
    pub compactions: u64,
}

/// Space a store occupies.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    /// Blocks holding live index data.
    pub used_blocks: u64,
    /// Log blocks of a hybrid FTL (BAST, FAST), counted apart as in the paper's Table 3.
    pub log_blocks: u64,
    /// Blocks the store was given or has ever taken from the device.
    pub total_blocks: u64,
}

pub trait NodeStore {
    /// A short description (`btree/fast 16 log blocks, 8192 B nodes`).
    fn describe(&self) -> String;
    /// Most keys a node at `level` may hold in a tree of `height` levels.
    fn capacity(&self, level: u8, height: u8) -> usize;
    /// Whether leaves may be followed by their `next` link (μ-Tree: no, its leaves
    /// move on every write so a neighbour's link would be stale).
    fn leaf_chain(&self) -> bool {
        true
    }
    /// Whether [`NodeStore::write_paths`] is wanted.
    fn wants_paths(&self) -> bool {
        false
    }
    fn allocate(&mut self) -> Result<NodeId, Error>;
    /// Reads node `id` from flash (it was written or logged before).
    fn load(&mut self, id: NodeId) -> Result<Node, Error>;
    /// `rec` was applied to `id`, giving `node`.
    fn logged(&mut self, _id: NodeId, _node: &Node, _rec: &Rec) -> Result<(), Error> {
        Ok(())
    }
    /// A dirty node leaves the buffer or is flushed.
    fn write_back(&mut self, id: NodeId, node: &Node) -> Result<(), Error>;
    /// Node `id` left the buffer (after [`NodeStore::write_back`] if it was dirty).
    fn evicted(&mut self, _id: NodeId) {}
    /// Node `id` is no longer part of the tree.
    fn freed(&mut self, id: NodeId) -> Result<(), Error>;
    /// The paths (leaf-most node first, root last) of an operation's changes.
    fn write_paths(&mut self, _paths: &[Vec<(NodeId, &Node)>]) -> Result<(), Error> {
        Ok(())
    }
    /// Makes everything logged so far durable on flash (after the buffer's flush).
    fn sync(&mut self) -> Result<(), Error> {
        Ok(())
    }
    fn device(&self) -> &Device;
    /// Simulated time: when the store's last flash operation completed.
    fn now(&self) -> SimTime;
    fn counters(&self) -> StoreCounters;
    fn usage(&self) -> Usage;
}
