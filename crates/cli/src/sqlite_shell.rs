//! `deltaflash sqlite`: an SQLite shell on emulated flash. Real SQLite (bundled with
//! rusqlite) runs on a conventional FTL through `sqlite_flash`; statements come from
//! `-c` strings, a file, a pipe, or a prompt with line editing on a terminal.
//!
//! Invariants: a statement runs once SQLite's own `sqlite3_complete` says the text so
//! far ends one; dot commands are lines of their own between statements; errors go to
//! standard error and the session goes on unless `--bail`. The image, when given, is
//! created on first use and closed cleanly at the end (SQLite checkpoints its WAL and
//! the file table and image are made durable); statements that committed are on flash
//! with the device's timing whatever happens later.

use crate::setup::DeviceArgs;
use crate::shell::{self, csv_field, json_string, Flow, Mode, Stop};
use crate::table::{write_table, Row};
use clap::Args;
use flash::ftl::{FtlConfig, FtlKind};
use nand::{Device, ImageOptions, MemoryStorage, SyncMode};
use rusqlite::types::ValueRef;
use rustyline::error::ReadlineError;
use sqlite_flash::{FlashSqlite, FlashSqliteOptions};
use std::io::{self, BufRead, IsTerminal, Write};
use std::path::PathBuf;

const HELP: &str = "\
Statements end with `;` and run as soon as SQLite sees a complete one. Dot commands, on a
line of their own:
  .help                  this text
  .tables                tables and indexes
  .schema                the schema as SQL
  .files                 SQLite's files on flash and the logical pages still free
  .stats                 host I/O (pages, bytes, syncs), flash programs, GC copies,
                         erases, and simulated time
  .mode table|csv|json   how query results are shown
  .quit  (or .exit)      end the session; committed work is kept
";

#[derive(Args)]
pub struct SqliteArgs {
    #[command(flatten)]
    device: DeviceArgs,
    /// The FTL SQLite's files live on: ftl:page, ftl:dftl, ftl:block, ftl:bast or
    /// ftl:fast (a new image only; an existing one keeps its own).
    #[arg(long, default_value = "ftl:page", value_parser = ftl_storage)]
    storage: FtlKind,
    /// FTL over-provisioning of a new image, in [0, 1).
    #[arg(long, default_value_t = 0.10, value_parser = crate::setup::spare_share)]
    over_provisioning: f64,
    /// SQL and dot commands to run, then exit (standard input is not read); may repeat.
    #[arg(short = 'c', long = "command", value_name = "SQL")]
    commands: Vec<String>,
    /// File of statements to run after any -c (`-`: standard input).
    file: Option<PathBuf>,
    /// Stop at the first statement or command that fails.
    #[arg(long)]
    bail: bool,
    /// How query results are shown (`.mode` changes it in the session).
    #[arg(long, value_enum, default_value_t = Mode::Table)]
    mode: Mode,
    /// Simulated CPU time charged per statement, in µs (at most 1 s).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u64).range(0..=1_000_000))]
    statement_cpu_us: u64,
}

fn ftl_storage(text: &str) -> Result<FtlKind, String> {
    text.strip_prefix("ftl:").and_then(FtlKind::parse).ok_or_else(|| {
        format!(
            "{} is not a storage SQLite runs on: ftl:page, ftl:dftl, ftl:block, ftl:bast or ftl:fast",
            workloads::limits::quote(text)
        )
    })
}

pub fn run(args: SqliteArgs) -> Result<(), String> {
    if args.device.no_data {
        return Err("sqlite needs page data; drop --no-data".into());
    }
    let db = open(&args)?;
    let mut shell = SqliteShell {
        db: &db,
        out: Box::new(io::BufWriter::new(io::stdout())),
        mode: args.mode,
        bail: args.bail,
        failures: 0,
    };
    // A `Stop` only ends the session early (.quit, --bail, a closed pipe).
    let _ = session(&mut shell, &args);
    let failures = shell.failures;
    drop(shell);
    let name = args.device.image.as_ref().map_or("the in-memory device".to_string(), |p| p.display().to_string());
    db.close().map_err(|e| format!("closing {name}: {e}"))?;
    if failures == 0 {
        Ok(())
    } else {
        Err(String::new())
    }
}

fn open(args: &SqliteArgs) -> Result<FlashSqlite, String> {
    let opts = FlashSqliteOptions { statement_cpu_ns: args.statement_cpu_us * 1000, seed: 1, ..Default::default() };
    match &args.device.image {
        Some(image) if image.exists() => {
            let options = ImageOptions { read_only: false, sync: SyncMode::Full };
            let storage = MemoryStorage::open_image_with(image, options).map_err(|e| e.to_string())?;
            FlashSqlite::open_with(Device::new(Box::new(storage)), 0, opts)
                .map_err(|e| format!("{}: {e}", image.display()))
        }
        image => {
            let device = args.device.create_with_sync(SyncMode::Full)?;
            let config = FtlConfig { over_provisioning: args.over_provisioning, ..FtlConfig::new(args.storage) };
            match image {
                Some(path) => eprintln!("creating SQLite on {} ({} FTL)", path.display(), args.storage.name()),
                None => eprintln!(
                    "SQLite on an in-memory {} device ({} FTL); nothing is kept",
                    args.device.device,
                    args.storage.name()
                ),
            }
            FlashSqlite::create(device, &config, opts).map_err(|e| {
                // Leave no half-made image behind.
                if let Some(path) = image {
                    let _ = std::fs::remove_file(path);
                }
                e.to_string()
            })
        }
    }
}

fn session(shell: &mut SqliteShell, args: &SqliteArgs) -> Flow {
    for command in &args.commands {
        shell.run_reader(&mut command.as_bytes())?;
    }
    match &args.file {
        Some(file) if file.as_os_str() != "-" => match std::fs::File::open(file) {
            Ok(f) => shell.run_reader(&mut io::BufReader::new(f)),
            Err(e) => shell.fail(&format!("error: {}: {e}", file.display())),
        },
        None if !args.commands.is_empty() => Ok(()),
        None if io::stdin().is_terminal() => shell.run_terminal(),
        _ => shell.run_reader(&mut io::stdin().lock()),
    }
}

struct SqliteShell<'a> {
    db: &'a FlashSqlite,
    out: Box<dyn Write + 'a>,
    mode: Mode,
    bail: bool,
    failures: usize,
}

impl SqliteShell<'_> {
    fn run_reader(&mut self, input: &mut dyn BufRead) -> Flow {
        let mut pending = String::new();
        let mut line = String::new();
        let mut number = 0;
        loop {
            line.clear();
            match input.read_line(&mut line) {
                Ok(0) => break,
                Ok(_) => number += 1,
                Err(e) => {
                    self.fail(&format!("error at line {}: reading the input: {e}", number + 1))?;
                    break;
                }
            }
            self.line(&mut pending, &line, number)?;
        }
        // A last statement without `;` still runs.
        if !pending.trim().is_empty() {
            pending.push(';');
            let text = std::mem::take(&mut pending);
            self.statements(&text, number)?;
        }
        Ok(())
    }

    fn run_terminal(&mut self) -> Flow {
        let mut editor = match rustyline::DefaultEditor::new() {
            Ok(editor) => editor,
            Err(e) => {
                let _ = writeln!(io::stderr(), "note: no line editing ({e}); reading plain lines");
                return self.run_reader(&mut io::stdin().lock());
            }
        };
        let _ = writeln!(
            io::stderr(),
            "SQLite {} on emulated flash. Enter SQL ending with `;`, or .help; Ctrl-D ends the session.",
            rusqlite::version()
        );
        let mut pending = String::new();
        let mut number = 0;
        loop {
            let prompt = if pending.trim().is_empty() { "sqlite> " } else { "   ...> " };
            match editor.readline(prompt) {
                Ok(line) => {
                    number += 1;
                    if !line.trim().is_empty() {
                        let _ = editor.add_history_entry(line.as_str());
                    }
                    self.line(&mut pending, &(line + "\n"), number)?;
                }
                Err(ReadlineError::Interrupted) => pending.clear(),
                Err(ReadlineError::Eof) => return Ok(()),
                Err(e) => {
                    let _ = writeln!(io::stderr(), "error: reading the terminal: {e}");
                    return Ok(());
                }
            }
        }
    }

    fn line(&mut self, pending: &mut String, line: &str, number: usize) -> Flow {
        if pending.trim().is_empty() && line.trim_start().starts_with('.') {
            pending.clear();
            return self.command(line.trim(), number);
        }
        pending.push_str(line);
        if sqlite_flash::is_complete(pending) {
            let text = std::mem::take(pending);
            self.statements(&text, number)?;
        }
        Ok(())
    }

    /// Runs each complete statement of `text` in turn.
    fn statements(&mut self, text: &str, line: usize) -> Flow {
        let mut rest = text;
        while !rest.trim().is_empty() {
            // The shortest prefix SQLite calls complete is one statement.
            let end = rest
                .match_indices(';')
                .map(|(i, _)| i + 1)
                .find(|&i| sqlite_flash::is_complete(&rest[..i]))
                .unwrap_or(rest.len());
            let (statement, tail) = rest.split_at(end);
            rest = tail;
            if let Err(e) = self.statement(statement) {
                self.fail(&format!("error near line {line}: {e}"))?;
            }
        }
        Ok(())
    }

    fn statement(&mut self, sql: &str) -> Result<(), String> {
        let conn = self.db.connection();
        let mut stmt = conn.prepare(sql).map_err(|e| e.to_string())?;
        let columns: Vec<String> = stmt.column_names().iter().map(|c| c.to_string()).collect();
        if columns.is_empty() {
            let before = conn.total_changes();
            stmt.raw_execute().map_err(|e| self.explain(e))?;
            // `changes()` keeps the last DML's count through DDL; the total does not.
            let changed = conn.total_changes() - before;
            if self.mode == Mode::Table && changed > 0 {
                self.emit(|out| writeln!(out, "{changed} row{} changed", if changed == 1 { "" } else { "s" }))
                    .map_err(|_| String::from("output closed"))?;
            }
            return Ok(());
        }
        let mut rows = stmt.raw_query();
        let mut cells: Vec<Vec<Cell>> = Vec::new();
        while let Some(row) = rows.next().map_err(|e| self.explain(e))? {
            let mut values = Vec::with_capacity(columns.len());
            for i in 0..columns.len() {
                values.push(Cell::from(row.get_ref(i).map_err(|e| e.to_string())?));
            }
            cells.push(values);
        }
        let mode = self.mode;
        self.emit(|out| show(out, mode, &columns, &cells)).map_err(|_| String::from("output closed"))
    }

    /// SQLite's error, with the flash error behind an I/O error.
    fn explain(&self, e: rusqlite::Error) -> String {
        match self.db.last_io_error() {
            Some(io) if matches!(e, rusqlite::Error::SqliteFailure(ref f, _) if f.code == rusqlite::ErrorCode::SystemIoFailure) =>
            {
                format!("{e} ({io})")
            }
            _ => e.to_string(),
        }
    }

    fn command(&mut self, text: &str, line: usize) -> Flow {
        let mut words = text.split_whitespace();
        let name = words.next().unwrap_or(".");
        let args: Vec<&str> = words.collect();
        match (name, args.as_slice()) {
            (".help", []) => self.emit(|out| out.write_all(HELP.as_bytes())),
            (".quit" | ".exit", []) => Err(Stop::Quit),
            (".tables", []) => self.query_lines(
                "SELECT name FROM sqlite_schema WHERE type IN ('table', 'index') AND name NOT LIKE 'sqlite_%' ORDER BY name",
                line,
            ),
            (".schema", []) => {
                self.query_lines("SELECT sql || ';' FROM sqlite_schema WHERE sql IS NOT NULL ORDER BY rowid", line)
            }
            (".files", []) => {
                let (files, free_pages) = self.db.files();
                let mut rows = vec![Row::new(vec!["file".into(), "bytes".into()])];
                rows.extend(files.into_iter().map(|(name, size)| Row::kv(&name, size)));
                rows.push(Row::kv("(free logical pages)", free_pages));
                self.emit(|out| write_table(out, &rows))
            }
            (".stats", []) => {
                let rows = stats_rows(self.db);
                self.emit(|out| write_table(out, &rows))
            }
            (".mode", []) => {
                let mode = format!("{:?}\n", self.mode).to_lowercase();
                self.emit(|out| out.write_all(mode.as_bytes()))
            }
            (".mode", [m]) => match <Mode as clap::ValueEnum>::from_str(m, true) {
                Ok(mode) => {
                    self.mode = mode;
                    Ok(())
                }
                Err(_) => self.fail(&format!("error at line {line}: .mode {m}: expected table, csv or json")),
            },
            (".help" | ".quit" | ".exit" | ".tables" | ".schema" | ".files" | ".stats" | ".mode", _) => {
                self.fail(&format!("error at line {line}: wrong arguments to {name} (.help lists them)"))
            }
            _ => self.fail(&format!("error at line {line}: unknown command {name} (.help lists them)")),
        }
    }

    /// Prints the first column of each row of a query, one per line.
    fn query_lines(&mut self, sql: &str, line: usize) -> Flow {
        let lines = (|| -> rusqlite::Result<Vec<String>> {
            let mut stmt = self.db.connection().prepare(sql)?;
            let rows = stmt.query_map([], |r| r.get::<_, String>(0))?;
            rows.collect()
        })();
        match lines {
            Ok(lines) => self.emit(|out| lines.iter().try_for_each(|l| writeln!(out, "{l}"))),
            Err(e) => self.fail(&format!("error at line {line}: {e}")),
        }
    }

    fn emit(&mut self, write: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> Flow {
        shell::emit(&mut self.out, &mut self.failures, write)
    }

    fn fail(&mut self, message: &str) -> Flow {
        shell::fail(&mut self.out, &mut self.failures, self.bail, message)
    }
}

/// A result value as the modes show it.
enum Cell {
    Null,
    Number(String),
    Text(String),
}

impl From<ValueRef<'_>> for Cell {
    fn from(v: ValueRef<'_>) -> Cell {
        match v {
            ValueRef::Null => Cell::Null,
            ValueRef::Integer(i) => Cell::Number(i.to_string()),
            ValueRef::Real(f) => Cell::Number(f.to_string()),
            ValueRef::Text(t) => Cell::Text(String::from_utf8_lossy(t).into_owned()),
            ValueRef::Blob(b) if b.len() <= 32 => {
                Cell::Text(format!("x'{}'", b.iter().map(|x| format!("{x:02x}")).collect::<String>()))
            }
            ValueRef::Blob(b) => Cell::Text(format!("<blob of {} bytes>", b.len())),
        }
    }
}

fn show(out: &mut dyn Write, mode: Mode, columns: &[String], rows: &[Vec<Cell>]) -> io::Result<()> {
    match mode {
        Mode::Table => {
            let mut table = vec![Row::new(columns.to_vec())];
            table.extend(rows.iter().map(|r| {
                Row::new(
                    r.iter()
                        .map(|c| match c {
                            Cell::Null => "NULL".to_string(),
                            Cell::Number(s) | Cell::Text(s) => s.clone(),
                        })
                        .collect(),
                )
            }));
            write_table(out, &table)?;
            writeln!(out, "({} row{})", rows.len(), if rows.len() == 1 { "" } else { "s" })
        }
        Mode::Csv => {
            writeln!(out, "{}", columns.iter().map(|c| csv_field(c)).collect::<Vec<_>>().join(","))?;
            for row in rows {
                let fields: Vec<String> = row
                    .iter()
                    .map(|c| match c {
                        Cell::Null => String::new(),
                        Cell::Number(s) | Cell::Text(s) => csv_field(s),
                    })
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
                        .map(|(name, c)| {
                            let value = match c {
                                Cell::Null => "null".to_string(),
                                Cell::Number(s) => s.clone(),
                                Cell::Text(s) => json_string(s),
                            };
                            format!("{}: {value}", json_string(name))
                        })
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
    }
}

fn stats_rows(db: &FlashSqlite) -> Vec<Row> {
    let c = db.counters();
    vec![
        Row::new(vec!["counter".into(), "value".into()]),
        Row::kv("host read pages", c.host_read_pages),
        Row::kv("host read bytes", c.host_read_bytes),
        Row::kv("host write pages", c.host_write_pages),
        Row::kv("host write bytes", c.host_write_bytes),
        Row::kv("read-modify-write reads", c.rmw_reads),
        Row::kv("file-table writes", c.table_writes),
        Row::kv("trims", c.trims),
        Row::kv("syncs", c.syncs),
        Row::kv("statements", c.statements),
        Row::kv("flash programs", c.ftl.flash_programs),
        Row::kv("flash reads", c.ftl.flash_reads),
        Row::kv("GC page migrations", c.ftl.gc_page_migrations),
        Row::kv("erases", c.ftl.gc_erases),
        Row::kv("write amplification", format!("{:.3}", c.ftl.write_amplification())),
        Row::kv("simulated time (µs)", db.now() / 1000),
    ]
}
