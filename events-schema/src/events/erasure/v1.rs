//! Version 1 of `PartitionDrained`, published while every context erased a user at once
//! on identity's request (before the erasure became a chain). Stored events of it stay
//! readable: decoding one reads it as this type and upcasts it to the current version.
//! The type is frozen: its schema is the one published as `PartitionDrained.v1.json`
//! (hence the original's name and description).

use super::PartitionDrained;
use crate::EventEnvelope;
use crate::context::Context;
use serde::{Deserialize, Serialize};

/// A context has erased everything it held of a user: its `USER#` partition, and the
/// items it owns elsewhere. Published by each context in turn: the envelope's context
/// (and this field) says which. Its outbox item lives in the context's `ERASED#`
/// partition, never in the drained one, and is removed once written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = PartitionDrained))]
pub struct PartitionDrainedV1 {
    pub context: Context,
    /// Items deleted (partition and owned items elsewhere).
    pub items_deleted: u64,
}

/// Reads a stored `PartitionDrained` of an older version as the current one. Version 1
/// carried neither the request's time nor the contexts drained before: the event's own
/// time stands for the first (the one it derives ids from when it sets off an eraser),
/// and it speaks for its own context only.
pub(crate) fn partition_drained(
    stored: &EventEnvelope,
) -> Option<Result<PartitionDrained, serde_json::Error>> {
    match stored.schema_version {
        1 => Some(
            serde_json::from_value::<PartitionDrainedV1>(stored.payload.clone()).map(|v1| {
                PartitionDrained {
                    context: v1.context,
                    items_deleted: v1.items_deleted,
                    requested_at: stored.occurred_at,
                    drained: vec![v1.context],
                }
            }),
        ),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::envelope::EnvelopeError;
    use crate::time::Timestamp;
    use serde_json::{Value, json};

    fn stored(version: u32, payload: Value) -> EventEnvelope {
        let json = json!({
            "event_id": "01M8YCQX6DMYDPRTQG84F67J8E", "event_type": "PartitionDrained",
            "schema_version": version, "context": "nutrition",
            "user_id": "01M8YCQX5B39R9Q5TX3FAWYCCK",
            "occurred_at": "2026-12-03T16:45:29.165Z", "recorded_at": "2026-12-03T16:45:30.000Z",
            "payload": payload
        });
        serde_json::from_value(json).expect("an envelope")
    }

    #[test]
    fn a_stored_v1_reads_as_v2_requested_when_it_happened_and_draining_only_its_context() {
        let v1 = stored(1, json!({"context": "nutrition", "items_deleted": 3}));
        let drained: PartitionDrained = v1.decode().expect("upcast");
        assert_eq!(
            drained,
            PartitionDrained {
                context: Context::Nutrition,
                items_deleted: 3,
                requested_at: Timestamp::parse("2026-12-03T16:45:29.165Z").expect("time"),
                drained: vec![Context::Nutrition],
            }
        );
        let upcast = v1.upcast::<PartitionDrained>().expect("upcast envelope");
        assert_eq!(upcast.schema_version, 2);
        assert_eq!(upcast.event_id, v1.event_id);
        assert_eq!(upcast.occurred_at, v1.occurred_at);
    }

    #[test]
    fn a_v2_payload_reads_as_written() {
        let payload = json!({
            "context": "goals", "items_deleted": 0,
            "requested_at": "2026-12-03T16:00:00.000Z",
            "drained": ["integrations", "activity", "nutrition", "goals"]
        });
        let drained: PartitionDrained = stored(2, payload).decode().expect("decodes");
        assert_eq!(drained.context, Context::Goals);
        assert_eq!(drained.drained.len(), 4);
        assert_eq!(
            drained.requested_at,
            Timestamp::parse("2026-12-03T16:00:00.000Z").expect("time")
        );
    }

    #[test]
    fn a_v1_payload_missing_a_field_it_always_had_is_an_error_not_a_guess() {
        let broken = stored(1, json!({"context": "nutrition"}));
        assert!(matches!(
            broken.decode::<PartitionDrained>(),
            Err(EnvelopeError::Payload(_))
        ));
    }
}
