//! The event envelope: the one shape every outbox item (`EVT#<event-id>`) carries and
//! every projector decodes. The payload is typed per event; the envelope names its type
//! and schema version so a consumer can decode, upcast or skip it.

use crate::context::Context;
use crate::ids::{EventId, UserId};
use crate::time::Timestamp;
use serde::{Deserialize, Serialize};

/// The attribute of an outbox item (`EVT#<event-id>`) that holds its envelope.
pub const OUTBOX_ATTR: &str = "envelope";

/// A versioned, typed event as stored in the outbox.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventEnvelope {
    pub event_id: EventId,
    /// Past-tense event name, e.g. `MealLogged`.
    pub event_type: String,
    /// Version of the payload's schema for this event type; starts at 1.
    pub schema_version: u32,
    /// The context that published the event (the table it was written to).
    pub context: Context,
    /// The user the event belongs to (absent for catalog and cache events).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_id: Option<UserId>,
    /// When the fact happened (a meal's time, a workout's start).
    pub occurred_at: Timestamp,
    /// When the command recorded it.
    pub recorded_at: Timestamp,
    /// The event (or command) that caused this one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub causation_id: Option<String>,
    /// Shared by every event of one user request or flow.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub correlation_id: Option<String>,
    pub payload: serde_json::Value,
}

/// An event type with a payload that knows its name and version.
pub trait EventPayload: Serialize + for<'de> Deserialize<'de> {
    const EVENT_TYPE: &'static str;
    const SCHEMA_VERSION: u32;
    const CONTEXT: Context;
}

/// Why an envelope does not hold the payload asked for.
#[derive(Debug, thiserror::Error)]
pub enum EnvelopeError {
    #[error("envelope holds {found} v{found_version}, expected {expected} v{expected_version}")]
    WrongType {
        found: String,
        found_version: u32,
        expected: &'static str,
        expected_version: u32,
    },
    #[error("payload does not decode: {0}")]
    Payload(#[from] serde_json::Error),
}

impl EventEnvelope {
    /// Wraps a typed payload in a fresh envelope.
    pub fn new<P: EventPayload>(
        user_id: Option<UserId>,
        occurred_at: Timestamp,
        payload: &P,
    ) -> Result<Self, serde_json::Error> {
        Ok(Self {
            event_id: EventId::generate(),
            event_type: P::EVENT_TYPE.to_owned(),
            schema_version: P::SCHEMA_VERSION,
            context: P::CONTEXT,
            user_id,
            occurred_at,
            recorded_at: Timestamp::now(),
            causation_id: None,
            correlation_id: None,
            payload: serde_json::to_value(payload)?,
        })
    }

    pub fn caused_by(mut self, causation_id: impl Into<String>) -> Self {
        self.causation_id = Some(causation_id.into());
        self
    }

    pub fn correlated_with(mut self, correlation_id: impl Into<String>) -> Self {
        self.correlation_id = Some(correlation_id.into());
        self
    }

    pub fn is<P: EventPayload>(&self) -> bool {
        self.event_type == P::EVENT_TYPE && self.schema_version == P::SCHEMA_VERSION
    }

    /// Decodes the payload as `P`, checking type and version first.
    pub fn decode<P: EventPayload>(&self) -> Result<P, EnvelopeError> {
        if !self.is::<P>() {
            return Err(EnvelopeError::WrongType {
                found: self.event_type.clone(),
                found_version: self.schema_version,
                expected: P::EVENT_TYPE,
                expected_version: P::SCHEMA_VERSION,
            });
        }
        Ok(serde_json::from_value(self.payload.clone())?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    struct SomethingHappened {
        amount: u32,
        note: String,
    }

    impl EventPayload for SomethingHappened {
        const EVENT_TYPE: &'static str = "SomethingHappened";
        const SCHEMA_VERSION: u32 = 2;
        const CONTEXT: Context = Context::Nutrition;
    }

    #[derive(Debug, Serialize, Deserialize)]
    struct OtherThing {}

    impl EventPayload for OtherThing {
        const EVENT_TYPE: &'static str = "OtherThing";
        const SCHEMA_VERSION: u32 = 1;
        const CONTEXT: Context = Context::Goals;
    }

    fn sample() -> EventEnvelope {
        let payload = SomethingHappened {
            amount: 7,
            note: "ünïcode #1".into(),
        };
        EventEnvelope::new(Some(UserId::generate()), Timestamp::now(), &payload)
            .expect("serializable")
            .caused_by("cmd-1")
            .correlated_with("req-9")
    }

    #[test]
    fn json_round_trip_keeps_every_field() {
        let envelope = sample();
        let json = serde_json::to_string(&envelope).expect("serialize");
        let back: EventEnvelope = serde_json::from_str(&json).expect("deserialize");
        assert_eq!(back, envelope);
        assert_eq!(back.decode::<SomethingHappened>().expect("typed").amount, 7);
    }

    #[test]
    fn wire_form_uses_documented_field_names() {
        let value = serde_json::to_value(sample()).expect("serialize");
        for field in [
            "event_id",
            "event_type",
            "schema_version",
            "context",
            "user_id",
            "occurred_at",
            "recorded_at",
            "causation_id",
            "correlation_id",
            "payload",
        ] {
            assert!(value.get(field).is_some(), "missing {field}");
        }
        assert_eq!(value["context"], "nutrition");
        assert_eq!(value["schema_version"], 2);
    }

    #[test]
    fn optional_fields_may_be_absent() {
        let json = r#"{"event_id":"E1","event_type":"OtherThing","schema_version":1,
            "context":"goals","occurred_at":"2026-01-01T00:00:00.000Z",
            "recorded_at":"2026-01-01T00:00:00.001Z","payload":{}}"#;
        let envelope: EventEnvelope = serde_json::from_str(json).expect("deserialize");
        assert_eq!(envelope.user_id, None);
        assert!(envelope.decode::<OtherThing>().is_ok());
        let again: EventEnvelope =
            serde_json::from_str(&serde_json::to_string(&envelope).expect("ser")).expect("de");
        assert_eq!(again, envelope);
    }

    #[test]
    fn decoding_the_wrong_type_or_bad_ids_is_an_error() {
        assert!(matches!(
            sample().decode::<OtherThing>(),
            Err(EnvelopeError::WrongType { .. })
        ));
        let bad_id = r#"{"event_id":"E#1","event_type":"OtherThing","schema_version":1,
            "context":"goals","occurred_at":"2026-01-01T00:00:00.000Z",
            "recorded_at":"2026-01-01T00:00:00.001Z","payload":{}}"#;
        assert!(serde_json::from_str::<EventEnvelope>(bad_id).is_err());
    }
}
