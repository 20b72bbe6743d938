//! NoLgn-FTL against a model: interleaved transactions (writes, commits, aborts),
//! plain writes and trims, GC pressure from a small device, clean restarts and power
//! cuts at every mutating flash operation. After every recovery the device must equal
//! the model with only committed transactions applied (a transaction whose end page
//! was being programmed at the cut may be either); refusals (P2P table full, a page
//! held by another transaction) must come exactly when the model predicts them.

use flash::ftl::{Ftl, FtlConfig, FtlKind, NolgnFtl};
use flash::{Error, VictimPolicy};
use nand::{Device, FaultyStorage, Geometry, MemoryStorage};
use proptest::prelude::*;
use std::collections::HashMap;

use support::geometry::small_geometry;

mod support {
    pub mod geometry;
}

const PAGE: usize = 256;
const LPNS: u32 = 40;
const P2P: u32 = 8;

fn geometry(chips: u32, blocks_per_chip: u32, pages_per_block: u32) -> Geometry {
    Geometry { channels: chips, blocks_per_chip, pages_per_block, ..small_geometry(PAGE as u32) }
}

fn config(op: f64) -> FtlConfig {
    let mut c = FtlConfig::new(FtlKind::Nolgn);
    c.over_provisioning = op;
    c.p2p_entries = P2P;
    c.gc.policy = VictimPolicy::Greedy;
    c
}

fn fresh(cut_at: Option<u64>, seed: u64) -> NolgnFtl {
    let storage = FaultyStorage::new(MemoryStorage::new(geometry(2, 12, 8), true), cut_at, seed);
    NolgnFtl::format(Device::new(Box::new(storage)), &config(0.4)).unwrap()
}

fn reopen(ftl: NolgnFtl, now: u64) -> (NolgnFtl, u64) {
    let mut device = Box::new(ftl).into_device();
    device.power_on();
    NolgnFtl::open(device, &config(0.4), now).unwrap()
}

#[derive(Clone, Debug)]
enum Op {
    Begin,
    WriteTx { slot: usize, lpn: u32, fill: u8, end: bool },
    Commit { slot: usize },
    Abort { slot: usize },
    Write { lpn: u32, fill: u8 },
    Trim { lpn: u32 },
    Restart,
}

fn op() -> impl Strategy<Value = Op> {
    let lpn = prop_oneof![3 => 0..LPNS / 4, 1 => 0..LPNS];
    prop_oneof![
        2 => Just(Op::Begin),
        8 => (0..3usize, lpn.clone(), any::<u8>(), prop::bool::weighted(0.25))
            .prop_map(|(slot, lpn, fill, end)| Op::WriteTx { slot, lpn, fill, end }),
        2 => (0..3usize).prop_map(|slot| Op::Commit { slot }),
        1 => (0..3usize).prop_map(|slot| Op::Abort { slot }),
        6 => (lpn.clone(), any::<u8>()).prop_map(|(lpn, fill)| Op::Write { lpn, fill }),
        1 => lpn.prop_map(|lpn| Op::Trim { lpn }),
        1 => Just(Op::Restart),
    ]
}

fn page(lpn: u32, fill: u8, version: u32) -> Vec<u8> {
    let mut p = vec![fill; PAGE];
    p[..4].copy_from_slice(&lpn.to_le_bytes());
    p[4..8].copy_from_slice(&version.to_le_bytes());
    p
}

/// An open transaction of the model: its tid, its pages, whether its end page is on flash.
struct Tx {
    tid: u32,
    pages: HashMap<u32, Vec<u8>>,
    ended: bool,
}

type Pages = HashMap<u32, Option<Vec<u8>>>;

/// What a cut operation may or may not have done.
enum InFlight {
    Page(u32, Option<Vec<u8>>),
    /// The end page of a transaction: all its pages, or none.
    Commit(Pages),
}

struct Harness {
    ftl: NolgnFtl,
    /// Durable contents: committed (or ended) transactions and plain writes.
    model: Pages,
    open: Vec<Tx>,
    now: u64,
    version: u32,
}

fn is_cut(e: &Error) -> bool {
    matches!(e, Error::Device(nand::Error::PowerLost))
}

impl Harness {
    fn new(ftl: NolgnFtl) -> Harness {
        Harness { ftl, model: HashMap::new(), open: Vec::new(), now: 0, version: 0 }
    }

    fn holder(&self, lpn: u32) -> Option<usize> {
        self.open.iter().position(|t| t.pages.contains_key(&lpn))
    }

    /// What a read shows now: an open transaction's page, else the durable one.
    fn visible(&self, lpn: u32) -> Option<Vec<u8>> {
        match self.holder(lpn) {
            Some(i) => self.open[i].pages.get(&lpn).cloned(),
            None => self.model.get(&lpn).cloned().flatten(),
        }
    }

    /// Runs one op; on a power cut returns what was in flight.
    fn apply(&mut self, op: &Op) -> Result<(), Option<InFlight>> {
        self.now += 1_000;
        self.version += 1;
        let now = self.now;
        match *op {
            Op::Begin => {
                if self.open.len() < 2 {
                    let tid = self.ftl.begin_tx().unwrap();
                    assert!(self.open.iter().all(|t| t.tid < tid), "tids grow");
                    self.open.push(Tx { tid, pages: HashMap::new(), ended: false });
                }
                Ok(())
            }
            Op::WriteTx { slot, lpn, fill, end } => {
                if self.open.is_empty() {
                    return Ok(());
                }
                let i = slot % self.open.len();
                let p = page(lpn, fill, self.version);
                let holder = self.holder(lpn);
                let used: usize = self.open.iter().map(|t| t.pages.len()).sum();
                let tx = &self.open[i];
                let refused = tx.ended
                    || holder.is_some_and(|h| h != i)
                    || (!tx.pages.contains_key(&lpn) && used >= P2P as usize);
                match self.ftl.write_tx(lpn, &p, tx.tid, end, now) {
                    Ok(_) => {
                        assert!(!refused, "write_tx of lpn {lpn} should have been refused");
                        let tx = &mut self.open[i];
                        tx.pages.insert(lpn, p);
                        tx.ended = end;
                        if end {
                            // Durable now: the end page is on flash.
                            let pages = tx.pages.clone();
                            self.model.extend(pages.into_iter().map(|(l, p)| (l, Some(p))));
                        }
                        Ok(())
                    }
                    Err(e) if is_cut(&e) => {
                        if end && !refused {
                            let mut pages: Pages =
                                self.open[i].pages.iter().map(|(&l, p)| (l, Some(p.clone()))).collect();
                            pages.insert(lpn, Some(p));
                            Err(Some(InFlight::Commit(pages)))
                        } else {
                            Err(None)
                        }
                    }
                    Err(e) => {
                        assert!(refused, "write_tx of lpn {lpn} refused: {e}");
                        assert!(matches!(e, Error::P2pFull { .. } | Error::Transaction { .. }), "{e}");
                        Ok(())
                    }
                }
            }
            Op::Commit { slot } => {
                if self.open.is_empty() {
                    return Ok(());
                }
                let i = slot % self.open.len();
                let tx = &self.open[i];
                let refused = !tx.ended && !tx.pages.is_empty();
                match self.ftl.commit(tx.tid, now) {
                    Ok(()) => {
                        assert!(!refused, "commit before the end page");
                        self.open.remove(i);
                    }
                    Err(e) => assert!(refused && matches!(e, Error::Transaction { .. }), "{e}"),
                }
                assert_eq!(self.ftl.p2p_used() as usize, self.open.iter().map(|t| t.pages.len()).sum::<usize>());
                Ok(())
            }
            Op::Abort { slot } => {
                if self.open.is_empty() {
                    return Ok(());
                }
                let i = slot % self.open.len();
                let tx = &self.open[i];
                match self.ftl.abort(tx.tid, now) {
                    Ok(()) => {
                        assert!(!tx.ended, "abort after the end page");
                        self.open.remove(i);
                    }
                    Err(e) => assert!(tx.ended && matches!(e, Error::Transaction { .. }), "{e}"),
                }
                if self.open.is_empty() {
                    assert_eq!(self.ftl.locked_blocks(), 0, "no open transaction holds a lock");
                }
                Ok(())
            }
            Op::Write { lpn, fill } => {
                let p = page(lpn, fill, self.version);
                let refused = self.holder(lpn).is_some();
                match self.ftl.write(lpn, &p, now) {
                    Ok(_) => {
                        assert!(!refused);
                        self.model.insert(lpn, Some(p));
                        Ok(())
                    }
                    Err(e) if is_cut(&e) => Err(Some(InFlight::Page(lpn, Some(p)))),
                    Err(e) => {
                        assert!(refused && matches!(e, Error::Transaction { .. }), "{e}");
                        Ok(())
                    }
                }
            }
            Op::Trim { lpn } => {
                let refused = self.holder(lpn).is_some();
                match self.ftl.trim(lpn, now) {
                    Ok(_) => {
                        assert!(!refused);
                        self.model.insert(lpn, None);
                        Ok(())
                    }
                    Err(e) if is_cut(&e) => Err(Some(InFlight::Page(lpn, None))),
                    Err(e) => {
                        assert!(refused && matches!(e, Error::Transaction { .. }), "{e}");
                        Ok(())
                    }
                }
            }
            Op::Restart => Err(None),
        }
    }

    /// Every logical page reads as the model, or, for the operation in flight, as it
    /// would have left it (then adopted by the model).
    fn check_all(&mut self, in_flight: Option<InFlight>) {
        let got: Pages = (0..self.ftl.logical_pages())
            .map(|lpn| (lpn, self.ftl.read(lpn, self.now).unwrap().map(|r| r.data.to_vec())))
            .collect();
        let expect = |model: &Pages, lpn: u32| model.get(&lpn).cloned().flatten();
        let mut with = self.model.clone();
        match in_flight {
            Some(InFlight::Page(lpn, new)) if got[&lpn] == new => {
                with.insert(lpn, new);
            }
            Some(InFlight::Commit(pages)) if pages.iter().all(|(l, p)| got[l] == *p) => with.extend(pages),
            _ => {}
        }
        for lpn in 0..self.ftl.logical_pages() {
            assert_eq!(got[&lpn], expect(&with, lpn), "lpn {lpn} after recovery");
        }
        self.model = with;
        assert_eq!(self.ftl.p2p_used(), 0);
        assert_eq!(self.ftl.locked_blocks(), 0);
    }

    fn check_visible(&mut self) {
        for lpn in 0..LPNS {
            let got = self.ftl.read(lpn, self.now).unwrap().map(|r| r.data.to_vec());
            assert_eq!(got, self.visible(lpn), "lpn {lpn} while running");
        }
    }

    fn restart(mut self, in_flight: Option<InFlight>) -> Harness {
        let (ftl, now) = reopen(self.ftl, self.now);
        self.ftl = ftl;
        self.now = now;
        self.open.clear();
        self.check_all(in_flight);
        self
    }
}

/// Runs `ops` with power failing at mutating operation `cut_at` (restarting cleanly
/// at each `Restart`), then recovers and checks, then runs `after` and checks again.
fn run(ops: &[Op], cut_at: Option<u64>, seed: u64) -> u64 {
    let mut h = Harness::new(fresh(cut_at, seed));
    for (n, op) in ops.iter().enumerate() {
        match h.apply(op) {
            Ok(()) => {
                if n % 16 == 0 {
                    h.check_visible();
                }
            }
            Err(None) if matches!(op, Op::Restart) => h = h.restart(None),
            // Powering on disarms the cut: the rest runs uncut.
            Err(flight) => h = h.restart(flight),
        }
    }
    h.check_visible();
    let c = h.ftl.device().counters();
    if cut_at.is_none() && ops.len() >= 500 {
        assert!(c.erases > 0, "GC ran");
    }
    h.restart(None);
    c.page_programs + c.copybacks + c.erases
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Power fails at a random mutating operation (or never).
    #[test]
    fn nolgn_matches_the_model_through_cuts(
        ops in prop::collection::vec(op(), 200..700),
        fraction in 0.0f64..1.1,
        seed in any::<u64>(),
    ) {
        let total = run(&ops, None, seed);
        run(&ops, Some(1 + (fraction * total as f64) as u64), seed);
    }
}

/// One seeded sequence, cut at every mutating flash operation it does.
#[test]
fn nolgn_survives_a_cut_at_every_operation() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::{Config, TestRunner};
    let mut runner = TestRunner::new_with_rng(
        Config::default(),
        proptest::test_runner::TestRng::deterministic_rng(proptest::test_runner::RngAlgorithm::ChaCha),
    );
    let ops = prop::collection::vec(op(), 500).new_tree(&mut runner).unwrap().current();
    let total = run(&ops, None, 7);
    assert!(total > 250, "the sequence does {total} flash operations");
    for cut in 1..=total {
        run(&ops, Some(cut), cut);
    }
}

/// Lock bits by hand: one chip of 8 blocks × 4 pages, greedy GC, foreground and
/// background threshold 2 free blocks, 16 logical pages.
#[test]
fn lock_bits_divert_gc_and_are_counted() {
    let mut c = config(0.5);
    c.gc.foreground_free_blocks = 2;
    c.gc.background_free_blocks = 2;
    let mut ftl = NolgnFtl::format(Device::new(Box::new(MemoryStorage::new(geometry(1, 8, 4), true))), &c).unwrap();
    let mut now = 0;
    let mut w = |ftl: &mut NolgnFtl, lpn: u32| {
        now += 1_000;
        ftl.write(lpn, &page(lpn, 1, now as u32), now).unwrap();
    };
    // Block 0: lpns 0-3; block 1: 1-4 (block 0 keeps only lpn 0 valid);
    // block 2: 3-6 (block 1 keeps 1 and 2).
    for lpn in [0, 1, 2, 3, 1, 2, 3, 4, 3, 4, 5, 6] {
        w(&mut ftl, lpn);
    }
    // Block 3: lpn 0 in a transaction (block 0 locked: it holds the old version), 10-12.
    let tid = ftl.begin_tx().unwrap();
    ftl.write_tx(0, &page(0, 2, 99), tid, true, 20_000).unwrap();
    assert_eq!(ftl.locked_blocks(), 1);
    // Block 4: 13-15, 7; block 5: 8-11 (block 3 keeps lpn 0 and 12 valid). Opening
    // block 6 (2 free blocks left) runs foreground GC until 3 are free. Greedy wants
    // block 0 (1 valid) but it is locked: block 1 goes (2 valid, 1 more than block 0),
    // then block 3 (2 valid, 1 more; its uncommitted lpn 0 moves with its metadata).
    for lpn in [10, 11, 12, 13, 14, 15, 7, 8, 9, 10, 11, 12] {
        w(&mut ftl, lpn);
    }
    let k = ftl.counters();
    assert_eq!((k.gc_page_migrations, k.gc_erases, k.gc_lock_migrations, k.gc_tx_migrations), (4, 2, 2, 1));
    ftl.commit(tid, 40_000).unwrap();
    assert_eq!(ftl.locked_blocks(), 0);
    assert_eq!(ftl.read(0, 50_000).unwrap().map(|r| r.data.to_vec()), Some(page(0, 2, 99)));
}

/// The allocation of a transactional write may run GC; the old version's block is
/// locked before it, so GC cannot move the page the P2P entry names. Same device as
/// above.
#[test]
fn a_write_tx_whose_allocation_collects_keeps_its_old_version() {
    let mut c = config(0.5);
    c.gc.foreground_free_blocks = 2;
    c.gc.background_free_blocks = 2;
    let mut ftl = NolgnFtl::format(Device::new(Box::new(MemoryStorage::new(geometry(1, 8, 4), true))), &c).unwrap();
    let original = page(0, 1, 0);
    ftl.write(0, &original, 1_000).unwrap();
    // Blocks 0-5; afterwards blocks 0 and 4 hold one valid page each (lpn 0, lpn 4),
    // blocks 1 and 3 three, and 2 free blocks are left.
    for (i, lpn) in
        [1, 2, 3, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 4, 13, 14, 15, 9].into_iter().enumerate()
    {
        ftl.write(lpn, &page(lpn, 1, i as u32 + 1), 2_000).unwrap();
    }
    assert_eq!(ftl.counters().gc_erases, 0);
    // Opening block 6 collects: greedy wants block 0 (lpn 0's old version) but it is
    // locked: block 4 goes (1 valid, as many as block 0), then block 1 (3 valid, 2 more).
    let tid = ftl.begin_tx().unwrap();
    ftl.write_tx(0, &page(0, 2, 99), tid, false, 3_000).unwrap();
    let k = ftl.counters();
    assert_eq!((k.gc_page_migrations, k.gc_erases, k.gc_lock_migrations), (4, 2, 2));
    ftl.abort(tid, 4_000).unwrap();
    assert_eq!(ftl.read(0, 5_000).unwrap().map(|r| r.data.to_vec()), Some(original));
}
