//! flash — NoFTL: the DBMS manages raw flash itself, in regions.
//!
//! A [`Flash`] owns a [`nand::Device`] and the regions laid over disjoint sets of its
//! chips. Each [`Region`] maps logical pages to physical pages, writes out-of-place,
//! appends in place (`write_delta`, IPA §7), trims, collects garbage and levels wear.
//! The region layout is kept in the device's configuration area; the page maps are
//! rebuilt by scanning OOB bytes when a device is opened.
//!
//! Modules: [`spec`] (what a region is asked to be), [`region`] (the mechanism:
//! host operations in `region/mod.rs`, `alloc`, `gc`, `rebuild`),
//! [`policy`] (pure GC and wear-levelling choices), [`oob`] (the page OOB format),
//! [`layout`] (chip assignment and the stored layout), [`error`].

#![forbid(unsafe_code)]

pub mod error;
pub mod ftl;
pub mod ftl_volume;
mod heap;
pub mod ipl;
pub mod layout;
pub mod oob;
pub mod page_device;
pub mod policy;
pub mod region;
pub mod spec;
mod stored;

pub use error::{DeltaRefusal, Error};
pub use ftl_volume::FtlVolume;
pub use ipl::{IplConfig, IplStore};
pub use page_device::{IplCounters, PageDevice};
pub use policy::VictimPolicy;
pub use region::{ChipPages, Occupancy, RebuildReport, Region, RegionCounters, RegionRead, WearStats, WriteHint};
pub use spec::{GcConfig, IpaMode, RegionSpec, WearConfig};

use nand::{Device, OpTiming, SimTime};

/// Index of a region within its [`Flash`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RegionId(pub usize);

/// A device and its regions.
pub struct Flash {
    device: Device,
    regions: Vec<Region>,
}

impl Flash {
    /// Lays out fresh regions on a device (erasing what they cover) and stores the
    /// layout in the device's configuration area.
    pub fn format(mut device: Device, specs: Vec<RegionSpec>) -> Result<Flash, Error> {
        let assigned = layout::assign(device.geometry(), &[], &specs)?;
        let mut regions = Vec::with_capacity(specs.len());
        for (spec, chips) in specs.into_iter().zip(assigned) {
            regions.push(region::Region::format(spec, chips, &mut device, 0)?);
        }
        device.storage_mut().set_config_area(layout::encode(&regions))?;
        Ok(Flash { device, regions })
    }

    /// Opens a formatted device: reads the layout and rebuilds every region by scan,
    /// starting at `now`. Returns when the scan finished (simulated recovery time).
    pub fn open(device: Device, now: SimTime) -> Result<(Flash, SimTime), Error> {
        Flash::open_or_keep(device, now).map_err(|failed| failed.0)
    }

    /// [`Flash::open`] that hands the device back when the open fails. A rebuild may
    /// write (it rewrites the surviving parts of a torn write group), so a power cut can
    /// land in it; the caller powers the device on and opens it again.
    pub fn open_or_keep(mut device: Device, now: SimTime) -> Result<(Flash, SimTime), Box<(Error, Device)>> {
        let entries = match layout::decode(device.storage().config_area(), device.geometry()) {
            Ok(entries) => entries,
            Err(e) => return Err(Box::new((e, device))),
        };
        let mut regions = Vec::with_capacity(entries.len());
        let mut done = now;
        for (spec, chips) in entries {
            match region::Region::rebuild(spec, chips, &mut device, now) {
                Ok((region, end)) => {
                    done = done.max(end);
                    regions.push(region);
                }
                Err(e) => return Err(Box::new((e, device))),
            }
        }
        Ok((Flash { device, regions }, done))
    }

    /// Lays out one more region on chips no region holds yet (`CREATE REGION`), and
    /// stores the new layout.
    pub fn add_region(&mut self, spec: RegionSpec, now: SimTime) -> Result<RegionId, Error> {
        let chips = layout::assign(self.device.geometry(), &self.regions, std::slice::from_ref(&spec))?.remove(0);
        let region = region::Region::format(spec, chips, &mut self.device, now)?;
        self.regions.push(region);
        self.device.storage_mut().set_config_area(layout::encode(&self.regions))?;
        Ok(RegionId(self.regions.len() - 1))
    }

    pub fn device(&self) -> &Device {
        &self.device
    }
    pub fn into_device(self) -> Device {
        self.device
    }
    /// The heap bytes of every region's map and tables.
    pub fn mapping_bytes(&self) -> u64 {
        self.regions.iter().map(Region::mapping_bytes).sum()
    }

    pub fn regions(&self) -> &[Region] {
        &self.regions
    }
    pub fn region(&self, id: RegionId) -> &Region {
        &self.regions[id.0]
    }
    pub fn region_id(&self, name: &str) -> Option<RegionId> {
        self.regions.iter().position(|r| r.name() == name).map(RegionId)
    }

    pub fn read(&mut self, id: RegionId, lpn: u32, now: SimTime) -> Result<Option<RegionRead<'_>>, Error> {
        self.regions[id.0].read(&mut self.device, lpn, now)
    }
    /// A write-ahead hint for a host that knows its next writes: see
    /// [`Region::prefetch_write`].
    pub fn prefetch_write(&self, id: RegionId, lpn: u32, stage: WriteHint) {
        self.regions[id.0].prefetch_write(&self.device, lpn, stage);
    }
    pub fn write(&mut self, id: RegionId, lpn: u32, data: &[u8], now: SimTime) -> Result<OpTiming, Error> {
        self.regions[id.0].write(&mut self.device, lpn, data, now)
    }
    /// Writes k whole pages to `first_lpn..first_lpn + k` atomically under power cuts
    /// (see [`Region::write_group`]).
    pub fn write_group(&mut self, id: RegionId, first_lpn: u32, data: &[u8], now: SimTime) -> Result<OpTiming, Error> {
        self.regions[id.0].write_group(&mut self.device, first_lpn, data, now)
    }
    pub fn write_delta(
        &mut self,
        id: RegionId,
        lpn: u32,
        offset: usize,
        bytes: &[u8],
        now: SimTime,
    ) -> Result<OpTiming, Error> {
        self.regions[id.0].write_delta(&mut self.device, lpn, offset, bytes, now)
    }
    pub fn trim(&mut self, id: RegionId, lpn: u32, now: SimTime) -> Result<Option<OpTiming>, Error> {
        self.regions[id.0].trim(&mut self.device, lpn, now)
    }
    pub fn occupancy(&self, id: RegionId) -> Occupancy {
        self.regions[id.0].occupancy(&self.device)
    }

    /// Page states of each chip of a region (free, valid, appended, invalid, unused).
    pub fn chip_pages(&self, id: RegionId) -> Vec<ChipPages> {
        self.regions[id.0].chip_pages(&self.device)
    }

    /// Page states of each block of a region, per chip ([`Region::block_pages`]).
    pub fn block_pages(&self, id: RegionId) -> Vec<Vec<ChipPages>> {
        self.regions[id.0].block_pages(&self.device)
    }

    /// Makes the device durable where it has a durable form (an image file).
    pub fn flush(&mut self) -> Result<(), Error> {
        Ok(self.device.storage_mut().flush()?)
    }
}
