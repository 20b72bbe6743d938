//! The process's peak memory, for the bench commands to report next to the bytes a run
//! keeps: `VmHWM` (peak resident set size) from `/proc/self/status`. `None` where the
//! file or the line is missing (not Linux); never an error, since it is a report only.
//! [`MemoryReport`] is what `bench` (engine and SQLite) and `ftl-bench` print and put in
//! their JSON: the peak RSS, what the emulated device keeps, the pages the engine's
//! buffer pool holds, and the peak RSS per byte of the two together (issue 21's bound is
//! a peak RSS of at most 1.5 times what a run keeps). The ratio to the device alone is
//! kept beside it: a pool as large as the database cannot fit under 1.5× of that.

use serde::Serialize;

/// A run's memory: the JSON keys every bench command writes (`same_results` leaves the
/// `memory_` keys out: they depend on the allocator and the machine).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct MemoryReport {
    /// The process's peak resident memory (VmHWM), loading included.
    pub memory_peak_rss_bytes: Option<u64>,
    /// What the emulated device keeps in memory at the end (page images, OOB, metadata).
    pub memory_device_bytes: u64,
    /// The bytes of the pages the engine's buffer pool holds at the end (0 without one).
    pub memory_buffer_pool_bytes: u64,
    /// Peak RSS per byte the device keeps.
    pub memory_peak_rss_per_device_byte: Option<f64>,
    /// Peak RSS per byte the run keeps: the device's and the buffer pool's.
    pub memory_peak_rss_per_kept_byte: Option<f64>,
}

impl MemoryReport {
    /// The process's peak so far against `device_bytes` and `buffer_pool_bytes`.
    pub fn now(device_bytes: u64, buffer_pool_bytes: u64) -> MemoryReport {
        MemoryReport::of(peak_rss_bytes(), device_bytes, buffer_pool_bytes)
    }

    fn of(peak_rss_bytes: Option<u64>, device_bytes: u64, buffer_pool_bytes: u64) -> MemoryReport {
        let per = |bytes: u64| peak_rss_bytes.filter(|_| bytes > 0).map(|rss| rss as f64 / bytes as f64);
        MemoryReport {
            memory_peak_rss_bytes: peak_rss_bytes,
            memory_device_bytes: device_bytes,
            memory_buffer_pool_bytes: buffer_pool_bytes,
            memory_peak_rss_per_device_byte: per(device_bytes),
            memory_peak_rss_per_kept_byte: per(device_bytes + buffer_pool_bytes),
        }
    }

    /// "peak RSS 317 MiB for 250 MiB the device keeps (1.27×)", or with a buffer pool
    /// "peak RSS 3080 MiB for 1832 MiB the device keeps and 1091 MiB of cached pages
    /// (1.05×; 1.68× the device's)".
    pub fn line(&self) -> String {
        let mib = |b: u64| format!("{:.0} MiB", b as f64 / (1u64 << 20) as f64);
        let rss = self.memory_peak_rss_bytes.map_or("unknown".into(), mib);
        let device = mib(self.memory_device_bytes);
        if self.memory_buffer_pool_bytes == 0 {
            let ratio = self.memory_peak_rss_per_device_byte.map_or(String::new(), |r| format!(" ({r:.2}×)"));
            return format!("peak RSS {rss} for {device} the device keeps{ratio}");
        }
        let ratio = match (self.memory_peak_rss_per_kept_byte, self.memory_peak_rss_per_device_byte) {
            (Some(kept), Some(device)) => format!(" ({kept:.2}×; {device:.2}× the device's)"),
            _ => String::new(),
        };
        format!(
            "peak RSS {rss} for {device} the device keeps and {} of cached pages{ratio}",
            mib(self.memory_buffer_pool_bytes)
        )
    }

    /// Adds the report's keys to a JSON object.
    pub fn insert_into(&self, value: &mut serde_json::Value) {
        if let (Some(object), Ok(serde_json::Value::Object(keys))) = (value.as_object_mut(), serde_json::to_value(self))
        {
            object.extend(keys);
        }
    }
}

/// Peak resident set size of this process so far, in bytes.
pub fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    parse_vm_hwm(&status)
}

/// The `VmHWM:   1234 kB` line of a status file, in bytes.
fn parse_vm_hwm(status: &str) -> Option<u64> {
    let line = status.lines().find_map(|l| l.strip_prefix("VmHWM:"))?;
    let kib: u64 = line.trim().strip_suffix("kB")?.trim().parse().ok()?;
    Some(kib * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_the_ratio_and_its_keys() {
        let r = MemoryReport::of(Some(300 << 20), 200 << 20, 0);
        assert_eq!(r.memory_peak_rss_per_device_byte, Some(1.5));
        assert_eq!(r.memory_peak_rss_per_kept_byte, Some(1.5));
        assert_eq!(r.line(), "peak RSS 300 MiB for 200 MiB the device keeps (1.50×)");
        let pooled = MemoryReport::of(Some(300 << 20), 100 << 20, 100 << 20);
        assert_eq!(pooled.memory_peak_rss_per_kept_byte, Some(1.5));
        assert_eq!(
            pooled.line(),
            "peak RSS 300 MiB for 100 MiB the device keeps and 100 MiB of cached pages (1.50×; 3.00× the device's)"
        );
        let mut v = serde_json::json!({"transactions": 3});
        r.insert_into(&mut v);
        assert_eq!(v["memory_device_bytes"], 200u64 << 20);
        assert_eq!(v["memory_peak_rss_per_device_byte"], 1.5);
        assert_eq!(v["transactions"], 3);
        let unknown = MemoryReport::of(None, 0, 0);
        assert_eq!(unknown.memory_peak_rss_per_device_byte, None);
        assert_eq!(unknown.line(), "peak RSS unknown for 0 MiB the device keeps");
    }

    #[test]
    fn reads_the_high_water_mark_line() {
        assert_eq!(parse_vm_hwm("Name:\tx\nVmHWM:\t   2048 kB\nVmRSS:\t 1 kB\n"), Some(2 << 20));
        assert_eq!(parse_vm_hwm("VmRSS:\t 1 kB\n"), None);
        assert_eq!(parse_vm_hwm("VmHWM:\t lots kB\n"), None);
        if cfg!(target_os = "linux") {
            assert!(peak_rss_bytes().is_some_and(|b| b > 0));
        }
    }
}
