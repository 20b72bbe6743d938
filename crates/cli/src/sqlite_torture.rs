//! `deltaflash torture --engine sqlite`: real SQLite (`sqlite_flash`) on a
//! conventional FTL, a bank-transfer workload at `synchronous=FULL`, power cut at N
//! random flash operations.
//!
//! After each cut the device powers on, the FTL rebuilds, SQLite reopens and recovers
//! its WAL or rollback journal, and the check judges by what the workload was told (at
//! `synchronous=FULL` a transfer is acknowledged durable when its COMMIT returns):
//! `PRAGMA integrity_check` = ok; every acknowledged transfer is present; no transfer
//! is present that never started committing; each transfer row equals the transfer
//! made, field by field; every balance equals its opening balance plus the transfers
//! present; and the recovered database takes a new transfer. Every fourth cut also
//! cuts SQLite's recovery (1–7 flash operations into the reopened database's first
//! work), then reopens and checks again: a probe transfer whose COMMIT returned
//! before that cut must survive it too. A cut in the second half of the run that finds
//! no acknowledged transfer fails: it would check nothing. Everything is seeded, so a
//! failing cut replays with the same `--seed` and operation number.
//!
//! `--journal` is `bench`'s [`SqliteJournal`] (and `delete`): `sw-wal` runs SW-WAL on the
//! page FTL; `nolgn` runs SQLite with no log on NoLgn-FTL (`sqlite_flash::Journal::Nolgn`,
//! the FTL forced to `nolgn`): every commit is one FTL transaction.

use crate::ftl_args::FtlArgs;
use crate::power_cuts::{cut_loop, Torture};
use crate::sqlite_bench::SqliteJournal;
use clap::{Args, ValueEnum};
use flash::ftl::{FtlConfig, FtlKind};
use nand::{Device, FaultyStorage, Geometry, MemoryStorage, TornOp};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rusqlite::{params, Connection};
use serde_json::json;
use sqlite_flash::{FlashSqlite, FlashSqliteOptions};
use std::collections::BTreeMap;

/// Opening balance of every account.
const OPENING_BALANCE: i64 = 1_000;
/// Ids of the transfers a check makes after recovery (the first one may be cut).
const PROBES: [i64; 2] = [i64::MAX - 1, i64::MAX];

/// Which database the torture runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Engine {
    /// The DeltaFlash engine on NoFTL regions (the bank workload).
    Deltaflash,
    /// SQLite through the flash VFS on a conventional FTL.
    Sqlite,
}

/// Options of `torture --engine sqlite` (the others are shared with the bank torture).
#[derive(Args)]
pub struct SqliteTortureArgs {
    /// The database under torture.
    #[arg(long, value_enum, default_value_t = Engine::Deltaflash)]
    pub engine: Engine,
    /// SQLite only: the FTL under it (page, dftl, block, bast, fast, nolgn), with 25%
    /// over-provisioning so GC fits the small torture device (the FTL flags override it).
    #[arg(long = "sqlite-ftl", default_value = "page", value_parser = ftl_kind)]
    pub ftl: FtlKind,
    /// SQLite only: base-wal (SQLite's WAL; `wal` also accepted), delete (a rollback
    /// journal deleted at commit), sw-wal (the WAL frame-aligned on flash, checkpoints
    /// by remapping; page FTL only) or nolgn (no log, on NoLgn-FTL, whatever
    /// --sqlite-ftl says).
    #[arg(long, value_enum, default_value_t = SqliteJournal::BaseWal)]
    pub journal: SqliteJournal,
}

fn ftl_kind(s: &str) -> Result<FtlKind, String> {
    FtlKind::parse(s).ok_or_else(|| format!("unknown FTL `{s}` (expected page, dftl, block, bast, fast or nolgn)"))
}

/// One run's shape.
struct Config {
    geometry: Geometry,
    ftl: FtlConfig,
    journal: SqliteJournal,
    options: FlashSqliteOptions,
    accounts: u32,
    transfers: u32,
}

impl Config {
    /// Options of a reopened database: the defaults, with the run's journal.
    fn reopen(&self) -> FlashSqliteOptions {
        FlashSqliteOptions { journal: self.options.journal, ..FlashSqliteOptions::default() }
    }
}

#[derive(Default, serde::Serialize)]
struct CutKinds {
    programs: u64,
    gc_copies: u64,
    erases: u64,
    missed: u64,
    restarts_cut: u64,
}

/// Runs the cuts; the caller prints the tally and writes the summary.
pub fn run(
    args: &SqliteTortureArgs,
    ftl_flags: &FtlArgs,
    geometry: Geometry,
    cuts: u32,
    seed: u64,
    accounts: u32,
    transfers: u32,
) -> Result<Torture, String> {
    let kind = if args.journal == SqliteJournal::Nolgn { FtlKind::Nolgn } else { args.ftl };
    let journal = args.journal.flash(1_000);
    let mut ftl = FtlConfig { over_provisioning: 0.25, log_blocks: 8, ..FtlConfig::new(kind) };
    ftl_flags.apply(&mut ftl)?;
    let config = Config {
        geometry,
        ftl,
        journal: args.journal,
        options: FlashSqliteOptions { statement_cpu_ns: 10_000, seed, journal, ..Default::default() },
        accounts,
        transfers,
    };
    let (load_ops, run_ops) = count_operations(&config, seed)?;
    eprintln!(
        "sqlite bank ({} journal, {} FTL): {accounts} accounts, {transfers} transfers ({run_ops} flash operations after a {load_ops}-operation load); {cuts} cuts",
        config.journal.name(),
        kind.name()
    );
    let mut kinds = CutKinds::default();
    let tally = cut_loop(cuts, seed, run_ops, |cut_after, restart_cut| {
        run_cut(&config, seed, load_ops + cut_after, restart_cut, &mut kinds)
    });
    println!(
        "cuts hit: {} page programs, {} GC copies, {} erases, {} missed; {} restarts cut again",
        kinds.programs, kinds.gc_copies, kinds.erases, kinds.missed, kinds.restarts_cut
    );
    Ok(Torture {
        config: json!({
            "engine": "sqlite",
            "storage": format!("ftl:{}", kind.name()),
            "ftl": config.ftl,
            "journal": config.journal.name(),
            "journal_mode": config.journal.mode(),
            "synchronous": "full",
            "geometry": config.geometry,
            "seed": seed,
            "cuts": cuts,
            "accounts": accounts,
            "transfers": transfers,
            "statement_cpu_ns": config.options.statement_cpu_ns,
        }),
        load_operations: load_ops,
        run_operations: run_ops,
        tally,
        cuts_hit: json!(kinds),
    })
}

/// Mutating flash operations so far: what the fault injector counts.
fn operations(c: nand::DeviceCounters) -> u64 {
    c.page_programs + c.reprograms + c.copybacks + c.erases
}

/// Flash operations of the load and of the transfers, without a cut.
fn count_operations(config: &Config, seed: u64) -> Result<(u64, u64), String> {
    let device = Device::new(Box::new(MemoryStorage::new(config.geometry.clone(), true)));
    let db = load(device, config)?;
    let load_ops = operations(db.device_counters());
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    for i in 0..config.transfers {
        transfer(db.connection(), &next_transfer(&mut rng, config, i))
            .result()
            .map_err(|e| format!("transfer {i}: {e}"))?;
    }
    Ok((load_ops, operations(db.device_counters()) - load_ops))
}

/// Creates the database and the accounts (one transaction).
fn load(device: Device, config: &Config) -> Result<FlashSqlite, String> {
    let db =
        FlashSqlite::create(device, &config.ftl, config.options).map_err(|e| format!("creating the database: {e}"))?;
    let c = db.connection();
    let setup = || -> rusqlite::Result<()> {
        let _: String = c.query_row(&format!("PRAGMA journal_mode={}", config.journal.mode()), [], |r| r.get(0))?;
        // Checkpoints every 64 frames, so cuts land in them too.
        c.execute_batch(
            "PRAGMA synchronous=FULL;
             PRAGMA wal_autocheckpoint=64;
             CREATE TABLE accounts(id INTEGER PRIMARY KEY, balance INTEGER NOT NULL);
             CREATE TABLE transfers(id INTEGER PRIMARY KEY, src INTEGER NOT NULL, dst INTEGER NOT NULL, amount INTEGER NOT NULL);
             BEGIN;",
        )?;
        let mut insert = c.prepare("INSERT INTO accounts VALUES (?1, ?2)")?;
        for id in 0..config.accounts {
            insert.execute(params![id, OPENING_BALANCE])?;
        }
        c.execute_batch("COMMIT")
    };
    setup().map_err(|e| format!("loading the accounts: {e}"))?;
    Ok(db)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Transfer {
    id: i64,
    src: i64,
    dst: i64,
    amount: i64,
}

fn next_transfer(rng: &mut ChaCha8Rng, config: &Config, i: u32) -> Transfer {
    let src = rng.gen_range(0..config.accounts) as i64;
    let mut dst = rng.gen_range(0..config.accounts) as i64;
    if dst == src {
        dst = (dst + 1) % config.accounts as i64;
    }
    Transfer { id: i as i64 + 1, src, dst, amount: rng.gen_range(1..50) }
}

/// How a transfer ended.
enum Outcome {
    /// COMMIT returned: acknowledged durable.
    Committed,
    /// Failed inside COMMIT: it may have committed.
    FailedCommitting(rusqlite::Error),
    /// Failed before COMMIT: it must not survive.
    Failed(rusqlite::Error),
}

impl Outcome {
    fn result(self) -> rusqlite::Result<()> {
        match self {
            Outcome::Committed => Ok(()),
            Outcome::FailedCommitting(e) | Outcome::Failed(e) => Err(e),
        }
    }
}

/// One transfer as one transaction.
fn transfer(c: &Connection, t: &Transfer) -> Outcome {
    let body = || -> rusqlite::Result<()> {
        c.execute_batch("BEGIN IMMEDIATE")?;
        c.execute("UPDATE accounts SET balance = balance - ?1 WHERE id = ?2", params![t.amount, t.src])?;
        c.execute("UPDATE accounts SET balance = balance + ?1 WHERE id = ?2", params![t.amount, t.dst])?;
        c.execute("INSERT INTO transfers VALUES (?1, ?2, ?3, ?4)", params![t.id, t.src, t.dst, t.amount])?;
        Ok(())
    };
    let outcome = match body() {
        Ok(()) => c.execute_batch("COMMIT").map_or_else(Outcome::FailedCommitting, |()| Outcome::Committed),
        Err(e) => Outcome::Failed(e),
    };
    if !matches!(outcome, Outcome::Committed) {
        // After a power cut the rollback fails too; the reopen recovers.
        let _ = c.execute_batch("ROLLBACK");
    }
    outcome
}

/// What the workload was told: transfers whose COMMIT returned (acknowledged
/// durable), and those a cut interrupted inside COMMIT, which may have committed.
#[derive(Default)]
struct Told {
    acknowledged: BTreeMap<i64, Transfer>,
    maybe: BTreeMap<i64, Transfer>,
}

impl Told {
    /// Records `t`'s outcome; `true` if its COMMIT returned.
    fn record(&mut self, t: Transfer, outcome: Outcome) -> bool {
        match outcome {
            Outcome::Committed => self.acknowledged.insert(t.id, t),
            Outcome::FailedCommitting(_) => self.maybe.insert(t.id, t),
            Outcome::Failed(_) => return false,
        };
        self.acknowledged.contains_key(&t.id)
    }
}

/// Loads, runs transfers until the cut at device operation `cut_at`, reopens and
/// checks; with `recovery_cut`, the first check is cut that many operations in and
/// the device reopened and checked once more. Returns how many transfers were
/// acknowledged before the cut.
fn run_cut(
    config: &Config,
    seed: u64,
    cut_at: u64,
    recovery_cut: Option<u64>,
    kinds: &mut CutKinds,
) -> Result<usize, String> {
    let storage = FaultyStorage::new(MemoryStorage::new(config.geometry.clone(), true), Some(cut_at), seed);
    let db = load(Device::new(Box::new(storage)), config)?;
    let mut told = Told::default();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    for i in 0..config.transfers {
        let t = next_transfer(&mut rng, config, i);
        if !told.record(t, transfer(db.connection(), &t)) {
            break;
        }
    }
    let acknowledged = told.acknowledged.len();
    let mut device = db.into_device();
    match device.storage().last_torn() {
        Some(TornOp::Program { .. }) => kinds.programs += 1,
        Some(TornOp::CopyProgram { .. }) => kinds.gc_copies += 1,
        Some(TornOp::Erase { .. }) => kinds.erases += 1,
        None => kinds.missed += 1,
    }
    device.power_on();
    let mut db = FlashSqlite::open_with(device, 0, config.reopen()).map_err(|e| format!("reopening: {e}"))?;
    if let Some(after) = recovery_cut {
        db.arm_power_cut(after);
        // Cut or not, this first check is not judged (the second one is); its probe
        // transfer counts as acknowledged if its COMMIT returned.
        if check(&db, config, &told).is_ok() {
            told.record(probe(PROBES[0]), transfer(db.connection(), &probe(PROBES[0])));
        }
        let mut device = db.into_device();
        if !device.storage().powered() {
            kinds.restarts_cut += 1;
        }
        device.power_on();
        db = FlashSqlite::open_with(device, 0, config.reopen())
            .map_err(|e| format!("reopening after the recovery cut: {e}"))?;
    }
    let checked = check(&db, config, &told).and_then(|()| {
        transfer(db.connection(), &probe(PROBES[1])).result().map_err(|e| format!("a transfer after recovery: {e}"))
    });
    checked.map(|()| acknowledged).map_err(|e| match db.last_io_error() {
        Some(io) => format!("{e} (last flash error: {io})"),
        None => e,
    })
}

/// The transfer a check makes after recovery.
fn probe(id: i64) -> Transfer {
    Transfer { id, src: 0, dst: 1, amount: 1 }
}

/// Checks the recovered database against what the workload was told (see the module
/// comment).
fn check(db: &FlashSqlite, config: &Config, told: &Told) -> Result<(), String> {
    let c = db.connection();
    let sql = |e: rusqlite::Error| format!("after recovery: {e}");
    let integrity: String = c.query_row("PRAGMA integrity_check", [], |r| r.get(0)).map_err(sql)?;
    if integrity != "ok" {
        return Err(format!("integrity_check: {integrity}"));
    }
    let mut present = BTreeMap::new();
    let mut stmt = c.prepare("SELECT id, src, dst, amount FROM transfers").map_err(sql)?;
    let rows = stmt
        .query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?, r.get::<_, i64>(2)?, r.get::<_, i64>(3)?)))
        .map_err(sql)?;
    for row in rows {
        let (id, src, dst, amount) = row.map_err(sql)?;
        let found = Transfer { id, src, dst, amount };
        let Some(made) = told.acknowledged.get(&id).or_else(|| told.maybe.get(&id)) else {
            return Err(format!("transfer {id} is present but never committed"));
        };
        if found != *made {
            return Err(format!("transfer {id} reads back as {found:?}, made as {made:?}"));
        }
        present.insert(id, found);
    }
    if let Some(lost) = told.acknowledged.keys().find(|id| !present.contains_key(id)) {
        return Err(format!(
            "transfer {lost} committed but is missing ({} of {} acknowledged present)",
            told.acknowledged.keys().filter(|id| present.contains_key(id)).count(),
            told.acknowledged.len()
        ));
    }
    // Every transfer present names existing accounts: it equals one the workload made.
    let mut balances = vec![OPENING_BALANCE; config.accounts as usize];
    for t in present.values() {
        balances[t.src as usize] -= t.amount;
        balances[t.dst as usize] += t.amount;
    }
    let mut stmt = c.prepare("SELECT id, balance FROM accounts ORDER BY id").map_err(sql)?;
    let rows = stmt.query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?))).map_err(sql)?;
    let mut seen = 0;
    for row in rows {
        let (id, balance) = row.map_err(sql)?;
        let expected = usize::try_from(id).ok().and_then(|i| balances.get(i)).copied();
        if expected != Some(balance) {
            return Err(format!("account {id} holds {balance}; its transfers give {expected:?}"));
        }
        seen += 1;
    }
    if seen != config.accounts {
        return Err(format!("{seen} accounts, expected {}", config.accounts));
    }
    Ok(())
}
