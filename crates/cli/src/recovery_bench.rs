//! `deltaflash recovery-bench`: log volume per transaction and restart time against the
//! amount of log a restart must read, for a run of update transactions ended by a crash.

use crate::setup::DeviceArgs;
use crate::table::{print_table, Row};
use clap::Args;
use engine::buffer::CleanerPolicy;
use engine::db::BufferSize;
use engine::types::Value;
use engine::{Database, DbOptions};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::time::Instant;

#[derive(Args)]
pub struct RecoveryBenchArgs {
    #[command(flatten)]
    device: DeviceArgs,
    /// Rows in the table, ≥ 1.
    #[arg(long, default_value_t = 20_000, value_parser = clap::value_parser!(u64).range(1..=1 << 32))]
    rows: u64,
    /// Transactions between the last checkpoint and the crash, one run per value (each ≥ 1).
    #[arg(long, value_delimiter = ',', default_value = "1000,10000,50000", value_parser = clap::value_parser!(u64).range(1..=1 << 32))]
    transactions: Vec<u64>,
    /// Seed of the rows updated.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Write the figures as JSON to this file (a new file; see --overwrite).
    #[arg(long)]
    json: Option<std::path::PathBuf>,
    #[command(flatten)]
    overwrite: crate::output::OverwriteArg,
}

pub fn run(args: RecoveryBenchArgs) -> Result<(), String> {
    let json = args.overwrite.check("--json", args.json.as_deref())?;
    let e = |e: engine::Error| e.to_string();
    let mut runs = Vec::new();
    let mut rows = vec![Row::new(
        [
            "transactions",
            "log bytes/tx",
            "log page writes/tx",
            "log MiB to read",
            "restart wall s",
            "restart simulated ms",
        ]
        .map(String::from)
        .to_vec(),
    )];
    for &n in &args.transactions {
        // No checkpoint after the load and a buffer that keeps every page: the restart
        // redoes the whole run.
        let options = DbOptions {
            buffer: BufferSize::Pages(8192),
            cleaner: CleanerPolicy::NonEager,
            checkpoint_log_share: 1.0,
            ..DbOptions::default()
        };
        let mut db = Database::create(args.device.create()?, options.clone()).map_err(e)?;
        db.execute(
            "CREATE REGION data (IPA_MODE=SLC, IPA=2x4);
             CREATE TABLESPACE ts (REGION=data);
             CREATE TABLE account (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, filler CHAR(84)) TABLESPACE ts;",
        )
        .map_err(e)?;
        let t = db.table_id("account").map_err(e)?;
        let tx = db.begin();
        for id in 0..args.rows as i64 {
            db.insert(&tx, t, &[Value::Int(id), Value::Int(0), Value::Text("x".into())]).map_err(e)?;
        }
        db.commit(tx).map_err(e)?;
        db.checkpoint().map_err(e)?;
        let (start, _) = db.log_lsns().unwrap_or_default();
        let before = db.log_counters().unwrap_or_default();
        let mut rng = ChaCha8Rng::seed_from_u64(args.seed);
        let bar = crate::progress(n, "updates");
        for _ in 0..n {
            let tx = db.begin();
            let id = rng.gen_range(0..args.rows as i64);
            db.add(&tx, t, &[Value::Int(id)], 1, &Value::Int(1)).map_err(e)?;
            db.commit(tx).map_err(e)?;
            bar.inc(1);
        }
        bar.finish_and_clear();
        let after = db.log_counters().unwrap_or_default();
        let (_, end) = db.log_lsns().unwrap_or_default();
        let device = db.crash();
        let wall = Instant::now();
        let db = Database::open(device, options).map_err(e)?;
        let wall_s = wall.elapsed().as_secs_f64();
        let log_bytes_per_transaction = (after.bytes - before.bytes) as f64 / n as f64;
        let log_page_writes_per_transaction = (after.page_writes - before.page_writes) as f64 / n as f64;
        let log_bytes_to_read = end - start;
        let restart_sim_ms = db.now() as f64 / 1e6;
        rows.push(Row::new(vec![
            n.to_string(),
            format!("{log_bytes_per_transaction:.0}"),
            format!("{log_page_writes_per_transaction:.2}"),
            format!("{:.1}", log_bytes_to_read as f64 / (1 << 20) as f64),
            format!("{wall_s:.3}"),
            format!("{restart_sim_ms:.1}"),
        ]));
        runs.push(serde_json::json!({
            "transactions": n,
            "log_bytes_per_transaction": log_bytes_per_transaction,
            "log_page_writes_per_transaction": log_page_writes_per_transaction,
            "log_bytes_to_read": log_bytes_to_read,
            "restart_wall_seconds": wall_s,
            "restart_sim_ms": restart_sim_ms,
        }));
    }
    print_table(&rows);
    if let Some(file) = &json {
        let mut value = serde_json::json!({
            "command": "recovery-bench",
            "config": {
                "rows": args.rows,
                "transactions": args.transactions,
                "seed": args.seed,
                "device": args.device.config(),
                "command_line": crate::rerun::command_line(),
            },
            "runs": runs,
        });
        for (key, v) in crate::rerun::build_info() {
            value[key] = v;
        }
        file.write((serde_json::to_string_pretty(&value).expect("json") + "\n").as_bytes())?;
    }
    Ok(())
}
