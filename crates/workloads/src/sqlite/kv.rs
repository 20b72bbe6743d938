//! `sqlite-bench` (the public benchmark modelled on LevelDB's db_bench): one table
//! `test (key BLOB PRIMARY KEY, value BLOB)` in WAL mode with exclusive locking, and the
//! ops `fillrandom` and `overwrite` (`REPLACE INTO` a 16-byte key `%016d` drawn uniformly
//! from `0..num`, with a `value_size`-byte value) and `readrandom` (`SELECT` by such a
//! key), `num` rows per op in transactions of `batch` rows. Values are slices of a 1 MiB
//! pool of seeded random bytes, taken in turn, as the original's generator does.
//!
//! Differences from the original: SQLite's default page size and `wal_autocheckpoint`
//! (the original sets 1 KiB pages, a 4096-page cache and a 4096-frame checkpoint), and
//! `synchronous` is the run's (NORMAL or FULL; the original has OFF or FULL).
//! `fillrandom` starts from an empty table, so it may only be the first op.
//!
//! Invariant checked: the workload keeps the set of keys written; every `readrandom`
//! finds exactly the keys in it, and the table's row count is its size.

use super::{Kind, Session, SqliteParams, SqliteWorkload};
use crate::limits::CountRange;
use rand::{Rng, RngCore};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// Rows per op.
pub const NUM: CountRange = CountRange { min: 1, max: 1_000_000_000 };
/// Bytes per value: 256 B … 16 KiB.
pub const VALUE_SIZE: CountRange = CountRange { min: 256, max: 16384 };
/// Rows per transaction.
pub const BATCH: CountRange = CountRange { min: 1, max: 1_000_000 };

/// The random value pool's size (the original's RandomGenerator keeps 1 MiB).
const POOL_BYTES: usize = 1 << 20;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Op {
    Fillrandom,
    Overwrite,
    Readrandom,
}

const KINDS: &[&str] = &["fillrandom", "overwrite", "readrandom"];

impl Op {
    fn kind(self) -> Kind {
        self as usize
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SqliteBenchParams {
    /// The ops, run in this order.
    pub ops: Vec<Op>,
    pub num: u64,
    pub value_size: u32,
    pub batch: u32,
}

impl Default for SqliteBenchParams {
    fn default() -> Self {
        SqliteBenchParams {
            ops: vec![Op::Fillrandom, Op::Overwrite, Op::Readrandom],
            num: 100_000,
            value_size: 4096,
            batch: 1,
        }
    }
}

impl SqliteParams for SqliteBenchParams {
    const NAME: &'static str = "sqlite-bench";
    const ABOUT: &'static str = "sqlite-bench: fillrandom, overwrite, readrandom with 16-byte keys and REPLACE INTO";

    fn check(&self) -> Result<(), (&'static str, String)> {
        NUM.check(self.num).map_err(|p| ("num", p))?;
        VALUE_SIZE.check(self.value_size.into()).map_err(|p| ("value_size", p))?;
        BATCH.check(self.batch.into()).map_err(|p| ("batch", p))?;
        if self.ops.is_empty() {
            return Err(("ops", "name at least one of fillrandom, overwrite, readrandom".into()));
        }
        if self.ops.iter().skip(1).any(|&op| op == Op::Fillrandom) {
            return Err(("ops", "fillrandom starts from an empty table, so it may only be the first op".into()));
        }
        Ok(())
    }

    fn build(&self) -> Box<dyn SqliteWorkload> {
        Box::new(SqliteBench::new(self.clone()))
    }
}

pub struct SqliteBench {
    p: SqliteBenchParams,
    /// Transactions per op: ceil(num / batch).
    batches_per_op: u64,
    pool: Vec<u8>,
    pool_pos: usize,
    /// Keys written so far, one bit each.
    present: Vec<u64>,
    rows: u64,
}

impl SqliteBench {
    pub fn new(p: SqliteBenchParams) -> SqliteBench {
        let batches_per_op = p.num.div_ceil(p.batch.into());
        let words = p.num.div_ceil(64) as usize;
        SqliteBench { p, batches_per_op, pool: Vec::new(), pool_pos: 0, present: vec![0; words], rows: 0 }
    }

    fn value(&mut self) -> &[u8] {
        let len = self.p.value_size as usize;
        if self.pool_pos + len > self.pool.len() {
            self.pool_pos = 0;
        }
        let start = self.pool_pos;
        self.pool_pos += len;
        &self.pool[start..start + len]
    }

    fn is_present(&self, k: u64) -> bool {
        self.present[(k / 64) as usize] & (1 << (k % 64)) != 0
    }

    fn key(k: u64) -> String {
        format!("{k:016}")
    }
}

impl SqliteWorkload for SqliteBench {
    fn name(&self) -> &'static str {
        "sqlite-bench"
    }

    fn kinds(&self) -> &'static [&'static str] {
        KINDS
    }

    fn load(&mut self, s: &mut Session<'_>, rng: &mut ChaCha8Rng) -> Result<(), String> {
        self.pool = vec![0; POOL_BYTES];
        rng.fill_bytes(&mut self.pool);
        s.batch("PRAGMA locking_mode = EXCLUSIVE; CREATE TABLE test (key BLOB, value BLOB, PRIMARY KEY (key))")
    }

    fn transactions(&self) -> u64 {
        self.batches_per_op * self.p.ops.len() as u64
    }

    fn transaction(&mut self, s: &mut Session<'_>, n: u64, rng: &mut ChaCha8Rng) -> Result<(Kind, bool), String> {
        let op = self.p.ops[(n / self.batches_per_op) as usize];
        let first_row = n % self.batches_per_op * u64::from(self.p.batch);
        let rows = u64::from(self.p.batch).min(self.p.num - first_row);
        s.batch("BEGIN")?;
        for _ in 0..rows {
            let k = rng.gen_range(0..self.p.num);
            let key = Self::key(k);
            match op {
                Op::Fillrandom | Op::Overwrite => {
                    let value = self.value().to_vec();
                    s.exec("REPLACE INTO test (key, value) VALUES (?1, ?2)", (key.as_bytes(), value))?;
                    if !self.is_present(k) {
                        self.present[(k / 64) as usize] |= 1 << (k % 64);
                        self.rows += 1;
                    }
                }
                Op::Readrandom => {
                    let len = s.row("SELECT * FROM test WHERE key = ?1", [key.as_bytes()], |r| {
                        r.get_ref(1).map(|v| v.as_bytes().map_or(0, <[u8]>::len))
                    })?;
                    let expected = self.is_present(k).then_some(self.p.value_size as usize);
                    if len != expected {
                        return Err(format!("readrandom: key {key} read {len:?} bytes, {expected:?} were written"));
                    }
                }
            }
        }
        s.batch("COMMIT")?;
        Ok((op.kind(), true))
    }

    fn check(&mut self, s: &mut Session<'_>) -> Result<(), String> {
        let count = s.int("SELECT count(*) FROM test", [])?;
        if count as u64 != self.rows {
            return Err(format!("the table holds {count} rows; {} distinct keys were written", self.rows));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sqlite::runner::{run, Synchronous};
    use crate::sqlite::{ConfiguredSqlite, HostSqlite, SqliteRunConfig};
    use crate::Control;

    fn bench(p: SqliteBenchParams, config: &SqliteRunConfig) -> crate::sqlite::SqliteResult {
        let mut host = HostSqlite::in_memory().unwrap();
        let params = p.params();
        run(&mut host, &mut SqliteBench::new(p), params, config, &mut |_, _| Control::Continue).unwrap()
    }

    #[test]
    fn ops_run_in_batches_and_reads_find_what_was_written() {
        let p = SqliteBenchParams { num: 1000, value_size: 300, batch: 7, ..Default::default() };
        let r = bench(p, &SqliteRunConfig { check: true, ..Default::default() });
        assert_eq!(r.transactions, 3 * 143);
        for kind in KINDS {
            assert_eq!(r.kinds[*kind].transactions, 143, "{kind}");
        }
        assert_eq!(r.consistency_check, Some(crate::experiment::Consistency::Passed));
        // Each batch: BEGIN, 7 rows (the last 6), COMMIT.
        assert_eq!(r.statements, 3 * (143 * 2 + 1000));
        assert!(
            r.transaction_latency_us.p50 >= 9.0 * 10.0,
            "a batch is at least 9 statements of 10 µs: {:?}",
            r.transaction_latency_us
        );
        assert!(r.flash.is_none());
    }

    #[test]
    fn a_lost_row_fails_the_check() {
        let p = SqliteBenchParams { ops: vec![Op::Fillrandom], num: 100, value_size: 256, batch: 10 };
        let mut host = HostSqlite::in_memory().unwrap();
        let mut w = SqliteBench::new(p.clone());
        let params = p.params();
        run(&mut host, &mut w, params, &SqliteRunConfig::default(), &mut |_, _| Control::Continue).unwrap();
        let mut s = Session::new(&mut host, 0);
        assert_eq!(w.check(&mut s), Ok(()));
        s.batch("DELETE FROM test WHERE rowid = 1").unwrap();
        assert!(w.check(&mut s).unwrap_err().contains("distinct keys were written"));
    }

    #[test]
    fn the_same_seed_gives_the_same_result_and_another_seed_other_keys() {
        let p = SqliteBenchParams { num: 500, value_size: 1024, batch: 1, ..Default::default() };
        let c = SqliteRunConfig { synchronous: Synchronous::Normal, ..Default::default() };
        assert_eq!(bench(p.clone(), &c).deterministic_json(), bench(p.clone(), &c).deterministic_json());
        let keys = |seed: u64| {
            let mut host = HostSqlite::in_memory().unwrap();
            let mut w = SqliteBench::new(p.clone());
            let config = SqliteRunConfig { seed, ..c.clone() };
            run(&mut host, &mut w, p.params(), &config, &mut |_, _| Control::Continue).unwrap();
            w.present
        };
        assert_eq!(keys(1), keys(1));
        assert_ne!(keys(1), keys(2));
    }

    #[test]
    fn wal_mode_on_a_file_and_large_values() {
        let dir = tempfile::tempdir().unwrap();
        let mut host = HostSqlite::create(&dir.path().join("bench.db")).unwrap();
        let p = SqliteBenchParams { ops: vec![Op::Overwrite, Op::Readrandom], num: 200, value_size: 16384, batch: 20 };
        let params = p.params();
        let r = run(
            &mut host,
            &mut SqliteBench::new(p),
            params,
            &SqliteRunConfig { check: true, ..Default::default() },
            &mut |_, _| Control::Continue,
        )
        .unwrap();
        assert_eq!(r.journal_mode, "wal");
        assert_eq!(r.consistency_check, Some(crate::experiment::Consistency::Passed));
        assert!(dir.path().join("bench.db-wal").exists());
    }
}
