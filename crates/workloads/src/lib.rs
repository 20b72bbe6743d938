//! workloads — transactions run against the engine's API, and the driver that runs
//! them in simulated time.
//!
//! [`driver`]: K closed-loop terminals, warm-up, metrics as in the IPA paper.
//! [`tpcb`]: TPC-B. [`tpcc`]: TPC-C. [`tatp`]: TATP. [`bank`]: the power-cut torture test.

#![forbid(unsafe_code)]

pub mod bank;
pub mod driver;
pub mod tatp;
pub mod tpcb;
pub mod tpcc;

use engine::types::Value;

/// An engine error as the driver's error text.
pub(crate) fn err(e: engine::Error) -> String {
    e.to_string()
}

/// An integer column's value (a DECIMAL's scaled integer); 0 for anything else.
pub(crate) fn int(v: &Value) -> i64 {
    match v {
        Value::Int(i) => *i,
        Value::Decimal { scaled, .. } => *scaled,
        _ => 0,
    }
}
