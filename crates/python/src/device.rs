//! An emulated NAND device with NoFTL regions (`flash::Flash`) for small experiments
//! from Python: page writes, in-place appends (`write_delta`), reads, trims and the
//! device's and regions' counters. Operations are issued one at a time: each starts at
//! the device's simulated clock, which then moves to its completion, so a returned
//! latency is the operation's own (no queueing behind others).

use crate::failure;
use flash::{Flash, IpaMode, RegionId, RegionSpec};
use nand::SimTime;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use workloads::config::DeviceConfig;
use workloads::limits::quote;

/// An in-memory emulated device and its regions.
#[pyclass(module = "deltaflash._deltaflash", unsendable)]
pub struct Device {
    flash: Flash,
    now_ns: SimTime,
}

impl Device {
    fn region(&self, name: &str) -> PyResult<RegionId> {
        self.flash.region_id(name).ok_or_else(|| {
            let names: Vec<&str> = self.flash.regions().iter().map(|r| r.name()).collect();
            failure(format!("no region {} (regions: {})", quote(name), names.join(", ")))
        })
    }

    /// Moves the clock to an operation's completion; returns its latency in ns.
    fn advance(&mut self, timing: nand::OpTiming) -> u64 {
        let latency = timing.latency_from(self.now_ns);
        self.now_ns = self.now_ns.max(timing.end_ns);
        latency
    }
}

#[pymethods]
impl Device {
    /// A fresh device of a preset (paper-emulator, openssd-mlc, ipl-slc, femu) with the
    /// given changes, holding page bytes in memory, with no regions yet. Checked as every
    /// experiment's device is: chips within the preset, and its metadata within
    /// `max_memory_bytes` (default: the memory available less a margin), whose rest
    /// bounds its page images.
    #[new]
    #[pyo3(signature = (preset = "paper-emulator", *, chips = None, blocks_per_chip = None, pages_per_block = None, page_bytes = None, max_memory_bytes = None))]
    fn new(
        preset: &str,
        chips: Option<u32>,
        blocks_per_chip: Option<u32>,
        pages_per_block: Option<u32>,
        page_bytes: Option<u32>,
        max_memory_bytes: Option<u64>,
    ) -> PyResult<Self> {
        let config = DeviceConfig {
            preset: preset.to_string(),
            chips,
            blocks_per_chip,
            pages_per_block,
            page_bytes,
            max_memory_bytes,
            ..DeviceConfig::default()
        };
        let geometry = config.fitting_geometry().map_err(|e| crate::ConfigError::new_err(e.to_string()))?;
        let device = config.create(geometry).map_err(|e| crate::ConfigError::new_err(e.to_string()))?;
        let flash = Flash::format(device, Vec::new()).map_err(failure)?;
        Ok(Device { flash, now_ns: 0 })
    }

    /// The device's geometry (channels, chips, blocks, pages, bytes, cell type, NOP,
    /// endurance, latencies) as JSON.
    fn geometry_json(&self) -> PyResult<String> {
        serde_json::to_string(self.flash.device().geometry()).map_err(failure)
    }

    /// Adds a region over free chips (all of them unless `max_chips`); `ipa_mode` none,
    /// slc, pslc or odd-mlc; `over_provisioning` the spare share in [0, 1).
    #[pyo3(signature = (name, *, ipa_mode = "none", over_provisioning = 0.10, max_chips = None))]
    fn add_region(
        &mut self,
        name: &str,
        ipa_mode: &str,
        over_provisioning: f64,
        max_chips: Option<u32>,
    ) -> PyResult<()> {
        let mode: IpaMode =
            ipa_mode.parse().map_err(|e: String| crate::ConfigError::new_err(format!("ipa_mode: {e}")))?;
        let spec = RegionSpec { over_provisioning, max_chips, ..RegionSpec::new(name, mode) };
        spec.validate().map_err(|e| crate::ConfigError::new_err(format!("region {}: {e}", quote(name))))?;
        let now = self.now_ns;
        self.flash.add_region(spec, now).map(drop).map_err(failure)
    }

    /// The regions' names, in creation order.
    fn region_names(&self) -> Vec<String> {
        self.flash.regions().iter().map(|r| r.name().to_string()).collect()
    }

    /// A region's logical pages and page bytes.
    fn region_shape(&self, region: &str) -> PyResult<(u32, usize)> {
        let r = self.flash.region(self.region(region)?);
        Ok((r.logical_pages(), r.page_bytes()))
    }

    /// Writes a whole page out of place; returns its latency in simulated ns.
    fn write_page(&mut self, region: &str, lpn: u32, data: &[u8]) -> PyResult<u64> {
        let (id, now) = (self.region(region)?, self.now_ns);
        let timing = self.flash.write(id, lpn, data, now).map_err(failure)?;
        Ok(self.advance(timing))
    }

    /// Appends `data` in place at byte `offset` of the page (IPA); returns its latency.
    /// Refused (an error naming why) where the region's IPA mode or the NAND rules do
    /// not allow it.
    fn write_delta(&mut self, region: &str, lpn: u32, offset: usize, data: &[u8]) -> PyResult<u64> {
        let (id, now) = (self.region(region)?, self.now_ns);
        let timing = self.flash.write_delta(id, lpn, offset, data, now).map_err(failure)?;
        Ok(self.advance(timing))
    }

    /// The page's bytes with its appends applied, and the number of appends; None for
    /// a page never written (or trimmed).
    fn read_page<'py>(
        &mut self,
        py: Python<'py>,
        region: &str,
        lpn: u32,
    ) -> PyResult<Option<(Bound<'py, PyBytes>, u8)>> {
        let (id, now) = (self.region(region)?, self.now_ns);
        let Some(read) = self.flash.read(id, lpn, now).map_err(failure)? else {
            return Ok(None);
        };
        let (timing, page) = (read.timing, (PyBytes::new(py, read.data), read.appends));
        self.advance(timing);
        Ok(Some(page))
    }

    /// Trims a page (its flash page becomes garbage for GC).
    fn trim(&mut self, region: &str, lpn: u32) -> PyResult<()> {
        let (id, now) = (self.region(region)?, self.now_ns);
        if let Some(timing) = self.flash.trim(id, lpn, now).map_err(failure)? {
            self.advance(timing);
        }
        Ok(())
    }

    /// Device counters (page reads, programs, reprograms, erases, bytes) as JSON.
    fn counters_json(&self) -> PyResult<String> {
        serde_json::to_string(&self.flash.device().counters()).map_err(failure)
    }

    /// A region's counters (host reads/writes/appends, GC migrations, erases) and
    /// occupancy as JSON.
    fn region_json(&self, region: &str) -> PyResult<String> {
        let id = self.region(region)?;
        let value = serde_json::json!({
            "counters": self.flash.region(id).counters(),
            "occupancy": self.flash.occupancy(id),
        });
        Ok(value.to_string())
    }

    /// The simulated clock: when the last operation completed, in ns.
    #[getter]
    fn now_ns(&self) -> SimTime {
        self.now_ns
    }
}
