//! B+-tree nodes in memory, their on-flash image, and the physiological log records
//! that change them.
//!
//! Invariants of a [`Node`]: keys strictly ascending; a leaf has one value per key; an
//! internal node has one more child than keys, child `i` holding keys in
//! `[keys[i-1], keys[i])`. Keys, values and node ids are `u32` (the IPL paper's Table 3
//! records: an integer key and an integer pointer, 8 bytes an entry).
//!
//! Image (little endian): `level u8 | 0xB7 | count u16 | next u32 | id u32`, then a leaf's
//! `count × (key u32, value u32)` or an internal node's `first child u32` and
//! `count × (key u32, child u32)`. An erased image (0xFF) fails the marker check.
//!
//! Records (a stream ended by an 0xFF byte or the end of the buffer):
//! `1 key ptr` put, `2 key` delete, `3 keep u16` truncate, `4 next` set the leaf chain,
//! `5 level first` reset to an empty node. Every decoder checks lengths and returns
//! [`Error::Corrupt`] naming what and where, never panics.

use crate::error::Error;

/// Logical node number.
pub type NodeId = u32;
/// No node (end of the leaf chain).
pub const NIL: NodeId = u32::MAX;

const MARKER: u8 = 0xB7;
/// Bytes of an image header.
pub const HEADER_BYTES: usize = 12;
/// Bytes of one entry (key and value or child).
pub const ENTRY_BYTES: usize = 8;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Node {
    /// 0 for a leaf.
    pub level: u8,
    pub keys: Vec<u32>,
    /// A leaf's values (one per key) or an internal node's children (keys + 1).
    pub ptrs: Vec<u32>,
    /// The next leaf in key order.
    pub next: NodeId,
}

/// A physiological change to one node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rec {
    /// Leaf: insert or overwrite `key`. Internal: insert separator `key` with `ptr` as
    /// the child to its right.
    Put {
        key: u32,
        ptr: u32,
    },
    /// Leaf: remove `key`. Internal: remove separator `key` and the child to its right.
    Del {
        key: u32,
    },
    /// Keep the first `keep` keys (and their values, or `keep + 1` children).
    Truncate {
        keep: u16,
    },
    Next(NodeId),
    /// Empty node at `level`; an internal node starts with the single child `first`.
    Reset {
        level: u8,
        first: u32,
    },
}

impl Node {
    pub fn empty_leaf() -> Node {
        Node { level: 0, keys: Vec::new(), ptrs: Vec::new(), next: NIL }
    }

    pub fn is_leaf(&self) -> bool {
        self.level == 0
    }

    /// Bytes of this node's image.
    pub fn image_bytes(&self) -> usize {
        HEADER_BYTES + self.keys.len() * ENTRY_BYTES + if self.is_leaf() { 0 } else { 4 }
    }

    /// Index of the child that covers `key`.
    pub fn child_index(&self, key: u32) -> usize {
        self.keys.partition_point(|&k| k <= key)
    }

    /// The records that rebuild this node from nothing.
    pub fn rebuild_records(&self) -> Vec<Rec> {
        let mut out = Vec::with_capacity(self.keys.len() + 2);
        let first = if self.is_leaf() { NIL } else { self.ptrs[0] };
        out.push(Rec::Reset { level: self.level, first });
        let skip = usize::from(!self.is_leaf());
        out.extend(self.keys.iter().zip(&self.ptrs[skip..]).map(|(&key, &ptr)| Rec::Put { key, ptr }));
        if self.next != NIL {
            out.push(Rec::Next(self.next));
        }
        out
    }

    /// Applies one record; a record that does not fit the node is an error naming it.
    #[inline]
    pub fn apply(&mut self, rec: &Rec) -> Result<(), String> {
        match *rec {
            // Rebuilding from records in key order (BFTL) appends: no search needed.
            Rec::Put { key, ptr } if self.keys.last().is_none_or(|&last| last < key) => {
                self.keys.push(key);
                self.ptrs.push(ptr);
            }
            Rec::Put { key, ptr } => match (self.keys.binary_search(&key), self.is_leaf()) {
                (Ok(i), true) => self.ptrs[i] = ptr,
                (Ok(i), false) => self.ptrs[i + 1] = ptr,
                (Err(i), leaf) => {
                    self.keys.insert(i, key);
                    self.ptrs.insert(i + usize::from(!leaf), ptr);
                }
            },
            Rec::Del { key } => {
                if let Ok(i) = self.keys.binary_search(&key) {
                    self.keys.remove(i);
                    self.ptrs.remove(i + usize::from(!self.is_leaf()));
                }
            }
            Rec::Truncate { keep } => {
                let keep = keep as usize;
                if keep > self.keys.len() {
                    return Err(format!("truncate to {keep} keys of a node holding {}", self.keys.len()));
                }
                self.keys.truncate(keep);
                self.ptrs.truncate(keep + usize::from(!self.is_leaf()));
            }
            Rec::Next(next) => self.next = next,
            Rec::Reset { level, first } => {
                self.level = level;
                self.keys.clear();
                self.ptrs.clear();
                self.next = NIL;
                if level > 0 {
                    self.ptrs.push(first);
                }
            }
        }
        Ok(())
    }

    /// Writes the image of node `id` into `out` (at least [`Node::image_bytes`] long).
    pub fn encode(&self, id: NodeId, out: &mut [u8]) {
        out[0] = self.level;
        out[1] = MARKER;
        out[2..4].copy_from_slice(&(self.keys.len() as u16).to_le_bytes());
        out[4..8].copy_from_slice(&self.next.to_le_bytes());
        out[8..12].copy_from_slice(&id.to_le_bytes());
        let mut at = HEADER_BYTES;
        let mut put = |v: u32| {
            out[at..at + 4].copy_from_slice(&v.to_le_bytes());
            at += 4;
        };
        if !self.is_leaf() {
            put(self.ptrs[0]);
        }
        let skip = usize::from(!self.is_leaf());
        for (&k, &p) in self.keys.iter().zip(&self.ptrs[skip..]) {
            put(k);
            put(p);
        }
    }

    /// True when `bytes` start an image (not erased flash).
    pub fn is_image(bytes: &[u8]) -> bool {
        bytes.len() >= HEADER_BYTES && bytes[1] == MARKER
    }

    /// Decodes an image; `location` names where it was read for the error.
    pub fn decode(bytes: &[u8], location: &dyn Fn() -> String) -> Result<(NodeId, Node), Error> {
        let corrupt = |what| Error::Corrupt { what, location: location() };
        if !Node::is_image(bytes) {
            return Err(corrupt("node image (no node marker)"));
        }
        let level = bytes[0];
        let count = u16::from_le_bytes([bytes[2], bytes[3]]) as usize;
        let next = u32_at(bytes, 4);
        let id = u32_at(bytes, 8);
        let leaf = level == 0;
        let need = HEADER_BYTES + count * ENTRY_BYTES + if leaf { 0 } else { 4 };
        if need > bytes.len() {
            return Err(corrupt("node image (entry count beyond the node)"));
        }
        let mut at = HEADER_BYTES;
        let mut ptrs = Vec::with_capacity(count + 1);
        if !leaf {
            ptrs.push(u32_at(bytes, at));
            at += 4;
        }
        let mut keys = Vec::with_capacity(count);
        for _ in 0..count {
            keys.push(u32_at(bytes, at));
            ptrs.push(u32_at(bytes, at + 4));
            at += ENTRY_BYTES;
        }
        if keys.windows(2).any(|w| w[0] >= w[1]) {
            return Err(corrupt("node image (keys out of order)"));
        }
        Ok((id, Node { level, keys, ptrs, next }))
    }
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

impl Rec {
    /// Bytes of the encoded record.
    pub fn encoded_bytes(&self) -> usize {
        match self {
            Rec::Put { .. } => 9,
            Rec::Del { .. } | Rec::Next(_) => 5,
            Rec::Truncate { .. } => 3,
            Rec::Reset { .. } => 6,
        }
    }

    pub fn encode(&self, out: &mut Vec<u8>) {
        match *self {
            Rec::Put { key, ptr } => {
                out.push(1);
                out.extend(key.to_le_bytes());
                out.extend(ptr.to_le_bytes());
            }
            Rec::Del { key } => {
                out.push(2);
                out.extend(key.to_le_bytes());
            }
            Rec::Truncate { keep } => {
                out.push(3);
                out.extend(keep.to_le_bytes());
            }
            Rec::Next(next) => {
                out.push(4);
                out.extend(next.to_le_bytes());
            }
            Rec::Reset { level, first } => {
                out.push(5);
                out.push(level);
                out.extend(first.to_le_bytes());
            }
        }
    }

    /// The length of the record at the start of `bytes` without decoding it:
    /// `Ok(None)` at an end marker (0xFF) or the end of the buffer; an unknown tag or a
    /// record cut short is an error, as in [`Rec::decode`].
    #[inline]
    pub fn encoded_len(bytes: &[u8], location: &dyn Fn() -> String) -> Result<Option<usize>, Error> {
        let Some(&tag) = bytes.first() else { return Ok(None) };
        let need = match tag {
            0xFF => return Ok(None),
            1 => 9,
            2 | 4 => 5,
            3 => 3,
            5 => 6,
            _ => return Err(Error::Corrupt { what: "log record (unknown tag)", location: location() }),
        };
        if bytes.len() < need {
            return Err(Error::Corrupt { what: "log record (cut short)", location: location() });
        }
        Ok(Some(need))
    }

    /// Decodes one record at the start of `bytes`: `Ok(None)` at an end marker (0xFF)
    /// or the end of the buffer, else the record and its length.
    #[inline]
    pub fn decode(bytes: &[u8], location: &dyn Fn() -> String) -> Result<Option<(Rec, usize)>, Error> {
        let Some(need) = Rec::encoded_len(bytes, location)? else { return Ok(None) };
        let tag = bytes[0];
        let rec = match tag {
            1 => Rec::Put { key: u32_at(bytes, 1), ptr: u32_at(bytes, 5) },
            2 => Rec::Del { key: u32_at(bytes, 1) },
            3 => Rec::Truncate { keep: u16::from_le_bytes([bytes[1], bytes[2]]) },
            4 => Rec::Next(u32_at(bytes, 1)),
            _ => Rec::Reset { level: bytes[1], first: u32_at(bytes, 2) },
        };
        Ok(Some((rec, need)))
    }
}

/// Maximum keys of a leaf (`leaf`) or internal node whose image has `bytes` bytes.
pub fn capacity_of(bytes: usize, leaf: bool) -> usize {
    let fixed = HEADER_BYTES + if leaf { 0 } else { 4 };
    bytes.saturating_sub(fixed) / ENTRY_BYTES
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_round_trips_and_records_rebuild() {
        let mut n = Node { level: 1, keys: vec![5, 9], ptrs: vec![1, 2, 3], next: NIL };
        let mut buf = vec![0xFF; 64];
        n.encode(7, &mut buf);
        let (id, back) = Node::decode(&buf, &|| "test".into()).unwrap();
        assert_eq!((id, &back), (7, &n));
        let mut rebuilt = Node::empty_leaf();
        for r in n.rebuild_records() {
            rebuilt.apply(&r).unwrap();
        }
        assert_eq!(rebuilt, n);
        n.apply(&Rec::Del { key: 5 }).unwrap();
        assert_eq!((n.keys.as_slice(), n.ptrs.as_slice()), (&[9][..], &[1, 3][..]));
    }

    #[test]
    fn damaged_bytes_are_errors_not_panics() {
        let mut buf = vec![0u8; 20];
        buf[1] = MARKER;
        buf[2] = 200; // 200 entries cannot fit 20 bytes
        assert!(matches!(Node::decode(&buf, &|| "p".into()), Err(Error::Corrupt { .. })));
        assert!(Node::decode(&[0xFF; 20], &|| "p".into()).is_err());
        assert!(Rec::decode(&[1, 0, 0], &|| "p".into()).is_err());
        assert!(Rec::decode(&[9], &|| "p".into()).is_err());
        assert_eq!(Rec::decode(&[0xFF, 1], &|| "p".into()).unwrap(), None);
    }

    proptest::proptest! {
        /// Arbitrary bytes, and node images with bytes flipped, decode to a node, a
        /// record or an error, never a panic.
        #[test]
        fn fuzz_node_and_record_decoders_never_panic(
            bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..600),
            flips in proptest::collection::vec((0usize..256, proptest::prelude::any::<u8>()), 0..6),
        ) {
            let _ = Node::decode(&bytes, &|| "fuzz".into());
            let _ = Rec::decode(&bytes, &|| "fuzz".into());
            let n = Node { level: 0, keys: vec![1, 5, 9], ptrs: vec![10, 50, 90], next: NIL };
            let mut image = vec![0xFF; 256];
            n.encode(3, &mut image);
            for (at, mask) in flips {
                image[at] ^= mask;
            }
            let _ = Node::decode(&image, &|| "fuzz".into());
        }
    }
}
