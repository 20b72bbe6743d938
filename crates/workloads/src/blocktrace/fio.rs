//! fio iologs (`read_iolog=`/`write_iolog=`), versions 2 and 3, told apart by the
//! first line (`fio version 2 iolog` or `fio version 3 iolog`).
//!
//! Version 2: `FILE add|open|close` and `FILE read|write|trim|sync|datasync OFFSET
//! LENGTH` (bytes); `FILE wait USEC [LENGTH]` advances the trace's clock by USEC microseconds
//! (fio's HOWTO: relative to the previous wait), so a log without waits has every
//! request at time 0. Version 3 puts a timestamp first on every line
//! (`TIMESTAMP FILE ACTION …`) and has no `wait`. fio writes that timestamp with
//! `utime_since_now`, i.e. in microseconds since the log started (fio's iolog.c), so
//! microseconds it is here.
//!
//! `sync` and `datasync` are flushes. The replay drives one device, so a log naming a
//! second file is refused at the line that names it.

use super::{field, number, scaled, BlockOp, BlockRequest, LineParser, Parsed};
use crate::limits::quote;

const US_NS: u64 = 1_000;

/// The fio iolog parser: the version from the first line, the log's one file, the
/// clock of a version 2 log.
#[derive(Default)]
pub struct Fio {
    version: Option<u8>,
    file: Option<String>,
    clock_ns: u64,
}

impl Fio {
    /// The first line: the version, or an error.
    fn header(&mut self, line: &str) -> Result<Parsed, String> {
        self.version = match line.trim() {
            "fio version 2 iolog" => Some(2),
            "fio version 3 iolog" => Some(3),
            other => {
                return Err(format!(
                "expected `fio version 2 iolog` or `fio version 3 iolog`, found {} (fio's version 1 logs are not read)",
                quote(other)
            ))
            }
        };
        Ok(Parsed::NOTHING)
    }

    /// Checks that `name` is the log's one file (the first named).
    fn same_file(&mut self, index: usize, name: &str) -> Result<(), String> {
        match &self.file {
            None => self.file = Some(name.to_string()),
            Some(file) if file == name => {}
            Some(file) => {
                return Err(format!(
                    "field {} (file): a second file {} (the log's first is {}); replay drives one device: \
                     split the log per file",
                    index + 1,
                    quote(name),
                    quote(file)
                ))
            }
        }
        Ok(())
    }
}

impl LineParser for Fio {
    fn parse_line(&mut self, line_no: usize, line: &str) -> Result<Parsed, String> {
        let Some(version) = self.version else {
            return if line_no == 1 { self.header(line) } else { Err("no fio iolog header".into()) };
        };
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.is_empty() {
            return Ok(Parsed::NOTHING);
        }
        // Index of the file name: after the timestamp in version 3.
        let at = usize::from(version == 3);
        let time_ns =
            if version == 3 { scaled(number(&fields, 0, "timestamp")?, US_NS, 0, "timestamp")? } else { self.clock_ns };
        let file = field(&fields, at, "file")?;
        let action = field(&fields, at + 1, "action")?;
        let arity = match action {
            "add" | "open" | "close" => at + 2,
            // fio writes `FILE wait USEC LENGTH`; a hand-written `FILE wait USEC` is taken too.
            "wait" if fields.len() == at + 3 => at + 3,
            _ => at + 4,
        };
        if fields.len() != arity {
            return Err(format!("`{action}` takes {arity} fields, found {}", fields.len()));
        }
        self.same_file(at, file)?;
        let op = match action {
            "add" | "open" | "close" => return Ok(Parsed::NOTHING),
            "read" => BlockOp::Read,
            "write" => BlockOp::Write,
            "trim" => BlockOp::Trim,
            "sync" | "datasync" => BlockOp::Flush,
            "wait" if version == 2 => {
                let wait_ns = scaled(number(&fields, at + 2, "offset")?, US_NS, at + 2, "offset")?;
                self.clock_ns = self.clock_ns.checked_add(wait_ns).ok_or("the waits add up past 2^64 ns")?;
                return Ok(Parsed::NOTHING);
            }
            "wait" => return Err("`wait` is not a version 3 action (timestamps replace it)".into()),
            other => {
                return Err(format!(
                    "field {} (action): {} is not add, open, close, read, write, trim, sync, datasync or wait",
                    at + 2,
                    quote(other)
                ))
            }
        };
        let offset_bytes = number(&fields, at + 2, "offset")?;
        let len_bytes = number(&fields, at + 3, "length")?;
        Ok(Parsed::one(BlockRequest { time_ns, op, offset_bytes, len_bytes }))
    }
}

#[cfg(test)]
mod tests {
    use super::super::{BlockReader, Format};
    use super::*;
    use proptest::prelude::*;

    fn parse(text: &str) -> Result<Vec<(usize, BlockRequest)>, String> {
        BlockReader::new(text.as_bytes(), "job.iolog", Format::Fio).collect()
    }

    fn r(time_ns: u64, op: BlockOp, offset_bytes: u64, len_bytes: u64) -> BlockRequest {
        BlockRequest { time_ns, op, offset_bytes, len_bytes }
    }

    #[test]
    fn reads_version_2_with_waits_as_the_clock() {
        let text = "fio version 2 iolog\n/dev/sdb add\n/dev/sdb open\n/dev/sdb write 0 4096\n\
                    /dev/sdb wait 250 0\n/dev/sdb read 8192 512\n/dev/sdb trim 0 4096\n/dev/sdb sync 0 0\n/dev/sdb close\n";
        assert_eq!(
            parse(text).expect("parses"),
            vec![
                (4, r(0, BlockOp::Write, 0, 4096)),
                (6, r(250_000, BlockOp::Read, 8192, 512)),
                (7, r(250_000, BlockOp::Trim, 0, 4096)),
                (8, r(250_000, BlockOp::Flush, 0, 0)),
            ]
        );
    }

    #[test]
    fn reads_version_3_timestamps_in_microseconds() {
        let text = "fio version 3 iolog\n2 /dev/nvme0n1 add\n872 /dev/nvme0n1 open\n878 /dev/nvme0n1 write 0 16384\n\
                    1500 /dev/nvme0n1 read 16384 4096\n1600 /dev/nvme0n1 close\n";
        assert_eq!(
            parse(text).expect("parses"),
            vec![(4, r(878_000, BlockOp::Write, 0, 16384)), (5, r(1_500_000, BlockOp::Read, 16384, 4096))]
        );
    }

    #[test]
    fn errors_name_line_and_field() {
        for (text, want) in [
            ("fio version 1 iolog\n", "job.iolog:1: expected `fio version 2 iolog`"),
            ("fio version 2 iolog\n/a add\n/b add\n", "job.iolog:3: field 1 (file): a second file `/b`"),
            ("fio version 2 iolog\n/a write 0 x\n", "job.iolog:2: field 4 (length): `x` is not a number"),
            ("fio version 2 iolog\n/a erase 0 1\n", "job.iolog:2: field 2 (action): `erase`"),
            ("fio version 2 iolog\n/a write 0\n", "job.iolog:2: `write` takes 4 fields, found 3"),
            ("fio version 3 iolog\nsoon /a write 0 1\n", "job.iolog:2: field 1 (timestamp): `soon`"),
            ("fio version 3 iolog\n5 /a wait 10 0\n", "job.iolog:2: `wait` is not a version 3 action"),
            ("fio version 2 iolog\n/a wait\n", "job.iolog:2: `wait` takes 4 fields, found 2"),
        ] {
            let err = parse(text).expect_err(text);
            assert!(err.starts_with(want), "{err}");
        }
    }

    proptest! {
        /// Arbitrary bytes never panic the parser.
        #[test]
        fn fuzz_fio_parser_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = BlockReader::new(&bytes[..], "fuzz", Format::Fio).count();
        }

        /// A valid header and arbitrary lines after it never panic either.
        #[test]
        fn fuzz_fio_lines_after_a_header_never_panic(version in 2u8..=3, body in "\\PC{0,200}") {
            let text = format!("fio version {version} iolog\n{body}");
            let _ = BlockReader::new(text.as_bytes(), "fuzz", Format::Fio).count();
        }
    }
}
