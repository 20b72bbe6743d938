//! `blkparse` default text output, e.g.
//! `  8,0    3        1     0.000000000   697  Q  WS 223490 + 8 [kjournald]`:
//! device (major,minor), CPU, sequence, seconds, PID, action, RWBS, sector `+` sectors,
//! process.
//!
//! Only Q (queued) events are requests: a Q is the request as the host submitted it, at
//! the time it arrived. A D (issued to the driver) event comes after the traced
//! device's own queue and the scheduler's merges, so its times carry the old device's
//! speed into the arrivals; fio's blktrace replay takes Q events too. Every other
//! event, and anything that is not an event line (the per-CPU summary at the end), is
//! skipped; a malformed Q line is an error.
//!
//! RWBS (as the kernel's `blk_fill_rwbs` writes it): a leading `F` is a preflush, then
//! `R` read, `W` write, `D` discard (`DE` secure erase), `F` a flush alone or `N` no
//! data; letters after it (`F` FUA, `S` sync, `M` meta, `A` read-ahead) do not change
//! the request. A write with a preflush is a flush, then the write. Sectors are 512 B.

use super::{number, scaled, seconds_ns, BlockOp, BlockRequest, LineParser, Parsed};
use crate::limits::quote;

/// Bytes per sector in blktrace events.
pub const SECTOR_BYTES: u64 = 512;

/// The `blkparse` text parser.
pub struct Blkparse;

/// `8,0`: an event line's first field.
fn is_device(text: &str) -> bool {
    text.split_once(',').is_some_and(|(major, minor)| {
        let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        digits(major) && digits(minor)
    })
}

/// The operation and whether a flush comes first, from the RWBS field.
fn rwbs(text: &str) -> Result<Option<(BlockOp, bool)>, String> {
    let bad = || format!("field 7 (RWBS): {} is not a blktrace RWBS", quote(text));
    if text.is_empty() || !text.bytes().all(|b| b"RWDFNSMAEB".contains(&b)) {
        return Err(bad());
    }
    let preflush = text.starts_with('F');
    let rest = if preflush { &text[1..] } else { text };
    Ok(match rest.bytes().next() {
        Some(b'R') => Some((BlockOp::Read, preflush)),
        Some(b'W') => Some((BlockOp::Write, preflush)),
        Some(b'D') => Some((BlockOp::Trim, preflush)),
        // A flush alone, or a preflush on a request without data (`FN`).
        Some(b'F') => Some((BlockOp::Flush, false)),
        _ if preflush => Some((BlockOp::Flush, false)),
        // `N`: no data and no flush.
        _ => None,
    })
}

impl LineParser for Blkparse {
    fn parse_line(&mut self, _line_no: usize, line: &str) -> Result<Parsed, String> {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.len() < 6 || !is_device(fields[0]) || fields[5] != "Q" {
            return Ok(Parsed::NOTHING);
        }
        let time_ns = seconds_ns(&fields, 3, "time")?;
        let Some((op, preflush)) = rwbs(fields.get(6).copied().unwrap_or(""))? else {
            return Ok(Parsed::NOTHING);
        };
        let flush = BlockRequest { time_ns, op: BlockOp::Flush, offset_bytes: 0, len_bytes: 0 };
        if op == BlockOp::Flush {
            return Ok(Parsed::one(flush));
        }
        if fields.get(8) != Some(&"+") {
            return Err(format!("expected `SECTOR + SECTORS` after the RWBS, found {}", quote(&fields[7..].join(" "))));
        }
        let offset_bytes = scaled(number(&fields, 7, "sector")?, SECTOR_BYTES, 7, "sector")?;
        let len_bytes = scaled(number(&fields, 9, "sectors")?, SECTOR_BYTES, 9, "sectors")?;
        let request = BlockRequest { time_ns, op, offset_bytes, len_bytes };
        Ok(if preflush { Parsed { first: Some(flush), second: Some(request) } } else { Parsed::one(request) })
    }
}

#[cfg(test)]
mod tests {
    use super::super::{BlockReader, Format};
    use super::*;
    use proptest::prelude::*;

    fn parse(text: &str) -> Result<Vec<(usize, BlockRequest)>, String> {
        BlockReader::new(text.as_bytes(), "sda.txt", Format::Blkparse).collect()
    }

    #[test]
    fn reads_queue_events_only() {
        let text = "  8,0    3        1     0.000000000   697  Q  WS 223490 + 8 [kjournald]\n\
                    \x20 8,0    3        2     0.000001000   697  G  WS 223490 + 8 [kjournald]\n\
                    \x20 8,0    3        3     0.000010000   697  D  WS 223490 + 8 [kjournald]\n\
                    \x20 8,0    1        4     1.500000250     0  C  WS 223490 + 8 [0]\n\
                    \x20 8,0    0        5     2.000000001  1200  Q   R 16 + 256 [cat]\n\
                    \x20 8,0    0        6     2.5          1200  Q FWS 64 + 8 [jbd2]\n\
                    \x20 8,0    0        7     3            1200  Q  FN [sync]\n\
                    \x20 8,0    0        8     4           1200  Q  DS 2048 + 2048 [fstrim]\n\
                    \x20 8,0    0        9     5           1200  Q  N 0 + 0 [x]\n\
                    CPU0 (sda):\n Reads Queued:           1,      128KiB\n";
        let r = |time_ns, op, offset_bytes, len_bytes| BlockRequest { time_ns, op, offset_bytes, len_bytes };
        assert_eq!(
            parse(text).expect("parses"),
            vec![
                (1, r(0, BlockOp::Write, 223_490 * 512, 4096)),
                (5, r(2_000_000_001, BlockOp::Read, 16 * 512, 256 * 512)),
                (6, r(2_500_000_000, BlockOp::Flush, 0, 0)),
                (6, r(2_500_000_000, BlockOp::Write, 64 * 512, 4096)),
                (7, r(3_000_000_000, BlockOp::Flush, 0, 0)),
                (8, r(4_000_000_000, BlockOp::Trim, 2048 * 512, 2048 * 512)),
            ]
        );
    }

    #[test]
    fn errors_name_line_and_field() {
        for (text, want) in [
            ("  8,0 0 1 0.1 5 Q W 12 + x [a]\n", "sda.txt:1: field 10 (sectors): `x` is not a number"),
            ("  8,0 0 1 0.1 5 Q W 12 + 8 [a]\n  8,0 0 1 zz 5 Q W 1 + 8 [a]\n", "sda.txt:2: field 4 (time)"),
            ("  8,0 0 1 0.1 5 Q WQ 12 + 8 [a]\n", "sda.txt:1: field 7 (RWBS): `WQ`"),
            ("  8,0 0 1 0.1 5 Q W [a]\n", "sda.txt:1: expected `SECTOR + SECTORS`"),
        ] {
            let err = parse(text).expect_err(text);
            assert!(err.starts_with(want), "{err}");
        }
    }

    proptest! {
        /// Arbitrary bytes never panic the parser.
        #[test]
        fn fuzz_blkparse_parser_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = BlockReader::new(&bytes[..], "fuzz", Format::Blkparse).count();
        }

        /// Event-shaped lines with arbitrary fields never panic either.
        #[test]
        fn fuzz_blkparse_event_lines_never_panic(rwbs in "[RWDFNSMAEBQ]{0,4}", rest in "\\PC{0,40}") {
            let line = format!("8,0 0 1 0.5 7 Q {rwbs} {rest}\n");
            let _ = BlockReader::new(line.as_bytes(), "fuzz", Format::Blkparse).count();
        }
    }
}
