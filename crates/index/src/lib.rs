//! index — flash-aware B+-trees side by side on the same NAND model: a traditional
//! B+-tree on conventional FTLs (page mapping, BAST, FAST), BFTL, μ-Tree, and the IPL
//! B+-tree (ipl-btree-in-page-logging.txt §3–4).
//!
//! One algorithm ([`BTree`]: search, insert with splits, delete with merge or
//! redistribution, range scan) with one LRU node buffer runs over a [`NodeStore`],
//! the seam that decides where nodes live and what a change costs on flash. Keys,
//! values and node numbers are `u32`. Everything is deterministic: simulated time is
//! carried by the store from the device's operation timings, never read from a clock.
//!
//! Modules: [`node`] (nodes, images, physiological records), [`store`] (the seam),
//! `buffer` (LRU frames), [`tree`], one module per store ([`ftl_store`], [`bftl`],
//! [`mutree`], [`ipl_nodes`]), [`setup`] (devices sized for an index), [`error`],
//! `bench` (the insert/query/scan benchmark of the IPL paper's experiments).

#![forbid(unsafe_code)]

pub mod bench;
pub mod bftl;
mod buffer;
pub mod error;
pub mod ftl_store;
pub mod ipl_nodes;
pub mod mutree;
pub mod node;
pub mod setup;
pub mod store;
pub mod tree;

pub use error::Error;
pub use setup::{build, IndexKind, IndexSpec, Storage};
pub use store::{NodeStore, StoreCounters, Usage};
pub use tree::BTree;

use nand::{Device, SimTime};
use node::{Node, NodeId, Rec};

/// A boxed store is a store (the command line picks one at run time).
impl<S: NodeStore + ?Sized> NodeStore for Box<S> {
    fn describe(&self) -> String {
        (**self).describe()
    }
    fn capacity(&self, level: u8, height: u8) -> usize {
        (**self).capacity(level, height)
    }
    fn leaf_chain(&self) -> bool {
        (**self).leaf_chain()
    }
    fn wants_paths(&self) -> bool {
        (**self).wants_paths()
    }
    fn allocate(&mut self) -> Result<NodeId, Error> {
        (**self).allocate()
    }
    fn load(&mut self, id: NodeId) -> Result<Node, Error> {
        (**self).load(id)
    }
    fn logged(&mut self, id: NodeId, node: &Node, rec: &Rec) -> Result<(), Error> {
        (**self).logged(id, node, rec)
    }
    fn write_back(&mut self, id: NodeId, node: &Node) -> Result<(), Error> {
        (**self).write_back(id, node)
    }
    fn evicted(&mut self, id: NodeId) {
        (**self).evicted(id)
    }
    fn freed(&mut self, id: NodeId) -> Result<(), Error> {
        (**self).freed(id)
    }
    fn write_paths(&mut self, paths: &[Vec<(NodeId, &Node)>]) -> Result<(), Error> {
        (**self).write_paths(paths)
    }
    fn sync(&mut self) -> Result<(), Error> {
        (**self).sync()
    }
    fn device(&self) -> &Device {
        (**self).device()
    }
    fn now(&self) -> SimTime {
        (**self).now()
    }
    fn counters(&self) -> StoreCounters {
        (**self).counters()
    }
    fn usage(&self) -> Usage {
        (**self).usage()
    }
}
