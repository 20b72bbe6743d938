//! `kill -9` is a power cut: a `deltaflash sql` session is killed at random points and
//! every statement whose result it had printed (an acknowledged commit) must be there
//! when the image is opened again, and nothing that was never sent.
//!
//! Iterations: `DELTAFLASH_KILL9_ITERATIONS` (default 30; `make torture` runs more).

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};

const SMALL: &[&str] = &["--chips", "4", "--blocks-per-chip", "32", "--pages-per-block", "16"];

fn sql(image: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_deltaflash"));
    c.arg("sql").arg("--image").arg(image).args(SMALL);
    c
}

/// Keys in table t, read by a fresh session.
fn keys(image: &Path) -> BTreeSet<i64> {
    let out = sql(image).args(["-c", ".mode csv", "-c", "SELECT k FROM t"]).output().expect("binary runs");
    assert!(out.status.success(), "reopen failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).lines().filter_map(|l| l.trim().parse().ok()).collect()
}

#[test]
fn every_acknowledged_commit_survives_kill_9() {
    let iterations: u64 = std::env::var("DELTAFLASH_KILL9_ITERATIONS").ok().and_then(|v| v.parse().ok()).unwrap_or(30);
    let dir = tempfile::tempdir().unwrap();
    for seed in 0..iterations {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let image = dir.path().join(format!("kill-{seed}.img"));
        let made = sql(&image).args(["-c", "CREATE TABLE t (k BIGINT PRIMARY KEY, v BIGINT)"]).output().unwrap();
        assert!(made.status.success(), "create: {}", String::from_utf8_lossy(&made.stderr));

        let mut child = sql(&image).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        writeln!(stdin, ".mode csv").unwrap();
        let statements = rng.gen_range(1..120u64);
        let mut acknowledged = BTreeSet::new();
        let mut sent = BTreeSet::new();
        for i in 0..statements {
            // Each insert is followed by a read of it: its row printed means the insert's
            // commit returned.
            writeln!(stdin, "INSERT INTO t VALUES ({i}, {});\nSELECT k FROM t WHERE k = {i};", i * 7).unwrap();
            stdin.flush().unwrap();
            sent.insert(i as i64);
            let mut line = String::new();
            loop {
                line.clear();
                assert!(stdout.read_line(&mut line).unwrap() > 0, "seed {seed}: the shell ended early");
                if line.trim() == i.to_string() {
                    break;
                }
            }
            acknowledged.insert(i as i64);
        }
        // A batch of inserts in flight, killed at a random moment of their execution.
        for i in statements..statements + rng.gen_range(1..60u64) {
            let _ = writeln!(stdin, "INSERT INTO t VALUES ({i}, 0);");
            sent.insert(i as i64);
        }
        let _ = stdin.flush();
        std::thread::sleep(std::time::Duration::from_micros(rng.gen_range(0..4000)));
        child.kill().unwrap();
        child.wait().unwrap();

        let found = keys(&image);
        eprintln!("seed {seed}: {} acknowledged, {} sent, {} found", acknowledged.len(), sent.len(), found.len());
        let lost: Vec<_> = acknowledged.difference(&found).collect();
        assert!(lost.is_empty(), "seed {seed}: acknowledged commits lost after kill -9: {lost:?}");
        let invented: Vec<_> = found.difference(&sent).collect();
        assert!(invented.is_empty(), "seed {seed}: rows that were never sent: {invented:?}");
        // Statements run in order: what survived is a prefix of what was sent.
        assert!(found.iter().copied().eq(0..found.len() as i64), "seed {seed}: a gap in {found:?}");
        let leftovers: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.path() != image && !e.file_name().to_string_lossy().starts_with("kill-"))
            .collect();
        assert!(leftovers.is_empty(), "seed {seed}: files left behind: {leftovers:?}");
    }
}
