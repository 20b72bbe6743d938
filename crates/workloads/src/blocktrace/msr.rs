//! MSR Cambridge traces (SNIA IOTTA): CSV lines
//! `Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime`, e.g.
//! `128166372003061629,hm,0,Write,3216641024,4096,2216`.
//!
//! Timestamp and ResponseTime are Windows file times (100 ns ticks); Type is `Read`
//! or `Write`; Offset and Size are bytes. The recorded ResponseTime is checked as a
//! number and not used (the replay measures its own). A first line starting with
//! `Timestamp` is a header. Hostname and DiskNumber are not used: an MSR file holds one
//! volume.

use super::{field, number, scaled, BlockOp, BlockRequest, LineParser, Parsed};
use crate::limits::quote;

/// Nanoseconds per Windows file-time tick.
const TICK_NS: u64 = 100;

/// The MSR Cambridge CSV parser.
pub struct Msr;

impl LineParser for Msr {
    fn parse_line(&mut self, line_no: usize, line: &str) -> Result<Parsed, String> {
        let line = line.trim();
        if line.is_empty() || (line_no == 1 && line.starts_with("Timestamp")) {
            return Ok(Parsed::NOTHING);
        }
        let fields: Vec<&str> = line.split(',').map(str::trim).collect();
        if fields.len() != 7 {
            return Err(format!(
                "expected 7 fields (Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime), found {}",
                fields.len()
            ));
        }
        let time_ns = scaled(number(&fields, 0, "Timestamp")?, TICK_NS, 0, "Timestamp")?;
        number(&fields, 2, "DiskNumber")?;
        let op = match field(&fields, 3, "Type")? {
            t if t.eq_ignore_ascii_case("read") => BlockOp::Read,
            t if t.eq_ignore_ascii_case("write") => BlockOp::Write,
            t => return Err(format!("field 4 (Type): {} is not Read or Write", quote(t))),
        };
        let offset_bytes = number(&fields, 4, "Offset")?;
        let len_bytes = number(&fields, 5, "Size")?;
        number(&fields, 6, "ResponseTime")?;
        Ok(Parsed::one(BlockRequest { time_ns, op, offset_bytes, len_bytes }))
    }
}

#[cfg(test)]
mod tests {
    use super::super::{BlockReader, Format};
    use super::*;
    use proptest::prelude::*;

    fn parse(text: &str) -> Result<Vec<(usize, BlockRequest)>, String> {
        BlockReader::new(text.as_bytes(), "trace.csv", Format::Msr).collect()
    }

    #[test]
    fn reads_requests_in_file_times() {
        let got = parse(
            "Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime\n\
                         128166372003061629,hm,0,Write,3216641024,4096,2216\n\
                         128166372016382155,hm,0,Read,8192,512,100\n",
        )
        .expect("parses");
        assert_eq!(
            got,
            vec![
                (
                    2,
                    BlockRequest {
                        time_ns: 12_816_637_200_306_162_900,
                        op: BlockOp::Write,
                        offset_bytes: 3_216_641_024,
                        len_bytes: 4096
                    }
                ),
                (
                    3,
                    BlockRequest {
                        time_ns: 12_816_637_201_638_215_500,
                        op: BlockOp::Read,
                        offset_bytes: 8192,
                        len_bytes: 512
                    }
                ),
            ]
        );
    }

    #[test]
    fn errors_name_line_and_field() {
        for (text, want) in [
            ("1,h,0,Write,0,abc,1\n", "trace.csv:1: field 6 (Size): `abc` is not a number"),
            ("1,h,0,Write,0,512,1\n1,h,0,Trim,0,512,1\n", "trace.csv:2: field 4 (Type): `Trim` is not Read or Write"),
            ("1,h,0,Write,0,512\n", "trace.csv:1: expected 7 fields"),
            ("999999999999999999999,h,0,Write,0,512,1\n", "trace.csv:1: field 1 (Timestamp): `999999999999999999999`"),
            (
                "184467440737095517,h,0,Write,0,512,1\n",
                "trace.csv:1: field 1 (Timestamp): 184467440737095517 is too large",
            ),
        ] {
            let err = parse(text).expect_err(text);
            assert!(err.starts_with(want), "{err}");
        }
    }

    proptest! {
        /// Arbitrary bytes never panic the parser.
        #[test]
        fn fuzz_msr_parser_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = BlockReader::new(&bytes[..], "fuzz", Format::Msr).count();
        }
    }
}
