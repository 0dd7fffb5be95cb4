//! The outbox: every event is an `EVT#<event-id>` item written in the same transaction
//! as the state it describes. It is the durable event log replay reads and the only
//! kind of record projectors consume.

use crate::CommandError;
use crate::meta::CommandMeta;
use events_schema::envelope::{EventEnvelope, EventPayload, OUTBOX_ATTR};
use events_schema::keys::SortKey;
use events_schema::time::{Clock, Timestamp};
use infra::store::{Condition, Item};
use infra::table::Action;
use serde_json::Value;

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

/// The outbox item of an envelope, in partition `pk`.
pub fn event_item(pk: &str, envelope: &EventEnvelope) -> Result<Item, CommandError> {
    let body = serde_json::to_value(envelope)
        .map_err(|e| CommandError::Internal(format!("event does not serialize: {e}")))?;
    let mut item = Item::new();
    item.insert("pk".into(), Value::String(pk.to_owned()));
    item.insert(
        "sk".into(),
        Value::String(SortKey::Event(envelope.event_id.clone()).to_string()),
    );
    item.insert(
        "event_type".into(),
        Value::String(envelope.event_type.clone()),
    );
    item.insert(OUTBOX_ATTR.into(), body);
    Ok(item)
}

/// The transaction action that writes an event (event ids are fresh, never overwritten).
pub fn event_action(pk: &str, envelope: &EventEnvelope) -> Result<Action, CommandError> {
    Ok(Action::Put {
        item: event_item(pk, envelope)?,
        condition: Some(Condition::ItemNotExists),
    })
}
