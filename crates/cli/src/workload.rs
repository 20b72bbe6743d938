//! Synthetic logical-page access patterns, driven by a seeded generator.

use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// Which logical pages a synthetic workload touches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PatternKind {
    Uniform,
    Zipf,
    Hotcold,
    /// Pages 0, 1, 2, … in order, wrapping around.
    Sequential,
}

/// A sampler of logical page numbers in `0..pages`.
pub enum Pattern {
    Uniform {
        pages: u32,
    },
    Sequential {
        pages: u32,
        cursor: std::cell::Cell<u32>,
    },
    /// Gray et al.'s zipfian generator ("Quickly generating billion-record synthetic
    /// databases", SIGMOD'94), as used by YCSB: rank 0 is the hottest page.
    Zipf {
        pages: u32,
        theta: f64,
        alpha: f64,
        zetan: f64,
        eta: f64,
    },
    /// `hot_share` of accesses go to the first `hot_pages` pages.
    HotCold {
        pages: u32,
        hot_pages: u32,
        hot_share: f64,
    },
}

impl Pattern {
    pub fn new(
        kind: PatternKind,
        pages: u32,
        theta: f64,
        hot_share: f64,
        hot_fraction: f64,
    ) -> Result<Pattern, String> {
        match kind {
            PatternKind::Uniform => Ok(Pattern::Uniform { pages }),
            PatternKind::Sequential => Ok(Pattern::Sequential { pages, cursor: std::cell::Cell::new(0) }),
            PatternKind::Zipf => {
                if !(theta > 0.0 && theta < 1.0) {
                    return Err(format!("--theta {theta}: zipf needs 0 < theta < 1"));
                }
                let zeta = |n: u32| (1..=n).map(|i| 1.0 / (i as f64).powf(theta)).sum::<f64>();
                let zetan = zeta(pages);
                let eta = (1.0 - (2.0 / pages as f64).powf(1.0 - theta)) / (1.0 - zeta(2) / zetan);
                Ok(Pattern::Zipf { pages, theta, alpha: 1.0 / (1.0 - theta), zetan, eta })
            }
            PatternKind::Hotcold => {
                if !((0.0..=1.0).contains(&hot_share) && hot_fraction > 0.0 && hot_fraction < 1.0) {
                    return Err(format!(
                        "--hot-share {hot_share} must be in [0, 1] and --hot-fraction {hot_fraction} in (0, 1)"
                    ));
                }
                let hot_pages = ((pages as f64 * hot_fraction) as u32).clamp(1, pages.saturating_sub(1).max(1));
                Ok(Pattern::HotCold { pages, hot_pages, hot_share })
            }
        }
    }

    pub fn next(&self, rng: &mut ChaCha8Rng) -> u32 {
        match *self {
            Pattern::Uniform { pages } => rng.gen_range(0..pages),
            Pattern::Sequential { pages, ref cursor } => {
                let lpn = cursor.get();
                cursor.set((lpn + 1) % pages);
                lpn
            }
            Pattern::Zipf { pages, theta, alpha, zetan, eta } => {
                let u: f64 = rng.gen();
                let uz = u * zetan;
                let rank = if uz < 1.0 {
                    0
                } else if uz < 1.0 + 0.5f64.powf(theta) {
                    1
                } else {
                    (pages as f64 * (eta * u - eta + 1.0).powf(alpha)) as u32
                };
                rank.min(pages - 1)
            }
            Pattern::HotCold { pages, hot_pages, hot_share } => {
                if rng.gen_bool(hot_share) {
                    rng.gen_range(0..hot_pages)
                } else {
                    rng.gen_range(hot_pages..pages)
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn histogram(p: &Pattern, pages: u32) -> Vec<u32> {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let mut h = vec![0u32; pages as usize];
        for _ in 0..100_000 {
            h[p.next(&mut rng) as usize] += 1;
        }
        h
    }

    #[test]
    fn zipf_is_skewed_and_in_range() {
        let p = Pattern::new(PatternKind::Zipf, 1000, 0.99, 0.0, 0.0).unwrap();
        let h = histogram(&p, 1000);
        assert!(h[0] > 10 * h[500].max(1), "rank 0 {} vs rank 500 {}", h[0], h[500]);
        assert!(Pattern::new(PatternKind::Zipf, 10, 1.0, 0.0, 0.0).is_err());
    }

    #[test]
    fn hotcold_sends_the_hot_share_to_the_hot_set() {
        let p = Pattern::new(PatternKind::Hotcold, 1000, 0.0, 0.8, 0.2).unwrap();
        let hot: u32 = histogram(&p, 1000)[..200].iter().sum();
        assert!((78_000..82_000).contains(&hot), "{hot}");
    }
}
