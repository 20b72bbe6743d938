//! The LRU node buffer of F frames every store sits under.
//!
//! A frame holds a node as the tree sees it, whether it changed since it was written
//! back (`dirty`), and whether the running operation changed it (`pinned`: such frames
//! are never evicted until the operation ends, so a store can be handed the nodes of a
//! whole operation). The buffer may hold more than F frames while an operation pins
//! them; it shrinks back when the pins are released.

use crate::error::Error;
use crate::node::{Node, NodeId};
use crate::store::NodeStore;
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;

pub(crate) struct Frame {
    pub node: Node,
    pub dirty: bool,
    pub pinned: bool,
    tick: u64,
}

pub(crate) struct NodeBuffer {
    frames: FxHashMap<NodeId, Frame>,
    /// Last use → node, oldest first.
    lru: BTreeMap<u64, NodeId>,
    tick: u64,
    capacity: usize,
}

impl NodeBuffer {
    pub fn new(capacity: usize) -> NodeBuffer {
        NodeBuffer { frames: FxHashMap::default(), lru: BTreeMap::new(), tick: 0, capacity: capacity.max(1) }
    }

    /// The frame of `id`, loaded from the store (after making room) if absent.
    pub fn fetch<S: NodeStore + ?Sized>(&mut self, id: NodeId, store: &mut S) -> Result<&mut Frame, Error> {
        self.tick += 1;
        let tick = self.tick;
        if let Some(frame) = self.frames.get_mut(&id) {
            self.lru.remove(&frame.tick);
            frame.tick = tick;
            self.lru.insert(tick, id);
            return Ok(self.frames.get_mut(&id).expect("frame present"));
        }
        let node = store.load(id)?;
        self.insert(id, node, false, store)
    }

    /// Puts a node not yet in the buffer (a new one, or one just loaded).
    pub fn insert<S: NodeStore + ?Sized>(
        &mut self,
        id: NodeId,
        node: Node,
        dirty: bool,
        store: &mut S,
    ) -> Result<&mut Frame, Error> {
        self.shrink(self.capacity - 1, store)?;
        self.tick += 1;
        self.lru.insert(self.tick, id);
        Ok(self.frames.entry(id).or_insert(Frame { node, dirty, pinned: false, tick: self.tick }))
    }

    /// Evicts least recently used unpinned frames until at most `keep` remain.
    fn shrink<S: NodeStore + ?Sized>(&mut self, keep: usize, store: &mut S) -> Result<(), Error> {
        let mut skipped = Vec::new();
        while self.frames.len() > keep {
            let Some((tick, id)) = self.lru.pop_first() else { break };
            if self.frames.get(&id).is_some_and(|f| f.pinned) {
                skipped.push((tick, id));
                continue;
            }
            if let Some(frame) = self.frames.remove(&id) {
                if frame.dirty {
                    store.write_back(id, &frame.node)?;
                }
                store.evicted(id);
            }
        }
        self.lru.extend(skipped);
        Ok(())
    }

    /// Drops a freed node without writing it.
    pub fn remove(&mut self, id: NodeId) {
        if let Some(frame) = self.frames.remove(&id) {
            self.lru.remove(&frame.tick);
        }
    }

    /// Releases the pins of `ids` and shrinks back to F frames.
    pub fn unpin<S: NodeStore + ?Sized>(&mut self, ids: &[NodeId], store: &mut S) -> Result<(), Error> {
        for id in ids {
            if let Some(frame) = self.frames.get_mut(id) {
                frame.pinned = false;
            }
        }
        self.shrink(self.capacity, store)
    }

    /// Writes back every dirty frame (they stay buffered, clean).
    pub fn flush<S: NodeStore + ?Sized>(&mut self, store: &mut S) -> Result<(), Error> {
        let mut dirty: Vec<NodeId> = self.frames.iter().filter(|(_, f)| f.dirty).map(|(&id, _)| id).collect();
        dirty.sort_unstable();
        for id in dirty {
            if let Some(frame) = self.frames.get_mut(&id) {
                store.write_back(id, &frame.node)?;
                frame.dirty = false;
            }
        }
        Ok(())
    }
}
