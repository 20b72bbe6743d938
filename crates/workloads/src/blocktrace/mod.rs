//! Block traces in the formats storage researchers replay: MSR Cambridge CSV
//! ([`msr`]), `blkparse` text ([`blkparse`]), fio iologs v2 and v3 ([`fio`]) and
//! SPC/UMass CSV ([`spc`]), each turned into [`BlockRequest`]s: an operation, a byte
//! offset and length, and a timestamp in nanoseconds.
//!
//! Streamed: [`BlockReader`] reads one line at a time from any `BufRead` and holds one
//! line (at most [`MAX_LINE_BYTES`]), so a trace larger than memory replays. Every
//! error names the source, the 1-based line and, where one is wrong, the field, and
//! quotes at most 80 characters of the offending text; nothing in a trace panics.
//! After the first error the reader ends.
//!
//! Timestamps are the format's own clock in nanoseconds (an MSR file time, seconds
//! since a blktrace started, …); the replay measures from the first request.

pub mod blkparse;
pub mod fio;
pub mod msr;
pub mod spc;

use crate::limits::quote;
use std::io::{BufRead, Read};

/// What a request asks of the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlockOp {
    Read,
    Write,
    /// Discard (TRIM) of the byte range.
    Trim,
    /// Cache flush: done when every request before it is done; no bytes.
    Flush,
}

/// One host request of a block trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockRequest {
    /// When the request arrived, in the trace's clock (nanoseconds).
    pub time_ns: u64,
    pub op: BlockOp,
    pub offset_bytes: u64,
    pub len_bytes: u64,
}

/// The block trace formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Msr,
    Blkparse,
    Fio,
    Spc,
}

/// What one line gives: nothing (a header, a comment, an event not replayed) or up to
/// two requests (a `blkparse` write with a preflush is a flush, then the write);
/// `second` is only set with `first`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Parsed {
    pub first: Option<BlockRequest>,
    pub second: Option<BlockRequest>,
}

impl Parsed {
    pub const NOTHING: Parsed = Parsed { first: None, second: None };

    pub fn one(r: BlockRequest) -> Parsed {
        Parsed { first: Some(r), second: None }
    }
}

/// A format's line parser; it may keep state across lines (fio's header, file and
/// clock). An error is the text after `source:line: `.
pub trait LineParser {
    fn parse_line(&mut self, line_no: usize, line: &str) -> Result<Parsed, String>;
}

/// The parser of `format`, fresh.
pub fn parser(format: Format) -> Box<dyn LineParser> {
    match format {
        Format::Msr => Box::new(msr::Msr),
        Format::Blkparse => Box::new(blkparse::Blkparse),
        Format::Fio => Box::<fio::Fio>::default(),
        Format::Spc => Box::new(spc::Spc),
    }
}

/// The longest line read; a longer one is an error, so a file without line breaks
/// cannot fill memory.
pub const MAX_LINE_BYTES: usize = 64 * 1024;

/// Reads a trace line by line: (1-based line number, text without its line break).
pub struct LineReader<R> {
    input: R,
    source: String,
    line_no: usize,
    bytes: Vec<u8>,
}

impl<R: BufRead> LineReader<R> {
    pub fn new(input: R, source: &str) -> Self {
        LineReader { input, source: source.to_string(), line_no: 0, bytes: Vec::new() }
    }

    /// The file name errors start with.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// `source:line: what`.
    pub fn error(&self, line_no: usize, what: &str) -> String {
        format!("{}:{line_no}: {what}", self.source)
    }

    /// The next line, `None` at the end of the input.
    pub fn next_line(&mut self) -> Option<Result<(usize, &str), String>> {
        self.bytes.clear();
        let limit = MAX_LINE_BYTES as u64 + 1;
        let read = (&mut self.input).take(limit).read_until(b'\n', &mut self.bytes);
        self.line_no += 1;
        let line_no = self.line_no;
        match read {
            Ok(0) => return None,
            Ok(_) => {}
            Err(e) => return Some(Err(self.error(line_no, &format!("cannot read: {e}")))),
        }
        if self.bytes.last() == Some(&b'\n') {
            self.bytes.pop();
            if self.bytes.last() == Some(&b'\r') {
                self.bytes.pop();
            }
        } else if self.bytes.len() > MAX_LINE_BYTES {
            return Some(Err(self.error(line_no, &format!("line longer than {MAX_LINE_BYTES} bytes"))));
        }
        match std::str::from_utf8(&self.bytes) {
            Ok(text) => Some(Ok((line_no, text))),
            Err(e) => {
                let at = e.valid_up_to();
                Some(Err(format!("{}:{line_no}: byte {} is not UTF-8 text", self.source, at + 1)))
            }
        }
    }
}

/// The requests of a block trace, in file order, each with its line.
pub struct BlockReader<R> {
    lines: LineReader<R>,
    parser: Box<dyn LineParser>,
    pending: Option<(usize, BlockRequest)>,
    done: bool,
}

impl<R: BufRead> BlockReader<R> {
    pub fn new(input: R, source: &str, format: Format) -> Self {
        BlockReader { lines: LineReader::new(input, source), parser: parser(format), pending: None, done: false }
    }
}

impl<R: BufRead> Iterator for BlockReader<R> {
    type Item = Result<(usize, BlockRequest), String>;

    fn next(&mut self) -> Option<Self::Item> {
        if let Some(pending) = self.pending.take() {
            return Some(Ok(pending));
        }
        while !self.done {
            let (line_no, parsed) = match self.lines.next_line()? {
                Ok((line_no, text)) => (line_no, self.parser.parse_line(line_no, text)),
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
            };
            match parsed {
                Ok(Parsed { first: Some(first), second }) => {
                    self.pending = second.map(|s| (line_no, s));
                    return Some(Ok((line_no, first)));
                }
                Ok(_) => {}
                Err(what) => {
                    self.done = true;
                    return Some(Err(self.lines.error(line_no, &what)));
                }
            }
        }
        None
    }
}

/// Field `index` (1-based in messages) of `fields`, or an error naming it missing.
pub(crate) fn field<'a>(fields: &[&'a str], index: usize, name: &str) -> Result<&'a str, String> {
    fields.get(index).copied().ok_or_else(|| format!("field {} ({name}) is missing", index + 1))
}

/// Field `index` as an unsigned integer.
pub(crate) fn number(fields: &[&str], index: usize, name: &str) -> Result<u64, String> {
    let text = field(fields, index, name)?;
    text.parse::<u64>().map_err(|_| format!("field {} ({name}): {} is not a number", index + 1, quote(text)))
}

/// `value × scale`, or an error that field `index` is too large.
pub(crate) fn scaled(value: u64, scale: u64, index: usize, name: &str) -> Result<u64, String> {
    value.checked_mul(scale).ok_or_else(|| format!("field {} ({name}): {value} is too large", index + 1))
}

/// Field `index`, a decimal number of seconds (`12.000345`), in nanoseconds; exact (no
/// floating point), digits past the ninth decimal dropped.
pub(crate) fn seconds_ns(fields: &[&str], index: usize, name: &str) -> Result<u64, String> {
    let text = field(fields, index, name)?;
    let bad = || format!("field {} ({name}): {} is not a number of seconds", index + 1, quote(text));
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if whole.is_empty() && fraction.is_empty() || !digits(whole) || !digits(fraction) {
        return Err(bad());
    }
    let whole: u64 = if whole.is_empty() { 0 } else { whole.parse().map_err(|_| bad())? };
    let nanos = fraction.bytes().chain(std::iter::repeat(b'0')).take(9).fold(0u64, |n, b| n * 10 + u64::from(b - b'0'));
    whole
        .checked_mul(1_000_000_000)
        .and_then(|ns| ns.checked_add(nanos))
        .ok_or_else(|| format!("field {} ({name}): {} seconds is too large", index + 1, quote(text)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &[u8], format: Format) -> Vec<Result<(usize, BlockRequest), String>> {
        BlockReader::new(text, "t", format).collect()
    }

    #[test]
    fn seconds_are_exact_nanoseconds() {
        let ns = |t: &str| seconds_ns(&[t], 0, "T");
        assert_eq!(ns("0.000000001"), Ok(1));
        assert_eq!(ns("12.5"), Ok(12_500_000_000));
        assert_eq!(ns("3"), Ok(3_000_000_000));
        assert_eq!(ns(".25"), Ok(250_000_000));
        assert_eq!(ns("1.0000000019"), Ok(1_000_000_001));
        for bad in ["", ".", "1e3", "-1", "1.2.3", "abc", "99999999999999999999"] {
            assert!(ns(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_reader_stops_at_the_first_error_and_names_its_line() {
        let got = read(b"0,1,512,W,0.5\n0,x,512,W,0.6\n0,2,512,W,0.7\n", Format::Spc);
        assert_eq!(got.len(), 2);
        assert_eq!(got[1], Err("t:2: field 2 (LBA): `x` is not a number".to_string()));
    }

    #[test]
    fn bad_bytes_and_endless_lines_are_errors() {
        let got = read(b"0,1,512,W,0.5\n\xff\xfe\n", Format::Spc);
        assert_eq!(got[1], Err("t:2: byte 1 is not UTF-8 text".to_string()));
        let long = vec![b'1'; MAX_LINE_BYTES + 10];
        let got = read(&long, Format::Spc);
        assert_eq!(got, vec![Err(format!("t:1: line longer than {MAX_LINE_BYTES} bytes"))]);
    }

    #[test]
    fn crlf_line_ends_are_taken() {
        let got = read(b"0,1,512,W,0.5\r\n", Format::Spc);
        assert_eq!(got.len(), 1);
        assert!(got[0].is_ok(), "{got:?}");
    }
}
