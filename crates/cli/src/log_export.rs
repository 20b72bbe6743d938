//! `deltaflash log export`: the ARIES log a database image still holds, as JSON lines
//! in the advisor's log format (`advisor::log_file`: a header with the device, the
//! catalog's objects and where the measured run begins, then one line per record, each
//! naming the object whose page it changes). `deltaflash advise --log FILE` reads it
//! back; `advise --analyze IMAGE` reads the same from the image directly.
//!
//! The image is opened read-only (a scratch copy in memory): exporting never changes
//! it. A file that does not parse is an error naming the file and the line.

use crate::output::{OutputFile, OverwriteArg};
use advisor::baseline::{measured_from_lsn, read_image};
use advisor::log_file::{self, Header, Row};
use clap::{Args, Subcommand};
use serde_json::Value;
use std::io::BufRead;
use std::path::{Path, PathBuf};

#[derive(Args)]
pub struct LogArgs {
    #[command(subcommand)]
    command: LogCommand,
}

#[derive(Subcommand)]
enum LogCommand {
    /// Write the log a database image holds as JSON lines (header, then one record a
    /// line), the input of `deltaflash advise --log`.
    Export(ExportArgs),
}

#[derive(Args)]
struct ExportArgs {
    /// Database image of a finished run (`bench --image`); read, never changed.
    image: PathBuf,
    /// The JSON lines file to write (a new file; see --overwrite).
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
    /// The run's `bench --json` result: its `measured_from_lsn` goes into the header,
    /// so the records of the load and warm-up are told from the measured run's.
    #[arg(long, value_name = "RESULT.json")]
    baseline: Option<PathBuf>,
    #[command(flatten)]
    overwrite: OverwriteArg,
}

pub fn run(args: LogArgs) -> Result<bool, String> {
    let LogCommand::Export(args) = args.command;
    let out = OutputFile::check("--out", &args.out, args.overwrite.overwrite)?;
    let (mut header, rows) = read_image(&args.image)?;
    if let Some(result) = &args.baseline {
        header.measured_from_lsn = measured_from_lsn(&read_json(result)?);
    }
    let failed = |e: serde_json::Error| format!("{}: {e}", args.out.display());
    let mut text = serde_json::to_vec(&header).map_err(failed)?;
    text.push(b'\n');
    for row in &rows {
        serde_json::to_writer(&mut text, row).map_err(failed)?;
        text.push(b'\n');
    }
    out.write(&text)?;
    eprintln!("{} log records written to {}", rows.len(), args.out.display());
    Ok(true)
}

/// A JSON file (a `bench --json` result), errors naming it.
pub(crate) fn read_json(path: &Path) -> Result<Value, String> {
    let source = path.display();
    let text = std::fs::read_to_string(path).map_err(|e| format!("{source}: {e}"))?;
    serde_json::from_str(&text).map_err(|e| format!("{source}: {e}"))
}

/// Reads an exported log: its header and records.
pub(crate) fn read_file(path: &Path) -> Result<(Header, Vec<Row>), String> {
    let at = |line: usize, e: &dyn std::fmt::Display| format!("{} line {line}: {e}", path.display());
    let file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut lines = std::io::BufReader::new(file).lines();
    let first = lines.next().ok_or_else(|| at(1, &"empty: no header"))?.map_err(|e| at(1, &e))?;
    let header: Header = serde_json::from_str(&first).map_err(|e| at(1, &e))?;
    if header.format != log_file::FORMAT || header.version != log_file::VERSION {
        return Err(at(
            1,
            &format!(
                "format `{}` version {}, expected `{}` version {} (write it with `deltaflash log export`)",
                advisor::quote(&header.format),
                header.version,
                log_file::FORMAT,
                log_file::VERSION
            ),
        ));
    }
    let mut rows = Vec::new();
    for (k, line) in lines.enumerate() {
        let text = line.map_err(|e| at(k + 2, &e))?;
        if text.trim().is_empty() {
            continue;
        }
        rows.push(serde_json::from_str(&text).map_err(|e| at(k + 2, &e))?);
    }
    Ok((header, rows))
}
