//! `deltaflash sqlite-compare`: the TPC-B transaction on SQLite (WAL mode,
//! synchronous=NORMAL, a database file on tmpfs) and on DeltaFlash (the `aries` log on,
//! device latency costing no wall time), with the same data size and buffer share;
//! transactions per wall-second for both. SQLite's file is new: `--sqlite-path` never
//! replaces a file, and without it the file lives in a scratch directory.
//!
//! `--json FILE` writes the resolved config (with `command_line`, for `deltaflash
//! rerun`) and both systems' results. The speeds are wall-clock (every key holding
//! `wall`), which a re-run does not reproduce; what each system did is deterministic for
//! a seed and is: SQLite's database pages and the sum of its balances after the run,
//! DeltaFlash's simulated seconds, flash operations and log page writes.

use crate::output::OverwriteArg;
use crate::setup::DeviceArgs;
use crate::table::{print_table, Row};
use clap::Args;
use engine::db::BufferSize;
use engine::{Database, DbOptions};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::time::Instant;
use workloads::tpcb::{Tpcb, ACCOUNTS_PER_BRANCH, TELLERS_PER_BRANCH};
use workloads::Workload;

#[derive(Args)]
pub struct SqliteCompareArgs {
    #[command(flatten)]
    device: DeviceArgs,
    /// TPC-B scale (branches of 100,000 accounts), 1 to 1000.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
    scale: u32,
    /// Transactions measured on each system, ≥ 1.
    #[arg(long, default_value_t = 100_000, value_parser = clap::value_parser!(u64).range(1..=1 << 40))]
    transactions: u64,
    /// Cache (SQLite) and buffer pool (DeltaFlash) as a share of the loaded database, in (0, 1].
    #[arg(long, default_value_t = 0.1, value_parser = crate::setup::positive_share)]
    buffer: f64,
    /// SQLite database file, created new (an existing file is refused, never replaced)
    /// and kept; put it on tmpfs. Default: a scratch directory in /dev/shm (else the
    /// system's temporary directory), removed at the end.
    #[arg(long, value_name = "PATH")]
    sqlite_path: Option<PathBuf>,
    /// Seed of the transaction inputs (the same on both systems).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Write the config and results as JSON to this file (a new file; see --overwrite).
    #[arg(long)]
    json: Option<PathBuf>,
    #[command(flatten)]
    overwrite: OverwriteArg,
}

/// One system's run: its wall time, and what it did that the seed decides (JSON).
struct Run {
    wall_seconds: f64,
    deterministic: serde_json::Value,
}

impl Run {
    fn per_wall_second(&self, transactions: u64) -> f64 {
        transactions as f64 / self.wall_seconds
    }

    /// The run as the JSON's `sqlite` or `deltaflash` object.
    fn to_json(&self, transactions: u64) -> serde_json::Value {
        let mut v = self.deterministic.clone();
        v["wall_seconds"] = json!(self.wall_seconds);
        v["transactions_per_wall_second"] = json!(self.per_wall_second(transactions));
        v
    }
}

/// Where SQLite's database goes: `--sqlite-path`, or a scratch directory (removed when
/// the returned guard drops) on tmpfs where there is one.
fn sqlite_file(args: &SqliteCompareArgs) -> Result<(PathBuf, Option<tempfile::TempDir>), String> {
    if let Some(path) = &args.sqlite_path {
        crate::output::check_new("--sqlite-path", path)?;
        return Ok((path.clone(), None));
    }
    let shm = Path::new("/dev/shm");
    let base = if shm.is_dir() { shm.to_path_buf() } else { std::env::temp_dir() };
    let dir = tempfile::Builder::new()
        .prefix("deltaflash-tpcb")
        .tempdir_in(&base)
        .map_err(|e| format!("a scratch directory in {}: {e}", base.display()))?;
    Ok((dir.path().join("tpcb.sqlite"), Some(dir)))
}

fn sqlite_run(args: &SqliteCompareArgs, path: &Path) -> Result<Run, String> {
    let e = |e: rusqlite::Error| format!("sqlite: {e}");
    workloads::sqlite::host::create_database_file(path).map_err(|e| format!("--sqlite-path {e}"))?;
    let conn = rusqlite::Connection::open(path).map_err(e)?;
    conn.execute_batch(
        "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;
         CREATE TABLE branch (b_id INTEGER PRIMARY KEY, b_balance INTEGER NOT NULL, b_filler CHAR(88));
         CREATE TABLE teller (t_id INTEGER PRIMARY KEY, t_b_id INTEGER NOT NULL, t_balance INTEGER NOT NULL, t_filler CHAR(84));
         CREATE TABLE account (a_id INTEGER PRIMARY KEY, a_b_id INTEGER NOT NULL, a_balance INTEGER NOT NULL, a_filler CHAR(84));
         CREATE TABLE history (h_t_id INTEGER, h_b_id INTEGER, h_a_id INTEGER, h_delta INTEGER, h_time INTEGER, h_filler CHAR(22));",
    )
    .map_err(e)?;
    conn.execute_batch("BEGIN").map_err(e)?;
    for b in 0..args.scale as i64 {
        conn.execute("INSERT INTO branch VALUES (?1, 0, '')", [b]).map_err(e)?;
        for k in 0..TELLERS_PER_BRANCH as i64 {
            conn.execute("INSERT INTO teller VALUES (?1, ?2, 0, '')", [b * TELLERS_PER_BRANCH as i64 + k, b])
                .map_err(e)?;
        }
        let mut insert = conn.prepare("INSERT INTO account VALUES (?1, ?2, 0, '')").map_err(e)?;
        for k in 0..ACCOUNTS_PER_BRANCH as i64 {
            insert.execute([b * ACCOUNTS_PER_BRANCH as i64 + k, b]).map_err(e)?;
        }
    }
    conn.execute_batch("COMMIT; PRAGMA wal_checkpoint(TRUNCATE);").map_err(e)?;
    let pages: i64 = conn.query_row("PRAGMA page_count", [], |r| r.get(0)).map_err(e)?;
    let page_size: i64 = conn.query_row("PRAGMA page_size", [], |r| r.get(0)).map_err(e)?;
    let cache_kib = ((pages * page_size) as f64 * args.buffer / 1024.0).max(64.0) as i64;
    conn.execute_batch(&format!("PRAGMA cache_size=-{cache_kib}")).map_err(e)?;
    let mut rng = ChaCha8Rng::seed_from_u64(args.seed);
    let tellers = (args.scale * TELLERS_PER_BRANCH) as i64;
    let mut account = conn.prepare("UPDATE account SET a_balance = a_balance + ?1 WHERE a_id = ?2").map_err(e)?;
    let mut read = conn.prepare("SELECT a_balance FROM account WHERE a_id = ?1").map_err(e)?;
    let mut teller = conn.prepare("UPDATE teller SET t_balance = t_balance + ?1 WHERE t_id = ?2").map_err(e)?;
    let mut branch = conn.prepare("UPDATE branch SET b_balance = b_balance + ?1 WHERE b_id = ?2").map_err(e)?;
    let mut history = conn.prepare("INSERT INTO history VALUES (?1, ?2, ?3, ?4, ?5, '')").map_err(e)?;
    let start = Instant::now();
    for i in 0..args.transactions as i64 {
        let t = rng.gen_range(0..tellers);
        let b = t / TELLERS_PER_BRANCH as i64;
        let a = b * ACCOUNTS_PER_BRANCH as i64 + rng.gen_range(0..ACCOUNTS_PER_BRANCH as i64);
        let delta: i64 = rng.gen_range(-999_999..=999_999);
        conn.execute_batch("BEGIN").map_err(e)?;
        account.execute([delta, a]).map_err(e)?;
        let _: i64 = read.query_row([a], |r| r.get(0)).map_err(e)?;
        teller.execute([delta, t]).map_err(e)?;
        branch.execute([delta, b]).map_err(e)?;
        history.execute([t, b, a, delta, i]).map_err(e)?;
        conn.execute_batch("COMMIT").map_err(e)?;
    }
    let wall_seconds = start.elapsed().as_secs_f64();
    let pages: i64 = conn.query_row("PRAGMA page_count", [], |r| r.get(0)).map_err(e)?;
    let balances: i64 = conn.query_row("SELECT SUM(a_balance) FROM account", [], |r| r.get(0)).map_err(e)?;
    let history: i64 = conn.query_row("SELECT COUNT(*) FROM history", [], |r| r.get(0)).map_err(e)?;
    let deterministic = json!({
        "database_pages": pages,
        "page_bytes": page_size,
        "cache_kib": cache_kib,
        "account_balance_sum": balances,
        "history_rows": history,
    });
    Ok(Run { wall_seconds, deterministic })
}

fn deltaflash_run(args: &SqliteCompareArgs) -> Result<Run, String> {
    let e = |e: engine::Error| e.to_string();
    let mut db = Database::create(args.device.create()?, DbOptions::default()).map_err(e)?;
    db.execute("CREATE REGION data (IPA_MODE=none); CREATE TABLESPACE ts (REGION=data);").map_err(e)?;
    let mut tpcb = Tpcb::new(args.scale);
    let mut rng = ChaCha8Rng::seed_from_u64(args.seed);
    tpcb.load(&mut db, &|_| "ts".to_string(), &mut rng)?;
    db.checkpoint().map_err(e)?;
    db.set_buffer(BufferSize::Share(args.buffer)).map_err(e)?;
    let (sim_start, flash_start) = (db.now(), db.page_device().device().counters());
    let log_start = db.log_counters().map_or(0, |c| c.page_writes);
    let start = Instant::now();
    for _ in 0..args.transactions {
        tpcb.transaction(&mut db, 0, &mut rng)?;
    }
    let wall_seconds = start.elapsed().as_secs_f64();
    let flash = db.page_device().device().counters();
    let deterministic = json!({
        "sim_seconds": (db.now() - sim_start) as f64 / 1e9,
        "flash_reads": flash.page_reads - flash_start.page_reads,
        "flash_programs": (flash.page_programs + flash.reprograms + flash.copybacks)
            - (flash_start.page_programs + flash_start.reprograms + flash_start.copybacks),
        "flash_erases": flash.erases - flash_start.erases,
        "log_page_writes": db.log_counters().map_or(0, |c| c.page_writes) - log_start,
    });
    Ok(Run { wall_seconds, deterministic })
}

pub fn run(args: SqliteCompareArgs) -> Result<(), String> {
    // Both systems' setups and the output file are checked before either runs.
    let json_file = args.overwrite.check("--json", args.json.as_deref())?;
    let geometry = args.device.geometry()?;
    args.device.check_memory(&geometry)?;
    let (path, _scratch) = sqlite_file(&args)?;
    eprintln!("SQLite: loading scale {} and running {} TPC-B transactions", args.scale, args.transactions);
    let sqlite = sqlite_run(&args, &path)?;
    eprintln!("DeltaFlash: the same");
    let ours = deltaflash_run(&args)?;
    let n = args.transactions;
    let ratio = ours.per_wall_second(n) / sqlite.per_wall_second(n);
    let rows = vec![
        Row::new(["system", "transactions per wall-second", "wall s"].map(String::from).to_vec()),
        Row::new(vec![
            "SQLite (WAL, synchronous=NORMAL, tmpfs)".into(),
            format!("{:.0}", sqlite.per_wall_second(n)),
            format!("{:.2}", sqlite.wall_seconds),
        ]),
        Row::new(vec![
            "DeltaFlash (aries log, [0x0])".into(),
            format!("{:.0}", ours.per_wall_second(n)),
            format!("{:.2}", ours.wall_seconds),
        ]),
    ];
    print_table(&rows);
    println!("DeltaFlash / SQLite: {ratio:.2}");
    if let Some(file) = json_file {
        let mut value = json!({
            "command": "sqlite-compare",
            "config": {
                "scale": args.scale,
                "transactions": n,
                "buffer": args.buffer,
                "seed": args.seed,
                "device": args.device.config(),
                "geometry": geometry,
                "sqlite": {"journal_mode": "wal", "synchronous": "normal"},
                "deltaflash": {"journal": "aries", "ipa": "0x0"},
                "command_line": crate::rerun::command_line(),
            },
            "sqlite": sqlite.to_json(n),
            "deltaflash": ours.to_json(n),
            "deltaflash_over_sqlite_per_wall_second": ratio,
        });
        for (key, v) in crate::rerun::build_info() {
            value[key] = v;
        }
        file.write((serde_json::to_string_pretty(&value).map_err(|e| format!("json: {e}"))? + "\n").as_bytes())?;
    }
    Ok(())
}
