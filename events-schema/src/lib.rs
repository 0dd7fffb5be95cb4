//! The shared contract of Vitals: every crate agrees on keys, tables and events
//! through this crate, and this crate depends on no other Vitals crate.
//!
//! Layout:
//! - [`ids`]: newtype identifiers that can never contain the key delimiter `#`.
//! - [`time`]: calendar days (`YYYY-MM-DD`) and sortable timestamps used inside keys.
//! - [`keys`]: builders and parsers for every partition and sort key of the key map.
//! - [`context`]: the nine bounded contexts.
//! - [`tables`]: the nine context tables as data (keys, GSIs with their justification,
//!   TTL attribute, stream) and the access-pattern document generated from them.
//! - [`envelope`]: the versioned event envelope every outbox item carries.
//! - [`rows`]: the projection rows, one type each, shared by their writer and reader.
//! - [`events`]: the typed, versioned events of each context, with the upcasters of
//!   their older versions.
//! - [`spec`]: what an event declaration describes itself with (catalog entry, schema).
//! - [`catalog`]: every event type, its publishing context and current version.
//! - `schemas` (feature `openapi`): the JSON Schema of every event version.
//! - [`schema_compat`]: whether a changed schema still reads every stored version.

pub mod catalog;
pub mod context;
pub mod envelope;
pub mod events;
pub mod ids;
pub mod item_kinds;
pub mod keys;
pub mod rows;
pub mod schema_compat;
#[cfg(feature = "openapi")]
pub mod schemas;
pub mod spec;
pub mod tables;
pub mod time;

pub use context::Context;
pub use envelope::EventEnvelope;
pub use keys::KeyError;
