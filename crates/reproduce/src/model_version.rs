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
//! reason.
//!
//! Version 0 is every run kept before runs carried a version (the key of its input
//! alone): stale under any listed version.

/// One model: the digest of its `same_results` fixtures (see
/// `tests/model_version.rs` for how it is computed) and what it changed.
pub struct ModelEntry {
    pub fixtures_digest: &'static str,
    pub change: &'static str,
}

/// Every model version, oldest first; append only.
pub const MODEL_VERSIONS: &[ModelEntry] = &[
    ModelEntry { fixtures_digest: "67ddd0d1949c56fd", change: "the first versioned model: runs kept before are stale" },
    ModelEntry {
        fixtures_digest: "acdeb65aed4fe065",
        change: "SQLite results: transaction latency on the shared percentile type with an exact mean \
                 (`transaction_latency_us_mean`, which NoLgn Fig. 8 reads), flash page I/O latency",
    },
    ModelEntry {
        fixtures_digest: "acdeb65aed4fe065",
        change: "steady-state preconditioning: an aging chunk at most doubles the last one (every aged run changes)",
    },
    ModelEntry {
        fixtures_digest: "e780e5344026fbaf",
        change: "per-object counters of where an update write's changed bytes lie (tuples, header, slots)",
    },
    ModelEntry {
        fixtures_digest: "e780e5344026fbaf",
        change: "IPL: a page's write logs a record per update made while it was buffered, not only its net change",
    },
];

/// The current model's version (1 for the first entry; 0 for runs kept without one).
pub const MODEL_VERSION: u32 = MODEL_VERSIONS.len() as u32;
