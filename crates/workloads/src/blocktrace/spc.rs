//! SPC traces as the UMass Trace Repository publishes them (Financial, WebSearch): CSV
//! lines `ASU,LBA,Size,Opcode,Timestamp[,…]`, e.g. `0,303567,3584,w,0.000000`.
//!
//! LBA counts 512-byte blocks; Size is bytes; Opcode is `r`/`R` or `w`/`W`; Timestamp
//! is seconds from the start of the trace. Fields after the fifth are not used. The ASU
//! (application specific unit) is checked as a number; every ASU addresses the one
//! device from 0 (as most FTL simulators replay these traces).

use super::{field, number, scaled, seconds_ns, BlockOp, BlockRequest, LineParser, Parsed};
use crate::limits::quote;

/// Bytes per SPC logical block.
pub const BLOCK_BYTES: u64 = 512;

/// The SPC/UMass CSV parser.
pub struct Spc;

impl LineParser for Spc {
    fn parse_line(&mut self, _line_no: usize, line: &str) -> Result<Parsed, String> {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            return Ok(Parsed::NOTHING);
        }
        let fields: Vec<&str> = line.split(',').map(str::trim).collect();
        if fields.len() < 5 {
            return Err(format!("expected at least 5 fields (ASU,LBA,Size,Opcode,Timestamp), found {}", fields.len()));
        }
        number(&fields, 0, "ASU")?;
        let offset_bytes = scaled(number(&fields, 1, "LBA")?, BLOCK_BYTES, 1, "LBA")?;
        let len_bytes = number(&fields, 2, "Size")?;
        let op = match field(&fields, 3, "Opcode")? {
            "r" | "R" => BlockOp::Read,
            "w" | "W" => BlockOp::Write,
            other => return Err(format!("field 4 (Opcode): {} is not r or w", quote(other))),
        };
        let time_ns = seconds_ns(&fields, 4, "Timestamp")?;
        Ok(Parsed::one(BlockRequest { time_ns, op, offset_bytes, len_bytes }))
    }
}

#[cfg(test)]
mod tests {
    use super::super::{BlockReader, Format};
    use super::*;
    use proptest::prelude::*;

    fn parse(text: &str) -> Result<Vec<(usize, BlockRequest)>, String> {
        BlockReader::new(text.as_bytes(), "fin.spc", Format::Spc).collect()
    }

    #[test]
    fn reads_blocks_and_seconds() {
        let got = parse("0,303567,3584,w,0.000000\n1,55596,3072,R,0.078643,extra\n").expect("parses");
        assert_eq!(
            got,
            vec![
                (1, BlockRequest { time_ns: 0, op: BlockOp::Write, offset_bytes: 303_567 * 512, len_bytes: 3584 }),
                (
                    2,
                    BlockRequest {
                        time_ns: 78_643_000,
                        op: BlockOp::Read,
                        offset_bytes: 55_596 * 512,
                        len_bytes: 3072
                    }
                ),
            ]
        );
    }

    #[test]
    fn errors_name_line_and_field() {
        for (text, want) in [
            ("0,1,512,w,0.1\n0,1,512,x,0.2\n", "fin.spc:2: field 4 (Opcode): `x` is not r or w"),
            ("0,1,5x2,w,0.1\n", "fin.spc:1: field 3 (Size): `5x2` is not a number"),
            ("0,1,512,w,soon\n", "fin.spc:1: field 5 (Timestamp): `soon` is not a number of seconds"),
            ("0,1,512\n", "fin.spc:1: expected at least 5 fields"),
            ("0,36028797018963968,512,w,0\n", "fin.spc:1: field 2 (LBA): 36028797018963968 is too large"),
        ] {
            let err = parse(text).expect_err(text);
            assert!(err.starts_with(want), "{err}");
        }
    }

    proptest! {
        /// Arbitrary bytes never panic the parser.
        #[test]
        fn fuzz_spc_parser_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = BlockReader::new(&bytes[..], "fuzz", Format::Spc).count();
        }
    }
}
