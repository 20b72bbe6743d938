//! TPC-B in SQL on SQLite, one connection: the engine's TPC-B (`crate::tpcb`) as SQL
//! statements, so `compare --engines` can run both on the same flash. Same scale
//! (1 branch : 10 tellers : 100,000 accounts per unit), same row widths (the engine's
//! CHAR fillers are blank-padded, so the SQLite rows carry fillers of the same length),
//! the load committed every 1,000 accounts as the engine does, and the same
//! transaction: add a delta to an account, read its balance, add it to the teller and
//! the branch, insert a history row, in one explicit transaction.
//!
//! Each transaction's teller, account and delta come from [`crate::tpcb::Draw`], the
//! engine's own draw; the load draws nothing, so from the same seed SQLite sees the same
//! sequence as the engine with one terminal.
//!
//! Consistency: account, teller and branch balances each sum to the history deltas.

use super::{Kind, Session, SqliteParams, SqliteWorkload};
use crate::limits::TRANSACTIONS;
use crate::tpcb::{Draw, ACCOUNTS_PER_BRANCH, SCALE, TELLERS_PER_BRANCH};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// Accounts per load transaction (the engine's load commits as often).
const LOAD_BATCH: i64 = 1000;

/// The engine's schema with SQLite's types; fillers are as long as the engine's
/// CHAR(88), CHAR(84), CHAR(84) and CHAR(22).
const SCHEMA: &str = "
CREATE TABLE branch (b_id INTEGER PRIMARY KEY, b_balance INTEGER NOT NULL, b_filler TEXT);
CREATE TABLE teller (t_id INTEGER PRIMARY KEY, t_b_id INTEGER NOT NULL, t_balance INTEGER NOT NULL, t_filler TEXT);
CREATE TABLE account (a_id INTEGER PRIMARY KEY, a_b_id INTEGER NOT NULL, a_balance INTEGER NOT NULL, a_filler TEXT);
CREATE TABLE history (h_t_id INTEGER NOT NULL, h_b_id INTEGER NOT NULL, h_a_id INTEGER NOT NULL,
  h_delta INTEGER NOT NULL, h_time INTEGER NOT NULL, h_filler TEXT);
";
const BRANCH_FILLER: usize = 88;
const TELLER_FILLER: usize = 84;
const ACCOUNT_FILLER: usize = 84;
const HISTORY_FILLER: usize = 22;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TpcbSqlParams {
    /// Branches, 100,000 accounts each.
    pub scale: u32,
    /// Transactions measured.
    pub transactions: u64,
}

impl Default for TpcbSqlParams {
    fn default() -> Self {
        TpcbSqlParams { scale: 1, transactions: 10_000 }
    }
}

impl SqliteParams for TpcbSqlParams {
    const NAME: &'static str = "tpcb";
    const ABOUT: &'static str = "TPC-B in SQL: one account, teller and branch update and a history insert";

    fn check(&self) -> Result<(), (&'static str, String)> {
        SCALE.check(self.scale.into()).map_err(|p| ("scale", p))?;
        TRANSACTIONS.check(self.transactions).map(|_| ()).map_err(|p| ("transactions", p))
    }

    fn build(&self) -> Box<dyn SqliteWorkload> {
        Box::new(TpcbSql { p: self.clone() })
    }
}

pub struct TpcbSql {
    p: TpcbSqlParams,
}

fn filler(bytes: usize) -> String {
    " ".repeat(bytes)
}

impl SqliteWorkload for TpcbSql {
    fn name(&self) -> &'static str {
        "tpcb"
    }

    fn kinds(&self) -> &'static [&'static str] {
        &["tpcb"]
    }

    fn load(&mut self, s: &mut Session<'_>, _rng: &mut ChaCha8Rng) -> Result<(), String> {
        s.batch(SCHEMA)?;
        s.batch("BEGIN")?;
        let (tellers, accounts) = (TELLERS_PER_BRANCH as i64, ACCOUNTS_PER_BRANCH as i64);
        for branch in 0..i64::from(self.p.scale) {
            s.exec("INSERT INTO branch VALUES (?1, 0, ?2)", rusqlite::params![branch, filler(BRANCH_FILLER)])?;
            for k in 0..tellers {
                s.exec(
                    "INSERT INTO teller VALUES (?1, ?2, 0, ?3)",
                    rusqlite::params![branch * tellers + k, branch, filler(TELLER_FILLER)],
                )?;
            }
            for k in 0..accounts {
                s.exec(
                    "INSERT INTO account VALUES (?1, ?2, 0, ?3)",
                    rusqlite::params![branch * accounts + k, branch, filler(ACCOUNT_FILLER)],
                )?;
                if k % LOAD_BATCH == LOAD_BATCH - 1 {
                    s.batch("COMMIT; BEGIN")?;
                }
            }
        }
        s.batch("COMMIT")
    }

    fn transactions(&self) -> u64 {
        self.p.transactions
    }

    fn transaction(&mut self, s: &mut Session<'_>, _n: u64, rng: &mut ChaCha8Rng) -> Result<(Kind, bool), String> {
        let Draw { teller, branch, account, delta } = Draw::next(self.p.scale, rng);
        s.batch("BEGIN")?;
        s.exec("UPDATE account SET a_balance = a_balance + ?2 WHERE a_id = ?1", [account, delta])?;
        s.one("account", "SELECT a_balance FROM account WHERE a_id = ?1", [account], |r| r.get::<_, i64>(0))?;
        s.exec("UPDATE teller SET t_balance = t_balance + ?2 WHERE t_id = ?1", [teller, delta])?;
        s.exec("UPDATE branch SET b_balance = b_balance + ?2 WHERE b_id = ?1", [branch, delta])?;
        let now = s.host().now() as i64;
        s.exec(
            "INSERT INTO history VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            rusqlite::params![teller, branch, account, delta, now, filler(HISTORY_FILLER)],
        )?;
        s.batch("COMMIT")?;
        Ok((0, true))
    }

    fn check(&mut self, s: &mut Session<'_>) -> Result<(), String> {
        let history = s.int("SELECT SUM(h_delta) FROM history", [])?;
        for (table, sql) in [
            ("account", "SELECT SUM(a_balance) FROM account"),
            ("teller", "SELECT SUM(t_balance) FROM teller"),
            ("branch", "SELECT SUM(b_balance) FROM branch"),
        ] {
            let sum = s.int(sql, [])?;
            if sum != history {
                return Err(format!("TPC-B consistency: {table} balances sum to {sum}, history deltas to {history}"));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::Consistency;
    use crate::sqlite::{runner::run, ConfiguredSqlite, HostSqlite, SqliteRunConfig};
    use crate::Control;
    use rand::SeedableRng;

    #[test]
    fn runs_the_engines_draws_and_keeps_the_balances() {
        let p = TpcbSqlParams { scale: 2, transactions: 300 };
        let mut host = HostSqlite::in_memory().unwrap();
        let mut w = TpcbSql { p: p.clone() };
        let config = SqliteRunConfig { seed: 9, check: true, ..Default::default() };
        let r = run(&mut host, &mut w, p.params(), &config, &mut |_, _| Control::Continue).unwrap();
        assert_eq!(r.consistency_check, Some(Consistency::Passed));
        assert_eq!((r.transactions, r.committed), (300, 300));
        // Seven statements a transaction: BEGIN, five, COMMIT.
        assert_eq!(r.statements, 7 * 300);
        // The history holds exactly the engine's draws from the same seed, in order.
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        let want: Vec<Draw> = (0..300).map(|_| Draw::next(2, &mut rng)).collect();
        let mut s = Session::new(&mut host, 0);
        let got = s
            .rows("SELECT h_t_id, h_b_id, h_a_id, h_delta FROM history ORDER BY rowid", [], |r| {
                Ok(Draw { teller: r.get(0)?, branch: r.get(1)?, account: r.get(2)?, delta: r.get(3)? })
            })
            .unwrap();
        assert_eq!(got, want);
        assert_eq!(s.int("SELECT COUNT(*) FROM account", []).unwrap(), 200_000);
        assert_eq!(s.int("SELECT MIN(length(a_filler)) FROM account", []).unwrap(), 84);
        // A broken balance is named.
        s.batch("UPDATE teller SET t_balance = t_balance + 1 WHERE t_id = 3").unwrap();
        assert!(w.check(&mut s).unwrap_err().starts_with("TPC-B consistency: teller balances"));
    }
}
