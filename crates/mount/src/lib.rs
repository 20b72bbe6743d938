//! mount — any storage (a NoFTL region, or any conventional FTL) served as one file
//! through FUSE, so unmodified programs (ext4 on a loop device, SQLite, PostgreSQL, fio)
//! run on the emulated flash and its counters show what they do to it.
//!
//! [`disk`] maps byte ranges onto the storage's logical pages and keeps the counters;
//! [`fs`] is the FUSE file system (`disk` and `stats.json`); [`attach`] puts ext4 on
//! the disk through a loop device. [`serve`] runs a session until it is asked to stop
//! or unmounted from outside, and undoes everything it set up, also after an error.
//!
//! Crash semantics: the storage is the same object the engine uses, so `kill -9` of the
//! serving process is a power cut of the device. Every `fsync` that returned made its
//! writes durable (a device sync; with an image, `fdatasync` of the image file); the
//! next mount rebuilds the storage from flash as any open does.

pub mod attach;
pub mod disk;
pub mod fs;

pub use disk::{Disk, Latency};

use flash::PageDevice;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A line on standard error; a closed stderr is no reason to stop serving.
pub(crate) fn note(line: std::fmt::Arguments) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// The source name the kernel's mount table shows for a session.
const FS_NAME: &str = "deltaflash";

/// Serves `disk` at `mountpoint` until `stop` is set or the mount point is unmounted;
/// with `ext4_at`, also attaches a loop device with ext4 mounted there for the
/// session's length. Returns the storage, flushed, for its owner to close.
pub fn serve(
    disk: Disk,
    mountpoint: &Path,
    ext4_at: Option<&Path>,
    stop: &AtomicBool,
) -> Result<Box<dyn PageDevice>, String> {
    let shared = Arc::new(Mutex::new(disk));
    let mut config = fuser::Config::default();
    config.mount_options = vec![
        fuser::MountOption::FSName(FS_NAME.into()),
        fuser::MountOption::Subtype(FS_NAME.into()),
        fuser::MountOption::DefaultPermissions,
    ];
    // The loop driver (a kernel thread) and programs of other users reach the file too.
    config.acl = fuser::SessionACL::All;
    let session = fuser::spawn_mount(fs::DiskFs::new(Arc::clone(&shared)), mountpoint, &config)
        .map_err(|e| format!("mounting FUSE at {}: {e}", mountpoint.display()))?;
    let mut attached = None;
    let mut failure = None;
    if let Some(at) = ext4_at {
        match attach::attach_ext4(&mountpoint.join("disk"), at) {
            Ok(a) => {
                crate::note(format_args!("ext4 on {} mounted at {}", a.loop_device, at.display()));
                attached = Some(a);
            }
            Err(e) => failure = Some(e),
        }
    }
    if failure.is_none() {
        crate::note(format_args!(
            "serving {} (Ctrl-C or `deltaflash unmount` ends it)",
            mountpoint.join("disk").display()
        ));
        while !stop.load(Ordering::Relaxed) && is_mounted(mountpoint) {
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    if let Some(mut a) = attached {
        if let Err(e) = a.detach() {
            failure.get_or_insert(e);
        }
    }
    let ended = if is_mounted(mountpoint) { session.umount_and_join() } else { session.join() };
    if let Err(e) = ended {
        failure.get_or_insert(format!("unmounting {}: {e}", mountpoint.display()));
    }
    let disk = Arc::try_unwrap(shared)
        .map_err(|_| "the FUSE session still holds the disk".to_string())?
        .into_inner()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let device = disk.close()?;
    match failure {
        Some(e) => Err(e),
        None => Ok(device),
    }
}

/// One line of the kernel's mount table.
pub struct MountEntry {
    /// Where it is mounted.
    pub at: PathBuf,
    /// `ext4`, `fuse.deltaflash`, …
    pub fstype: String,
    /// What is mounted (`/dev/loop3`, `deltaflash`).
    pub source: String,
}

/// The mounts this process sees (`/proc/self/mountinfo`; empty if unreadable).
pub fn mount_table() -> Vec<MountEntry> {
    let Ok(table) = std::fs::read_to_string("/proc/self/mountinfo") else { return Vec::new() };
    table
        .lines()
        .filter_map(|line| {
            // Fields: id, parent, dev, root, mount point, options, optional tags…, "-",
            // fstype, source, super options.
            let fields: Vec<&str> = line.split(' ').collect();
            let dash = fields.iter().position(|f| *f == "-")?;
            Some(MountEntry {
                at: PathBuf::from(unescape(fields.get(4)?)),
                fstype: unescape(fields.get(dash + 1)?),
                source: unescape(fields.get(dash + 2)?),
            })
        })
        .collect()
}

/// Whether `entry` is a session of [`serve`] (named `deltaflash`; the kernel reports its
/// type as `fuse`, or `fuse.deltaflash` where the mount helper sets the subtype).
pub fn is_ours(entry: &MountEntry) -> bool {
    entry.source == FS_NAME && entry.fstype.starts_with("fuse")
}

/// Whether a file system is mounted at `path`.
pub fn is_mounted(path: &Path) -> bool {
    let Ok(path) = path.canonicalize() else { return false };
    mount_table().iter().any(|m| m.at == path)
}

/// A mount table path with its octal escapes (`\040` for a space) decoded.
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes.get(i + 1..i + 4).and_then(|d| u8::from_str_radix(std::str::from_utf8(d).ok()?, 8).ok());
        match (bytes[i], octal) {
            (b'\\', Some(b)) => {
                out.push(b);
                i += 4;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    #[test]
    fn mount_table_escapes_are_decoded() {
        assert_eq!(super::unescape(r"/tmp/a\040b"), "/tmp/a b");
        assert_eq!(super::unescape("/plain"), "/plain");
    }
}
