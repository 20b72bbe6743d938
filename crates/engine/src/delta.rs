//! In-Place Appends: the [N×M] scheme, delta-records, change detection and the
//! eviction rule (IPA paper §6).
//!
//! A page reserves a delta-record area of N × (1 + 3M + 3V) bytes at its end. Each
//! record is a control byte, M ⟨value, offset⟩ pairs for changed body bytes and V pairs
//! for changed header/slot-directory bytes:
//!
//! ```text
//! offset      size  field
//! 0           1     ctrl: 0xFF = no record (erased); else the number of body pairs used (≤ M)
//! 1 + 3i      3     body pair i < M:  new value (1 byte), offset (u16 LE); unused = FF FF FF
//! 1 + 3M + 3j 3     meta pair j < V:  new value, offset; used pairs first, unused = FF FF FF
//! ```
//!
//! With V = 0 a record keeps no pairs apart for metadata: its M pairs hold changed bytes
//! of the whole page, body first, then header and slot directory, and the control byte
//! counts them all. This is the IPA paper's LinkBench scheme, whose M counts "updated
//! bytes in whole page" (Table 3) and whose space overhead is N·(1 + 3M) bytes (Tables 3
//! and 5: [1×100] 3.67% of an 8 KiB page).
//!
//! A record is whole when the flash OOB slot that covers its append checks out (the
//! flash layer's per-append CRC, `RegionRead::whole_bytes`); a torn append is ignored.
//! The policy ([`choose_eviction`]) is a pure function of the scheme, the page's state
//! on flash and the change counts, so it is tested without I/O.

use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::fmt;

const ERASED: u8 = 0xFF;
const NO_OFFSET: u16 = 0xFFFF;
/// Largest M and V: the control byte holds the body pair count and must not read 0xFF.
pub const MAX_PAIRS: u8 = 125;
/// Largest N: every append of a page costs an OOB slot and a program (NOP).
pub const MAX_RECORDS: u8 = 16;

/// The [N×M] scheme with V metadata pairs per record. [0×0] is no IPA.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IpaScheme {
    pub n: u8,
    pub m: u8,
    pub v: u8,
}

impl IpaScheme {
    pub const NONE: IpaScheme = IpaScheme { n: 0, m: 0, v: 0 };
    /// V used when a scheme names none: the paper's bound for Shore-MT under OLTP (§6.1).
    pub const DEFAULT_V: u8 = 12;

    pub fn new(n: u8, m: u8, v: u8) -> std::result::Result<Self, String> {
        if n > MAX_RECORDS {
            return Err(format!("N = {n} is above the limit of {MAX_RECORDS} delta-records per page"));
        }
        if m > MAX_PAIRS || v > MAX_PAIRS {
            return Err(format!("M and V must be at most {MAX_PAIRS} (got M = {m}, V = {v})"));
        }
        if (n == 0) != (m == 0) {
            return Err(format!("[{n}×{m}]: N and M are both 0 (no IPA) or both above 0"));
        }
        Ok(IpaScheme { n, m, v: if n == 0 { 0 } else { v } })
    }

    pub fn enabled(self) -> bool {
        self.n > 0
    }

    /// Whether metadata bytes take the record's M pairs (V = 0: M counts the changed
    /// bytes of the whole page) rather than V pairs of their own.
    pub fn gross(self) -> bool {
        self.v == 0
    }

    /// Bytes of one delta-record: 1 + 3M + 3V.
    pub fn record_bytes(self) -> usize {
        1 + 3 * self.m as usize + 3 * self.v as usize
    }

    /// Bytes reserved on every page: N × (1 + 3M + 3V).
    pub fn area_bytes(self) -> usize {
        if self.enabled() {
            self.n as usize * self.record_bytes()
        } else {
            0
        }
    }
}

impl fmt::Display for IpaScheme {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}x{}", self.n, self.m)
    }
}

/// Parses `NxM` (also `N×M` and `N*M`), with V defaulting to [`IpaScheme::DEFAULT_V`].
impl std::str::FromStr for IpaScheme {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        let bad = || format!("`{s}` is not an IPA scheme NxM (e.g. 2x4, or 0x0 for no IPA)");
        let lower = s.to_ascii_lowercase();
        let (n, m) = lower.split_once(['x', '×', '*']).ok_or_else(bad)?;
        let n: u8 = n.trim().parse().map_err(|_| bad())?;
        let m: u8 = m.trim().parse().map_err(|_| bad())?;
        IpaScheme::new(n, m, IpaScheme::DEFAULT_V)
    }
}

/// Offsets of the bytes that differ between the page as on flash and in the buffer.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Changes {
    /// In the tuple area.
    pub body: Vec<u16>,
    /// In the page header or the slot directory.
    pub meta: Vec<u16>,
}

impl Changes {
    pub fn clear(&mut self) {
        self.body.clear();
        self.meta.clear();
    }
    pub fn bytes(&self) -> usize {
        self.body.len() + self.meta.len()
    }
}

/// The XOR of the 8-byte words of `a` and `b` at `at`, little-endian: byte `k` of the
/// word is bits 8k..8k+8, so zero means the 8 bytes agree and the set bytes are the
/// differing ones.
#[inline]
pub(crate) fn xor_word(a: &[u8], b: &[u8], at: usize) -> u64 {
    let word = |s: &[u8]| u64::from_le_bytes(s[at..at + 8].try_into().expect("8 bytes"));
    word(a) ^ word(b)
}

/// The first offset at or after `from` where `a` and `b` differ (over their common
/// length), skipping equal 64-byte blocks first.
pub fn first_difference(a: &[u8], b: &[u8], mut from: usize) -> Option<usize> {
    // Pages mostly agree: skip equal 64-byte blocks (eight word compares the compiler
    // vectorises, with no call per block), then find the differing byte in the block.
    // The blocks are fixed-size arrays, so the word loads carry no bounds checks and
    // compile to a few vector instructions per block.
    const BLOCK: usize = 64;
    let len = a.len().min(b.len());
    if from < len {
        let blocks = a[from..len].chunks_exact(BLOCK).zip(b[from..len].chunks_exact(BLOCK));
        for (x, y) in blocks {
            let (x, y): (&[u8; BLOCK], &[u8; BLOCK]) = match (x.try_into(), y.try_into()) {
                (Ok(x), Ok(y)) => (x, y),
                _ => break,
            };
            let words = |s: &[u8; BLOCK], k: usize| {
                u64::from_le_bytes([s[k], s[k + 1], s[k + 2], s[k + 3], s[k + 4], s[k + 5], s[k + 6], s[k + 7]])
            };
            if (0..BLOCK).step_by(8).fold(0, |acc, k| acc | (words(x, k) ^ words(y, k))) != 0 {
                break;
            }
            from += BLOCK;
        }
    }
    (from..len).find(|&i| a[i] != b[i])
}

/// Compares `base` and `current` over their common length. Offsets below `header_end`
/// or at or after `slots_from` are metadata; the rest is body.
pub fn diff(base: &[u8], current: &[u8], header_end: usize, slots_from: usize, out: &mut Changes) {
    let len = base.len().min(current.len());
    diff_in(base, current, header_end, slots_from, &[(0, len)], out);
}

/// [`diff`] over the byte ranges `[from, to)` of `ranges` only (sorted, disjoint,
/// clipped to the common length): the same changes when every difference lies in
/// them, without reading the rest of the pages.
pub fn diff_in(
    base: &[u8],
    current: &[u8],
    header_end: usize,
    slots_from: usize,
    ranges: &[(usize, usize)],
    out: &mut Changes,
) {
    out.clear();
    for (from, to) in clipped(ranges, base, current) {
        diff_range(&base[from..to], &current[from..to], from, header_end, slots_from, out);
    }
}

/// How many bytes differ where, over `ranges` (what [`diff_in`] would list, without
/// listing it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ChangeCounts {
    /// Below `header_end`.
    pub header: usize,
    /// In the tuple area (between `header_end` and `slots_from`).
    pub body: usize,
    /// At or after `slots_from` (and `header_end`): the slot directory.
    pub slots: usize,
}

impl ChangeCounts {
    /// [`Changes::meta`]'s length: the header's and the slot directory's.
    pub fn meta(&self) -> usize {
        self.header + self.slots
    }
    /// [`Changes::bytes`].
    pub fn bytes(&self) -> usize {
        self.header + self.body + self.slots
    }
}

/// [`diff_in`]'s counts without its offsets: all the eviction rule and the counters
/// need, so only a write that goes as delta-records or log records lists the offsets.
/// Counts eight bytes at a time, where the listing takes them one by one.
pub fn count_in(
    base: &[u8],
    current: &[u8],
    header_end: usize,
    slots_from: usize,
    ranges: &[(usize, usize)],
) -> ChangeCounts {
    let slots_from = slots_from.max(header_end);
    let count =
        |from: usize, to: usize| if from < to { differing_bytes(&base[from..to], &current[from..to]) } else { 0 };
    let mut counts = ChangeCounts::default();
    for (from, to) in clipped(ranges, base, current) {
        counts.header += count(from, to.min(header_end));
        counts.body += count(from.max(header_end), to.min(slots_from));
        counts.slots += count(from.max(slots_from), to);
    }
    counts
}

/// How many bytes of `a` and `b` (of equal length) differ.
fn differing_bytes(a: &[u8], b: &[u8]) -> usize {
    /// A byte's low seven bits: adding them to 0x7F sets its top bit iff they are not 0.
    const LOW7: u64 = 0x7F7F_7F7F_7F7F_7F7F;
    let (words_a, words_b) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail = words_a.remainder().iter().zip(words_b.remainder()).filter(|(x, y)| x != y).count();
    let words = words_a.zip(words_b).map(|(x, y)| {
        let word = |s: &[u8]| u64::from_le_bytes(s.try_into().expect("8 bytes"));
        let x = word(x) ^ word(y);
        // The top bit of each byte that is not 0.
        ((((x & LOW7) + LOW7) | x) & !LOW7).count_ones() as usize
    });
    words.sum::<usize>() + tail
}

/// The non-empty parts of `ranges` within both pages.
fn clipped<'a>(ranges: &'a [(usize, usize)], a: &[u8], b: &[u8]) -> impl Iterator<Item = (usize, usize)> + 'a {
    let len = a.len().min(b.len());
    ranges.iter().map(move |&(from, to)| (from, to.min(len))).filter(|(from, to)| from < to)
}

/// Appends the differing offsets of `base` against `current`, offset by `origin`.
fn diff_range(base: &[u8], current: &[u8], origin: usize, header_end: usize, slots_from: usize, out: &mut Changes) {
    let mut record = |i: usize| {
        let i = origin + i;
        if i < header_end || i >= slots_from {
            out.meta.push(i as u16);
        } else {
            out.body.push(i as u16);
        }
    };
    // Skip to the next difference, then take the differing bytes of each 8-byte word
    // from its XOR until a word is equal again. `at` stays a multiple of 8.
    let len = base.len();
    let mut at = 0;
    while let Some(i) = first_difference(base, current, at) {
        at = i - i % 8;
        while at + 8 <= len {
            let mut x = xor_word(base, current, at);
            if x == 0 {
                break;
            }
            while x != 0 {
                let byte = x.trailing_zeros() as usize / 8;
                record(at + byte);
                x &= !(0xFF << (8 * byte));
            }
            at += 8;
        }
        if at + 8 > len {
            (at..len).filter(|&j| base[j] != current[j]).for_each(&mut record);
            return;
        }
    }
}

/// What flash holds for a page, as far as appending goes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FlashState {
    /// The page has been written before (a copy to append to exists).
    pub on_flash: bool,
    /// Delta-records already on that copy (NE).
    pub records: u8,
    /// Its last append was torn; it takes no more.
    pub sealed: bool,
}

/// Why a dirty page is written out-of-place.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OutOfPlaceReason {
    /// The object's scheme is [0×0].
    NoIpa,
    /// IPA is not applicable to a page never written (§6.1).
    NeverWritten,
    /// The flash copy's last append was torn.
    Sealed,
    /// More changes than the remaining records can hold: U > (N − NE)·M, or the
    /// metadata changes exceed (N − NE)·V.
    Overflow,
    /// The flash layer refused the append (page type, NOP, OOB slots).
    Refused,
    /// The page adopts its object's new scheme (`ALTER … SET IPA`): a new layout.
    Relayout,
}

/// How an evicted page goes to flash.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Eviction {
    /// Nothing changed since the page was last read or written.
    Clean,
    OutOfPlace(OutOfPlaceReason),
    /// Append this many new delta-records with `write_delta`.
    Append {
        records: usize,
    },
    /// The changes went to an In-Page Logging device as log records (`write_log`).
    Logged,
}

/// The IPA eviction rule (§6.2): a page that was never written, or whose changes do not
/// fit the remaining delta-records, goes out-of-place; otherwise ⌈U/M⌉ records (at
/// least enough for the metadata pairs too) are appended. With V = 0 the metadata bytes
/// count towards U ([`IpaScheme::gross`]).
pub fn choose_eviction(scheme: IpaScheme, state: FlashState, body_bytes: usize, meta_bytes: usize) -> Eviction {
    use OutOfPlaceReason::*;
    if body_bytes + meta_bytes == 0 && state.on_flash {
        return Eviction::Clean;
    }
    if !scheme.enabled() {
        return Eviction::OutOfPlace(NoIpa);
    }
    if !state.on_flash {
        return Eviction::OutOfPlace(NeverWritten);
    }
    if state.sealed {
        return Eviction::OutOfPlace(Sealed);
    }
    let free = scheme.n.saturating_sub(state.records) as usize;
    let (body_bytes, meta_bytes) = if scheme.gross() { (body_bytes + meta_bytes, 0) } else { (body_bytes, meta_bytes) };
    let for_body = body_bytes.div_ceil(scheme.m as usize);
    let for_meta = match scheme.v {
        0 => 0,
        v => meta_bytes.div_ceil(v as usize),
    };
    let records = for_body.max(for_meta).max(1);
    if records > free {
        Eviction::OutOfPlace(Overflow)
    } else {
        Eviction::Append { records }
    }
}

/// Encodes `records` delta-records holding `changes` with the values from `page`.
/// The caller has checked the counts with [`choose_eviction`].
pub fn encode_records(scheme: IpaScheme, changes: &Changes, page: &[u8], records: usize, out: &mut Vec<u8>) {
    let (m, v) = (scheme.m as usize, scheme.v as usize);
    out.clear();
    out.resize(records * scheme.record_bytes(), ERASED);
    // V = 0: the metadata offsets follow the body's in the M pairs.
    let gross_meta: &[u16] = if scheme.gross() { &changes.meta } else { &[] };
    for (r, record) in out.chunks_exact_mut(scheme.record_bytes()).enumerate() {
        let body = changes.body.iter().chain(gross_meta).skip(r * m).take(m);
        let meta = changes.meta.iter().skip(r * v).take(v);
        record[0] = body.clone().count() as u8;
        for (i, &off) in body.enumerate() {
            put_pair(&mut record[1 + 3 * i..], page[off as usize], off);
        }
        for (j, &off) in meta.enumerate() {
            put_pair(&mut record[1 + 3 * m + 3 * j..], page[off as usize], off);
        }
    }
}

fn put_pair(at: &mut [u8], value: u8, offset: u16) {
    at[0] = value;
    at[1..3].copy_from_slice(&offset.to_le_bytes());
}

/// One decoded delta-record: its ⟨value, offset⟩ pairs, body first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    pub pairs: Vec<(u8, u16)>,
}

/// Decodes the record in `bytes` (exactly `record_bytes` long). `None` when the slot is
/// erased. Offsets must lie below `limit` (the start of the delta area).
pub fn decode_record(scheme: IpaScheme, bytes: &[u8], limit: usize) -> Result<Option<Record>> {
    let corrupt = |what: String| Err(Error::Corrupt(format!("delta-record: {what}")));
    if bytes.len() != scheme.record_bytes() {
        return corrupt(format!("{} bytes, the scheme's records have {}", bytes.len(), scheme.record_bytes()));
    }
    if bytes[0] == ERASED {
        return Ok(None);
    }
    let (m, v) = (scheme.m as usize, scheme.v as usize);
    let used_body = bytes[0] as usize;
    if used_body > m {
        return corrupt(format!("control byte says {used_body} body pairs, M is {m}"));
    }
    let mut pairs = Vec::with_capacity(used_body + 2);
    let mut meta_done = false;
    for i in 0..m + v {
        let at = &bytes[1 + 3 * i..4 + 3 * i];
        let offset = u16::from_le_bytes([at[1], at[2]]);
        let expect_used = if i < m { i < used_body } else { !meta_done && offset != NO_OFFSET };
        if i >= m && offset == NO_OFFSET {
            meta_done = true;
        }
        if !expect_used {
            if at != [ERASED; 3] {
                return corrupt(format!("pair {i} should be unused (FF FF FF), holds {at:02X?}"));
            }
            continue;
        }
        if offset as usize >= limit {
            return corrupt(format!("pair {i} names offset {offset}, beyond the page body ending at {limit}"));
        }
        pairs.push((at[0], offset));
    }
    Ok(Some(Record { pairs }))
}

/// What fetching found in a page's delta area.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Applied {
    pub records: u8,
    /// Bytes past the whole ones were not erased: a torn append, now wiped in the buffer.
    pub torn: bool,
}

/// Applies the whole delta-records of `page` in order (§6.2 fetch). `area` is where the
/// delta area starts; bytes at or past `whole` were not programmed whole. Torn bytes
/// are reset to 0xFF in the buffer so the page is exactly its last whole state.
pub fn apply_records(scheme: IpaScheme, page: &mut [u8], area: usize, whole: usize) -> Result<Applied> {
    let size = scheme.record_bytes();
    let mut records = 0u8;
    let mut at = area;
    while records < scheme.n && at + size <= whole {
        let Some(record) = decode_record(scheme, &page[at..at + size], area)? else { break };
        for (value, offset) in record.pairs {
            page[offset as usize] = value;
        }
        records += 1;
        at += size;
    }
    let tail = &mut page[at.max(area)..];
    let torn = tail.iter().any(|&b| b != ERASED);
    tail.fill(ERASED);
    Ok(Applied { records, torn })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn sizes_follow_the_paper() {
        // §6.1 example: [2×3] with V = 12 → 46-byte records, a 92-byte area (2.2% of 4 KiB).
        let s: IpaScheme = "2x3".parse().unwrap();
        assert_eq!(s.record_bytes(), 46);
        assert_eq!(s.area_bytes(), 92);
        assert_eq!(IpaScheme::NONE.area_bytes(), 0);
        assert!("2x0".parse::<IpaScheme>().is_err());
        assert!("17x2".parse::<IpaScheme>().is_err());
        assert!("two".parse::<IpaScheme>().unwrap_err().contains("`two`"));
    }

    #[test]
    fn eviction_rule() {
        let s = IpaScheme::new(2, 3, 2).unwrap();
        let fresh = FlashState { on_flash: true, records: 0, sealed: false };
        use Eviction::*;
        use OutOfPlaceReason::*;
        assert_eq!(choose_eviction(s, fresh, 0, 0), Clean);
        assert_eq!(choose_eviction(s, FlashState::default(), 0, 0), OutOfPlace(NeverWritten));
        assert_eq!(choose_eviction(IpaScheme::NONE, fresh, 1, 0), OutOfPlace(NoIpa));
        assert_eq!(choose_eviction(s, fresh, 3, 1), Append { records: 1 });
        assert_eq!(choose_eviction(s, fresh, 4, 1), Append { records: 2 });
        assert_eq!(choose_eviction(s, fresh, 0, 3), Append { records: 2 });
        assert_eq!(choose_eviction(s, fresh, 7, 0), OutOfPlace(Overflow));
        assert_eq!(choose_eviction(s, fresh, 0, 5), OutOfPlace(Overflow));
        let one_left = FlashState { records: 1, ..fresh };
        assert_eq!(choose_eviction(s, one_left, 3, 2), Append { records: 1 });
        assert_eq!(choose_eviction(s, one_left, 4, 0), OutOfPlace(Overflow));
        assert_eq!(choose_eviction(s, FlashState { sealed: true, ..fresh }, 1, 0), OutOfPlace(Sealed));
    }

    /// With V = 0 the metadata bytes take the record's M pairs: the records needed are
    /// ⌈(body + metadata) / M⌉.
    #[test]
    fn gross_records_count_metadata_against_m() {
        use Eviction::*;
        use OutOfPlaceReason::*;
        let gross = IpaScheme::new(2, 3, 0).unwrap();
        assert!(gross.gross() && !IpaScheme::new(2, 3, 1).unwrap().gross());
        assert_eq!(gross.record_bytes(), 10);
        let fresh = FlashState { on_flash: true, records: 0, sealed: false };
        assert_eq!(choose_eviction(gross, fresh, 1, 1), Append { records: 1 });
        assert_eq!(choose_eviction(gross, fresh, 0, 3), Append { records: 1 });
        assert_eq!(choose_eviction(gross, fresh, 2, 2), Append { records: 2 });
        assert_eq!(choose_eviction(gross, fresh, 1, 6), OutOfPlace(Overflow));
        let one_left = FlashState { records: 1, ..fresh };
        assert_eq!(choose_eviction(gross, one_left, 2, 1), Append { records: 1 });
        assert_eq!(choose_eviction(gross, one_left, 2, 2), OutOfPlace(Overflow));
    }

    fn page_with_changes(scheme: IpaScheme, base: &[u8], changes: &[(u16, u8)], meta_below: u16) -> (Vec<u8>, Changes) {
        let mut page = base.to_vec();
        for &(off, value) in changes {
            page[off as usize] = value;
        }
        let mut c = Changes::default();
        diff(base, &page[..base.len() - scheme.area_bytes()], meta_below as usize, base.len(), &mut c);
        (page, c)
    }

    proptest! {
        /// Encoding the diff as records and applying them to the old page gives the new one.
        #[test]
        fn records_round_trip(changes in proptest::collection::btree_map(0u16..900, any::<u8>(), 0..10), v in prop_oneof![Just(0u8), Just(3u8)]) {
            let scheme = IpaScheme::new(3, 4, v).unwrap();
            let area = 1024 - scheme.area_bytes();
            let mut base = vec![0u8; 1024];
            base[area..].fill(0xFF);
            let list: Vec<_> = changes.into_iter().collect();
            let (page, c) = page_with_changes(scheme, &base, &list, 16);
            if let Eviction::Append { records } = choose_eviction(scheme, FlashState { on_flash: true, ..Default::default() }, c.body.len(), c.meta.len()) {
                let mut out = Vec::new();
                encode_records(scheme, &c, &page, records, &mut out);
                let mut fetched = base.clone();
                fetched[area..area + out.len()].copy_from_slice(&out);
                let applied = apply_records(scheme, &mut fetched, area, area + out.len()).unwrap();
                prop_assert_eq!(applied, Applied { records: records as u8, torn: false });
                prop_assert_eq!(&fetched[..area], &page[..area]);
            } else if scheme.gross() {
                prop_assert!(c.bytes() == 0 || c.bytes() > 12);
            } else {
                prop_assert!(c.bytes() == 0 || c.body.len() > 12 || c.meta.len() > 9);
            }
        }

        /// The diff lists exactly the differing bytes, in order, split at the metadata
        /// bounds.
        #[test]
        fn diff_lists_every_changed_byte(len in 0usize..300, edits in proptest::collection::vec((0usize..300, any::<u8>()), 0..40), bounds in (0usize..300, 0usize..300)) {
            let base: Vec<u8> = (0..len).map(|i| i as u8).collect();
            let mut current = base.clone();
            for (i, v) in edits {
                if i < len { current[i] = v; }
            }
            let (header_end, slots_from) = (bounds.0.min(bounds.1), bounds.0.max(bounds.1));
            let mut c = Changes::default();
            diff(&base, &current, header_end, slots_from, &mut c);
            let changed = (0..len).filter(|&i| base[i] != current[i]);
            let (meta, body): (Vec<usize>, Vec<usize>) = changed.partition(|&i| i < header_end || i >= slots_from);
            prop_assert_eq!(c.meta.iter().map(|&i| i as usize).collect::<Vec<_>>(), meta);
            prop_assert_eq!(c.body.iter().map(|&i| i as usize).collect::<Vec<_>>(), body);
            // Over ranges holding every change (base stale elsewhere), the same.
            let mut cover: Vec<(usize, usize)> = Vec::new();
            for i in (0..len).filter(|&i| base[i] != current[i]) {
                match cover.last_mut() {
                    Some(last) if i < last.1 + 5 => last.1 = i + 3,
                    _ => cover.push((i.saturating_sub(2), i + 3)),
                }
            }
            let mut stale = vec![0xA5; len];
            for &(from, to) in &cover {
                let to = to.min(len);
                stale[from..to].copy_from_slice(&base[from..to]);
            }
            let mut within = Changes::default();
            diff_in(&stale, &current, header_end, slots_from, &cover, &mut within);
            let counts = count_in(&stale, &current, header_end, slots_from, &cover);
            let header = c.meta.iter().filter(|&&i| (i as usize) < header_end).count();
            prop_assert_eq!(counts, ChangeCounts { header, body: c.body.len(), slots: c.meta.len() - header });
            prop_assert_eq!(within, c);
        }

        /// Fuzz pass over the delta-record decoder: arbitrary bytes never panic, and what
        /// decodes names only offsets inside the page body.
        #[test]
        fn fuzz_delta_record_decoder(bytes in proptest::collection::vec(any::<u8>(), 0..80), m in 1u8..6, v in 0u8..6) {
            let scheme = IpaScheme::new(1, m, v).unwrap();
            let mut record = bytes.clone();
            record.resize(scheme.record_bytes(), 0xFF);
            for input in [&bytes[..], &record[..]] {
                if let Ok(Some(r)) = decode_record(scheme, input, 500) {
                    prop_assert!(r.pairs.iter().all(|&(_, off)| (off as usize) < 500));
                }
            }
            let mut page = vec![0u8; 600];
            page[600 - record.len()..].copy_from_slice(&record);
            let _ = apply_records(scheme, &mut page, 600 - record.len(), 600);
        }
    }

    #[test]
    fn a_torn_record_is_ignored_and_wiped() {
        let scheme = IpaScheme::new(2, 2, 1).unwrap();
        let area = 200;
        let mut page = vec![0u8; area + scheme.area_bytes()];
        page[area..].fill(0xFF);
        let c = Changes { body: vec![10], meta: vec![0] };
        let mut new = page.clone();
        new[10] = 7;
        new[0] = 1;
        let mut rec = Vec::new();
        encode_records(scheme, &c, &new, 1, &mut rec);
        page[area..area + rec.len()].copy_from_slice(&rec);
        page[area + rec.len()] = 0x02; // a second append, torn: its OOB slot never landed
        let applied = apply_records(scheme, &mut page, area, area + rec.len()).unwrap();
        assert_eq!(applied, Applied { records: 1, torn: true });
        assert_eq!((page[10], page[0]), (7, 1));
        assert!(page[area + rec.len()..].iter().all(|&b| b == 0xFF));
    }
}
