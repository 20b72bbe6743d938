//! On-flash formats of the IPL store: the OOB tag of every programmed page and the
//! log sector, and the physiological log records a sector carries.
//!
//! OOB tag (first [`TAG_BYTES`] bytes of a page's OOB, written with the page's first
//! program):
//!
//! ```text
//! offset size field
//!  0      4   magic "IPL1"
//!  4      1   kind: 1 data page (host write), 2 data page (block merge), 3 log page
//!  5      3   zero
//!  8      4   logical unit
//! 12      4   unit generation (a merge writes generation + 1)
//! 16      4   logical page within the unit (data pages; 0 for log pages)
//! 20      8   group sequence number (one per host write / merge)
//! 28      2   index in the group
//! 30      2   pages in the group
//! 32      4   crc32 of the page data (data pages; 0 for log pages)
//! 36      4   crc32 of bytes 0..36
//! ```
//!
//! Log sector (`sector_bytes` at `slot × sector_bytes` of a log page, one partial
//! program each):
//!
//! ```text
//!  0      4   magic "IPLS"
//!  4      4   DB page within the unit
//!  8      8   group sequence number (one per flush of a page's log)
//! 16      1   index in the group
//! 17      1   sectors in the group
//! 18      2   payload bytes
//! 20      4   crc32 of bytes 0..20 and the payload
//! 24      …   records: kind u8 (0 bytes, 1 trim), offset u32 in the DB page, len u16, bytes
//! ```
//!
//! A trim record names the flash page it forgets by `offset = part × page bytes`.
//! Nothing here panics on bad input: decoding returns `None` or an error string.

/// Bytes of the OOB tag.
pub const TAG_BYTES: usize = 40;
/// Bytes of a log sector's header.
pub const SECTOR_HEADER: usize = 24;
/// Bytes of a record's header.
pub const RECORD_HEADER: usize = 7;

const TAG_MAGIC: &[u8; 4] = b"IPL1";
const SECTOR_MAGIC: &[u8; 4] = b"IPLS";

/// What a programmed page holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PageKind {
    Data,
    Merged,
    Log,
}

impl PageKind {
    fn code(self) -> u8 {
        match self {
            PageKind::Data => 1,
            PageKind::Merged => 2,
            PageKind::Log => 3,
        }
    }
}

/// A page's OOB tag.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tag {
    pub kind: PageKind,
    pub lunit: u32,
    pub generation: u32,
    pub page: u32,
    pub seq: u64,
    pub index: u16,
    pub count: u16,
    pub data_crc: u32,
}

fn le(bytes: &[u8], at: usize, n: usize) -> u64 {
    bytes[at..at + n].iter().rev().fold(0u64, |v, &b| v << 8 | b as u64)
}

impl Tag {
    pub fn encode(&self) -> [u8; TAG_BYTES] {
        let mut t = [0u8; TAG_BYTES];
        t[0..4].copy_from_slice(TAG_MAGIC);
        t[4] = self.kind.code();
        t[8..12].copy_from_slice(&self.lunit.to_le_bytes());
        t[12..16].copy_from_slice(&self.generation.to_le_bytes());
        t[16..20].copy_from_slice(&self.page.to_le_bytes());
        t[20..28].copy_from_slice(&self.seq.to_le_bytes());
        t[28..30].copy_from_slice(&self.index.to_le_bytes());
        t[30..32].copy_from_slice(&self.count.to_le_bytes());
        t[32..36].copy_from_slice(&self.data_crc.to_le_bytes());
        let crc = crc32fast::hash(&t[..36]);
        t[36..40].copy_from_slice(&crc.to_le_bytes());
        t
    }

    /// The tag in `oob`, or why there is none.
    pub fn decode(oob: &[u8]) -> Result<Tag, String> {
        let t = oob.get(..TAG_BYTES).ok_or("the OOB area is shorter than the IPL tag")?;
        if &t[0..4] != TAG_MAGIC {
            return Err("no IPL tag in the OOB".into());
        }
        if crc32fast::hash(&t[..36]) != le(t, 36, 4) as u32 {
            return Err("OOB tag checksum mismatch".into());
        }
        let kind = match t[4] {
            1 => PageKind::Data,
            2 => PageKind::Merged,
            3 => PageKind::Log,
            k => return Err(format!("unknown page kind {k} in the OOB tag")),
        };
        Ok(Tag {
            kind,
            lunit: le(t, 8, 4) as u32,
            generation: le(t, 12, 4) as u32,
            page: le(t, 16, 4) as u32,
            seq: le(t, 20, 8),
            index: le(t, 28, 2) as u16,
            count: le(t, 30, 2) as u16,
            data_crc: le(t, 32, 4) as u32,
        })
    }
}

/// One physiological log record of a DB page.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Record {
    /// Bytes at `offset` of the DB page.
    Bytes { offset: u32, bytes: Vec<u8> },
    /// Flash page `part` of the DB page is forgotten.
    Trim { part: u32 },
}

impl Record {
    pub fn encoded_len(&self) -> usize {
        RECORD_HEADER
            + match self {
                Record::Bytes { bytes, .. } => bytes.len(),
                Record::Trim { .. } => 0,
            }
    }

    /// Parts (flash pages of the DB page) this record writes bytes to, as a bit mask.
    pub fn parts_mask(&self, flash_page_bytes: usize) -> u64 {
        match self {
            Record::Bytes { offset, bytes } if !bytes.is_empty() => {
                let first = *offset as usize / flash_page_bytes;
                let last = (*offset as usize + bytes.len() - 1) / flash_page_bytes;
                (first..=last).fold(0u64, |m, p| m | 1u64 << p.min(63))
            }
            _ => 0,
        }
    }

    /// Applies a bytes record to flash page `part` held in `page` (clipped to it).
    pub fn apply_to_part(&self, part: u32, page: &mut [u8]) {
        if let Record::Bytes { offset, bytes } = self {
            let start = part as usize * page.len();
            let (from, to) = (*offset as usize, *offset as usize + bytes.len());
            let (lo, hi) = (from.max(start), to.min(start + page.len()));
            if lo < hi {
                page[lo - start..hi - start].copy_from_slice(&bytes[lo - from..hi - from]);
            }
        }
    }
}

/// A decoded log sector.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sector {
    pub db_page: u32,
    pub seq: u64,
    pub index: u8,
    pub count: u8,
    pub records: Vec<Record>,
}

/// Splits `records` into sector payloads of at most `payload` bytes each; a bytes
/// record too long for the space left is cut into pieces.
pub fn pack(records: &[Record], payload: usize) -> Vec<Vec<Record>> {
    let mut out: Vec<Vec<Record>> = Vec::new();
    let mut cur: Vec<Record> = Vec::new();
    let mut used = 0;
    for r in records {
        match r {
            Record::Trim { .. } => {
                if used + RECORD_HEADER > payload {
                    out.push(std::mem::take(&mut cur));
                    used = 0;
                }
                used += RECORD_HEADER;
                cur.push(r.clone());
            }
            Record::Bytes { offset, bytes } => {
                let mut at = 0;
                while at < bytes.len() {
                    if used + RECORD_HEADER >= payload {
                        out.push(std::mem::take(&mut cur));
                        used = 0;
                    }
                    let take = (payload - used - RECORD_HEADER).min(bytes.len() - at);
                    cur.push(Record::Bytes { offset: offset + at as u32, bytes: bytes[at..at + take].to_vec() });
                    used += RECORD_HEADER + take;
                    at += take;
                }
            }
        }
    }
    out.push(cur);
    out.retain(|s| !s.is_empty());
    out
}

impl Sector {
    /// The sector's bytes, `sector_bytes` long (0xFF after the payload).
    pub fn encode(&self, sector_bytes: usize) -> Vec<u8> {
        let mut s = vec![0xFF; sector_bytes];
        let mut payload = Vec::new();
        for r in &self.records {
            match r {
                Record::Bytes { offset, bytes } => {
                    payload.push(0);
                    payload.extend_from_slice(&offset.to_le_bytes());
                    payload.extend_from_slice(&(bytes.len() as u16).to_le_bytes());
                    payload.extend_from_slice(bytes);
                }
                Record::Trim { part } => {
                    payload.push(1);
                    payload.extend_from_slice(&part.to_le_bytes());
                    payload.extend_from_slice(&0u16.to_le_bytes());
                }
            }
        }
        s[0..4].copy_from_slice(SECTOR_MAGIC);
        s[4..8].copy_from_slice(&self.db_page.to_le_bytes());
        s[8..16].copy_from_slice(&self.seq.to_le_bytes());
        s[16] = self.index;
        s[17] = self.count;
        s[18..20].copy_from_slice(&(payload.len() as u16).to_le_bytes());
        let mut h = crc32fast::Hasher::new();
        h.update(&s[..20]);
        h.update(&payload);
        s[20..24].copy_from_slice(&h.finalize().to_le_bytes());
        s[SECTOR_HEADER..SECTOR_HEADER + payload.len()].copy_from_slice(&payload);
        s
    }

    /// Decodes a sector: `Ok(None)` if it is erased (all 0xFF), `Err` if damaged.
    pub fn decode(s: &[u8]) -> Result<Option<Sector>, String> {
        if s.iter().all(|&b| b == 0xFF) {
            return Ok(None);
        }
        if s.len() < SECTOR_HEADER || &s[0..4] != SECTOR_MAGIC {
            return Err("log sector without its magic".into());
        }
        let len = le(s, 18, 2) as usize;
        let payload = s.get(SECTOR_HEADER..SECTOR_HEADER + len).ok_or("log sector payload overruns the sector")?;
        let mut h = crc32fast::Hasher::new();
        h.update(&s[..20]);
        h.update(payload);
        if h.finalize() != le(s, 20, 4) as u32 {
            return Err("log sector checksum mismatch".into());
        }
        let mut records = Vec::new();
        let mut at = 0;
        while at < payload.len() {
            let head = payload.get(at..at + RECORD_HEADER).ok_or("log record header overruns the payload")?;
            let (kind, offset, n) = (head[0], le(head, 1, 4) as u32, le(head, 5, 2) as usize);
            at += RECORD_HEADER;
            match kind {
                0 => {
                    let bytes = payload.get(at..at + n).ok_or("log record overruns the payload")?;
                    records.push(Record::Bytes { offset, bytes: bytes.to_vec() });
                    at += n;
                }
                1 => records.push(Record::Trim { part: offset }),
                k => return Err(format!("unknown log record kind {k}")),
            }
        }
        Ok(Some(Sector { db_page: le(s, 4, 4) as u32, seq: le(s, 8, 8), index: s[16], count: s[17], records }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tag_round_trips_and_detects_damage() {
        let tag = Tag {
            kind: PageKind::Merged,
            lunit: 7,
            generation: 3,
            page: 12,
            seq: 99,
            index: 2,
            count: 5,
            data_crc: 0xDEAD,
        };
        let mut oob = tag.encode().to_vec();
        assert_eq!(Tag::decode(&oob), Ok(tag));
        oob[9] ^= 1;
        assert!(Tag::decode(&oob).is_err());
        assert!(Tag::decode(&[0xFF; 64]).is_err());
    }

    #[test]
    fn sectors_round_trip_and_long_records_are_split() {
        let records = vec![
            Record::Bytes { offset: 100, bytes: vec![1; 300] },
            Record::Trim { part: 2 },
            Record::Bytes { offset: 5000, bytes: (0..255).collect() },
        ];
        let packed = pack(&records, 512 - SECTOR_HEADER);
        assert_eq!(packed.len(), 2);
        let total: usize = packed.iter().flatten().map(|r| r.encoded_len() - RECORD_HEADER).sum();
        assert_eq!(total, 555);
        let sector = Sector { db_page: 3, seq: 8, index: 1, count: 2, records: packed[1].clone() };
        let bytes = sector.encode(512);
        assert_eq!(Sector::decode(&bytes), Ok(Some(sector)));
        let mut torn = bytes.clone();
        torn[40] &= 0x0F;
        assert!(Sector::decode(&torn).is_err());
        assert_eq!(Sector::decode(&[0xFF; 512]), Ok(None));
    }

    #[test]
    fn records_apply_clipped_to_their_part() {
        let r = Record::Bytes { offset: 6, bytes: vec![9; 4] };
        assert_eq!(r.parts_mask(8), 0b11);
        let mut part1 = [0u8; 8];
        r.apply_to_part(1, &mut part1);
        assert_eq!(part1, [9, 9, 0, 0, 0, 0, 0, 0]);
    }

    proptest::proptest! {
        /// Arbitrary OOB and sector bytes, and valid sectors with bytes flipped, decode
        /// to a value or an error, never a panic.
        #[test]
        fn fuzz_ipl_tag_and_sector_decoders_never_panic(
            bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..1100),
            flips in proptest::collection::vec((0usize..512, proptest::prelude::any::<u8>()), 0..6),
        ) {
            let _ = Tag::decode(&bytes);
            let _ = Sector::decode(&bytes);
            let records = vec![Record::Bytes { offset: 40, bytes: bytes.iter().copied().take(300).collect() }];
            let mut sector = Sector { db_page: 1, seq: 2, index: 0, count: 1, records }.encode(512);
            for (at, mask) in flips {
                sector[at] ^= mask;
            }
            let _ = Sector::decode(&sector);
        }
    }
}
