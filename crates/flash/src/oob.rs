//! The OOB format of a region page: who the page belongs to, how to tell whether it is
//! whole, and which appends it has taken.
//!
//! ```text
//! offset size field
//!  0      1   kind: 0xD1 data page, 0x70 tombstone (trim record); 0xFF = never written
//!  1      1   format version (1)
//!  2      1   slots_at_program: delta slots copied in by the program that wrote the page
//!  3      1   flags: bit 0 = sealed (takes no more appends)
//!  4      4   lpn
//!  8      8   seq: region write sequence number of the logical write
//! 16      4   gen: migration generation (GC copies keep seq and add 1 here)
//! 20      4   erased_from: where the data's trailing run of 0xFF bytes began when first
//!             programmed; appends go there, at or after it
//! 24     16   crc32 of each quarter of the base, data bytes [0, erased_from)
//! 40      4   crc32 of bytes 0..40
//! 44      8·k delta slots: u16 offset, u16 len, u32 crc32(offset ‖ len ‖ appended bytes)
//! ```
//!
//! Why it detects torn pages: a torn program lands only some of the bits it meant to
//! clear. A torn first program or copy fails the header CRC, a base CRC or a copied
//! slot, so the page is invalid. A torn append (`write_delta`, one program of its bytes
//! and its slot) leaves the base intact; its slot fails its CRC, or never landed at all
//! while some of its bytes did — either way the tail holds bytes no good slot explains.
//! The page stays valid with a *torn tail*: the base and all earlier appends are whole,
//! the torn bytes are confined to the tail, and the caller (the engine's delta-record
//! checksum) ignores them.

/// Bytes before the first delta slot.
pub const HEADER_BYTES: usize = 44;
/// Bytes of one delta slot.
pub const SLOT_BYTES: usize = 8;
const SEGMENTS: usize = 4;
const VERSION: u8 = 1;
const FLAG_SEALED: u8 = 1;

/// What a page holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PageKind {
    Data,
    Tombstone,
}

impl PageKind {
    fn byte(self) -> u8 {
        match self {
            PageKind::Data => 0xD1,
            PageKind::Tombstone => 0x70,
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
}

impl Header {
    /// Header of a freshly written page with `data` as its content.
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
        }
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
        let crc = crc32fast::hash(&b[..40]);
        b[40..44].copy_from_slice(&crc.to_le_bytes());
        b
    }

    /// Decodes and checks a header; `None` if erased, torn or not ours.
    pub fn decode(oob: &[u8]) -> Option<Header> {
        let b = oob.get(..HEADER_BYTES)?;
        let u32_at = |o: usize| u32::from_le_bytes(b[o..o + 4].try_into().expect("4 bytes"));
        if crc32fast::hash(&b[..40]) != u32_at(40) || b[1] != VERSION || b[3] & !FLAG_SEALED != 0 {
            return None;
        }
        let kind = match b[0] {
            0xD1 => PageKind::Data,
            0x70 => PageKind::Tombstone,
            _ => return None,
        };
        Some(Header {
            kind,
            slots_at_program: b[2],
            sealed: b[3] & FLAG_SEALED != 0,
            lpn: u32_at(4),
            seq: u64::from_le_bytes(b[8..16].try_into().expect("8 bytes")),
            gen: u32_at(16),
            erased_from: u32_at(20),
            segment_crcs: [u32_at(24), u32_at(28), u32_at(32), u32_at(36)],
        })
    }
}

/// Where the trailing run of 0xFF bytes of `data` begins.
pub fn erased_from(data: &[u8]) -> usize {
    data.iter().rposition(|&b| b != 0xFF).map_or(0, |i| i + 1)
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
    let stored = u32::from_le_bytes(slot[4..8].try_into().expect("4 bytes"));
    let end = offset as usize + len;
    let bytes = data.get(offset as usize..end)?;
    (len > 0 && slot_crc(offset, bytes) == stored).then_some((offset as usize, end))
}

/// What a page check found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PageCheck {
    /// Whole. `slots` good delta slots; appends may continue at `append_floor`;
    /// `torn_tail` when the last append was torn.
    Valid { header: Header, slots: u8, append_floor: u32, torn_tail: bool },
    /// Erased, torn by a cut during its program, or not a region page.
    Invalid,
}

/// Checks a page as read from flash (see the module comment for the rules).
pub fn check_page(data: &[u8], oob: &[u8]) -> PageCheck {
    let Some(header) = Header::decode(oob) else {
        return PageCheck::Invalid;
    };
    let capacity = slot_capacity(oob.len());
    let copied = header.slots_at_program as usize;
    let erased_from = header.erased_from as usize;
    if copied > capacity || erased_from > data.len() {
        return PageCheck::Invalid;
    }
    if header.kind == PageKind::Data && segment_crcs(&data[..erased_from]) != header.segment_crcs {
        return PageCheck::Invalid;
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
            None if index < copied => return PageCheck::Invalid,
            None => {
                torn_tail = true;
                break;
            }
        }
    }
    // Tail bytes no good slot explains were landed by a torn append whose slot did not.
    let explained = |i: usize| ranges.iter().any(|&(s, e)| (s..e).contains(&i));
    if (erased_from..data.len()).any(|i| data[i] != 0xFF && !explained(i)) {
        torn_tail = true;
    }
    let append_floor = ranges.last().map_or(erased_from, |&(_, e)| e.max(erased_from)) as u32;
    PageCheck::Valid { header, slots: ranges.len() as u8, append_floor, torn_tail }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(check_page(&torn, &oob), PageCheck::Invalid);

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
    fn copied_slots_must_verify() {
        let data = vec![0x22u8; 2048];
        let mut h = Header::new(PageKind::Data, 1, 1, &data);
        h.slots_at_program = 1;
        let mut oob = vec![0xFF; 64];
        oob[..HEADER_BYTES].copy_from_slice(&h.encode());
        assert_eq!(check_page(&data, &oob), PageCheck::Invalid, "copied slot missing");
        oob[slot_offset(0)..slot_offset(1)].copy_from_slice(&encode_slot(0, &data[..4]));
        assert!(matches!(check_page(&data, &oob), PageCheck::Valid { slots: 1, .. }));
    }
}
