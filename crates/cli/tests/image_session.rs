//! `deltaflash sql` on an image file: one writer, read-only sessions, and sessions that
//! only read leave the file byte-identical.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Output, Stdio};

const SMALL: &[&str] = &["--chips", "4", "--blocks-per-chip", "32", "--pages-per-block", "16"];

fn sql(image: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_deltaflash"))
        .arg("sql")
        .arg("--image")
        .arg(image)
        .args(SMALL)
        .args(args)
        .output()
        .expect("binary runs")
}

fn made(image: &Path) {
    let out = sql(image, &["-c", "CREATE TABLE t (k INT PRIMARY KEY, v INT); INSERT INTO t VALUES (1, 2)"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn sessions_that_only_read_leave_the_image_byte_identical() {
    let dir = tempfile::tempdir().unwrap();
    let image = dir.path().join("db.img");
    made(&image);
    let before = std::fs::read(&image).unwrap();
    for args in [&["-c", "SELECT * FROM t", "-c", ".tables"][..], &["--read-only", "-c", "SELECT * FROM t"][..]] {
        let out = sql(&image, args);
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        assert!(String::from_utf8_lossy(&out.stdout).contains('2'), "{args:?} reads the row");
        assert!(std::fs::read(&image).unwrap() == before, "{args:?} changed the image");
    }
    let out = sql(&image, &["--read-only", "-c", "INSERT INTO t VALUES (3, 4)"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("read-only"), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(std::fs::read(&image).unwrap() == before, "a refused write changed the image");
    let out = sql(&dir.path().join("none.img"), &["--read-only", "-c", "SELECT * FROM t"]);
    assert!(!out.status.success() && !dir.path().join("none.img").exists(), "read-only creates nothing");
}

#[test]
fn a_second_writer_is_refused_at_once_and_readers_wait_for_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let image = dir.path().join("db.img");
    made(&image);
    let mut writer = Command::new(env!("CARGO_BIN_EXE_deltaflash"))
        .arg("sql")
        .arg("--image")
        .arg(&image)
        .args(["--mode", "csv"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = writer.stdin.take().unwrap();
    let mut stdout = BufReader::new(writer.stdout.take().unwrap());
    writeln!(stdin, "SELECT v FROM t WHERE k = 1;").unwrap();
    let mut line = String::new();
    while line.trim() != "2" {
        line.clear();
        assert!(stdout.read_line(&mut line).unwrap() > 0, "the first session ended");
    }
    // The first session holds the image now.
    let second = sql(&image, &["-c", "INSERT INTO t VALUES (9, 9)"]);
    assert!(!second.status.success());
    let err = String::from_utf8_lossy(&second.stderr);
    assert!(err.contains("is locked by another process"), "{err}");
    let reader = sql(&image, &["--read-only", "-c", "SELECT * FROM t"]);
    assert!(!reader.status.success(), "a reader must not see a writer's half-written file");
    drop(stdin);
    assert!(writer.wait().unwrap().success());
    let out = sql(&image, &["--mode", "csv", "-c", "SELECT k FROM t"]);
    assert!(!String::from_utf8_lossy(&out.stdout).contains('9'), "the refused session wrote nothing");
}
