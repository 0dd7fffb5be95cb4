//! Account erasure across contexts. Identity's `AccountDeletionRequested` starts it;
//! the contexts then erase the user one after another, each answering with
//! `PartitionDrained` once nothing of the user is left in its table, which sets off the
//! next (the order is `projectors::erasure::ERASURE_CHAIN`). `PartitionDrained` is at
//! version 2 (the request's time and the contexts drained so far); [`v1`] keeps version
//! 1 readable.

pub mod v1;

use crate::Context;
use crate::time::Timestamp;
use serde::{Deserialize, Serialize};

/// A context has erased everything it held of a user: its `USER#` partition, and the
/// items it owns elsewhere. Published by each context of the erasure chain in turn (the
/// envelope's context and this field say which): it sets off the next context's
/// eraser, and the last context's completes the erasure in identity. Its outbox item
/// lives in the context's `ERASED#` partition, never in the drained one, and is removed
/// once written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PartitionDrained {
    pub context: Context,
    /// Items deleted (partition and owned items elsewhere).
    pub items_deleted: u64,
    /// When the account's deletion was requested (identity's `AccountDeletionRequested`),
    /// carried from context to context: every tombstone of the erasure records it, and
    /// each context's `PartitionDrained` derives its id from it.
    pub requested_at: Timestamp,
    /// Every context drained so far in this erasure, in the chain's order, this one
    /// last.
    pub drained: Vec<Context>,
}

impl crate::envelope::EventPayload for PartitionDrained {
    const EVENT_TYPE: &'static str = "PartitionDrained";
    const SCHEMA_VERSION: u32 = 2;
    /// Nominal: every context publishes it; `EventEnvelope::new` stamps this and the
    /// publisher overwrites it with its own context.
    const CONTEXT: Context = Context::Identity;

    fn upcast(stored: &crate::EventEnvelope) -> Option<Result<Self, serde_json::Error>> {
        v1::partition_drained(stored)
    }
}

/// `envelope` upcast to the current `PartitionDrained`; `None` for another type.
pub fn upcast(
    envelope: &crate::EventEnvelope,
) -> Option<Result<crate::EventEnvelope, crate::envelope::EnvelopeError>> {
    (envelope.event_type == "PartitionDrained").then(|| envelope.upcast::<PartitionDrained>())
}

/// This context's entry of the event catalog: published by every context.
pub const CATALOG: &[crate::spec::EventSpec] = &[crate::spec::EventSpec {
    event_type: "PartitionDrained",
    context: None,
    version: 2,
}];

/// The JSON Schema of every version of `PartitionDrained`, oldest first.
#[cfg(feature = "openapi")]
pub fn schemas() -> Vec<crate::spec::VersionSchema> {
    vec![
        crate::spec::of::<v1::PartitionDrainedV1>("PartitionDrained", 1),
        crate::spec::of::<PartitionDrained>("PartitionDrained", 2),
    ]
}
