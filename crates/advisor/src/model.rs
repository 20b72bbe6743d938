//! The prediction model: how many of an object's page writes an IPA scheme [N×M] turns
//! into in-place appends, from the baseline's histogram of changed body bytes per write.
//!
//! An eviction changing U body bytes needs r = max(1, ⌈U/M⌉) delta-records (§6.2). A
//! page's writes form cycles: one out-of-place write, then appends while the records
//! used since it stay within N; the eviction that would exceed N goes out-of-place and
//! starts the next cycle. With the evictions of an object independent and distributed
//! as its histogram, the expected appends per cycle are E\[A\] = Σ_k P(S_k ≤ N), S_k the
//! records of k evictions, and the share of appends among writes of pages already on
//! flash is E\[A\] / (1 + E\[A\]). First writes of new pages are always out-of-place.
//! Below 32 bytes the counts are exact where the run recorded them; within a
//! histogram bucket [2^k, 2^(k+1)) above, the byte counts are taken as uniform.
//! An eviction needs r = max(1, ⌈U/M⌉, ⌈K/V⌉) records for K metadata bytes (header and
//! slot directory, `engine::delta::choose_eviction`): an eviction that adds or removes a
//! slot of a sorted page (a B+-tree entry) shifts the slots after it, K measured from
//! the log's slot-changing updates ([`Evictions`]); other evictions change only a few
//! header bytes (the page LSN), which fit V. Invariant: every share is in [0, 1].

use engine::store::{update_size_bucket, SMALL_UPDATE_BYTES, UPDATE_SIZE_BUCKETS};
use engine::IpaScheme;
use serde::{Serialize, Serializer};

/// Writes (or updates) by changed body bytes: the engine's power-of-two buckets
/// (`update_size_writes`) and, where the run recorded them, the exact counts below
/// [`SMALL_UPDATE_BYTES`] (`update_size_small`), which hold the record sizes M: an
/// 8-byte change is one record at M = 8, and a bucket [8, 16) taken as uniform says
/// so of an eighth of it. Indexing reaches the buckets; it serialises as them.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Histogram {
    pub buckets: [u64; UPDATE_SIZE_BUCKETS],
    /// Invariant: when present, it counts exactly the writes of the buckets below
    /// [`SMALL_UPDATE_BYTES`].
    pub small: Option<[u64; SMALL_UPDATE_BYTES]>,
}

impl Histogram {
    /// Counts one of `bytes` changed bytes, in its bucket and exactly.
    pub fn record(&mut self, bytes: u64) {
        self.buckets[update_size_bucket(bytes)] += 1;
        let small = self.small.get_or_insert([0; SMALL_UPDATE_BYTES]);
        if let Some(count) = small.get_mut(bytes as usize) {
            *count += 1;
        }
    }

    /// The buckets' counts.
    pub fn iter(&self) -> std::slice::Iter<'_, u64> {
        self.buckets.iter()
    }
}

impl std::ops::Index<usize> for Histogram {
    type Output = u64;
    fn index(&self, k: usize) -> &u64 {
        &self.buckets[k]
    }
}

impl std::ops::IndexMut<usize> for Histogram {
    fn index_mut(&mut self, k: usize) -> &mut u64 {
        &mut self.buckets[k]
    }
}

impl Serialize for Histogram {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.buckets.serialize(serializer)
    }
}

/// The byte counts bucket `k` holds, as an inclusive range; `None` for the last,
/// open-ended bucket (8 KiB or more, which no scheme fits). Bucket 0 (0 or 1 byte)
/// needs one record either way, so it is taken as 1 byte.
pub fn bucket_bytes(k: usize) -> Option<(u64, u64)> {
    match k {
        0 => Some((1, 1)),
        k if k + 1 < UPDATE_SIZE_BUCKETS => Some((1 << k, (1 << (k + 1)) - 1)),
        _ => None,
    }
}

/// Whether bucket `k` lies below [`SMALL_UPDATE_BYTES`], so the exact counts, where a
/// histogram has them, hold its writes byte by byte.
pub fn counted_exactly(k: usize) -> bool {
    bucket_bytes(k).is_some_and(|(_, hi)| hi < SMALL_UPDATE_BYTES as u64)
}

/// Writes counted in the histogram.
pub fn total(h: &Histogram) -> u64 {
    h.buckets.iter().sum()
}

/// The share of the histogram's writes that change at most `bytes` body bytes: exact
/// below [`SMALL_UPDATE_BYTES`] where the counts are there, else uniform within each
/// bucket (0 bytes taken as 1, one record either way).
pub fn share_at_most(h: &Histogram, bytes: u64) -> f64 {
    let all = total(h);
    if all == 0 {
        return 0.0;
    }
    let exact: u64 = h.small.map_or(0, |small| {
        small.iter().enumerate().filter(|&(b, _)| (b as u64).max(1) <= bytes).map(|(_, &c)| c).sum()
    });
    let fitting: f64 = h
        .buckets
        .iter()
        .enumerate()
        .filter_map(|(k, &count)| {
            if h.small.is_some() && counted_exactly(k) {
                return None;
            }
            let (lo, hi) = bucket_bytes(k)?;
            let inside = (bytes.min(hi) + 1).saturating_sub(lo);
            Some(count as f64 * inside as f64 / (hi - lo + 1) as f64)
        })
        .sum();
    (exact as f64 + fitting) / all as f64
}

/// The changed bytes the histogram's writes sum to: exact below
/// [`SMALL_UPDATE_BYTES`] where the counts are there, else each bucket's midpoint (the
/// last, open-ended one as 8 KiB).
pub fn bytes_sum(h: &Histogram) -> f64 {
    let exact: f64 = h.small.map_or(0.0, |small| small.iter().enumerate().map(|(b, &c)| (b as u64 * c) as f64).sum());
    let buckets: f64 = h
        .buckets
        .iter()
        .enumerate()
        .filter(|&(k, _)| h.small.is_none() || !counted_exactly(k))
        .map(|(k, &c)| c as f64 * bucket_bytes(k).map_or(8192.0, |(lo, hi)| (lo + hi) as f64 / 2.0))
        .sum();
    exact + buckets
}

/// What an object's evictions change: the histogram of changed body bytes, and for
/// the share `slot_share` of evictions that carry an added or removed slot, the
/// histogram of their header and slot-directory bytes (`slot_meta`). A B+-tree insert
/// shifts the slots after its key, so its metadata bytes grow with the page's entries.
#[derive(Clone, Copy, Debug)]
pub struct Evictions<'a> {
    pub body: &'a Histogram,
    pub slot_share: f64,
    pub slot_meta: &'a Histogram,
}

impl<'a> Evictions<'a> {
    /// Evictions that change body bytes only (a header's page LSN fits one record's V).
    pub fn body_only(body: &'a Histogram) -> Evictions<'a> {
        Evictions { body, slot_share: 0.0, slot_meta: body }
    }

    /// P(an eviction needs at most r records): r = max(1, ⌈body/M⌉, ⌈meta/V⌉), the
    /// body and (on a slot-changing eviction) the metadata bytes taken as independent.
    fn records_at_most(&self, r: u64, scheme: IpaScheme) -> f64 {
        if r == 0 {
            return 0.0;
        }
        let body = share_at_most(self.body, r * scheme.m as u64);
        let meta = share_at_most(self.slot_meta, r * scheme.v as u64);
        body * (1.0 - self.slot_share + self.slot_share * meta)
    }
}

/// P(one eviction needs r records) for r = 1..=n at index r − 1, under the scheme's M
/// and V; the rest of the mass needs more than N records.
pub fn records_distribution(e: &Evictions, scheme: IpaScheme) -> Vec<f64> {
    if total(e.body) == 0 || scheme.m == 0 {
        return vec![0.0; scheme.n as usize];
    }
    (1..=scheme.n as u64).map(|r| e.records_at_most(r, scheme) - e.records_at_most(r - 1, scheme)).collect()
}

/// E\[A\], the expected appends after one out-of-place write of a page.
pub fn appends_per_cycle(e: &Evictions, scheme: IpaScheme) -> f64 {
    if !scheme.enabled() {
        return 0.0;
    }
    let p = records_distribution(e, scheme);
    let n = scheme.n as usize;
    // q[s]: P(S_k = s) for s ≤ N; S_0 = 0.
    let mut q = vec![0.0; n + 1];
    q[0] = 1.0;
    let mut expected = 0.0;
    for _ in 1..=n {
        let mut next = vec![0.0; n + 1];
        for (s, &qs) in q.iter().enumerate().filter(|(_, &v)| v > 0.0) {
            for (r, &pr) in p.iter().enumerate() {
                if s + r < n {
                    next[s + r + 1] += qs * pr;
                }
            }
        }
        expected += next.iter().sum::<f64>();
        q = next;
    }
    expected
}

/// The share of writes of pages already on flash that become appends.
pub fn append_share(e: &Evictions, scheme: IpaScheme) -> f64 {
    let a = appends_per_cycle(e, scheme);
    a / (1.0 + a)
}

/// Predicted appends among an object's writes: `writes` in all, `e` those of pages
/// already on flash; `lsb_share` is the share of flash pages that take appends (1 in
/// slc and pslc mode, ½ in odd-mlc on MLC: a page written out-of-place to an MSB page
/// takes no append, so its cycle has none).
pub fn predicted_appends(e: &Evictions, writes: u64, scheme: IpaScheme, lsb_share: f64) -> f64 {
    let on_flash = total(e.body).min(writes) as f64;
    let a = appends_per_cycle(e, scheme) * lsb_share;
    on_flash * a / (1.0 + a)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scheme(n: u8, m: u8) -> IpaScheme {
        IpaScheme::new(n, m, IpaScheme::DEFAULT_V).unwrap()
    }

    #[test]
    fn shares_interpolate_within_buckets() {
        let mut h = Histogram::default();
        h[0] = 10; // 0–1 byte
        h[2] = 10; // 4–7 bytes
        h[13] = 20; // 8 KiB or more
        assert_eq!(total(&h), 40);
        assert!((share_at_most(&h, 1) - 0.25).abs() < 1e-12);
        // 4 and 5 of 4..=7 fit 5 bytes: half the bucket.
        assert!((share_at_most(&h, 5) - 0.375).abs() < 1e-12);
        assert!((share_at_most(&h, 7) - 0.5).abs() < 1e-12);
        assert!((share_at_most(&h, 100_000) - 0.5).abs() < 1e-12);
        assert_eq!(share_at_most(&Histogram::default(), 9), 0.0);
    }

    #[test]
    fn exact_small_counts_replace_the_uniform_buckets() {
        // TPC-B's account at full scale: half the writes change 2-3 bytes, half a
        // BIGINT balance that changed sign, all 8 of its bytes. Under M = 8 the bucket
        // [8, 16) taken as uniform fits an eighth of them in one record; counted
        // exactly, all of them.
        let mut h = Histogram::default();
        for _ in 0..50 {
            h.record(3);
            h.record(8);
        }
        let mut uniform = h;
        uniform.small = None;
        assert!((share_at_most(&uniform, 8) - (50.0 + 50.0 / 8.0) / 100.0).abs() < 1e-12);
        assert_eq!(share_at_most(&h, 8), 1.0);
        assert_eq!(share_at_most(&h, 7), 0.5);
        assert_eq!(bytes_sum(&h), 550.0);
        assert_eq!(bytes_sum(&uniform), 50.0 * 2.5 + 50.0 * 11.5);
        // One record per eviction: under [4×8] four appends per cycle, 80% of the writes.
        let s = scheme(4, 8);
        assert!((append_share(&Evictions::body_only(&h), s) - 0.8).abs() < 1e-12);
        assert!(append_share(&Evictions::body_only(&uniform), s) < 0.75);
        // Larger writes keep their bucket: 40 bytes is in [32, 64), uniform.
        h.record(40);
        assert!((share_at_most(&h, 47) - 100.5 / 101.0).abs() < 1e-12);
    }

    #[test]
    fn one_record_evictions_fill_the_area_exactly() {
        // Every eviction changes 1 byte: one record each, N appends per cycle.
        let mut h = Histogram::default();
        h[0] = 100;
        for n in 1..=4 {
            let s = scheme(n, 3);
            let e = Evictions::body_only(&h);
            assert!((appends_per_cycle(&e, s) - n as f64).abs() < 1e-12);
            assert!((append_share(&e, s) - n as f64 / (n as f64 + 1.0)).abs() < 1e-12);
        }
        // 100 writes of pages on flash and 50 first writes; odd-MLC halves E[A].
        let e = Evictions::body_only(&h);
        assert!((predicted_appends(&e, 150, scheme(2, 3), 1.0) - 100.0 * 2.0 / 3.0).abs() < 1e-9);
        assert!((predicted_appends(&e, 150, scheme(2, 3), 0.5) - 50.0).abs() < 1e-9);
    }

    #[test]
    fn evictions_too_large_for_the_area_never_append() {
        let mut h = Histogram::default();
        h[5] = 7; // 32–63 bytes: more than 2 × 8
        assert_eq!(appends_per_cycle(&Evictions::body_only(&h), scheme(2, 8)), 0.0);
        assert_eq!(appends_per_cycle(&Evictions::body_only(&h), IpaScheme::NONE), 0.0);
    }

    #[test]
    fn evictions_adding_a_slot_to_a_sorted_page_overflow_on_their_metadata() {
        // Every eviction changes 1 body byte; half of them insert an index entry whose
        // slot shift and header change 64–127 bytes, more than N·V = 2·12: those go
        // out-of-place whatever the body needs.
        let mut body = Histogram::default();
        body[0] = 100;
        let mut meta = Histogram::default();
        meta[6] = 50;
        let e = Evictions { body: &body, slot_share: 0.5, slot_meta: &meta };
        let s = scheme(2, 3);
        // P(S1 ≤ 2) = 1/2, P(S2 ≤ 2) = 1/4: E[A] = 3/4 (body alone: 2).
        assert!((appends_per_cycle(&e, s) - 0.75).abs() < 1e-12);
        // Small metadata changes (a heap's new slot and header, 4–7 bytes) fit V.
        let mut small = Histogram::default();
        small[2] = 50;
        let heap = Evictions { body: &body, slot_share: 1.0, slot_meta: &small };
        assert!((appends_per_cycle(&heap, s) - 2.0).abs() < 1e-12);
    }

    #[test]
    fn mixed_record_counts_follow_the_renewal_sum() {
        // Under [2×3], half the evictions need 1 record (1 byte); of the other half
        // (4–7 bytes), 4–6 need 2 and 7 needs 3, more than N.
        let mut h = Histogram::default();
        h[0] = 1;
        h[2] = 1;
        let s = scheme(2, 3);
        // P(S1 ≤ 2) = 1/2 + 3/8; P(S2 ≤ 2) = P(1, 1) = 1/4.
        assert!((appends_per_cycle(&Evictions::body_only(&h), s) - 1.125).abs() < 1e-12);
    }
}
