//! The IPA paper's Fig. 6 (SIGMOD'17 §8.4): the share of update I/Os performed as
//! in-place appends in LinkBench.
//!
//! The figure's values are only in its image; its text states one range for the
//! tables and the figure together: "The first row [Out-of-Place Writes vs. In-Place
//! Appends] in Tables 6, 7, 8, 9, 10 and on Figure 6 shows that 30% to 76% of the DBMS
//! writes ([Host Write]) can be performed as In-Place Appends". So the reference has
//! that range's two ends, and ours are the least and most share on our curve.
//!
//! The runs are Table 5's (LinkBench on 8 KiB pages, buffers 20–90%, \[Nx100\] and
//! \[Nx125\] for N = 1..3; `ipa::table5_runs`), shared with it: the curve is each
//! scheme's share of host writes done as appends, by buffer size.

use crate::compare::Cell;
use crate::experiment::{Ours, Results, RunSpec, Scale};
use crate::ipa;
use crate::svg::{Plot, Series};
use serde_json::Value;

pub fn fig6_runs(scale: Scale) -> Vec<RunSpec> {
    ipa::table5_runs(scale)
}

/// One point of the curve: a run's scheme, buffer (percent) and appends' share of
/// host writes (percent), read from its result; `None` for the baseline or a failed run.
fn point(result: Option<&Value>) -> Option<(String, f64, f64)> {
    let r = result?;
    let scheme = r.get("ipa")?.as_str()?;
    if scheme == "0x0" {
        return None;
    }
    let buffer = r.get("config")?.get("engine")?.get("buffer_share")?.as_f64()? * 100.0;
    let (appends, writes) = (r.get("in_place_appends")?.as_f64()?, r.get("host_writes")?.as_f64()?);
    (writes > 0.0).then(|| (format!("[{scheme}]"), buffer, appends / writes * 100.0))
}

const ROW: &str = "Share of host writes as in-place appends";

pub fn fig6_cells(results: &Results) -> Vec<Ours> {
    let shares: Vec<f64> = results.iter().filter_map(|r| point(*r)).map(|p| p.2).collect();
    let all_ran = results.iter().all(Option::is_some);
    let (least, most) = if all_ran && !shares.is_empty() {
        (shares.iter().copied().reduce(f64::min), shares.iter().copied().reduce(f64::max))
    } else {
        (None, None)
    };
    vec![
        Ours { row: ROW.into(), column: "least".into(), value: least },
        Ours { row: ROW.into(), column: "most".into(), value: most },
    ]
}

pub fn fig6_notes(scale: Scale) -> Vec<String> {
    ipa::with_run_length(scale, vec![
        "The runs are Table 5's (LinkBench, 8 KiB DB pages, buffers 20, 50, 75 and 90%, [1..3 x 100] and [1..3 x 125]; 25,000 nodes at quick, 400,000 at full); the figure's own axis and schemes are only in its image.".into(),
        "The paper's two cells are the range its text gives for Tables 6–10 and Fig. 6 together (30% to 76%), not for LinkBench alone; ours are the least and most share over our LinkBench curve. Their markers stand at the middle of the buffer axis.".into(),
        ipa::LINKBENCH_ENGINE.into(),
        ipa::LINKBENCH_FLUSHING.into(),
        ipa::LINKBENCH_GROSS_M.into(),
        ipa::LINKBENCH_BUFFER_MEASURED.into(),
        ipa::LINKBENCH_UPDATES.into(),
        ipa::LINKBENCH_WRITES_MEASURED.into(),
        ipa::DBMS_CELLS.into(),
    ])
}

pub fn fig6_plot(results: &Results, cells: &[Cell]) -> Plot {
    let mut series: Vec<Series> = Vec::new();
    for (scheme, buffer, share) in results.iter().filter_map(|r| point(*r)) {
        match series.iter_mut().find(|s| s.name == scheme) {
            Some(s) => s.points.push((buffer, share)),
            None => series.push(Series { name: scheme, points: vec![(buffer, share)] }),
        }
    }
    for s in &mut series {
        s.points.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    Plot::new(
        "IPA Fig. 6: update I/Os as in-place appends, LinkBench",
        "DB buffer (% of the database)",
        "host writes as in-place appends (%)",
        series,
    )
    .with_paper_at_middle(cells)
}
