//! `deltaflash advise`: the IPA advisor on a baseline run. It runs the baseline (the
//! bench flags, without IPA) itself, or reads one (`--analyze IMAGE --baseline
//! RESULT.json`, both from `bench --ipa 0x0 --image IMAGE --json RESULT.json`, or
//! `--log FILE --baseline RESULT.json` with the log `deltaflash log export` wrote),
//! gathers per object the catalog's pages, the engine's counters and the log's updates
//! of the measured run (from the result's `measured_from_lsn`; earlier ones are
//! counted apart), and prints the `advisor` crate's statistics and recommendation;
//! `--json`, `--ddl` and `--plots` write them out, `--verify` runs the recommended
//! layout and sets the measurement beside the prediction.
//!
//! `--watch` advises mid-run and switches online: it runs the first `--watch-after`
//! seconds at 0x0 in a data region whose IPA mode allows appends (SET IPA refuses mode
//! none), advises on that run, then runs the same config and seed from the start with
//! the recommendation applied as `ALTER … SET IPA` at that time. Determinism makes the
//! second run equal the analysed one up to the switch; the interval lines check it.
//!
//! Sources: the ARIES log (records still in the log region after the run, read with
//! `engine::log::history`) has updates and their byte ranges but no evictions, so the
//! eviction figures come from the engine's per-object counters of the measured run.
//! A database image or result that does not parse is an error naming the file.

use crate::bench::{run_with_bar, show, BenchArgs, Spelling};
use crate::log_export::{read_file, read_json};
use crate::output::{OutputFile, OverwriteArg};
use advisor::baseline::read_image;
use advisor::log_file::{Header, Row};
use advisor::Recommendation;
use clap::Args;
use engine::IpaScheme;
use indicatif::MultiProgress;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use workloads::{Experiment, ExperimentConfig, ExperimentResult};

#[derive(Args)]
#[command(mut_arg("precondition", |a| a.help(PRECONDITION_HELP)))]
pub struct AdviseArgs {
    #[command(flatten)]
    common: BenchArgs,
    /// Analyse this database image of a finished baseline run (`bench --ipa 0x0
    /// --image IMAGE`) instead of running one; needs --baseline.
    #[arg(long, value_name = "IMAGE", requires = "baseline", conflicts_with = "log")]
    analyze: Option<PathBuf>,
    /// Analyse this exported log of a finished baseline run (`deltaflash log export
    /// IMAGE --out FILE`) instead of running one; needs --baseline.
    #[arg(long, value_name = "FILE", requires = "baseline")]
    log: Option<PathBuf>,
    /// The `bench --json` result of the run in --analyze or --log (its per-object
    /// counters, GC work, time, and where its measured run begins in the log).
    #[arg(long, value_name = "RESULT.json")]
    baseline: Option<PathBuf>,
    /// Write the statistics and the recommendation as JSON to this file (a new file;
    /// see --overwrite).
    #[arg(long)]
    json: Option<PathBuf>,
    /// Write the recommended layout as SQL that `bench --schema` runs unchanged (a new
    /// file; see --overwrite).
    #[arg(long)]
    ddl: Option<PathBuf>,
    /// Write update-size-cdf.svg and skew.svg into this directory (created if missing;
    /// the files are new, see --overwrite).
    #[arg(long, value_name = "DIR")]
    plots: Option<PathBuf>,
    #[command(flatten)]
    overwrite: OverwriteArg,
    /// Run the recommended layout (same flags and seed) and print predicted against
    /// measured IPA share, space overhead, GC work per host write and throughput.
    #[arg(long, conflicts_with_all = ["analyze", "log"])]
    verify: bool,
    /// Run the workload at 0x0 (in a region whose IPA mode allows appends), advise on
    /// the run so far at --watch-after and apply the recommendation to the running
    /// database as `ALTER … SET IPA`, then run to the end; prints the interval series.
    #[arg(long, conflicts_with_all = ["analyze", "log", "verify"])]
    watch: bool,
    /// Simulated seconds into the measurement at which --watch advises and switches
    /// (default: half of --sim-time).
    #[arg(long, value_name = "SECONDS", requires = "watch")]
    watch_after: Option<f64>,
}

/// `--precondition` as `advise` takes it: bench's meaning, and what it does to the GC
/// prediction.
const PRECONDITION_HELP: &str = "The device before the warm-up, for the baseline and --verify's run alike: none (as \
     loaded), fill (the data regions' free space written once) or steady (filled, then aged by the workload until \
     GC migrations per host write are in steady state, SNIA PTS style) [default: none, as bench, so that advise \
     analyses the run bench makes with the same flags and a short run stays short]. Only from steady is the GC \
     prediction the model's own (the run's writes replayed on each region's greedy GC); from none or fill free \
     pages postpone GC, and the model is scaled to the baseline's measured migrations";

/// A baseline and what the advisor made of it.
pub(crate) struct Advice {
    pub config: ExperimentConfig,
    pub spelling: Spelling,
    /// The baseline's result as `bench --json` writes it.
    pub baseline: Value,
    pub stats: Vec<advisor::ObjectStats>,
    pub recommendation: Recommendation,
    pub log_records: usize,
}

/// Runs the baseline (no IPA) from the bench flags, reads its image, and advises.
pub(crate) fn advise_on_run(common: &BenchArgs) -> Result<Advice, String> {
    let (config, spelling) = baseline_config(common)?;
    advise_on_config(config, spelling)
}

/// The bench flags at IPA 0x0, in one region.
fn baseline_config(common: &BenchArgs) -> Result<(ExperimentConfig, Spelling), String> {
    let (config, spelling) = common.config(Some(IpaScheme::NONE))?;
    if config.engine.schema.is_some() || !config.engine.ipa_objects.is_empty() {
        return Err("the baseline runs without IPA in one region: drop --schema and --ipa-objects".into());
    }
    Ok((config, spelling))
}

/// Runs `config` (a run without IPA), reads its image, and advises.
fn advise_on_config(mut config: ExperimentConfig, spelling: Spelling) -> Result<Advice, String> {
    // The log and catalog are read back from the image afterwards: the user's
    // `--image`, or one in a scratch directory removed when `_scratch` drops.
    crate::bench::check_new_image(&config)?;
    let mut _scratch = None;
    if config.device.image.is_none() {
        let dir = tempfile::Builder::new()
            .prefix("deltaflash-advise")
            .tempdir()
            .map_err(|e| format!("a scratch directory for the baseline's image: {e}"))?;
        config.device.image = Some(dir.path().join("baseline.img"));
        _scratch = Some(dir);
    }
    let image = config.device.image.clone().expect("set above");
    eprintln!("baseline: {} without IPA", config.workload.name);
    let experiment = Experiment::new(config.clone()).map_err(|e| spelling.error(&e))?;
    let run = run_with_bar(&experiment, &MultiProgress::new()).map_err(|e| spelling.error(&e))?;
    let from_image = read_image(&image)?;
    config.device.image = None;
    advise(config, spelling, run.to_json(), from_image, "the baseline run")
}

/// The dashboard's analyzer (`deltaflash serve`): the advisor on a finished baseline
/// run's device image and `bench --json` result, as JSON for its Analyzer page.
pub(crate) fn dashboard_analysis(config: &ExperimentConfig, image: &Path, result: &Value) -> Result<Value, String> {
    let mut config = config.clone();
    config.device.image = None;
    let advice = advise(config, Spelling::default(), result.clone(), read_image(image)?, "the baseline run")?;
    let ddl = ddl_of(&advice);
    Ok(json!({
        "objects": advice.stats,
        "recommendation": advice.recommendation,
        "ddl": ddl,
        "cdf_svg": advisor::render::update_size_cdf_svg(&advice.stats),
        "skew_svg": advisor::render::skew_svg(&advice.stats),
        "log_records": advice.log_records,
        "global_config": global_config(&advice),
        "selective_config": selective_config(&advice, &ddl),
    }))
}

fn advise(
    config: ExperimentConfig,
    spelling: Spelling,
    baseline: Value,
    log: (Header, Vec<Row>),
    source: &str,
) -> Result<Advice, String> {
    let advisor::baseline::Analysis { stats, recommendation, log_records } =
        advisor::baseline::analyze(log, &baseline, source)?;
    Ok(Advice { config, spelling, baseline, stats, recommendation, log_records })
}

/// The layouts a recommendation leads to: IPA everywhere, or the advised regions.
pub(crate) fn global_config(advice: &Advice) -> ExperimentConfig {
    let r = &advice.recommendation;
    let mut c = advice.config.clone();
    c.engine.ipa = r.scheme.clone();
    c.engine.v = r.v;
    c.engine.ipa_mode = r.global_mode.clone();
    c
}

pub(crate) fn selective_config(advice: &Advice, ddl: &str) -> ExperimentConfig {
    let mut c = global_config(advice);
    c.engine.ipa_mode = advice.recommendation.mode.clone();
    c.engine.schema = Some(ddl.to_string());
    c
}

pub(crate) fn ddl_of(advice: &Advice) -> String {
    let c = &advice.config;
    advisor::render::ddl(
        &advice.recommendation,
        &format!(
            "IPA layout for {} {}, seed {}",
            c.workload.name,
            serde_json::to_string(&c.workload.params).unwrap_or_default(),
            c.seed
        ),
    )
}

pub(crate) fn run(advice: &Advice, config: ExperimentConfig) -> Result<ExperimentResult, String> {
    let experiment = Experiment::new(config).map_err(|e| advice.spelling.error(&e))?;
    run_with_bar(&experiment, &MultiProgress::new()).map_err(|e| advice.spelling.error(&e))
}

/// A metric of a `bench --json` result.
pub(crate) fn metric(result: &Value, name: &str) -> f64 {
    result.get(name).and_then(Value::as_f64).unwrap_or(0.0)
}

/// Share of host writes that were appends.
pub(crate) fn ipa_share(result: &Value) -> f64 {
    metric(result, "in_place_appends") / metric(result, "host_writes").max(1.0)
}

/// Database growth over the baseline's, in percent: the space the delta areas took.
pub(crate) fn space_overhead_pct(result: &Value, baseline: &Value) -> f64 {
    (metric(result, "database_mib") / metric(baseline, "database_mib").max(f64::MIN_POSITIVE) - 1.0) * 100.0
}

/// Predicted beside measured, as rows of (metric, predicted, measured).
fn verify_rows(advice: &Advice, measured: &Value) -> Vec<(String, String, String)> {
    let (b, p) = (&advice.baseline, &advice.recommendation.predicted.advised);
    let pct = |v: f64| format!("{:.1}%", v * 100.0);
    let both =
        |label: &str, name: &str, predicted: f64| (label.to_string(), show(predicted), show(metric(measured, name)));
    vec![
        ("IPA share of host writes".into(), pct(p.ipa_share), pct(ipa_share(measured))),
        (
            "space overhead (database growth)".into(),
            format!("{:.2}%", p.space_overhead_db_pct),
            format!("{:.2}%", space_overhead_pct(measured, b)),
        ),
        both("host writes", "host_writes", p.out_of_place_writes + p.in_place_appends),
        both("out-of-place writes", "out_of_place_writes", p.out_of_place_writes),
        both("in-place appends", "in_place_appends", p.in_place_appends),
        both("GC page migrations", "gc_page_migrations", p.gc_page_migrations),
        both("GC erases", "gc_erases", p.gc_erases),
        both("GC migrations per host write", "gc_migrations_per_host_write", p.gc_migrations_per_host_write),
        both("GC erases per host write", "gc_erases_per_host_write", p.gc_erases_per_host_write),
        both("throughput [tps]", "throughput_tps", p.time.throughput_tps),
        both("read latency [ms]", "read_latency_ms", p.time.read_latency_ms),
        both("write latency [ms]", "write_latency_ms", p.time.write_latency_ms),
        (
            "aging windows (--precondition steady)".into(),
            p.aging_windows.to_string(),
            measured.pointer("/precondition/windows").and_then(Value::as_array).map_or(0, Vec::len).to_string(),
        ),
    ]
}

/// The run `--watch` makes: the bench flags at 0x0 in a data region whose IPA mode
/// allows appends (SET IPA refuses a region of mode none), with the switch time set and
/// its statements still to come, and interval lines on.
fn watch_config(args: &AdviseArgs) -> Result<(ExperimentConfig, Spelling), String> {
    let (mut config, spelling) = baseline_config(&args.common)?;
    let duration_s = config.driver.sim_time_s;
    let after_s = args.watch_after.unwrap_or(duration_s / 2.0);
    if !(after_s > 0.0 && after_s < duration_s) {
        return Err(format!(
            "--watch-after {after_s}: the switch must fall inside the measured time, 0 < SECONDS < {duration_s} (--sim-time)"
        ));
    }
    let mode = match config.engine.ipa_mode.as_str() {
        "none" => {
            return Err("--ipa-mode none: --watch switches objects to IPA, which needs a region of mode slc, pslc \
                        or odd-mlc (leave --ipa-mode out for the device's default)"
                .into())
        }
        "auto" => String::new(),
        m => format!("IPA_MODE={m}, "),
    };
    eprintln!(
        "watch: ALTER … SET IPA needs a region whose IPA mode allows appends, so the data region is created with \
         {}IPA=0x0: every object starts without IPA",
        if mode.is_empty() { "the device's IPA mode and " } else { &mode }
    );
    config.engine.schema = Some(format!(
        "-- advise --watch: starts at 0x0 in a region that allows appends.\n\
         CREATE REGION data ({mode}IPA=0x0);\nCREATE TABLESPACE ts_data (REGION=data);\n"
    ));
    config.driver.switch_at_s = Some(after_s);
    if config.driver.progress_interval_s == 0.0 {
        config.driver.progress_interval_s = after_s / 5.0;
    }
    Ok((config, spelling))
}

/// The recommendation as ALTERs: each table of the IPA region and its indexes get the
/// recommended scheme (the mode stays the region's).
fn alter_statements(advice: &Advice) -> String {
    let r = &advice.recommendation;
    let tables = r.ipa_tables();
    let mut out = String::new();
    for o in advice.stats.iter().filter(|o| tables.contains(&o.table.as_str())) {
        let kind = if o.kind == "index" { "INDEX" } else { "TABLE" };
        out += &format!("ALTER {kind} {} SET IPA = {}x{} V = {};\n", o.name, r.n, r.m, r.v);
    }
    out
}

/// Page writes, appends, GC migrations and mean throughput over interval lines.
fn interval_totals(lines: &[&Value]) -> (f64, f64, f64, f64) {
    let sum = |name: &str| lines.iter().map(|l| metric(l, name)).sum::<f64>();
    let tps = sum("throughput_tps") / (lines.len().max(1) as f64);
    (sum("out_of_place_writes"), sum("in_place_appends"), sum("gc_page_migrations"), tps)
}

/// `--watch`, after the advice on the run so far: runs the whole workload again from
/// the start with the same flags and seed (so up to the switch it is the run just
/// analysed, which is checked line by line), applies the ALTERs at the switch time
/// and prints the interval series and the halves before and after.
fn watch(advice: &Advice, mut config: ExperimentConfig) -> Result<Value, String> {
    let after_s = config.driver.switch_at_s.unwrap_or_default();
    // An interval line is stamped at the first transaction at or past its time, so the
    // one due at the switch time ends just after it, but before the ALTERs run.
    let half_step_s = config.driver.progress_interval_s / 2.0;
    let pre_switch = |l: &Value| metric(l, "sim_seconds") < after_s + half_step_s;
    let r = &advice.recommendation;
    let alters = alter_statements(advice);
    if alters.is_empty() {
        println!("\nwatch: no table is predicted to gain from IPA: nothing to switch, the run goes on at 0x0.");
        config.driver.switch_at_s = None;
    } else {
        println!("\nwatch: at {after_s} s the running database gets\n{alters}");
        if !matches!(config.engine.ipa_mode.as_str(), "auto") || r.mode != r.global_mode {
            println!(
                "(the region's IPA mode is {}: the mode belongs to the region, so the ALTERs keep it; the \
                 prediction assumed {})\n",
                if config.engine.ipa_mode == "auto" { &r.global_mode } else { &config.engine.ipa_mode },
                r.mode
            );
        }
        config.driver.switch_ddl = Some(alters.clone());
    }
    eprintln!("watch: the run from the start, switching at {after_s} s");
    let result = run(advice, config)?.to_json();
    let empty = Vec::new();
    let lines = |v: &Value| v.get("intervals").and_then(Value::as_array).unwrap_or(&empty).clone();
    let (analysed, all) = (lines(&advice.baseline), lines(&result));
    let same = analysed.len() <= all.len() && analysed.iter().zip(&all).all(|(a, b)| a == b);
    if same {
        println!("The first {} interval lines are those of the analysed run, to the count.", analysed.len());
    } else {
        println!("WARNING: the run before the switch differs from the analysed run (not deterministic?)");
    }
    println!("\n| sim s | throughput [tps] | out-of-place | appends | GC migrations | GC erases so far | read [ms] |");
    println!("|---|---|---|---|---|---|---|");
    let mut marked = false;
    for l in &all {
        let at = metric(l, "sim_seconds");
        if !marked && !pre_switch(l) {
            println!("| **{after_s} switch** | | | | | | |");
            marked = true;
        }
        println!(
            "| {at:.2} | {} | {} | {} | {} | {} | {:.3} |",
            show(metric(l, "throughput_tps")),
            metric(l, "out_of_place_writes"),
            metric(l, "in_place_appends"),
            metric(l, "gc_page_migrations"),
            metric(l, "gc_erases_so_far"),
            metric(l, "read_latency_ms")
        );
    }
    let (before, after): (Vec<&Value>, Vec<&Value>) = all.iter().partition(|l| pre_switch(l));
    println!("\n| | before the switch | after |\n|---|---|---|");
    let (b, a) = (interval_totals(&before), interval_totals(&after));
    let share = |t: (f64, f64, f64, f64)| format!("{:.1}%", t.1 / (t.0 + t.1).max(1.0) * 100.0);
    let per_write = |t: (f64, f64, f64, f64)| format!("{:.3}", t.2 / (t.0 + t.1).max(1.0));
    println!("| mean throughput [tps] | {} | {} |", show(b.3), show(a.3));
    println!("| appends share of page writes | {} | {} |", share(b), share(a));
    println!("| GC migrations per page write | {} | {} |", per_write(b), per_write(a));
    Ok(json!({ "switch_at_s": after_s, "alters": alters, "prefix_matches": same, "result": result }))
}

/// The output files of `advise`, checked before it runs anything.
struct Outputs {
    json: Option<OutputFile>,
    ddl: Option<OutputFile>,
    plots: Option<(PathBuf, Vec<OutputFile>)>,
}

impl Outputs {
    fn check(args: &AdviseArgs) -> Result<Outputs, String> {
        let plots = match &args.plots {
            Some(dir) => Some((dir.clone(), crate::output::check_plots(dir, &PLOT_FILES, args.overwrite.overwrite)?)),
            None => None,
        };
        Ok(Outputs {
            json: args.overwrite.check("--json", args.json.as_deref())?,
            ddl: args.overwrite.check("--ddl", args.ddl.as_deref())?,
            plots,
        })
    }
}

/// The files `--plots` writes, in the order of [`plots`].
const PLOT_FILES: [&str; 2] = ["update-size-cdf.svg", "skew.svg"];

/// The SVG plots of `--plots`, in the order of [`PLOT_FILES`].
fn plots(advice: &Advice) -> [String; 2] {
    [advisor::render::update_size_cdf_svg(&advice.stats), advisor::render::skew_svg(&advice.stats)]
}

pub fn advise_command(args: AdviseArgs) -> Result<bool, String> {
    let outputs = Outputs::check(&args)?;
    let mut watch_plan = None;
    let advice = match (&args.analyze, &args.log, &args.baseline) {
        (image, log, Some(result)) => {
            let source = result.display().to_string();
            let baseline = read_json(result)?;
            let config = baseline
                .get("config")
                .map(|c| ExperimentConfig::from_json(&c.to_string()))
                .ok_or_else(|| format!("{source}: no \"config\" (is it a `bench --json` result?)"))?
                .map_err(|e| format!("{source}: config: {e}"))?;
            let (_, spelling) = args.common.config(None)?;
            let log = match (image, log) {
                (Some(image), _) => read_image(image)?,
                (None, Some(file)) => read_file(file)?,
                (None, None) => return Err("--baseline goes with --analyze IMAGE or --log FILE".into()),
            };
            advise(config, spelling, baseline, log, &source)?
        }
        _ if args.watch => {
            let (config, spelling) = watch_config(&args)?;
            let mut prefix = config.clone();
            let after_s = config.driver.switch_at_s.unwrap_or_default();
            prefix.driver.sim_time_s = after_s;
            prefix.driver.switch_at_s = None;
            eprintln!("watch: the first {after_s} measured seconds at 0x0, advised on at {after_s} s");
            watch_plan = Some(config);
            advise_on_config(prefix, spelling)?
        }
        _ => advise_on_run(&args.common)?,
    };
    println!("{}", advisor::render::table(&advice.stats));
    println!("Log records read: {} (updates, their sizes and skew come from these)\n", advice.log_records);
    println!("{}", advisor::render::recommendation(&advice.recommendation));
    let ddl = ddl_of(&advice);
    if let Some(file) = &outputs.ddl {
        file.write(ddl.as_bytes())?;
        eprintln!("layout written to {} (run it with `deltaflash bench --schema {0}`)", file.path().display());
    }
    if let Some((dir, files)) = &outputs.plots {
        crate::output::create_plots_dir(dir)?;
        for (file, svg) in files.iter().zip(plots(&advice)) {
            file.write(svg.as_bytes())?;
        }
        eprintln!("plots written to {}", dir.display());
    }
    let mut verified = Value::Null;
    let split = &advice.recommendation.chip_split;
    if !split.fits {
        eprintln!(
            "advise: no split of the data chips holds the advised layout's growth over the run (see the reasoning)"
        );
    }
    if args.verify && !split.fits {
        return Err(format!(
            "--verify: the advised layout would run out of extents: its IPA region needs {:.0} flash pages of its \
             {:.0}, its plain region {:.0} of its {:.0} by the run's end; use a device with more blocks per chip \
             (--blocks-per-chip) or a shorter run",
            split.ipa_needed_pages, split.ipa_capacity_pages, split.plain_needed_pages, split.plain_capacity_pages
        ));
    }
    if args.verify {
        eprintln!("verify: the recommended layout, same flags and seed");
        let measured = run(&advice, selective_config(&advice, &ddl))?.to_json();
        let rows = verify_rows(&advice, &measured);
        println!("\n| metric | predicted | measured |\n|---|---|---|");
        for (name, p, m) in &rows {
            println!("| {name} | {p} | {m} |");
        }
        verified = json!({
            "rows": rows.iter().map(|(n, p, m)| json!({"metric": n, "predicted": p, "measured": m})).collect::<Vec<_>>(),
            "result": measured,
        });
    }
    let watched = match watch_plan {
        Some(config) => watch(&advice, config)?,
        None => Value::Null,
    };
    if let Some(file) = &outputs.json {
        let value = json!({
            "objects": advice.stats,
            "recommendation": advice.recommendation,
            "ddl": ddl,
            "sources": advisor::SOURCES.iter().map(|(f, s)| json!({"figure": f, "source": s})).collect::<Vec<_>>(),
            "log_records": advice.log_records,
            "baseline": advice.baseline,
            "verify": verified,
            "watch": watched,
        });
        let text = serde_json::to_string_pretty(&value).map_err(|e| e.to_string())? + "\n";
        file.write(text.as_bytes())?;
    }
    Ok(true)
}
