//! The bank torture test: transfers between accounts, each logging a history row with
//! a secondary index, run against a device that loses power at a chosen flash
//! operation; the database is then reopened (restart recovery) and checked against a
//! model of what the workload was told.
//!
//! The oracle is the caller's view, never the engine's own bookkeeping: a transfer
//! must survive once the workload was told it is durable. Without a group-commit
//! window (and on NoLgn-FTL, where the commit is the FTL transaction's) that is when
//! `commit` returns; with a window, `commit` returns before its log flush, and the
//! workload, as the benchmark driver does, flushes the open group itself at its
//! deadline (`Database::flush_group`, and `flush_log` at the end of the run): a
//! flush that returns acknowledges every commit that returned before it.
//!
//! Checks after each cut: the transfers present are, in commit order, a prefix of the
//! committed ones (a transfer cut while committing may end it) that holds every
//! acknowledged one; each history row matches its transfer field by field; the sum of
//! balances is unchanged, each balance is the initial one plus the transfers
//! present, and the history index holds exactly the history table's rows.
//!
//! Storage: NoFTL regions (the default), In-Page Logging, or a conventional FTL; on
//! NoLgn-FTL the database keeps no log (`nolgn` journal) and each commit is durable
//! when it returns (its group commit).

use crate::config::IplStorageConfig;
use crate::err;
use engine::db::BufferSize;
use engine::types::Value;
use engine::JournalKind;
use engine::{Database, DbOptions};
use flash::ftl::{FtlConfig, FtlKind};
use flash::{FtlVolume, IplStore};
use nand::{Device, FaultyStorage, Geometry, MemoryStorage, TornOp};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use std::collections::BTreeMap;

const INITIAL_BALANCE: i64 = 1_000;

/// A torture run's shape.
#[derive(Clone, Debug)]
pub struct BankConfig {
    pub geometry: Geometry,
    pub accounts: u32,
    /// Transfers attempted per cut (the cut usually ends the run sooner).
    pub transfers: u32,
    /// Share of transfers that roll back instead of committing.
    pub abort_share: f64,
    /// `NxM` IPA scheme of the data region (`0x0`: none) and its IPA mode.
    pub ipa: String,
    pub ipa_mode: String,
    pub buffer_pages: usize,
    /// Group-commit window in simulated nanoseconds (0: force at every commit).
    pub group_commit_ns: u64,
    /// `DbOptions::log_buffer_bytes`; `None`: the engine's default.
    pub log_buffer_bytes: Option<u64>,
    /// DB page size; `None`: 4 KiB, or one flash page where those are larger. A DB
    /// page of several flash pages is written as one atomic group of them.
    pub db_page_bytes: Option<usize>,
    /// In-Page Logging over the whole device instead of NoFTL regions (the bank's
    /// region then needs IPA `0x0`).
    pub ipl: Option<IplStorageConfig>,
    /// A conventional FTL over the whole device instead (IPA `0x0`); NoLgn-FTL runs
    /// the `nolgn` journal, the others the ARIES log.
    pub ftl: Option<FtlConfig>,
}

/// Which kind of flash operation a cut tore.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CutKinds {
    pub out_of_place_writes: u64,
    pub write_deltas: u64,
    pub gc_migrations: u64,
    pub erases: u64,
    pub log_writes: u64,
    pub missed: u64,
    /// Restarts that a second cut interrupted.
    pub restarts_cut: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Transfer {
    id: i64,
    from: i64,
    to: i64,
    amount: i64,
}

/// The outcome of one cut: `Err` names what the check found wrong.
pub struct CutResult {
    pub cut_at: u64,
    /// Transfers the workload was told were durable before the cut; when `outcome` is
    /// `Ok`, recovery kept every one of them.
    pub acknowledged: usize,
    pub outcome: Result<(), String>,
}

/// What the workload was told during a run (the module comment says when a commit is
/// acknowledged).
#[derive(Default)]
struct Told {
    /// Transfers whose `commit` returned, in commit order.
    committed: Vec<Transfer>,
    /// The first `acknowledged` of `committed` were acknowledged durable.
    acknowledged: usize,
    /// A transfer the cut interrupted inside `commit`: it may or may not survive.
    in_flight: Option<Transfer>,
}

fn schema(config: &BankConfig) -> String {
    let ipa = if config.ipa == "0x0" {
        "IPA_MODE=none".to_string()
    } else {
        format!("IPA_MODE={}, IPA={}, V=8", config.ipa_mode, config.ipa)
    };
    format!(
        "CREATE REGION bank ({ipa});
         CREATE TABLESPACE ts (REGION=bank, EXTENT SIZE 32K);
         CREATE TABLE account (id INT PRIMARY KEY, balance BIGINT NOT NULL, pad CHAR(60)) TABLESPACE ts;
         CREATE TABLE history (id BIGINT PRIMARY KEY, src INT NOT NULL, dst INT NOT NULL, amount BIGINT NOT NULL) TABLESPACE ts;
         CREATE INDEX history_src ON history(src) TABLESPACE ts;"
    )
}

fn options(config: &BankConfig) -> DbOptions {
    let page_bytes = config.db_page_bytes.unwrap_or((config.geometry.page_bytes as usize).max(4096));
    let nolgn = config.ftl.as_ref().is_some_and(|f| f.kind == FtlKind::Nolgn);
    DbOptions {
        page_bytes,
        buffer: BufferSize::Pages(config.buffer_pages),
        group_commit_ns: config.group_commit_ns,
        log_buffer_bytes: config.log_buffer_bytes.unwrap_or(DbOptions::default().log_buffer_bytes),
        journal: if nolgn { JournalKind::Nolgn } else { JournalKind::Aries },
        ..DbOptions::default()
    }
}

/// Formats the device (NoFTL regions, or an IPL store) and creates an empty database.
fn create(device: Device, config: &BankConfig) -> Result<Database, engine::Error> {
    let options = options(config);
    match (&config.ipl, &config.ftl) {
        (Some(ipl), _) => {
            let store = IplStore::format(device, ipl.store_config(options.page_bytes), Vec::new())?;
            Database::create_on(Box::new(store), options)
        }
        (None, Some(ftl)) => {
            let volume = FtlVolume::format(flash::ftl::format(device, ftl)?, Vec::new(), 0)?;
            Database::create_on(Box::new(volume), options)
        }
        (None, None) => Database::create(device, options),
    }
}

/// Opens the database after a cut; hands the device back when the open fails.
fn open_or_keep(device: Device, config: &BankConfig) -> Result<Database, Box<(engine::Error, Option<Device>)>> {
    let options = options(config);
    if config.ftl.is_some() {
        let (ftl, done) = flash::ftl::open_or_keep(device, 0).map_err(|failed| {
            let (e, device) = *failed;
            Box::new((engine::Error::from(e), device))
        })?;
        // Reading the partition table only reads: nothing to hand back from it.
        let (volume, done) = FtlVolume::open(ftl, done).map_err(|e| Box::new((engine::Error::from(e), None)))?;
        return Database::open_on_or_keep(Box::new(volume), done, options);
    }
    if config.ipl.is_none() {
        return Database::open_or_keep(device, options);
    }
    let (store, done) = IplStore::open_or_keep(device, 0).map_err(|failed| {
        let (e, device) = *failed;
        Box::new((engine::Error::from(e), Some(device)))
    })?;
    Database::open_on_or_keep(Box::new(store), done, options)
}

/// Accounts loaded per transaction.
const LOAD_BATCH: usize = 500;

/// Creates the database and loads the accounts (durable before any cut can matter).
fn load(device: Device, config: &BankConfig) -> Result<Database, String> {
    let mut db = create(device, config).map_err(err)?;
    db.execute(&schema(config)).map_err(err)?;
    let t = db.table_id("account").map_err(err)?;
    // In transactions of LOAD_BATCH accounts: one for all would need more of the small
    // test logs than a transaction may take (half, the rest kept for its rollback).
    for first in (0..config.accounts).step_by(LOAD_BATCH) {
        let tx = db.begin();
        for id in first..(first + LOAD_BATCH as u32).min(config.accounts) {
            let row = [Value::Int(id as i64), Value::Int(INITIAL_BALANCE), Value::Text(format!("account {id}"))];
            db.insert(&tx, t, &row).map_err(err)?;
        }
        db.commit(tx).map_err(err)?;
    }
    db.checkpoint().map_err(err)?;
    Ok(db)
}

/// How far a transfer got.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    /// Changing rows: if it fails here, the transfer must not survive.
    Changing,
    /// In `commit`: it may survive (the commit record may have become durable).
    Committing,
    Aborting,
}

/// One transfer; `Ok(true)` when its commit returned. On an error, says how far it got.
fn transfer(db: &mut Database, t: &Transfer, commit: bool, stage: &mut Stage) -> Result<bool, engine::Error> {
    *stage = Stage::Changing;
    let (account, history) = (db.table_id("account")?, db.table_id("history")?);
    let tx = db.begin();
    db.add(&tx, account, &[Value::Int(t.from)], 1, &Value::Int(-t.amount))?;
    db.add(&tx, account, &[Value::Int(t.to)], 1, &Value::Int(t.amount))?;
    let row = [Value::Int(t.id), Value::Int(t.from), Value::Int(t.to), Value::Int(t.amount)];
    db.insert(&tx, history, &row)?;
    if commit {
        *stage = Stage::Committing;
        db.commit(tx)?;
        return Ok(true);
    }
    *stage = Stage::Aborting;
    db.abort(tx)?;
    Ok(false)
}

/// Runs the transfers of `seed`, recording in `told` what the workload was told, until
/// the first error (a power cut). Each transfer starts 20 µs of simulated time after
/// the previous one; with a group-commit window the open group is flushed once its
/// deadline has passed, before the next transfer starts, and at the end.
fn run_transfers(db: &mut Database, config: &BankConfig, seed: u64, told: &mut Told) -> Result<(), engine::Error> {
    // Only the ARIES log defers a commit's durability past its return.
    let deferred = config.group_commit_ns > 0 && options(config).journal == JournalKind::Aries;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    for i in 0..config.transfers {
        let t = next_transfer(&mut rng, config, i);
        let commit = !rng.gen_bool(config.abort_share);
        db.set_now(db.now() + 20_000);
        if db.group_deadline().is_some_and(|deadline| deadline <= db.now()) {
            db.flush_group()?;
            told.acknowledged = told.committed.len();
        }
        let mut stage = Stage::Changing;
        match transfer(db, &t, commit, &mut stage) {
            Ok(true) => {
                told.committed.push(t);
                if !deferred {
                    told.acknowledged = told.committed.len();
                }
            }
            Ok(false) => {}
            Err(e) => {
                told.in_flight = (stage == Stage::Committing).then_some(t);
                return Err(e);
            }
        }
    }
    if deferred {
        db.flush_log()?;
        told.acknowledged = told.committed.len();
    }
    Ok(())
}

/// Mutating flash operations of the load and of a run without a cut (the load is the
/// same for every seed; cut points are spread over the run).
pub fn count_operations(config: &BankConfig, seed: u64) -> Result<(u64, u64), String> {
    let device = Device::new(Box::new(MemoryStorage::new(config.geometry.clone(), true)));
    let mut db = load(device, config)?;
    let load_ops = operations(db.page_device().device());
    run_transfers(&mut db, config, seed, &mut Told::default()).map_err(err)?;
    Ok((load_ops, operations(db.page_device().device()) - load_ops))
}

fn operations(device: &Device) -> u64 {
    let c = device.counters();
    c.page_programs + c.reprograms + c.copybacks + c.erases
}

fn next_transfer(rng: &mut ChaCha8Rng, config: &BankConfig, i: u32) -> Transfer {
    let from = rng.gen_range(0..config.accounts) as i64;
    let mut to = rng.gen_range(0..config.accounts) as i64;
    if to == from {
        to = (to + 1) % config.accounts as i64;
    }
    Transfer { id: i as i64 + 1, from, to, amount: rng.gen_range(1..50) }
}

/// Loads (`load_ops` flash operations), runs transfers until the power cut
/// `cut_after` operations later, then recovers — cut again `recovery_cut` operations
/// into the restart, if given, and restarted once more — and checks. Returns the
/// check's outcome; `kinds` counts what the first cut hit.
pub fn run_cut(
    config: &BankConfig,
    seed: u64,
    load_ops: u64,
    cut_after: u64,
    recovery_cut: Option<u64>,
    kinds: &mut CutKinds,
) -> CutResult {
    let mut told = Told::default();
    let outcome = (|| {
        let cut_at = load_ops + cut_after;
        let storage = FaultyStorage::new(MemoryStorage::new(config.geometry.clone(), true), Some(cut_at), seed);
        let mut db = load(Device::new(Box::new(storage)), config)?;
        // The cut ends the run with an error; what the workload was told is in `told`.
        let _ = run_transfers(&mut db, config, seed, &mut told);
        let dev = db.page_device();
        // An IPL store spreads every region over all chips: no chip is the log's alone.
        let log_chips = dev.region_id(engine::db::LOG).filter(|_| !dev.logs_changes()).map(|r| dev.chips(r).to_vec());
        let mut device = db.crash();
        classify(&device, &log_chips.unwrap_or_default(), kinds);
        device.power_on();
        if let Some(after) = recovery_cut {
            // Cut the restart itself, then restart again.
            device.storage_mut().arm_power_cut(after);
            device = match open_or_keep(device, config) {
                Ok(db) => db.crash(),
                Err(failed) => match *failed {
                    (_, Some(device)) => {
                        kinds.restarts_cut += 1;
                        device
                    }
                    (e, None) => return Err(format!("the cut restart failed before recovery: {e}")),
                },
            };
            device.power_on();
        }
        let mut db = open_or_keep(device, config).map_err(|failed| format!("recovery failed: {}", failed.0))?;
        check(&mut db, config, &told)
    })();
    CutResult { cut_at: cut_after, acknowledged: told.acknowledged, outcome }
}

fn classify(device: &Device, log_chips: &[u32], kinds: &mut CutKinds) {
    let storage = device.storage();
    let log_chip = |ppn: nand::Ppn| log_chips.contains(&device.geometry().chip_of(ppn));
    match storage.last_torn() {
        None => kinds.missed += 1,
        Some(TornOp::Program { ppn }) if log_chip(ppn) => kinds.log_writes += 1,
        Some(TornOp::Program { ppn }) if storage.program_count(ppn) > 1 => kinds.write_deltas += 1,
        Some(TornOp::Program { .. }) => kinds.out_of_place_writes += 1,
        Some(TornOp::CopyProgram { .. }) => kinds.gc_migrations += 1,
        Some(TornOp::Erase { .. }) => kinds.erases += 1,
    }
}

/// Checks the recovered database against what the workload was told.
fn check(db: &mut Database, config: &BankConfig, told: &Told) -> Result<(), String> {
    let (account, history) = (db.table_id("account").map_err(err)?, db.table_id("history").map_err(err)?);
    let tx = db.begin();
    let rows = db.scan(&tx, history, &[], &[]).map_err(err)?;
    let mut present: BTreeMap<i64, Transfer> = BTreeMap::new();
    for r in &rows {
        let int = |v: &Value| if let Value::Int(i) = v { *i } else { i64::MIN };
        let t = Transfer { id: int(&r[0]), from: int(&r[1]), to: int(&r[2]), amount: int(&r[3]) };
        present.insert(t.id, t);
    }
    if present.len() != rows.len() {
        return Err(format!("history holds {} rows for {} transfer ids", rows.len(), present.len()));
    }
    // Transfer ids grow with commit order: the survivors must be the first of the
    // committed transfers (then perhaps the one cut while committing), row for row.
    let candidates: Vec<&Transfer> = told.committed.iter().chain(&told.in_flight).collect();
    let survived = present.len().min(candidates.len());
    for (t, row) in candidates.iter().zip(present.values()) {
        if row.id > t.id {
            return Err(format!("transfer {} is missing but {} survived", t.id, row.id));
        }
        if row.id < t.id {
            return Err(format!("transfer {} is present but was never committed", row.id));
        }
        if *row != **t {
            return Err(format!("transfer {} reads back as {row:?}, committed as {t:?}", t.id));
        }
    }
    if let Some(extra) = present.values().nth(candidates.len()) {
        return Err(format!("transfer {} is present but was never committed", extra.id));
    }
    if survived < told.acknowledged {
        return Err(format!(
            "acknowledged transfer {} is missing ({survived} of {} acknowledged survived)",
            told.committed[survived].id, told.acknowledged
        ));
    }
    let mut expected = vec![INITIAL_BALANCE; config.accounts as usize];
    for t in present.values() {
        expected[t.from as usize] -= t.amount;
        expected[t.to as usize] += t.amount;
    }
    let accounts = db.scan(&tx, account, &[], &[]).map_err(err)?;
    if accounts.len() != config.accounts as usize {
        return Err(format!("{} accounts, expected {}", accounts.len(), config.accounts));
    }
    let mut sum = 0;
    for (i, a) in accounts.iter().enumerate() {
        let Value::Int(balance) = a[1] else { return Err(format!("account {i} has no balance")) };
        sum += balance;
        if balance != expected[i] {
            return Err(format!("account {i} has balance {balance}, the transfers present give {}", expected[i]));
        }
    }
    if sum != INITIAL_BALANCE * config.accounts as i64 {
        return Err(format!("balances sum to {sum}, not {}", INITIAL_BALANCE * config.accounts as i64));
    }
    for src in 0..config.accounts {
        let found = db.execute(&format!("SELECT id FROM history WHERE src = {src}")).map_err(err)?;
        let Some(engine::QueryResult::Rows { rows, .. }) = found.into_iter().next() else {
            return Err("index query gave no rows result".into());
        };
        let want = present.values().filter(|t| t.from == src as i64).count();
        if rows.len() != want {
            return Err(format!("index history_src has {} rows for src {src}, the table {want}", rows.len()));
        }
    }
    db.commit(tx).map(|_| ()).map_err(|e| e.to_string())
}
