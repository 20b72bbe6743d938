//! `deltaflash log export`: the ARIES log a database image still holds, as JSON lines
//! in the advisor's log format (`advisor::log_file`: a header with the device, the
//! catalog's objects and where the measured run begins, then one line per record, each
//! naming the object whose page it changes). `deltaflash advise --log FILE` reads it
//! back; `advise --analyze IMAGE` reads the same from the image directly.
//!
//! The image is opened read-only (a scratch copy in memory): exporting never changes
//! it. A file that does not parse is an error naming the file and the line.

use crate::output::{OutputFile, OverwriteArg};
use advisor::log_file::{self, Header, ObjectEntry, Row};
use clap::{Args, Subcommand};
use engine::logrec::Body;
use engine::{Database, DbOptions};
use serde_json::Value;
use std::collections::HashMap;
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

/// Where a result's measured run begins in the log (`None` in results written before
/// it was recorded, or without a log).
pub(crate) fn measured_from_lsn(result: &Value) -> Option<u64> {
    result.get("measured_from_lsn").and_then(Value::as_u64)
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

/// Reads the catalog, the device and the log of a database image.
pub(crate) fn read_image(path: &Path) -> Result<(Header, Vec<Row>), String> {
    let at = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
    // A scratch copy in memory: opening (restart, closing checkpoint) leaves the image as it is.
    let read_only = nand::ImageOptions { read_only: true, ..nand::ImageOptions::default() };
    let mut storage = nand::MemoryStorage::open_image_with(path, read_only).map_err(|e| at(&e))?;
    let _lock = storage.detach_image();
    let db = Database::open(nand::Device::new(Box::new(storage)), DbOptions::default()).map_err(|e| at(&e))?;
    let catalog = db.catalog().clone();
    let (mut device, _) = db.close_on().map_err(|e| at(&e))?;
    let region = |name: &str| device.region_id(name);
    let log = region(engine::db::LOG)
        .ok_or_else(|| at(&"the database keeps no log region (it was not written with the ARIES journal)"))?;
    let system_chips = region(engine::db::SYSTEM).map_or(0, |r| device.chips(r).len());
    let (log_chips, geometry) = (device.chips(log).len(), device.device().geometry().clone());
    let records = engine::log::history(device.as_mut(), log, 0).map_err(|e| at(&e))?;

    let mut objects = Vec::new();
    let mut owner: HashMap<(u16, u32), usize> = HashMap::new();
    let mut by_id: HashMap<u32, usize> = HashMap::new();
    let tables = catalog.tables.iter().map(|t| (t.id, t.name.clone(), "table", t.name.clone(), &t.space));
    let indexes = catalog.indexes.iter().map(|i| (i.id, i.name.clone(), "index", i.table.clone(), &i.space));
    for (id, name, kind, table, space) in tables.chain(indexes) {
        let mut pages = 0;
        for (k, &start) in space.extents.iter().enumerate() {
            let used = if k + 1 == space.extents.len() { space.used_in_last } else { space.extent_pages };
            for p in start..start + used {
                owner.insert((space.region, p), objects.len());
            }
            pages += used as u64;
        }
        pages = pages.saturating_sub(space.free.len() as u64);
        by_id.insert(id, objects.len());
        objects.push(ObjectEntry { name, kind: kind.into(), table, pages });
    }
    let name_of = |i: Option<&usize>| i.map(|&i| objects[i].name.clone());
    let rows = records
        .iter()
        .map(|(lsn, record)| {
            let mut row = Row {
                lsn: *lsn,
                tx: record.tx,
                kind: String::new(),
                object: None,
                region: None,
                page: None,
                bytes: None,
            };
            let mut on_page = |kind: &str, page: &engine::store::PageId, bytes: u64| {
                row.kind = kind.into();
                row.object = name_of(owner.get(&(page.region, page.page)));
                (row.region, row.page, row.bytes) = (Some(page.region), Some(page.page), Some(bytes));
            };
            let changed = |ranges: &[engine::logrec::Range]| ranges.iter().map(|r| r.after.len() as u64).sum();
            match &record.body {
                Body::Update { page, ranges } => on_page("update", page, changed(ranges)),
                Body::Clr { page, ranges, .. } => on_page("clr", page, changed(ranges)),
                Body::Format { page, ranges } => on_page("format", page, changed(ranges)),
                Body::Image { page, bytes } => on_page("image", page, bytes.len() as u64),
                Body::Alloc { object, page, .. } | Body::Free { object, page } => {
                    row.kind = if matches!(record.body, Body::Alloc { .. }) { "alloc" } else { "free" }.into();
                    (row.object, row.page) = (name_of(by_id.get(object)), Some(*page));
                }
                Body::Commit => row.kind = "commit".into(),
                Body::End => row.kind = "end".into(),
                Body::Checkpoint { .. } => row.kind = "checkpoint".into(),
            }
            row
        })
        .collect();
    let data_chips = geometry.chips().saturating_sub((system_chips + log_chips) as u32).max(1);
    let header = Header {
        format: log_file::FORMAT.into(),
        version: log_file::VERSION,
        page_bytes: catalog.page_bytes,
        flash_page_bytes: device.page_bytes(),
        cell: geometry.cell,
        data_chips,
        pages_per_chip: geometry.blocks_per_chip as u64 * geometry.pages_per_block as u64,
        latencies: geometry.latencies.clone(),
        objects,
        measured_from_lsn: None,
    };
    Ok((header, rows))
}
