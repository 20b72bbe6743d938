//! The image file's write seam: the few file operations an open image makes after it
//! was read (write at an offset, `fdatasync`, punch a hole), behind one trait.
//!
//! The real file is one implementation; [`crate::image_faults`] has the test ones (a
//! disk that fails the N-th operation, and one that loses unsynced writes at a power
//! cut). Opening and creating an image read and write the real file directly: what
//! they write is made durable (`sync_all`) before the image is handed out.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

/// The file under an open image. Each call is one system call's worth of work on it.
pub trait ImageIo: Send {
    /// Writes all of `bytes` at `at` (a `pwrite` loop). On an error some prefix of
    /// `bytes` may have been written.
    fn write_all_at(&mut self, bytes: &[u8], at: u64) -> io::Result<()>;
    /// `fdatasync`: every write that returned before it is durable once it returns `Ok`.
    fn sync_data(&mut self) -> io::Result<()>;
    /// Frees `len` bytes from `at` (a hole reads as zeros); the file keeps its length.
    /// File systems without hole punching keep the bytes and return `Ok`.
    fn punch_hole(&mut self, at: u64, len: u64) -> io::Result<()>;
}

impl ImageIo for File {
    fn write_all_at(&mut self, bytes: &[u8], at: u64) -> io::Result<()> {
        FileExt::write_all_at(self, bytes, at)
    }

    fn sync_data(&mut self) -> io::Result<()> {
        File::sync_data(self)
    }

    fn punch_hole(&mut self, at: u64, len: u64) -> io::Result<()> {
        use rustix::fs::{fallocate, FallocateFlags};
        match fallocate(&*self, FallocateFlags::PUNCH_HOLE | FallocateFlags::KEEP_SIZE, at, len) {
            Ok(()) | Err(rustix::io::Errno::OPNOTSUPP) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }
}

/// Wraps the real file of an image being created or opened in a test layer
/// ([`crate::image_faults`]); the identity for a plain open.
pub type FileLayer = Box<dyn FnOnce(File) -> Box<dyn ImageIo>>;
