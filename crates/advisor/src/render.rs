//! The advisor's outputs as text: the per-object table, the DDL that `bench --schema`
//! runs, and SVG plots (update-size CDF per object, skew curve) drawn by hand.
//!
//! The DDL creates tablespace `ts_<table>` for each table in the IPA region and
//! `ts_data` in a plain region for the rest, which is how `bench --schema` places
//! tables (indexes follow their table). Object names are the catalog's, which the SQL
//! lexer reads back as identifiers.

use crate::layout::Prediction;
use crate::{model, ObjectStats, Recommendation, SOURCES};
use std::fmt::Write;

fn pct(v: f64) -> String {
    format!("{:.1}%", v * 100.0)
}

/// The per-object statistics as an aligned text table, the sources under it.
pub fn table(stats: &[ObjectStats]) -> String {
    let mut header: Vec<String> =
        ["object", "kind", "pages", "updates", "upd. before", "evictions", "bytes/evict", "r/w"]
            .map(String::from)
            .to_vec();
    header.extend(crate::FIT_SCHEMES.iter().map(|(n, m)| format!("fit {n}x{m}")));
    header.extend(["top 1%", "top 10%", "top 20%"].map(String::from));
    let mut rows = vec![header];
    for s in stats {
        let mut row = vec![
            s.name.clone(),
            s.kind.clone(),
            s.pages.to_string(),
            s.updates.to_string(),
            s.updates_before_measurement.to_string(),
            s.evictions.to_string(),
            format!("{:.1}", s.changed_bytes_per_eviction_mean),
            s.read_write_ratio.map_or("–".into(), |r| format!("{r:.2}")),
        ];
        let evicted = model::total(&s.write_sizes) > 0;
        row.extend(s.fits.iter().map(|(_, f)| if evicted { pct(*f) } else { "–".into() }));
        match &s.skew {
            Some(k) => row.extend([pct(k.hottest_1_pct), pct(k.hottest_10_pct), pct(k.hottest_20_pct)]),
            None => row.extend(["–", "–", "–"].map(String::from)),
        }
        rows.push(row);
    }
    let mut out = aligned(&rows);
    out += "\nSources:\n";
    for (figure, source) in SOURCES {
        let _ = writeln!(out, "  {figure}: {source}");
    }
    out
}

/// Columns padded to their widest cell; the first left-aligned, the rest right.
fn aligned(rows: &[Vec<String>]) -> String {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let width: Vec<usize> =
        (0..cols).map(|c| rows.iter().filter_map(|r| r.get(c)).map(|s| s.chars().count()).max().unwrap_or(0)).collect();
    let mut out = String::new();
    for row in rows {
        let cells: Vec<String> = row
            .iter()
            .enumerate()
            .map(|(c, s)| if c == 0 { format!("{s:<w$}", w = width[c]) } else { format!("{s:>w$}", w = width[c]) })
            .collect();
        out += cells.join("  ").trim_end();
        out.push('\n');
    }
    out
}

/// The recommendation with its reasoning and the predictions beside the baseline.
pub fn recommendation(r: &Recommendation) -> String {
    let mut out = format!(
        "Recommendation: IPA [{}], V = {}, IPA_MODE={}, tables in the IPA region: {}\n",
        r.scheme,
        r.v,
        r.mode,
        if r.ipa_tables().is_empty() { "none".to_string() } else { r.ipa_tables().join(", ") }
    );
    for line in &r.reasoning {
        let _ = writeln!(out, "  - {line}");
    }
    let (b, a, g) = (&r.predicted.baseline, &r.predicted.advised, &r.predicted.global);
    let row = |name: &str, f: &dyn Fn(&Prediction) -> String| vec![name.to_string(), f(b), f(a), f(g)];
    let count = |v: f64| format!("{v:.0}");
    let rows = vec![
        vec![
            "predicted over the baseline's run".to_string(),
            "baseline (model)".to_string(),
            format!("advised ({})", r.mode),
            format!("global ({})", r.global_mode),
        ],
        row("IPA share of host writes", &|p| pct(p.ipa_share)),
        row("out-of-place writes", &|p| count(p.out_of_place_writes)),
        row("in-place appends", &|p| count(p.in_place_appends)),
        row("GC page migrations", &|p| count(p.gc_page_migrations)),
        row("GC erases", &|p| count(p.gc_erases)),
        row("GC migrations per host write", &|p| format!("{:.4}", p.gc_migrations_per_host_write)),
        row("GC migrations saved (steady state)", &|p| pct(p.gc_reduction)),
        row("flash programs saved (steady state)", &|p| pct(p.flash_program_reduction)),
        row("throughput [tps]", &|p| format!("{:.1}", p.time.throughput_tps)),
        row("read latency [ms]", &|p| format!("{:.3}", p.time.read_latency_ms)),
        row("write latency [ms]", &|p| format!("{:.3}", p.time.write_latency_ms)),
        row("space overhead (database)", &|p| format!("{:.2}%", p.space_overhead_db_pct)),
        row("space overhead (IPA page)", &|p| format!("{:.2}%", p.space_overhead_page_pct)),
    ];
    out + "\n" + &aligned(&rows)
}

/// The DDL of the recommended layout, for `bench --schema`.
pub fn ddl(r: &Recommendation, title: &str) -> String {
    let ipa = r.ipa_tables();
    let mut out =
        format!("-- {title}\n-- Written by `deltaflash advise`; run it with `deltaflash bench --schema FILE`.\n");
    if ipa.is_empty() {
        out += "-- No table is predicted to gain from IPA: one plain region.\n";
        out += "CREATE REGION plain (IPA_MODE=none);\nCREATE TABLESPACE ts_data (REGION=plain);\n";
        return out;
    }
    let _ = writeln!(
        out,
        "-- IPA region: {} (with their indexes); predicted {:.1}% of host writes as appends, {:.2}% space overhead.",
        ipa.join(", "),
        r.predicted.advised.ipa_share * 100.0,
        r.predicted.advised.space_overhead_db_pct
    );
    let all_in = ipa.len() == r.tables.len();
    let chips = if all_in { String::new() } else { format!(", MAX_CHIPS={}", r.ipa_chips) };
    let _ = writeln!(out, "CREATE REGION ipa (IPA_MODE={}, IPA={}, V={}{chips});", r.mode, r.scheme, r.v);
    for t in &ipa {
        let _ = writeln!(out, "CREATE TABLESPACE ts_{t} (REGION=ipa);");
    }
    if !all_in {
        out += "-- Every other table: a region without IPA on the remaining chips.\n";
        out += "CREATE REGION plain (IPA_MODE=none);\nCREATE TABLESPACE ts_data (REGION=plain);\n";
    }
    out
}

const COLORS: [&str; 8] = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"];
/// Chart size and plot margins, in pixels.
const W: f64 = 640.0;
const H: f64 = 400.0;
const LEFT: f64 = 60.0;
const RIGHT: f64 = 170.0;
const TOP: f64 = 30.0;
const BOTTOM: f64 = 50.0;

fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

/// An SVG line chart: axes from 0 to 1 on y, `x_ticks` as (position in [0, 1], label),
/// one polyline per series of (x, y) in [0, 1]².
fn chart(
    title: &str,
    x_label: &str,
    y_label: &str,
    x_ticks: &[(f64, String)],
    series: &[(String, Vec<(f64, f64)>)],
) -> String {
    let (pw, ph) = (W - LEFT - RIGHT, H - TOP - BOTTOM);
    let px = |x: f64| LEFT + x * pw;
    let py = |y: f64| TOP + (1.0 - y) * ph;
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{W}\" height=\"{H}\" font-family=\"sans-serif\" font-size=\"11\">\n\
         <rect width=\"{W}\" height=\"{H}\" fill=\"white\"/>\n\
         <text x=\"{}\" y=\"18\" text-anchor=\"middle\" font-size=\"13\">{}</text>\n",
        LEFT + pw / 2.0,
        escape(title)
    );
    for i in 0..=4 {
        let y = i as f64 / 4.0;
        let _ = writeln!(
            s,
            "<line x1=\"{0}\" y1=\"{2:.1}\" x2=\"{1}\" y2=\"{2:.1}\" stroke=\"#ddd\"/><text x=\"{3}\" y=\"{4:.1}\" text-anchor=\"end\">{5}</text>",
            px(0.0),
            px(1.0),
            py(y),
            LEFT - 6.0,
            py(y) + 4.0,
            y
        );
    }
    for (x, label) in x_ticks {
        let _ = writeln!(
            s,
            "<line x1=\"{0:.1}\" y1=\"{1}\" x2=\"{0:.1}\" y2=\"{2}\" stroke=\"#ddd\"/><text x=\"{0:.1}\" y=\"{3}\" text-anchor=\"middle\">{4}</text>",
            px(*x),
            py(0.0),
            py(1.0),
            py(0.0) + 16.0,
            escape(label)
        );
    }
    let _ = writeln!(
        s,
        "<rect x=\"{LEFT}\" y=\"{TOP}\" width=\"{pw}\" height=\"{ph}\" fill=\"none\" stroke=\"black\"/>\n\
         <text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n\
         <text transform=\"translate(16 {}) rotate(-90)\" text-anchor=\"middle\">{}</text>",
        LEFT + pw / 2.0,
        H - 12.0,
        escape(x_label),
        TOP + ph / 2.0,
        escape(y_label)
    );
    for (i, (name, points)) in series.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        let path: Vec<String> = points.iter().map(|&(x, y)| format!("{:.1},{:.1}", px(x), py(y))).collect();
        let _ = writeln!(
            s,
            "<polyline fill=\"none\" stroke=\"{color}\" stroke-width=\"2\" points=\"{}\"/>",
            path.join(" ")
        );
        let ly = TOP + 10.0 + i as f64 * 16.0;
        let _ = writeln!(
            s,
            "<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"{color}\" stroke-width=\"2\"/><text x=\"{3}\" y=\"{4}\">{5}</text>",
            W - RIGHT + 10.0,
            ly,
            W - RIGHT + 30.0,
            W - RIGHT + 36.0,
            ly + 4.0,
            escape(name)
        );
    }
    s + "</svg>\n"
}

/// CDF of changed body bytes per eviction, one line per object evicted at least once;
/// x is the bucket's upper bound on a log₂ scale.
pub fn update_size_cdf_svg(stats: &[ObjectStats]) -> String {
    let buckets = engine::store::UPDATE_SIZE_BUCKETS;
    let x = |k: usize| k as f64 / (buckets - 1) as f64;
    let ticks: Vec<(f64, String)> = (0..buckets)
        .step_by(2)
        .map(|k| {
            let label = match model::bucket_bytes(k) {
                Some((_, hi)) if hi >= 1024 => format!("{}K", (hi + 1) / 1024),
                Some((_, hi)) => format!("{}", hi + 1),
                None => "8K+".into(),
            };
            (x(k), label)
        })
        .collect();
    let series: Vec<(String, Vec<(f64, f64)>)> = stats
        .iter()
        .filter(|s| model::total(&s.write_sizes) > 0)
        .map(|s| (s.name.clone(), s.write_size_cdf.iter().enumerate().map(|(k, &y)| (x(k), y)).collect()))
        .collect();
    chart("Changed bytes per eviction (CDF)", "changed body bytes, below", "share of evictions", &ticks, &series)
}

/// Share of updates on the hottest share of an object's pages (Lorenz-style), one
/// line per object the log shows updated.
pub fn skew_svg(stats: &[ObjectStats]) -> String {
    let ticks: Vec<(f64, String)> = (0..=5).map(|i| (i as f64 / 5.0, format!("{}%", i * 20))).collect();
    let series: Vec<(String, Vec<(f64, f64)>)> = stats
        .iter()
        .filter(|s| s.updates > 0)
        .map(|s| {
            let pages = s.pages.max(s.page_updates_sorted.len() as u64).max(1) as f64;
            let mut points = vec![(0.0, 0.0)];
            let mut sum = 0;
            // At most 200 points per line.
            let step = (s.page_updates_sorted.len() / 200).max(1);
            for (i, &u) in s.page_updates_sorted.iter().enumerate() {
                sum += u;
                if (i + 1) % step == 0 || i + 1 == s.page_updates_sorted.len() {
                    points.push(((i + 1) as f64 / pages, sum as f64 / s.updates as f64));
                }
            }
            points.push((1.0, 1.0));
            (s.name.clone(), points)
        })
        .collect();
    chart("Update skew", "hottest share of the object's pages", "share of updates", &ticks, &series)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{analyze, recommend, tests_support::input, Policy};

    #[test]
    fn the_ddl_places_the_chosen_tables_in_the_ipa_region() {
        let r = recommend(&input(), &Policy::default()).unwrap();
        let text = ddl(&r, "test");
        let region = format!("CREATE REGION ipa (IPA_MODE=slc, IPA={}, V=12, MAX_CHIPS=1);", r.scheme);
        assert!(text.contains(&region), "{text}");
        assert!(text.contains("CREATE TABLESPACE ts_hot (REGION=ipa);"));
        assert!(text.contains("CREATE TABLESPACE ts_data (REGION=plain);"));
        assert!(!text.contains("ts_cold"));
    }

    #[test]
    fn plots_have_one_line_per_object_with_data() {
        let s = analyze(&input());
        let cdf = update_size_cdf_svg(&s);
        assert_eq!(cdf.matches("<polyline").count(), 2);
        assert!(cdf.starts_with("<svg") && cdf.ends_with("</svg>\n"));
        let skew = skew_svg(&s);
        assert_eq!(skew.matches("<polyline").count(), 2);
        // The hot table's curve passes (1%, 50/105).
        assert!(skew.contains(&format!(
            "{:.1},{:.1}",
            LEFT + 0.01 * (W - LEFT - RIGHT),
            TOP + (1.0 - 50.0 / 105.0) * (H - TOP - BOTTOM)
        )));
        let t = table(&s);
        assert!(t.lines().nth(1).unwrap().starts_with("hot "));
    }
}
