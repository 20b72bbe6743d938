//! SQLite on an FTL on an image file, through a real power cut: the image's file is a
//! `LossyFile`, which loses, keeps or tears every write not covered by a completed
//! `fdatasync` when the power is cut (at a random file operation). At
//! `synchronous=FULL`, in WAL and rollback-journal mode, every commit SQLite
//! acknowledged is there after the reopen (and at most the one in flight besides), and
//! `PRAGMA integrity_check` says ok.

use flash::ftl::{FtlConfig, FtlKind};
use nand::{Device, Geometry, LossyFile, MemoryStorage, SyncMode};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rusqlite::params;
use sqlite_flash::{FlashSqlite, FlashSqliteOptions};

fn geometry() -> Geometry {
    let mut g = Geometry::paper_emulator();
    g.channels = 2;
    g.chips_per_channel = 1;
    g.blocks_per_chip = 64;
    g.pages_per_block = 32;
    g
}

/// A temporary directory in memory where there is one (`/dev/shm`): creating an image
/// syncs it, which a disk takes long for.
fn scratch_dir() -> tempfile::TempDir {
    match tempfile::tempdir_in("/dev/shm") {
        Ok(dir) => dir,
        Err(_) => tempfile::tempdir().unwrap(),
    }
}

const ROWS: i64 = 120;

/// Inserts rows 0, 1, 2, … one commit each until the power is cut at a random file
/// operation (or after the last row), then reopens the image on the plain file.
/// Returns (rows found, commits acknowledged), or what went wrong after the reopen.
fn power_cut_run(journal_mode: &str, seed: u64, lying_disk: bool) -> Result<(i64, i64), String> {
    let dir = scratch_dir();
    let path = dir.path().join("sqlite.img");
    let (layer, switch) = LossyFile::layer(seed);
    let storage = MemoryStorage::create_image_on(&path, geometry(), true, SyncMode::Full, layer).unwrap();
    if lying_disk {
        switch.ignore_syncs();
    }
    let opts = FlashSqliteOptions { seed, ..Default::default() };
    let config = FtlConfig::new(FtlKind::Page);
    let db = FlashSqlite::create(Device::new(Box::new(storage)), &config, opts).unwrap();
    let c = db.connection();
    c.query_row(&format!("PRAGMA journal_mode={journal_mode}"), [], |r| r.get::<_, String>(0)).unwrap();
    c.execute_batch("PRAGMA synchronous=FULL; CREATE TABLE t(k INTEGER PRIMARY KEY, v BLOB)").unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    switch.arm(rng.gen_range(1..600));
    let mut acknowledged = 0;
    for k in 0..ROWS {
        if c.execute("INSERT INTO t VALUES (?1, zeroblob(?2))", params![k, 100 + k * 13 % 900]).is_err() {
            break;
        }
        acknowledged += 1;
    }
    switch.cut().unwrap();
    drop(db.into_device());

    let storage = MemoryStorage::open_image(&path).map_err(|e| e.to_string())?;
    let db = FlashSqlite::open(Device::new(Box::new(storage)), 0).map_err(|e| e.to_string())?;
    let c = db.connection();
    let check: String = c.query_row("PRAGMA integrity_check", [], |r| r.get(0)).map_err(|e| e.to_string())?;
    if check != "ok" {
        return Err(format!("integrity_check: {check}"));
    }
    let (rows, max): (i64, Option<i64>) =
        c.query_row("SELECT count(*), max(k) FROM t", [], |r| Ok((r.get(0)?, r.get(1)?))).map_err(|e| e.to_string())?;
    if max.map_or(0, |m| m + 1) != rows {
        return Err(format!("{rows} rows, the largest key {max:?}: not a prefix of the inserts"));
    }
    Ok((rows, acknowledged))
}

#[test]
fn a_power_cut_keeps_every_commit_acknowledged_at_synchronous_full() {
    for journal_mode in ["WAL", "DELETE"] {
        let mut mid_workload = 0;
        for seed in 0..16 {
            let (rows, acknowledged) =
                power_cut_run(journal_mode, seed, false).unwrap_or_else(|e| panic!("{journal_mode}, seed {seed}: {e}"));
            assert!(
                (acknowledged..=acknowledged + 1).contains(&rows),
                "{journal_mode}, seed {seed}: {rows} rows after the cut, {acknowledged} commits acknowledged"
            );
            mid_workload += usize::from(acknowledged > 0 && acknowledged < ROWS);
        }
        assert!(
            mid_workload >= 8,
            "{journal_mode}: only {mid_workload} of 16 cuts fell after a commit and before the end"
        );
    }
}

/// The power-cut test can fail: on a disk that acknowledges `fdatasync` without making
/// anything durable, acknowledged commits (or the database) are lost.
#[test]
fn a_power_cut_test_catches_a_disk_that_ignores_syncs() {
    let caught = (0..16)
        .filter(|&seed| match power_cut_run("WAL", seed, true) {
            Ok((rows, acknowledged)) => rows < acknowledged,
            Err(_) => true,
        })
        .count();
    assert!(caught >= 4, "only {caught} of 16 cuts lost an acknowledged commit or the database");
}
