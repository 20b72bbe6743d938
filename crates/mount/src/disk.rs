//! `Disk`: a storage's logical pages as a byte-addressed block device.
//!
//! The host (the FUSE front, a test) reads and writes byte ranges; the disk maps them onto
//! whole logical pages of one region of a [`PageDevice`] (a NoFTL region, or a partition
//! of any conventional FTL through `FtlVolume`). A range that covers part of a page is a
//! read-modify-write of that page, counted in `rmw_pages`, as a block device under a file
//! system does with sub-block writes. A punched hole trims the pages it covers whole and
//! writes zeros into the parts of pages at its ends.
//!
//! Time: every request is issued at the simulated time that corresponds to the wall time
//! since the disk was opened (the device's clock starts where its rebuild ended), so the
//! device model queues requests that arrive while earlier ones are still busy, as the
//! emulated SSD would. [`Latency::Counters`] only accumulates simulated time;
//! [`Latency::Emulate`] holds each request until the wall clock reaches its simulated
//! completion, so a program's own timings see the device (as FEMU does).

use flash::{PageDevice, RegionId};
use latency::LatencyHistogram;
use nand::{SimTime, SyncPoint};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// Whether requests wait for their simulated completion.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Latency {
    /// Requests return at host speed; simulated time is only reported.
    Counters,
    /// A request returns no earlier than its simulated completion.
    Emulate,
}

/// A request the storage refused or failed.
#[derive(Debug)]
pub struct DiskError(pub String);

impl std::fmt::Display for DiskError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Host-side counts of the requests the disk served.
#[derive(Clone, Debug, Default)]
struct HostCounts {
    read_requests: u64,
    read_bytes: u64,
    write_requests: u64,
    write_bytes: u64,
    page_reads: u64,
    page_writes: u64,
    rmw_pages: u64,
    trimmed_pages: u64,
    flushes: u64,
    errors: u64,
}

/// One region of a page device, served as bytes.
pub struct Disk {
    device: Box<dyn PageDevice>,
    region: RegionId,
    page_bytes: usize,
    pages: u32,
    latency: Latency,
    /// Wall time at `base_ns` of simulated time.
    opened: Instant,
    base_ns: SimTime,
    counts: HostCounts,
    read_latency: LatencyHistogram,
    write_latency: LatencyHistogram,
}

impl Disk {
    /// The disk over `region` of `device`, whose simulated clock stands at `now` (the end
    /// of its rebuild for a reopened image).
    pub fn new(device: Box<dyn PageDevice>, region: RegionId, now: SimTime, latency: Latency) -> Result<Disk, String> {
        if !device.keeps_data() {
            return Err("a mounted disk needs page data; drop --no-data".into());
        }
        let page_bytes = device.page_bytes();
        let pages = device.logical_pages(region);
        Ok(Disk {
            device,
            region,
            page_bytes,
            pages,
            latency,
            opened: Instant::now(),
            base_ns: now,
            counts: HostCounts::default(),
            read_latency: LatencyHistogram::new(),
            write_latency: LatencyHistogram::new(),
        })
    }

    /// Bytes the host can address.
    pub fn size_bytes(&self) -> u64 {
        self.pages as u64 * self.page_bytes as u64
    }

    pub fn page_bytes(&self) -> usize {
        self.page_bytes
    }

    /// The simulated time a request arriving now is issued at.
    fn now(&self) -> SimTime {
        self.base_ns + self.opened.elapsed().as_nanos() as SimTime
    }

    /// Waits, under [`Latency::Emulate`], until the wall clock reaches `end`.
    fn complete_at(&self, end: SimTime) {
        if self.latency == Latency::Emulate {
            let due = Duration::from_nanos(end.saturating_sub(self.base_ns));
            if let Some(wait) = due.checked_sub(self.opened.elapsed()) {
                std::thread::sleep(wait);
            }
        }
    }

    fn check_range(&self, offset: u64, len: u64) -> Result<(), DiskError> {
        match offset.checked_add(len) {
            Some(end) if end <= self.size_bytes() => Ok(()),
            _ => Err(DiskError(format!(
                "bytes {offset}..{} lie beyond the disk's {} bytes",
                offset.saturating_add(len),
                self.size_bytes()
            ))),
        }
    }

    fn fail<T>(&mut self, e: impl std::fmt::Display) -> Result<T, DiskError> {
        self.counts.errors += 1;
        Err(DiskError(e.to_string()))
    }

    /// Reads logical page `lpn` into `out` (zeros where never written or trimmed);
    /// returns when the read completed.
    fn read_page(&mut self, lpn: u32, now: SimTime, out: &mut [u8]) -> Result<SimTime, DiskError> {
        self.counts.page_reads += 1;
        match self.device.read(self.region, lpn, now) {
            Ok(Some(read)) => {
                out.copy_from_slice(&read.data[..out.len()]);
                Ok(read.timing.end_ns)
            }
            Ok(None) => {
                out.fill(0);
                Ok(now)
            }
            Err(e) => self.fail(format!("reading logical page {lpn}: {e}")),
        }
    }

    fn write_page(&mut self, lpn: u32, now: SimTime, data: &[u8]) -> Result<SimTime, DiskError> {
        self.counts.page_writes += 1;
        match self.device.write_pages(self.region, lpn, data, now) {
            Ok(timing) => Ok(timing.end_ns),
            Err(e) => self.fail(format!("writing logical page {lpn}: {e}")),
        }
    }

    /// Reads `len` bytes at `offset`.
    pub fn read(&mut self, offset: u64, len: usize) -> Result<Vec<u8>, DiskError> {
        self.check_range(offset, len as u64)?;
        let issued = self.now();
        let mut out = vec![0u8; len];
        let mut page = vec![0u8; self.page_bytes];
        let mut end = issued;
        for (lpn, in_page, at) in self.pieces(offset, len as u64) {
            end = end.max(self.read_page(lpn, issued, &mut page)?);
            out[at..at + in_page.len()].copy_from_slice(&page[in_page]);
        }
        self.counts.read_requests += 1;
        self.counts.read_bytes += len as u64;
        self.read_latency.record(end - issued);
        self.complete_at(end);
        Ok(out)
    }

    /// Writes `data` at `offset`; pages it covers in part are read, patched and written.
    pub fn write(&mut self, offset: u64, data: &[u8]) -> Result<(), DiskError> {
        self.check_range(offset, data.len() as u64)?;
        let issued = self.now();
        let end = self.write_at(issued, offset, data)?;
        self.counts.write_requests += 1;
        self.counts.write_bytes += data.len() as u64;
        self.write_latency.record(end - issued);
        self.complete_at(end);
        Ok(())
    }

    /// Writes `data` at `offset` piece by piece; returns when the last write completed.
    fn write_at(&mut self, issued: SimTime, offset: u64, data: &[u8]) -> Result<SimTime, DiskError> {
        let mut end = issued;
        for (lpn, in_page, at) in self.pieces(offset, data.len() as u64) {
            let bytes = &data[at..at + in_page.len()];
            let done = if in_page.len() == self.page_bytes {
                self.write_page(lpn, issued, bytes)?
            } else {
                self.patch(lpn, issued, in_page.start, bytes)?
            };
            end = end.max(done);
        }
        Ok(end)
    }

    /// Forgets `len` bytes at `offset`: pages covered whole are trimmed, the parts of
    /// pages at the ends are overwritten with zeros. Reads of the range return zeros.
    pub fn punch(&mut self, offset: u64, len: u64) -> Result<(), DiskError> {
        self.check_range(offset, len)?;
        let issued = self.now();
        let mut end = issued;
        let page_bytes = self.page_bytes;
        let zeros = vec![0u8; page_bytes];
        for (lpn, in_page, _) in self.pieces(offset, len) {
            if in_page.len() == page_bytes {
                self.counts.trimmed_pages += 1;
                match self.device.trim(self.region, lpn, issued) {
                    Ok(timing) => end = end.max(timing.map_or(issued, |t| t.end_ns)),
                    Err(e) => return self.fail(format!("trimming logical page {lpn}: {e}")),
                }
            } else {
                end = end.max(self.patch(lpn, issued, in_page.start, &zeros[..in_page.len()])?);
            }
        }
        self.complete_at(end);
        Ok(())
    }

    /// Read-modify-write of part of a page.
    fn patch(&mut self, lpn: u32, issued: SimTime, at: usize, bytes: &[u8]) -> Result<SimTime, DiskError> {
        self.counts.rmw_pages += 1;
        let mut page = vec![0u8; self.page_bytes];
        let read = self.read_page(lpn, issued, &mut page)?;
        page[at..at + bytes.len()].copy_from_slice(bytes);
        self.write_page(lpn, read, &page)
    }

    /// Makes every write that returned durable (a device flush: `fsync`).
    pub fn flush(&mut self) -> Result<(), DiskError> {
        self.counts.flushes += 1;
        let now = self.now();
        match self.device.sync(SyncPoint::Commit, now) {
            Ok(end) => {
                self.complete_at(end);
                Ok(())
            }
            Err(e) => self.fail(format!("flushing the device: {e}")),
        }
    }

    /// Flushes and hands the storage back, to be closed by its owner.
    pub fn close(mut self) -> Result<Box<dyn PageDevice>, String> {
        self.flush().map_err(|e| e.0)?;
        self.device.flush().map_err(|e| e.to_string())?;
        Ok(self.device)
    }

    /// The pieces of `offset..offset + len`: (logical page, byte range within it,
    /// position of the piece in the request).
    fn pieces(&self, offset: u64, len: u64) -> Vec<(u32, std::ops::Range<usize>, usize)> {
        let page = self.page_bytes as u64;
        let mut out = Vec::new();
        let mut pos = offset;
        while pos < offset + len {
            let lpn = pos / page;
            let start = (pos % page) as usize;
            let stop = ((offset + len - lpn * page).min(page)) as usize;
            out.push((lpn as u32, start..stop, (pos - offset) as usize));
            pos = (lpn + 1) * page;
        }
        out
    }

    /// The live counters as the JSON `stats.json` serves: host requests, flash work,
    /// simulated busy time per chip and latency percentiles.
    pub fn stats(&self) -> Value {
        let now = self.now();
        let elapsed_ns = now.saturating_sub(self.base_ns).max(1);
        let device = self.device.device();
        let dc = device.counters();
        let region = self.device.counters(self.region);
        let (gc_page_migrations, gc_erases) = match self.device.ftl_counters() {
            Some(f) => (f.gc_page_migrations, f.gc_erases),
            None => (region.gc_page_migrations, region.gc_erases),
        };
        let flash_programs = dc.page_programs + dc.reprograms + dc.copybacks;
        let chips = device.geometry().chips();
        let busy: Vec<u64> = (0..chips).map(|c| device.timelines().chip_busy_ns(c)).collect();
        let c = &self.counts;
        json!({
            "pid": std::process::id(),
            "page_bytes": self.page_bytes,
            "disk_bytes": self.size_bytes(),
            "latency_mode": match self.latency { Latency::Counters => "counters", Latency::Emulate => "emulate" },
            "simulated_seconds": elapsed_ns as f64 / 1e9,
            "read_requests": c.read_requests,
            "read_bytes": c.read_bytes,
            "write_requests": c.write_requests,
            "write_bytes": c.write_bytes,
            "host_reads": c.page_reads,
            "host_writes": c.page_writes,
            "rmw_pages": c.rmw_pages,
            "host_trims": c.trimmed_pages,
            "flushes": c.flushes,
            "errors": c.errors,
            "flash_programs": flash_programs,
            "flash_erases": dc.erases,
            "gc_page_migrations": gc_page_migrations,
            "gc_erases": gc_erases,
            "write_amplification": if c.page_writes == 0 { 0.0 } else { flash_programs as f64 / c.page_writes as f64 },
            "chip_busy_seconds": busy.iter().map(|&b| b as f64 / 1e9).collect::<Vec<_>>(),
            "chip_utilisation": busy.iter().map(|&b| b as f64 / elapsed_ns as f64).collect::<Vec<_>>(),
            "read_latency_us": self.read_latency.percentiles(),
            "write_latency_us": self.write_latency.percentiles(),
        })
    }
}
