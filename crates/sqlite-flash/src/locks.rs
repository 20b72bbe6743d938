//! File locks and WAL-index (`-shm`) locks among the connections of one instance, as
//! SQLite's unix VFS keeps them among the connections of one process.
//!
//! Invariants (per file): at most one handle holds a lock above SHARED; while it holds
//! PENDING or EXCLUSIVE no new SHARED lock is granted; EXCLUSIVE is granted only when
//! it is the sole SHARED holder. A shm slot has either one exclusive holder or any
//! number of shared holders. Locks live in RAM only (a power cut drops them with the
//! connections).

use std::collections::HashMap;

/// SQLite's lock levels (`SQLITE_LOCK_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    None = 0,
    Shared = 1,
    Reserved = 2,
    Pending = 3,
    Exclusive = 4,
}

impl Level {
    pub fn from_sqlite(level: i32) -> Level {
        match level {
            1 => Level::Shared,
            2 => Level::Reserved,
            3 => Level::Pending,
            4 => Level::Exclusive,
            _ => Level::None,
        }
    }
}

/// A lock request that must wait for another connection (`SQLITE_BUSY`).
#[derive(Debug, PartialEq, Eq)]
pub struct Busy;

#[derive(Default)]
struct FileLock {
    /// Handles holding SHARED or more.
    readers: u32,
    /// The handle holding RESERVED, PENDING or EXCLUSIVE, and its level.
    writer: Option<(u64, Level)>,
}

#[derive(Default)]
struct ShmLock {
    shared: [u32; 8],
    exclusive: [Option<u64>; 8],
}

/// Every lock of one instance, by file name; handles are identified by a number.
#[derive(Default)]
pub struct LockTable {
    files: HashMap<String, FileLock>,
    shm: HashMap<String, ShmLock>,
}

impl LockTable {
    /// Raises `handle`'s lock on `name` from `held` to `want`; returns the level held
    /// afterwards, or `Busy` (holding what the returned level in `Err` says).
    pub fn lock(&mut self, name: &str, handle: u64, held: Level, want: Level) -> Result<Level, (Busy, Level)> {
        if held >= want {
            return Ok(held);
        }
        let f = self.files.entry(name.to_string()).or_default();
        let other_writer = f.writer.filter(|(h, _)| *h != handle);
        match want {
            Level::None => Ok(held),
            Level::Shared => match other_writer {
                Some((_, level)) if level >= Level::Pending => Err((Busy, held)),
                _ => {
                    f.readers += 1;
                    Ok(Level::Shared)
                }
            },
            Level::Reserved => {
                if other_writer.is_some() {
                    return Err((Busy, held));
                }
                f.writer = Some((handle, Level::Reserved));
                Ok(Level::Reserved)
            }
            Level::Pending | Level::Exclusive => {
                if other_writer.is_some() {
                    return Err((Busy, held));
                }
                if f.readers > 1 {
                    // PENDING keeps new readers out until the others leave.
                    f.writer = Some((handle, Level::Pending));
                    return Err((Busy, Level::Pending));
                }
                f.writer = Some((handle, Level::Exclusive));
                Ok(Level::Exclusive)
            }
        }
    }

    /// Lowers `handle`'s lock on `name` from `held` to `to` (SHARED or NONE).
    pub fn unlock(&mut self, name: &str, handle: u64, held: Level, to: Level) -> Level {
        if held <= to {
            return held;
        }
        let f = self.files.entry(name.to_string()).or_default();
        if held > Level::Shared && f.writer.is_some_and(|(h, _)| h == handle) {
            f.writer = None;
        }
        if to == Level::None && held >= Level::Shared {
            f.readers = f.readers.saturating_sub(1);
        }
        if f.readers == 0 && f.writer.is_none() {
            self.files.remove(name);
        }
        to
    }

    /// Whether any handle holds RESERVED or more on `name`.
    pub fn reserved(&self, name: &str) -> bool {
        self.files.get(name).is_some_and(|f| f.writer.is_some())
    }

    /// Takes or releases shm slots `[offset, offset + n)` for `handle`, whose current
    /// holdings are the bit masks `shared` and `exclusive` (updated on success).
    #[allow(clippy::too_many_arguments)]
    pub fn shm_lock(
        &mut self,
        name: &str,
        handle: u64,
        slots: std::ops::Range<usize>,
        lock: bool,
        exclusive_mode: bool,
        shared: &mut u8,
        exclusive: &mut u8,
    ) -> Result<(), Busy> {
        let s = self.shm.entry(name.to_string()).or_default();
        let slots = slots.start.min(8)..slots.end.min(8);
        if !lock {
            for i in slots {
                let bit = 1u8 << i;
                if *shared & bit != 0 {
                    s.shared[i] = s.shared[i].saturating_sub(1);
                }
                if *exclusive & bit != 0 && s.exclusive[i] == Some(handle) {
                    s.exclusive[i] = None;
                }
                *shared &= !bit;
                *exclusive &= !bit;
            }
            return Ok(());
        }
        for i in slots.clone() {
            let bit = 1u8 << i;
            let other_exclusive = s.exclusive[i].is_some_and(|h| h != handle);
            let other_shared = s.shared[i] - u32::from(*shared & bit != 0) > 0;
            if other_exclusive || (exclusive_mode && other_shared) {
                return Err(Busy);
            }
        }
        for i in slots {
            let bit = 1u8 << i;
            if exclusive_mode {
                s.exclusive[i] = Some(handle);
                *exclusive |= bit;
            } else if *shared & bit == 0 {
                s.shared[i] += 1;
                *shared |= bit;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_writer_waits_for_readers_and_blocks_new_ones() {
        let mut t = LockTable::default();
        assert_eq!(t.lock("db", 1, Level::None, Level::Shared), Ok(Level::Shared));
        assert_eq!(t.lock("db", 2, Level::None, Level::Shared), Ok(Level::Shared));
        assert_eq!(t.lock("db", 1, Level::Shared, Level::Reserved), Ok(Level::Reserved));
        assert!(t.reserved("db"));
        assert_eq!(t.lock("db", 2, Level::Shared, Level::Reserved), Err((Busy, Level::Shared)));
        assert_eq!(t.lock("db", 1, Level::Reserved, Level::Exclusive), Err((Busy, Level::Pending)));
        assert_eq!(t.lock("db", 3, Level::None, Level::Shared), Err((Busy, Level::None)));
        assert_eq!(t.unlock("db", 2, Level::Shared, Level::None), Level::None);
        assert_eq!(t.lock("db", 1, Level::Pending, Level::Exclusive), Ok(Level::Exclusive));
        assert_eq!(t.unlock("db", 1, Level::Exclusive, Level::Shared), Level::Shared);
        assert!(!t.reserved("db"));
        assert_eq!(t.lock("db", 3, Level::None, Level::Shared), Ok(Level::Shared));
    }

    #[test]
    fn shm_slots_are_shared_or_exclusive() {
        let mut t = LockTable::default();
        let (mut s1, mut x1, mut s2, mut x2) = (0, 0, 0, 0);
        assert_eq!(t.shm_lock("w", 1, 3..4, true, false, &mut s1, &mut x1), Ok(()));
        assert_eq!(t.shm_lock("w", 2, 3..4, true, true, &mut s2, &mut x2), Err(Busy));
        assert_eq!(t.shm_lock("w", 2, 0..1, true, true, &mut s2, &mut x2), Ok(()));
        assert_eq!(t.shm_lock("w", 1, 0..2, true, false, &mut s1, &mut x1), Err(Busy));
        assert_eq!(t.shm_lock("w", 1, 3..4, false, false, &mut s1, &mut x1), Ok(()));
        assert_eq!(t.shm_lock("w", 2, 3..4, true, true, &mut s2, &mut x2), Ok(()));
        assert_eq!((x2, s1), (0b1001, 0));
    }
}
