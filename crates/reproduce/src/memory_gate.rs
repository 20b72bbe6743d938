//! How many runs may go on at once under `reproduce --jobs N`: each run's device sizes
//! its page budget from the memory available when it starts (`workloads::limits`), so N
//! runs started together would each count the same free memory as their own. The gate
//! admits a run only when its estimated peak ([`crate::cost::Estimate::peak_bytes`])
//! fits beside the estimated peaks of the runs going on, within the memory the
//! invocation found available; a run that fits nowhere beside others runs alone (it was
//! not refused, so it fits by itself).

use std::sync::{Condvar, Mutex};

/// The memory the runs of one invocation share, and what the runs going on hold of it.
pub struct MemoryGate {
    /// Bytes the runs may hold together; `None` when unknown (no gate).
    limit_bytes: Option<u64>,
    /// Estimated peak bytes of the runs admitted and not yet finished, and how many.
    held: Mutex<Held>,
    released: Condvar,
}

#[derive(Default)]
struct Held {
    bytes: u64,
    runs: usize,
}

/// A run's admission: its bytes return to the gate when it is dropped.
pub struct Admission<'a> {
    gate: &'a MemoryGate,
    bytes: u64,
}

impl MemoryGate {
    pub fn new(limit_bytes: Option<u64>) -> MemoryGate {
        MemoryGate { limit_bytes, held: Mutex::new(Held::default()), released: Condvar::new() }
    }

    /// Admits a run of `peak_bytes` if it fits now beside the runs going on (or none is
    /// going on); `None` if it must wait.
    pub fn try_admit(&self, peak_bytes: u64) -> Option<Admission<'_>> {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        self.take(&mut held, peak_bytes)
    }

    /// Admits a run of `peak_bytes`, waiting until it fits; `waiting` is called once,
    /// with the bytes the runs going on hold, if it has to wait.
    pub fn admit(&self, peak_bytes: u64, waiting: impl FnOnce(u64)) -> Admission<'_> {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        let mut waiting = Some(waiting);
        loop {
            if let Some(admission) = self.take(&mut held, peak_bytes) {
                return admission;
            }
            if let Some(w) = waiting.take() {
                w(held.bytes);
            }
            held = self.released.wait(held).unwrap_or_else(|e| e.into_inner());
        }
    }

    fn take(&self, held: &mut Held, peak_bytes: u64) -> Option<Admission<'_>> {
        let fits = match self.limit_bytes {
            None => true,
            Some(limit) => held.runs == 0 || held.bytes.saturating_add(peak_bytes) <= limit,
        };
        fits.then(|| {
            held.bytes += peak_bytes;
            held.runs += 1;
            Admission { gate: self, bytes: peak_bytes }
        })
    }
}

impl Drop for Admission<'_> {
    fn drop(&mut self) {
        let mut held = self.gate.held.lock().unwrap_or_else(|e| e.into_inner());
        held.bytes -= self.bytes;
        held.runs -= 1;
        drop(held);
        self.gate.released.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;

    #[test]
    fn a_run_waits_while_its_peak_does_not_fit_beside_the_runs_going_on() {
        let gate = MemoryGate::new(Some(10 * GIB));
        let first = gate.try_admit(6 * GIB).expect("the first run fits");
        assert!(gate.try_admit(6 * GIB).is_none(), "6 + 6 GiB exceed the 10 available");
        let small = gate.try_admit(4 * GIB).expect("6 + 4 GiB fit");
        drop(first);
        assert!(gate.try_admit(7 * GIB).is_none(), "4 + 7 GiB exceed the 10");
        drop(small);
        assert!(gate.try_admit(7 * GIB).is_some(), "alone it fits");
    }

    #[test]
    fn a_run_larger_than_the_limit_runs_alone_and_without_a_limit_every_run_goes() {
        let gate = MemoryGate::new(Some(GIB));
        let alone = gate.try_admit(3 * GIB).expect("nothing else runs: it goes");
        assert!(gate.try_admit(1).is_none());
        drop(alone);
        let open = MemoryGate::new(None);
        let _a = open.try_admit(100 * GIB).unwrap();
        assert!(open.try_admit(100 * GIB).is_some());
    }

    #[test]
    fn a_waiting_run_starts_when_another_finishes() {
        let gate = MemoryGate::new(Some(10 * GIB));
        let first = gate.try_admit(8 * GIB).unwrap();
        let (told_tx, told_rx) = std::sync::mpsc::channel();
        std::thread::scope(|s| {
            let waiter = s.spawn(|| {
                let _second = gate.admit(8 * GIB, |held| told_tx.send(held).unwrap());
            });
            assert_eq!(told_rx.recv().unwrap(), 8 * GIB, "the second run waits and says why");
            drop(first);
            waiter.join().unwrap();
        });
        assert!(gate.try_admit(10 * GIB).is_some(), "both runs returned their bytes");
    }
}
