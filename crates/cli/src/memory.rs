//! The process's peak memory, for the bench commands to report next to the bytes a run
//! keeps: `VmHWM` (peak resident set size) from `/proc/self/status`. `None` where the
//! file or the line is missing (not Linux); never an error, since it is a report only.
//! [`MemoryReport`] is what `bench` (engine and SQLite) and `ftl-bench` print and put in
//! their JSON: the peak RSS, what the run keeps ([`Kept`]: the emulated device's bytes,
//! the maps and tables of the regions or FTL over it, and the pages the engine's buffer
//! pool holds), and the peak RSS per byte kept (the project's memory target is at most 1.5). The
//! ratio to the device alone is kept beside it.

use serde::Serialize;

/// What a run keeps in memory at its end.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Kept {
    /// The emulated device: page images, OOB, per-page and per-block metadata.
    pub device: u64,
    /// The heap bytes of the regions', FTL's or page store's maps and tables.
    pub mapping: u64,
    /// The pages the engine's buffer pool holds (0 without one).
    pub buffer_pool: u64,
}

/// A run's memory: the JSON keys every bench command writes (`same_results` leaves the
/// peak and the ratios out: they depend on the allocator and the machine).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct MemoryReport {
    /// The process's peak resident memory (VmHWM), loading included.
    pub memory_peak_rss_bytes: Option<u64>,
    /// What the emulated device keeps in memory at the end (page images, OOB, metadata).
    pub memory_device_bytes: u64,
    /// The heap bytes of the regions', FTL's or page store's maps and tables at the end.
    pub memory_mapping_bytes: u64,
    /// The bytes of the pages the engine's buffer pool holds at the end (0 without one).
    pub memory_buffer_pool_bytes: u64,
    /// Peak RSS per byte the device keeps.
    pub memory_peak_rss_per_device_byte: Option<f64>,
    /// Peak RSS per byte the run keeps: the device's, the mapping's and the pool's.
    pub memory_peak_rss_per_kept_byte: Option<f64>,
}

impl MemoryReport {
    /// The process's peak so far against what the run keeps.
    pub fn now(kept: Kept) -> MemoryReport {
        MemoryReport::of(peak_rss_bytes(), kept)
    }

    fn of(peak_rss_bytes: Option<u64>, kept: Kept) -> MemoryReport {
        let per = |bytes: u64| peak_rss_bytes.filter(|_| bytes > 0).map(|rss| rss as f64 / bytes as f64);
        MemoryReport {
            memory_peak_rss_bytes: peak_rss_bytes,
            memory_device_bytes: kept.device,
            memory_mapping_bytes: kept.mapping,
            memory_buffer_pool_bytes: kept.buffer_pool,
            memory_peak_rss_per_device_byte: per(kept.device),
            memory_peak_rss_per_kept_byte: per(kept.device + kept.mapping + kept.buffer_pool),
        }
    }

    /// "peak RSS 317 MiB for 250 MiB the device keeps and 20 MiB of mapping (1.17×; 1.27×
    /// the device's)", with "… and 858 MiB of cached pages" when a buffer pool holds some.
    pub fn line(&self) -> String {
        let mib = |b: u64| format!("{:.0} MiB", b as f64 / (1u64 << 20) as f64);
        let rss = self.memory_peak_rss_bytes.map_or("unknown".into(), mib);
        let mut kept = vec![format!("{} the device keeps", mib(self.memory_device_bytes))];
        if self.memory_mapping_bytes > 0 {
            kept.push(format!("{} of mapping", mib(self.memory_mapping_bytes)));
        }
        if self.memory_buffer_pool_bytes > 0 {
            kept.push(format!("{} of cached pages", mib(self.memory_buffer_pool_bytes)));
        }
        let last = kept.pop().expect("the device's bytes are always listed");
        let kept = if kept.is_empty() { last } else { format!("{} and {last}", kept.join(", ")) };
        let ratio = match (self.memory_peak_rss_per_kept_byte, self.memory_peak_rss_per_device_byte) {
            (Some(r), Some(d)) if self.memory_mapping_bytes + self.memory_buffer_pool_bytes > 0 => {
                format!(" ({r:.2}×; {d:.2}× the device's)")
            }
            (Some(r), _) => format!(" ({r:.2}×)"),
            _ => String::new(),
        };
        format!("peak RSS {rss} for {kept}{ratio}")
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
    fn reports_the_ratios_and_their_keys() {
        let device = Kept { device: 200 << 20, ..Kept::default() };
        let r = MemoryReport::of(Some(300 << 20), device);
        assert_eq!(r.memory_peak_rss_per_device_byte, Some(1.5));
        assert_eq!(r.memory_peak_rss_per_kept_byte, Some(1.5));
        assert_eq!(r.line(), "peak RSS 300 MiB for 200 MiB the device keeps (1.50×)");
        let mapped =
            MemoryReport::of(Some(300 << 20), Kept { mapping: 100 << 20, ..Kept { device: 100 << 20, ..device } });
        assert_eq!(
            mapped.line(),
            "peak RSS 300 MiB for 100 MiB the device keeps and 100 MiB of mapping (1.50×; 3.00× the device's)"
        );
        let all = Kept { device: 100 << 20, mapping: 50 << 20, buffer_pool: 50 << 20 };
        let pooled = MemoryReport::of(Some(300 << 20), all);
        assert_eq!(pooled.memory_peak_rss_per_kept_byte, Some(1.5));
        assert_eq!(
            pooled.line(),
            "peak RSS 300 MiB for 100 MiB the device keeps, 50 MiB of mapping and 50 MiB of cached pages (1.50×; 3.00× the device's)"
        );
        let mut v = serde_json::json!({"transactions": 3});
        pooled.insert_into(&mut v);
        assert_eq!(v["memory_device_bytes"], 100u64 << 20);
        assert_eq!(v["memory_mapping_bytes"], 50u64 << 20);
        assert_eq!(v["memory_buffer_pool_bytes"], 50u64 << 20);
        assert_eq!(v["memory_peak_rss_per_kept_byte"], 1.5);
        assert_eq!(v["transactions"], 3);
        let unknown = MemoryReport::of(None, Kept::default());
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
