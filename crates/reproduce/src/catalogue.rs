//! The catalogue: every table and figure of the four papers that has numbers, by id
//! (`ipa:table7`), with a one-line description and, once implemented, its
//! implementation ([`crate::experiment`]) in the module of its paper.
//!
//! The cells an experiment computes are named exactly as its rows in the reference file
//! (a test checks both ways); the values the paper gives are not here.

use crate::experiment::{Experiment, Implementation, Ours, Results, RunSpec, Scale};
use crate::{buffer_plot, ipa, ipa_ipl, ipl, linkbench, nolgn};

/// A NoLgn figure: its runs, cells and host-stack ablation, with the NoLgn notes.
const fn nolgn_figure(
    id: &'static str,
    description: &'static str,
    runs: fn(Scale) -> Vec<RunSpec>,
    cells: fn(&Results) -> Vec<Ours>,
) -> Experiment {
    Experiment {
        id,
        description,
        implementation: Some(Implementation::new(runs, cells).notes(nolgn::notes).ablation(nolgn::VARIANTS)),
    }
}

/// Every experiment, in the papers' order.
pub static CATALOGUE: &[Experiment] = &[
    Experiment {
        id: "ipa:table1",
        description: "IPA Table 1: update sizes (changed bytes per page write) in TPC-B, TPC-C, LinkBench at a 75% buffer",
        implementation: Some(Implementation::new(ipa::table1_runs, ipa::table1_cells).notes(ipa::table1_notes).ablation(ipa::TABLE1_VARIANTS)),
    },
    Experiment {
        id: "ipa:table2",
        description: "IPA Table 2: IPA [2x3]/[2x4] vs In-Page Logging: I/O write and read amplification, erases (TPC-B, TPC-C, TATP)",
        implementation: Some(
            Implementation::new(ipa_ipl::table2_runs, ipa_ipl::table2_cells)
                .notes(ipa_ipl::table2_notes)
                .ablation(ipa_ipl::TABLE2_VARIANTS),
        ),
    },
    Experiment {
        id: "ipa:table3",
        description: "IPA Table 3: [NxM] sensitivity: share of update I/Os as appends, space overhead, erase reduction (TPC-C, LinkBench)",
        implementation: Some(Implementation::new(ipa::table3_runs, ipa::table3_cells)
            .notes(ipa::table3_notes)
            .ablation(ipa::PRECONDITION_VARIANTS)
            .explain(ipa::table3_explain)),
    },
    Experiment {
        id: "ipa:table4",
        description: "IPA Table 4: reduction of DBMS write amplification, [2xM] and [3xM] at 75% and 90% buffers (TPC-B, TPC-C, LinkBench)",
        implementation: Some(Implementation::new(ipa::table4_runs, ipa::table4_cells)
            .notes(ipa::table4_notes)
            .ablation(ipa::TABLE4_VARIANTS)
            .explain(ipa::table4_explain)),
    },
    Experiment {
        id: "ipa:table5",
        description: "IPA Table 5: LinkBench space overhead and DBMS write-amplification reduction, [Nx100] and [Nx125], buffers 20-90%",
        implementation: Some(Implementation::new(ipa::table5_runs, ipa::table5_cells)
            .notes(ipa::table5_notes)
            .ablation(ipa::LINKBENCH_UPDATE_VARIANTS)
            .explain(ipa::table5_explain)),
    },
    Experiment {
        id: "ipa:table6",
        description: "IPA Table 6: TPC-B on OpenSSD (MLC, 1.5% buffer), [0x0] vs [2x4] in pSLC and odd-MLC mode",
        implementation: Some(Implementation::new(ipa::table6_runs, ipa::table6_cells)
            .notes(ipa::table6_notes)
            .ablation(ipa::BOARD_VARIANTS)
            .explain(ipa::gc_totals_explain)),
    },
    Experiment {
        id: "ipa:table7",
        description: "IPA Table 7: TPC-B on the flash emulator (SLC), [0x0] vs [2x4] and [3x4], buffers 10% and 20%",
        implementation: Some(Implementation::new(ipa::table7_runs, ipa::table7_cells).notes(ipa::table7_notes).ablation(ipa::TABLE7_VARIANTS)),
    },
    Experiment {
        id: "ipa:table8",
        description: "IPA Table 8: TPC-C on OpenSSD (MLC, 1.5% buffer), [0x0] vs [2x3] in pSLC and odd-MLC mode",
        implementation: Some(Implementation::new(ipa::table8_runs, ipa::table8_cells)
            .notes(ipa::table8_notes)
            .ablation(ipa::BOARD_VARIANTS)
            .explain(ipa::gc_totals_explain)),
    },
    Experiment {
        id: "ipa:table9",
        description: "IPA Table 9: TPC-C, eager eviction, [0x0] vs [2x3], buffers 10-90%",
        implementation: Some(Implementation::new(ipa::table9_runs, ipa::table9_cells).notes(ipa::table9_notes).ablation(ipa::TABLE9_VARIANTS).plot(buffer_plot::effects_by_buffer)),
    },
    Experiment {
        id: "ipa:table10",
        description: "IPA Table 10: TPC-C, non-eager eviction and late checkpoints, [0x0] vs [2xM], buffers 10-90%",
        implementation: Some(
            Implementation::new(ipa::table10_runs, ipa::table10_cells).notes(ipa::table10_notes).ablation(ipa::TABLE10_VARIANTS).plot(buffer_plot::effects_by_buffer),
        ),
    },
    Experiment {
        id: "ipa:fig6",
        description: "IPA Fig. 6: share of update I/Os performed as in-place appends in LinkBench",
        implementation: Some(
            Implementation::new(linkbench::fig6_runs, linkbench::fig6_cells)
                .notes(linkbench::fig6_notes)
                .plot(linkbench::fig6_plot)
                .ablation(ipa::LINKBENCH_UPDATE_VARIANTS),
        ),
    },
    Experiment {
        id: "ipa:appendix-a",
        description: "IPA appendix A, Table 11: TPC-C update sizes under non-eager eviction, buffers 10-90%",
        implementation: Some(Implementation::new(ipa::appendix_a_runs, ipa::appendix_a_cells).notes(ipa::appendix_a_notes).ablation(ipa::APPENDIX_A_VARIANTS)),
    },
    Experiment {
        id: "demo:table1",
        description: "IPA demo Table I: TATP on OpenSSD, [0x0] vs [2x3] on subscriber and special_facility only (regions)",
        implementation: Some(Implementation::new(ipa::demo_table1_runs, ipa::demo_table1_cells)
            .notes(ipa::demo_table1_notes)
            .ablation(ipa::DEMO_VARIANTS)
            .explain(ipa::gc_totals_explain)),
    },
    Experiment {
        id: "ipl:table3",
        description: "IPL Table 3: 1,000,000 random inserts: elapsed time and flash reads, writes, erases per B+-tree",
        implementation: Some(Implementation::new(ipl::table3_runs, ipl::table3_cells).notes(ipl::table3_notes).ablation(ipl::TABLE3_VARIANTS)),
    },
    Experiment {
        id: "ipl:table4",
        description: "IPL Table 4: read overhead of the IPL B+-tree against the B+-tree on an FTL",
        implementation: Some(Implementation::new(ipl::table4_runs, ipl::table4_cells).notes(ipl::table4_notes).ablation(ipl::TABLE3_VARIANTS)),
    },
    Experiment {
        id: "ipl:fig6",
        description: "IPL Fig. 6: flash operations of the B+-trees on BAST, FAST and IPL by buffer size",
        implementation: Some(
            Implementation::new(ipl::fig6_runs, ipl::fig6_cells)
                .notes(ipl::fig6_notes)
                .plot(ipl::fig6_plot)
                .ablation(ipl::FIG6_VARIANTS),
        ),
    },
    nolgn_figure("nolgn:fig6", "NoLgn Fig. 6: flash page writes of Base-WAL, SW-WAL and NoLgn-FTL (sqlite-bench overwrite)", nolgn::sweep_runs, nolgn::fig6_cells),
    nolgn_figure("nolgn:fig7", "NoLgn Fig. 7: SQLite throughput on Base-WAL, SW-WAL and NoLgn-FTL", nolgn::sweep_runs, nolgn::fig7_cells),
    nolgn_figure("nolgn:fig8", "NoLgn Fig. 8: SQLite latency on Base-WAL, SW-WAL and NoLgn-FTL", nolgn::sweep_runs, nolgn::fig8_cells),
    nolgn_figure("nolgn:fig9", "NoLgn Fig. 9: GC overhead: share of page migrations, with and without block locking", nolgn::fig9_runs, nolgn::fig9_cells),
    nolgn_figure("nolgn:fig10", "NoLgn Fig. 10: SQLite throughput on YCSB A-F", nolgn::fig10_runs, nolgn::fig10_cells),
    nolgn_figure("nolgn:fig11", "NoLgn Fig. 11: SQLite on TPC-C by free space", nolgn::fig11_runs, nolgn::fig11_cells),
];

/// The experiment of an id.
pub fn find(id: &str) -> Option<&'static Experiment> {
    CATALOGUE.iter().find(|e| e.id == id)
}
