//! The power-cut loop both tortures share (`torture`, [`crate::torture`]; `torture
//! --engine sqlite`, [`crate::sqlite_torture`]) and their `--json` summary.
//!
//! The summary holds the resolved config (with `command_line`, for `deltaflash rerun`),
//! the flash operations of the load and of the run, every cut point, the cuts made, the
//! restarts (recoveries) run, the checks judged, passed and failed, the transfers
//! acknowledged before the cuts, what the cuts hit and the first failure. All of it
//! follows from the seed: a re-run makes the same cuts at the same points.

use crate::output::OutputFile;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Value};

/// What the cuts of a run found.
#[derive(Default)]
pub struct Tally {
    /// Each cut: the operation after the load it came at, and how many operations into
    /// the restart a second cut came (every fourth cut).
    cut_points: Vec<(u64, Option<u64>)>,
    passed: u32,
    failed: u32,
    /// Transfers acknowledged durable before the cuts that passed.
    acknowledged: u64,
    /// The first failure's line, as printed.
    first_failure: Option<String>,
}

/// A finished torture run, for the summary.
pub struct Torture {
    /// The resolved config (without `command_line`).
    pub config: Value,
    pub load_operations: u64,
    pub run_operations: u64,
    pub tally: Tally,
    /// What the cuts tore, by kind of flash operation.
    pub cuts_hit: Value,
}

/// Makes `cuts` power cuts at seeded operations among the run's `run_ops` (every fourth
/// cutting the restart too); `one(cut_after, restart_cut)` runs one and returns the
/// transfers acknowledged before it, or what the check found. Prints each failure and
/// the count of passes and failures.
pub fn cut_loop(
    cuts: u32,
    seed: u64,
    run_ops: u64,
    mut one: impl FnMut(u64, Option<u64>) -> Result<usize, String>,
) -> Tally {
    let bar = crate::progress(cuts as u64, "cuts");
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut tally = Tally::default();
    for i in 0..cuts {
        let cut_after = rng.gen_range(1..=run_ops.max(1));
        let restart_cut = (i % 4 == 3).then(|| rng.gen_range(1..8));
        tally.cut_points.push((cut_after, restart_cut));
        // A cut late in the run with nothing acknowledged would check nothing.
        let outcome = one(cut_after, restart_cut).and_then(|acknowledged| match acknowledged {
            0 if cut_after > run_ops / 2 => {
                Err(format!("no transfer was acknowledged in {cut_after} of {run_ops} operations"))
            }
            n => Ok(n),
        });
        match outcome {
            Ok(n) => {
                tally.passed += 1;
                tally.acknowledged += n as u64;
            }
            Err(e) => {
                tally.failed += 1;
                let again = restart_cut.map_or(String::new(), |r| format!(", restart cut at +{r}"));
                let line = format!("FAIL seed {seed} cut at operation +{cut_after}{again}: {e}");
                bar.suspend(|| println!("{line}"));
                tally.first_failure.get_or_insert(line);
            }
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    tally
}

impl Torture {
    /// The `--json` summary.
    fn to_json(&self) -> Value {
        let t = &self.tally;
        let mut config = self.config.clone();
        config["command_line"] = json!(crate::rerun::command_line());
        let restarts_cut = t.cut_points.iter().filter(|(_, r)| r.is_some()).count();
        let points: Vec<Value> =
            t.cut_points.iter().map(|(op, restart)| json!({"operation": op, "restart_cut": restart})).collect();
        let mut v = json!({
            "command": "torture",
            "config": config,
            "load_operations": self.load_operations,
            "run_operations": self.run_operations,
            "cuts_made": t.cut_points.len(),
            // One restart after every cut, a second after a cut restart.
            "recoveries": t.cut_points.len() + restarts_cut,
            "invariant_checks": t.passed + t.failed,
            "passed": t.passed,
            "failed": t.failed,
            "acknowledged_transfers": t.acknowledged,
            "cuts_hit": self.cuts_hit,
            "first_failure": t.first_failure,
            "cut_points": points,
        });
        for (key, value) in crate::rerun::build_info() {
            v[key] = value;
        }
        v
    }

    /// Prints the tally, writes the summary if asked; `true` when no cut failed.
    pub fn finish(&self, json: Option<&OutputFile>) -> Result<bool, String> {
        println!("{} passed, {} failed", self.tally.passed, self.tally.failed);
        if let Some(file) = json {
            let text = serde_json::to_string_pretty(&self.to_json()).map_err(|e| format!("json: {e}"))?;
            file.write((text + "\n").as_bytes())?;
        }
        Ok(self.tally.failed == 0)
    }
}
