//! The event envelope: the one shape every outbox item (`EVT#<event-id>`) carries and
//! every projector decodes. The payload is typed per event; the envelope names its type
//! and schema version, and decoding upcasts a payload stored at an older version to the
//! current type (see [`EventPayload::upcast`]), so every reader sees current types only.

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
    /// The version this release writes: the highest ever published.
    const SCHEMA_VERSION: u32;
    const CONTEXT: Context;

    /// Reads the payload of `stored`, an event stored at a version older than
    /// [`Self::SCHEMA_VERSION`] (its `schema_version`), as the current type: decoded as
    /// that version's type, then upcast one version at a time. A field a later version
    /// added may be derived from the rest of the envelope (when the event happened, who
    /// published it). `None` when no such version was ever published (the default: only
    /// version 1).
    fn upcast(stored: &EventEnvelope) -> Option<Result<Self, serde_json::Error>> {
        let _ = stored;
        None
    }
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
    /// Written by a newer release than this one (a rolling deployment): the record must
    /// wait, as a dead letter, and be redriven once every reader runs that release.
    #[error(
        "{event_type} v{found_version} was written by a newer release (this one reads up to \
         v{known_version}): redrive it once every worker runs that release"
    )]
    NewerVersion {
        event_type: String,
        found_version: u32,
        known_version: u32,
    },
    /// A version below the current one that was never published (such as 0).
    #[error("{event_type} v{found_version} was never published")]
    UnknownVersion {
        event_type: String,
        found_version: u32,
    },
    #[error("payload does not decode: {0}")]
    Payload(#[from] serde_json::Error),
}

/// The outbox item of `envelope` in partition `pk`: its key (`EVT#<event-id>`), its
/// `event_type` (what the stream filters match) and the envelope in [`OUTBOX_ATTR`].
/// The one writer of outbox items (commands, projectors that publish, erasure, the
/// tests), next to their readers ([`outbox_event`], [`envelope_in`]).
pub fn outbox_item(
    pk: &str,
    envelope: &EventEnvelope,
) -> Result<serde_json::Map<String, serde_json::Value>, serde_json::Error> {
    use serde_json::Value;
    let sk = crate::keys::SortKey::Event(envelope.event_id.clone()).to_string();
    Ok(serde_json::Map::from_iter([
        ("pk".to_owned(), Value::String(pk.to_owned())),
        ("sk".to_owned(), Value::String(sk)),
        (
            "event_type".to_owned(),
            Value::String(envelope.event_type.clone()),
        ),
        (OUTBOX_ATTR.to_owned(), serde_json::to_value(envelope)?),
    ]))
}

/// Whether `item` is an outbox item: an `EVT#<event-id>` key and an envelope in
/// [`OUTBOX_ATTR`].
pub fn is_outbox_item(item: &serde_json::Map<String, serde_json::Value>) -> bool {
    item.get("sk")
        .and_then(serde_json::Value::as_str)
        .is_some_and(|sk| sk.starts_with(crate::keys::prefix::EVENT))
        && item.contains_key(OUTBOX_ATTR)
}

/// The event an outbox item carries: `None` for any other item, an error when its
/// envelope does not decode. For readers of whole items (replay, the tests); a feed,
/// which has the key beside the image, checks the key itself and reads the image with
/// [`envelope_in`].
pub fn outbox_event(
    item: &serde_json::Map<String, serde_json::Value>,
) -> Option<Result<EventEnvelope, serde_json::Error>> {
    if !is_outbox_item(item) {
        return None;
    }
    envelope_in(item)
}

/// The envelope in an item's [`OUTBOX_ATTR`], if it has one, for a reader that knows
/// the item's key from elsewhere (a change record names its key beside the image).
pub fn envelope_in(
    item: &serde_json::Map<String, serde_json::Value>,
) -> Option<Result<EventEnvelope, serde_json::Error>> {
    item.get(OUTBOX_ATTR).map(EventEnvelope::deserialize)
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

    /// Whether the envelope holds a `P`, at whatever version: [`Self::decode`] reads
    /// every published version.
    pub fn is<P: EventPayload>(&self) -> bool {
        self.event_type == P::EVENT_TYPE
    }

    /// Decodes the payload as the current `P`, upcasting it when it was stored at an
    /// older version. A newer version than this release knows is an error, never a guess.
    pub fn decode<P: EventPayload>(&self) -> Result<P, EnvelopeError> {
        if !self.is::<P>() {
            return Err(EnvelopeError::WrongType {
                found: self.event_type.clone(),
                found_version: self.schema_version,
                expected: P::EVENT_TYPE,
                expected_version: P::SCHEMA_VERSION,
            });
        }
        let version = self.schema_version;
        if version == P::SCHEMA_VERSION {
            return Ok(serde_json::from_value(self.payload.clone())?);
        }
        if version > P::SCHEMA_VERSION {
            return Err(EnvelopeError::NewerVersion {
                event_type: self.event_type.clone(),
                found_version: version,
                known_version: P::SCHEMA_VERSION,
            });
        }
        match P::upcast(self) {
            Some(upcast) => Ok(upcast?),
            None => Err(EnvelopeError::UnknownVersion {
                event_type: self.event_type.clone(),
                found_version: version,
            }),
        }
    }

    /// The same event with its payload upcast to the current version of `P` (what a
    /// release that wrote it today would have stored).
    pub fn upcast<P: EventPayload>(&self) -> Result<Self, EnvelopeError> {
        let payload = serde_json::to_value(self.decode::<P>()?)?;
        Ok(Self {
            schema_version: P::SCHEMA_VERSION,
            payload,
            ..self.clone()
        })
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

    /// Version 1 of `SomethingHappened`: the amount was a string.
    #[derive(Debug, Serialize, Deserialize)]
    struct SomethingHappenedV1 {
        amount: String,
    }

    /// `Upgraded` is at version 3: v1 had a string amount, v2 no note.
    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Upgraded {
        amount: u32,
        note: String,
    }

    #[derive(Debug, Serialize, Deserialize)]
    struct UpgradedV2 {
        amount: u32,
    }

    fn v1_to_v2(v1: SomethingHappenedV1) -> UpgradedV2 {
        UpgradedV2 {
            amount: v1.amount.parse().unwrap_or_default(),
        }
    }

    fn v2_to_v3(v2: UpgradedV2) -> Upgraded {
        Upgraded {
            amount: v2.amount,
            note: String::new(),
        }
    }

    impl EventPayload for Upgraded {
        const EVENT_TYPE: &'static str = "Upgraded";
        const SCHEMA_VERSION: u32 = 3;
        const CONTEXT: Context = Context::Nutrition;

        fn upcast(stored: &EventEnvelope) -> Option<Result<Self, serde_json::Error>> {
            let version = stored.schema_version;
            let read = |payload| -> Result<Self, serde_json::Error> {
                Ok(match version {
                    1 => v2_to_v3(v1_to_v2(serde_json::from_value(payload)?)),
                    _ => v2_to_v3(serde_json::from_value(payload)?),
                })
            };
            (1..=2)
                .contains(&version)
                .then(|| read(stored.payload.clone()))
        }
    }

    fn stored(event_type: &str, version: u32, payload: serde_json::Value) -> EventEnvelope {
        EventEnvelope {
            event_type: event_type.into(),
            schema_version: version,
            payload,
            ..sample()
        }
    }

    #[test]
    fn an_outbox_item_is_read_back_as_the_envelope_it_was_built_from() {
        let envelope = sample();
        let item = outbox_item("USER#u", &envelope).expect("serializes");
        assert_eq!(item["pk"], "USER#u");
        assert_eq!(item["sk"], format!("EVT#{}", envelope.event_id));
        assert_eq!(item["event_type"], envelope.event_type.as_str());
        assert!(is_outbox_item(&item));
        let read = outbox_event(&item)
            .expect("an outbox item")
            .expect("decodes");
        assert_eq!(read, envelope);
        let mut other = item.clone();
        other.insert("sk".into(), "MEAL#x".into());
        assert!(
            outbox_event(&other).is_none(),
            "another key is not an outbox item"
        );
    }

    #[test]
    fn every_published_version_decodes_as_the_current_type() {
        let want = Upgraded {
            amount: 5,
            note: String::new(),
        };
        let v1 = stored("Upgraded", 1, serde_json::json!({"amount": "5"}));
        let v2 = stored("Upgraded", 2, serde_json::json!({"amount": 5}));
        let v3 = stored("Upgraded", 3, serde_json::json!({"amount": 5, "note": ""}));
        for envelope in [&v1, &v2, &v3] {
            assert_eq!(envelope.decode::<Upgraded>().expect("decodes"), want);
            assert!(envelope.is::<Upgraded>());
        }
        let upcast = v1.upcast::<Upgraded>().expect("upcasts");
        assert_eq!(upcast.schema_version, 3);
        assert_eq!(upcast.payload, v3.payload);
        assert_eq!(upcast.event_id, v1.event_id);
    }

    #[test]
    fn a_newer_or_never_published_version_is_a_typed_error() {
        let newer = stored(
            "Upgraded",
            4,
            serde_json::json!({"amount": 5, "note": "", "more": 1}),
        );
        assert!(matches!(
            newer.decode::<Upgraded>(),
            Err(EnvelopeError::NewerVersion {
                found_version: 4,
                known_version: 3,
                ..
            })
        ));
        let never = stored("Upgraded", 0, serde_json::json!({"amount": 5}));
        assert!(matches!(
            never.decode::<Upgraded>(),
            Err(EnvelopeError::UnknownVersion {
                found_version: 0,
                ..
            })
        ));
        // An event type without older versions reads only its own.
        let older = stored(
            "SomethingHappened",
            1,
            serde_json::json!({"amount": 7, "note": ""}),
        );
        assert!(matches!(
            older.decode::<SomethingHappened>(),
            Err(EnvelopeError::UnknownVersion {
                found_version: 1,
                ..
            })
        ));
    }

    #[test]
    fn a_stored_old_payload_that_does_not_fit_its_version_is_a_payload_error() {
        let broken = stored("Upgraded", 1, serde_json::json!({"amount": 5}));
        assert!(matches!(
            broken.decode::<Upgraded>(),
            Err(EnvelopeError::Payload(_))
        ));
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

    #[test]
    fn only_an_evt_item_with_an_envelope_is_an_outbox_event() {
        let event = sample();
        let item = |sk: &str, body: Option<serde_json::Value>| {
            let mut item = serde_json::Map::new();
            item.insert("pk".into(), "USER#U1".into());
            item.insert("sk".into(), sk.into());
            if let Some(body) = body {
                item.insert(OUTBOX_ATTR.into(), body);
            }
            item
        };
        let body = serde_json::to_value(&event).expect("serializes");
        let outbox = item(&format!("EVT#{}", event.event_id), Some(body.clone()));
        assert_eq!(
            outbox_event(&outbox).map(|e| e.expect("decodes")),
            Some(event)
        );
        assert!(is_outbox_item(&outbox));
        // Another kind of item holding the same attribute, or an event key without it.
        assert!(outbox_event(&item("MEAL#2026-01-01#M1", Some(body))).is_none());
        assert!(outbox_event(&item("EVT#E1", None)).is_none());
        assert!(!is_outbox_item(&item("EVT#E1", None)));
        // A change record's image need not repeat its key: envelope_in reads the
        // attribute alone.
        let mut image = serde_json::Map::new();
        image.insert(
            OUTBOX_ATTR.into(),
            serde_json::to_value(sample()).expect("json"),
        );
        assert!(outbox_event(&image).is_none());
        assert!(matches!(envelope_in(&image), Some(Ok(_))));
        assert!(envelope_in(&serde_json::Map::new()).is_none());
        // An envelope that does not decode is an error, not a skipped item.
        let broken = item("EVT#E1", Some(serde_json::json!({"event_id": 1})));
        assert!(matches!(outbox_event(&broken), Some(Err(_))));
    }
}
