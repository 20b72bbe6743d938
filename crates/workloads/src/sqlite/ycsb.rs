//! YCSB core workloads A–F on SQLite, as YCSB's `CoreWorkload` with its JDBC binding
//! runs them: table `usertable (YCSB_KEY PRIMARY KEY, FIELD0..FIELDn)`, keys
//! `user<fnvhash64(keynum)>` (hashed insert order), values of printable random bytes,
//! every operation its own autocommit transaction.
//!
//! | mix | operations | request distribution |
//! |---|---|---|
//! | a | read 50%, update 50% | zipfian |
//! | b | read 95%, update 5% | zipfian |
//! | c | read 100% | zipfian |
//! | d | read 95%, insert 5% | latest |
//! | e | scan 95%, insert 5% | zipfian (scan length uniform 1..=100) |
//! | f | read 50%, read-modify-write 50% | zipfian |
//!
//! Reads read all fields; updates write one random field (YCSB's defaults); a
//! read-modify-write is a read then an update of the same key, two autocommit
//! statements, timed together, as YCSB does. Inserts take the next key number after the
//! loaded records. `distribution` may override the mix's.
//!
//! Invariants checked: every read and read-modify-write finds its key, every update
//! changes one row, and the table holds the loaded records plus the inserts.

use super::zipf::{scrambled, Scrambled, SkewedLatest};
use super::{Kind, Session, SqliteParams, SqliteWorkload};
use crate::limits::CountRange;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

pub const RECORDS: CountRange = CountRange { min: 1, max: 1_000_000_000 };
pub const OPERATIONS: CountRange = CountRange { min: 1, max: 1 << 40 };
pub const FIELDS: CountRange = CountRange { min: 1, max: 100 };
pub const FIELD_BYTES: CountRange = CountRange { min: 1, max: 65536 };
/// YCSB's `maxscanlength`.
const MAX_SCAN_LENGTH: u64 = 100;
/// Loaded rows per load transaction.
const LOAD_BATCH: u64 = 1000;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mix {
    A,
    B,
    C,
    D,
    E,
    F,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Distribution {
    Zipfian,
    Latest,
    Uniform,
}

const READ: Kind = 0;
const UPDATE: Kind = 1;
const INSERT: Kind = 2;
const SCAN: Kind = 3;
const RMW: Kind = 4;
const KINDS: &[&str] = &["read", "update", "insert", "scan", "read-modify-write"];

impl Mix {
    /// Shares of read, update, insert, scan and read-modify-write, and the distribution.
    pub fn shares(self) -> ([f64; 5], Distribution) {
        use Distribution::*;
        match self {
            Mix::A => ([0.5, 0.5, 0.0, 0.0, 0.0], Zipfian),
            Mix::B => ([0.95, 0.05, 0.0, 0.0, 0.0], Zipfian),
            Mix::C => ([1.0, 0.0, 0.0, 0.0, 0.0], Zipfian),
            Mix::D => ([0.95, 0.0, 0.05, 0.0, 0.0], Latest),
            Mix::E => ([0.0, 0.0, 0.05, 0.95, 0.0], Zipfian),
            Mix::F => ([0.5, 0.0, 0.0, 0.0, 0.5], Zipfian),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct YcsbParams {
    pub mix: Mix,
    /// Records loaded (YCSB's `recordcount`).
    pub records: u64,
    /// Operations measured (`operationcount`).
    pub operations: u64,
    /// The request distribution; `null` takes the mix's.
    pub distribution: Option<Distribution>,
    pub fields: u32,
    pub field_bytes: u32,
}

impl Default for YcsbParams {
    fn default() -> Self {
        YcsbParams {
            mix: Mix::A,
            records: 100_000,
            operations: 100_000,
            distribution: None,
            fields: 10,
            field_bytes: 100,
        }
    }
}

impl SqliteParams for YcsbParams {
    const NAME: &'static str = "ycsb";
    const ABOUT: &'static str =
        "YCSB core workloads a-f: zipfian/latest/uniform keys, scans (e), read-modify-write (f)";

    fn check(&self) -> Result<(), (&'static str, String)> {
        RECORDS.check(self.records).map_err(|p| ("records", p))?;
        OPERATIONS.check(self.operations).map_err(|p| ("operations", p))?;
        FIELDS.check(self.fields.into()).map_err(|p| ("fields", p))?;
        FIELD_BYTES.check(self.field_bytes.into()).map_err(|p| ("field_bytes", p))?;
        Ok(())
    }

    fn build(&self) -> Box<dyn SqliteWorkload> {
        Box::new(Ycsb::new(self.clone()))
    }
}

/// The key chooser for the run's distribution.
enum Chooser {
    Zipfian(Scrambled),
    Latest(SkewedLatest),
    Uniform,
}

pub struct Ycsb {
    p: YcsbParams,
    shares: [f64; 5],
    chooser: Chooser,
    /// The next key number to insert; all below it exist.
    next_insert: u64,
    select_sql: String,
    update_sql: Vec<String>,
    insert_sql: String,
    scan_sql: String,
}

/// YCSB's `buildKeyName` with hashed inserts.
fn key(keynum: u64) -> String {
    format!("user{}", super::zipf::fnvhash64(keynum))
}

impl Ycsb {
    pub fn new(p: YcsbParams) -> Ycsb {
        let (shares, mix_distribution) = p.mix.shares();
        let distribution = p.distribution.unwrap_or(mix_distribution);
        let insert_share = shares[INSERT];
        let chooser = match distribution {
            Distribution::Zipfian => {
                // YCSB sizes the zipfian for the inserts expected, twice over.
                let expected_new = (p.operations as f64 * insert_share * 2.0) as u64;
                Chooser::Zipfian(scrambled(0, p.records + expected_new - 1))
            }
            Distribution::Latest => Chooser::Latest(SkewedLatest::new(p.records - 1)),
            Distribution::Uniform => Chooser::Uniform,
        };
        let fields: Vec<String> = (0..p.fields).map(|i| format!("FIELD{i}")).collect();
        let placeholders: Vec<String> = (2..=p.fields + 1).map(|i| format!("?{i}")).collect();
        Ycsb {
            shares,
            chooser,
            next_insert: p.records,
            select_sql: "SELECT * FROM usertable WHERE YCSB_KEY = ?1".into(),
            update_sql: fields.iter().map(|f| format!("UPDATE usertable SET {f} = ?2 WHERE YCSB_KEY = ?1")).collect(),
            insert_sql: format!(
                "INSERT INTO usertable (YCSB_KEY, {}) VALUES (?1, {})",
                fields.join(", "),
                placeholders.join(", ")
            ),
            scan_sql: "SELECT * FROM usertable WHERE YCSB_KEY >= ?1 ORDER BY YCSB_KEY LIMIT ?2".into(),
            p,
        }
    }

    /// A printable random value (YCSB's RandomByteIterator gives printable bytes).
    fn value(&self, rng: &mut ChaCha8Rng) -> String {
        (0..self.p.field_bytes).map(|_| rng.gen_range(b' '..=b'~') as char).collect()
    }

    /// YCSB's `nextKeynum`: a key number that exists.
    fn keynum(&mut self, rng: &mut ChaCha8Rng) -> u64 {
        let last = self.next_insert - 1;
        match &mut self.chooser {
            Chooser::Zipfian(z) => loop {
                let k = z.next(rng);
                if k <= last {
                    break k;
                }
            },
            Chooser::Latest(l) => l.next(last, rng),
            Chooser::Uniform => rng.gen_range(0..self.p.records),
        }
    }

    fn insert(&mut self, s: &mut Session<'_>, keynum: u64, rng: &mut ChaCha8Rng) -> Result<(), String> {
        let mut values = vec![key(keynum)];
        values.extend((0..self.p.fields).map(|_| self.value(rng)));
        s.exec(&self.insert_sql, rusqlite::params_from_iter(values.iter()))?;
        Ok(())
    }

    fn read(&mut self, s: &mut Session<'_>, k: &str) -> Result<(), String> {
        match s.row(&self.select_sql, [k], |_| Ok(()))? {
            Some(()) => Ok(()),
            None => Err(format!("read: key {k} is missing")),
        }
    }

    fn update(&mut self, s: &mut Session<'_>, k: &str, rng: &mut ChaCha8Rng) -> Result<(), String> {
        let field = rng.gen_range(0..self.p.fields) as usize;
        let value = self.value(rng);
        match s.exec(&self.update_sql[field], (k, value))? {
            1 => Ok(()),
            n => Err(format!("update: key {k} changed {n} rows")),
        }
    }
}

impl SqliteWorkload for Ycsb {
    fn name(&self) -> &'static str {
        "ycsb"
    }

    fn kinds(&self) -> &'static [&'static str] {
        KINDS
    }

    fn load(&mut self, s: &mut Session<'_>, rng: &mut ChaCha8Rng) -> Result<(), String> {
        let fields: Vec<String> = (0..self.p.fields).map(|i| format!("FIELD{i} TEXT")).collect();
        s.batch(&format!("CREATE TABLE usertable (YCSB_KEY VARCHAR(255) PRIMARY KEY, {})", fields.join(", ")))?;
        for start in (0..self.p.records).step_by(LOAD_BATCH as usize) {
            s.batch("BEGIN")?;
            for keynum in start..(start + LOAD_BATCH).min(self.p.records) {
                self.insert(s, keynum, rng)?;
            }
            s.batch("COMMIT")?;
        }
        Ok(())
    }

    fn transactions(&self) -> u64 {
        self.p.operations
    }

    fn transaction(&mut self, s: &mut Session<'_>, _n: u64, rng: &mut ChaCha8Rng) -> Result<(Kind, bool), String> {
        let u: f64 = rng.gen();
        let mut acc = 0.0;
        let kind = (0..KINDS.len()).find(|&k| {
            acc += self.shares[k];
            u < acc
        });
        // Rounding may leave u above the sum: the last kind with a share.
        let kind = kind.or_else(|| (0..KINDS.len()).rev().find(|&k| self.shares[k] > 0.0)).unwrap_or(READ);
        match kind {
            INSERT => {
                let keynum = self.next_insert;
                self.insert(s, keynum, rng)?;
                self.next_insert += 1;
            }
            SCAN => {
                let start = key(self.keynum(rng));
                let len = rng.gen_range(1..=MAX_SCAN_LENGTH) as i64;
                let rows = s.rows(&self.scan_sql, (start.as_str(), len), |_| Ok(()))?;
                if rows.is_empty() {
                    // The start key exists, so the scan returns at least it.
                    return Err(format!("scan: nothing from existing key {start}"));
                }
            }
            READ | UPDATE | RMW => {
                let k = key(self.keynum(rng));
                if kind != UPDATE {
                    self.read(s, &k)?;
                }
                if kind != READ {
                    self.update(s, &k, rng)?;
                }
            }
            _ => return Err(format!("operation kind {kind} unknown")),
        }
        Ok((kind, true))
    }

    fn check(&mut self, s: &mut Session<'_>) -> Result<(), String> {
        let count = s.int("SELECT count(*) FROM usertable", [])?;
        if count as u64 != self.next_insert {
            return Err(format!(
                "usertable holds {count} rows; {} were loaded and {} inserted",
                self.p.records,
                self.next_insert - self.p.records
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::Consistency;
    use crate::sqlite::{runner::run, ConfiguredSqlite, HostSqlite, SqliteResult, SqliteRunConfig};
    use crate::Control;

    fn ycsb(p: YcsbParams, seed: u64) -> SqliteResult {
        let mut host = HostSqlite::in_memory().unwrap();
        let config = SqliteRunConfig { seed, check: true, ..Default::default() };
        let params = p.params();
        run(&mut host, &mut Ycsb::new(p), params, &config, &mut |_, _| Control::Continue).unwrap()
    }

    #[test]
    fn every_mix_has_its_shares_and_keeps_its_rows() {
        for mix in [Mix::A, Mix::B, Mix::C, Mix::D, Mix::E, Mix::F] {
            let p =
                YcsbParams { mix, records: 500, operations: 3000, fields: 3, field_bytes: 20, ..Default::default() };
            let r = ycsb(p, 1);
            assert_eq!(r.consistency_check, Some(Consistency::Passed), "{mix:?}");
            let (shares, _) = mix.shares();
            for (kind, share) in KINDS.iter().zip(shares) {
                let got = r.kinds.get(*kind).map_or(0, |k| k.transactions) as f64 / 3000.0;
                assert!((got - share).abs() < 0.03, "{mix:?} {kind}: {got:.3} vs {share}");
            }
        }
    }

    #[test]
    fn a_read_modify_write_costs_two_statements_and_a_scan_one() {
        let p = YcsbParams {
            mix: Mix::F,
            records: 200,
            operations: 1000,
            fields: 2,
            field_bytes: 10,
            ..Default::default()
        };
        let r = ycsb(p, 4);
        let (reads, rmws) = (r.kinds["read"].transactions, r.kinds["read-modify-write"].transactions);
        assert_eq!(r.statements, reads + 2 * rmws);
        assert!(
            r.kinds["read-modify-write"].transaction_latency_us.p50 >= 2.0 * r.kinds["read"].transaction_latency_us.p50
        );
        let p =
            YcsbParams { mix: Mix::E, records: 200, operations: 500, fields: 2, field_bytes: 10, ..Default::default() };
        assert_eq!(ycsb(p, 4).statements, 500);
    }

    #[test]
    fn uniform_and_deterministic() {
        let p = YcsbParams {
            mix: Mix::B,
            records: 300,
            operations: 800,
            distribution: Some(Distribution::Uniform),
            fields: 2,
            field_bytes: 16,
        };
        let a = ycsb(p.clone(), 9);
        assert_eq!(a.deterministic_json(), ycsb(p.clone(), 9).deterministic_json());
        assert_ne!(a.kinds["update"].transactions, ycsb(p, 10).kinds["update"].transactions);
    }
}
