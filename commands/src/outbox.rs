//! The outbox: every event is an `EVT#<event-id>` item written in the same transaction
//! as the state it describes. It is the durable event log replay reads and the only
//! kind of record projectors consume. The item itself is built by
//! `events_schema::envelope::outbox_item`, beside its readers.

use crate::CommandError;
use crate::meta::CommandMeta;
use events_schema::envelope::{EventEnvelope, EventPayload, outbox_item};
use events_schema::time::{Clock, Timestamp};
use infra::store::Condition;
use infra::table::Action;

/// A new envelope for `payload`, stamped with the command's user and correlation and
/// recorded at the handler's clock's now.
pub fn envelope<P: EventPayload>(
    meta: &CommandMeta,
    clock: &Clock,
    occurred_at: Timestamp,
    payload: &P,
) -> Result<EventEnvelope, CommandError> {
    let mut envelope = EventEnvelope::new(Some(meta.user.clone()), occurred_at, payload)
        .map_err(|e| CommandError::Internal(format!("event does not serialize: {e}")))?;
    envelope.correlation_id = meta
        .correlation_id
        .clone()
        .or_else(crate::correlation::current);
    envelope.recorded_at = clock.now();
    Ok(envelope)
}

/// The transaction action that writes an event (event ids are fresh, never overwritten).
pub fn event_action(pk: &str, envelope: &EventEnvelope) -> Result<Action, CommandError> {
    Ok(Action::Put {
        item: outbox_item(pk, envelope)
            .map_err(|e| CommandError::Internal(format!("event does not serialize: {e}")))?,
        condition: Some(Condition::ItemNotExists),
    })
}
