//! Account erasure across contexts. Identity's `AccountDeletionRequested` starts it;
//! every other context answers with `PartitionDrained` once nothing of the user is left
//! in its table.

use crate::Context;
use serde::{Deserialize, Serialize};

/// A context has erased everything it held of a user: its `USER#` partition, and the
/// items it owns elsewhere. Published by each context in turn: the envelope's context
/// (and this field) says which. Its outbox item lives in the context's `ERASED#`
/// partition, never in the drained one, and is removed once written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PartitionDrained {
    pub context: Context,
    /// Items deleted (partition and owned items elsewhere).
    pub items_deleted: u64,
}

impl crate::envelope::EventPayload for PartitionDrained {
    const EVENT_TYPE: &'static str = "PartitionDrained";
    const SCHEMA_VERSION: u32 = 1;
    /// Nominal: every context publishes it; `EventEnvelope::new` stamps this and the
    /// publisher overwrites it with its own context.
    const CONTEXT: Context = Context::Identity;
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
    version: 1,
}];

/// The JSON Schema of every version of `PartitionDrained`.
#[cfg(feature = "openapi")]
pub fn schemas() -> Vec<crate::spec::VersionSchema> {
    vec![crate::spec::of::<PartitionDrained>("PartitionDrained", 1)]
}
