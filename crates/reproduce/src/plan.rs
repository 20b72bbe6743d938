//! `reproduce --plan`: the runs an invocation would make or reuse ([`crate::runner::plan`]) as
//! Markdown, each with its estimated cost ([`crate::cost`]), then the totals per
//! experiment and overall. A run shared by experiments is listed and counted once, under
//! the first that needs it.

use crate::runner::{PlanRow, State};

const GIB: f64 = (1u64 << 30) as f64;

fn status(state: &State) -> String {
    match state {
        State::Kept(_) => "kept".into(),
        State::ToMake { stale: true } => "to make (kept one is stale)".into(),
        State::ToMake { stale: false } => "to make".into(),
        State::Refused(why) => format!("REFUSED: {why}"),
    }
}

/// The plan as Markdown: one row per run, the totals per experiment, and the whole
/// invocation's CPU hours and what they take on `jobs` runs at once.
pub fn markdown(rows: &[PlanRow], jobs: usize) -> String {
    let mut out = String::from(
        "| run | workload | size | simulated s | CPU s (est.) | peak GiB (est.) | status |\n|---|---|---|---|---|---|---|\n",
    );
    for r in rows {
        let e = &r.estimate;
        out.push_str(&format!(
            "| {} | {} | {} | {} | {:.0} | {:.2} | {} |\n",
            r.name,
            e.workload,
            e.size,
            e.sim_seconds.map_or("–".into(), |s| format!("{s:.0}")),
            e.cpu_seconds,
            e.peak_bytes as f64 / GIB,
            status(&r.state)
        ));
    }
    out.push_str(
        "\n| experiment | runs | kept | to make | refused | CPU h to make (est.) | largest peak GiB (est.) |\n\
         |---|---|---|---|---|---|---|\n",
    );
    let mut experiments: Vec<&str> = Vec::new();
    for r in rows {
        if !experiments.contains(&r.experiment) {
            experiments.push(r.experiment);
        }
    }
    let total = |rows: &[&PlanRow]| {
        let count = |f: fn(&State) -> bool| rows.iter().filter(|r| f(&r.state)).count();
        // Folded from +0.0: an empty sum of floats is -0.0, which prints as "-0.00".
        let to_make = rows
            .iter()
            .filter(|r| matches!(r.state, State::ToMake { .. }))
            .fold(0.0, |sum, r| sum + r.estimate.cpu_seconds);
        let peak = rows.iter().map(|r| r.estimate.peak_bytes).max().unwrap_or(0);
        (
            rows.len(),
            count(|s| matches!(s, State::Kept(_))),
            count(|s| matches!(s, State::ToMake { .. })),
            count(|s| matches!(s, State::Refused(_))),
            to_make / 3600.0,
            peak as f64 / GIB,
        )
    };
    let line = |name: &str, t: (usize, usize, usize, usize, f64, f64)| {
        format!("| {name} | {} | {} | {} | {} | {:.2} | {:.2} |\n", t.0, t.1, t.2, t.3, t.4, t.5)
    };
    for id in &experiments {
        let of: Vec<&PlanRow> = rows.iter().filter(|r| r.experiment == *id).collect();
        out.push_str(&line(id, total(&of)));
    }
    let all: Vec<&PlanRow> = rows.iter().collect();
    let t = total(&all);
    out.push_str(&line("all", t));
    let refused_hours =
        rows.iter().filter(|r| matches!(r.state, State::Refused(_))).fold(0.0, |sum, r| sum + r.estimate.cpu_seconds)
            / 3600.0;
    out.push_str(&format!(
        "\n{:.1} CPU hours to make ({:.1} hours on {jobs} runs at once, if the cores are free); {} runs refused \
         ({refused_hours:.1} CPU hours more, could they be made).\n",
        t.4,
        t.4 / jobs.max(1) as f64,
        t.3
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::{plan, Options};
    use crate::Scale;

    #[test]
    fn runs_above_the_memory_available_are_listed_refused_and_counted_apart() {
        let tmp = tempfile::tempdir().unwrap();
        let experiment = crate::catalogue::find("ipa:table7").expect("listed");
        let options = Options { scale: Scale::Quick, jobs: 2, out: tmp.path().join("out"), overwrite: false };
        let rows = plan(&[experiment], &options, Some(1));
        assert!(!rows.is_empty());
        let text = markdown(&rows, 2);
        assert!(text.contains("| REFUSED: refused before starting:") && text.contains("GiB are available"), "{text}");
        let n = rows.len();
        assert!(text.contains(&format!("| ipa:table7 | {n} | 0 | 0 | {n} | 0.00 |")), "{text}");
        assert!(
            text.contains(&format!(
                "0.0 CPU hours to make (0.0 hours on 2 runs at once, if the cores are free); {n} runs refused"
            )),
            "{text}"
        );
        assert!(!options.out.exists(), "a plan writes nothing");
    }
}
