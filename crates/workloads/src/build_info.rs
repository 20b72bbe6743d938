//! What every result records about the build that made it.

/// The commit this crate was built from (`git rev-parse HEAD`; "unknown" without git).
pub const GIT_COMMIT: &str = env!("DELTAFLASH_GIT_COMMIT");

/// The release this crate belongs to (the workspace's version): every result records it,
/// so a result re-run on another release can say so.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
