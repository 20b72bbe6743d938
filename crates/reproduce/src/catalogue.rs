//! The catalogue: every table and figure of the four papers that has numbers, by id
//! (`ipa:table7`), with a one-line description and, once implemented, the runs it needs
//! and how its cells are computed from their results.
//!
//! The cells an experiment computes are named exactly as its rows in the reference file
//! (a test checks both ways); the values the paper gives are not here.

use crate::ipa;
use serde_json::Value;
use workloads::ExperimentConfig;

/// How large the runs are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scale {
    /// Seconds per run: checks the plumbing, not the results (tests).
    Smoke,
    /// Minutes for the whole catalogue: small databases, short runs.
    Quick,
    /// The paper's scale as far as its text states it (see each experiment's runs).
    Full,
}

impl Scale {
    pub fn name(self) -> &'static str {
        match self {
            Scale::Smoke => "smoke",
            Scale::Quick => "quick",
            Scale::Full => "full",
        }
    }
}

/// One run an experiment needs: a label for the report, and the config alone that
/// reproduces it.
#[derive(Clone, Debug)]
pub struct RunSpec {
    pub label: String,
    pub config: ExperimentConfig,
}

/// One cell as our runs give it; `value` is `None` where a run failed or the cell
/// cannot be computed (a change against a baseline of 0).
#[derive(Clone, Debug, PartialEq)]
pub struct Ours {
    pub row: String,
    pub column: String,
    pub value: Option<f64>,
}

/// The results of an experiment's runs, in the order of its [`RunSpec`]s; `None` for a
/// run that failed.
pub type Results<'a> = [Option<&'a Value>];

/// How an implemented experiment runs.
pub struct Implementation {
    /// The runs at a scale.
    pub runs: fn(Scale) -> Vec<RunSpec>,
    /// The cells from the runs' results (one per [`RunSpec`], in order).
    pub cells: fn(&Results) -> Vec<Ours>,
    /// The conditions of the runs as far as the paper's text states them, and the
    /// assumptions where it does not: printed in the experiment's report.
    pub notes: &'static [&'static str],
}

/// One table or figure of a paper.
pub struct Experiment {
    pub id: &'static str,
    pub description: &'static str,
    /// `None`: listed with its reference values, not run yet.
    pub implementation: Option<Implementation>,
}

impl Experiment {
    pub fn implemented(&self) -> bool {
        self.implementation.is_some()
    }

    /// The id as a file name: `ipa:table7` → `ipa-table7`.
    pub fn file_stem(&self) -> String {
        self.id.replace(':', "-")
    }
}

const fn listed(id: &'static str, description: &'static str) -> Experiment {
    Experiment { id, description, implementation: None }
}

/// Every experiment, in the papers' order.
pub static CATALOGUE: &[Experiment] = &[
    Experiment {
        id: "ipa:table1",
        description: "IPA Table 1: update sizes (changed bytes per page write) in TPC-B, TPC-C, LinkBench at a 75% buffer",
        implementation: Some(Implementation { runs: ipa::table1_runs, cells: ipa::table1_cells, notes: ipa::TABLE1_NOTES }),
    },
    listed("ipa:table2", "IPA Table 2: IPA [2x4] vs In-Page Logging: I/O write and read amplification, erases (TPC-B, TPC-C, TATP)"),
    Experiment {
        id: "ipa:table3",
        description: "IPA Table 3: [NxM] sensitivity: share of update I/Os as appends, space overhead, erase reduction (TPC-C, LinkBench)",
        implementation: Some(Implementation { runs: ipa::table3_runs, cells: ipa::table3_cells, notes: ipa::TABLE3_NOTES }),
    },
    Experiment {
        id: "ipa:table4",
        description: "IPA Table 4: reduction of DBMS write amplification, [2xM] and [3xM] at 75% and 90% buffers (TPC-B, TPC-C, LinkBench)",
        implementation: Some(Implementation { runs: ipa::table4_runs, cells: ipa::table4_cells, notes: ipa::TABLE4_NOTES }),
    },
    Experiment {
        id: "ipa:table5",
        description: "IPA Table 5: LinkBench space overhead and DBMS write-amplification reduction, [Nx100] and [Nx125], buffers 20-90%",
        implementation: Some(Implementation { runs: ipa::table5_runs, cells: ipa::table5_cells, notes: ipa::TABLE5_NOTES }),
    },
    Experiment {
        id: "ipa:table6",
        description: "IPA Table 6: TPC-B on OpenSSD (MLC, 1.5% buffer), [0x0] vs [2x4] in pSLC and odd-MLC mode",
        implementation: Some(Implementation { runs: ipa::table6_runs, cells: ipa::table6_cells, notes: ipa::TABLE6_NOTES }),
    },
    Experiment {
        id: "ipa:table7",
        description: "IPA Table 7: TPC-B on the flash emulator (SLC), [0x0] vs [2x4] and [3x4], buffers 10% and 20%",
        implementation: Some(Implementation { runs: ipa::table7_runs, cells: ipa::table7_cells, notes: ipa::TABLE7_NOTES }),
    },
    Experiment {
        id: "ipa:table8",
        description: "IPA Table 8: TPC-C on OpenSSD (MLC, 1.5% buffer), [0x0] vs [2x3] in pSLC and odd-MLC mode",
        implementation: Some(Implementation { runs: ipa::table8_runs, cells: ipa::table8_cells, notes: ipa::TABLE8_NOTES }),
    },
    Experiment {
        id: "ipa:table9",
        description: "IPA Table 9: TPC-C, eager eviction, [0x0] vs [2x3], buffers 10-90%",
        implementation: Some(Implementation { runs: ipa::table9_runs, cells: ipa::table9_cells, notes: ipa::TABLE9_NOTES }),
    },
    Experiment {
        id: "ipa:table10",
        description: "IPA Table 10: TPC-C, non-eager eviction and late checkpoints, [0x0] vs [2xM], buffers 10-90%",
        implementation: Some(Implementation { runs: ipa::table10_runs, cells: ipa::table10_cells, notes: ipa::TABLE10_NOTES }),
    },
    listed("ipa:fig6", "IPA Fig. 6: share of update I/Os performed as in-place appends in LinkBench"),
    Experiment {
        id: "ipa:appendix-a",
        description: "IPA appendix A, Table 11: TPC-C update sizes under non-eager eviction, buffers 10-90%",
        implementation: Some(Implementation { runs: ipa::appendix_a_runs, cells: ipa::appendix_a_cells, notes: ipa::APPENDIX_A_NOTES }),
    },
    Experiment {
        id: "demo:table1",
        description: "IPA demo Table I: TATP on OpenSSD, [0x0] vs [2x3] on subscriber and special_facility only (regions)",
        implementation: Some(Implementation { runs: ipa::demo_table1_runs, cells: ipa::demo_table1_cells, notes: ipa::DEMO_TABLE1_NOTES }),
    },
    listed("ipl:table3", "IPL Table 3: 1,000,000 random inserts: elapsed time and flash reads, writes, erases per B+-tree"),
    listed("ipl:table4", "IPL Table 4: read overhead of the IPL B+-tree against the B+-tree on an FTL"),
    listed("ipl:fig6", "IPL Fig. 6: flash operations of the B+-trees on BAST, FAST and IPL by buffer size"),
    listed("nolgn:fig6", "NoLgn Fig. 6: flash page writes of Base-WAL, SW-WAL and NoLgn-FTL (sqlite-bench overwrite)"),
    listed("nolgn:fig7", "NoLgn Fig. 7: SQLite throughput on Base-WAL, SW-WAL and NoLgn-FTL"),
    listed("nolgn:fig8", "NoLgn Fig. 8: SQLite latency on Base-WAL, SW-WAL and NoLgn-FTL"),
    listed("nolgn:fig9", "NoLgn Fig. 9: GC overhead: share of page migrations, with and without block locking"),
    listed("nolgn:fig10", "NoLgn Fig. 10: SQLite throughput on YCSB A-F"),
    listed("nolgn:fig11", "NoLgn Fig. 11: SQLite on TPC-C by free space"),
];

/// The experiment of an id.
pub fn find(id: &str) -> Option<&'static Experiment> {
    CATALOGUE.iter().find(|e| e.id == id)
}
