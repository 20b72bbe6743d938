//! The `deltaflash sql` shell: statements and dot commands from a terminal (prompt,
//! line editing, history), a pipe, a file or `-c` strings.
//!
//! Invariants:
//! - A statement runs as soon as the `;` that ends it has been read (the splitter is
//!   [`engine::sql::Splitter`], which cuts exactly where the parser would), and its
//!   output is flushed before the next line is read. Each statement commits on its own
//!   unless a `BEGIN` is open, so a failing statement leaves those before it done.
//! - Inside `BEGIN` … `COMMIT` an error (a statement that fails or does not parse)
//!   fails the transaction, as in PostgreSQL: it is rolled back, the statements after
//!   it are refused (each an error) until `ROLLBACK`, and `COMMIT` says that nothing
//!   was committed. So a script never commits half a transaction, with or without
//!   `--bail` (which ends the session at the error, the transaction rolled back).
//! - A dot command is a line of its own that starts with `.` while no statement is
//!   under way.
//! - Errors go to standard error as `error at line L, column C: …`, positions counted
//!   over the whole input (not within the statement), long literals cut.
//! - After an error the session goes on, unless `--bail`; the caller turns
//!   [`Shell::failures`] into the exit code (1 if any statement or command failed,
//!   refused ones included).
//! - A UTF-8 byte order mark at the start of the input is skipped.
//! - Output failures: a reader that went away (`… | head`) ends the session quietly
//!   ([`Stop::Closed`]); nothing is printed and committed work stays committed.

use crate::table::{write_table, Row};
use engine::sql::{self, Piece, Splitter};
use engine::types::Value;
use engine::{Database, Error, QueryResult};
use rustyline::error::ReadlineError;
use std::io::{self, BufRead, Write};
use std::path::Path;

/// How query results are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Mode {
    /// Aligned columns and a row count.
    Table,
    /// RFC 4180: a header line, fields quoted when needed, NULL as an empty field.
    Csv,
    /// One JSON array of objects per query; NULL as null, numbers as numbers.
    Json,
}

/// Why a session ended before its input did.
#[derive(Debug, PartialEq, Eq)]
pub enum Stop {
    /// `.quit`, or the first error under `--bail`.
    Quit,
    /// Standard output is gone (a closed pipe) or cannot be written.
    Closed,
}

/// `Ok` to go on reading.
pub type Flow = Result<(), Stop>;

const HELP: &str = "\
Statements end with `;` and run as soon as it is read. Dot commands, on a line of their own:
  .help                  this text
  .tables                tables and indexes, with their tablespace and pages
  .schema                the schema as DDL
  .stats                 flash counters per object and region (host writes, appends,
                         GC migrations and erases) after writing dirty pages
  .mode table|csv|json   how query results are shown
  .quit  (or .exit)      end the session; committed work is kept
";

pub struct Shell<'a> {
    db: &'a mut Database,
    out: Box<dyn Write + 'a>,
    mode: Mode,
    bail: bool,
    /// Only SELECT runs (`--read-only`).
    read_only: bool,
    /// Statements and commands that failed so far.
    pub failures: usize,
}

impl<'a> Shell<'a> {
    pub fn new(db: &'a mut Database, out: Box<dyn Write + 'a>, mode: Mode, bail: bool) -> Shell<'a> {
        Shell { db, out, mode, bail, read_only: false, failures: 0 }
    }

    /// Refuses every statement but SELECT (a read-only session).
    pub fn read_only(mut self, read_only: bool) -> Shell<'a> {
        self.read_only = read_only;
        self
    }

    /// Runs `input` line by line: each statement as soon as its `;` is read.
    pub fn run_reader(&mut self, input: &mut dyn BufRead) -> Flow {
        let mut splitter = Splitter::new();
        let mut bytes = Vec::new();
        loop {
            bytes.clear();
            match input.read_until(b'\n', &mut bytes) {
                Ok(0) => return self.end(&mut splitter),
                Ok(_) => {}
                Err(e) => {
                    self.fail(&format!("error at line {}: reading the input: {e}", splitter.line()))?;
                    return self.end(&mut splitter);
                }
            }
            match std::str::from_utf8(&bytes) {
                Ok(line) => self.line(&mut splitter, line)?,
                Err(_) => {
                    let at = splitter.line();
                    splitter.skip_line();
                    self.fail(&format!("error at line {at}: the line is not UTF-8 text; it was skipped"))?;
                }
            }
        }
    }

    /// Runs a prompt on the terminal with line editing; `history` keeps the lines
    /// entered across sessions.
    pub fn run_terminal(&mut self, history: Option<&Path>) -> Flow {
        let mut editor = match rustyline::DefaultEditor::new() {
            Ok(editor) => editor,
            Err(e) => {
                let _ = writeln!(io::stderr(), "note: no line editing ({e}); reading plain lines");
                return self.run_reader(&mut io::stdin().lock());
            }
        };
        if let Some(path) = history {
            // A first session has no history file yet.
            let _ = editor.load_history(path);
        }
        let _ = writeln!(io::stderr(), "Enter SQL ending with `;`, or .help; Ctrl-D ends the session.");
        let mut splitter = Splitter::new();
        let flow = loop {
            let prompt = if splitter.is_idle() { "deltaflash> " } else { "       ...> " };
            match editor.readline(prompt) {
                Ok(line) => {
                    if !line.trim().is_empty() {
                        let _ = editor.add_history_entry(line.as_str());
                    }
                    if let Err(stop) = self.line(&mut splitter, &(line + "\n")) {
                        break Err(stop);
                    }
                }
                // Ctrl-C drops the statement being typed, as in psql and sqlite3.
                Err(ReadlineError::Interrupted) => splitter.discard(),
                Err(ReadlineError::Eof) => break self.end(&mut splitter),
                Err(e) => {
                    let _ = writeln!(io::stderr(), "error: reading the terminal: {e}");
                    break self.end(&mut splitter);
                }
            }
        };
        if let Some(path) = history {
            if let Err(e) = editor.save_history(path) {
                let _ = writeln!(io::stderr(), "note: history not saved to {}: {e}", path.display());
            }
        }
        flow
    }

    /// One line of input (with its `\n`, except perhaps the last).
    fn line(&mut self, splitter: &mut Splitter, line: &str) -> Flow {
        let line = if splitter.line() == 1 { line.trim_start_matches('\u{feff}') } else { line };
        if splitter.is_idle() && line.trim_start().starts_with('.') {
            let at = splitter.line();
            splitter.skip_line();
            return self.command(line.trim(), at);
        }
        for piece in splitter.push(line) {
            self.statement(piece)?;
        }
        Ok(())
    }

    /// The end of the input: a last statement without `;` still runs.
    fn end(&mut self, splitter: &mut Splitter) -> Flow {
        match splitter.finish() {
            Some(piece) => self.statement(piece),
            None => Ok(()),
        }
    }

    fn statement(&mut self, piece: Piece) -> Flow {
        let parsed = match sql::parse_at(&piece.text, piece.line, piece.column) {
            Ok(parsed) => parsed,
            // Inside a transaction, a statement that does not parse fails it too.
            Err(e) => match self.db.fail_transaction(e) {
                Error::Parse { line, column, token, message } => {
                    return self.fail(&format!("error at line {line}, column {column}: {message} (at `{token}`)"));
                }
                e => return self.fail(&format!("error at line {}, column {}: {}", piece.line, piece.column, cut(&e))),
            },
        };
        for located in parsed {
            if self.read_only && !matches!(located.statement, sql::Statement::Select { .. }) {
                return self.fail(&format!(
                    "error at line {}, column {}: the database is open read-only (--read-only): only SELECT runs",
                    piece.line, piece.column
                ));
            }
            match self.db.execute_statement(located.statement) {
                Ok(result) => self.show(result)?,
                Err(e) => {
                    return self.fail(&format!("error at line {}, column {}: {}", piece.line, piece.column, cut(&e)))
                }
            }
        }
        Ok(())
    }

    fn command(&mut self, text: &str, line: usize) -> Flow {
        let mut words = text.split_whitespace();
        let name = words.next().unwrap_or(".");
        let args: Vec<&str> = words.collect();
        if [".help", ".quit", ".exit", ".tables", ".schema", ".stats"].contains(&name) && !args.is_empty() {
            return self.fail(&format!("error at line {line}: {} takes no arguments", cut_str(name)));
        }
        match name {
            ".help" => self.emit(|out| out.write_all(HELP.as_bytes())),
            ".quit" | ".exit" => Err(Stop::Quit),
            ".tables" => {
                let rows = tables(self.db);
                self.emit(|out| write_table(out, &rows))
            }
            ".schema" => {
                let schema = self.db.schema();
                self.emit(|out| out.write_all(schema.as_bytes()))
            }
            ".stats" => match self.db.checkpoint() {
                Ok(()) => {
                    let db = &*self.db;
                    let (objects, regions) = (object_rows(db), region_rows(db));
                    let buffer = buffer_line(db);
                    self.emit(|out| {
                        write_table(out, &objects)?;
                        writeln!(out)?;
                        write_table(out, &regions)?;
                        writeln!(out, "\n{buffer}")
                    })
                }
                Err(e) => self.fail(&format!("error at line {line}: .stats: {}", cut(&e))),
            },
            ".mode" => match args.as_slice() {
                [] => {
                    let mode = format!("{:?}\n", self.mode).to_lowercase();
                    self.emit(|out| out.write_all(mode.as_bytes()))
                }
                [m] => match <Mode as clap::ValueEnum>::from_str(m, true) {
                    Ok(mode) => {
                        self.mode = mode;
                        Ok(())
                    }
                    Err(_) => {
                        self.fail(&format!("error at line {line}: .mode {}: expected table, csv or json", cut_str(m)))
                    }
                },
                _ => self.fail(&format!("error at line {line}: .mode takes one of table, csv or json")),
            },
            other => self.fail(&format!("error at line {line}: unknown command {} (.help lists them)", cut_str(other))),
        }
    }

    fn show(&mut self, result: QueryResult) -> Flow {
        let mode = self.mode;
        self.emit(|out| match result {
            QueryResult::Rows { columns, rows } => match mode {
                Mode::Table => {
                    let count = rows.len();
                    let mut table = vec![Row::new(columns)];
                    table.extend(rows.into_iter().map(|r| Row::new(r.iter().map(|v| v.to_string()).collect())));
                    write_table(out, &table)?;
                    writeln!(out, "({count} row{})", if count == 1 { "" } else { "s" })
                }
                Mode::Csv => {
                    let header: Vec<String> = columns.iter().map(|c| csv_field(c)).collect();
                    writeln!(out, "{}", header.join(","))?;
                    for row in rows {
                        let fields: Vec<String> = row
                            .iter()
                            .map(|v| if *v == Value::Null { String::new() } else { csv_field(&v.to_string()) })
                            .collect();
                        writeln!(out, "{}", fields.join(","))?;
                    }
                    Ok(())
                }
                Mode::Json => {
                    let objects: Vec<String> = rows
                        .iter()
                        .map(|row| {
                            let fields: Vec<String> = columns
                                .iter()
                                .zip(row)
                                .map(|(c, v)| format!("{}: {}", json_string(c), json_value(v)))
                                .collect();
                            format!("{{{}}}", fields.join(", "))
                        })
                        .collect();
                    if objects.is_empty() {
                        writeln!(out, "[]")
                    } else {
                        writeln!(out, "[\n  {}\n]", objects.join(",\n  "))
                    }
                }
            },
            // Counts and acknowledgements are for people; csv and json stay pure data.
            QueryResult::Count { verb, rows } if mode == Mode::Table => {
                writeln!(out, "{rows} row{} {verb}", if rows == 1 { "" } else { "s" })
            }
            QueryResult::Done(message) if mode == Mode::Table => writeln!(out, "{message}"),
            QueryResult::Count { .. } | QueryResult::Done(_) => Ok(()),
        })
    }

    fn emit(&mut self, write: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> Flow {
        emit(&mut self.out, &mut self.failures, write)
    }

    fn fail(&mut self, message: &str) -> Flow {
        fail(&mut self.out, &mut self.failures, self.bail, message)
    }
}

/// Writes and flushes; a closed pipe or a failed write (counted in `failures`) ends
/// the session. Shared by the SQL and SQLite shells.
pub(crate) fn emit(
    out: &mut dyn Write,
    failures: &mut usize,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> Flow {
    match write(out).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Err(Stop::Closed),
        Err(e) => {
            *failures += 1;
            let _ = writeln!(io::stderr(), "error: writing the output: {e}");
            Err(Stop::Closed)
        }
    }
}

/// Reports an error on standard error (after flushing the output, so the two stay in
/// order) and counts it; under `--bail` the session stops.
pub(crate) fn fail(out: &mut dyn Write, failures: &mut usize, bail: bool, message: &str) -> Flow {
    *failures += 1;
    let _ = out.flush();
    let _ = writeln!(io::stderr(), "{message}");
    if bail {
        Err(Stop::Quit)
    } else {
        Ok(())
    }
}

/// Most characters of an error message shown (after cutting quoted literals).
const MESSAGE_CHARS: usize = 400;

/// An error message with every quoted literal longer than [`sql::ECHO_CHARS`] cut.
fn cut(e: &Error) -> String {
    cut_str(&e.to_string())
}

fn cut_str(message: &str) -> String {
    let parts: Vec<String> = message
        .split('\'')
        .enumerate()
        .map(|(i, p)| if i % 2 == 1 { sql::shorten(p) } else { p.to_string() })
        .collect();
    let joined = parts.join("'");
    match joined.char_indices().nth(MESSAGE_CHARS) {
        Some((at, _)) => format!("{}…", &joined[..at]),
        None => joined,
    }
}

pub(crate) fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

pub(crate) fn json_string(s: &str) -> String {
    serde_json::Value::String(s.to_string()).to_string()
}

/// Numbers keep their exact decimal text (a DECIMAL's scale, a BIGINT's digits).
fn json_value(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Text(s) => json_string(s),
        Value::Int(_) | Value::Decimal { .. } | Value::Float(_) => v.to_string(),
    }
}

fn header(names: &[&str]) -> Row {
    Row::new(names.iter().map(|s| s.to_string()).collect())
}

fn tables(db: &Database) -> Vec<Row> {
    let mut rows = vec![header(&["name", "kind", "tablespace", "pages"])];
    let c = db.catalog();
    for t in &c.tables {
        rows.push(Row::new(vec![
            t.name.clone(),
            "table".into(),
            t.tablespace.clone(),
            t.space.pages().count().to_string(),
        ]));
    }
    for i in &c.indexes {
        let kind = if i.unique { "unique index" } else { "index" };
        rows.push(Row::new(vec![
            i.name.clone(),
            kind.into(),
            i.tablespace.clone(),
            i.space.pages().count().to_string(),
        ]));
    }
    rows
}

/// Flash and IPA counters per object.
fn object_rows(db: &Database) -> Vec<Row> {
    let mut rows = vec![header(&[
        "object",
        "kind",
        "region",
        "ipa",
        "reads",
        "out-of-place",
        "appends",
        "records",
        "refused",
        "net B",
        "gross B",
        "dbms WA",
    ])];
    for s in db.object_stats() {
        let c = s.counters;
        rows.push(Row::new(vec![
            s.name,
            s.kind.into(),
            s.region,
            format!("[{}]", s.scheme),
            c.reads.to_string(),
            c.out_of_place_writes.to_string(),
            c.in_place_appends.to_string(),
            c.delta_records.to_string(),
            c.delta_refusals.to_string(),
            c.net_changed_bytes.to_string(),
            c.gross_written_bytes.to_string(),
            format!("{:.2}", c.write_amplification()),
        ]));
    }
    rows
}

/// Flash counters per region: host writes, appends, reads, GC migrations and erases.
fn region_rows(db: &Database) -> Vec<Row> {
    let mut rows =
        vec![header(&["region", "mode", "host writes", "appends", "host reads", "gc migrations", "gc erases"])];
    let dev = db.page_device();
    for r in dev.region_ids() {
        let c = dev.counters(r);
        rows.push(Row::new(vec![
            dev.region_name(r).into(),
            dev.region_spec(r).ipa_mode.name().into(),
            c.host_writes.to_string(),
            c.host_write_deltas.to_string(),
            c.host_reads.to_string(),
            c.gc_page_migrations.to_string(),
            c.gc_erases.to_string(),
        ]));
    }
    rows
}

fn buffer_line(db: &Database) -> String {
    let p = db.pool_stats();
    format!(
        "buffer: {} frames, {} hits, {} misses, {} evictions ({} dirty), {} cleaner writes",
        db.buffer_frames(),
        p.hits,
        p.misses,
        p.evictions,
        p.dirty_evictions,
        p.cleaner_writes
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_quoted_literals_are_cut_in_messages() {
        let long = "y".repeat(100_000);
        let m = cut_str(&format!("column b: '{long}' has 100000 bytes, more than VARCHAR(10) holds"));
        assert!(m.starts_with(&format!("column b: '{}…'", "y".repeat(sql::ECHO_CHARS))), "{m}");
        assert!(m.ends_with("more than VARCHAR(10) holds"), "{m}");
        assert!(cut_str(&"z".repeat(5000)).chars().count() <= MESSAGE_CHARS + 1);
    }

    #[test]
    fn csv_fields_are_quoted_when_needed() {
        assert_eq!(csv_field("plain"), "plain");
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(json_value(&Value::Decimal { scaled: -1250, scale: 2 }), "-12.50");
        assert_eq!(json_value(&Value::Text("a\"b".into())), "\"a\\\"b\"");
    }
}
