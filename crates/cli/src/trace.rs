//! Page traces (`deltaflash replay --format native`), read one line at a time.
//!
//! One operation per line; `#` starts a comment; blank lines are ignored. No
//! timestamps, so these traces replay with closed timing only:
//!
//! ```text
//! W lpn                 write the whole page out-of-place
//! R lpn                 read the page
//! D lpn offset len      append len bytes at byte offset (write_delta)
//! T lpn                 trim the page
//! ```

use std::io::BufRead;
use workloads::blocktrace::LineReader;
use workloads::limits::quote;

/// One trace operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceOp {
    Write { lpn: u32 },
    Read { lpn: u32 },
    Delta { lpn: u32, offset: usize, len: usize },
    Trim { lpn: u32 },
}

impl TraceOp {
    pub fn lpn(self) -> u32 {
        match self {
            TraceOp::Write { lpn } | TraceOp::Read { lpn } | TraceOp::Trim { lpn } | TraceOp::Delta { lpn, .. } => lpn,
        }
    }
}

/// One line: `None` for a blank or comment line; the error says what is wrong with it.
fn parse_line(raw: &str) -> Result<Option<TraceOp>, String> {
    let line = raw.split('#').next().unwrap_or("").trim();
    if line.is_empty() {
        return Ok(None);
    }
    let fail = |what: String| format!("{what} (line: {})", quote(raw.trim()));
    let fields: Vec<&str> = line.split_whitespace().collect();
    let number = |i: usize, name: &str| -> Result<u64, String> {
        let field = fields.get(i).ok_or_else(|| fail(format!("missing {name}")))?;
        field.parse::<u64>().map_err(|_| fail(format!("{name} {} is not a non-negative integer", quote(field))))
    };
    let lpn = |i| -> Result<u32, String> {
        let v = number(i, "lpn")?;
        u32::try_from(v).map_err(|_| fail(format!("lpn {v} is too large")))
    };
    let (op, arity) = match fields[0] {
        "W" | "w" => (TraceOp::Write { lpn: lpn(1)? }, 2),
        "R" | "r" => (TraceOp::Read { lpn: lpn(1)? }, 2),
        "T" | "t" => (TraceOp::Trim { lpn: lpn(1)? }, 2),
        "D" | "d" => {
            let len = number(3, "len")?;
            if !(1..=65_535).contains(&len) {
                return Err(fail(format!("len {len} must be between 1 and 65535")));
            }
            let offset = usize::try_from(number(2, "offset")?).map_err(|_| fail("offset is too large".into()))?;
            (TraceOp::Delta { lpn: lpn(1)?, offset, len: len as usize }, 4)
        }
        other => return Err(fail(format!("unknown operation {} (expected W, R, D or T)", quote(other)))),
    };
    if fields.len() != arity {
        return Err(fail(format!("expected {arity} fields, found {}", fields.len())));
    }
    Ok(Some(op))
}

/// The operations of a page trace with their 1-based lines; ends after the first error,
/// which names the source and the line.
pub struct NativeReader<R> {
    lines: LineReader<R>,
    done: bool,
}

impl<R: BufRead> NativeReader<R> {
    pub fn new(input: R, source: &str) -> Self {
        NativeReader { lines: LineReader::new(input, source), done: false }
    }
}

impl<R: BufRead> Iterator for NativeReader<R> {
    type Item = Result<(usize, TraceOp), String>;

    fn next(&mut self) -> Option<Self::Item> {
        while !self.done {
            let parsed = match self.lines.next_line()? {
                Ok((line_no, text)) => parse_line(text).map(|op| op.map(|op| (line_no, op))).map_err(|e| (line_no, e)),
                Err(e) => Err((0, e)),
            };
            match parsed {
                Ok(Some(op)) => return Some(Ok(op)),
                Ok(None) => {}
                Err((line_no, what)) => {
                    self.done = true;
                    return Some(Err(if line_no == 0 { what } else { self.lines.error(line_no, &what) }));
                }
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn parse(text: &str, source: &str) -> Result<Vec<(usize, TraceOp)>, String> {
        NativeReader::new(text.as_bytes(), source).collect()
    }

    #[test]
    fn parses_all_operations_and_comments() {
        let ops = parse("# header\nW 1\n\nR 2  # read\nD 3 4000 8\nt 4\n", "t.trace").unwrap();
        assert_eq!(
            ops,
            vec![
                (2, TraceOp::Write { lpn: 1 }),
                (4, TraceOp::Read { lpn: 2 }),
                (5, TraceOp::Delta { lpn: 3, offset: 4000, len: 8 }),
                (6, TraceOp::Trim { lpn: 4 }),
            ]
        );
    }

    #[test]
    fn errors_name_the_line() {
        for (text, needle) in [
            ("W 1\nX 2\n", "t:2: unknown operation `X`"),
            ("D 1 2\n", "t:1: missing len"),
            ("W -3\n", "t:1: lpn `-3`"),
            ("W 1 2\n", "t:1: expected 2 fields"),
            ("D 1 0 0\n", "t:1: len 0"),
            ("W 99999999999\n", "too large"),
        ] {
            let err = parse(text, "t").unwrap_err();
            assert!(err.contains(needle), "{err}");
        }
    }

    #[test]
    fn a_long_bad_line_is_quoted_cut() {
        let err = parse(&format!("W {}\n", "9".repeat(500)), "t").unwrap_err();
        assert!(err.len() < 300, "{err}");
    }

    proptest! {
        /// Fuzz pass: arbitrary text never panics the parser.
        #[test]
        fn fuzz_trace_parser_never_panics(text in "\\PC{0,200}") {
            let _ = parse(&text, "fuzz");
        }

        /// Arbitrary bytes (not only text) never panic it either.
        #[test]
        fn fuzz_native_parser_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = NativeReader::new(&bytes[..], "fuzz").count();
        }
    }
}
