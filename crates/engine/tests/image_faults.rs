//! A full disk, a failing disk and a power cut under the image file.
//!
//! No ambiguous acknowledgement: the image's file fails its N-th operation (a write, an `fdatasync` or a hole punch)
//! with `ENOSPC` or `EIO`, for N = 1, 2, 3, … until the workload runs through. Then the
//! space is "freed" (the image is reopened on the plain file, which keeps every write
//! that reached it) and the database is checked against what the statements said:
//! - a statement that returned is there;
//! - a statement that failed is not there, unless its error says that the commit's
//!   outcome is unknown (then either is right);
//! - after the failure the database refuses every statement, reads included, until it
//!   is reopened (so the statements after it are refused and not there).
//!
//! Power cuts: the image's file is a [`LossyFile`], and the power is cut at a random
//! file operation; every write not covered by a completed `fdatasync` is lost, kept or
//! torn. The reopened database is checked against what `sync full`, `normal` and `off`
//! promise.

use engine::db::BufferSize;
use engine::types::Value;
use engine::{Database, DbOptions, QueryResult};
use nand::{
    CellType, Device, FailingFile, FileFault, Geometry, ImageOptions, Latencies, LossyFile, MemoryStorage, SyncMode,
};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::path::Path;

fn geometry() -> Geometry {
    Geometry {
        channels: 1,
        chips_per_channel: 2,
        blocks_per_chip: 32,
        pages_per_block: 16,
        page_bytes: 4096,
        oob_bytes: 128,
        cell: CellType::Slc,
        nop: 4,
        endurance: 1_000_000,
        latencies: Latencies::mlc_typical(),
    }
}

fn options() -> DbOptions {
    DbOptions { buffer: BufferSize::Pages(8), ..DbOptions::default() }
}

/// The workload: units that commit on their own (a statement, or BEGIN … COMMIT).
/// A small buffer pool, so the page cleaner and checkpoints write too.
fn units() -> Vec<Vec<String>> {
    let mut units = Vec::new();
    for i in 0..16 {
        units.push(vec![format!("INSERT INTO kv VALUES ({i}, {}, '{}')", i * 10, "x".repeat(300))]);
        if i % 4 == 3 {
            units.push(vec![format!("UPDATE kv SET v = v + 1 WHERE k BETWEEN 0 AND {i}")]);
        }
        if i % 8 == 7 {
            units.push(vec![
                "BEGIN".into(),
                format!("INSERT INTO kv VALUES ({}, 1, 'tx')", 1000 + i),
                format!("DELETE FROM kv WHERE k = {}", i - 5),
                "COMMIT".into(),
            ]);
        }
    }
    units
}

const SCHEMA: &str = "CREATE TABLE kv (k INT PRIMARY KEY, v BIGINT NOT NULL, pad VARCHAR(400) NOT NULL)";

/// The table's (k, v) rows in key order, or why they cannot be read.
fn read_table(db: &mut Database) -> Result<Vec<(i64, i64)>, String> {
    let rows = match db.execute("SELECT k, v FROM kv").map_err(|e| e.to_string())?.pop() {
        Some(QueryResult::Rows { rows, .. }) => rows,
        other => panic!("SELECT gave {other:?}"),
    };
    let int = |v: &Value| match v {
        Value::Int(i) => *i,
        other => panic!("not an integer: {other:?}"),
    };
    let mut pairs: Vec<(i64, i64)> = rows.iter().map(|r| (int(&r[0]), int(&r[1]))).collect();
    pairs.sort_unstable();
    Ok(pairs)
}

fn snapshot(db: &mut Database) -> Vec<(i64, i64)> {
    read_table(db).unwrap()
}

/// The table after each unit of the workload, run without faults: `states[n]` is after
/// the first `n` units.
fn expected_states() -> Vec<Vec<(i64, i64)>> {
    let mut db = Database::create(Device::new(Box::new(MemoryStorage::new(geometry(), true))), options()).unwrap();
    db.execute(SCHEMA).unwrap();
    let mut states = vec![snapshot(&mut db)];
    for unit in units() {
        for statement in &unit {
            db.execute(statement).unwrap();
        }
        states.push(snapshot(&mut db));
    }
    states
}

/// A new database image at `path` with the schema, closed.
fn create_with_schema(path: &Path) {
    let storage = MemoryStorage::create_image_with(path, geometry(), true, SyncMode::Full).unwrap();
    let mut db = Database::create(Device::new(Box::new(storage)), options()).unwrap();
    db.execute(SCHEMA).unwrap();
    db.close().unwrap();
}

/// What a run with the file failing at operation `fail_at` showed.
enum Run {
    /// The workload ran through: `fail_at` is past its last file operation.
    Completed,
    Failed,
}

/// Runs the workload on an image whose file fails at operation `fail_at`, then reopens
/// it on the plain file and checks it against what the statements returned.
fn run(dir: &Path, fail_at: u64, fault: FileFault, states: &[Vec<(i64, i64)>]) -> Run {
    let path = dir.join(format!("db-{fail_at}-{fault:?}.img"));
    create_with_schema(&path);

    let case = format!("{fault:?} at file operation {fail_at}");
    let options_full = ImageOptions { read_only: false, sync: SyncMode::Full };
    let storage =
        MemoryStorage::open_image_on(&path, options_full, FailingFile::layer(fail_at, fault, fail_at)).unwrap();
    // The failure may come while the database opens (its restart writes a checkpoint).
    // Broken rules about refusing work after the failure, reported after the state check.
    let mut not_refused = Vec::new();
    let (acknowledged, unknown) = match Database::open(Device::new(Box::new(storage)), options()) {
        Err(_) => (0, false),
        Ok(mut db) => {
            let mut acknowledged = 0;
            let mut failure: Option<String> = None;
            for unit in units() {
                let mut unit_error = None;
                for statement in &unit {
                    if let Err(e) = db.execute(statement) {
                        unit_error = Some(e.to_string());
                        break;
                    }
                }
                match (unit_error, &failure) {
                    (None, None) => acknowledged += 1,
                    (None, Some(first)) => not_refused.push(format!("a unit ran after the failure ({first})")),
                    (Some(e), None) => failure = Some(e),
                    (Some(e), Some(_)) if !e.contains("reopen") => {
                        not_refused.push(format!("refused without saying why: {e}"))
                    }
                    (Some(_), Some(_)) => {}
                }
            }
            let Some(first) = failure else {
                // Every unit returned; the failure may still come at the close.
                let closed = db.close().map(drop);
                check(&path, &case, states, acknowledged, false);
                return if closed.is_ok() { Run::Completed } else { Run::Failed };
            };
            if db.execute("SELECT k FROM kv").is_ok() {
                not_refused.push(format!("a SELECT ran after the failure ({first})"));
            }
            if db.close().is_ok() {
                not_refused.push("the close after the failure claims success".into());
            }
            (acknowledged, first.contains("outcome is unknown"))
        }
    };
    check(&path, &case, states, acknowledged, unknown);
    assert!(not_refused.is_empty(), "{case}: {}", not_refused.join("; "));
    Run::Failed
}

/// The reopened database holds the state after `acknowledged` units, or (when the next
/// unit's outcome is unknown) after one more.
fn check(path: &Path, case: &str, states: &[Vec<(i64, i64)>], acknowledged: usize, unknown: bool) {
    let storage = MemoryStorage::open_image(path).unwrap();
    let mut db = Database::open(Device::new(Box::new(storage)), options())
        .unwrap_or_else(|e| panic!("{case}: the database does not reopen: {e}"));
    let found = snapshot(&mut db);
    let Some(at) = states.iter().position(|s| *s == found) else {
        panic!("{case}: the reopened table matches no state of the workload ({} rows)", found.len());
    };
    let allowed = if unknown { acknowledged..=acknowledged + 1 } else { acknowledged..=acknowledged };
    assert!(
        allowed.contains(&at),
        "{case}: the reopened table is the state after {at} units; {acknowledged} were acknowledged{}",
        if unknown { " and the next one's outcome is unknown" } else { " and the next one reported failure" }
    );
}

/// A temporary directory in memory where there is one (`/dev/shm`): the runs make a few
/// thousand `fdatasync`s, which a disk takes seconds for.
fn scratch_dir() -> tempfile::TempDir {
    match tempfile::tempdir_in("/dev/shm") {
        Ok(dir) => dir,
        Err(_) => tempfile::tempdir().unwrap(),
    }
}

#[test]
fn a_failed_write_or_sync_never_leaves_a_failed_statement_committed() {
    let dir = scratch_dir();
    let states = expected_states();
    for fault in [FileFault::NoSpace, FileFault::Io] {
        let mut fail_at = 1;
        while let Run::Failed = run(dir.path(), fail_at, fault, &states) {
            fail_at += 1;
            std::fs::remove_dir_all(dir.path()).unwrap();
            std::fs::create_dir(dir.path()).unwrap();
        }
        assert!(fail_at > 40, "{fault:?}: the workload made only {fail_at} file operations");
    }
}

/// One power cut under the database on a [`LossyFile`] in sync mode `mode`: at a random
/// file operation of the workload (or after it), with a checkpoint every fifth unit.
/// Then the image is reopened on the plain file; returns (the reopened table's place
/// in the workload's states, units acknowledged, units acknowledged before the last
/// checkpoint that returned), or why the database did not reopen.
fn power_cut_run(
    dir: &Path,
    mode: SyncMode,
    seed: u64,
    lying_disk: bool,
    states: &[Vec<(i64, i64)>],
) -> Result<(usize, usize, usize), String> {
    let path = dir.join(format!("cut-{mode:?}-{seed}.img"));
    create_with_schema(&path);
    let (layer, switch) = LossyFile::layer(seed);
    let storage = MemoryStorage::open_image_on(&path, ImageOptions { read_only: false, sync: mode }, layer).unwrap();
    if lying_disk {
        switch.ignore_syncs();
    }
    let mut db = Database::open(Device::new(Box::new(storage)), options()).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    switch.arm(rng.gen_range(1..200));
    let (mut acknowledged, mut checkpointed) = (0, 0);
    for (n, unit) in units().iter().enumerate() {
        if !unit.iter().all(|statement| db.execute(statement).is_ok()) {
            break;
        }
        acknowledged = n + 1;
        if n % 5 == 4 {
            if db.checkpoint().is_err() {
                break;
            }
            checkpointed = acknowledged;
        }
    }
    switch.cut().unwrap();
    drop(db);
    let storage = MemoryStorage::open_image(&path).map_err(|e| e.to_string())?;
    let mut db = Database::open(Device::new(Box::new(storage)), options()).map_err(|e| e.to_string())?;
    let found = read_table(&mut db)?;
    let at = states.iter().position(|s| *s == found).ok_or_else(|| {
        format!("the reopened table matches no state of the workload ({} rows: {found:?})", found.len())
    })?;
    Ok((at, acknowledged, checkpointed))
}

/// Where the reopened table may be after a cut in `mode`, from what the run was told:
/// `full` keeps every acknowledged unit (and perhaps the one in flight), `normal` every
/// one before the last checkpoint that returned, `off` promises nothing but a prefix.
fn allowed(mode: SyncMode, acknowledged: usize, checkpointed: usize) -> std::ops::RangeInclusive<usize> {
    match mode {
        SyncMode::Full => acknowledged..=acknowledged + 1,
        SyncMode::Normal => checkpointed..=acknowledged + 1,
        SyncMode::Off => 0..=acknowledged + 1,
    }
}

/// Power cuts that lose, keep or tear every write not covered by a completed
/// `fdatasync`, under `sync normal` and `off`: the reopened database is a prefix of the
/// workload within what the mode promises, or it is refused with an error naming the
/// damaged page; it never returns rows of a state the workload did not pass through.
#[test]
fn a_power_cut_under_sync_normal_or_off_never_returns_wrong_rows() {
    let dir = scratch_dir();
    let states = expected_states();
    for mode in [SyncMode::Normal, SyncMode::Off] {
        for seed in 0..40 {
            match power_cut_run(dir.path(), mode, seed, false, &states) {
                Err(e) => assert!(e.contains("corrupt"), "{mode:?}, seed {seed}: refused without naming damage: {e}"),
                Ok((at, acknowledged, checkpointed)) => assert!(
                    allowed(mode, acknowledged, checkpointed).contains(&at),
                    "{mode:?}, seed {seed}: the reopened table is the state after {at} units; {acknowledged} were \
                     acknowledged, {checkpointed} before the last checkpoint"
                ),
            }
        }
    }
}

/// Under `sync full` every cut reopens with every acknowledged commit (and perhaps
/// the one in flight).
#[test]
fn a_power_cut_under_sync_full_reopens_with_every_acknowledged_commit() {
    let dir = scratch_dir();
    let states = expected_states();
    for seed in 0..40 {
        let (at, acknowledged, checkpointed) = power_cut_run(dir.path(), SyncMode::Full, seed, false, &states)
            .unwrap_or_else(|e| panic!("full, seed {seed}: {e}"));
        assert!(allowed(SyncMode::Full, acknowledged, checkpointed).contains(&at), "full, seed {seed}: state {at}");
    }
}

/// Counts, per sync mode, the cuts that reopen within what the mode promises and the
/// ones refused as corrupt (the numbers in docs/safety.md).
#[test]
#[ignore = "measurement: run with --ignored --nocapture"]
fn power_cut_outcomes_per_sync_mode() {
    let dir = scratch_dir();
    let states = expected_states();
    for mode in [SyncMode::Full, SyncMode::Normal, SyncMode::Off] {
        let (mut refused, mut within, mut outside) = (0, 0, 0);
        for seed in 0..100 {
            match power_cut_run(dir.path(), mode, seed, false, &states) {
                Err(_) => refused += 1,
                Ok((at, acknowledged, checkpointed)) if allowed(mode, acknowledged, checkpointed).contains(&at) => {
                    within += 1
                }
                Ok(_) => outside += 1,
            }
        }
        println!("{mode:?}: of 100 cuts {within} reopened within the promise, {refused} refused as corrupt, {outside} outside");
    }
}

/// The power-cut test can fail: on a disk that acknowledges `fdatasync` without making
/// anything durable, acknowledged commits are lost (or the database with them).
#[test]
fn a_power_cut_test_catches_a_disk_that_ignores_syncs() {
    let dir = scratch_dir();
    let states = expected_states();
    let caught = (0..20)
        .filter(|&seed| match power_cut_run(dir.path(), SyncMode::Full, seed, true, &states) {
            Ok((at, acknowledged, _)) => at < acknowledged,
            Err(_) => true,
        })
        .count();
    assert!(caught >= 5, "only {caught} of 20 cuts lost an acknowledged commit or the database");
}
