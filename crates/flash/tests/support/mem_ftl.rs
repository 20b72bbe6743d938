//! A test-only FTL double: logical pages in a map, no flash behind them. It stands in
//! for the real FTLs where a test is about what sits on top of the `Ftl` trait.

use flash::ftl::{Ftl, FtlCounters, FtlKind, FtlRead};
use flash::Error;
use nand::{Device, OpTiming, SimTime};
use std::collections::HashMap;

/// Each operation takes `OP_NS` of simulated time.
pub struct MemFtl {
    device: Device,
    pages: HashMap<u32, Vec<u8>>,
    logical_pages: u32,
    counters: FtlCounters,
}

const OP_NS: u64 = 1_000;

impl MemFtl {
    pub fn new(device: Device, logical_pages: u32) -> MemFtl {
        MemFtl { device, pages: HashMap::new(), logical_pages, counters: FtlCounters::default() }
    }

    fn check(&self, lpn: u32) -> Result<(), Error> {
        if lpn >= self.logical_pages {
            return Err(Error::LpnOutOfRange { region: "ftl".into(), lpn, logical_pages: self.logical_pages });
        }
        Ok(())
    }
}

impl Ftl for MemFtl {
    fn kind(&self) -> FtlKind {
        FtlKind::Page
    }
    fn logical_pages(&self) -> u32 {
        self.logical_pages
    }
    fn page_bytes(&self) -> usize {
        self.device.geometry().page_bytes as usize
    }
    fn device(&self) -> &Device {
        &self.device
    }
    fn device_mut(&mut self) -> &mut Device {
        &mut self.device
    }
    fn into_device(self: Box<Self>) -> Device {
        self.device
    }
    fn read(&mut self, lpn: u32, now: SimTime) -> Result<Option<FtlRead<'_>>, Error> {
        self.check(lpn)?;
        self.counters.host_reads += 1;
        let timing = OpTiming { start_ns: now, end_ns: now + OP_NS };
        Ok(self.pages.get(&lpn).map(|p| FtlRead { timing, data: p }))
    }
    fn write(&mut self, lpn: u32, data: &[u8], now: SimTime) -> Result<OpTiming, Error> {
        self.check(lpn)?;
        if data.len() != self.page_bytes() {
            return Err(Error::WrongPayloadSize { got: data.len(), expected: self.page_bytes() });
        }
        self.counters.host_writes += 1;
        self.counters.flash_programs += 1;
        self.pages.insert(lpn, data.to_vec());
        Ok(OpTiming { start_ns: now, end_ns: now + OP_NS })
    }
    fn trim(&mut self, lpn: u32, _now: SimTime) -> Result<Option<OpTiming>, Error> {
        self.check(lpn)?;
        self.counters.host_trims += 1;
        self.pages.remove(&lpn);
        Ok(None)
    }
    fn counters(&self) -> FtlCounters {
        self.counters
    }

    /// The map and the pages it holds itself (the device keeps none of them).
    fn mapping_bytes(&self) -> u64 {
        let buckets = self.pages.capacity() * (size_of::<(u32, Vec<u8>)>() + 1);
        (buckets + self.pages.values().map(Vec::capacity).sum::<usize>()) as u64
    }
}
