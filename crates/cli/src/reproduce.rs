//! `deltaflash reproduce`: the papers' tables and figures run and compared with the
//! papers' values, cell by cell (the `reproduce` crate does the work; this is its
//! command line).

use clap::Args;
use reproduce::{Experiment, Options, Scale, CATALOGUE};
use std::path::PathBuf;

#[derive(Args)]
pub struct ReproduceArgs {
    /// Experiments to run, by id (`ipa:table7`); see --list.
    #[arg(value_name = "ID", required_unless_present_any = ["list", "all"], conflicts_with_all = ["list", "all"])]
    ids: Vec<String>,
    /// List every experiment with a description and whether it is implemented.
    #[arg(long)]
    list: bool,
    /// Run every experiment of the catalogue.
    #[arg(long, conflicts_with = "list")]
    all: bool,
    /// Small databases and short runs: minutes for the catalogue (the default).
    #[arg(long, conflicts_with_all = ["full", "smoke"])]
    quick: bool,
    /// The papers' scale as far as their text states it and this machine holds it: their run
    /// lengths in proportion to the database (TPC-C: 10 warehouses for 162 simulated s).
    #[arg(long, conflicts_with = "smoke")]
    full: bool,
    /// Every run cut to a fraction of a second: checks the plumbing, not the results.
    #[arg(long)]
    smoke: bool,
    /// Runs at once, each on its own thread, fewer while their estimated peak memory does not fit together [default: the cores].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1024))]
    jobs: Option<u32>,
    /// Output directory: the runs (kept and reused by a later invocation), ID.md,
    /// ID.json per experiment and summary.json.
    #[arg(long, default_value = "out/reproduce")]
    out: PathBuf,
    /// Write into an existing directory that `reproduce` did not make (files of the
    /// same names are replaced); with --publish, replace files there and DIR.md that
    /// `reproduce` did not write.
    #[arg(long)]
    overwrite: bool,
    /// Afterwards copy summary.json and the experiments' reports and figures into DIR
    /// (docs/results) and write the results page DIR.md (docs/results.md) linking into
    /// it, with the prose per paper of DIR/prose.md.
    #[arg(long, value_name = "DIR")]
    publish: Option<PathBuf>,
    /// List the runs the experiments need (deduplicated, each marked kept in --out, to
    /// make, or refused because it cannot fit this machine), with each one's estimated
    /// CPU seconds and peak memory and the totals per experiment; runs nothing.
    #[arg(long, conflicts_with_all = ["publish", "ray"])]
    plan: bool,
    /// Make the runs not kept in --out as Ray tasks through the Python package
    /// (`python3 -m deltaflash reproduce-runs`; `pip install ./python[ray]`): `local`
    /// starts Ray on this machine (--jobs CPUs), `auto` or HOST:PORT joins a cluster.
    /// $DELTAFLASH_PYTHON names another interpreter.
    #[arg(long, value_name = "ADDRESS")]
    ray: Option<String>,
    /// Make no run: compare and report from the runs kept in --out only, the cells
    /// whose runs are not made yet saying so (how far a long --full invocation has come).
    #[arg(long, conflicts_with_all = ["publish", "ray", "plan"])]
    kept: bool,
}

/// The catalogue as a table: id, implemented or not, description.
fn list() {
    println!("| id | implemented | description |\n|---|---|---|");
    for e in CATALOGUE {
        println!("| {} | {} | {} |", e.id, if e.implemented() { "yes" } else { "no" }, e.description);
    }
}

pub fn run(args: ReproduceArgs) -> Result<bool, String> {
    if args.list {
        list();
        return Ok(true);
    }
    let experiments: Vec<&Experiment> = if args.all {
        CATALOGUE.iter().collect()
    } else {
        args.ids
            .iter()
            .map(|id| {
                reproduce::catalogue::find(id).ok_or_else(|| {
                    format!("`{}` is not an experiment id; `deltaflash reproduce --list` names them", quote(id))
                })
            })
            .collect::<Result<_, _>>()?
    };
    let scale = match (args.full, args.smoke) {
        (true, _) => Scale::Full,
        (_, true) => Scale::Smoke,
        _ => Scale::Quick,
    };
    let options = Options { scale, jobs: crate::bench::jobs(args.jobs), out: args.out, overwrite: args.overwrite };
    if args.plan {
        let rows = reproduce::runner::plan(&experiments, &options, workloads::limits::available_memory_bytes());
        println!("{}", reproduce::plan::markdown(&rows, options.jobs));
        return Ok(true);
    }
    if let Some(dir) = &args.publish {
        reproduce::publish::check_apart(&options.out, dir)?;
    }
    let log = |line: String| eprintln!("{line}");
    let ray = args.ray.map(|address| reproduce::ray::Ray {
        address,
        workers: args.jobs.map(|j| j as usize),
        python: std::env::var("DELTAFLASH_PYTHON").unwrap_or_else(|_| "python3".into()),
    });
    let make = match &ray {
        _ if args.kept => reproduce::Make::Nothing,
        Some(ray) => reproduce::Make::Ray(ray),
        None => reproduce::Make::Here,
    };
    let outcome = reproduce::reproduce_on(&experiments, &options, make, &log)?;
    println!("{}", reproduce::report::experiments_markdown(&outcome.cells, &outcome.costs));
    println!("{}", reproduce::report::counts_and_variants_markdown(&outcome.cells));
    println!(
        "runs: {} executed, {} reused, {} failed{}; {} refused before starting, {} kept by an older model \
         version (stale); {:.1} CPU s over all runs; reports in {}",
        outcome.executed,
        outcome.reused,
        outcome.failed,
        if args.kept { format!(", {} not made yet", outcome.not_made) } else { String::new() },
        outcome.refused,
        outcome.stale,
        outcome.cpu_seconds,
        options.out.display()
    );
    if let Some(dir) = &args.publish {
        let page = reproduce::publish::publish(&experiments, scale, &outcome, &options.out, dir, args.overwrite)?;
        println!("published into {} and {}", dir.display(), page.display());
    }
    Ok(outcome.failed == 0)
}

/// At most 80 characters of a value the user gave.
fn quote(text: &str) -> String {
    let mut chars = text.chars();
    let head: String = chars.by_ref().take(80).collect();
    if chars.next().is_some() {
        head + "…"
    } else {
        head
    }
}
