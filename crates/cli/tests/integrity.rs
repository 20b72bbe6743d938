//! Corrupt is never stale, end to end: a bit flipped in the flash page that holds the
//! newest version of a row (SQLite on an FTL), or in the newest configuration slot of a
//! `sql` image, makes the next session fail with a clear error, never answer with the
//! older version and never panic.

mod common;

use common::{deltaflash, stderr};

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Flips the lowest bit of the first byte of every occurrence of `needle` in the file.
fn flip_every(path: &std::path::Path, needle: &[u8]) -> usize {
    let mut bytes = std::fs::read(path).unwrap();
    let at: Vec<usize> =
        bytes.windows(needle.len()).enumerate().filter(|(_, w)| *w == needle).map(|(i, _)| i).collect();
    for &i in &at {
        bytes[i] ^= 0x01;
    }
    std::fs::write(path, bytes).unwrap();
    at.len()
}

#[test]
fn a_flipped_bit_in_the_newest_copy_of_a_row_is_an_error_not_the_old_row() {
    for storage in ["ftl:page", "ftl:dftl", "ftl:bast"] {
        let dir = tempfile::tempdir().unwrap();
        let image = dir.path().join("s.img");
        let path = image.to_str().unwrap();
        let mut args = vec!["sqlite", "--image", path, "--storage", storage, "--over-provisioning", "0.3"];
        args.extend(["--chips", "2", "--blocks-per-chip", "64", "--pages-per-block", "16"]);
        args.extend([
            "-c",
            "CREATE TABLE t(k INTEGER PRIMARY KEY, v TEXT); INSERT INTO t VALUES (1, 'old-value-aaaa');",
        ]);
        args.extend(["-c", "UPDATE t SET v = 'new-value-bbbb' WHERE k = 1;"]);
        let out = deltaflash(&args);
        assert!(out.status.success(), "{storage}: {}", stderr(&out));
        // Rollback journal: the new row lives in the database page alone.
        assert_eq!(flip_every(&image, b"new-value-bbbb"), 1, "{storage}");
        let out = deltaflash(&["sqlite", "--image", path, "-c", "SELECT v FROM t;"]);
        let (stdout, err) = (text(&out.stdout), stderr(&out));
        assert!(!stdout.contains("old-value"), "{storage}: the older row came back: {stdout}");
        assert!(!out.status.success(), "{storage}: {stdout}");
        assert!(err.contains("disk I/O error") && err.contains("corrupt"), "{storage}: {err}");
        assert!(err.contains("logical page") && err.contains("block"), "{storage}: names where: {err}");
    }
}

/// Bytes of the image header and of one configuration slot (`docs/format.md`).
const HEADER_BYTES: usize = 4096;
const SLOT_BYTES: usize = 1 << 20;

#[test]
fn a_damaged_newest_configuration_slot_is_a_clear_error_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let image = dir.path().join("c.img");
    let path = image.to_str().unwrap();
    // CREATE REGION writes a second configuration generation.
    let mut args = vec!["sql", "--image", path, "--chips", "4", "--blocks-per-chip", "32", "--pages-per-block", "16"];
    args.extend([
        "-c",
        "CREATE REGION r (MAX_CHIPS=1, IPA_MODE=SLC, IPA=2x4); CREATE TABLESPACE ts (REGION=r);
         CREATE TABLE t (k INT PRIMARY KEY, v VARCHAR(20)) TABLESPACE ts; INSERT INTO t VALUES (1, 'x');",
    ]);
    let out = deltaflash(&args);
    assert!(out.status.success(), "{}", stderr(&out));
    let mut bytes = std::fs::read(&image).unwrap();
    let generation = |slot: usize| {
        let at = HEADER_BYTES + slot * SLOT_BYTES;
        u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap())
    };
    let newest = if generation(0) > generation(1) { 0 } else { 1 };
    assert_eq!(generation(newest), 2);
    bytes[HEADER_BYTES + newest * SLOT_BYTES + 16 + 3] ^= 0x20;
    std::fs::write(&image, bytes).unwrap();
    for args in [
        &["sql", "--image", path, "-c", "SELECT v FROM t"][..],
        &["sql", "--read-only", "--image", path, "-c", "SELECT v FROM t"],
        &["check", "--image", path],
    ] {
        let out = deltaflash(args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert!(err.contains("configuration generation 2") && err.contains("checksum"), "{args:?}: {err}");
    }
}
