//! The open image file behind a [`MemoryStorage`](super::MemoryStorage): every
//! mutation of the storage is written through at its offset in the version 3 layout
//! ([`crate::image_format`]), and synced as the image's [`SyncMode`] says. Created by
//! [`crate::image`] when it creates or opens an image.

use super::{Span, SyncPoint};
use crate::durable::DurablePoint;
use crate::error::Error;
use crate::geometry::{BlockId, Ppn};
use crate::image_format::{block_record, config_slot, ImageError, Layout, SyncMode, MAX_CONFIG_BYTES};
use crate::image_io::ImageIo;
use std::collections::HashSet;
use std::io;
use std::path::{Path, PathBuf};

/// The open image file behind a storage: it writes each mutation through at
/// its offset and syncs as the mode says. Holds the file's lock while open.
pub(crate) struct ImageFile {
    file: Box<dyn ImageIo>,
    path: PathBuf,
    read_only: bool,
    sync: SyncMode,
    layout: Layout,
    /// Generation of the newest valid configuration, and the slot holding it.
    config_generation: u64,
    config_slot: usize,
    /// The first failed write-through: the file lags memory from there on, so every
    /// later mutation is refused with it.
    failed: Option<Error>,
    /// Writes since the last `fdatasync`.
    dirty: bool,
    /// Blocks programmed or erased since the last `fdatasync` (kept under `Full`).
    unsynced_blocks: HashSet<u32>,
}

impl ImageFile {
    /// An open image file at `path` whose newest configuration is `config_generation`
    /// in slot `config_slot`, nothing written since it was last synced.
    pub(crate) fn new(
        file: Box<dyn ImageIo>,
        path: PathBuf,
        read_only: bool,
        sync: SyncMode,
        layout: Layout,
        config_generation: u64,
        config_slot: usize,
    ) -> ImageFile {
        ImageFile {
            file,
            path,
            read_only,
            sync,
            layout,
            config_generation,
            config_slot,
            failed: None,
            dirty: false,
            unsynced_blocks: HashSet::new(),
        }
    }

    pub(crate) fn writable(&self, operation: &'static str) -> Result<(), Error> {
        if self.read_only {
            return Err(Error::ReadOnly { path: self.path.display().to_string(), operation });
        }
        self.failed.clone().map_or(Ok(()), Err)
    }

    fn pwrite(&mut self, at: u64, bytes: &[u8]) -> Result<(), Error> {
        self.dirty = true;
        let written = self.file.write_all_at(bytes, at);
        written.map_err(|e| self.fail(at, e))
    }

    /// Records a failed write or sync: the file may lag memory from here on (a failed
    /// `fdatasync` may have dropped earlier writes), so every later mutation is refused.
    fn fail(&mut self, offset: u64, e: io::Error) -> Error {
        let error = Error::Io { path: self.path.display().to_string(), offset, message: e.to_string() };
        self.failed = Some(error.clone());
        error
    }

    /// `fdatasync`, if anything was written since the last one. A failure is recorded
    /// like a failed write (Linux may drop the dirty pages a failed `fdatasync` was
    /// writing, so a retry that succeeds would not make them durable).
    fn sync_if_dirty(&mut self) -> io::Result<()> {
        if self.dirty {
            if let Err(e) = self.file.sync_data() {
                self.fail(0, io::Error::new(e.kind(), format!("fdatasync: {e}")));
                return Err(e);
            }
            self.dirty = false;
            self.unsynced_blocks.clear();
        }
        Ok(())
    }

    /// [`ImageFile::sync_if_dirty`] inside a device operation.
    fn sync_now(&mut self) -> Result<(), Error> {
        self.sync_if_dirty().map_err(|e| Error::Io {
            path: self.path.display().to_string(),
            offset: 0,
            message: format!("fdatasync: {e}"),
        })
    }

    /// Under `Full`, keeps a power loss to states a NAND power cut can leave: a disk may
    /// keep any subset of the writes since the last `fdatasync`, so before the second
    /// program or erase of a block since then, and before any erase, the file is
    /// synced. A cut then loses or tears at most a block's last operation, never an
    /// earlier page of it (which the flash layers' rebuilds would refuse as corrupt),
    /// and never an erase without the copies made before it.
    fn order_before(&mut self, block: u32, erase: bool) -> Result<(), Error> {
        if self.sync != SyncMode::Full {
            return Ok(());
        }
        if erase || self.unsynced_blocks.contains(&block) {
            self.sync_now()?;
        }
        self.unsynced_blocks.insert(block);
        Ok(())
    }

    /// Writes a program through: `raw` is the page's raw bytes after it (empty for a
    /// metadata-only device), `count` its new program count.
    pub(crate) fn write_program(
        &mut self,
        ppn: Ppn,
        count: u8,
        raw: &[u8],
        spans: &[Span],
        first: bool,
    ) -> Result<(), Error> {
        self.order_before(ppn.0 / self.layout.pages_per_block as u32, false)?;
        let page_at = self.layout.page_at(ppn);
        let count_at = self.layout.counts_at + ppn.0 as u64;
        if first {
            if !raw.is_empty() {
                self.pwrite(page_at, raw)?;
            }
            return self.pwrite(count_at, &[count]);
        }
        self.pwrite(count_at, &[count])?;
        if !raw.is_empty() {
            for span in spans {
                let range = span.offset..span.offset + span.bytes.len();
                self.pwrite(page_at + span.offset as u64, &raw[range])?;
            }
        }
        Ok(())
    }

    /// Writes an erase through: the first `erased_pages` pages of `block` are erased
    /// and it has `erase_count` cycles; `complete` clears its needs-erase mark.
    pub(crate) fn write_erase(
        &mut self,
        block: BlockId,
        erase_count: u32,
        erased_pages: u32,
        complete: bool,
    ) -> Result<(), Error> {
        self.order_before(block.0, true)?;
        let record_at = self.layout.block_at(block);
        self.pwrite(record_at, &block_record(erase_count, true))?;
        let counts_at = self.layout.counts_at + block.0 as u64 * self.layout.pages_per_block;
        self.pwrite(counts_at, &vec![0; erased_pages as usize])?;
        self.punch_pages(self.layout.page_at(Ppn(block.0 * self.layout.pages_per_block as u32)), erased_pages)?;
        if complete {
            self.pwrite(record_at, &block_record(erase_count, false))?;
        }
        Ok(())
    }

    /// Frees the disk space of `pages` erased pages from `at` (a hole reads as zeros,
    /// so bytes of a page whose program count reached the disk before its data after a
    /// power loss read as a torn program, never as the page's content before the erase).
    /// File systems without hole punching keep the stale bytes, which the zero program
    /// counts already hide.
    fn punch_pages(&mut self, at: u64, pages: u32) -> Result<(), Error> {
        self.dirty = true;
        let punched = self.file.punch_hole(at, pages as u64 * self.layout.raw_page_bytes);
        punched.map_err(|e| self.fail(at, e))
    }

    /// Writes a new configuration into the older slot and syncs it (unless `Off`).
    pub(crate) fn write_config(&mut self, bytes: &[u8]) -> Result<(), Error> {
        if bytes.len() > MAX_CONFIG_BYTES as usize {
            return Err(Error::OutOfRange {
                what: "configuration area bytes",
                value: bytes.len() as u64,
                limit: MAX_CONFIG_BYTES as u64,
            });
        }
        let slot = 1 - self.config_slot;
        self.pwrite(Layout::slot_at(slot), &config_slot(self.config_generation + 1, bytes))?;
        if self.sync != SyncMode::Off {
            self.sync_now()?;
        }
        self.config_generation += 1;
        self.config_slot = slot;
        Ok(())
    }

    /// Syncs as the mode says; true when everything written so far is durable.
    pub(crate) fn sync(&mut self, point: SyncPoint) -> Result<bool, ImageError> {
        let wanted = match self.sync {
            SyncMode::Off => false,
            SyncMode::Normal => point != SyncPoint::Commit,
            SyncMode::Full => true,
        };
        if !wanted {
            return Ok(!self.dirty && self.failed.is_none());
        }
        // A write that failed before: the file lacks it, so this point is not durable.
        if let Some(failed) = &self.failed {
            return Err(ImageError::Io { path: self.path.clone(), source: io::Error::other(failed.to_string()) });
        }
        self.sync_if_dirty().map_err(|source| ImageError::Io { path: self.path.clone(), source })?;
        Ok(!self.dirty && self.failed.is_none())
    }

    /// Generation of the newest configuration written.
    pub(crate) fn config_generation(&self) -> u64 {
        self.config_generation
    }

    /// Writes the durable point entries of `blocks`, and its configuration generation
    /// if `config` (after a sync made the device's writes durable); syncs them at a
    /// checkpoint.
    pub(crate) fn write_durable_point(
        &mut self,
        durable: &DurablePoint,
        blocks: &[u32],
        config: bool,
        point: SyncPoint,
    ) -> Result<(), ImageError> {
        if self.read_only || (blocks.is_empty() && !config) {
            return Ok(());
        }
        let as_image_error = |path: &Path, e: Error| ImageError::Io { path: path.into(), source: io::Error::other(e) };
        if config {
            let at = self.layout.durable_config_at();
            self.pwrite(at, &durable.config_generation().to_le_bytes()).map_err(|e| as_image_error(&self.path, e))?;
        }
        for &b in blocks {
            let entry = durable.entry(b);
            let (counts_at, erase_at) = (self.layout.durable_counts_at(b), self.layout.durable_erase_at(b));
            self.pwrite(counts_at, entry.counts).map_err(|e| as_image_error(&self.path, e))?;
            self.pwrite(erase_at, &entry.erase.to_le_bytes()).map_err(|e| as_image_error(&self.path, e))?;
        }
        if point == SyncPoint::Checkpoint {
            self.sync(point)?;
        }
        Ok(())
    }
}
