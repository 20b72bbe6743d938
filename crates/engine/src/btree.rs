//! A B+-tree over order-preserving byte keys, on slotted pages through the buffer pool.
//!
//! Node entries (`crate::node`) are kept in key order in the slot directory. An inner entry's key is the smallest key of its child's subtree; keys below the
//! first entry go to the leftmost child. Keys are unique within a tree: a non-unique
//! index appends the RID to the key. The root keeps its page number for the tree's
//! life: a root split moves both halves to new pages, and a root with a single child
//! takes that child's contents. A node that falls below a quarter full after a delete
//! merges with a sibling when the two fit one page.

use crate::buffer::{FrameId, Pages};
use crate::error::{Error, Result};
use crate::node::{child_of, entry, entry_at, key_of, value_of};
use crate::page::{self, Kind, NO_PAGE};
use crate::space::{ObjectAccess, ObjectSpace};
use crate::store::PageId;

/// The largest key plus value a tree takes: four entries must fit a node.
pub fn max_entry_bytes(body_end: usize) -> usize {
    (body_end - page::HEADER_BYTES) / 4 - 8
}

/// `Ok(i)`: the key is entry `i`; `Err(i)`: it would be inserted at `i`.
fn search(p: &[u8], body_end: usize, key: &[u8]) -> std::result::Result<usize, usize> {
    let (mut lo, mut hi) = (0, page::slot_count(p));
    page::warm(p, body_end);
    while lo < hi {
        let mid = (lo + hi) / 2;
        let t = entry_at(p, body_end, mid);
        match compare(key_of(t), key) {
            std::cmp::Ordering::Less => lo = mid + 1,
            std::cmp::Ordering::Greater => hi = mid,
            std::cmp::Ordering::Equal => return Ok(mid),
        }
    }
    Err(lo)
}

/// Byte-wise (memcmp) order of two keys, eight bytes at a time as big-endian words,
/// then byte by byte: keys are short (an INT key is 5 bytes), so this inlined loop
/// beats a call to `memcmp`.
fn compare(a: &[u8], b: &[u8]) -> std::cmp::Ordering {
    let n = a.len().min(b.len());
    let (mut x, mut y) = (&a[..n], &b[..n]);
    while let (Some((wx, rx)), Some((wy, ry))) = (x.split_first_chunk::<8>(), y.split_first_chunk::<8>()) {
        if wx != wy {
            return u64::from_be_bytes(*wx).cmp(&u64::from_be_bytes(*wy));
        }
        (x, y) = (rx, ry);
    }
    for (p, q) in x.iter().zip(y) {
        if p != q {
            return p.cmp(q);
        }
    }
    a.len().cmp(&b.len())
}

/// Child position for `key` in an inner node: 0 = leftmost, i + 1 = entry i.
fn child_position(p: &[u8], body_end: usize, key: &[u8]) -> usize {
    match search(p, body_end, key) {
        Ok(i) => i + 1,
        Err(i) => i,
    }
}

fn child_at(p: &[u8], body_end: usize, position: usize) -> u32 {
    if position == 0 {
        page::aux(p)
    } else {
        child_of(entry_at(p, body_end, position - 1))
    }
}

fn check_node(p: &[u8], no: u32) -> Result<bool> {
    match page::kind(p) {
        k if k == Kind::Leaf as u8 => Ok(true),
        k if k == Kind::Inner as u8 => Ok(false),
        k => Err(Error::Corrupt(format!("page {no} is in a B+-tree but has page kind {k}"))),
    }
}

/// The way down to a leaf: (inner page, child position taken) from the root, and the
/// leaf's page number and frame (pinned; the caller unpins it).
type Descent = (Vec<(u32, usize)>, u32, FrameId);

/// Walks from the root to the leaf for `key`, recording the way down.
fn descend(pool: &mut Pages<'_>, space: &ObjectSpace, root: u32, key: &[u8]) -> Result<Descent> {
    let mut path = Vec::new();
    let (no, f) = walk(pool, space, root, key, |no, pos| path.push((no, pos)))?;
    Ok((path, no, f))
}

/// Walks from the root to the leaf for `key`, telling `step` each inner page and the
/// child position taken; returns the leaf's page number and frame (pinned). A lookup
/// passes a `step` that keeps nothing, so it allocates nothing.
fn walk(
    pool: &mut Pages<'_>,
    space: &ObjectSpace,
    root: u32,
    key: &[u8],
    mut step: impl FnMut(u32, usize),
) -> Result<(u32, FrameId)> {
    let mut no = root;
    for _ in 0..=64 {
        let f = pool.fetch(PageId { region: space.region, page: no })?;
        let p = pool.page(f);
        let body_end = page::body_end(p);
        let leaf = check_node(p, no);
        let next = match leaf {
            Ok(false) => {
                let pos = child_position(p, body_end, key);
                Ok((pos, child_at(p, body_end, pos)))
            }
            Ok(true) => Err(None),
            Err(e) => Err(Some(e)),
        };
        match next {
            Ok((pos, child)) => {
                pool.unpin(f);
                step(no, pos);
                no = child;
            }
            Err(None) => return Ok((no, f)),
            Err(Some(e)) => {
                pool.unpin(f);
                return Err(e);
            }
        }
    }
    Err(Error::Corrupt(format!("B+-tree at page {root} is deeper than 64 levels (a cycle?)")))
}

/// Creates an empty tree; returns its root page.
pub fn create(a: &mut ObjectAccess) -> Result<u32> {
    let (root, f) = a.new_page(Kind::Leaf, 0)?;
    a.pool.unpin(f);
    Ok(root)
}

/// Calls `read` with the value stored under `key`; `None` if the key is absent.
pub fn get<T>(
    pool: &mut Pages<'_>,
    space: &ObjectSpace,
    root: u32,
    key: &[u8],
    read: impl FnOnce(&[u8]) -> T,
) -> Result<Option<T>> {
    let (_, f) = walk(pool, space, root, key, |_, _| {})?;
    let p = pool.page(f);
    let body_end = page::body_end(p);
    let out = search(p, body_end, key).ok().map(|i| read(value_of(entry_at(p, body_end, i))));
    pool.unpin(f);
    Ok(out)
}

/// Visits entries with key ≥ `from` in key order until `visit` returns `false`.
pub fn scan(
    pool: &mut Pages<'_>,
    space: &ObjectSpace,
    root: u32,
    from: &[u8],
    mut visit: impl FnMut(&[u8], &[u8]) -> bool,
) -> Result<()> {
    let (mut no, leaf) = walk(pool, space, root, from, |_, _| {})?;
    let mut first = true;
    let mut hops = 0u64;
    while no != NO_PAGE {
        let f = if first { leaf } else { pool.fetch(PageId { region: space.region, page: no })? };
        let p = pool.page(f);
        let body_end = page::body_end(p);
        if let Err(e) = check_node(p, no) {
            pool.unpin(f);
            return Err(e);
        }
        let start = if first { search(p, body_end, from).unwrap_or_else(|i| i) } else { 0 };
        first = false;
        for i in start..page::slot_count(p) {
            let t = entry_at(p, body_end, i);
            if !visit(key_of(t), value_of(t)) {
                pool.unpin(f);
                return Ok(());
            }
        }
        let next = page::next(p);
        pool.unpin(f);
        no = next;
        hops += 1;
        if hops > pool.store().pages_in(space.region) as u64 {
            return Err(Error::Corrupt(format!("leaf chain of the B+-tree at page {root} loops")));
        }
    }
    Ok(())
}

/// Inserts `key` → `value`; `false` (and nothing changes) if the key is present.
pub fn insert(a: &mut ObjectAccess, root: u32, key: &[u8], value: &[u8]) -> Result<bool> {
    let body_end = a.body_end();
    if 2 + key.len() + value.len() > max_entry_bytes(body_end) {
        return Err(Error::Full(format!(
            "a {}-byte key does not fit the B+-tree's pages (key and value at most {} bytes)",
            key.len(),
            max_entry_bytes(body_end) - 2
        )));
    }
    let (mut path, leaf, f) = descend(&mut a.pool, a.space, root, key)?;
    a.adopt(f);
    let Err(pos) = search(a.pool.page(f), page::body_end(a.pool.page(f)), key) else {
        a.pool.unpin(f);
        return Ok(false);
    };
    let mut pending = insert_into(a, f, leaf, pos, entry(key, value), path.is_empty())?;
    while let Some((separator, right)) = pending {
        let (parent, position) = path.pop().expect("only a non-root node hands a separator up");
        let f = a.fetch(parent)?;
        pending = insert_into(a, f, parent, position, entry(&separator, &right.to_le_bytes()), path.is_empty())?;
    }
    Ok(true)
}

/// A node's contents, read out of its page.
struct Node {
    /// The body end of the page it was read from (it fits that layout).
    body_end: usize,
    leaf: bool,
    level: u8,
    next: u32,
    leftmost: u32,
    entries: Vec<Vec<u8>>,
}

fn read_node(a: &ObjectAccess, f: FrameId, no: u32) -> Result<Node> {
    let p = a.pool.page(f);
    let body_end = page::body_end(p);
    Ok(Node {
        body_end,
        leaf: check_node(p, no)?,
        level: page::level(p),
        next: page::next(p),
        leftmost: page::aux(p),
        entries: (0..page::slot_count(p)).map(|i| entry_at(p, body_end, i).to_vec()).collect(),
    })
}

/// Rewrites the pinned page `f` to hold `node`, in the object's current layout if the
/// node fits it, else in the one it was read from (its delta area untouched unless the
/// layout changes).
fn write_node(a: &mut ObjectAccess, f: FrameId, node: &Node) {
    let target = a.body_end();
    let body_end = if entries_bytes(&node.entries) <= target - page::HEADER_BYTES { target } else { node.body_end };
    let object = a.object;
    let mut p = a.page_bytes_mut(f);
    if page::body_end(p) != body_end {
        p[body_end..].fill(0xFF);
    }
    let no = page::page_no(p);
    let lsn = page::lsn(p);
    let kind = if node.leaf { Kind::Leaf } else { Kind::Inner };
    page::clear(&mut p, body_end, no, object, kind, node.level);
    page::set_lsn(&mut p, lsn);
    page::set_next(&mut p, node.next);
    page::set_aux(&mut p, node.leftmost);
    for e in &node.entries {
        assert!(page::insert(&mut p, body_end, e).is_some(), "node contents fit a page");
    }
}

fn entries_bytes(entries: &[Vec<u8>]) -> usize {
    entries.iter().map(|e| e.len() + 4).sum()
}

/// Inserts `tuple` at slot `pos` of the pinned node `no` (unpinning it). If the node
/// splits, returns the separator and the new right node for its parent.
fn insert_into(
    a: &mut ObjectAccess,
    f: FrameId,
    no: u32,
    pos: usize,
    tuple: Vec<u8>,
    is_root: bool,
) -> Result<Option<(Vec<u8>, u32)>> {
    let body_end = page::body_end(a.pool.page(f));
    if page::insert_at(a.page_mut(f), body_end, pos, &tuple) {
        a.pool.unpin(f);
        return Ok(None);
    }
    let mut node = match read_node(a, f, no) {
        Ok(n) => n,
        Err(e) => {
            a.pool.unpin(f);
            return Err(e);
        }
    };
    node.entries.insert(pos, tuple);
    // Split where the left half reaches half the bytes.
    let half = entries_bytes(&node.entries) / 2;
    let mut acc = 0;
    let mid = node
        .entries
        .iter()
        .position(|e| {
            acc += e.len() + 4;
            acc >= half
        })
        .map_or(1, |i| i + 1)
        .clamp(1, node.entries.len() - 1);
    let mut right_entries = node.entries.split_off(mid);
    let (separator, right_leftmost) = if node.leaf {
        (key_of(&right_entries[0]).to_vec(), NO_PAGE)
    } else {
        let up = right_entries.remove(0);
        (key_of(&up).to_vec(), child_of(&up))
    };
    let kind = if node.leaf { Kind::Leaf } else { Kind::Inner };
    let (r, rf) = a.new_page(kind, node.level)?;
    let right = Node {
        body_end: node.body_end,
        leaf: node.leaf,
        level: node.level,
        next: node.next,
        leftmost: right_leftmost,
        entries: right_entries,
    };
    write_node(a, rf, &right);
    a.pool.unpin(rf);
    if is_root {
        // The root keeps its page: the left half moves to a new page too.
        let (l, lf) = a.new_page(kind, node.level)?;
        let left = Node { next: if node.leaf { r } else { NO_PAGE }, ..node };
        write_node(a, lf, &left);
        a.pool.unpin(lf);
        let level = left.level + 1;
        let root = Node {
            body_end: left.body_end,
            leaf: false,
            level,
            next: NO_PAGE,
            leftmost: l,
            entries: vec![entry(&separator, &r.to_le_bytes())],
        };
        write_node(a, f, &root);
        a.pool.unpin(f);
        return Ok(None);
    }
    let left = Node { next: if node.leaf { r } else { NO_PAGE }, ..node };
    write_node(a, f, &left);
    a.pool.unpin(f);
    Ok(Some((separator, r)))
}

/// Removes `key`; `false` if it was not there.
pub fn delete(a: &mut ObjectAccess, root: u32, key: &[u8]) -> Result<bool> {
    let (mut path, _, f) = descend(&mut a.pool, a.space, root, key)?;
    a.adopt(f);
    let body_end = page::body_end(a.pool.page(f));
    let Ok(i) = search(a.pool.page(f), body_end, key) else {
        a.pool.unpin(f);
        return Ok(false);
    };
    page::remove_at(a.page_mut(f), body_end, i);
    let mut underfull = page::used_bytes(a.pool.page(f), body_end) < (body_end - page::HEADER_BYTES) / 4;
    a.pool.unpin(f);
    while let Some((parent, position)) = path.pop() {
        if !underfull || !merge(a, parent, position)? {
            break;
        }
        let pf = a.fetch(parent)?;
        let body_end = page::body_end(a.pool.page(pf));
        underfull = page::used_bytes(a.pool.page(pf), body_end) < (body_end - page::HEADER_BYTES) / 4;
        a.pool.unpin(pf);
    }
    collapse_root(a, root)?;
    Ok(true)
}

/// Merges the child at `position` of `parent` with a sibling if both fit one page;
/// the right one is freed and its separator leaves the parent.
fn merge(a: &mut ObjectAccess, parent: u32, position: usize) -> Result<bool> {
    let pf = a.fetch(parent)?;
    let p = a.pool.page(pf);
    let body_end = page::body_end(p);
    let n = page::slot_count(p);
    let right_pos = if position < n { position + 1 } else { position };
    if right_pos == 0 {
        a.pool.unpin(pf);
        return Ok(false);
    }
    let (left, right) = (child_at(p, body_end, right_pos - 1), child_at(p, body_end, right_pos));
    let separator = key_of(entry_at(p, body_end, right_pos - 1)).to_vec();
    a.pool.unpin(pf);
    let lf = a.fetch(left)?;
    let rf = a.fetch(right)?;
    let nodes = read_node(a, lf, left).and_then(|l| Ok((l, read_node(a, rf, right)?)));
    let (mut l, r) = match nodes {
        Ok(n) => n,
        Err(e) => {
            a.pool.unpin(lf);
            a.pool.unpin(rf);
            return Err(e);
        }
    };
    if !l.leaf {
        l.entries.push(entry(&separator, &r.leftmost.to_le_bytes()));
    }
    l.entries.extend(r.entries);
    // The merged node must fit the layout it will be written in.
    if entries_bytes(&l.entries) > a.body_end().max(l.body_end) - page::HEADER_BYTES {
        a.pool.unpin(lf);
        a.pool.unpin(rf);
        return Ok(false);
    }
    if l.leaf {
        l.next = r.next;
    }
    write_node(a, lf, &l);
    a.pool.unpin(lf);
    a.free_page(right)?;
    let pf = a.fetch(parent)?;
    let body_end = page::body_end(a.pool.page(pf));
    page::remove_at(a.page_mut(pf), body_end, right_pos - 1);
    a.pool.unpin(pf);
    Ok(true)
}

/// A root inner node left with one child takes over that child's contents.
fn collapse_root(a: &mut ObjectAccess, root: u32) -> Result<()> {
    loop {
        let f = a.fetch(root)?;
        let p = a.pool.page(f);
        if page::kind(p) != Kind::Inner as u8 || page::slot_count(p) > 0 {
            a.pool.unpin(f);
            return Ok(());
        }
        let child = page::aux(p);
        let cf = a.fetch(child)?;
        let node = read_node(a, cf, child);
        let node = match node {
            Ok(n) => n,
            Err(e) => {
                a.pool.unpin(cf);
                a.pool.unpin(f);
                return Err(e);
            }
        };
        write_node(a, f, &node);
        a.pool.unpin(f);
        a.free_page(child)?;
    }
}

/// Every page of the tree, for checks and `DROP`.
pub fn pages(pool: &mut Pages<'_>, space: &ObjectSpace, root: u32) -> Result<Vec<u32>> {
    let mut out = Vec::new();
    let mut stack = vec![root];
    while let Some(no) = stack.pop() {
        if out.len() > pool.store().pages_in(space.region) as usize {
            return Err(Error::Corrupt(format!("the B+-tree at page {root} has a cycle")));
        }
        out.push(no);
        let f = pool.fetch(PageId { region: space.region, page: no })?;
        let p = pool.page(f);
        if page::kind(p) == Kind::Inner as u8 {
            stack.push(page::aux(p));
            let body_end = page::body_end(p);
            stack.extend((0..page::slot_count(p)).map(|i| child_of(entry_at(p, body_end, i))));
        }
        pool.unpin(f);
    }
    Ok(out)
}

/// Levels of the tree (1 = the root is a leaf).
pub fn height(pool: &mut Pages<'_>, space: &ObjectSpace, root: u32) -> Result<u32> {
    let f = pool.fetch(PageId { region: space.region, page: root })?;
    let level = page::level(pool.page(f));
    pool.unpin(f);
    Ok(level as u32 + 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::check_entries;

    const BODY: usize = 1024;

    fn node(kind: Kind, entries: &[Vec<u8>]) -> Vec<u8> {
        let mut p = vec![0u8; BODY];
        page::init(&mut p, BODY, 5, 1, kind, 0);
        for (i, t) in entries.iter().enumerate() {
            assert!(page::insert_at(&mut p, BODY, i, t));
        }
        p
    }

    #[test]
    fn key_compare_is_memcmp_order() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        for _ in 0..20_000 {
            let mut key = || -> Vec<u8> { (0..rng.gen_range(0..20)).map(|_| rng.gen_range(0..3u8)).collect() };
            let (a, b) = (key(), key());
            assert_eq!(compare(&a, &b), a.cmp(&b), "{a:?} vs {b:?}");
            assert_eq!(compare(&a, &a), std::cmp::Ordering::Equal);
        }
    }

    #[test]
    fn corrupt_nodes_are_errors_not_panics() {
        let good = node(Kind::Inner, &[entry(b"a", &7u32.to_le_bytes()), entry(b"b", &8u32.to_le_bytes())]);
        check_entries(&good, BODY).unwrap();
        let cases = [
            ("the key runs past", node(Kind::Leaf, &[vec![9, 0, b'k']])),
            ("child is not 4 bytes", node(Kind::Inner, &[entry(b"a", &[1, 2])])),
            ("out of order", node(Kind::Leaf, &[entry(b"b", b"x"), entry(b"a", b"y")])),
        ];
        for (what, p) in cases {
            let err = check_entries(&p, BODY).unwrap_err();
            assert!(matches!(&err, Error::Corrupt(m) if m.contains(what)), "{what}: {err}");
            // The accessors stay in bounds on such a node.
            let _ = search(&p, BODY, b"a");
            let _ = child_at(&p, BODY, 1);
        }
    }
}
