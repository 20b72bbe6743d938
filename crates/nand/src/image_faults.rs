//! Disks that fail under an image: test layers for the [`ImageIo`] seam.
//!
//! Fault models (both deterministic for a seed):
//! - [`FailingFile`]: the disk fills up or fails. From its N-th operation on (a write,
//!   an `fdatasync` or a hole punch, counted from 1) every operation fails with
//!   `ENOSPC` or `EIO`; the failing write first writes a seeded random prefix of its
//!   bytes (part of it reached the file). Writes before the failure stay in the file,
//!   also when the failure is an `fdatasync` (they sit in the page cache, which a
//!   reopen reads): this is the disk after the space is freed again.
//! - [`LossyFile`]: a power switch under the page cache, as LazyFS and SQLite's
//!   crash-test VFS model it. Writes and punches are held back until an `fdatasync`
//!   completes; at a cut ([`PowerSwitch`]) each one held back is lost, kept whole or
//!   torn (a random subset of its 512-byte sectors lands), in any combination, and every
//!   later operation fails. Dropped without a cut (the process ended, the machine did
//!   not) it writes everything held back, as the OS would.

use crate::image_io::{FileLayer, ImageIo};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::io;
use std::sync::{Arc, Mutex, MutexGuard};

/// The error a [`FailingFile`] gives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileFault {
    /// `ENOSPC`: the file system is full.
    NoSpace,
    /// `EIO`: the disk failed.
    Io,
}

impl FileFault {
    fn error(self) -> io::Error {
        io::Error::from(match self {
            FileFault::NoSpace => rustix::io::Errno::NOSPC,
            FileFault::Io => rustix::io::Errno::IO,
        })
    }
}

/// A file whose operations fail from the N-th on (see the module comment).
pub struct FailingFile {
    inner: Box<dyn ImageIo>,
    fail_at: u64,
    ops: u64,
    fault: FileFault,
    rng: ChaCha8Rng,
}

impl FailingFile {
    /// A layer that fails operation `fail_at` (1-based) and every one after it.
    pub fn layer(fail_at: u64, fault: FileFault, seed: u64) -> FileLayer {
        Box::new(move |file| {
            Box::new(FailingFile {
                inner: Box::new(file),
                fail_at,
                ops: 0,
                fault,
                rng: ChaCha8Rng::seed_from_u64(seed),
            })
        })
    }

    /// Counts an operation; true when it fails.
    fn fails_now(&mut self) -> bool {
        self.ops += 1;
        self.ops >= self.fail_at
    }
}

impl ImageIo for FailingFile {
    fn write_all_at(&mut self, bytes: &[u8], at: u64) -> io::Result<()> {
        if !self.fails_now() {
            return self.inner.write_all_at(bytes, at);
        }
        if self.ops == self.fail_at && !bytes.is_empty() {
            let landed = self.rng.gen_range(0..bytes.len());
            self.inner.write_all_at(&bytes[..landed], at)?;
        }
        Err(self.fault.error())
    }

    fn sync_data(&mut self) -> io::Result<()> {
        if self.fails_now() {
            return Err(self.fault.error());
        }
        self.inner.sync_data()
    }

    fn punch_hole(&mut self, at: u64, len: u64) -> io::Result<()> {
        if self.fails_now() {
            return Err(self.fault.error());
        }
        self.inner.punch_hole(at, len)
    }
}

/// A write or punch not yet covered by a completed `fdatasync`.
enum Unsynced {
    Write { at: u64, bytes: Vec<u8> },
    Punch { at: u64, len: u64 },
}

/// Sector size a torn write lands in: each 512-byte sector of it lands or not.
const SECTOR_BYTES: u64 = 512;

/// The disk under a [`LossyFile`], shared with its [`PowerSwitch`].
struct Disk {
    /// The real file, once the layer is applied to it.
    file: Option<Box<dyn ImageIo>>,
    unsynced: Vec<Unsynced>,
    ops: u64,
    cut_at: Option<u64>,
    cut: bool,
    /// False for a disk that acknowledges `fdatasync` without making anything durable
    /// (to show that a power-cut test catches a missing sync).
    syncs_durable: bool,
    rng: ChaCha8Rng,
}

impl Disk {
    fn file(&mut self) -> io::Result<&mut Box<dyn ImageIo>> {
        self.file.as_mut().ok_or_else(|| io::Error::other("the lossy layer has no file"))
    }

    /// Counts an operation; applies the armed cut when it falls on this one.
    fn count(&mut self) -> io::Result<()> {
        if self.cut {
            return Err(power_lost());
        }
        self.ops += 1;
        if self.cut_at == Some(self.ops) {
            self.cut()?;
            return Err(power_lost());
        }
        Ok(())
    }

    /// The power cut: each unsynced write is lost, kept or torn.
    fn cut(&mut self) -> io::Result<()> {
        self.cut = true;
        for op in std::mem::take(&mut self.unsynced) {
            match (op, self.rng.gen_range(0..3)) {
                (_, 0) => {}
                (Unsynced::Write { at, bytes }, 1) => self.file()?.write_all_at(&bytes, at)?,
                (Unsynced::Write { at, bytes }, _) => {
                    let mut start = at;
                    while start < at + bytes.len() as u64 {
                        let end = ((start / SECTOR_BYTES + 1) * SECTOR_BYTES).min(at + bytes.len() as u64);
                        if self.rng.gen_bool(0.5) {
                            self.file()?.write_all_at(&bytes[(start - at) as usize..(end - at) as usize], start)?;
                        }
                        start = end;
                    }
                }
                (Unsynced::Punch { at, len }, _) => self.file()?.punch_hole(at, len)?,
            }
        }
        Ok(())
    }

    /// Writes everything held back, in order.
    fn write_back(&mut self) -> io::Result<()> {
        for op in std::mem::take(&mut self.unsynced) {
            match op {
                Unsynced::Write { at, bytes } => self.file()?.write_all_at(&bytes, at)?,
                Unsynced::Punch { at, len } => self.file()?.punch_hole(at, len)?,
            }
        }
        Ok(())
    }
}

fn power_lost() -> io::Error {
    io::Error::other("power cut (simulated)")
}

/// A file that loses what was not synced when its [`PowerSwitch`] cuts the power.
pub struct LossyFile {
    disk: Arc<Mutex<Disk>>,
}

/// The switch of a [`LossyFile`]: cut now, or at its N-th operation from now.
#[derive(Clone)]
pub struct PowerSwitch {
    disk: Arc<Mutex<Disk>>,
}

fn lock(disk: &Mutex<Disk>) -> MutexGuard<'_, Disk> {
    disk.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl LossyFile {
    /// A layer that holds writes back until they are synced, and its switch. `seed`
    /// decides what a cut keeps.
    pub fn layer(seed: u64) -> (FileLayer, PowerSwitch) {
        let switch = PowerSwitch {
            disk: Arc::new(Mutex::new(Disk {
                file: None,
                unsynced: Vec::new(),
                ops: 0,
                cut_at: None,
                cut: false,
                syncs_durable: true,
                rng: ChaCha8Rng::seed_from_u64(seed),
            })),
        };
        let disk = switch.disk.clone();
        let layer: FileLayer = Box::new(move |file| {
            lock(&disk).file = Some(Box::new(file));
            Box::new(LossyFile { disk })
        });
        (layer, switch)
    }
}

impl ImageIo for LossyFile {
    fn write_all_at(&mut self, bytes: &[u8], at: u64) -> io::Result<()> {
        let mut disk = lock(&self.disk);
        disk.unsynced.push(Unsynced::Write { at, bytes: bytes.to_vec() });
        disk.count()
    }

    fn sync_data(&mut self) -> io::Result<()> {
        let mut disk = lock(&self.disk);
        disk.count()?;
        // What reaches the real file is what the simulated disk keeps: no real
        // `fdatasync` is needed for that.
        if disk.syncs_durable {
            disk.write_back()?;
        }
        Ok(())
    }

    fn punch_hole(&mut self, at: u64, len: u64) -> io::Result<()> {
        let mut disk = lock(&self.disk);
        disk.unsynced.push(Unsynced::Punch { at, len });
        disk.count()
    }
}

impl Drop for LossyFile {
    fn drop(&mut self) {
        let mut disk = lock(&self.disk);
        if !disk.cut {
            // Nothing to report a failure to: the test reopening the image will see it.
            let _ = disk.write_back();
        }
        // Closes the file (and its lock) although the switch lives on.
        disk.file = None;
    }
}

impl PowerSwitch {
    /// Cuts the power now: unsynced writes are lost, kept or torn; every later
    /// operation fails.
    pub fn cut(&self) -> io::Result<()> {
        let mut disk = lock(&self.disk);
        if disk.cut {
            return Ok(());
        }
        disk.cut()
    }

    /// Cuts the power at the `after_ops`-th operation from now (1: the next one); the
    /// write or punch it falls on is held back first, so it too may be lost, kept or torn.
    pub fn arm(&self, after_ops: u64) {
        let mut disk = lock(&self.disk);
        disk.cut_at = Some(disk.ops + after_ops.max(1));
    }

    /// Operations (writes, syncs, punches) made so far.
    pub fn ops(&self) -> u64 {
        lock(&self.disk).ops
    }

    /// Whether the power was cut.
    pub fn is_cut(&self) -> bool {
        lock(&self.disk).cut
    }

    /// Makes `fdatasync` return without making anything durable: a disk that lies,
    /// for showing that a power-cut test catches a lost sync.
    pub fn ignore_syncs(&self) {
        lock(&self.disk).syncs_durable = false;
    }
}
