//! The process's peak memory, for the bench commands to report next to the bytes a run
//! keeps: `VmHWM` (peak resident set size) from `/proc/self/status`. `None` where the
//! file or the line is missing (not Linux); never an error, since it is a report only.

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
    fn reads_the_high_water_mark_line() {
        assert_eq!(parse_vm_hwm("Name:\tx\nVmHWM:\t   2048 kB\nVmRSS:\t 1 kB\n"), Some(2 << 20));
        assert_eq!(parse_vm_hwm("VmRSS:\t 1 kB\n"), None);
        assert_eq!(parse_vm_hwm("VmHWM:\t lots kB\n"), None);
        if cfg!(target_os = "linux") {
            assert!(peak_rss_bytes().is_some_and(|b| b > 0));
        }
    }
}
