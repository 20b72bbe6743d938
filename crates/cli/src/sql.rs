//! `deltaflash sql`: create or open a database image and run statements and dot
//! commands (`.stats`, `.schema`, `.tables`) from `-e` arguments, a file, or standard input.

use crate::setup::DeviceArgs;
use crate::table::{print_table, Row};
use clap::Args;
use engine::db::BufferSize;
use engine::{Database, DbOptions, QueryResult};
use nand::{Device, MemoryStorage};
use std::io::Read;
use std::path::PathBuf;

#[derive(Args)]
pub struct SqlArgs {
    #[command(flatten)]
    device: DeviceArgs,
    /// Statement(s) to run, in order; may repeat. Dot commands work here too.
    #[arg(short = 'e', long = "execute")]
    execute: Vec<String>,
    /// File of statements (`-` reads standard input). Runs after any -e.
    file: Option<PathBuf>,
    /// DB page size in bytes for a new database: 4096, 8192 or 16384.
    #[arg(long, default_value_t = 4096)]
    db_page_bytes: usize,
    /// Buffer pool frames.
    #[arg(long, default_value_t = 1024)]
    buffer_pages: usize,
}

pub fn run(args: SqlArgs) -> Result<(), String> {
    let Some(image) = args.device.image.clone() else {
        return Err("sql needs --image PATH (the database file; created if it does not exist)".into());
    };
    if args.device.no_data {
        return Err("sql needs page data; drop --no-data".into());
    }
    let options = DbOptions {
        page_bytes: args.db_page_bytes,
        buffer: BufferSize::Pages(args.buffer_pages),
        ..DbOptions::default()
    };
    let mut db = if image.exists() {
        let storage = MemoryStorage::open_image(&image).map_err(|e| e.to_string())?;
        Database::open(Device::new(Box::new(storage)), options).map_err(|e| format!("{}: {e}", image.display()))?
    } else {
        let device = args.device.create()?;
        eprintln!("creating database {} on a {} device", image.display(), args.device.device);
        Database::create(device, options).map_err(|e| {
            // Leave no half-made image behind.
            let _ = std::fs::remove_file(&image);
            e.to_string()
        })?
    };
    let mut scripts: Vec<(String, String)> = args.execute.iter().map(|s| ("-e".to_string(), s.clone())).collect();
    if let Some(file) = &args.file {
        let text = if file.as_os_str() == "-" {
            let mut s = String::new();
            std::io::stdin().read_to_string(&mut s).map_err(|e| format!("standard input: {e}"))?;
            s
        } else {
            std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?
        };
        scripts.push((file.display().to_string(), text));
    }
    let outcome = scripts.iter().try_for_each(|(source, text)| run_script(&mut db, source, text));
    // Keep what ran, even when a later statement failed.
    db.close().map_err(|e| format!("saving {}: {e}", image.display()))?;
    outcome
}

/// Runs SQL text with dot commands on lines of their own.
fn run_script(db: &mut Database, source: &str, text: &str) -> Result<(), String> {
    let mut pending = String::new();
    for (n, line) in text.lines().enumerate() {
        let trimmed = line.trim();
        if trimmed.starts_with('.') {
            execute(db, source, &pending)?;
            pending.clear();
            dot_command(db, trimmed).map_err(|e| format!("{source}:{}: {e}", n + 1))?;
            pending.push('\n');
        } else {
            pending.push_str(line);
            pending.push('\n');
        }
    }
    execute(db, source, &pending)
}

fn execute(db: &mut Database, source: &str, sql: &str) -> Result<(), String> {
    if sql.trim().is_empty() {
        return Ok(());
    }
    for result in db.execute(sql).map_err(|e| format!("{source}: {e}"))? {
        match result {
            QueryResult::Rows { columns, rows } => {
                let mut table = vec![Row::new(columns)];
                let count = rows.len();
                table.extend(rows.into_iter().map(|r| Row::new(r.iter().map(|v| v.to_string()).collect())));
                print_table(&table);
                println!("({count} row{})", if count == 1 { "" } else { "s" });
            }
            QueryResult::Count { verb, rows } => println!("{rows} row{} {verb}", if rows == 1 { "" } else { "s" }),
            QueryResult::Done(message) => println!("{message}"),
        }
    }
    Ok(())
}

fn dot_command(db: &mut Database, command: &str) -> Result<(), String> {
    match command {
        ".schema" => {
            print!("{}", db.schema());
            Ok(())
        }
        ".stats" => {
            db.checkpoint().map_err(|e| e.to_string())?;
            print_stats(db);
            Ok(())
        }
        ".tables" => {
            let mut rows = vec![Row::new(["name", "kind", "tablespace", "pages"].map(String::from).to_vec())];
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
            print_table(&rows);
            Ok(())
        }
        other => Err(format!("unknown dot command `{other}` (expected .stats, .schema or .tables)")),
    }
}

/// Flash and IPA counters per object and per region (after writing dirty pages).
fn print_stats(db: &Database) {
    let mut rows = vec![Row::new(
        [
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
        ]
        .map(String::from)
        .to_vec(),
    )];
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
    print_table(&rows);
    println!();
    let mut rows = vec![Row::new(
        ["region", "mode", "host writes", "appends", "host reads", "gc migrations", "gc erases"]
            .map(String::from)
            .to_vec(),
    )];
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
    print_table(&rows);
    let p = db.pool_stats();
    println!(
        "\nbuffer: {} frames, {} hits, {} misses, {} evictions ({} dirty), {} cleaner writes",
        db.buffer_frames(),
        p.hits,
        p.misses,
        p.evictions,
        p.dirty_evictions,
        p.cleaner_writes
    );
}
