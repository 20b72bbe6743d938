//! YCSB's request distributions, as YCSB's core generators compute them (Gray et al.,
//! "Quickly generating billion-record synthetic databases", SIGMOD 1994), drawn from the
//! run's seeded ChaCha generator.
//!
//! [`Zipfian`] is YCSB's `ZipfianGenerator` (constant 0.99), including its incremental
//! zeta when the item count grows and its quirk of keeping the original item count in
//! eta. [`scrambled`] is `ScrambledZipfianGenerator` (a 10^10-item zipfian hashed onto
//! the key range with FNV-1a 64, so popular keys are spread over it), and
//! [`SkewedLatest`] is `SkewedLatestGenerator` (the newest keys the most popular).

use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// YCSB's zipfian constant.
pub const ZIPFIAN_CONSTANT: f64 = 0.99;
/// The scrambled generator's item count and its precomputed zeta (YCSB's constants).
const SCRAMBLED_ITEMS: u64 = 10_000_000_000;
const SCRAMBLED_ZETAN: f64 = 26.469_028_201_783_02;

/// YCSB's `Utils.fnvhash64`: FNV-1a over the 8 bytes of `val`, low byte first, as a
/// non-negative long.
pub fn fnvhash64(val: u64) -> u64 {
    const OFFSET_BASIS: u64 = 0xCBF2_9CE4_8422_2325;
    const PRIME: u64 = 1_099_511_628_211;
    let mut hash = OFFSET_BASIS;
    let mut v = val;
    for _ in 0..8 {
        hash ^= v & 0xff;
        hash = hash.wrapping_mul(PRIME);
        v >>= 8;
    }
    // Java's Math.abs on a long (Long.MIN_VALUE stays as it is, as a u64 2^63).
    (hash as i64).unsigned_abs()
}

/// `sum_{i=st}^{n-1} 1 / (i+1)^theta + initial`.
fn zeta(st: u64, n: u64, theta: f64, initial: f64) -> f64 {
    (st..n).fold(initial, |sum, i| sum + 1.0 / ((i + 1) as f64).powf(theta))
}

/// A zipfian over `base..base+items`: item `base` the most popular.
#[derive(Clone, Debug)]
pub struct Zipfian {
    items: u64,
    base: u64,
    theta: f64,
    zeta2theta: f64,
    alpha: f64,
    zetan: f64,
    eta: f64,
    count_for_zeta: u64,
}

impl Zipfian {
    /// Over `min..=max`, zeta computed (O(items) once).
    pub fn new(min: u64, max: u64) -> Zipfian {
        let items = max - min + 1;
        Zipfian::with_zetan(min, max, zeta(0, items, ZIPFIAN_CONSTANT, 0.0))
    }

    /// Over `min..=max` with zeta(items) given.
    pub fn with_zetan(min: u64, max: u64, zetan: f64) -> Zipfian {
        let theta = ZIPFIAN_CONSTANT;
        let items = max - min + 1;
        let zeta2theta = zeta(0, 2, theta, 0.0);
        let eta = (1.0 - (2.0 / items as f64).powf(1.0 - theta)) / (1.0 - zeta2theta / zetan);
        Zipfian { items, base: min, theta, zeta2theta, alpha: 1.0 / (1.0 - theta), zetan, eta, count_for_zeta: items }
    }

    /// A value among the first `item_count` items; a larger count than before extends
    /// zeta incrementally (a smaller one keeps it, as YCSB does by default).
    pub fn next_of(&mut self, item_count: u64, rng: &mut ChaCha8Rng) -> u64 {
        if item_count > self.count_for_zeta {
            self.zetan = zeta(self.count_for_zeta, item_count, self.theta, self.zetan);
            self.count_for_zeta = item_count;
            self.eta = (1.0 - (2.0 / self.items as f64).powf(1.0 - self.theta)) / (1.0 - self.zeta2theta / self.zetan);
        }
        let u: f64 = rng.gen();
        let uz = u * self.zetan;
        if uz < 1.0 {
            return self.base;
        }
        if uz < 1.0 + 0.5f64.powf(self.theta) {
            return self.base + 1;
        }
        self.base + (item_count as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha)) as u64
    }

    pub fn next(&mut self, rng: &mut ChaCha8Rng) -> u64 {
        self.next_of(self.items, rng)
    }
}

/// YCSB's `ScrambledZipfianGenerator` over `min..=max`.
#[derive(Clone, Debug)]
pub struct Scrambled {
    gen: Zipfian,
    min: u64,
    items: u64,
}

pub fn scrambled(min: u64, max: u64) -> Scrambled {
    Scrambled { gen: Zipfian::with_zetan(0, SCRAMBLED_ITEMS, SCRAMBLED_ZETAN), min, items: max - min + 1 }
}

impl Scrambled {
    pub fn next(&mut self, rng: &mut ChaCha8Rng) -> u64 {
        self.min + fnvhash64(self.gen.next(rng)) % self.items
    }
}

/// YCSB's `SkewedLatestGenerator`: `latest - zipfian(latest)`, so the last inserted key
/// is the most popular.
#[derive(Clone, Debug)]
pub struct SkewedLatest {
    gen: Zipfian,
}

impl SkewedLatest {
    /// `latest`: the highest key inserted so far (at least 1).
    pub fn new(latest: u64) -> SkewedLatest {
        SkewedLatest { gen: Zipfian::new(0, latest.max(1) - 1) }
    }

    pub fn next(&mut self, latest: u64, rng: &mut ChaCha8Rng) -> u64 {
        latest - self.gen.next_of(latest, rng).min(latest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn fnv_matches_ycsb() {
        // Computed independently: FNV-1a 64 over 01 00 00 00 00 00 00 00, as a signed long's |x|.
        assert_eq!(fnvhash64(1), 8_517_097_267_634_966_620);
        assert_ne!(fnvhash64(1), fnvhash64(256), "every byte counts");
    }

    #[test]
    fn zipfian_frequencies_follow_the_law() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let mut z = Zipfian::new(0, 999);
        let n = 200_000;
        let mut counts = vec![0u32; 1000];
        for _ in 0..n {
            counts[z.next(&mut rng) as usize] += 1;
        }
        let zetan = zeta(0, 1000, ZIPFIAN_CONSTANT, 0.0);
        for (rank, &c) in counts.iter().enumerate().take(2) {
            let expected = n as f64 / ((rank + 1) as f64).powf(ZIPFIAN_CONSTANT) / zetan;
            assert!((c as f64 - expected).abs() < 0.05 * expected, "rank {rank}: {c} vs {expected:.0}");
        }
        // The head is popular and the tail is reached.
        let top10: u32 = counts[..10].iter().sum();
        assert!(top10 as f64 > 0.35 * n as f64, "{top10}");
        assert!(counts[500..].iter().any(|&c| c > 0));
    }

    #[test]
    fn growing_the_item_count_extends_zeta_incrementally() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let mut grown = Zipfian::new(0, 99);
        grown.next_of(1000, &mut rng);
        let fresh = Zipfian::new(0, 999);
        assert!((grown.zetan - fresh.zetan).abs() < 1e-9);
    }

    #[test]
    fn scrambled_spreads_and_latest_favours_the_newest() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let mut s = scrambled(0, 9999);
        let mut hot = std::collections::HashMap::new();
        for _ in 0..50_000 {
            let k = s.next(&mut rng);
            assert!(k < 10_000);
            *hot.entry(k).or_insert(0u32) += 1;
        }
        let mut by_count: Vec<(u64, u32)> = hot.into_iter().collect();
        by_count.sort_by_key(|&(k, c)| (std::cmp::Reverse(c), k));
        assert!(by_count[0].1 > 50_000 / 100, "a hot key: {:?}", by_count[0]);
        assert!(by_count[..5].iter().any(|&(k, _)| k > 100), "hot keys are scattered: {:?}", &by_count[..5]);
        let mut l = SkewedLatest::new(999);
        let near = (0..10_000).filter(|_| l.next(999, &mut rng) >= 990).count();
        // The 10 newest of 1000 keys take sum(1/i^0.99, i=1..10) / zeta(1000) = 39% of requests.
        assert!((3500..4300).contains(&near), "{near}");
    }
}
