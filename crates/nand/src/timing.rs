//! Simulated time: latencies and per-chip / per-channel busy timelines.
//!
//! Time is in nanoseconds and is always passed in by the caller; nothing here reads a
//! clock. An operation issued at `now` starts when its chip (and, for data transfer, its
//! channel) is free, so later operations queue behind earlier ones on the same chip —
//! host I/O behind GC, for example. The arithmetic is integer-only, hence deterministic.
//!
//! - read: array read on the chip, then the bytes cross the channel; the chip stays busy
//!   until the transfer ends (the data sits in its page register).
//! - program: the bytes cross the channel into the page register, then the array
//!   programs; the channel is free again as soon as the transfer ends.
//! - copyback: array read and program on the chip; only the bytes the controller changes
//!   in the page register (for us: OOB fields) cross the channel.
//! - erase: the chip alone.

use crate::geometry::PageType;
use serde::{Deserialize, Serialize};

/// Simulated nanoseconds.
pub type SimTime = u64;

/// Array and bus latencies of one device.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Latencies {
    /// Array read time per page type (LSB, CSB, MSB).
    pub read_ns: [u64; 3],
    /// Array program time per page type (LSB, CSB, MSB).
    pub program_ns: [u64; 3],
    pub erase_ns: u64,
    /// Channel transfer time per byte, in picoseconds (2500 ps/B = 400 MB/s).
    pub transfer_ps_per_byte: u64,
}

impl Latencies {
    /// Same array times for every page type.
    pub fn uniform(read_ns: u64, program_ns: u64, erase_ns: u64, transfer_ps_per_byte: u64) -> Self {
        Latencies { read_ns: [read_ns; 3], program_ns: [program_ns; 3], erase_ns, transfer_ps_per_byte }
    }

    /// Typical SLC datasheet values: read 25 µs, program 200 µs, erase 1.5 ms, 400 MB/s bus.
    pub fn slc_typical() -> Self {
        Self::uniform(25_000, 200_000, 1_500_000, 2_500)
    }

    /// Typical MLC values: LSB read 50 µs / program 500 µs, MSB read 80 µs / program
    /// 1.5 ms, erase 3 ms, 400 MB/s bus. LSB pages program several times faster than MSB
    /// pages, which is why pSLC mode is also faster (IPA appendix C.2).
    pub fn mlc_typical() -> Self {
        Latencies {
            read_ns: [50_000, 65_000, 80_000],
            program_ns: [500_000, 1_000_000, 1_500_000],
            erase_ns: 3_000_000,
            transfer_ps_per_byte: 2_500,
        }
    }

    /// Typical TLC values: reads 60/80/100 µs, programs 700 µs / 1.5 ms / 3 ms (LSB/CSB/
    /// MSB), erase 5 ms, 400 MB/s bus.
    pub fn tlc_typical() -> Self {
        Latencies {
            read_ns: [60_000, 80_000, 100_000],
            program_ns: [700_000, 1_500_000, 3_000_000],
            erase_ns: 5_000_000,
            transfer_ps_per_byte: 2_500,
        }
    }

    /// Time to move `bytes` over the channel, rounded up to whole nanoseconds.
    pub fn transfer_ns(&self, bytes: usize) -> u64 {
        (bytes as u64 * self.transfer_ps_per_byte).div_ceil(1000)
    }

    pub fn read_array_ns(&self, page_type: PageType) -> u64 {
        self.read_ns[page_type.index()]
    }

    pub fn program_array_ns(&self, page_type: PageType) -> u64 {
        self.program_ns[page_type.index()]
    }
}

/// When an operation started and when it completed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct OpTiming {
    /// When the chip (or channel, for a program) began serving the operation.
    pub start_ns: SimTime,
    pub end_ns: SimTime,
}

impl OpTiming {
    /// Latency as seen by an issuer that submitted at `issued_ns` (queueing included).
    pub fn latency_from(&self, issued_ns: SimTime) -> u64 {
        self.end_ns.saturating_sub(issued_ns)
    }
}

/// Busy-until times of every chip and channel.
#[derive(Clone, Debug)]
pub struct Timelines {
    chip_free_ns: Vec<SimTime>,
    channel_free_ns: Vec<SimTime>,
}

impl Timelines {
    pub fn new(chips: u32, channels: u32) -> Self {
        Timelines { chip_free_ns: vec![0; chips as usize], channel_free_ns: vec![0; channels as usize] }
    }

    /// When `chip` finishes its queued work.
    pub fn chip_free_at(&self, chip: u32) -> SimTime {
        self.chip_free_ns[chip as usize]
    }

    /// Array read, then transfer out.
    pub fn read(&mut self, chip: u32, channel: u32, now: SimTime, array_ns: u64, transfer_ns: u64) -> OpTiming {
        let start = now.max(self.chip_free_ns[chip as usize]);
        let array_done = start + array_ns;
        let transfer_start = array_done.max(self.channel_free_ns[channel as usize]);
        let end = transfer_start + transfer_ns;
        self.channel_free_ns[channel as usize] = end;
        self.chip_free_ns[chip as usize] = end;
        OpTiming { start_ns: start, end_ns: end }
    }

    /// Transfer in, then array program.
    pub fn program(&mut self, chip: u32, channel: u32, now: SimTime, array_ns: u64, transfer_ns: u64) -> OpTiming {
        let start = now.max(self.chip_free_ns[chip as usize]).max(self.channel_free_ns[channel as usize]);
        let transfer_done = start + transfer_ns;
        self.channel_free_ns[channel as usize] = transfer_done;
        let end = transfer_done + array_ns;
        self.chip_free_ns[chip as usize] = end;
        OpTiming { start_ns: start, end_ns: end }
    }

    /// Array read, a small transfer in (changed register bytes), array program.
    pub fn copyback(
        &mut self,
        chip: u32,
        channel: u32,
        now: SimTime,
        read_ns: u64,
        program_ns: u64,
        transfer_ns: u64,
    ) -> OpTiming {
        let start = now.max(self.chip_free_ns[chip as usize]);
        let read_done = start + read_ns;
        let transfer_start = read_done.max(self.channel_free_ns[channel as usize]);
        let transfer_done = transfer_start + transfer_ns;
        if transfer_ns > 0 {
            self.channel_free_ns[channel as usize] = transfer_done;
        }
        let end = transfer_done + program_ns;
        self.chip_free_ns[chip as usize] = end;
        OpTiming { start_ns: start, end_ns: end }
    }

    /// Chip-only operation (erase).
    pub fn chip_only(&mut self, chip: u32, now: SimTime, array_ns: u64) -> OpTiming {
        let start = now.max(self.chip_free_ns[chip as usize]);
        let end = start + array_ns;
        self.chip_free_ns[chip as usize] = end;
        OpTiming { start_ns: start, end_ns: end }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transfer_rounds_up() {
        let l = Latencies::uniform(0, 0, 0, 2_500);
        assert_eq!(l.transfer_ns(4096), 10_240);
        assert_eq!(l.transfer_ns(1), 3);
        assert_eq!(l.transfer_ns(0), 0);
        // A 50-byte delta moves ~80x faster than a 4 KiB page.
        assert!(l.transfer_ns(50) * 80 <= l.transfer_ns(4096));
    }

    #[test]
    fn read_queues_on_chip_then_channel() {
        let mut t = Timelines::new(2, 1);
        let a = t.read(0, 0, 100, 25_000, 10_000);
        assert_eq!(a, OpTiming { start_ns: 100, end_ns: 35_100 });
        // Second chip on the same channel: array in parallel, transfer waits for the bus.
        let b = t.read(1, 0, 100, 25_000, 10_000);
        assert_eq!(b.start_ns, 100);
        assert_eq!(b.end_ns, 35_100 + 10_000);
        // Same chip again: waits for the chip.
        let c = t.read(0, 0, 0, 25_000, 10_000);
        assert_eq!(c.start_ns, 35_100);
        assert_eq!(c.end_ns, 35_100 + 25_000 + 10_000);
    }

    #[test]
    fn program_frees_channel_after_transfer() {
        let mut t = Timelines::new(2, 1);
        let a = t.program(0, 0, 0, 200_000, 10_000);
        assert_eq!(a, OpTiming { start_ns: 0, end_ns: 210_000 });
        // Other chip on the same channel can transfer right after.
        let b = t.program(1, 0, 0, 200_000, 10_000);
        assert_eq!(b, OpTiming { start_ns: 10_000, end_ns: 220_000 });
        assert_eq!(t.chip_free_at(0), 210_000);
    }

    #[test]
    fn copyback_and_erase_leave_channel_alone() {
        let mut t = Timelines::new(1, 1);
        let cb = t.copyback(0, 0, 5, 25_000, 200_000, 0);
        assert_eq!(cb, OpTiming { start_ns: 5, end_ns: 225_005 });
        let e = t.chip_only(0, 0, 1_500_000);
        assert_eq!(e, OpTiming { start_ns: 225_005, end_ns: 1_725_005 });
        assert_eq!(e.latency_from(0), 1_725_005);
        // Channel was never occupied: a read on it transfers immediately after its array time.
        let mut t2 = Timelines::new(2, 1);
        t2.chip_only(0, 0, 1_000_000);
        let r = t2.read(1, 0, 0, 10, 10);
        assert_eq!(r.end_ns, 20);
    }
}
