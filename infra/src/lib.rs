//! Vitals infrastructure: the storage port and its adapters. Nothing above this crate
//! knows which backend is live.
//!
//! Layout:
//! - [`store`]: the storage port: items, keys, conditions, queries, transactions, the
//!   typed errors, and the cursor encoding both backends share.
//! - [`embedded`]: the default backend on fjall (durable commits), with its change log.
//! - [`dynamodb`]: the backend on `aws-sdk-dynamodb`, plus `bootstrap` of the tables.
//! - [`feed`]: the change-feed port and its adapters.
//! - [`dlq`]: dead-letter queues for records a subscription gave up on.
//! - [`table`]: typed per-context table handles (`Table<Nutrition>`), the only storage
//!   access command handlers get.
//! - [`counting`]: a wrapper counting requests, to prove request economy in tests, and
//!   the capacity units they would cost ([`capacity`]: DynamoDB's billing rules).
//! - [`buffered`]: a write-back view of some tables for rebuilds (reads and conditional
//!   writes in memory, the changed rows written in batches at the end).
//! - [`observed`]: one forwarding wrapper that shows an observer each write before it is
//!   passed on and once it took effect; [`logged`] is its observer that logs every write
//!   that took effect (kind of row, no values).
//! - [`slow`]: a wrapper as slow and as strict as DynamoDB (latency, throttling past a
//!   budget), which benchmarks put around their store.
//! - [`aws_client`]: SDK configuration shared by every AWS adapter.

pub mod access;
pub mod aws_client;
pub mod buffered;
pub mod capacity;
pub mod counting;
pub mod dlq;
pub mod dynamodb;
pub mod embedded;
pub mod feed;
pub mod folded;
pub mod logged;
pub mod observed;
pub mod recorded;
pub mod slow;
pub mod store;
pub mod table;

pub use store::{Store, StoreError};

/// The access patterns this crate's own code issues (the dead-letter rows), declared
/// beside the calls (see [`access`]).
pub fn access_patterns() -> Vec<&'static access::AccessPattern> {
    dlq::access::ACCESS.as_flattened().iter().collect()
}
