//! The OOB format of a region page: who the page belongs to, how to tell whether it is
//! whole, and which appends it has taken.
//!
//! ```text
//! offset size field
//!  0      1   kind: 0xD1 data page, 0x70 tombstone (trim record), 0xC0 corrupt marker
//!             (GC moved a page found corrupt); 0xFF = never written
//!  1      1   format version (2)
//!  2      1   slots_at_program: delta slots copied in by the program that wrote the page
//!  3      1   flags: bit 0 = sealed (takes no more appends)
//!  4      4   lpn
//!  8      8   seq: region write sequence number of the logical write
//! 16      4   gen: migration generation (GC copies keep seq and add 1 here)
//! 20      4   erased_from: where the data's trailing run of 0xFF bytes began when first
//!             programmed; appends go there, at or after it
//! 24     16   crc32 of each quarter of the base, data bytes [0, erased_from)
//! 40      1   part: index of this page in its write group (0 for a single write)
//! 41      1   parts: pages in the write group (1 for a single write)
//! 42      2   zero
//! 44      4   crc32 of bytes 0..44
//! 48      8·k delta slots: u16 offset, u16 len, u32 crc32(offset ‖ len ‖ appended bytes)
//! ```
//!
//! Why it detects torn pages: a torn program lands only some of the bits it meant to
//! clear. A torn first program or copy fails the header CRC, a base CRC or a copied
//! slot, so the page is damaged. A torn append (`write_delta`, one program of its bytes
//! and its slot) leaves the base intact; its slot fails its CRC, or never landed at all
//! while some of its bytes did — either way the tail holds bytes no good slot explains,
//! all at or after the end of the previous append. The page stays valid with a *torn
//! tail*: the base and all earlier appends are whole, the torn bytes are confined to
//! the tail, and the caller (the engine's delta-record checksum) ignores them.
//!
//! Why it tells corruption apart where the page alone can: a bad slot followed by a
//! written slot, or stray bytes before the end of the last good append, cannot come
//! from a torn append (a torn append seals the page and lands only past the previous
//! one), so they are [`Damage::Append`]. Whether a damaged first program was torn or
//! corrupted later is decided by the region from where the page sits (see
//! `region/rebuild.rs`).
//!
//! The header CRC also corrects: up to two flipped bits in the 48 header bytes are
//! repaired (CRC-32 has Hamming distance 5 at this length, so the repair is unique),
//! which keeps a damaged page attributable to its lpn and write.

use std::collections::HashMap;
use std::sync::OnceLock;

/// Bytes before the first delta slot.
pub const HEADER_BYTES: usize = 48;
/// Bytes of one delta slot.
pub const SLOT_BYTES: usize = 8;
const SEGMENTS: usize = 4;
const VERSION: u8 = 2;
const FLAG_SEALED: u8 = 1;
/// Bytes the header CRC covers.
const CRC_AT: usize = 44;
const HEADER_BITS: usize = HEADER_BYTES * 8;

/// What a page holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PageKind {
    Data,
    Tombstone,
    /// Stands in for a data page GC found corrupt: keeps the lpn's newest version
    /// reported as corrupt after the damaged page is erased.
    Corrupt,
}

impl PageKind {
    fn byte(self) -> u8 {
        match self {
            PageKind::Data => 0xD1,
            PageKind::Tombstone => 0x70,
            PageKind::Corrupt => 0xC0,
        }
    }
}

/// The decoded fixed part of a page's OOB.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    pub kind: PageKind,
    pub slots_at_program: u8,
    pub sealed: bool,
    pub lpn: u32,
    pub seq: u64,
    pub gen: u32,
    pub erased_from: u32,
    pub segment_crcs: [u32; SEGMENTS],
    /// Index of the page in its write group, and the group's page count (0 of 1 for
    /// a single write). Every part of a group has the same seq; part `i` holds lpn
    /// `first + i`.
    pub part: u8,
    pub parts: u8,
}

impl Header {
    /// Header of a freshly written single page with `data` as its content.
    pub fn new(kind: PageKind, lpn: u32, seq: u64, data: &[u8]) -> Header {
        let erased_from = erased_from(data);
        Header {
            kind,
            slots_at_program: 0,
            sealed: false,
            lpn,
            seq,
            gen: 0,
            erased_from: erased_from as u32,
            segment_crcs: segment_crcs(&data[..erased_from]),
            part: 0,
            parts: 1,
        }
    }

    /// The first lpn of the page's write group.
    pub fn group_first(&self) -> u32 {
        self.lpn - self.part as u32
    }

    pub fn encode(&self) -> [u8; HEADER_BYTES] {
        let mut b = [0u8; HEADER_BYTES];
        b[0] = self.kind.byte();
        b[1] = VERSION;
        b[2] = self.slots_at_program;
        b[3] = if self.sealed { FLAG_SEALED } else { 0 };
        b[4..8].copy_from_slice(&self.lpn.to_le_bytes());
        b[8..16].copy_from_slice(&self.seq.to_le_bytes());
        b[16..20].copy_from_slice(&self.gen.to_le_bytes());
        b[20..24].copy_from_slice(&self.erased_from.to_le_bytes());
        for (i, crc) in self.segment_crcs.iter().enumerate() {
            b[24 + 4 * i..28 + 4 * i].copy_from_slice(&crc.to_le_bytes());
        }
        b[40] = self.part;
        b[41] = self.parts;
        let crc = crc32fast::hash(&b[..CRC_AT]);
        b[CRC_AT..].copy_from_slice(&crc.to_le_bytes());
        b
    }

    /// Decodes and checks a header, repairing up to two flipped bits; `None` if
    /// erased, torn beyond repair or not ours.
    pub fn decode(oob: &[u8]) -> Option<Header> {
        let raw = oob.get(..HEADER_BYTES)?;
        let mut b = [0u8; HEADER_BYTES];
        b.copy_from_slice(raw);
        let syndrome = crc32fast::hash(&b[..CRC_AT]) ^ u32::from_le_bytes([b[44], b[45], b[46], b[47]]);
        if syndrome != 0 {
            for bit in repair_bits(syndrome)? {
                b[bit / 8] ^= 1 << (bit % 8);
            }
        }
        Header::parse(&b)
    }

    /// The fields of a header whose CRC holds.
    fn parse(b: &[u8; HEADER_BYTES]) -> Option<Header> {
        let u32_at = |o: usize| u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]);
        if b[1] != VERSION || b[3] & !FLAG_SEALED != 0 || b[42..44] != [0, 0] {
            return None;
        }
        let kind = match b[0] {
            0xD1 => PageKind::Data,
            0x70 => PageKind::Tombstone,
            0xC0 => PageKind::Corrupt,
            _ => return None,
        };
        let lpn = u32_at(4);
        let (part, parts) = (b[40], b[41]);
        if parts == 0 || part >= parts || (part as u32) > lpn {
            return None;
        }
        let mut seq = [0u8; 8];
        seq.copy_from_slice(&b[8..16]);
        Some(Header {
            kind,
            slots_at_program: b[2],
            sealed: b[3] & FLAG_SEALED != 0,
            lpn,
            seq: u64::from_le_bytes(seq),
            gen: u32_at(16),
            erased_from: u32_at(20),
            segment_crcs: [u32_at(24), u32_at(28), u32_at(32), u32_at(36)],
            part,
            parts,
        })
    }
}

/// The format version of an OOB header this build no longer reads: `Some(1)` for a
/// whole version-1 header (44 bytes, no group fields, CRC over bytes 0..40).
pub fn older_format(oob: &[u8]) -> Option<u8> {
    let b = oob.get(..44)?;
    let crc_ok = crc32fast::hash(&b[..40]).to_le_bytes() == b[40..44];
    (b[1] == 1 && matches!(b[0], 0xD1 | 0x70) && crc_ok).then_some(1)
}

/// Syndrome of a single flipped bit of the header, per bit position, and the reverse
/// map. CRC-32 is affine, so the syndrome of several flips is the XOR of theirs.
fn syndromes() -> &'static (Vec<u32>, HashMap<u32, usize>) {
    static TABLE: OnceLock<(Vec<u32>, HashMap<u32, usize>)> = OnceLock::new();
    TABLE.get_or_init(|| {
        let zero = crc32fast::hash(&[0u8; CRC_AT]);
        let mut by_bit = Vec::with_capacity(HEADER_BITS);
        for bit in 0..HEADER_BITS {
            let s = if bit < CRC_AT * 8 {
                let mut e = [0u8; CRC_AT];
                e[bit / 8] = 1 << (bit % 8);
                crc32fast::hash(&e) ^ zero
            } else {
                1 << (bit - CRC_AT * 8)
            };
            by_bit.push(s);
        }
        let reverse = by_bit.iter().enumerate().map(|(bit, &s)| (s, bit)).collect();
        (by_bit, reverse)
    })
}

/// The one or two bit positions whose flips explain a header CRC `syndrome`.
fn repair_bits(syndrome: u32) -> Option<Vec<usize>> {
    let (by_bit, reverse) = syndromes();
    if let Some(&bit) = reverse.get(&syndrome) {
        return Some(vec![bit]);
    }
    by_bit.iter().enumerate().find_map(|(i, &s)| match reverse.get(&(syndrome ^ s)) {
        Some(&j) if j > i => Some(vec![i, j]),
        _ => None,
    })
}

/// Where the trailing run of 0xFF bytes of `data` begins.
///
/// Every page write computes it, and a page's erased tail (free space, an unused delta
/// area, an unfilled log page) is often kilobytes long: whole 32-byte blocks are
/// skipped with an AND over the block, which the compiler vectorises, before the last
/// bytes are looked at one by one.
pub fn erased_from(data: &[u8]) -> usize {
    const BLOCK: usize = 32;
    let mut end = data.len();
    for block in data.rchunks_exact(BLOCK) {
        if block.iter().fold(0xFF, |all, &b| all & b) != 0xFF {
            break;
        }
        end -= BLOCK;
    }
    data[..end].iter().rposition(|&b| b != 0xFF).map_or(0, |i| i + 1)
}

/// How many delta slots fit in an OOB area of `oob_bytes`.
pub fn slot_capacity(oob_bytes: usize) -> usize {
    oob_bytes.saturating_sub(HEADER_BYTES) / SLOT_BYTES
}

/// OOB offset of slot `index`.
pub fn slot_offset(index: usize) -> usize {
    HEADER_BYTES + index * SLOT_BYTES
}

/// CRCs of the four quarters of a page's base.
pub fn segment_crcs(base: &[u8]) -> [u32; SEGMENTS] {
    let mut crcs = [0u32; SEGMENTS];
    let quarter = base.len().div_ceil(SEGMENTS);
    for (i, crc) in crcs.iter_mut().enumerate() {
        let start = (i * quarter).min(base.len());
        let end = ((i + 1) * quarter).min(base.len());
        *crc = crc32fast::hash(&base[start..end]);
    }
    crcs
}

fn slot_crc(offset: u16, bytes: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(&offset.to_le_bytes());
    h.update(&(bytes.len() as u16).to_le_bytes());
    h.update(bytes);
    h.finalize()
}

/// The slot recording an append of `bytes` at `offset`.
pub fn encode_slot(offset: u16, bytes: &[u8]) -> [u8; SLOT_BYTES] {
    let mut s = [0u8; SLOT_BYTES];
    s[0..2].copy_from_slice(&offset.to_le_bytes());
    s[2..4].copy_from_slice(&(bytes.len() as u16).to_le_bytes());
    s[4..8].copy_from_slice(&slot_crc(offset, bytes).to_le_bytes());
    s
}

/// A slot whose append is intact in `data`: its byte range.
fn good_slot(slot: &[u8], data: &[u8]) -> Option<(usize, usize)> {
    let offset = u16::from_le_bytes([slot[0], slot[1]]);
    let len = u16::from_le_bytes([slot[2], slot[3]]) as usize;
    let stored = u32::from_le_bytes([slot[4], slot[5], slot[6], slot[7]]);
    let end = offset as usize + len;
    let bytes = data.get(offset as usize..end)?;
    (len > 0 && slot_crc(offset, bytes) == stored).then_some((offset as usize, end))
}

/// Which part of a damaged page failed its check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Damage {
    /// The header is unreadable (erased, torn, or more than two bits flipped).
    Header,
    /// A base quarter fails its CRC.
    Base,
    /// A slot copied in by the page's program fails its CRC.
    CopiedSlot,
    /// An append that is not the page's last one is damaged, or stray bytes lie
    /// before the end of the last good append.
    Append,
    /// The page's last append fails its check although it completed before the last
    /// durable point (no cut can have torn it).
    LastAppend,
}

impl Damage {
    pub fn name(self) -> &'static str {
        match self {
            Damage::Header => "the OOB header is unreadable",
            Damage::Base => "a base checksum fails",
            Damage::CopiedSlot => "a copied delta slot fails its checksum",
            Damage::Append => "an append before the page's last one is damaged",
            Damage::LastAppend => "the page's last append is damaged although it completed",
        }
    }
}

/// What a page check found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PageCheck {
    /// Whole. `slots` good delta slots; appends may continue at `append_floor`;
    /// `torn_tail` when the last append was torn.
    Valid { header: Header, slots: u8, append_floor: u32, torn_tail: bool },
    /// Not whole: torn by a cut during its program, or corrupted later (the caller
    /// tells which). `header` when it could still be read, naming the page's write.
    Damaged { header: Option<Header>, damage: Damage },
}

/// Checks a page as read from flash (see the module comment for the rules).
pub fn check_page(data: &[u8], oob: &[u8]) -> PageCheck {
    let Some(header) = Header::decode(oob) else {
        return PageCheck::Damaged { header: None, damage: Damage::Header };
    };
    let damaged = |damage| PageCheck::Damaged { header: Some(header), damage };
    let capacity = slot_capacity(oob.len());
    let copied = header.slots_at_program as usize;
    let erased_from = header.erased_from as usize;
    if copied > capacity || erased_from > data.len() {
        return PageCheck::Damaged { header: None, damage: Damage::Header };
    }
    if header.kind != PageKind::Data {
        // Trim records and corrupt markers carry everything in their header.
        return PageCheck::Valid { header, slots: 0, append_floor: 0, torn_tail: false };
    }
    if segment_crcs(&data[..erased_from]) != header.segment_crcs {
        return damaged(Damage::Base);
    }
    let mut ranges = Vec::with_capacity(capacity);
    let mut torn_tail = false;
    for index in 0..capacity {
        let slot = &oob[slot_offset(index)..slot_offset(index) + SLOT_BYTES];
        if index >= copied && slot.iter().all(|&b| b == 0xFF) {
            break;
        }
        match good_slot(slot, data) {
            Some(range) => ranges.push(range),
            None if index < copied => return damaged(Damage::CopiedSlot),
            None => {
                // A torn append seals the page: a written slot after it means this
                // append completed and was damaged later.
                let later = (index + 1..capacity)
                    .any(|i| oob[slot_offset(i)..slot_offset(i) + SLOT_BYTES].iter().any(|&b| b != 0xFF));
                if later {
                    return damaged(Damage::Append);
                }
                torn_tail = true;
                break;
            }
        }
    }
    let append_floor = ranges.last().map_or(erased_from, |&(_, e)| e.max(erased_from));
    // Tail bytes no good slot explains were landed by a torn append whose slot did not
    // land whole; a torn append starts at or after the previous one's end.
    let explained = |i: usize| ranges.iter().any(|&(s, e)| (s..e).contains(&i));
    let stray = (erased_from..data.len()).find(|&i| data[i] != 0xFF && !explained(i));
    match stray {
        Some(i) if i < append_floor => return damaged(Damage::Append),
        Some(_) => torn_tail = true,
        None => {}
    }
    PageCheck::Valid { header, slots: ranges.len() as u8, append_floor: append_floor as u32, torn_tail }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// The block-wise scan finds the byte-wise answer: data of any length with any
        /// erased tail, a non-0xFF byte anywhere (or none).
        #[test]
        fn erased_from_is_after_the_last_programmed_byte(
            len in 0usize..300,
            head in 0usize..300,
            seed in proptest::prelude::any::<u64>(),
        ) {
            let head = head.min(len);
            let mut data = vec![0xFF; len];
            for (i, b) in data[..head].iter_mut().enumerate() {
                *b = (seed >> (i % 64)) as u8 | (i as u8 & 1);
            }
            let naive = data.iter().rposition(|&b| b != 0xFF).map_or(0, |i| i + 1);
            proptest::prop_assert_eq!(erased_from(&data), naive);
        }
    }

    fn page_with(data: &[u8]) -> Vec<u8> {
        let mut oob = vec![0xFF; 128];
        oob[..HEADER_BYTES].copy_from_slice(&Header::new(PageKind::Data, 7, 42, data).encode());
        oob
    }

    #[test]
    fn header_round_trip() {
        let h = Header {
            sealed: true,
            gen: 3,
            slots_at_program: 2,
            ..Header::new(PageKind::Tombstone, 9, 1 << 40, &[1, 2, 3, 4])
        };
        assert_eq!(Header::decode(&h.encode()), Some(h));
        assert_eq!(Header::decode(&[0xFF; 64]), None);
    }

    #[test]
    fn whole_page_with_appends_is_valid() {
        let mut data = vec![0x11u8; 4096];
        data[4000..].fill(0xFF);
        let mut oob = page_with(&data);
        data[4000..4004].copy_from_slice(&[1, 2, 3, 4]);
        oob[slot_offset(0)..slot_offset(1)].copy_from_slice(&encode_slot(4000, &[1, 2, 3, 4]));
        match check_page(&data, &oob) {
            PageCheck::Valid { slots: 1, append_floor: 4004, torn_tail: false, header } => assert_eq!(header.lpn, 7),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn torn_base_is_invalid_and_torn_append_is_a_torn_tail() {
        let mut data = vec![0x11u8; 4096];
        data[4000..].fill(0xFF);
        let oob = page_with(&data);
        let mut torn = data.clone();
        torn[10] = 0x13; // a bit that should have been cleared did not land
        assert_eq!(
            check_page(&torn, &oob),
            PageCheck::Damaged { header: Some(Header::new(PageKind::Data, 7, 42, &data)), damage: Damage::Base }
        );

        let mut oob2 = oob.clone();
        let slot = encode_slot(4000, &[0, 0]);
        // The append's slot landed only partly, its data too.
        oob2[slot_offset(0)..slot_offset(0) + 4].copy_from_slice(&slot[..4]);
        data[4000] = 0x0F;
        assert!(matches!(check_page(&data, &oob2), PageCheck::Valid { slots: 0, torn_tail: true, .. }));
        // Some of the append's bytes landed, none of its slot: still a torn tail.
        assert!(matches!(check_page(&data, &oob), PageCheck::Valid { slots: 0, torn_tail: true, .. }));
    }

    proptest::proptest! {
        /// Fuzz pass over the OOB decoder and page check: arbitrary bytes never panic,
        /// and whatever is accepted has a header that re-encodes to the same bytes.
        #[test]
        fn fuzz_page_check_never_panics(data in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..600), oob in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..200)) {
            if let PageCheck::Valid { header, .. } = check_page(&data, &oob) {
                proptest::prop_assert_eq!(&header.encode()[..], &oob[..HEADER_BYTES]);
            }
        }
    }

    #[test]
    fn version_1_headers_are_recognised_not_read() {
        let mut v1 = [0u8; 44];
        v1[0] = 0xD1;
        v1[1] = 1;
        let crc = crc32fast::hash(&v1[..40]);
        v1[40..].copy_from_slice(&crc.to_le_bytes());
        assert_eq!(Header::decode(&[&v1[..], &[0xFF; 4]].concat()), None);
        assert_eq!(older_format(&v1), Some(1));
        assert_eq!(older_format(&Header::new(PageKind::Data, 1, 1, &[]).encode()), None);
    }

    #[test]
    fn up_to_two_header_bit_flips_are_repaired() {
        let h = Header { part: 2, parts: 3, ..Header::new(PageKind::Data, 11, 99, &[5; 64]) };
        let good = h.encode();
        for i in 0..HEADER_BITS {
            for j in [i, (i * 7 + 13) % HEADER_BITS] {
                let mut b = good;
                b[i / 8] ^= 1 << (i % 8);
                if j != i {
                    b[j / 8] ^= 1 << (j % 8);
                }
                assert_eq!(Header::decode(&b), Some(h), "bits {i} and {j}");
            }
        }
        let mut b = good;
        for bit in [3, 77, 200, 301] {
            b[bit / 8] ^= 1 << (bit % 8);
        }
        assert_ne!(Header::decode(&b), Some(h), "four flips are beyond repair");
    }

    #[test]
    fn a_damaged_append_before_the_last_is_corruption_not_a_torn_tail() {
        let mut data = vec![0x11u8; 4096];
        data[4000..].fill(0xFF);
        let mut oob = page_with(&data);
        data[4000..4004].copy_from_slice(&[1, 2, 3, 4]);
        oob[slot_offset(0)..slot_offset(1)].copy_from_slice(&encode_slot(4000, &[1, 2, 3, 4]));
        data[4010..4012].copy_from_slice(&[5, 6]);
        oob[slot_offset(1)..slot_offset(2)].copy_from_slice(&encode_slot(4010, &[5, 6]));
        assert!(matches!(check_page(&data, &oob), PageCheck::Valid { slots: 2, torn_tail: false, .. }));
        let mut flipped = data.clone();
        flipped[4001] ^= 0x10;
        assert!(matches!(check_page(&flipped, &oob), PageCheck::Damaged { damage: Damage::Append, .. }));
        // The same flip in the last append looks exactly like a torn last append.
        let mut flipped = data.clone();
        flipped[4011] ^= 0x10;
        assert!(matches!(check_page(&flipped, &oob), PageCheck::Valid { slots: 1, torn_tail: true, .. }));
        // A stray byte between appends cannot come from a torn append.
        let mut stray = data.clone();
        stray[4007] = 0;
        assert!(matches!(check_page(&stray, &oob), PageCheck::Damaged { damage: Damage::Append, .. }));
    }

    #[test]
    fn copied_slots_must_verify() {
        let data = vec![0x22u8; 2048];
        let mut h = Header::new(PageKind::Data, 1, 1, &data);
        h.slots_at_program = 1;
        let mut oob = vec![0xFF; 64];
        oob[..HEADER_BYTES].copy_from_slice(&h.encode());
        assert!(
            matches!(check_page(&data, &oob), PageCheck::Damaged { damage: Damage::CopiedSlot, .. }),
            "copied slot missing"
        );
        oob[slot_offset(0)..slot_offset(1)].copy_from_slice(&encode_slot(0, &data[..4]));
        assert!(matches!(check_page(&data, &oob), PageCheck::Valid { slots: 1, .. }));
    }
}
