//! The model's version: which simulator a kept run was made by.
//!
//! The output directory keys a run on its input and this version ([`crate::store`]), so
//! a run kept by an older model is never reused after a deliberate model change: it is
//! *stale*, made again, and `reproduce` says how many were.
//!
//! The version is the length of [`MODEL_VERSIONS`]: one entry per model, oldest first,
//! each the digest of the `same_results` fixtures (`crates/cli/tests/fixtures/*.json`)
//! that model produces and what changed. A deliberate model change re-blesses those
//! fixtures; the test `tests/model_version.rs` then fails until an entry with the new
//! digest is appended, so the version moves with the fixtures. Entries are never
//! edited, only appended. A model change that leaves the fixtures as they are (one
//! that only experiments' runs reach) appends an entry with the same digest and its
//! reason. One that changes the fixtures but no simulated value (the results gain a
//! field) appends an entry with the new digest that reaches no family: no run is stale.
//!
//! Version 0 is every run kept before runs carried a version (the key of its input
//! alone): stale under any listed version.
//!
//! **Versions per family of runs.** An entry names the families of runs its change
//! reaches ([`Family`]), and a run's version counts only the entries that reach its
//! family ([`version_of`]). A change to the engine's model then leaves the SQLite runs
//! of a long `--full` directory valid, and the other way round. An entry that cannot
//! say which families its change reaches names [`ALL`], as the entries recorded before
//! families were do.

/// A family of runs, by what simulates them: the runs one model change can reach.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// Workloads on the engine (`RunInput::Engine`): IPA, IPL, NoFTL regions, the FTLs
    /// under the engine.
    Engine,
    /// Flash-aware B+-tree benchmarks (`RunInput::Index`).
    Index,
    /// SQLite on emulated flash (`RunInput::Sqlite`): the NoLgn experiments.
    Sqlite,
    /// The SQLite runs on SW-WAL, whose checkpoints remap: a part of [`Family::Sqlite`]
    /// (an entry reaching that reaches these), for a change to remapping alone.
    SqliteSwWal,
}

impl Family {
    /// The family this one is a part of, if any.
    fn within(self) -> Option<Family> {
        match self {
            Family::SqliteSwWal => Some(Family::Sqlite),
            Family::Engine | Family::Index | Family::Sqlite => None,
        }
    }

    /// Whether an entry reaching `families` reaches this family: it names it, or the
    /// family it is a part of.
    fn reached_by(self, families: &[Family]) -> bool {
        families.contains(&self) || self.within().is_some_and(|f| f.reached_by(families))
    }
}

/// Every family: for a change that reaches all runs, or cannot say which.
pub const ALL: &[Family] = &[Family::Engine, Family::Index, Family::Sqlite];

/// One model: the digest of its `same_results` fixtures (see
/// `tests/model_version.rs` for how it is computed), what it changed and which
/// families of runs that change reaches.
pub struct ModelEntry {
    pub fixtures_digest: &'static str,
    pub change: &'static str,
    pub reaches: &'static [Family],
}

/// Every model version, oldest first; append only.
pub const MODEL_VERSIONS: &[ModelEntry] = &[
    ModelEntry {
        fixtures_digest: "67ddd0d1949c56fd",
        change: "the first versioned model: runs kept before are stale",
        reaches: ALL,
    },
    ModelEntry {
        fixtures_digest: "acdeb65aed4fe065",
        change: "SQLite results: transaction latency on the shared percentile type with an exact mean \
                 (`transaction_latency_us_mean`, which NoLgn Fig. 8 reads), flash page I/O latency",
        reaches: ALL,
    },
    ModelEntry {
        fixtures_digest: "acdeb65aed4fe065",
        change: "steady-state preconditioning: an aging chunk at most doubles the last one (every aged run changes)",
        reaches: ALL,
    },
    ModelEntry {
        fixtures_digest: "e780e5344026fbaf",
        change: "per-object counters of where an update write's changed bytes lie (tuples, header, slots)",
        reaches: ALL,
    },
    ModelEntry {
        fixtures_digest: "e780e5344026fbaf",
        change: "IPL: a page's write logs a record per update made while it was buffered, not only its net change",
        reaches: ALL,
    },
    ModelEntry {
        fixtures_digest: "a1c70d3980a2281f",
        change: "SQLite built without SQLITE_ENABLE_MEMORY_MANAGEMENT: SQLite runs side by side in one process \
                 (`--jobs N`) no longer share one page-cache group that recycled each other's pages, so a SQLite \
                 run kept from such a directory is made again (a run alone gives what it gave); the fixtures also \
                 gained the engine's write latency by kind and exact small update sizes, which change no value",
        reaches: &[Family::Sqlite],
    },
    ModelEntry {
        fixtures_digest: "648a8fc98b7bc0e2",
        change: "the engine's results gain `page_writes_by_cause` (the page writes evictions, the cleaner and \
                 checkpoints made, and the checkpoints taken); no simulated value changes, so no kept run is stale",
        reaches: &[],
    },
    ModelEntry {
        fixtures_digest: "648a8fc98b7bc0e2",
        change: "SW-WAL: the page FTL issues a remap batch's source OOB reads together (one after another \
                 before), and the host page cache keeps a remapped database page's bytes as it keeps a page \
                 written back (it forgot them, so the next read of each went to flash)",
        reaches: &[Family::SqliteSwWal],
    },
    ModelEntry {
        fixtures_digest: "281f15f05932c03e",
        change: "engine results gain `buffer_mib`, the buffer pool while measuring, and the switch \
                 `engine.buffer_of_aged_database` (off: as before); no simulated value changes",
        reaches: &[],
    },
];

/// The current model's version for runs of `family`: how many entries reach it (1 for
/// the first entry; 0 for runs kept without a version).
pub fn version_of(family: Family) -> u32 {
    version_in(MODEL_VERSIONS, family)
}

fn version_in(entries: &[ModelEntry], family: Family) -> u32 {
    let reaching = entries.iter().filter(|m| family.reached_by(m.reaches)).count();
    u32::try_from(reaching).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    const fn entry(reaches: &'static [Family]) -> ModelEntry {
        ModelEntry { fixtures_digest: "0", change: "c", reaches }
    }

    #[test]
    fn a_change_moves_only_the_versions_of_the_families_it_reaches() {
        let entries = [entry(ALL), entry(&[Family::Engine]), entry(&[Family::Engine, Family::Index])];
        assert_eq!(version_in(&entries, Family::Engine), 3);
        assert_eq!(version_in(&entries, Family::Index), 2);
        assert_eq!(version_in(&entries, Family::Sqlite), 1, "SQLite runs kept under the first model stay valid");
    }

    #[test]
    fn a_change_to_all_sqlite_runs_reaches_the_sw_wal_ones_and_not_the_other_way() {
        let entries = [entry(ALL), entry(&[Family::Sqlite]), entry(&[Family::SqliteSwWal])];
        assert_eq!(version_in(&entries, Family::SqliteSwWal), 3);
        assert_eq!(version_in(&entries, Family::Sqlite), 2);
        assert_eq!(version_in(&entries, Family::Engine), 1);
        // Today's versions: the SW-WAL runs are one change ahead of the other SQLite runs.
        assert_eq!(version_of(Family::SqliteSwWal), version_of(Family::Sqlite) + 1);
    }

    #[test]
    fn the_first_entry_reaches_every_family() {
        assert_eq!(MODEL_VERSIONS[0].reaches, ALL);
        assert!(ALL.iter().all(|f| version_of(*f) >= 1));
    }
}
