//! `deltaflash bench` and `deltaflash compare`: an OLTP workload on the emulated device
//! in simulated time, with the IPA paper's metrics; `compare` runs several [N×M]
//! schemes on the same seed and prints a table shaped like the paper's Table 7.

use crate::setup::DeviceArgs;
use crate::table::{print_table, Row};
use clap::{Args, ValueEnum};
use engine::buffer::CleanerPolicy;
use engine::db::BufferSize;
use engine::{Database, DbOptions, IpaScheme};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde_json::json;
use std::path::PathBuf;
use std::time::Instant;
use workloads::driver::{self, DriverConfig, Metrics, Workload};

#[derive(Clone, Copy, Debug, ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum WorkloadKind {
    Tpcb,
    Tpcc,
    Tatp,
}

#[derive(Clone, Copy, Debug, ValueEnum, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Eviction {
    Eager,
    NonEager,
}

/// Options shared by `bench` and `compare`.
#[derive(Args, Clone)]
pub struct BenchArgs {
    #[command(flatten)]
    device: DeviceArgs,
    #[arg(long, value_enum, default_value_t = WorkloadKind::Tpcb)]
    workload: WorkloadKind,
    /// TPC-B scale: branches (100,000 accounts each).
    #[arg(long, default_value_t = 1)]
    scale: u32,
    /// TPC-C warehouses.
    #[arg(long, default_value_t = 1)]
    warehouses: u32,
    /// TATP subscribers.
    #[arg(long, default_value_t = 100_000)]
    subscribers: u32,
    /// TPC-C mix in percent: NewOrder, Payment, OrderStatus, Delivery, StockLevel.
    #[arg(long, value_delimiter = ',', default_value = "45,43,4,4,4")]
    mix: Vec<u32>,
    /// Buffer pool size as a share of the database size after loading.
    #[arg(long, default_value_t = 0.1)]
    buffer: f64,
    #[arg(long, value_enum, default_value_t = Eviction::Eager)]
    eviction: Eviction,
    /// IPA mode of the data region: slc, pslc, odd-mlc, or auto (by cell type).
    #[arg(long, default_value = "auto")]
    ipa_mode: String,
    /// V: metadata pairs per delta-record.
    #[arg(long, default_value_t = IpaScheme::DEFAULT_V)]
    v: u8,
    /// Tables (with their indexes) placed in the IPA region; the rest go to a region
    /// without IPA on the other half of the chips. Default: all in one IPA region.
    #[arg(long, value_delimiter = ',', conflicts_with = "schema")]
    ipa_objects: Vec<String>,
    /// SQL file that creates the regions and tablespaces instead of the default single
    /// IPA region. `${IPA}` in it stands for the run's region options (IPA_MODE, IPA, V),
    /// so `compare` can vary the scheme. A table goes to tablespace `ts_<table>` if the
    /// file creates one, else to `ts_data`.
    #[arg(long)]
    schema: Option<PathBuf>,
    /// Checkpoint when the log is this full (a share of its region). The paper's
    /// non-eager runs turn eager log-space reclamation off; 0.9 comes close.
    #[arg(long, default_value_t = DbOptions::default().checkpoint_log_share)]
    checkpoint_log_share: f64,
    /// Chips of the log region [default: a quarter of the chips, 4 on the 16-chip
    /// presets]. Each commit programs a log page, so one chip caps the commit rate
    /// (TPC-B: about 3,500 tps) and the log, not the data, sets the pace; with more,
    /// commits of different terminals program in parallel.
    #[arg(long)]
    log_chips: Option<u32>,
    /// Simulated seconds measured after the warm-up.
    #[arg(long, default_value_t = 60.0)]
    sim_time: f64,
    /// Simulated seconds of warm-up, not measured.
    #[arg(long, default_value_t = 10.0)]
    warmup: f64,
    #[arg(long, default_value_t = 8)]
    terminals: usize,
    /// CPU cost per record operation, simulated µs.
    #[arg(long, default_value_t = 10.0)]
    cpu_us: f64,
    /// Group commit during the run: commits within this many simulated µs share one
    /// log flush, and each terminal waits for its group's (0: every commit forces the
    /// log at once).
    #[arg(long, default_value_t = 0.0)]
    group_commit_us: f64,
    /// Print an interval line every this many simulated seconds (0: none).
    #[arg(long, default_value_t = 0.0)]
    progress: f64,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Check the workload's consistency conditions after the run.
    #[arg(long)]
    check: bool,
}

#[derive(Args)]
pub struct BenchCommand {
    #[command(flatten)]
    common: BenchArgs,
    /// IPA scheme NxM of the data region (0x0: none).
    #[arg(long, default_value = "2x4")]
    ipa: String,
    /// Write the metrics as JSON to this file.
    #[arg(long)]
    json: Option<PathBuf>,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum Format {
    Markdown,
    Csv,
    Json,
}

#[derive(Args)]
pub struct CompareCommand {
    #[command(flatten)]
    common: BenchArgs,
    /// Schemes to run on the same seed; the first is the baseline.
    #[arg(long, value_delimiter = ',', default_value = "0x0,2x4")]
    schemes: Vec<String>,
    #[arg(long, value_enum, default_value_t = Format::Markdown)]
    format: Format,
}

fn workload(args: &BenchArgs, rng: &mut ChaCha8Rng) -> Result<Box<dyn Workload>, String> {
    Ok(match args.workload {
        WorkloadKind::Tpcb => Box::new(workloads::tpcb::Tpcb::new(args.scale)),
        WorkloadKind::Tpcc => {
            let mix: [u32; 5] = args.mix.clone().try_into().map_err(|_| {
                format!(
                    "--mix takes five percentages (NewOrder, Payment, OrderStatus, Delivery, StockLevel), got {}",
                    args.mix.len()
                )
            })?;
            if mix.iter().sum::<u32>() == 0 {
                return Err("--mix: the percentages sum to 0".into());
            }
            Box::new(workloads::tpcc::Tpcc::new(args.warehouses as i64, workloads::tpcc::Mix(mix), rng))
        }
        WorkloadKind::Tatp => Box::new(workloads::tatp::Tatp::new(args.subscribers as i64)),
    })
}

fn size_label(args: &BenchArgs) -> String {
    match args.workload {
        WorkloadKind::Tpcb => format!("scale {}", args.scale),
        WorkloadKind::Tpcc => format!("{} warehouses", args.warehouses),
        WorkloadKind::Tatp => format!("{} subscribers", args.subscribers),
    }
}

/// A run's results with what it needs for the JSON file.
struct Run {
    metrics: Metrics,
    scheme: IpaScheme,
    space_overhead_pct: f64,
    wall_seconds: f64,
    /// Wall time of the warm-up and measured run (the load excluded).
    run_wall_seconds: f64,
    check: Option<Result<(), String>>,
    fill: Fill,
    log_chips: u32,
}

/// How much of the data regions' logical space the loaded database takes: the knob
/// that sets how hard GC works.
#[derive(Clone, Copy, serde::Serialize)]
struct Fill {
    database_mib: f64,
    data_regions_mib: f64,
}

/// `err`, with what to do about it when the data regions ran out of space: more flash
/// or, `instead`, something smaller.
fn full_hint(db: &Database, err: &str, args: &BenchArgs, instead: &str) -> String {
    let mut message = err.to_string();
    if err.contains("no free extent") {
        let fill = Fill::of(db);
        let blocks = args.device.blocks_per_chip.map_or("the preset's".to_string(), |b| b.to_string());
        message += &format!(
            "\n  the database has grown to {:.1} MiB in data regions of {:.1} MiB; give the device more \
             flash (--blocks-per-chip, now {blocks}) or {instead}",
            fill.database_mib, fill.data_regions_mib
        );
    }
    message
}

impl Fill {
    fn of(db: &Database) -> Fill {
        const MIB: f64 = 1024.0 * 1024.0;
        let catalog = db.catalog();
        let dev = db.page_device();
        let data = dev.region_ids().filter(|&r| engine::db::is_data_region(dev.region_name(r)));
        Fill {
            database_mib: (catalog.pages_in_use() * catalog.page_bytes) as f64 / MIB,
            data_regions_mib: data.map(|r| dev.logical_pages(r) as f64 * dev.page_bytes() as f64).sum::<f64>() / MIB,
        }
    }

    fn share(&self) -> f64 {
        self.database_mib / self.data_regions_mib.max(f64::MIN_POSITIVE)
    }
}

/// Where each table goes: `--schema` names tablespaces `ts_<table>` or `ts_data`;
/// `--ipa-objects` splits tables between `ts_data` (IPA) and `ts_plain`.
fn placement(args: &BenchArgs, db: &Database, wl: &dyn Workload) -> Result<impl Fn(&str) -> String, String> {
    let catalog = db.catalog();
    let own: Vec<String> =
        wl.tables().iter().filter(|t| catalog.tablespace(&format!("ts_{t}")).is_ok()).map(|t| t.to_string()).collect();
    if args.schema.is_some() && own.len() < wl.tables().len() && catalog.tablespace("ts_data").is_err() {
        return Err(format!(
            "--schema: tables without a ts_<table> tablespace need one named ts_data (tables: {})",
            wl.tables().join(", ")
        ));
    }
    let split = args.ipa_objects.clone();
    Ok(move |table: &str| {
        if own.iter().any(|t| t == table) {
            format!("ts_{table}")
        } else if split.is_empty() || split.iter().any(|t| t == table) {
            "ts_data".to_string()
        } else {
            "ts_plain".to_string()
        }
    })
}

fn run_one(args: &BenchArgs, scheme_text: &str) -> Result<Run, String> {
    let e = |e: engine::Error| e.to_string();
    let base: IpaScheme = scheme_text.parse()?;
    let scheme = if base.enabled() { IpaScheme::new(base.n, base.m, args.v)? } else { base };
    let geometry = args.device.geometry()?;
    let page_bytes = (geometry.page_bytes as usize).max(4096);
    let cleaner = match args.eviction {
        Eviction::Eager => CleanerPolicy::EAGER,
        Eviction::NonEager => CleanerPolicy::NonEager,
    };
    if !(args.group_commit_us >= 0.0 && args.group_commit_us.is_finite()) {
        return Err(format!("--group-commit-us must be 0 or more simulated µs, got {}", args.group_commit_us));
    }
    if !(args.checkpoint_log_share > 0.0 && args.checkpoint_log_share < 1.0) {
        return Err(format!("--checkpoint-log-share must be above 0 and below 1, got {}", args.checkpoint_log_share));
    }
    let options = DbOptions {
        page_bytes,
        buffer: BufferSize::Pages(4096),
        cleaner,
        checkpoint_log_share: args.checkpoint_log_share,
        log_chips: args.log_chips.unwrap_or((geometry.chips() / 4).max(1)),
        ..DbOptions::default()
    };
    if options.log_chips == 0 || options.log_chips + 2 > geometry.chips() {
        return Err(format!(
            "--log-chips {}: the device has {} chips; one goes to the system region and the data region needs at least one",
            options.log_chips,
            geometry.chips()
        ));
    }
    let log_chips = options.log_chips;
    let wall = Instant::now();
    let mut db = Database::create(args.device.create()?, options).map_err(e)?;
    let mode = match args.ipa_mode.as_str() {
        _ if !scheme.enabled() => "none".to_string(),
        "auto" if geometry.cell == nand::CellType::Slc => "slc".to_string(),
        "auto" => "odd-mlc".to_string(),
        m => m.to_string(),
    };
    let ipa = if scheme.enabled() { format!(", IPA={}x{}, V={}", scheme.n, scheme.m, scheme.v) } else { String::new() };
    let region_options = format!("IPA_MODE={mode}{ipa}");
    let mut rng = ChaCha8Rng::seed_from_u64(args.seed);
    let mut wl = workload(args, &mut rng)?;
    let split = !args.ipa_objects.is_empty();
    if let Some(path) = &args.schema {
        let text = std::fs::read_to_string(path).map_err(|e| format!("--schema {}: {e}", path.display()))?;
        db.execute(&text.replace("${IPA}", &region_options))
            .map_err(|e| format!("--schema {}: {e}", path.display()))?;
    } else if split {
        for t in &args.ipa_objects {
            if !wl.tables().contains(&t.as_str()) {
                return Err(format!(
                    "--ipa-objects: {} has no table {t} (tables: {})",
                    wl.name(),
                    wl.tables().join(", ")
                ));
            }
        }
        let free = geometry.chips() - 2;
        db.execute(&format!(
            "CREATE REGION data ({region_options}, MAX_CHIPS={});
             CREATE TABLESPACE ts_data (REGION=data);
             CREATE REGION plain (IPA_MODE=none);
             CREATE TABLESPACE ts_plain (REGION=plain);",
            (free / 2).max(1)
        ))
        .map_err(e)?;
    } else {
        db.execute(&format!("CREATE REGION data ({region_options}); CREATE TABLESPACE ts_data (REGION=data);"))
            .map_err(e)?;
    }
    let placement = placement(args, &db, wl.as_ref())?;
    let spinner = indicatif::ProgressBar::new_spinner();
    spinner.set_message(format!("loading {} ({}) for [{scheme}]", wl.name(), size_label(args)));
    spinner.enable_steady_tick(std::time::Duration::from_millis(120));
    let loaded = wl.load(&mut db, &placement, &mut rng);
    spinner.finish_and_clear();
    loaded.map_err(|err| format!("loading stopped: {}", full_hint(&db, &err, args, "load a smaller database")))?;
    eprintln!("loaded {} ({}) for [{scheme}] in {:.1} s", wl.name(), size_label(args), wall.elapsed().as_secs_f64());
    let fill = Fill::of(&db);
    eprintln!(
        "database {:.1} MiB in data regions of {:.1} MiB ({:.0}% full)",
        fill.database_mib,
        fill.data_regions_mib,
        fill.share() * 100.0
    );
    db.checkpoint().map_err(e)?;
    db.set_buffer(BufferSize::Share(args.buffer)).map_err(e)?;
    db.set_group_commit((args.group_commit_us * 1000.0) as u64);
    let config = DriverConfig {
        terminals: args.terminals,
        warmup_s: args.warmup,
        duration_s: args.sim_time,
        cpu_ns_per_operation: (args.cpu_us * 1000.0) as u64,
        progress_s: args.progress,
    };
    let total = args.warmup + args.sim_time;
    let run_start = db.now();
    let run_wall = Instant::now();
    let bar = crate::progress((total * 1000.0) as u64, "sim ms");
    let metrics = driver::run(
        &mut db,
        wl.as_mut(),
        &config,
        &mut rng,
        &mut |line| {
            bar.suspend(|| {
                eprintln!(
                    "[{scheme}] {:>7.1} s  {:>9.1} tps  read {:.3} ms  write {:.3} ms  erases {}",
                    line.sim_seconds,
                    line.throughput_tps,
                    line.read_latency_ms,
                    line.write_latency_ms,
                    line.gc_erases_so_far
                )
            })
        },
        &mut |sim| bar.set_position((sim * 1000.0) as u64),
    );
    bar.finish_and_clear();
    let metrics = metrics.map_err(|err| {
        let at = db.now().saturating_sub(run_start) as f64 / 1e9;
        let instead = "run for less simulated time (inserts grow the database as it runs)";
        format!("the run stopped after {at:.1} simulated seconds: {}", full_hint(&db, &err, args, instead))
    })?;
    let run_wall_seconds = run_wall.elapsed().as_secs_f64();
    let check = args.check.then(|| wl.check(&mut db));
    if args.device.image.is_some() {
        db.close().map_err(e)?;
    }
    Ok(Run {
        metrics,
        scheme,
        space_overhead_pct: scheme.area_bytes() as f64 * 100.0 / page_bytes as f64,
        wall_seconds: wall.elapsed().as_secs_f64(),
        run_wall_seconds,
        check,
        fill,
        log_chips,
    })
}

fn run_json(args: &BenchArgs, run: &Run) -> serde_json::Value {
    let mut v = serde_json::to_value(&run.metrics).expect("metrics serialize");
    let o = v.as_object_mut().expect("object");
    o.insert("ipa".into(), json!(run.scheme.to_string()));
    o.insert("v".into(), json!(run.scheme.v));
    o.insert("space_overhead_pct".into(), json!(run.space_overhead_pct));
    o.insert("wall_seconds".into(), json!(run.wall_seconds));
    o.insert("run_wall_seconds".into(), json!(run.run_wall_seconds));
    o.insert("database_mib".into(), json!(run.fill.database_mib));
    o.insert("data_regions_mib".into(), json!(run.fill.data_regions_mib));
    let simulated = run.metrics.sim_seconds + args.warmup;
    o.insert("simulated_seconds_per_wall_second".into(), json!(simulated / run.run_wall_seconds.max(1e-9)));
    o.insert(
        "config".into(),
        json!({
            "workload": args.workload, "scale": args.scale, "warehouses": args.warehouses, "subscribers": args.subscribers, "mix": args.mix, "device": args.device.device,
            "buffer_share": args.buffer, "eviction": args.eviction, "ipa_mode": args.ipa_mode,
            "ipa_objects": args.ipa_objects, "schema": args.schema, "checkpoint_log_share": args.checkpoint_log_share, "log_chips": run.log_chips, "sim_time": args.sim_time, "warmup": args.warmup,
            "terminals": args.terminals, "cpu_us": args.cpu_us, "group_commit_us": args.group_commit_us, "seed": args.seed,
        }),
    );
    v
}

/// Table rows: (label, value).
fn rows(run: &Run) -> Vec<(&'static str, f64)> {
    let m = &run.metrics;
    vec![
        ("Host reads", m.host_reads as f64),
        ("Host writes", m.host_writes as f64),
        ("  out-of-place writes", m.out_of_place_writes as f64),
        ("  in-place appends", m.in_place_appends as f64),
        ("GC page migrations", m.gc_page_migrations as f64),
        ("GC erases", m.gc_erases as f64),
        ("Migrations per host write", m.gc_migrations_per_host_write),
        ("Erases per host write", m.gc_erases_per_host_write),
        ("READ I/O latency [ms]", m.read_latency_ms),
        ("WRITE I/O latency [ms]", m.write_latency_ms),
        ("Throughput [tps]", m.throughput_tps),
        ("DBMS write amplification", m.dbms_write_amplification),
        ("Space overhead [%]", run.space_overhead_pct),
    ]
}

fn show(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else {
        format!("{v:.3}")
    }
}

pub fn bench(cmd: BenchCommand) -> Result<bool, String> {
    let run = run_one(&cmd.common, &cmd.ipa)?;
    let mut table = vec![Row::new(vec!["metric".into(), format!("[{}]", run.scheme)])];
    table.extend(rows(&run).into_iter().map(|(k, v)| Row::new(vec![k.into(), show(v)])));
    print_table(&table);
    println!(
        "{} transactions in {:.1} simulated s; {:.1} wall s ({:.1} for the run, the rest loading)",
        run.metrics.transactions, run.metrics.sim_seconds, run.wall_seconds, run.run_wall_seconds
    );
    if let Some(path) = &cmd.json {
        let text = serde_json::to_string_pretty(&run_json(&cmd.common, &run)).expect("json") + "\n";
        std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    report_check(&run)
}

fn report_check(run: &Run) -> Result<bool, String> {
    match &run.check {
        Some(Err(e)) => {
            println!("consistency check FAILED: {e}");
            Ok(false)
        }
        Some(Ok(())) => {
            println!("consistency check passed");
            Ok(true)
        }
        None => Ok(true),
    }
}

pub fn compare(cmd: CompareCommand) -> Result<bool, String> {
    let runs: Vec<Run> = cmd.schemes.iter().map(|s| run_one(&cmd.common, s)).collect::<Result<_, _>>()?;
    let mut ok = true;
    for r in &runs {
        ok &= report_check(r)?;
    }
    let base = rows(&runs[0]);
    let header: Vec<String> = std::iter::once("metric".to_string())
        .chain(runs.iter().enumerate().map(|(i, r)| {
            if i == 0 {
                format!("[{}]", r.scheme)
            } else {
                format!("[{}] %", r.scheme)
            }
        }))
        .collect();
    let mut lines: Vec<Vec<String>> = Vec::new();
    for (k, (label, v0)) in base.iter().enumerate() {
        let mut line = vec![label.to_string(), show(*v0)];
        for r in &runs[1..] {
            let v = rows(r)[k].1;
            // Against a zero baseline a percentage says nothing: show the value itself.
            line.push(if *v0 == 0.0 { show(v) } else { format!("{:+.0}", (v - v0) / v0 * 100.0) });
        }
        lines.push(line);
    }
    let mut ratio = vec!["Out-of-place : IPA".to_string(), "–".into()];
    ratio.extend(runs[1..].iter().map(|r| {
        let m = &r.metrics;
        if m.in_place_appends == 0 {
            "–".into()
        } else {
            format!("{:.2} : 1", m.out_of_place_writes as f64 / m.in_place_appends as f64)
        }
    }));
    lines.push(ratio);
    match cmd.format {
        Format::Markdown => {
            println!("| {} |", header.join(" | "));
            println!("|{}", "---|".repeat(header.len()));
            for l in &lines {
                println!("| {} |", l.join(" | "));
            }
        }
        Format::Csv => {
            println!("{}", header.join(","));
            for l in &lines {
                println!("{}", l.join(","));
            }
        }
        Format::Json => {
            let all: Vec<_> = runs.iter().map(|r| run_json(&cmd.common, r)).collect();
            println!("{}", serde_json::to_string_pretty(&all).expect("json"));
        }
    }
    Ok(ok)
}

#[derive(Args)]
pub struct CheckCommand {
    /// Database image written by `bench --image`.
    #[arg(long)]
    image: PathBuf,
    #[arg(long, value_enum, default_value_t = WorkloadKind::Tpcc)]
    workload: WorkloadKind,
}

/// Opens a database image (restart recovery included) and checks the workload's
/// consistency conditions.
pub fn check(cmd: CheckCommand) -> Result<bool, String> {
    let storage = nand::MemoryStorage::open_image(&cmd.image).map_err(|e| e.to_string())?;
    let mut db = Database::open(nand::Device::new(Box::new(storage)), DbOptions::default())
        .map_err(|e| format!("{}: {e}", cmd.image.display()))?;
    let mut rng = ChaCha8Rng::seed_from_u64(0);
    let mut wl: Box<dyn Workload> = match cmd.workload {
        WorkloadKind::Tpcb => Box::new(workloads::tpcb::Tpcb::new(1)),
        WorkloadKind::Tpcc => Box::new(workloads::tpcc::Tpcc::new(1, workloads::tpcc::Mix::STANDARD, &mut rng)),
        WorkloadKind::Tatp => {
            return Err("check --workload tatp needs the subscriber count; run bench --workload tatp --check".into())
        }
    };
    match wl.check(&mut db) {
        Ok(()) => {
            println!("{}: {} consistency conditions hold", cmd.image.display(), wl.name());
            Ok(true)
        }
        Err(e) => {
            println!("{}: {e}", cmd.image.display());
            Ok(false)
        }
    }
}
