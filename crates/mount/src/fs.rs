//! The FUSE file system: a directory with two files.
//!
//! - `disk`: the [`Disk`], its size the storage's logical capacity. Opened with direct
//!   I/O (no kernel page cache), so every read, write, `fsync`/`fdatasync` (a device
//!   flush) and `fallocate` (punch hole or zero range: a trim) reaches the storage when
//!   the program issues it. Its size cannot change.
//! - `stats.json`: the disk's live counters ([`Disk::stats`]), taken when the file is
//!   opened, so each open reads the current values.

use crate::disk::Disk;
use fuser::{
    Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation, INodeNo, LockOwner, OpenFlags,
    ReplyAttr, ReplyData, ReplyDirectory, ReplyEmpty, ReplyEntry, ReplyOpen, ReplyStatfs, ReplyWrite, Request,
    WriteFlags,
};
use std::collections::HashMap;
use std::ffi::OsStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

const DISK: INodeNo = INodeNo(2);
const STATS: INodeNo = INodeNo(3);
/// `fallocate` modes (linux/falloc.h).
const FALLOC_FL_KEEP_SIZE: i32 = 0x01;
const FALLOC_FL_PUNCH_HOLE: i32 = 0x02;
const FALLOC_FL_ZERO_RANGE: i32 = 0x10;

/// The mounted file system; the disk is shared with the owner, who closes it after the
/// session ends.
pub struct DiskFs {
    disk: Arc<Mutex<Disk>>,
    /// `stats.json` contents per open handle.
    snapshots: Mutex<HashMap<u64, Vec<u8>>>,
    next_handle: AtomicU64,
    mounted: SystemTime,
    uid: u32,
    gid: u32,
}

impl DiskFs {
    pub fn new(disk: Arc<Mutex<Disk>>) -> DiskFs {
        DiskFs {
            disk,
            snapshots: Mutex::new(HashMap::new()),
            next_handle: AtomicU64::new(1),
            mounted: SystemTime::now(),
            uid: rustix::process::getuid().as_raw(),
            gid: rustix::process::getgid().as_raw(),
        }
    }

    fn disk(&self) -> std::sync::MutexGuard<'_, Disk> {
        // A panic while the lock was held leaves the disk as the failed request left it;
        // its own errors already refuse what cannot go on.
        self.disk.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn attr(&self, ino: INodeNo) -> Option<FileAttr> {
        let (kind, perm, size, nlink) = match ino {
            INodeNo::ROOT => (FileType::Directory, 0o755, 0, 2),
            DISK => (FileType::RegularFile, 0o644, self.disk().size_bytes(), 1),
            STATS => (FileType::RegularFile, 0o444, 0, 1),
            _ => return None,
        };
        Some(FileAttr {
            ino,
            size,
            blocks: size.div_ceil(512),
            atime: self.mounted,
            mtime: self.mounted,
            ctime: self.mounted,
            crtime: self.mounted,
            kind,
            perm,
            nlink,
            uid: self.uid,
            gid: self.gid,
            rdev: 0,
            flags: 0,
            blksize: 4096,
        })
    }
}

/// Attributes change only with the disk (never) or with each open (stats.json, read with
/// direct I/O): the kernel may cache them briefly.
const TTL: Duration = Duration::from_secs(1);

impl Filesystem for DiskFs {
    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        let ino = match (parent, name.to_str()) {
            (INodeNo::ROOT, Some("disk")) => DISK,
            (INodeNo::ROOT, Some("stats.json")) => STATS,
            _ => return reply.error(Errno::ENOENT),
        };
        match self.attr(ino) {
            Some(attr) => reply.entry(&TTL, &attr, Generation(0)),
            None => reply.error(Errno::ENOENT),
        }
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        match self.attr(ino) {
            Some(attr) => reply.attr(&TTL, &attr),
            None => reply.error(Errno::ENOENT),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn setattr(
        &self,
        _req: &Request,
        ino: INodeNo,
        _mode: Option<u32>,
        _uid: Option<u32>,
        _gid: Option<u32>,
        size: Option<u64>,
        _atime: Option<fuser::TimeOrNow>,
        _mtime: Option<fuser::TimeOrNow>,
        _ctime: Option<SystemTime>,
        _fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        let Some(attr) = self.attr(ino) else { return reply.error(Errno::ENOENT) };
        // The disk's size is the storage's capacity; a truncate to any other size is refused.
        if size.is_some_and(|s| s != attr.size) {
            return reply.error(Errno::EPERM);
        }
        reply.attr(&TTL, &attr)
    }

    fn readdir(&self, _req: &Request, ino: INodeNo, _fh: FileHandle, offset: u64, mut reply: ReplyDirectory) {
        if ino != INodeNo::ROOT {
            return reply.error(Errno::ENOTDIR);
        }
        let entries = [
            (INodeNo::ROOT, FileType::Directory, "."),
            (INodeNo::ROOT, FileType::Directory, ".."),
            (DISK, FileType::RegularFile, "disk"),
            (STATS, FileType::RegularFile, "stats.json"),
        ];
        for (i, (ino, kind, name)) in entries.into_iter().enumerate().skip(offset as usize) {
            if reply.add(ino, (i + 1) as u64, kind, name) {
                break;
            }
        }
        reply.ok()
    }

    fn open(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        let handle = self.next_handle.fetch_add(1, Ordering::Relaxed);
        match ino {
            DISK => {}
            STATS => {
                let mut text = serde_json::to_vec_pretty(&self.disk().stats()).unwrap_or_default();
                text.push(b'\n');
                self.snapshots.lock().unwrap_or_else(|p| p.into_inner()).insert(handle, text);
            }
            _ => return reply.error(Errno::EISDIR),
        }
        reply.opened(FileHandle(handle), FopenFlags::FOPEN_DIRECT_IO)
    }

    fn read(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        match ino {
            DISK => {
                let mut disk = self.disk();
                let len = (size as u64).min(disk.size_bytes().saturating_sub(offset)) as usize;
                match disk.read(offset, len) {
                    Ok(bytes) => reply.data(&bytes),
                    Err(e) => {
                        crate::note(format_args!("deltaflash mount: read at byte {offset}: {e}"));
                        reply.error(Errno::EIO)
                    }
                }
            }
            STATS => {
                let snapshots = self.snapshots.lock().unwrap_or_else(|p| p.into_inner());
                let text = snapshots.get(&u64::from(fh)).map_or(&[][..], Vec::as_slice);
                let start = (offset as usize).min(text.len());
                let end = (start + size as usize).min(text.len());
                reply.data(&text[start..end])
            }
            _ => reply.error(Errno::EISDIR),
        }
    }

    fn write(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        if ino != DISK {
            return reply.error(Errno::EACCES);
        }
        let mut disk = self.disk();
        if offset.saturating_add(data.len() as u64) > disk.size_bytes() {
            return reply.error(Errno::ENOSPC);
        }
        match disk.write(offset, data) {
            Ok(()) => reply.written(data.len() as u32),
            Err(e) => {
                crate::note(format_args!("deltaflash mount: write at byte {offset}: {e}"));
                reply.error(Errno::EIO)
            }
        }
    }

    fn flush(&self, _req: &Request, _ino: INodeNo, _fh: FileHandle, _lock_owner: LockOwner, reply: ReplyEmpty) {
        // close(2) is not a durability point; fsync is.
        reply.ok()
    }

    fn release(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        self.snapshots.lock().unwrap_or_else(|p| p.into_inner()).remove(&u64::from(fh));
        reply.ok()
    }

    fn fsync(&self, _req: &Request, ino: INodeNo, _fh: FileHandle, _datasync: bool, reply: ReplyEmpty) {
        if ino != DISK {
            return reply.ok();
        }
        match self.disk().flush() {
            Ok(()) => reply.ok(),
            Err(e) => {
                crate::note(format_args!("deltaflash mount: fsync: {e}"));
                reply.error(Errno::EIO)
            }
        }
    }

    fn fallocate(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        length: u64,
        mode: i32,
        reply: ReplyEmpty,
    ) {
        if ino != DISK {
            return reply.error(Errno::EACCES);
        }
        let mut disk = self.disk();
        if offset.saturating_add(length) > disk.size_bytes() {
            return reply.error(Errno::ENOSPC);
        }
        let result = match mode & !FALLOC_FL_KEEP_SIZE {
            // Allocating within the fixed size: every byte already exists.
            0 => Ok(()),
            FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE => disk.punch(offset, length),
            _ => return reply.error(Errno::EOPNOTSUPP),
        };
        match result {
            Ok(()) => reply.ok(),
            Err(e) => {
                crate::note(format_args!("deltaflash mount: fallocate at byte {offset}: {e}"));
                reply.error(Errno::EIO)
            }
        }
    }

    fn statfs(&self, _req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        let disk = self.disk();
        let blocks = disk.size_bytes() / disk.page_bytes() as u64;
        reply.statfs(blocks, 0, 0, 2, 0, disk.page_bytes() as u32, 255, disk.page_bytes() as u32)
    }
}
