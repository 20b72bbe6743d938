//! TPC-B: branches : tellers : accounts = 1 : 10 : 100,000 per scale unit, and a history
//! table. The transaction adds a random delta to an account (of the teller's branch 85%
//! of the time), its teller and its branch, reads the account's balance, and logs a
//! history row. Consistency: the balances of accounts, tellers and branches each sum to
//! the sum of the history deltas.

use crate::limits::CountRange;
use crate::params::WorkloadParams;
use crate::workload::{TxOutcome, TxResult, Workload, WorkloadError};
use crate::{err as e, int};
use engine::db::TableId;
use engine::types::Value;
use engine::Database;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

pub const ACCOUNTS_PER_BRANCH: u32 = 100_000;
pub const TELLERS_PER_BRANCH: u32 = 10;

/// Branches.
pub const SCALE: CountRange = CountRange { min: 1, max: u32::MAX as u64 };

/// TPC-B's parameters in an experiment.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TpcbParams {
    /// Branches, 100,000 accounts each.
    pub scale: u32,
    /// Balances and history deltas as 8-byte floats, as shore-kits, the Shore-MT
    /// benchmark kit, declares them (`SQL_FLOAT` in `shore_tpcb_schema.cpp`); otherwise BIGINT.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub float_money: bool,
}

impl Default for TpcbParams {
    fn default() -> Self {
        TpcbParams { scale: 1, float_money: false }
    }
}

impl WorkloadParams for TpcbParams {
    const NAME: &'static str = "tpcb";
    const ABOUT: &'static str = "TPC-B: one account, teller and branch update and a history insert";
    const LEFT_OUT: &'static [&'static str] = &["float_money"];

    fn check(&self) -> Result<(), (&'static str, String)> {
        SCALE.check(self.scale.into()).map(|_| ()).map_err(|p| ("scale", p))
    }

    fn size(&self) -> String {
        format!("scale {}", self.scale)
    }

    fn build(&self, _rng: &mut ChaCha8Rng) -> Box<dyn Workload> {
        Box::new(Tpcb { float_money: self.float_money, ..Tpcb::new(self.scale) })
    }
}

/// One transaction's teller, its branch, the account and the delta. SQLite's TPC-B
/// (`crate::sqlite::tpcb`) draws with this too, so from the same seed both engines see
/// the same sequence.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Draw {
    pub teller: i64,
    pub branch: i64,
    pub account: i64,
    pub delta: i64,
}

impl Draw {
    /// The next transaction's inputs over `scale` branches.
    pub fn next(scale: u32, rng: &mut ChaCha8Rng) -> Draw {
        let scale = scale.max(1);
        let teller = rng.gen_range(0..scale * TELLERS_PER_BRANCH) as i64;
        let branch = teller / TELLERS_PER_BRANCH as i64;
        // 85% of accounts come from the teller's branch (TPC-B 5.3.5).
        let account_branch = if scale == 1 || rng.gen_bool(0.85) {
            branch
        } else {
            let other = rng.gen_range(0..scale as i64 - 1);
            if other >= branch {
                other + 1
            } else {
                other
            }
        };
        let account = account_branch * ACCOUNTS_PER_BRANCH as i64 + rng.gen_range(0..ACCOUNTS_PER_BRANCH) as i64;
        Draw { teller, branch, account, delta: rng.gen_range(-999_999..=999_999) }
    }
}

pub struct Tpcb {
    pub scale: u32,
    /// [`TpcbParams::float_money`].
    pub float_money: bool,
    next_history: i64,
    /// Branch, teller, account and history, looked up by name once.
    tables: Option<[TableId; 4]>,
}

impl Tpcb {
    pub fn new(scale: u32) -> Tpcb {
        Tpcb { scale: scale.max(1), float_money: false, next_history: 1, tables: None }
    }

    fn tables(&mut self, db: &Database) -> Result<[TableId; 4], WorkloadError> {
        if let Some(t) = self.tables {
            return Ok(t);
        }
        let id = |name| db.table_id(name).map_err(e);
        let t = [id("branch")?, id("teller")?, id("account")?, id("history")?];
        self.tables = Some(t);
        Ok(t)
    }
}

impl Workload for Tpcb {
    fn name(&self) -> &'static str {
        "tpcb"
    }

    fn tables(&self) -> Vec<&'static str> {
        vec!["branch", "teller", "account", "history"]
    }

    fn load(
        &mut self,
        db: &mut Database,
        placement: &dyn Fn(&str) -> String,
        _rng: &mut ChaCha8Rng,
    ) -> Result<(), WorkloadError> {
        let money = if self.float_money { "FLOAT" } else { "BIGINT" };
        db.execute(&format!(
            "CREATE TABLE branch (b_id INT PRIMARY KEY, b_balance {money} NOT NULL, b_filler CHAR(88)) TABLESPACE {};
             CREATE TABLE teller (t_id INT PRIMARY KEY, t_b_id INT NOT NULL, t_balance {money} NOT NULL, t_filler CHAR(84)) TABLESPACE {};
             CREATE TABLE account (a_id INT PRIMARY KEY, a_b_id INT NOT NULL, a_balance {money} NOT NULL, a_filler CHAR(84)) TABLESPACE {};
             CREATE TABLE history (h_t_id INT NOT NULL, h_b_id INT NOT NULL, h_a_id INT NOT NULL, h_delta {money} NOT NULL, h_time BIGINT NOT NULL, h_filler CHAR(22)) TABLESPACE {};",
            placement("branch"),
            placement("teller"),
            placement("account"),
            placement("history"),
        ))
        .map_err(e)?;
        let (b, t, a) =
            (db.table_id("branch").map_err(e)?, db.table_id("teller").map_err(e)?, db.table_id("account").map_err(e)?);
        let filler = Value::Text(String::new());
        let mut tx = db.begin();
        for branch in 0..self.scale as i64 {
            db.insert(&tx, b, &[Value::Int(branch), Value::Int(0), filler.clone()]).map_err(e)?;
            for k in 0..TELLERS_PER_BRANCH as i64 {
                let id = branch * TELLERS_PER_BRANCH as i64 + k;
                db.insert(&tx, t, &[Value::Int(id), Value::Int(branch), Value::Int(0), filler.clone()]).map_err(e)?;
            }
            for k in 0..ACCOUNTS_PER_BRANCH as i64 {
                let id = branch * ACCOUNTS_PER_BRANCH as i64 + k;
                db.insert(&tx, a, &[Value::Int(id), Value::Int(branch), Value::Int(0), filler.clone()]).map_err(e)?;
                if k % 1000 == 999 {
                    db.commit(tx).map_err(e)?;
                    tx = db.begin();
                }
            }
        }
        db.commit(tx).map_err(e)?;
        Ok(())
    }

    fn transaction(&mut self, db: &mut Database, _terminal: usize, rng: &mut ChaCha8Rng) -> TxResult {
        let [b, t, a, h] = self.tables(db)?;
        let Draw { teller, branch, account, delta } = Draw::next(self.scale, rng);
        let delta = Value::Int(delta);
        let tx = db.begin();
        db.add(&tx, a, &[Value::Int(account)], 2, &delta).map_err(e)?;
        // The balance, as the TPC-B profile reads it.
        db.get_columns(&tx, a, &[Value::Int(account)], &[2]).map_err(e)?.ok_or("TPC-B: account vanished")?;
        db.add(&tx, t, &[Value::Int(teller)], 2, &delta).map_err(e)?;
        db.add(&tx, b, &[Value::Int(branch)], 1, &delta).map_err(e)?;
        let now = db.now() as i64;
        let row = [
            Value::Int(teller),
            Value::Int(branch),
            Value::Int(account),
            delta,
            Value::Int(now),
            Value::Text(String::new()),
        ];
        db.insert(&tx, h, &row).map_err(e)?;
        self.next_history += 1;
        db.commit(tx).map_err(e)?;
        Ok(TxOutcome { committed: true, operations: 5, kind: "tpcb" })
    }

    fn check(&mut self, db: &mut Database) -> Result<(), String> {
        let [branch, teller, account, history] = self.tables(db)?;
        // One row at a time: the account and history tables need not fit in memory.
        let sum = |db: &mut Database, t: TableId, col: usize| -> Result<i64, WorkloadError> {
            let tx = db.begin();
            let mut sum = 0;
            // A FLOAT balance holds whole units (the deltas are integers) far below 2^53.
            db.for_each_row(&tx, t, |r| {
                sum += match &r[col] {
                    Value::Float(f) => *f as i64,
                    other => int(other),
                }
            })
            .map_err(e)?;
            db.commit(tx).map_err(e)?;
            Ok(sum)
        };
        let deltas = sum(db, history, 3)?;
        for (name, t, col) in [("account", account, 2), ("teller", teller, 2), ("branch", branch, 1)] {
            let s = sum(db, t, col)?;
            if s != deltas {
                return Err(format!("TPC-B consistency: {name} balances sum to {s}, history deltas to {deltas}"));
            }
        }
        Ok(())
    }
}
