//! engine — the DeltaFlash storage engine over a page device (NoFTL regions or an FTL).
//!
//! Layers, top down: [`db`] (the `Database` API; statements run in `exec`,
//! transactions in `txn`) → [`catalog`] and [`sql`] (schema, DDL and the statement
//! parser) → access methods [`heap`] and [`btree`] → [`buffer`] (frames, replacement,
//! page cleaner) → [`store`] (DB pages on a `flash::PageDevice`: fetch with
//! delta-records applied, out-of-place writes or `write_delta`). Beside them,
//! [`journal`] (how commits become durable: the ARIES [`log`], none, or NoLgn-FTL's
//! transactions, [`nolgn`]) and [`oplog`]
//! (logging page changes). The page bytes are [`page`] (NSM slotted page) and
//! [`delta`] (IPA records); [`types`] encodes rows and order-preserving keys.

#![forbid(unsafe_code)]

mod alter;
pub mod btree;
pub mod buffer;
pub mod catalog;
pub mod db;
pub mod delta;
pub mod error;
pub mod heap;
mod ipl_log;
pub mod journal;
pub mod latency;
pub mod log;
pub mod logrec;
mod node;
pub mod nolgn;
pub mod oplog;
pub mod page;
mod recovery;
pub mod space;
pub mod sql;
pub mod store;
pub mod types;

pub use db::Transaction;
pub use db::{Database, DbOptions, QueryResult};
pub use delta::IpaScheme;
pub use error::{Error, Result};
pub use journal::JournalKind;
