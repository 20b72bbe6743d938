//! workloads — transactions run against the engine's API.
//!
//! [`bank`]: the power-cut torture test (transfers between accounts with a history
//! table and an index, cut at a random flash operation, recovered and checked).

pub mod bank;
