//! A short torture run: power cuts spread over a bank workload, with and without IPA.
//! The oracle is what the workload was told (`workloads::bank`): every transfer
//! acknowledged durable before a cut must be found after it, and cuts late in a run
//! must have acknowledged transfers to find.

mod common;

use workloads::bank::{count_operations, run_cut, BankConfig, CutKinds, CutResult};

fn config(ipa: &str) -> BankConfig {
    BankConfig {
        geometry: common::geometry(48, 16),
        accounts: 3000,
        transfers: 400,
        abort_share: 0.1,
        ipa: ipa.into(),
        ipa_mode: "slc".into(),
        buffer_pages: 16,
        group_commit_ns: 0,
        log_buffer_bytes: None,
        db_page_bytes: None,
        ipl: None,
        ftl: None,
    }
}

/// Cuts at growing operation counts of one seed: the runs agree up to the earlier cut,
/// so the acknowledged transfers never shrink, and every cut in the run's second half
/// has some to check.
struct Acknowledged {
    run_ops: u64,
    last: usize,
}

impl Acknowledged {
    fn new(run_ops: u64) -> Acknowledged {
        Acknowledged { run_ops, last: 0 }
    }

    fn follow(&mut self, what: &str, result: &CutResult) {
        let (cut, n) = (result.cut_at, result.acknowledged);
        assert!(n >= self.last, "{what} cut at +{cut}: {n} transfers acknowledged, an earlier cut had {}", self.last);
        assert!(cut < self.run_ops / 2 || n > 0, "{what} cut at +{cut} of {}: no transfer acknowledged", self.run_ops);
        self.last = n;
    }
}

#[test]
fn power_cuts_lose_no_committed_transfer() {
    // With 16 frames the cleaner writes a page at nearly every commit, forcing the log
    // before `commit` returns; with 256 it seldom does, so only the commit's own force,
    // or its group's flush, makes it durable. The last: every full log page written as
    // soon as it fills.
    for (ipa, group_commit_ns, buffer_pages, log_buffer_bytes) in [
        ("0x0", 0, 16, None),
        ("2x4", 0, 256, None),
        ("2x4", 60_000, 16, None),
        ("2x4", 60_000, 256, None),
        ("2x4", 60_000, 16, Some(0)),
    ] {
        let config = BankConfig { group_commit_ns, buffer_pages, log_buffer_bytes, ..config(ipa) };
        let (load_ops, run_ops) = count_operations(&config, 1).unwrap();
        assert!(run_ops > 100, "{ipa}: the run makes {run_ops} flash operations");
        let mut kinds = CutKinds::default();
        let mut failures = Vec::new();
        let mut acknowledged = Acknowledged::new(run_ops);
        for k in 0..30u64 {
            let cut_after = 1 + k * run_ops / 30;
            // Every third cut also cuts the restart that follows it.
            let recovery_cut = (k % 3 == 2).then_some(1 + k % 7);
            let result = run_cut(&config, 1, load_ops, cut_after, recovery_cut, &mut kinds);
            let what = format!("{ipa}, {group_commit_ns} ns window, {buffer_pages} frames");
            acknowledged.follow(&what, &result);
            if let Err(e) = result.outcome {
                failures.push(format!("{what}, cut at +{cut_after}: {e}"));
            }
        }
        assert!(failures.is_empty(), "{failures:#?}");
        assert!(kinds.missed == 0 && kinds.restarts_cut > 0, "{ipa}: {kinds:?}");
        assert!(kinds.log_writes > 0 && kinds.out_of_place_writes > 0, "{ipa}: {kinds:?}");
        if ipa != "0x0" {
            assert!(kinds.write_deltas > 0, "{ipa}: no cut hit an append: {kinds:?}");
        }
    }
}

/// DB pages of 2 and 4 flash pages (written as atomic groups), IPA on and off: a cut
/// between the parts of a page write loses nothing committed.
#[test]
fn power_cuts_between_the_flash_pages_of_a_db_page_lose_nothing() {
    for (db_page_bytes, ipa) in [(8192, "0x0"), (8192, "2x4"), (16384, "0x0"), (16384, "2x4")] {
        let config = BankConfig { db_page_bytes: Some(db_page_bytes), accounts: 1500, transfers: 200, ..config(ipa) };
        let (load_ops, run_ops) = count_operations(&config, 2).unwrap();
        let mut kinds = CutKinds::default();
        let mut failures = Vec::new();
        let mut acknowledged = Acknowledged::new(run_ops);
        for k in 0..16u64 {
            let cut_after = 1 + k * run_ops / 16;
            let recovery_cut = (k % 4 == 3).then_some(1 + k % 5);
            let result = run_cut(&config, 2, load_ops, cut_after, recovery_cut, &mut kinds);
            acknowledged.follow(&format!("{db_page_bytes}-byte pages, {ipa}"), &result);
            if let Err(e) = result.outcome {
                failures.push(format!("{db_page_bytes}-byte pages, {ipa}, cut at +{cut_after}: {e}"));
            }
        }
        assert!(failures.is_empty(), "{failures:#?}");
        assert!(kinds.out_of_place_writes > 0, "{db_page_bytes} {ipa}: {kinds:?}");
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 12, ..Default::default() })]

    /// Random transfer mixes (seed), abort shares and crash points never lose a committed
    /// transfer or keep an uncommitted one.
    #[test]
    fn random_crash_points_never_lose_a_commit(seed in 0u64..1000, cut in 0.0f64..1.0, aborts in 0.0f64..0.5, ipa in proptest::bool::ANY) {
        let mut config = config(if ipa { "2x3" } else { "0x0" });
        config.accounts = 800;
        config.transfers = 150;
        config.abort_share = aborts;
        let (load_ops, run_ops) = count_operations(&config, seed).unwrap();
        let cut_after = 1 + (cut * run_ops as f64) as u64;
        let result = run_cut(&config, seed, load_ops, cut_after, None, &mut CutKinds::default());
        proptest::prop_assert!(result.outcome.is_ok(), "seed {seed} cut +{cut_after}: {:?}", result.outcome.err());
    }
}

/// The engine without a log on NoLgn-FTL: uncommitted pages the 16-frame pool steals
/// are rolled back by the FTL's recovery scan, commits survive, aborts are the FTL's.
#[test]
fn power_cuts_on_nolgn_ftl_lose_no_commit_and_keep_nothing_uncommitted() {
    let ftl = flash::ftl::FtlConfig::new(flash::ftl::FtlKind::Nolgn);
    let config = BankConfig { ftl: Some(ftl), accounts: 1500, transfers: 300, ..config("0x0") };
    let (load_ops, run_ops) = count_operations(&config, 3).unwrap();
    let mut kinds = CutKinds::default();
    let mut failures = Vec::new();
    let mut acknowledged = Acknowledged::new(run_ops);
    for k in 0..30u64 {
        let cut_after = 1 + k * run_ops / 30;
        let result = run_cut(&config, 3, load_ops, cut_after, None, &mut kinds);
        // Each commit is durable when it returns: late cuts have acknowledged ones to check.
        acknowledged.follow("NoLgn-FTL", &result);
        if let Err(e) = result.outcome {
            failures.push(format!("cut at +{cut_after}: {e}"));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
    assert!(kinds.out_of_place_writes > 0 && kinds.log_writes == 0, "{kinds:?}");
}
