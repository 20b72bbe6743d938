//! The page FTL's remapping and tagged writes (SW-WAL's FTL side) against a model:
//! writes (some with a tag in the OOB), trims, batches of remaps (shared pages), reads,
//! GC and power cuts at random mutating operations. After every rebuild each logical
//! page reads the model's bytes and tag; an interrupted operation leaves each page it
//! touched old or new (a remap batch: each pair on its own).

use flash::ftl::{self, Ftl, FtlConfig, FtlKind, TAG_BYTES};
use flash::{Error, VictimPolicy};
use nand::{Device, FaultyStorage, Geometry, MemoryStorage};
use proptest::prelude::*;
use std::collections::HashMap;
use support::geometry::small_geometry;
use support::model_check::check_against_model;

mod support {
    pub mod geometry;
    pub mod model_check;
}

const PAGE: usize = 512;

fn geometry(oob_bytes: u32) -> Geometry {
    Geometry { oob_bytes, ..small_geometry(PAGE as u32) }
}

fn config(policy: VictimPolicy) -> FtlConfig {
    let mut c = FtlConfig::new(FtlKind::Page);
    c.over_provisioning = 0.35;
    c.gc.policy = policy;
    c
}

fn fresh(config: &FtlConfig, cut_at: Option<u64>, seed: u64) -> Box<dyn Ftl> {
    let storage = FaultyStorage::new(MemoryStorage::new(geometry(64), true), cut_at, seed);
    ftl::format(Device::new(Box::new(storage)), config).unwrap()
}

#[derive(Clone, Debug)]
enum Op {
    Write {
        lpn: u32,
        fill: u8,
        tagged: bool,
    },
    Trim {
        lpn: u32,
    },
    /// (dst, src) pairs; the harness drops the ones the FTL must refuse.
    Remap {
        pairs: Vec<(u32, u32)>,
    },
    Read {
        lpn: u32,
    },
}

/// A page's contents as the model keeps them: bytes and tag.
type Contents = (Vec<u8>, Option<[u8; TAG_BYTES]>);

fn op(lpns: u32) -> impl Strategy<Value = Op> {
    // A hot set so pages are overwritten, shared and collected often.
    let lpn = prop_oneof![3 => 0..lpns / 4, 1 => 0..lpns];
    prop_oneof![
        6 => (lpn.clone(), any::<u8>(), any::<bool>()).prop_map(|(lpn, fill, tagged)| Op::Write { lpn, fill, tagged }),
        1 => lpn.clone().prop_map(|lpn| Op::Trim { lpn }),
        2 => prop::collection::vec((lpn.clone(), lpn.clone()), 1..8).prop_map(|pairs| Op::Remap { pairs }),
        // Now and then a batch larger than one remap record (41 pairs on 512-byte pages).
        1 => prop::collection::vec((0..lpns, 0..lpns), 40..90).prop_map(|pairs| Op::Remap { pairs }),
        2 => lpn.prop_map(|lpn| Op::Read { lpn }),
    ]
}

/// What an interrupted operation may have left: per page, its new contents (`None`: trimmed).
type InFlight = Vec<(u32, Option<Contents>)>;

struct Harness {
    ftl: Box<dyn Ftl>,
    model: HashMap<u32, Contents>,
    now: u64,
    version: u32,
}

/// A logical page's bytes and tag as the FTL reads them.
fn contents(ftl: &mut dyn Ftl, lpn: u32, now: u64) -> Option<Contents> {
    ftl.read_tagged(lpn, now).unwrap().map(|(r, tag)| (r.data.to_vec(), tag))
}

impl Harness {
    fn read(&mut self, lpn: u32) -> Option<Contents> {
        contents(self.ftl.as_mut(), lpn, self.now)
    }

    /// The pairs of a batch the FTL accepts: distinct destinations, no source that is
    /// also a destination, mapped sources, no page remapped onto itself.
    fn valid_pairs(&self, pairs: &[(u32, u32)]) -> Vec<(u32, u32)> {
        let mut kept: Vec<(u32, u32)> = Vec::new();
        for &(dst, src) in pairs {
            let clash = kept.iter().any(|&(d, s)| d == dst || d == src || s == dst);
            if dst != src && !clash && self.model.contains_key(&src) {
                kept.push((dst, src));
            }
        }
        kept
    }

    /// Runs one op; on a power cut returns what was in flight.
    fn apply(&mut self, op: &Op) -> Result<(), InFlight> {
        self.now += 1_000;
        self.version += 1;
        let cut = |e: Error| match e {
            Error::Device(nand::Error::PowerLost) => {}
            other => panic!("unexpected error: {other}"),
        };
        match op {
            &Op::Write { lpn, fill, tagged } => {
                let mut p = vec![fill; PAGE];
                p[..4].copy_from_slice(&lpn.to_le_bytes());
                p[4..8].copy_from_slice(&self.version.to_le_bytes());
                let tag = tagged.then(|| {
                    let mut t = [fill ^ 0x5A; TAG_BYTES];
                    t[..4].copy_from_slice(&self.version.to_le_bytes());
                    t
                });
                let result = match &tag {
                    Some(t) => self.ftl.write_tagged(lpn, &p, t, self.now),
                    None => self.ftl.write(lpn, &p, self.now),
                };
                match result {
                    Ok(_) => {
                        self.model.insert(lpn, (p, tag));
                        Ok(())
                    }
                    Err(e) => {
                        cut(e);
                        Err(vec![(lpn, Some((p, tag)))])
                    }
                }
            }
            &Op::Trim { lpn } => match self.ftl.trim(lpn, self.now) {
                Ok(_) => {
                    self.model.remove(&lpn);
                    Ok(())
                }
                Err(e) => {
                    cut(e);
                    Err(vec![(lpn, None)])
                }
            },
            Op::Remap { pairs } => {
                let pairs = self.valid_pairs(pairs);
                let news: InFlight = pairs.iter().map(|&(dst, src)| (dst, self.model.get(&src).cloned())).collect();
                match self.ftl.remap(&pairs, self.now) {
                    Ok(_) => {
                        for (dst, new) in news {
                            self.model.insert(dst, new.unwrap_or_else(|| unreachable!("sources are mapped")));
                        }
                        Ok(())
                    }
                    Err(e) => {
                        cut(e);
                        Err(news)
                    }
                }
            }
            &Op::Read { lpn } => {
                let got = self.read(lpn);
                assert_eq!(got.as_ref(), self.model.get(&lpn), "lpn {lpn}");
                Ok(())
            }
        }
    }

    /// Every page reads as the model says, or as the interrupted operation would have
    /// left it (see `check_against_model`).
    fn check_all(&mut self, in_flight: &InFlight) {
        let (ftl, now) = (&mut self.ftl, self.now);
        check_against_model(ftl.logical_pages(), |lpn| contents(ftl.as_mut(), lpn, now), &mut self.model, in_flight);
    }

    fn restart(self) -> Harness {
        let mut device = self.ftl.into_device();
        device.power_on();
        let (ftl, now) = ftl::open(device, self.now).unwrap();
        Harness { ftl, now, ..self }
    }
}

/// Runs `ops` with power failing at mutating operation `cut_at`, rebuilds, checks, runs
/// `after`, rebuilds and checks again.
fn cut_and_rebuild(config: &FtlConfig, ops: &[Op], after: &[Op], cut_at: u64, seed: u64) -> ftl::FtlCounters {
    let mut h = Harness { ftl: fresh(config, Some(cut_at), seed), model: HashMap::new(), now: 0, version: 0 };
    let mut in_flight = Vec::new();
    for op in ops {
        if let Err(flight) = h.apply(op) {
            in_flight = flight;
            break;
        }
    }
    let counters = h.ftl.counters();
    let mut h = h.restart();
    h.check_all(&in_flight);
    for op in after {
        h.apply(op).unwrap_or_else(|_| panic!("power is back"));
    }
    let mut h = h.restart();
    h.check_all(&Vec::new());
    counters
}

fn lpns() -> u32 {
    fresh(&config(VictimPolicy::Greedy), None, 0).logical_pages()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Power fails at a random program (data, tagged data, trim record, remap record),
    /// GC copyback or erase, or never.
    #[test]
    fn remapping_page_ftl_survives_power_cuts(
        ops in prop::collection::vec(op(lpns()), 300..1200),
        after in prop::collection::vec(op(lpns()), 0..200),
        fraction in 0.0f64..1.2,
        seed in any::<u64>(),
        cb in any::<bool>(),
    ) {
        let policy = if cb { VictimPolicy::CostBenefit } else { VictimPolicy::Greedy };
        let mutating = ops.iter().filter(|o| !matches!(o, Op::Read { .. })).count() as f64;
        cut_and_rebuild(&config(policy), &ops, &after, 1 + (fraction * mutating) as u64, seed);
    }
}

/// Deterministic: remapped pages survive many GC passes (their shared page moves and
/// every lpn follows) and restarts; a remap costs no data program.
#[test]
fn shared_pages_follow_gc_and_remaps_program_only_records() {
    let config = config(VictimPolicy::Greedy);
    let n = lpns();
    let mut h = Harness { ftl: fresh(&config, None, 0), model: HashMap::new(), now: 0, version: 0 };
    // Sources and churned pages interleaved on both chips (writes stripe round-robin),
    // so GC victims hold shared pages.
    for i in (0..n / 4).step_by(2) {
        for lpn in [i, i + 1, n / 4 + i, n / 4 + i + 1].into_iter().filter(|&l| l < n / 2) {
            h.apply(&Op::Write { lpn, fill: lpn as u8, tagged: lpn % 2 == 0 }).unwrap();
        }
    }
    let before = h.ftl.counters();
    let pairs: Vec<(u32, u32)> = (0..n / 4).map(|i| (n / 2 + i, i)).collect();
    h.apply(&Op::Remap { pairs: pairs.clone() }).unwrap();
    let spent = h.ftl.counters().since(&before);
    assert_eq!(spent.remaps, pairs.len() as u64);
    assert_eq!(spent.flash_programs, spent.remap_records + spent.gc_page_migrations);
    assert_eq!(spent.remap_records, (pairs.len() as u64).div_ceil(41));
    // Churn the sources' neighbours so GC moves the shared pages many times.
    let mut x = 1u64;
    for k in 0..20 * n {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let r = ((x >> 33) % (n as u64 / 2)) as u32;
        let lpn = if r < n / 4 { n / 4 + r } else { n / 2 + r };
        h.apply(&Op::Write { lpn, fill: k as u8, tagged: false }).unwrap();
    }
    assert!(h.ftl.counters().gc_page_migrations > 0);
    h.check_all(&Vec::new());
    let mut h = h.restart();
    h.check_all(&Vec::new());
    // Overwriting the sources leaves the destinations their shared bytes.
    for lpn in 0..n / 4 {
        h.apply(&Op::Trim { lpn }).unwrap();
    }
    let mut h = h.restart();
    h.check_all(&Vec::new());
}

/// A batch's source OOB reads go to their chips together: sixteen pairs whose sources
/// lie on both chips take about eight reads more than one pair, not fifteen.
#[test]
fn a_remap_batch_reads_its_sources_on_every_chip_at_once() {
    let g = geometry(64);
    // An OOB read of an SLC page (every page an LSB page).
    let read = g.latencies.read_ns[0] + g.latencies.transfer_ns(g.oob_bytes as usize);
    let batch = |n: u32| {
        let mut ftl = fresh(&config(VictimPolicy::Greedy), None, 0);
        let mut idle = 0;
        // Writes stripe round-robin, so the sources alternate between the two chips.
        for lpn in 0..n {
            idle = idle.max(ftl.write(lpn, &[lpn as u8; PAGE], 0).unwrap().end_ns);
        }
        let pairs: Vec<(u32, u32)> = (0..n).map(|i| (n + i, i)).collect();
        let timing = ftl.remap(&pairs, idle).unwrap().expect("the page FTL remaps");
        timing.end_ns - idle
    };
    let (one, sixteen) = (batch(1), batch(16));
    assert!(sixteen <= one + 8 * read, "16 pairs took {sixteen} ns, 1 pair {one} ns, a read {read} ns");
    assert!(sixteen >= one + 7 * read, "each chip still serves its reads in turn: {sixteen} ns against {one} ns");
}

#[test]
fn remap_refusals_name_the_problem() {
    let mut ftl = fresh(&config(VictimPolicy::Greedy), None, 0);
    let err = ftl.remap(&[(1, 2)], 0).unwrap_err().to_string();
    assert!(err.contains("source logical page 2") && err.contains("not mapped"), "{err}");
    ftl.write(2, &[7; PAGE], 0).unwrap();
    let err = ftl.remap(&[(1, 2), (1, 2)], 0).unwrap_err().to_string();
    assert!(err.contains("appears twice"), "{err}");
    let err = ftl.remap(&[(1, 2), (2, 3)], 0).unwrap_err().to_string();
    assert!(err.contains("both a source and a destination"), "{err}");
    let err = ftl.remap(&[(1, u32::MAX)], 0).unwrap_err().to_string();
    assert!(err.contains("out of range"), "{err}");
    // A device whose OOB cannot hold the tagged header refuses tags and remaps.
    let storage = MemoryStorage::new(geometry(32), true);
    let mut small = ftl::format(Device::new(Box::new(storage)), &config(VictimPolicy::Greedy)).unwrap();
    let err = small.write_tagged(0, &[1; PAGE], &[0; TAG_BYTES], 0).unwrap_err().to_string();
    assert!(err.contains("OOB of at least 52 bytes"), "{err}");
    // Other FTLs refuse remapping.
    let storage = MemoryStorage::new(geometry(64), true);
    let dftl_config = FtlConfig { kind: FtlKind::Dftl, ..config(VictimPolicy::Greedy) };
    let mut dftl = ftl::format(Device::new(Box::new(storage)), &dftl_config).unwrap();
    assert!(dftl.remap(&[(0, 1)], 0).unwrap_err().to_string().contains("cannot remap"));
}
