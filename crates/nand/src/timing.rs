//! Simulated time: per-chip and per-channel busy timelines over the datasheet latencies
//! ([`crate::geometry::Latencies`]).
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
//!
//! A device may also limit how many commands its host interface serves at once
//! (`host_queue_depth`; 0 = no limit). The OpenSSD board of the IPA paper served one
//! (no NCQ, its appendix D): a read holds an interface slot from issue until its data
//! is back, so reads never overlap; a program or copyback holds one only while its
//! bytes cross (the board's write cache lets the array work go on in the background);
//! an erase carries no data and holds none.

use serde::{Deserialize, Serialize};

/// Simulated nanoseconds.
pub type SimTime = u64;

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

/// Busy intervals of one chip or channel, in start order and never overlapping.
///
/// Terminals of a closed-loop driver each run on their own clock, so operations arrive
/// out of time order: a terminal at 3 ms may issue a read after another terminal has
/// reserved the chip at 9 ms. A single busy-until time would make the read wait behind
/// work that lies in its future; the calendar lets it use the idle gap before it.
/// Only the newest [`CALENDAR_INTERVALS`] intervals are kept; the time before them
/// counts as busy (`floor`), which bounds the cost of a lookup.
///
/// Cost: an operation after all booked work costs O(1). Any other lookup gallops out
/// from where the last interval was booked (O(log k) for an answer k intervals away):
/// a GC burst books its copies' small transfers one after another into a channel's
/// future, interleaved with the other chips' work, so each lands a little after the
/// one before but often dozens of intervals from the end. The lookup hands back where
/// the interval goes ([`Slot`]), so booking it searches nothing again. The intervals
/// sit contiguously in a buffer twice the kept size: dropping the oldest moves the
/// window's start, an insertion k intervals from the end moves k intervals, and the
/// window slides back to the buffer's front once per [`CALENDAR_INTERVALS`] appends.
/// Allocated once: no heap work per operation.
#[derive(Clone, Debug)]
struct Calendar {
    floor: SimTime,
    /// The intervals are `slots[head..head + len]`.
    slots: Box<[(SimTime, SimTime)]>,
    head: usize,
    len: usize,
    /// Index just after the interval booked last: where the next lookup starts.
    near: usize,
}

/// Busy intervals kept per chip or channel: enough to cover the spread of the
/// driver's terminal clocks at any realistic load.
const CALENDAR_INTERVALS: usize = 256;

/// Room for the kept intervals, one inserted before the oldest is dropped, and as
/// many again so the window slides to the front only once per that many appends.
const CALENDAR_SLOTS: usize = 2 * CALENDAR_INTERVALS + 1;

/// Where a calendar can take an interval: its start, and its index among the
/// calendar's intervals (the number that start before it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Slot {
    start: SimTime,
    index: usize,
}

impl Default for Calendar {
    fn default() -> Self {
        Calendar { floor: 0, slots: vec![(0, 0); CALENDAR_SLOTS].into_boxed_slice(), head: 0, len: 0, near: 0 }
    }
}

impl Calendar {
    /// The busy intervals, oldest first.
    fn busy(&self) -> &[(SimTime, SimTime)] {
        &self.slots[self.head..self.head + self.len]
    }

    /// The number of leading intervals for which `before` holds, where `before` is true
    /// for a prefix of the calendar (a partition point), found by galloping out from
    /// index `near` (either way) and then a binary search.
    fn partition_near(busy: &[(SimTime, SimTime)], near: usize, before: impl Fn(&(SimTime, SimTime)) -> bool) -> usize {
        let near = near.min(busy.len());
        let (lo, hi) = if near < busy.len() && before(&busy[near]) {
            // `lo`: every interval below it is `before`; gallop up until one is not.
            let (mut lo, mut step) = (near + 1, 1);
            loop {
                let probe = lo + step - 1;
                if probe >= busy.len() {
                    break (lo, busy.len());
                }
                if !before(&busy[probe]) {
                    break (lo, probe);
                }
                lo = probe + 1;
                step *= 2;
            }
        } else {
            // `hi`: an index known not to be `before` (or the length); gallop down.
            let (mut hi, mut step) = (near, 1);
            loop {
                if hi == 0 {
                    break (0, 0);
                }
                let probe = hi.saturating_sub(step);
                if before(&busy[probe]) {
                    break (probe + 1, hi);
                }
                hi = probe;
                step *= 2;
            }
        };
        // The answer is in [lo, hi]: binary search there.
        lo + busy[lo..hi].partition_point(before)
    }

    /// The earliest start at or after `at` with `len` free nanoseconds, and where an
    /// interval starting there goes.
    fn earliest(&self, at: SimTime, len: u64) -> Slot {
        let t = at.max(self.floor);
        let busy = self.busy();
        match busy.last() {
            // After all booked work (the common case): free at once.
            Some(&(_, end)) if end <= t => return Slot { start: t, index: busy.len() },
            None => return Slot { start: t, index: 0 },
            Some(_) => {}
        }
        // Intervals do not overlap, so their ends are in order too; the last one ends
        // after `t` (checked above), so the search starts below it.
        let first = Self::partition_near(&busy[..busy.len() - 1], self.near, |&(_, end)| end <= t);
        let mut slot = Slot { start: t, index: busy.len() };
        for (i, &(start, end)) in busy.iter().enumerate().skip(first) {
            if slot.start + len <= start {
                // Every interval before `i` starts before `slot.start`, this one after.
                slot.index = i;
                break;
            }
            slot.start = slot.start.max(end);
        }
        slot
    }

    /// Marks `[slot.start, end)` busy, where [`Calendar::earliest`] found `slot` free
    /// for at least that long and nothing was booked here since.
    fn reserve(&mut self, slot: Slot, end: SimTime) {
        let (start, i) = (slot.start, slot.index);
        if end <= start {
            return;
        }
        let at = self.head + i;
        debug_assert_eq!(i, self.busy().partition_point(|&(s, _)| s < start), "stale slot {slot:?}");
        let joins_prev = i > 0 && self.slots[at - 1].1 == start;
        let joins_next = i < self.len && self.slots[at].0 == end;
        // Just after the booked interval, which merging with the one before puts at
        // `i - 1` (the window may slide below).
        self.near = if joins_prev { i } else { i + 1 };
        match (joins_prev, joins_next) {
            (true, true) => {
                self.slots[at - 1].1 = self.slots[at].1;
                self.slots.copy_within(at + 1..self.head + self.len, at);
                self.len -= 1;
            }
            (true, false) => self.slots[at - 1].1 = end,
            (false, true) => self.slots[at].0 = start,
            (false, false) => self.insert(i, (start, end)),
        }
        if self.len > CALENDAR_INTERVALS {
            self.floor = self.floor.max(self.slots[self.head].1);
            self.head += 1;
            self.len -= 1;
            self.near = self.near.saturating_sub(1);
        }
    }

    /// Inserts an interval at index `i`, sliding the window to the buffer's front first
    /// if it has reached the end.
    fn insert(&mut self, i: usize, interval: (SimTime, SimTime)) {
        if self.head + self.len == self.slots.len() {
            self.slots.copy_within(self.head..self.head + self.len, 0);
            self.head = 0;
        }
        let at = self.head + i;
        self.slots.copy_within(at..self.head + self.len, at + 1);
        self.slots[at] = interval;
        self.len += 1;
    }

    /// When the last reserved work ends.
    fn free_at(&self) -> SimTime {
        self.busy().last().map_or(self.floor, |&(_, end)| end.max(self.floor))
    }
}

/// `n` empty calendars.
fn calendars(n: u32) -> Vec<Calendar> {
    (0..n).map(|_| Calendar::default()).collect()
}

/// How long an operation holds a host-interface slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum HostHold {
    /// From issue until the operation ends (a read: the host waits for the data).
    Whole,
    /// While its bytes cross the channel (a program or copyback).
    Transfer,
    /// Not at all (an erase).
    Free,
}

/// Busy calendars of every chip, channel and host-interface slot.
#[derive(Clone, Debug)]
pub struct Timelines {
    chips: Vec<Calendar>,
    channels: Vec<Calendar>,
    /// One calendar per command the host interface serves at once; empty: no limit.
    host: Vec<Calendar>,
    /// Simulated time each chip has been booked busy, in total (for utilisation).
    chip_busy_ns: Vec<u64>,
}

impl Timelines {
    /// Timelines of `chips` chips on `channels` channels; `host_queue_depth` limits
    /// the commands in flight at once (0: no limit).
    pub fn new(chips: u32, channels: u32, host_queue_depth: u32) -> Self {
        Timelines {
            chips: calendars(chips),
            channels: calendars(channels),
            host: calendars(host_queue_depth),
            chip_busy_ns: vec![0; chips as usize],
        }
    }

    /// Total simulated time `chip` has been busy with operations booked so far.
    pub fn chip_busy_ns(&self, chip: u32) -> u64 {
        self.chip_busy_ns[chip as usize]
    }

    /// A host slot free over `[from, to)` (which one, and where the window goes in
    /// it), or else the earliest time after `from` at which one could start such a window.
    fn host_slot(&self, from: SimTime, to: SimTime) -> Result<(usize, Slot), SimTime> {
        let mut later = SimTime::MAX;
        for (i, calendar) in self.host.iter().enumerate() {
            let slot = calendar.earliest(from, to - from);
            if slot.start == from {
                return Ok((i, slot));
            }
            later = later.min(slot.start);
        }
        Err(later)
    }

    /// When `chip` finishes its queued work.
    pub fn chip_free_at(&self, chip: u32) -> SimTime {
        self.chips[chip as usize].free_at()
    }

    /// Books an operation that holds the chip for `chip_ns` from its start, the
    /// channel for `transfer_ns` from `channel_offset` after its start, and a host slot
    /// as `hold` says, at the earliest issue time at or after `now` where all are free.
    #[allow(clippy::too_many_arguments)]
    fn book(
        &mut self,
        chip: u32,
        channel: u32,
        now: SimTime,
        chip_ns: u64,
        channel_offset: u64,
        transfer_ns: u64,
        hold: HostHold,
    ) -> OpTiming {
        let (chip, channel) = (chip as usize, channel as usize);
        let hold = if self.host.is_empty() || (hold == HostHold::Transfer && transfer_ns == 0) {
            HostHold::Free
        } else {
            hold
        };
        // Every retry moves `t` strictly later, past a busy interval. A read holds its
        // host slot from `issue`, while it waits for the chip too.
        let (mut t, mut issue) = (now, now);
        loop {
            let on_chip = self.chips[chip].earliest(t, chip_ns);
            let start = on_chip.start;
            let on_channel = if transfer_ns == 0 {
                None
            } else {
                let slot = self.channels[channel].earliest(start + channel_offset, transfer_ns);
                if slot.start != start + channel_offset {
                    // The channel is busy then: try the chip again from when the transfer could go.
                    t = slot.start - channel_offset;
                    continue;
                }
                Some(slot)
            };
            let bus = start + channel_offset;
            let window = match hold {
                HostHold::Whole => Some((issue, start + chip_ns)),
                HostHold::Transfer => Some((bus, bus + transfer_ns)),
                HostHold::Free => None,
            };
            let mut held = None;
            if let Some((from, to)) = window {
                match self.host_slot(from, to) {
                    Ok((i, slot)) => held = Some((i, slot, to)),
                    Err(later) if hold == HostHold::Whole => {
                        (t, issue) = (later, later);
                        continue;
                    }
                    Err(later) => {
                        t = later - channel_offset;
                        continue;
                    }
                }
            }
            // Three different calendars: each slot is still where its lookup found it.
            self.chips[chip].reserve(on_chip, start + chip_ns);
            self.chip_busy_ns[chip] += chip_ns;
            if let Some(slot) = on_channel {
                self.channels[channel].reserve(slot, bus + transfer_ns);
            }
            if let Some((i, slot, to)) = held {
                self.host[i].reserve(slot, to);
            }
            return OpTiming { start_ns: start, end_ns: start + chip_ns };
        }
    }

    /// Array read, then transfer out; the chip is busy until the transfer ends (the
    /// data sits in its page register).
    pub fn read(&mut self, chip: u32, channel: u32, now: SimTime, array_ns: u64, transfer_ns: u64) -> OpTiming {
        self.book(chip, channel, now, array_ns + transfer_ns, array_ns, transfer_ns, HostHold::Whole)
    }

    /// Transfer in, then array program.
    pub fn program(&mut self, chip: u32, channel: u32, now: SimTime, array_ns: u64, transfer_ns: u64) -> OpTiming {
        self.book(chip, channel, now, transfer_ns + array_ns, 0, transfer_ns, HostHold::Transfer)
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
        self.book(chip, channel, now, read_ns + transfer_ns + program_ns, read_ns, transfer_ns, HostHold::Transfer)
    }

    /// Chip-only operation (erase).
    pub fn chip_only(&mut self, chip: u32, now: SimTime, array_ns: u64) -> OpTiming {
        self.book(chip, 0, now, array_ns, 0, 0, HostHold::Free)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_queues_on_chip_then_channel() {
        let mut t = Timelines::new(2, 1, 0);
        let a = t.read(0, 0, 100, 25_000, 10_000);
        assert_eq!(a, OpTiming { start_ns: 100, end_ns: 35_100 });
        // Second chip on the same channel: its array read is timed to end when the bus
        // is free, so the transfer follows at once.
        let b = t.read(1, 0, 100, 25_000, 10_000);
        assert_eq!(b.start_ns, 10_100);
        assert_eq!(b.end_ns, 35_100 + 10_000);
        // Same chip again: waits for the chip.
        let c = t.read(0, 0, 0, 25_000, 10_000);
        assert_eq!(c.start_ns, 35_100);
        assert_eq!(c.end_ns, 35_100 + 25_000 + 10_000);
    }

    #[test]
    fn an_earlier_operation_uses_the_idle_gap_before_later_work() {
        let mut t = Timelines::new(1, 1, 0);
        // One terminal has booked the chip at 9 ms.
        let late = t.read(0, 0, 9_000_000, 25_000, 10_000);
        assert_eq!(late.start_ns, 9_000_000);
        // Another terminal, still at 3 ms, reads at once instead of after 9 ms.
        let early = t.read(0, 0, 3_000_000, 25_000, 10_000);
        assert_eq!(early, OpTiming { start_ns: 3_000_000, end_ns: 3_035_000 });
        // A gap too short for the work is skipped: an erase issued at 8.99 ms waits.
        let erase = t.chip_only(0, 8_990_000, 1_500_000);
        assert_eq!(erase.start_ns, 9_035_000);
        assert_eq!(t.chip_free_at(0), 10_535_000);
    }

    #[test]
    fn old_intervals_fold_into_a_busy_floor() {
        let mut t = Timelines::new(1, 1, 0);
        for i in 0..(CALENDAR_INTERVALS as u64 + 10) {
            t.chip_only(0, i * 100, 10);
        }
        // The oldest intervals were dropped; the time before the kept ones counts as busy.
        let at_zero = t.chip_only(0, 0, 10);
        assert_eq!(at_zero.start_ns, 9 * 100 + 10, "{at_zero:?}");
        assert_eq!(t.chips[0].busy().len(), CALENDAR_INTERVALS);
    }

    /// The calendar's rules stated plainly: a list searched from the front.
    #[derive(Default)]
    struct ReferenceCalendar {
        floor: SimTime,
        busy: Vec<(SimTime, SimTime)>,
    }

    impl ReferenceCalendar {
        fn earliest(&self, at: SimTime, len: u64) -> SimTime {
            let mut t = at.max(self.floor);
            for &(start, end) in &self.busy {
                if end > t && t + len > start {
                    t = t.max(end);
                }
            }
            t
        }

        fn reserve(&mut self, start: SimTime, end: SimTime) {
            if end <= start {
                return;
            }
            let i = self.busy.iter().position(|&(s, _)| s >= start).unwrap_or(self.busy.len());
            self.busy.insert(i, (start, end));
            // Merge touching neighbours.
            if i + 1 < self.busy.len() && self.busy[i + 1].0 == end {
                self.busy[i].1 = self.busy.remove(i + 1).1;
            }
            if i > 0 && self.busy[i - 1].1 == start {
                self.busy[i - 1].1 = self.busy.remove(i).1;
            }
            if self.busy.len() > CALENDAR_INTERVALS {
                self.floor = self.floor.max(self.busy.remove(0).1);
            }
        }
    }

    proptest::proptest! {
        /// Searching out from the last booking finds what a search from the front finds,
        /// from wherever the search starts (`near`, set at random before some lookups),
        /// bookings out of time order and the folding of old intervals included.
        #[test]
        fn calendar_matches_a_front_to_back_search(
            ops in proptest::collection::vec(
                (0u64..5_000, 0u64..800_000, 1u64..3_000, 0u64..4, proptest::option::of(0usize..400)),
                1..1200,
            )
        ) {
            let (mut fast, mut slow) = (Calendar::default(), ReferenceCalendar::default());
            let mut clock = 0;
            for (gap, jitter, len, kind, near) in ops {
                // Mostly at the issuer's clock, sometimes far back (an earlier terminal).
                clock += gap;
                let at = if kind == 0 { clock.saturating_sub(jitter) } else { clock };
                if let Some(near) = near {
                    fast.near = near;
                }
                let slot = fast.earliest(at, len);
                let start = slot.start;
                proptest::prop_assert_eq!(start, slow.earliest(at, len));
                fast.reserve(slot, start + len);
                slow.reserve(start, start + len);
                proptest::prop_assert_eq!(fast.floor, slow.floor);
                proptest::prop_assert_eq!(fast.busy(), &slow.busy[..]);
            }
        }
    }

    /// Long enough for the window to slide to the buffer's front many times, with
    /// insertions before the end and merges: same as the reference throughout.
    #[test]
    fn calendar_slides_its_window_without_changing_answers() {
        let (mut fast, mut slow) = (Calendar::default(), ReferenceCalendar::default());
        let (mut clock, mut state, mut slides) = (0u64, 0x2545_F491_4F6C_DD1Du64, 0);
        for _ in 0..20 * CALENDAR_SLOTS {
            // xorshift: gaps, lengths and the odd issue from further back.
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            clock += state % 400;
            let len = 1 + (state >> 16) % 300;
            let at = if (state >> 32) % 3 == 0 { clock.saturating_sub((state >> 40) % 4_000) } else { clock };
            let head = fast.head;
            let slot = fast.earliest(at, len);
            assert_eq!(slot.start, slow.earliest(at, len));
            fast.reserve(slot, slot.start + len);
            slow.reserve(slot.start, slot.start + len);
            slides += usize::from(fast.head < head);
            assert_eq!((fast.floor, fast.busy()), (slow.floor, &slow.busy[..]));
        }
        assert!(slides > 5, "the window slid {slides} times");
    }

    #[test]
    fn a_host_queue_depth_of_one_serialises_reads_but_not_array_work() {
        // Two chips on two channels: without a limit, two reads overlap.
        let mut free = Timelines::new(2, 2, 0);
        free.read(0, 0, 0, 50_000, 10_000);
        assert_eq!(free.read(1, 1, 0, 50_000, 10_000).start_ns, 0);

        let mut qd1 = Timelines::new(2, 2, 1);
        let a = qd1.read(0, 0, 0, 50_000, 10_000);
        assert_eq!(a, OpTiming { start_ns: 0, end_ns: 60_000 });
        // The second read is issued only when the first has returned its data.
        let b = qd1.read(1, 1, 0, 50_000, 10_000);
        assert_eq!(b, OpTiming { start_ns: 60_000, end_ns: 120_000 });
        // A program holds the interface only while its bytes cross; its array time
        // overlaps the next read on the other chip.
        let p = qd1.program(0, 0, 120_000, 500_000, 10_000);
        assert_eq!(p, OpTiming { start_ns: 120_000, end_ns: 630_000 });
        let c = qd1.read(1, 1, 120_000, 50_000, 10_000);
        assert_eq!(c.start_ns, 130_000);
        // A read of the busy chip holds the interface while it waits, so a read of the
        // idle chip issued just after it waits for both.
        let d = qd1.read(0, 0, 190_000, 50_000, 10_000);
        assert_eq!(d, OpTiming { start_ns: 630_000, end_ns: 690_000 });
        let e = qd1.read(1, 1, 190_000, 50_000, 10_000);
        assert_eq!(e.start_ns, 690_000);
        // An erase holds no slot: a read of the other chip goes at once beside it.
        assert_eq!(qd1.chip_only(1, 800_000, 3_000_000).start_ns, 800_000);
        assert_eq!(qd1.read(0, 0, 800_000, 50_000, 10_000).start_ns, 800_000);

        // Depth 2: two reads in flight, the third waits for the first to return.
        let mut qd2 = Timelines::new(3, 3, 2);
        qd2.read(0, 0, 0, 50_000, 10_000);
        assert_eq!(qd2.read(1, 1, 0, 50_000, 10_000).start_ns, 0);
        assert_eq!(qd2.read(2, 2, 0, 50_000, 10_000).start_ns, 60_000);
    }

    #[test]
    fn program_frees_channel_after_transfer() {
        let mut t = Timelines::new(2, 1, 0);
        let a = t.program(0, 0, 0, 200_000, 10_000);
        assert_eq!(a, OpTiming { start_ns: 0, end_ns: 210_000 });
        // Other chip on the same channel can transfer right after.
        let b = t.program(1, 0, 0, 200_000, 10_000);
        assert_eq!(b, OpTiming { start_ns: 10_000, end_ns: 220_000 });
        assert_eq!(t.chip_free_at(0), 210_000);
    }

    #[test]
    fn copyback_and_erase_leave_channel_alone() {
        let mut t = Timelines::new(1, 1, 0);
        let cb = t.copyback(0, 0, 5, 25_000, 200_000, 0);
        assert_eq!(cb, OpTiming { start_ns: 5, end_ns: 225_005 });
        let e = t.chip_only(0, 0, 1_500_000);
        assert_eq!(e, OpTiming { start_ns: 225_005, end_ns: 1_725_005 });
        assert_eq!(e.latency_from(0), 1_725_005);
        // Channel was never occupied: a read on it transfers immediately after its array time.
        let mut t2 = Timelines::new(2, 1, 0);
        t2.chip_only(0, 0, 1_000_000);
        let r = t2.read(1, 0, 0, 10, 10);
        assert_eq!(r.end_ns, 20);
    }
}
