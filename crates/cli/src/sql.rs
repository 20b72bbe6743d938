//! `deltaflash sql`: create or open a database image and run a shell on it
//! ([`crate::shell`]): `-c` strings, a file, a pipe, or a prompt on a terminal.
//!
//! A new database gets a DB page size that fits the device (the flash page when that
//! is above 4 KiB); a size that cannot work is refused with the sizes that can. The
//! database is opened and closed in [`open`] and [`close`] only, so how an image is
//! held (today: in memory, written whole at the end) changes in one place.

use crate::setup::DeviceArgs;
use crate::shell::{Mode, Shell, Stop};
use clap::Args;
use engine::db::BufferSize;
use engine::{Database, DbOptions};
use nand::{Device, ImageLock, ImageOptions, MemoryStorage, SyncMode};
use std::io::{self, IsTerminal};
use std::path::{Path, PathBuf};

/// DB page sizes the engine supports; one must also be a multiple of the flash page.
const DB_PAGE_SIZES: [usize; 3] = [4096, 8192, 16384];

pub(crate) fn db_page_size(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(b) if DB_PAGE_SIZES.contains(&b) => Ok(b),
        _ => Err("must be 4096, 8192 or 16384".into()),
    }
}

#[derive(Args)]
pub struct SqlArgs {
    #[command(flatten)]
    device: DeviceArgs,
    /// SQL and dot commands to run, then exit (standard input is not read); may repeat.
    #[arg(short = 'c', long = "command", visible_short_alias = 'e', visible_alias = "execute", value_name = "SQL")]
    commands: Vec<String>,
    /// File of statements to run after any -c (`-`: standard input). Without -c or a
    /// file, standard input is read: with a prompt and line editing on a terminal.
    file: Option<PathBuf>,
    /// Stop at the first statement or command that fails (without it the session goes
    /// on; either way the exit code is non-zero if any failed).
    #[arg(long)]
    bail: bool,
    /// How query results are shown (`.mode` changes it in the session).
    #[arg(long, value_enum, default_value_t = Mode::Table)]
    mode: Mode,
    /// DB page size of a new database: 4096, 8192 or 16384, a multiple of the flash
    /// page (default: the flash page size when that is above 4096, else 4096).
    #[arg(long, value_parser = db_page_size)]
    db_page_bytes: Option<usize>,
    /// Buffer pool frames, 4 to 4,194,304.
    #[arg(long, default_value_t = 1024, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(4..=1 << 22))]
    buffer_pages: usize,
    /// Open the image with a shared lock and run only SELECT; the file is left
    /// byte-identical (recovery, if any is needed, runs on a copy in memory). Works on a
    /// read-only file.
    #[arg(long)]
    read_only: bool,
    /// When a commit is made durable against power loss (SQLite's meaning): `full`
    /// fdatasyncs the image at every commit (and before a block's second program since
    /// the last sync, so a power loss leaves only states a NAND power cut can); `normal`
    /// at checkpoints and before a data page whose log records are not synced yet, so a
    /// power loss loses a suffix of commits; `off` never. Process death (`kill -9`)
    /// loses no returned commit in any mode.
    #[arg(long, value_enum, default_value_t = SyncArg::Full)]
    sync: SyncArg,
}

/// `--sync`: the image's [`SyncMode`].
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
enum SyncArg {
    Off,
    Normal,
    Full,
}

impl From<SyncArg> for SyncMode {
    fn from(s: SyncArg) -> SyncMode {
        match s {
            SyncArg::Off => SyncMode::Off,
            SyncArg::Normal => SyncMode::Normal,
            SyncArg::Full => SyncMode::Full,
        }
    }
}

pub fn run(args: SqlArgs) -> Result<(), String> {
    let Some(image) = args.device.image.clone() else {
        return Err("sql needs --image PATH (the database file; created if it does not exist)".into());
    };
    if args.device.no_data {
        return Err("sql needs page data; drop --no-data".into());
    }
    let (mut db, lock) = open(&args, &image)?;
    let mut shell =
        Shell::new(&mut db, Box::new(io::BufWriter::new(io::stdout())), args.mode, args.bail).read_only(args.read_only);
    // A `Stop` only ends the session early (.quit, --bail, a closed pipe).
    let _ = session(&mut shell, &args);
    let failures = shell.failures;
    drop(shell);
    // Keep what ran, even when a statement failed or the reader went away. A read-only
    // session's copy is dropped with its lock.
    if lock.is_none() {
        close(db, &image)?;
    }
    if failures == 0 {
        Ok(())
    } else {
        // Every failure has been reported where it happened.
        Err(String::new())
    }
}

/// Runs the `-c` strings, then the file, or else standard input.
fn session(shell: &mut Shell, args: &SqlArgs) -> Result<(), Stop> {
    for command in &args.commands {
        shell.run_reader(&mut command.as_bytes())?;
    }
    match &args.file {
        Some(file) if file.as_os_str() != "-" => match std::fs::File::open(file) {
            Ok(f) => shell.run_reader(&mut io::BufReader::new(f)),
            Err(e) => {
                shell.failures += 1;
                eprintln!("error: {}: {e}", file.display());
                Ok(())
            }
        },
        None if !args.commands.is_empty() => Ok(()),
        None if io::stdin().is_terminal() => shell.run_terminal(history_path().as_deref()),
        _ => shell.run_reader(&mut io::stdin().lock()),
    }
}

/// `~/.deltaflash_history`: the lines typed at the prompt, across sessions and images.
fn history_path() -> Option<PathBuf> {
    std::env::var_os("HOME").map(|home| Path::new(&home).join(".deltaflash_history"))
}

/// The DB page size for a new database on `device`: `--db-page-bytes`, else the
/// smallest supported size that is a multiple of the flash page.
fn db_page_bytes(choice: Option<usize>, device: &DeviceArgs, flash_page: usize) -> Result<usize, String> {
    let fits: Vec<usize> = DB_PAGE_SIZES.into_iter().filter(|s| s % flash_page == 0).collect();
    let list = fits.iter().map(|s| s.to_string()).collect::<Vec<_>>().join(", ");
    match choice {
        Some(b) if fits.contains(&b) => Ok(b),
        Some(b) if !fits.is_empty() => Err(format!(
            "--db-page-bytes {b} is not a multiple of the {flash_page}-byte flash page of this {} device; sizes that fit: {list}",
            device.device
        )),
        _ => fits.first().copied().ok_or_else(|| {
            format!(
                "the {flash_page}-byte flash page of this {} device fits no DB page size (4096, 8192 or 16384, a multiple of the flash page); pass a --page-bytes that divides one",
                device.device
            )
        }),
    }
}

/// Opens the database in `image`, or creates it on a new device.
/// A read-only session also returns the image's lock: its database is a scratch copy.
fn open(args: &SqlArgs, image: &Path) -> Result<(Database, Option<ImageLock>), String> {
    let mut options = DbOptions { buffer: BufferSize::Pages(args.buffer_pages), ..DbOptions::default() };
    if image.exists() {
        let image_options = ImageOptions { read_only: args.read_only, sync: args.sync.into() };
        let mut storage = MemoryStorage::open_image_with(image, image_options).map_err(|e| e.to_string())?;
        let lock = if args.read_only { storage.detach_image() } else { None };
        let db =
            Database::open(Device::new(Box::new(storage)), options).map_err(|e| format!("{}: {e}", image.display()))?;
        return Ok((db, lock));
    }
    if args.read_only {
        return Err(format!("{}: no such image (--read-only opens an existing database)", image.display()));
    }
    let geometry = args.device.geometry()?;
    options.page_bytes = db_page_bytes(args.db_page_bytes, &args.device, geometry.page_bytes as usize)?;
    // The system region and the log take a chip each; CREATE REGION needs more.
    let needed = 1 + options.log_chips;
    if geometry.chips() < needed {
        return Err(format!(
            "a database needs at least {needed} chips (its system and log regions), and one more for each CREATE REGION; --chips {} is too few",
            geometry.chips()
        ));
    }
    let device = args.device.create_with_sync(args.sync.into())?;
    eprintln!(
        "creating database {} on a {} device ({}-byte DB pages)",
        image.display(),
        args.device.device,
        options.page_bytes
    );
    let db = Database::create(device, options).map_err(|e| {
        // Leave no half-made image behind (`create_image` never replaces a file).
        let _ = std::fs::remove_file(image);
        e.to_string()
    })?;
    Ok((db, None))
}

/// Closes the database: a checkpoint, and the image written.
fn close(db: Database, image: &Path) -> Result<(), String> {
    db.close().map(drop).map_err(|e| format!("saving {}: {e}", image.display()))
}
