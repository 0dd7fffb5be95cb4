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
