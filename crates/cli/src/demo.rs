//! `deltaflash demo`: the IPA demo paper's four scenarios as one command, on the same
//! flags and seed: (1) the baseline without IPA, (2) the advisor on its log and
//! counters, (3) global IPA with the advised scheme on every object, (4) selective IPA
//! in the advised regions; one table side by side (Markdown, or `--json`).

use crate::advise::{self, Advice};
use crate::bench::{show, BenchArgs};
use crate::output::OverwriteArg;
use clap::Args;
use serde_json::{json, Value};
use std::path::PathBuf;

#[derive(Args)]
pub struct DemoArgs {
    #[command(flatten)]
    common: BenchArgs,
    /// Write the three runs' results and the advice as JSON to this file (a new file;
    /// see --overwrite).
    #[arg(long)]
    json: Option<PathBuf>,
    #[command(flatten)]
    overwrite: OverwriteArg,
}

/// (label, value) rows of one run.
fn rows(r: &Value, baseline: &Value) -> Vec<(&'static str, f64)> {
    let m = |name| advise::metric(r, name);
    vec![
        ("Throughput [tps]", m("throughput_tps")),
        ("Host reads", m("host_reads")),
        ("Host writes", m("host_writes")),
        ("  out-of-place writes", m("out_of_place_writes")),
        ("  in-place appends", m("in_place_appends")),
        ("GC page migrations", m("gc_page_migrations")),
        ("GC erases", m("gc_erases")),
        ("GC migrations per host write", m("gc_migrations_per_host_write")),
        ("GC erases per host write", m("gc_erases_per_host_write")),
        ("Database size [MiB]", m("database_mib")),
        ("Space overhead (database growth) [%]", advise::space_overhead_pct(r, baseline)),
    ]
}

/// The side-by-side Markdown table.
fn table(advice: &Advice, global: &Value, selective: &Value) -> String {
    let r = &advice.recommendation;
    let b = &advice.baseline;
    let mut out = format!(
        "| metric | baseline [0x0] | global [{0}] {1} | Δ% | selective [{0}] {2}: {3} | Δ% |\n|---|---|---|---|---|---|\n",
        r.scheme,
        r.global_mode,
        r.mode,
        r.ipa_tables().join(", ")
    );
    let split = |v: &Value| {
        let share = advise::ipa_share(v) * 100.0;
        format!("{:.0}/{:.0}", 100.0 - share, share)
    };
    out += &format!("| Out-of-place / IPA [%] | {} | {} | | {} | |\n", split(b), split(global), split(selective));
    let delta = |v: f64, v0: f64| if v0 == 0.0 { "–".to_string() } else { format!("{:+.0}", (v - v0) / v0 * 100.0) };
    let (rb, rg, rs) = (rows(b, b), rows(global, b), rows(selective, b));
    for ((label, v0), ((_, vg), (_, vs))) in rb.into_iter().zip(rg.into_iter().zip(rs)) {
        out += &format!(
            "| {label} | {} | {} | {} | {} | {} |\n",
            show(v0),
            show(vg),
            delta(vg, v0),
            show(vs),
            delta(vs, v0)
        );
    }
    out += &format!(
        "| Predicted IPA share [%] | – | {:.1} | | {:.1} | |\n",
        r.predicted.global.ipa_share * 100.0,
        r.predicted.advised.ipa_share * 100.0
    );
    out
}

pub fn run(args: DemoArgs) -> Result<bool, String> {
    let json = args.overwrite.check("--json", args.json.as_deref())?;
    eprintln!("scenario 1 and 2: baseline and analyzer");
    let advice = advise::advise_on_run(&args.common)?;
    println!("{}", advisor::render::recommendation(&advice.recommendation));
    eprintln!("scenario 3: global IPA [{}]", advice.recommendation.scheme);
    let global = advise::run(&advice, advise::global_config(&advice))?.to_json();
    eprintln!("scenario 4: selective IPA in the advised regions");
    let ddl = advise::ddl_of(&advice);
    let selective = advise::run(&advice, advise::selective_config(&advice, &ddl))?.to_json();
    println!("{}", table(&advice, &global, &selective));
    if let Some(file) = &json {
        let value = json!({
            "workload": advice.config.workload.name,
            "recommendation": advice.recommendation,
            "objects": advice.stats,
            "ddl": ddl,
            "baseline": advice.baseline,
            "global": global,
            "selective": selective,
        });
        let text = serde_json::to_string_pretty(&value).map_err(|e| e.to_string())? + "\n";
        file.write(text.as_bytes())?;
    }
    Ok(true)
}
