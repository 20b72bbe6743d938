//! `deltaflash engine-bench`: engine CPU speed in wall-clock terms. Simulated device
//! time does not cost wall time, so these figures are the engine's own work: point
//! lookups, updates and inserts through the buffer pool, B+-tree and heap, and the cost
//! of a page write with and without IPA bookkeeping (diff, rule, delta-record encoding).

use crate::output::OverwriteArg;
use crate::setup::DeviceArgs;
use crate::table::{print_table, Row};
use clap::Args;
use engine::db::BufferSize;
use engine::delta::{FlashState, IpaScheme};
use engine::page::{self, Kind};
use engine::store::{PageId, PageStore};
use engine::types::Value;
use engine::{Database, DbOptions};
use flash::{Flash, IpaMode, RegionId, RegionSpec};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::json;
use std::path::PathBuf;
use std::time::Instant;

#[derive(Args)]
pub struct EngineBenchArgs {
    #[command(flatten)]
    device: DeviceArgs,
    /// Rows loaded before measuring, ≥ 1.
    #[arg(long, default_value_t = 200_000, value_parser = clap::value_parser!(u64).range(1..=1 << 32))]
    rows: u64,
    /// Operations per measured phase, ≥ 1.
    #[arg(long, default_value_t = 200_000, value_parser = clap::value_parser!(u64).range(1..=1 << 40))]
    ops: u64,
    /// IPA scheme NxM of the table's region (0x0: none).
    #[arg(long, default_value = "2x4")]
    ipa: String,
    /// Buffer pool frames, 4 to 4,194,304.
    #[arg(long, default_value_t = 4096, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(4..=1 << 22))]
    buffer_pages: usize,
    /// Run without the write-ahead log (changes durable only at checkpoints).
    #[arg(long)]
    no_log: bool,
    /// Seed of the keys looked up and updated.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Write the figures as JSON to this file (a new file; see --overwrite).
    #[arg(long)]
    json: Option<PathBuf>,
    #[command(flatten)]
    overwrite: OverwriteArg,
}

pub fn run(args: EngineBenchArgs) -> Result<(), String> {
    let json = args.overwrite.check("--json", args.json.as_deref())?;
    let scheme: IpaScheme = args.ipa.parse()?;
    if args.device.no_data || args.device.image.is_some() {
        return Err("engine-bench runs on an in-memory device with data; drop --no-data and --image".into());
    }
    let e = |e: engine::Error| e.to_string();
    let options = DbOptions {
        buffer: BufferSize::Pages(args.buffer_pages),
        journal: if args.no_log { engine::JournalKind::None } else { engine::JournalKind::Aries },
        ..DbOptions::default()
    };
    let mut db = Database::create(args.device.create()?, options).map_err(e)?;
    let mode = if scheme.enabled() { "SLC" } else { "none" };
    let ipa = if scheme.enabled() { format!(", IPA={scheme}, V={}", scheme.v) } else { String::new() };
    db.execute(&format!(
        "CREATE REGION data (IPA_MODE={mode}{ipa});
         CREATE TABLESPACE ts (REGION=data);
         CREATE TABLE account (id BIGINT PRIMARY KEY, branch INT NOT NULL, balance BIGINT NOT NULL, filler CHAR(84)) TABLESPACE ts;"
    ))
    .map_err(e)?;
    let t = db.table_id("account").map_err(e)?;
    let mut rng = ChaCha8Rng::seed_from_u64(args.seed);
    let row =
        |id: u64| [Value::Int(id as i64), Value::Int((id % 100) as i64), Value::Int(0), Value::Text("x".repeat(84))];

    let mut phases: Vec<(&str, u64, f64)> = Vec::new();
    let mut timed = |name, n: u64, f: &mut dyn FnMut(&mut Database, &mut ChaCha8Rng, u64) -> Result<(), String>| {
        let start = Instant::now();
        for i in 0..n {
            f(&mut db, &mut rng, i)?;
        }
        phases.push((name, n, start.elapsed().as_secs_f64()));
        Ok::<_, String>(())
    };
    eprintln!("loading {} rows", args.rows);
    timed("load (insert)", args.rows, &mut |db, _, i| {
        let tx = db.begin();
        db.insert(&tx, t, &row(i)).map_err(e)?;
        db.commit(tx).map(|_| ()).map_err(e)
    })?;
    let rows = args.rows;
    timed("point lookup", args.ops, &mut |db, rng, _| {
        let tx = db.begin();
        let id = rng.gen_range(0..rows) as i64;
        db.get(&tx, t, &[Value::Int(id)]).map_err(e)?.ok_or("a loaded row is missing")?;
        db.commit(tx).map(|_| ()).map_err(e)
    })?;
    timed("update (balance += 1)", args.ops, &mut |db, rng, _| {
        let tx = db.begin();
        let id = rng.gen_range(0..rows) as i64;
        db.add(&tx, t, &[Value::Int(id)], 2, &Value::Int(1)).map_err(e)?;
        db.commit(tx).map(|_| ()).map_err(e)
    })?;
    timed("insert", args.ops, &mut |db, _, i| {
        let tx = db.begin();
        db.insert(&tx, t, &row(rows + i)).map_err(e)?;
        db.commit(tx).map(|_| ()).map_err(e)
    })?;
    let counters = db.object_stats().into_iter().find(|s| s.name == "account").map(|s| s.counters).unwrap_or_default();
    let eviction = eviction_cost(&args.device, scheme)?;

    let mut table = vec![Row::new(["phase", "operations", "wall s", "ops per wall-second"].map(String::from).to_vec())];
    for (name, n, secs) in &phases {
        table.push(Row::new(vec![
            name.to_string(),
            n.to_string(),
            format!("{secs:.3}"),
            format!("{:.0}", *n as f64 / secs),
        ]));
    }
    print_table(&table);
    println!(
        "\ntable account [{scheme}]: {} out-of-place writes, {} in-place appends, buffer {} frames",
        counters.out_of_place_writes, counters.in_place_appends, args.buffer_pages
    );
    println!(
        "page write (eviction) cost: {:.0} ns without IPA, {:.0} ns with [{scheme}] bookkeeping ({} appends, {} out-of-place)",
        eviction.plain_ns, eviction.ipa_ns, eviction.appends, eviction.out_of_place
    );
    if let Some(file) = &json {
        let mut value = json!({
            "command": "engine-bench",
            "config": {
                "rows": args.rows,
                "ops": args.ops,
                "ipa": scheme.to_string(),
                "buffer_pages": args.buffer_pages,
                "log": !args.no_log,
                "seed": args.seed,
                "device": args.device.config(),
                "command_line": crate::rerun::command_line(),
            },
            "phases": phases.iter().map(|(n, ops, s)| json!({"phase": n, "operations": ops, "wall_seconds": s, "ops_per_wall_second": *ops as f64 / s})).collect::<Vec<_>>(),
            "out_of_place_writes": counters.out_of_place_writes,
            "in_place_appends": counters.in_place_appends,
            "page_write_ns_without_ipa": eviction.plain_ns,
            "page_write_ns_with_ipa": eviction.ipa_ns,
        });
        for (key, v) in crate::rerun::build_info() {
            value[key] = v;
        }
        file.write((serde_json::to_string_pretty(&value).expect("json") + "\n").as_bytes())?;
    }
    Ok(())
}

struct EvictionCost {
    plain_ns: f64,
    ipa_ns: f64,
    appends: u64,
    out_of_place: u64,
}

/// Writes the same small change (one body byte and the page LSN) to a set of pages,
/// repeatedly, through a [0×0] store and through one with `scheme`.
fn eviction_cost(device: &DeviceArgs, scheme: IpaScheme) -> Result<EvictionCost, String> {
    const PAGES: u32 = 256;
    const ROUNDS: u32 = 200;
    let time = |scheme: IpaScheme| -> Result<(f64, u64, u64), String> {
        let mode = if scheme.enabled() { IpaMode::Slc } else { IpaMode::None };
        let flash = Flash::format(device.create()?, vec![RegionSpec::new("r", mode)]).map_err(|e| e.to_string())?;
        let mut store = PageStore::new(Box::new(flash), 4096).map_err(|e| e.to_string())?;
        store.set_scheme(RegionId(0), scheme).map_err(|e| e.to_string())?;
        let body_end = store.body_end(0);
        let mut frames: Vec<(Vec<u8>, Vec<u8>, FlashState)> = (0..PAGES)
            .map(|no| {
                let mut p = vec![0u8; 4096];
                page::init(&mut p, body_end, no, 1, Kind::Heap, 0);
                page::insert(&mut p, body_end, &[7u8; 3000]).expect("fits");
                (p, vec![0u8; 4096], FlashState::default())
            })
            .collect();
        let start = Instant::now();
        for round in 0..ROUNDS {
            for (no, (p, base, state)) in frames.iter_mut().enumerate() {
                p[100 + (round as usize % 2000)] ^= 1;
                page::set_lsn(p, round as u64 + 1);
                let pid = PageId { region: 0, page: no as u32 };
                store.write(pid, p, base, state, 0).map_err(|e| e.to_string())?;
            }
        }
        let ns = start.elapsed().as_nanos() as f64 / (PAGES * ROUNDS) as f64;
        let c = store.counters().get(&1).copied().unwrap_or_default();
        Ok((ns, c.in_place_appends, c.out_of_place_writes))
    };
    // Alternate and keep the best of three: the first runs also pay for first-touch
    // memory of the emulated device.
    let mut best = EvictionCost { plain_ns: f64::MAX, ipa_ns: f64::MAX, appends: 0, out_of_place: 0 };
    for _ in 0..3 {
        best.plain_ns = best.plain_ns.min(time(IpaScheme::NONE)?.0);
        let (ns, appends, out_of_place) = time(scheme)?;
        best.ipa_ns = best.ipa_ns.min(ns);
        (best.appends, best.out_of_place) = (appends, out_of_place);
    }
    Ok(best)
}
