//! A file system on the mounted disk: a loop device over `MOUNTPOINT/disk` (direct I/O,
//! so the loop's writes and flushes reach the storage when the file system issues
//! them), ext4 made on it if it holds no file system yet, mounted at a directory.
//! Every step has its undo, run in reverse order on detach and after a failure
//! part-way, so nothing stays mounted or attached.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A loop device and the file system mounted from it.
pub struct Attached {
    pub loop_device: String,
    pub at: PathBuf,
    mounted: bool,
}

/// Runs a system tool; its standard error becomes the error.
fn run(tool: &str, args: &[&str]) -> Result<String, String> {
    let out = Command::new(tool).args(args).output().map_err(|e| format!("cannot run {tool}: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    } else {
        let said = String::from_utf8_lossy(&out.stderr);
        Err(format!("{tool} {}: {}", args.join(" "), said.trim()))
    }
}

/// Attaches `disk` to a loop device and mounts ext4 from it at `at` (made first if the
/// disk holds no file system).
pub fn attach_ext4(disk: &Path, at: &Path) -> Result<Attached, String> {
    if !at.is_dir() {
        return Err(format!("--at {}: not a directory", at.display()));
    }
    let file = disk.to_str().ok_or("the mount point's path is not UTF-8")?;
    let loop_device = run("losetup", &["--find", "--show", "--direct-io=on", file])?;
    let mut attached = Attached { loop_device, at: at.to_path_buf(), mounted: false };
    if let Err(e) = attached.mount() {
        let _ = attached.detach();
        return Err(e);
    }
    Ok(attached)
}

impl Attached {
    fn mount(&mut self) -> Result<(), String> {
        // blkid exits 2 when it finds no file system signature.
        let found = Command::new("blkid").args(["-p", &self.loop_device]).stdout(std::process::Stdio::null()).status();
        if matches!(found, Ok(status) if status.code() == Some(2)) {
            crate::note(format_args!("making ext4 on {} (a new disk)", self.loop_device));
            // No discard pass over the whole new disk: it holds nothing yet.
            run("mkfs.ext4", &["-q", "-E", "nodiscard", &self.loop_device])?;
        }
        let at = self.at.to_str().ok_or("--at: the path is not UTF-8")?;
        run("mount", &["-t", "ext4", &self.loop_device, at])?;
        self.mounted = true;
        Ok(())
    }

    /// Unmounts the file system (its data reaches the disk) and detaches the loop device.
    pub fn detach(&mut self) -> Result<(), String> {
        if self.mounted {
            let at = self.at.to_string_lossy().to_string();
            // A program still inside the file system keeps it busy for a moment.
            let mut last = Ok(String::new());
            for _ in 0..50 {
                last = run("umount", &[&at]);
                if last.is_ok() {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
            last?;
            self.mounted = false;
        }
        run("losetup", &["-d", &self.loop_device]).map(|_| ())
    }
}
