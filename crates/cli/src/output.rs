//! Files a command creates for the user (`--json`, `--ddl`, `--plots`, a new database or
//! image): checked before any work starts, then created without replacing anything.
//!
//! Invariants: a file that exists is replaced only when the user passed `--overwrite`
//! (output files only; a database or an image is never replaced), and then atomically —
//! a temporary file in the same directory renamed over it. Otherwise the file is created
//! with `create_new`, so one that appeared during the run is refused, not replaced. A
//! missing or unwritable directory is found by the check, before the run.

use clap::Args;
use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// `--overwrite`, for the commands that write output files.
#[derive(Args, Clone, Copy, Debug, Default)]
pub struct OverwriteArg {
    /// Replace output files that exist (--json, --ddl, the files in --plots); without it
    /// an existing one is refused before the run starts. A database or device image is
    /// never replaced.
    #[arg(long)]
    pub overwrite: bool,
}

impl OverwriteArg {
    /// The file of `flag`, if given, checked before the run ([`OutputFile::check`]).
    pub fn check(&self, flag: &'static str, path: Option<&Path>) -> Result<Option<OutputFile>, String> {
        path.map(|p| OutputFile::check(flag, p, self.overwrite)).transpose()
    }
}

/// An output file that passed [`OutputFile::check`]: written once the result is known.
#[derive(Clone, Debug)]
pub struct OutputFile {
    flag: &'static str,
    path: PathBuf,
    overwrite: bool,
}

impl OutputFile {
    /// Checks, before the run, that `path` (given as `flag`) can be written: it does not
    /// exist (or `overwrite` and it is not a directory), and its directory exists and
    /// takes new files.
    pub fn check(flag: &'static str, path: &Path, overwrite: bool) -> Result<OutputFile, String> {
        match fs::symlink_metadata(path) {
            Ok(meta) if meta.is_dir() => {
                return Err(format!("{flag} {}: is a directory; name a file", path.display()));
            }
            Ok(_) if dangling(path) => return Err(dangling_error(flag, path)),
            Ok(_) if !overwrite => {
                return Err(format!(
                    "{flag} {}: the file exists; pass --overwrite to replace it, or choose another path",
                    path.display()
                ));
            }
            Ok(_) => {}
            Err(e) if absent(&e) => {}
            Err(e) => return Err(format!("{flag} {}: {e}", path.display())),
        }
        check_directory(flag, path)?;
        Ok(OutputFile { flag, path: path.to_path_buf(), overwrite })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes `bytes`: a new file, or with `--overwrite` an atomic replacement.
    pub fn write(&self, bytes: &[u8]) -> Result<(), String> {
        let at = |e: io::Error| format!("{} {}: {e}", self.flag, self.path.display());
        if self.overwrite {
            let mut file = tempfile::NamedTempFile::new_in(directory_of(&self.path)).map_err(at)?;
            file.write_all(bytes).map_err(at)?;
            return file.persist(&self.path).map(drop).map_err(|e| at(e.error));
        }
        let mut file = match OpenOptions::new().write(true).create_new(true).open(&self.path) {
            Ok(file) => file,
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                return Err(format!(
                    "{} {}: a file appeared there during the run; it is not replaced and the result is not \
                     written (pass --overwrite to replace it)",
                    self.flag,
                    self.path.display()
                ));
            }
            Err(e) => return Err(at(e)),
        };
        file.write_all(bytes).map_err(|e| {
            // The file is ours: leave no partial result behind.
            let _ = fs::remove_file(&self.path);
            at(e)
        })
    }
}

/// Checks, before anything is created, that a new database or image can be created at
/// `path` (given as `flag`): nothing is there, not even a dangling symbolic link, and
/// its directory exists and takes new files.
pub fn check_new(flag: &str, path: &Path) -> Result<(), String> {
    match fs::symlink_metadata(path) {
        Ok(_) if dangling(path) => Err(dangling_error(flag, path)),
        Ok(_) => Err(format!(
            "{flag} {}: the file exists; a new one is created here and nothing is replaced: remove it or choose \
             another path",
            path.display()
        )),
        Err(e) if absent(&e) => check_directory(flag, path),
        Err(e) => Err(format!("{flag} {}: {e}", path.display())),
    }
}

/// `--plots DIR`: the directory (created at the end if missing) and its files.
pub fn check_plots(dir: &Path, names: &[&str], overwrite: bool) -> Result<Vec<OutputFile>, String> {
    match fs::metadata(dir) {
        Ok(meta) if meta.is_dir() => {
            names.iter().map(|name| OutputFile::check("--plots", &dir.join(name), overwrite)).collect()
        }
        Ok(_) => Err(format!("--plots {}: not a directory", dir.display())),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            // A new directory holds nothing to replace.
            check_directory("--plots", dir)?;
            let file = |name| OutputFile { flag: "--plots", path: dir.join(name), overwrite };
            Ok(names.iter().map(file).collect())
        }
        Err(e) => Err(format!("--plots {}: {e}", dir.display())),
    }
}

/// `--plots DIR` at the end of the run: the directory is created if missing (never
/// replacing anything).
pub fn create_plots_dir(dir: &Path) -> Result<(), String> {
    match fs::create_dir(dir) {
        Err(e) if e.kind() != io::ErrorKind::AlreadyExists => Err(format!("--plots {}: {e}", dir.display())),
        _ => Ok(()),
    }
}

/// The directory a relative file name without one lives in.
fn directory_of(path: &Path) -> &Path {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    }
}

/// The directory of `path` exists, is one, and takes a new file (probed with a
/// temporary file that is removed at once).
fn check_directory(flag: &str, path: &Path) -> Result<(), String> {
    let dir = directory_of(path);
    match fs::metadata(dir) {
        Ok(meta) if meta.is_dir() => {}
        Ok(_) => return Err(format!("{flag} {}: {} is not a directory", path.display(), dir.display())),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(format!("{flag} {}: directory {} does not exist", path.display(), dir.display()))
        }
        Err(e) => return Err(format!("{flag} {}: {}: {e}", path.display(), dir.display())),
    }
    tempfile::Builder::new()
        .prefix(".deltaflash-probe")
        .tempfile_in(dir)
        .map(drop)
        .map_err(|e| format!("{flag} {}: cannot create files in {}: {e}", path.display(), dir.display()))
}

/// An error that says nothing is at the path (its directory is checked next).
fn absent(e: &io::Error) -> bool {
    matches!(e.kind(), io::ErrorKind::NotFound | io::ErrorKind::NotADirectory)
}

/// A symbolic link whose target does not exist.
fn dangling(path: &Path) -> bool {
    fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) && fs::metadata(path).is_err()
}

fn dangling_error(flag: &str, path: &Path) -> String {
    let target = fs::read_link(path).map(|t| t.display().to_string()).unwrap_or_default();
    format!(
        "{flag} {}: is a symbolic link to {target}, which does not exist; nothing is created through it: remove \
         the link or choose another path",
        path.display()
    )
}
