//! workloads — transactions run against the engine's API, and the driver that runs
//! them in simulated time.
//!
//! [`driver`]: K closed-loop terminals, warm-up, metrics as in the IPA paper.
//! [`tpcb`]: TPC-B. [`tpcc`]: TPC-C. [`tatp`]: TATP. [`bank`]: the power-cut torture test.

pub mod bank;
pub mod driver;
pub mod tatp;
pub mod tpcb;
pub mod tpcc;
