//! The one B+-tree algorithm every node store shares: search, insert with splits,
//! delete with merge or redistribution, range scan.
//!
//! Invariants between operations: every node but the root holds at least half its
//! capacity and at most its capacity (capacities come from the store and may depend on
//! the tree's height, as μ-Tree's do); leaves are linked in key order; an internal root
//! has at least one key. Splits run bottom-up and repeat while a node is over capacity,
//! so a node that a height change left too large (μ-Tree) is split on its next change.
//! Merges always fold the right node of a pair into the left.

use crate::buffer::NodeBuffer;
use crate::error::Error;
use crate::node::{Node, NodeId, Rec, NIL};
use crate::store::NodeStore;
use rustc_hash::FxHashMap;

pub struct BTree<S: NodeStore> {
    store: S,
    buf: NodeBuffer,
    root: NodeId,
    height: u8,
    len: u64,
    /// Nodes the running operation changed, in order of first change.
    changed: Vec<NodeId>,
    /// Parent of each node the running operation visited or created.
    parent: FxHashMap<NodeId, NodeId>,
}

/// The root-to-leaf descent for one key.
struct Descent {
    path: Vec<NodeId>,
    /// `slots[i]`: which child of `path[i]` is `path[i + 1]`.
    slots: Vec<usize>,
    /// Smallest separator above the leaf's key range (None: the last leaf).
    upper: Option<u32>,
}

impl<S: NodeStore> BTree<S> {
    /// An empty tree (one empty leaf) over `store`, with a buffer of `frames` nodes.
    pub fn new(mut store: S, frames: usize) -> Result<BTree<S>, Error> {
        for level in 0..4 {
            if store.capacity(level, 4) < 3 {
                return Err(Error::Config(format!("{}: nodes hold fewer than 3 keys", store.describe())));
            }
        }
        let root = store.allocate()?;
        let mut tree = BTree {
            store,
            buf: NodeBuffer::new(frames),
            root,
            height: 1,
            len: 0,
            changed: Vec::new(),
            parent: FxHashMap::default(),
        };
        tree.buf.insert(root, Node::empty_leaf(), true, &mut tree.store)?;
        tree.apply(root, Rec::Reset { level: 0, first: NIL })?;
        tree.end_op()?;
        Ok(tree)
    }

    pub fn store(&self) -> &S {
        &self.store
    }
    pub fn len(&self) -> u64 {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    pub fn height(&self) -> u8 {
        self.height
    }

    /// The value of `key`.
    pub fn search(&mut self, key: u32) -> Result<Option<u32>, Error> {
        let d = self.descend(key)?;
        let leaf = self.node(d.path[d.path.len() - 1])?;
        let found = leaf.keys.binary_search(&key).ok().map(|i| leaf.ptrs[i]);
        self.end_op()?;
        Ok(found)
    }

    /// Inserts or overwrites; true when `key` is new.
    pub fn insert(&mut self, key: u32, value: u32) -> Result<bool, Error> {
        let mut path = self.descend(key)?.path;
        let leaf = path[path.len() - 1];
        let new = self.node(leaf)?.keys.binary_search(&key).is_err();
        self.apply(leaf, Rec::Put { key, ptr: value })?;
        self.len += u64::from(new);
        let mut i = path.len() - 1;
        while self.overfull(path[i])? {
            if i == 0 {
                let level = self.node(path[0])?.level;
                let root = self.create(Rec::Reset { level: level + 1, first: path[0] })?;
                self.parent.insert(path[0], root);
                self.root = root;
                self.height += 1;
                path.insert(0, root);
                i = 1;
            }
            let parent = path[i - 1];
            let mut todo = vec![path[i]];
            while let Some(x) = todo.pop() {
                if self.overfull(x)? {
                    let (sep, right) = self.split(x, parent)?;
                    self.apply(parent, Rec::Put { key: sep, ptr: right })?;
                    todo.extend([x, right]);
                }
            }
            i -= 1;
        }
        self.end_op()?;
        Ok(new)
    }

    /// Removes `key`; true when it was there.
    pub fn remove(&mut self, key: u32) -> Result<bool, Error> {
        let d = self.descend(key)?;
        let leaf = d.path[d.path.len() - 1];
        if self.node(leaf)?.keys.binary_search(&key).is_err() {
            self.end_op()?;
            return Ok(false);
        }
        self.apply(leaf, Rec::Del { key })?;
        self.len -= 1;
        for i in (1..d.path.len()).rev() {
            if !self.underfull(d.path[i])? {
                break;
            }
            self.rebalance(d.path[i - 1], d.slots[i - 1])?;
        }
        let old = self.root;
        let root = self.node(old)?;
        if !root.is_leaf() && root.keys.is_empty() {
            let child = root.ptrs[0];
            self.free(old)?;
            self.parent.remove(&child);
            self.root = child;
            self.height -= 1;
        }
        self.end_op()?;
        Ok(true)
    }

    /// Entries with keys in `lo..=hi`, in order, given to `visit`.
    pub fn range(&mut self, lo: u32, hi: u32, mut visit: impl FnMut(u32, u32)) -> Result<(), Error> {
        let chain = self.store.leaf_chain();
        let mut from = lo;
        'descents: while from <= hi {
            let d = self.descend(from)?;
            let mut leaf = d.path[d.path.len() - 1];
            loop {
                let node = self.node(leaf)?;
                let start = node.keys.partition_point(|&k| k < from);
                for (&k, &v) in node.keys[start..].iter().zip(&node.ptrs[start..]) {
                    if k > hi {
                        break 'descents;
                    }
                    visit(k, v);
                }
                // Without a usable leaf chain (μ-Tree) each next leaf is found by a new descent.
                if !chain || node.next == NIL {
                    break;
                }
                leaf = node.next;
            }
            if chain {
                break;
            }
            match d.upper {
                Some(upper) => from = upper,
                None => break,
            }
        }
        self.end_op()
    }

    /// Writes every dirty node back and makes the store durable.
    pub fn flush(&mut self) -> Result<(), Error> {
        self.buf.flush(&mut self.store)?;
        self.store.sync()
    }

    fn node(&mut self, id: NodeId) -> Result<&Node, Error> {
        Ok(&self.buf.fetch(id, &mut self.store)?.node)
    }

    fn capacity(&self, level: u8) -> usize {
        self.store.capacity(level, self.height)
    }

    fn overfull(&mut self, id: NodeId) -> Result<bool, Error> {
        let node = self.node(id)?;
        let (n, level) = (node.keys.len(), node.level);
        Ok(n > self.capacity(level))
    }

    fn underfull(&mut self, id: NodeId) -> Result<bool, Error> {
        let node = self.node(id)?;
        let (n, level) = (node.keys.len(), node.level);
        Ok(n < self.capacity(level) / 2)
    }

    fn descend(&mut self, key: u32) -> Result<Descent, Error> {
        let mut d = Descent { path: vec![self.root], slots: Vec::new(), upper: None };
        let mut id = self.root;
        loop {
            let node = self.node(id)?;
            if node.is_leaf() {
                return Ok(d);
            }
            let slot = node.child_index(key);
            if let Some(&k) = node.keys.get(slot) {
                d.upper = Some(d.upper.map_or(k, |u| u.min(k)));
            }
            let child = node.ptrs[slot];
            self.parent.insert(child, id);
            d.slots.push(slot);
            d.path.push(child);
            id = child;
        }
    }

    /// Applies `rec` to `id` in the buffer and tells the store.
    fn apply(&mut self, id: NodeId, rec: Rec) -> Result<(), Error> {
        let frame = self.buf.fetch(id, &mut self.store)?;
        frame
            .node
            .apply(&rec)
            .map_err(|e| Error::Corrupt { what: "tree change", location: format!("node {id}: {e}") })?;
        frame.dirty = true;
        if !frame.pinned {
            frame.pinned = true;
            self.changed.push(id);
        }
        self.store.logged(id, &frame.node, &rec)
    }

    fn create(&mut self, reset: Rec) -> Result<NodeId, Error> {
        let id = self.store.allocate()?;
        self.buf.insert(id, Node::empty_leaf(), true, &mut self.store)?;
        self.apply(id, reset)?;
        Ok(id)
    }

    fn free(&mut self, id: NodeId) -> Result<(), Error> {
        self.buf.remove(id);
        self.changed.retain(|&c| c != id);
        self.parent.remove(&id);
        self.store.freed(id)
    }

    /// Splits `x` in half; returns the separator and the new right node.
    fn split(&mut self, x: NodeId, parent: NodeId) -> Result<(u32, NodeId), Error> {
        let n = self.node(x)?.clone();
        let m = n.keys.len() / 2;
        let (sep, right) = if n.is_leaf() {
            let right = self.create(Rec::Reset { level: 0, first: NIL })?;
            for (&key, &ptr) in n.keys[m..].iter().zip(&n.ptrs[m..]) {
                self.apply(right, Rec::Put { key, ptr })?;
            }
            if n.next != NIL {
                self.apply(right, Rec::Next(n.next))?;
            }
            self.apply(x, Rec::Next(right))?;
            (n.keys[m], right)
        } else {
            let right = self.create(Rec::Reset { level: n.level, first: n.ptrs[m + 1] })?;
            for (&key, &ptr) in n.keys[m + 1..].iter().zip(&n.ptrs[m + 2..]) {
                self.apply(right, Rec::Put { key, ptr })?;
            }
            self.adopt(right, &n.ptrs[m + 1..]);
            (n.keys[m], right)
        };
        self.apply(x, Rec::Truncate { keep: m as u16 })?;
        self.parent.insert(right, parent);
        Ok((sep, right))
    }

    /// Records that `children`, if the running operation knows their parent, now hang
    /// under `owner` (so the paths handed to the store follow the tree as it is).
    fn adopt(&mut self, owner: NodeId, children: &[NodeId]) {
        for c in children {
            if let Some(p) = self.parent.get_mut(c) {
                *p = owner;
            }
        }
    }

    /// Fixes the underfull child `slot` of `parent`: merges it with a sibling, or
    /// evens the pair out when both do not fit one node.
    fn rebalance(&mut self, parent: NodeId, slot: usize) -> Result<(), Error> {
        let p = self.node(parent)?;
        let (li, sep) = if slot > 0 { (slot - 1, p.keys[slot - 1]) } else { (0, p.keys[0]) };
        let (left, right) = (p.ptrs[li], p.ptrs[li + 1]);
        self.parent.insert(left, parent);
        self.parent.insert(right, parent);
        let l = self.node(left)?.clone();
        let r = self.node(right)?.clone();
        let leaf = l.is_leaf();
        let mut keys = l.keys.clone();
        if !leaf {
            keys.push(sep);
        }
        keys.extend(&r.keys);
        let mut ptrs = l.ptrs.clone();
        ptrs.extend(&r.ptrs);
        if keys.len() <= self.capacity(l.level) {
            // New entries pair key `lk + j` with pointer `lk + j` (leaf) or `lk + 1 + j`.
            let first_ptr = l.keys.len() + usize::from(!leaf);
            for (&key, &ptr) in keys[l.keys.len()..].iter().zip(&ptrs[first_ptr..]) {
                self.apply(left, Rec::Put { key, ptr })?;
            }
            if leaf {
                self.apply(left, Rec::Next(r.next))?;
            } else {
                self.adopt(left, &r.ptrs);
            }
            self.apply(parent, Rec::Del { key: sep })?;
            return self.free(right);
        }
        let m = keys.len() / 2;
        let (new_sep, lnode, rnode) = if leaf {
            let lnode = Node { level: 0, keys: keys[..m].to_vec(), ptrs: ptrs[..m].to_vec(), next: right };
            let rnode = Node { level: 0, keys: keys[m..].to_vec(), ptrs: ptrs[m..].to_vec(), next: r.next };
            (keys[m], lnode, rnode)
        } else {
            let lnode = Node { level: l.level, keys: keys[..m].to_vec(), ptrs: ptrs[..m + 1].to_vec(), next: NIL };
            let rnode = Node { level: l.level, keys: keys[m + 1..].to_vec(), ptrs: ptrs[m + 1..].to_vec(), next: NIL };
            (keys[m], lnode, rnode)
        };
        for (id, node) in [(left, lnode), (right, rnode)] {
            if !leaf {
                self.adopt(id, &node.ptrs);
            }
            for rec in node.rebuild_records() {
                self.apply(id, rec)?;
            }
        }
        self.apply(parent, Rec::Del { key: sep })?;
        self.apply(parent, Rec::Put { key: new_sep, ptr: right })
    }

    /// Ends an operation: hands the store the paths of the changed nodes if it wants
    /// them, then releases the pins.
    fn end_op(&mut self) -> Result<(), Error> {
        let changed = std::mem::take(&mut self.changed);
        if self.store.wants_paths() && !changed.is_empty() {
            let paths = self.paths(&changed)?;
            let borrowed: Vec<Vec<(NodeId, &Node)>> =
                paths.iter().map(|p| p.iter().map(|(id, n)| (*id, n)).collect()).collect();
            self.store.write_paths(&borrowed)?;
        }
        self.buf.unpin(&changed, &mut self.store)?;
        self.parent.clear();
        Ok(())
    }

    /// One path per changed node not already on another's path, lowest nodes first:
    /// the node, then its ancestors up to the root.
    fn paths(&mut self, changed: &[NodeId]) -> Result<Vec<Vec<(NodeId, Node)>>, Error> {
        let mut by_level = Vec::with_capacity(changed.len());
        for &id in changed {
            by_level.push((self.node(id)?.level, id));
        }
        by_level.sort_unstable();
        let mut covered = rustc_hash::FxHashSet::default();
        let mut paths = Vec::new();
        for (_, id) in by_level {
            if covered.contains(&id) {
                continue;
            }
            let mut path = Vec::new();
            let mut cur = Some(id);
            while let Some(c) = cur {
                covered.insert(c);
                path.push((c, self.node(c)?.clone()));
                cur = self.parent.get(&c).copied();
            }
            paths.push(path);
        }
        Ok(paths)
    }
}
