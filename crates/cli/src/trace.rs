//! Page traces for `deltaflash replay`.
//!
//! One operation per line; `#` starts a comment; blank lines are ignored:
//!
//! ```text
//! W lpn                 write the whole page out-of-place
//! R lpn                 read the page
//! D lpn offset len      append len bytes at byte offset (write_delta)
//! T lpn                 trim the page
//! ```

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

/// An operation and the 1-based line it came from.
pub type TraceLine = (usize, TraceOp);

/// Parses a whole trace; the error names the source, the line and what is wrong.
pub fn parse(text: &str, source: &str) -> Result<Vec<TraceLine>, String> {
    let mut ops = Vec::new();
    for (index, raw) in text.lines().enumerate() {
        let line_no = index + 1;
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let fail = |what: String| format!("{source}:{line_no}: {what} (line: `{}`)", raw.trim());
        let fields: Vec<&str> = line.split_whitespace().collect();
        let number = |i: usize, name: &str| -> Result<u64, String> {
            let field = fields.get(i).ok_or_else(|| fail(format!("missing {name}")))?;
            field.parse::<u64>().map_err(|_| fail(format!("{name} `{field}` is not a non-negative integer")))
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
                (TraceOp::Delta { lpn: lpn(1)?, offset: number(2, "offset")? as usize, len: len as usize }, 4)
            }
            other => return Err(fail(format!("unknown operation `{other}` (expected W, R, D or T)"))),
        };
        if fields.len() != arity {
            return Err(fail(format!("expected {arity} fields, found {}", fields.len())));
        }
        ops.push((line_no, op));
    }
    Ok(ops)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

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

    proptest! {
        /// Fuzz pass: arbitrary text never panics the parser.
        #[test]
        fn fuzz_trace_parser_never_panics(text in "\\PC{0,200}") {
            let _ = parse(&text, "fuzz");
        }
    }
}
