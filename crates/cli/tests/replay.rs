//! `deltaflash replay` on block traces: each format's sample (tests/data/traces/)
//! parsed to hand-computed requests, page mapping with read-modify-write counts,
//! open and closed timing, `--speed`, `--wrap`, errors naming the line, and the same
//! JSON for the same seed.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use workloads::blocktrace::{BlockOp, BlockReader, BlockRequest, Format};

/// 4 chips × 32 blocks × 16 pages of 4 KiB (the paper-emulator preset's pages).
const SMALL: &[&str] = &["--chips", "4", "--blocks-per-chip", "32", "--pages-per-block", "16"];
/// Twice the blocks for an FTL, which keeps more spare blocks per chip.
const SMALL_FTL: &[&str] = &["--chips", "4", "--blocks-per-chip", "64", "--pages-per-block", "16"];

fn sample(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/traces").join(name)
}

fn deltaflash(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_deltaflash")).args(args).output().expect("the binary runs")
}

/// Replays `trace` with `args` on the small device; the JSON it writes.
fn replay(trace: &Path, format: &str, args: &[&str]) -> Value {
    replay_on(SMALL, trace, format, args)
}

/// Replays `trace` with `args` on `device`; the JSON it writes.
fn replay_on(device: &[&str], trace: &Path, format: &str, args: &[&str]) -> Value {
    let dir = tempfile::tempdir().expect("temporary directory");
    let json = dir.path().join("run.json");
    let mut all =
        vec!["replay", "--trace", trace.to_str().unwrap(), "--format", format, "--json", json.to_str().unwrap()];
    all.extend_from_slice(device);
    all.extend_from_slice(args);
    let out = deltaflash(&all);
    assert!(out.status.success(), "replay {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_str(&std::fs::read_to_string(&json).expect("JSON written")).expect("JSON parses")
}

/// The error of a replay that must fail.
fn refused(trace: &Path, format: &str, args: &[&str]) -> String {
    let mut all = vec!["replay", "--trace", trace.to_str().unwrap(), "--format", format];
    all.extend_from_slice(SMALL);
    all.extend_from_slice(args);
    let out = deltaflash(&all);
    assert!(!out.status.success(), "replay {args:?} succeeded");
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(!stderr.contains("panicked"), "{stderr}");
    stderr
}

fn requests(name: &str, format: Format) -> Vec<(usize, BlockRequest)> {
    let file = std::fs::File::open(sample(name)).expect("sample exists");
    BlockReader::new(std::io::BufReader::new(file), name, format).collect::<Result<_, _>>().expect("sample parses")
}

fn r(time_ns: u64, op: BlockOp, offset_bytes: u64, len_bytes: u64) -> BlockRequest {
    BlockRequest { time_ns, op, offset_bytes, len_bytes }
}

const MS: u64 = 1_000_000;

#[test]
fn each_sample_parses_to_its_hand_computed_requests() {
    use BlockOp::*;
    // MSR: file times in 100 ns ticks; 10,000 ticks = 1 ms.
    let t0 = 128_166_372_000_000_000u64 * 100;
    assert_eq!(
        requests("msr.csv", Format::Msr),
        vec![
            (1, r(t0, Write, 0, 8192)),
            (2, r(t0 + MS, Write, 8192, 4096)),
            (3, r(t0 + 2 * MS, Read, 0, 4096)),
            (4, r(t0 + 3 * MS, Write, 12288, 512)),
            (5, r(t0 + 4 * MS, Read, 4096, 16384)),
            (6, r(t0 + 5 * MS, Write, 65536, 65536)),
            (7, r(t0 + 15 * MS, Write, 1000, 3000)),
            (8, r(t0 + 25 * MS, Read, 65536, 131072)),
        ]
    );
    // blkparse: Q events only, 512-byte sectors; FWS is a flush then the write.
    assert_eq!(
        requests("blkparse.txt", Format::Blkparse),
        vec![
            (1, r(0, Write, 0, 8192)),
            (5, r(MS, Read, 0, 4096)),
            (6, r(2 * MS, Write, 24 * 512, 512)),
            (7, r(3 * MS, Flush, 0, 0)),
            (7, r(3 * MS, Write, 128 * 512, 128 * 512)),
            (8, r(4 * MS, Flush, 0, 0)),
            (9, r(5 * MS, Trim, 128 * 512, 64 * 512)),
            (10, r(10 * MS, Read, 128 * 512, 256 * 512)),
        ]
    );
    // fio v2: `wait 1000` moves the clock by 1,000 µs.
    assert_eq!(
        requests("fio2.iolog", Format::Fio),
        vec![
            (4, r(0, Write, 0, 8192)),
            (5, r(0, Write, 100, 200)),
            (7, r(MS, Write, 16384, 100)),
            (8, r(MS, Read, 0, 16384)),
            (9, r(MS, Trim, 0, 4096)),
            (10, r(MS, Flush, 0, 0)),
        ]
    );
    // fio v3: timestamps in µs.
    assert_eq!(
        requests("fio3.iolog", Format::Fio),
        vec![
            (4, r(10_000, Write, 0, 16384)),
            (5, r(20_000, Write, 16384, 16384)),
            (6, r(520_000, Read, 4096, 8192)),
            (7, r(1_020_000, Write, 2048, 4096)),
        ]
    );
    // SPC: LBAs of 512 bytes, seconds.
    assert_eq!(
        requests("spc.csv", Format::Spc),
        vec![
            (1, r(0, Write, 0, 8192)),
            (2, r(MS / 2, Write, 16 * 512, 4096)),
            (3, r(MS, Read, 0, 4096)),
            (4, r(2 * MS, Write, 25 * 512, 1024)),
            (5, r(3 * MS + MS / 2, Read, 64 * 512, 16384)),
        ]
    );
}

/// The MSR sample on 4 KiB pages: 21 page writes, two of them partial (page 3, never
/// written, needs no read; page 0 is read first), 21 page reads (20 of requests, one
/// for the read-modify-write) and 17 reads of pages never written.
#[test]
fn msr_requests_map_onto_pages_with_read_modify_write() {
    let v = replay(&sample("msr.csv"), "msr", &[]);
    for (key, want) in [
        ("write_requests", 5),
        ("read_requests", 3),
        ("partial_page_writes", 2),
        ("rmw_reads", 1),
        ("unmapped_page_reads", 17),
        ("host_writes", 21),
        ("host_reads", 21),
    ] {
        assert_eq!(v[key], want, "{key}: {v}");
    }
    assert_eq!(v["write_latency_us"]["count"], 5, "{}", v["write_latency_us"]);
    assert_eq!(v["read_latency_us"]["count"], 3, "{}", v["read_latency_us"]);
}

/// fio v2: a partial write of a page holding data reads it first; of an empty page,
/// it does not. Trim and sync are counted.
#[test]
fn a_partial_page_write_is_a_read_modify_write() {
    let v = replay(&sample("fio2.iolog"), "fio", &[]);
    assert_eq!(v["partial_page_writes"], 2, "{v}");
    assert_eq!(v["rmw_reads"], 1, "{v}");
    assert_eq!(v["trim_requests"], 1, "{v}");
    assert_eq!(v["flush_requests"], 1, "{v}");
    assert_eq!(v["host_reads"], 1 + 2, "the RMW read and pages 0 and 1 of the read: {v}");
    assert_eq!(v["unmapped_page_reads"], 2, "pages 2 and 3 of the read: {v}");
}

#[test]
fn every_format_replays_on_noftl_and_an_ftl() {
    for (name, format) in [
        ("msr.csv", "msr"),
        ("blkparse.txt", "blkparse"),
        ("fio2.iolog", "fio"),
        ("fio3.iolog", "fio"),
        ("spc.csv", "spc"),
        ("native.trace", "native"),
    ] {
        for (ftl, device) in [("noftl", SMALL), ("page", SMALL_FTL)] {
            let v = replay_on(device, &sample(name), format, &["--ftl", ftl, "--fill"]);
            assert!(v["host_writes"].as_u64() > Some(0), "{name} on {ftl}: {v}");
            let p = &v["write_latency_us"];
            assert!(
                p["p50"].as_f64() <= p["p99_9"].as_f64() && p["p99_9"].as_f64() <= p["max"].as_f64(),
                "{name}: {p}"
            );
        }
    }
}

/// A burst of 64 one-page writes at the same instant, then 64 more 50 ms later.
fn bursty_trace(dir: &Path) -> PathBuf {
    let mut text = String::from("fio version 3 iolog\n0 /dev/x add\n");
    for burst in 0..2u64 {
        for i in 0..64u64 {
            text += &format!("{} /dev/x write {} 4096\n", burst * 50_000, (burst * 64 + i) * 4096);
        }
    }
    let path = dir.join("bursty.iolog");
    std::fs::write(&path, text).expect("trace written");
    path
}

/// Open timing issues the whole burst at once, so later writes queue behind earlier
/// ones on the chips and their latency (from the timestamp) grows; closed timing with
/// one request in flight never queues.
#[test]
fn open_and_closed_timing_differ_on_a_bursty_trace() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let trace = bursty_trace(dir.path());
    let closed = replay(&trace, "fio", &["--timing", "closed", "--queue-depth", "1"]);
    let open = replay(&trace, "fio", &["--timing", "open", "--queue-depth", "1"]);
    let p99 = |v: &Value| v["write_latency_us"]["p99"].as_f64().expect("p99");
    assert!(p99(&open) > 10.0 * p99(&closed), "open p99 {} µs, closed p99 {} µs", p99(&open), p99(&closed));
    // Closed: back to back, no idle time; open: the second burst waits for its time.
    let sim = |v: &Value| v["sim_seconds"].as_f64().expect("sim_seconds");
    assert!(sim(&open) > 0.05 && sim(&closed) < 0.05, "open {} s, closed {} s", sim(&open), sim(&closed));
}

/// A light trace (one write every 100 ms for 1 s) lasts its timestamps' span in open
/// timing; `--speed 2` halves every gap.
#[test]
fn open_timing_with_speed_2_halves_the_gaps() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let mut text = String::new();
    for i in 0..=10u64 {
        text += &format!("0,{},4096,w,{}.{}\n", i * 8, i / 10, i % 10);
    }
    let trace = dir.path().join("light.spc");
    std::fs::write(&trace, text).expect("trace written");
    let sim = |v: &Value| v["sim_seconds"].as_f64().expect("sim_seconds");
    let normal = replay(&trace, "spc", &["--timing", "open"]);
    let fast = replay(&trace, "spc", &["--timing", "open", "--speed", "2"]);
    // Each span is the trace's plus one write's service time (well under 1 ms).
    assert!((sim(&normal) - 1.0).abs() < 1e-3, "{}", sim(&normal));
    assert!((sim(&fast) - 0.5).abs() < 1e-3, "{}", sim(&fast));
    assert_eq!(normal["write_latency_us"], fast["write_latency_us"], "an idle device serves each write alike");
}

#[test]
fn errors_name_the_file_line_and_field() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let bad = dir.path().join("trace.csv");
    std::fs::write(&bad, "1,h,0,Write,0,4096,1\n2,h,0,Read,0,4096,1\n3,h,0,Write,0,abc,1\n").unwrap();
    let err = refused(&bad, "msr", &[]);
    assert!(err.contains("trace.csv:3: field 6 (Size): `abc` is not a number"), "{err}");

    let long = dir.path().join("long.csv");
    std::fs::write(&long, format!("1,h,0,Write,0,{},1\n", "7".repeat(500))).unwrap();
    let err = refused(&long, "msr", &[]);
    assert!(err.contains("long.csv:1: field 6 (Size)") && err.contains("(500 characters)"), "{err}");

    let err = refused(&sample("native.trace"), "native", &["--timing", "open"]);
    assert!(err.contains("native traces have none"), "{err}");
    let err = refused(&sample("native.trace"), "native", &["--wrap"]);
    assert!(err.contains("--wrap maps block addresses"), "{err}");
    let err = refused(&sample("spc.csv"), "spc", &["--speed", "2"]);
    assert!(err.contains("--speed"), "{err}");
    let err = refused(&sample("spc.csv"), "spc", &["--timing", "open", "--speed", "0"]);
    assert!(err.contains("`0` is not a speed-up"), "{err}");
}

/// An address past the logical capacity is refused, naming the line, unless --wrap.
#[test]
fn addresses_beyond_the_device_are_refused_or_wrapped() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let trace = dir.path().join("far.iolog");
    // Page 100,000 is far beyond the small device's ~1,800 logical pages.
    std::fs::write(&trace, "fio version 2 iolog\n/x add\n/x write 0 4096\n/x write 409600000 4096\n").unwrap();
    let err = refused(&trace, "fio", &[]);
    assert!(err.contains("far.iolog:4: logical page 100000 is beyond the device's"), "{err}");
    assert!(err.contains("--wrap"), "{err}");
    let v = replay(&trace, "fio", &["--wrap"]);
    assert_eq!(v["host_writes"], 2, "{v}");

    let huge = dir.path().join("huge.iolog");
    std::fs::write(&huge, "fio version 2 iolog\n/x add\n/x write 0 18446744073709551615\n").unwrap();
    let err = refused(&huge, "fio", &["--wrap"]);
    assert!(err.contains("huge.iolog:3: a request of") && err.contains("longer than the device"), "{err}");
}

/// Machine-dependent keys aside, the same trace and seed give the same JSON.
#[test]
fn same_seed_same_json() {
    let strip = |mut v: Value| {
        if let Value::Object(map) = &mut v {
            map.retain(|k, _| !k.contains("wall") && !k.contains("rss") && !k.starts_with("memory_"));
        }
        v
    };
    for (name, format, timing) in [("msr.csv", "msr", "open"), ("native.trace", "native", "closed")] {
        let args = ["--timing", timing, "--seed", "5", "--fill"];
        let a = strip(replay(&sample(name), format, &args));
        let b = strip(replay(&sample(name), format, &args));
        assert_eq!(a, b, "{name}");
    }
}

/// ftl-bench reports the same percentile keys, from the measured phase only.
#[test]
fn ftl_bench_reports_latency_percentiles() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let json = dir.path().join("ftl.json");
    let mut args = vec!["ftl-bench", "--writes", "3000", "--warmup", "1000", "--json", json.to_str().unwrap()];
    args.extend_from_slice(SMALL);
    let out = deltaflash(&args);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("write latency p50 / p95 / p99 / p99.9 / max (µs)"), "{stdout}");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let w = &v["write_latency_us"];
    assert_eq!(w["count"], 3000, "only the measured writes: {w}");
    for key in ["p50", "p95", "p99", "p99_9", "max"] {
        assert!(w[key].as_f64() > Some(0.0), "{key}: {w}");
    }
    assert_eq!(v["read_latency_us"]["count"], 0, "ftl-bench reads nothing");
}
