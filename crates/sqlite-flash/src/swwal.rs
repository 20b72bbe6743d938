//! SW-WAL (NoLgn-FTL paper §2.3, Fig. 1b): SQLite's `-wal` file stored frame-aligned
//! on flash, and checkpoints that remap instead of copying. A child of the file layer
//! (`files.rs` includes it), so it works on the store's own state.
//!
//! Layout of a `-wal` file when the store runs SW-WAL (`Table::sw_wal`): file page 0
//! holds the 32-byte WAL header (rest zero); file page `k + 1` holds frame `k`'s page
//! data, its 24-byte frame header rides in that flash page's OOB as the FTL tag
//! ([`flash::ftl::Ftl::write_tagged`]). A frame costs one flash page, not the two that
//! its `24 + page size` bytes straddle in the plain layout. SQLite sees the usual byte
//! layout: reads reassemble header and data, writes split them. The frame header SQLite
//! writes just before the page data waits in RAM for it (one program for both); any
//! other request first writes it alone. SQLite's page size must be the flash page size.
//!
//! Checkpoint by remapping. The rule, exact by construction: a write to a main
//! database file of one whole page, page-aligned, whose bytes equal the frame data
//! SQLite last read from that database's WAL, with no WAL write since that read, is a
//! remap of the database page's logical page onto the frame's (SQLite's checkpoint
//! reads each frame and writes its bytes to the database; nothing else writes bytes it
//! just read from the WAL). The page then reads exactly those bytes either way, so the
//! rule cannot change what SQLite sees; it only decides when a program is saved.
//! Sharing, not moving: the frame's logical page keeps its flash page, so SQLite reads
//! the WAL after a partial checkpoint (and WAL recovery after a cut) as before.
//!
//! Frame pages go through the file layer's page cache like any page, their headers as
//! tags; a queued remap whose frame is still dirty there has the frame written back
//! first, when the remaps reach the FTL (a frame is never rewritten while a remap from
//! it is queued: the rewrite flushes the remaps first).
//!
//! Fault model: remaps queue in RAM (reads of a queued page go to the frame) until the
//! next sync or flush, which hands them to the FTL in one batch ([`Ftl::remap`]: a
//! record page per ~340 remaps, each remap atomic): they behave as writes in a volatile
//! cache, which SQLite's WAL already allows for. SQLite restarts (overwrites) the WAL
//! only after a checkpoint that reached the WAL's end synced the database (a partial
//! checkpoint syncs nothing), so a cut before that sync leaves some database pages old
//! and a WAL that still has every frame, and recovery checkpoints again. A queued remap
//! whose frame page is about to be overwritten or trimmed is flushed first, whoever
//! asks. The write of a frame is one page program (data and header together or not
//! at all).

use super::FileStore;
use crate::error::Error;
use flash::ftl::TAG_BYTES;
use nand::SimTime;
use std::collections::{BTreeMap, HashMap};

/// Bytes of SQLite's WAL header.
const WAL_HEADER_BYTES: u64 = 32;
/// Bytes of a WAL frame header (the FTL tag).
const FRAME_HEADER_BYTES: u64 = TAG_BYTES as u64;
/// The suffix SQLite gives a database's WAL.
const WAL_SUFFIX: &str = "-wal";

/// A frame header as stored in its page's OOB (`None`: an untagged page).
type Tag = Option<[u8; TAG_BYTES]>;

/// SW-WAL's state in RAM.
#[derive(Default)]
pub(super) struct SwWal {
    /// A frame header written before its page data: (WAL, frame, header).
    pending_header: Option<(String, u64, [u8; TAG_BYTES])>,
    /// The frame data SQLite last read whole: (WAL, its logical page, the bytes).
    last_frame: Option<(String, u32, Vec<u8>)>,
    /// Queued remaps, by database lpn.
    queued: BTreeMap<u32, Queued>,
    /// Frame lpns of queued remaps, with how many.
    sources: HashMap<u32, u32>,
}

/// A remap waiting in RAM: the frame page the database page will share, and the bytes
/// SQLite wrote to the database page (the frame's data).
struct Queued {
    frame: u32,
    bytes: Vec<u8>,
}

/// File pages a frame-aligned WAL of `size` bytes spans.
fn wal_pages(size: u64, page_bytes: u64) -> u64 {
    if size == 0 {
        return 0;
    }
    1 + size.saturating_sub(WAL_HEADER_BYTES).div_ceil(FRAME_HEADER_BYTES + page_bytes)
}

impl FileStore {
    /// Whether `name` is stored frame-aligned (a WAL of a store running SW-WAL).
    pub(super) fn frame_aligned(&self, name: &str) -> bool {
        self.sw_wal.is_some() && name.ends_with(WAL_SUFFIX)
    }

    fn sw(&mut self) -> &mut SwWal {
        self.sw_wal.get_or_insert_with(SwWal::default)
    }

    /// The logical page a queued remap sends reads of `lpn` to.
    pub(super) fn resolve(&self, lpn: u32) -> u32 {
        self.sw_wal.as_ref().and_then(|s| s.queued.get(&lpn)).map_or(lpn, |q| q.frame)
    }

    /// Before `lpn` is written or trimmed: a queued remap onto it is dropped (the new
    /// bytes win), and queued remaps from it are made durable first.
    pub(super) fn before_overwrite(&mut self, lpn: u32) -> Result<(), Error> {
        let Some(sw) = self.sw_wal.as_mut() else { return Ok(()) };
        if let Some(Queued { frame: src, .. }) = sw.queued.remove(&lpn) {
            if let Some(n) = sw.sources.get_mut(&src) {
                *n -= 1;
                if *n == 0 {
                    sw.sources.remove(&src);
                }
            }
        }
        if sw.sources.contains_key(&lpn) {
            self.flush_remaps()?;
        }
        Ok(())
    }

    /// Writes a waiting frame header, then hands the queued remaps to the FTL: first the
    /// frame pages they share that are still dirty, written back together as a sync
    /// writes, then the remaps in one batch. Afterwards the page cache keeps each
    /// remapped database page's bytes, as it keeps a page written back: a checkpoint's
    /// pages stay cached whether their write was a program or a remap (a frame page's
    /// bytes and tag do not change).
    pub(super) fn flush_remaps(&mut self) -> Result<(), Error> {
        if self.sw_wal.is_none() {
            return Ok(());
        }
        self.flush_header()?;
        let sw = self.sw();
        let queued = std::mem::take(&mut sw.queued);
        let mut sources: Vec<u32> = sw.sources.drain().map(|(src, _)| src).collect();
        sources.sort_unstable();
        self.write_back_dirty(&sources)?;
        // Queuing a remap dropped its database page from the page cache (`discard_dirty`),
        // and reads while it waited went to the frame: nothing cached under it is stale.
        let pairs: Vec<(u32, u32)> = queued.iter().map(|(&dst, q)| (dst, q.frame)).collect();
        if let Some(t) = self.ftl.remap(&pairs, self.now)? {
            self.now = self.now.max(t.end_ns);
        }
        for (dst, q) in queued {
            self.clean.put(dst, &q.bytes, None);
        }
        Ok(())
    }

    /// The checkpoint rule (module doc): remaps instead of writing when it applies.
    pub(super) fn try_remap_write(&mut self, name: &str, offset: u64, data: &[u8]) -> Result<bool, Error> {
        let pb = self.page_bytes as u64;
        let Some(sw) = self.sw_wal.as_mut() else { return Ok(false) };
        if data.len() as u64 != pb || !offset.is_multiple_of(pb) || name.ends_with(WAL_SUFFIX) {
            return Ok(false);
        }
        let src = match &sw.last_frame {
            Some((wal, lpn, bytes)) if wal.strip_suffix(WAL_SUFFIX) == Some(name) && bytes == data => *lpn,
            _ => return Ok(false),
        };
        sw.last_frame = None;
        if offset > self.entry(name)?.size {
            return Ok(false);
        }
        let index = offset / pb;
        self.ensure_pages(name, index + 1)?;
        let dst = self.lpn(name, index)?;
        self.before_overwrite(dst)?;
        self.discard_dirty(dst);
        let sw = self.sw();
        sw.queued.insert(dst, Queued { frame: src, bytes: data.to_vec() });
        *sw.sources.entry(src).or_default() += 1;
        self.counters.write_bytes += pb;
        if offset + pb > self.entry(name)?.size {
            self.entry_mut(name)?.size = offset + pb;
            self.dirty = true;
        }
        Ok(true)
    }

    /// A frame header that waited for page data that did not come: written alone.
    fn flush_header(&mut self) -> Result<(), Error> {
        let Some((wal, frame, header)) = self.sw_wal.as_mut().and_then(|s| s.pending_header.take()) else {
            return Ok(());
        };
        let now = self.now;
        let (page, _, ready) = self.wal_page(&wal, frame + 1, now)?;
        self.now = self.write_wal_page(&wal, frame + 1, &page, Some(&header), ready)?;
        Ok(())
    }

    /// A WAL file page's bytes and tag (zeros and none past the file's pages or never
    /// written); returns when the read ended.
    fn wal_page(&mut self, wal: &str, index: u64, now: SimTime) -> Result<(Vec<u8>, Tag, SimTime), Error> {
        let page = vec![0u8; self.page_bytes];
        let size = self.entry(wal)?.size;
        if index >= wal_pages(size, self.page_bytes as u64) {
            return Ok((page, None, now));
        }
        let lpn = self.lpn(wal, index)?;
        let (got, ready) = self.fetch(lpn, true, now)?;
        Ok(match got {
            Some((data, tag)) => (data, tag, ready),
            None => (page, None, ready),
        })
    }

    /// Writes one WAL file page (with a frame header as its tag, or none for the WAL
    /// header page) into the page cache; returns when any writeback it caused ended.
    fn write_wal_page(
        &mut self,
        wal: &str,
        index: u64,
        page: &[u8],
        tag: Option<&[u8; TAG_BYTES]>,
        now: SimTime,
    ) -> Result<SimTime, Error> {
        self.ensure_pages(wal, index + 1)?;
        let lpn = self.lpn(wal, index)?;
        self.put(lpn, page, tag.copied(), now)
    }

    /// SQLite's read of a frame-aligned WAL.
    pub(super) fn wal_read(&mut self, wal: &str, offset: u64, buf: &mut [u8]) -> Result<usize, Error> {
        self.flush_header()?;
        let size = self.entry(wal)?.size;
        let avail = size.saturating_sub(offset).min(buf.len() as u64) as usize;
        buf[avail..].fill(0);
        let (pb, frame) = (self.page_bytes as u64, FRAME_HEADER_BYTES + self.page_bytes as u64);
        let issued = self.now;
        let mut end = issued;
        // The last page read, when one request spans a frame's header and data.
        let mut cached: Option<(u64, Vec<u8>, Tag)> = None;
        let mut pos = 0;
        while pos < avail {
            let at = offset + pos as u64;
            let (index, from, n) = if at < WAL_HEADER_BYTES {
                (0, at, (WAL_HEADER_BYTES - at).min((avail - pos) as u64))
            } else {
                let within = (at - WAL_HEADER_BYTES) % frame;
                let index = (at - WAL_HEADER_BYTES) / frame + 1;
                let room = if within < FRAME_HEADER_BYTES { FRAME_HEADER_BYTES - within } else { frame - within };
                (index, within, room.min((avail - pos) as u64))
            };
            if cached.as_ref().is_none_or(|c| c.0 != index) {
                let (page, tag, ready) = self.wal_page(wal, index, issued)?;
                end = end.max(ready);
                cached = Some((index, page, tag));
            }
            let Some((_, page, tag)) = &cached else { unreachable!("just filled") };
            let target = &mut buf[pos..pos + n as usize];
            match (index, from) {
                (0, _) => target.copy_from_slice(&page[from as usize..(from + n) as usize]),
                (_, f) if f < FRAME_HEADER_BYTES => {
                    target.copy_from_slice(&tag.unwrap_or([0; TAG_BYTES])[f as usize..(f + n) as usize])
                }
                (_, f) => {
                    let d = (f - FRAME_HEADER_BYTES) as usize;
                    target.copy_from_slice(&page[d..d + n as usize]);
                    // Only a written frame (tagged) can be a remap's source; one still
                    // in the page cache is written back before the remap.
                    if d == 0 && n == pb && tag.is_some() {
                        let lpn = self.lpn(wal, index)?;
                        self.sw().last_frame = Some((wal.to_string(), lpn, page.clone()));
                    }
                }
            }
            pos += n as usize;
        }
        self.now = end;
        self.counters.read_bytes += avail as u64;
        Ok(avail)
    }

    /// SQLite's write to a frame-aligned WAL.
    pub(super) fn wal_write(&mut self, wal: &str, offset: u64, data: &[u8]) -> Result<(), Error> {
        let (pb, frame) = (self.page_bytes as u64, FRAME_HEADER_BYTES + self.page_bytes as u64);
        self.sw().last_frame = None;
        let issued = self.now;
        let mut end = issued;
        let mut pos = 0;
        while pos < data.len() {
            let at = offset + pos as u64;
            let left = (data.len() - pos) as u64;
            if at < WAL_HEADER_BYTES {
                self.flush_header()?;
                let n = (WAL_HEADER_BYTES - at).min(left) as usize;
                let (mut page, _, ready) = self.wal_page(wal, 0, issued)?;
                page[at as usize..at as usize + n].copy_from_slice(&data[pos..pos + n]);
                check_page_size(&page, pb)?;
                end = end.max(self.write_wal_page(wal, 0, &page, None, ready)?);
                pos += n;
                continue;
            }
            let k = (at - WAL_HEADER_BYTES) / frame;
            let within = (at - WAL_HEADER_BYTES) % frame;
            if within < FRAME_HEADER_BYTES {
                let n = (FRAME_HEADER_BYTES - within).min(left) as usize;
                if within == 0 && n == TAG_BYTES {
                    let mut header = [0u8; TAG_BYTES];
                    header.copy_from_slice(&data[pos..pos + TAG_BYTES]);
                    let rest = data.len() - pos - TAG_BYTES;
                    if rest as u64 >= pb {
                        // Header and data in one request: one program.
                        let body = &data[pos + TAG_BYTES..pos + TAG_BYTES + pb as usize];
                        self.flush_header()?;
                        end = end.max(self.write_wal_page(wal, k + 1, body, Some(&header), issued)?);
                        pos += TAG_BYTES + pb as usize;
                        continue;
                    }
                    if rest == 0 {
                        // SQLite writes the data next: wait for it.
                        self.flush_header()?;
                        self.sw().pending_header = Some((wal.to_string(), k, header));
                        pos += TAG_BYTES;
                        continue;
                    }
                }
                self.flush_header()?;
                let (page, tag, ready) = self.wal_page(wal, k + 1, issued)?;
                let mut tag = tag.unwrap_or([0; TAG_BYTES]);
                tag[within as usize..within as usize + n].copy_from_slice(&data[pos..pos + n]);
                end = end.max(self.write_wal_page(wal, k + 1, &page, Some(&tag), ready)?);
                pos += n;
                continue;
            }
            let d = (within - FRAME_HEADER_BYTES) as usize;
            let n = (pb as usize - d).min(left as usize);
            let waiting = match self.sw().pending_header.take() {
                Some((w, f, h)) if w == wal && f == k => Some(h),
                other => {
                    self.sw().pending_header = other;
                    self.flush_header()?;
                    None
                }
            };
            let (mut page, tag, ready) = if d == 0 && n == pb as usize && waiting.is_some() {
                (vec![0u8; pb as usize], None, issued)
            } else {
                self.wal_page(wal, k + 1, issued)?
            };
            page[d..d + n].copy_from_slice(&data[pos..pos + n]);
            let tag = waiting.or(tag).unwrap_or([0; TAG_BYTES]);
            end = end.max(self.write_wal_page(wal, k + 1, &page, Some(&tag), ready)?);
            pos += n;
        }
        self.now = end;
        self.counters.write_bytes += data.len() as u64;
        let end_offset = offset + data.len() as u64;
        if end_offset > self.entry(wal)?.size {
            self.entry_mut(wal)?.size = end_offset;
            self.dirty = true;
        }
        Ok(())
    }

    /// Before a WAL is deleted: nothing may refer to its pages any more.
    pub(super) fn forget_wal(&mut self, wal: &str) {
        if let Some(sw) = self.sw_wal.as_mut() {
            sw.last_frame = None;
            if sw.pending_header.as_ref().is_some_and(|(w, _, _)| w == wal) {
                sw.pending_header = None;
            }
        }
    }

    /// SQLite's truncate of a frame-aligned WAL: frees the pages past the new size.
    pub(super) fn wal_truncate(&mut self, wal: &str, size: u64) -> Result<(), Error> {
        self.flush_header()?;
        self.sw().last_frame = None;
        let pb = self.page_bytes as u64;
        let entry = self.files.get_mut(wal).ok_or_else(|| Error::NoSuchFile(wal.to_string()))?;
        let old = entry.size;
        if size == old {
            return Ok(());
        }
        entry.size = size;
        self.dirty = true;
        if size > old {
            return Ok(());
        }
        let freed = super::split_off_pages(&mut entry.extents, wal_pages(size, pb));
        self.free_extents(freed)
    }
}

/// Refuses a WAL header whose page size is not the flash page size (the frames would
/// not align with flash pages).
fn check_page_size(header_page: &[u8], page_bytes: u64) -> Result<(), Error> {
    let magic = u32::from_be_bytes([header_page[0], header_page[1], header_page[2], header_page[3]]);
    if magic & !1 != 0x377f_0682 {
        return Ok(());
    }
    let size = match u32::from_be_bytes([header_page[8], header_page[9], header_page[10], header_page[11]]) {
        1 => 65_536,
        s => s as u64,
    };
    if size != page_bytes {
        return Err(Error::CorruptTable(format!(
            "SW-WAL needs SQLite's page size to be the flash page size ({page_bytes} bytes); the WAL header says {size} bytes (set PRAGMA page_size before the database has data)"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wal_pages_count_the_header_page_and_each_frame() {
        assert_eq!(wal_pages(0, 4096), 0);
        assert_eq!(wal_pages(32, 4096), 1);
        assert_eq!(wal_pages(32 + 24, 4096), 2);
        assert_eq!(wal_pages(32 + 3 * 4120, 4096), 4);
    }

    #[test]
    fn a_wal_header_with_another_page_size_is_refused() {
        let mut page = vec![0u8; 64];
        page[..4].copy_from_slice(&0x377f_0683u32.to_be_bytes());
        page[8..12].copy_from_slice(&1024u32.to_be_bytes());
        let err = check_page_size(&page, 4096).unwrap_err().to_string();
        assert!(err.contains("1024") && err.contains("4096"), "{err}");
        page[8..12].copy_from_slice(&4096u32.to_be_bytes());
        assert!(check_page_size(&page, 4096).is_ok());
    }
}
