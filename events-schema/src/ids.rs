//! Newtype identifiers. An id is non-empty, at most 128 bytes, and never contains the
//! key delimiter `#` or a control character, so a key built from it always parses back.
//! New ids are ULIDs: time-ordered, so items sort by creation time within a partition.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// The longest id we accept, in bytes. DynamoDB allows 1 KiB per sort key; ids are a
/// small part of one.
pub const MAX_ID_LEN: usize = 128;

/// Why a string is not a valid id.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdError {
    #[error("{kind} is empty")]
    Empty { kind: &'static str },
    #[error("{kind} is longer than {MAX_ID_LEN} bytes")]
    TooLong { kind: &'static str },
    #[error("{kind} contains the reserved character {ch:?}")]
    ReservedChar { kind: &'static str, ch: char },
}

/// Checks the rules every id shares.
pub fn validate_id(kind: &'static str, raw: &str) -> Result<(), IdError> {
    if raw.is_empty() {
        return Err(IdError::Empty { kind });
    }
    if raw.len() > MAX_ID_LEN {
        return Err(IdError::TooLong { kind });
    }
    if let Some(ch) = raw.chars().find(|c| *c == '#' || c.is_control()) {
        return Err(IdError::ReservedChar { kind, ch });
    }
    Ok(())
}

/// A fresh ULID, greater than every one this process made before: in the same
/// millisecond (or if the clock stepped back) it is the previous one plus one
/// (`ulid::Generator`). So the events one process records sort, by id, in the order it
/// recorded them, however many commits fit in a millisecond (on the embedded store,
/// several: ids that were random within their millisecond put a user's outbox out of
/// order).
pub fn next_ulid() -> ulid::Ulid {
    static GENERATOR: std::sync::Mutex<ulid::Generator> =
        std::sync::Mutex::new(ulid::Generator::new());
    let generated = match GENERATOR.lock() {
        Ok(mut generator) => generator.generate().ok(),
        Err(_) => None,
    };
    // Only 2^80 ids in one millisecond, or a poisoned lock, end up here.
    generated.unwrap_or_else(ulid::Ulid::new)
}

/// A ULID whose time is `at` and whose random part is a hash of `seed`: the same seed
/// and time always give the same id, still time-ordered like a generated one. For ids
/// that must be the same on every delivery and replay of the facts they come from.
pub fn derived_ulid(seed: &str, at: crate::time::Timestamp) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(seed.as_bytes());
    let mut random = [0u8; 16];
    random[6..].copy_from_slice(&digest[..10]);
    ulid::Ulid::from_parts(at.millis().max(0) as u64, u128::from_be_bytes(random)).to_string()
}

macro_rules! define_id {
    ($(#[$meta:meta])* $name:ident, $kind:literal) => {
        $(#[$meta])*
        ///
        /// 1 to 128 bytes, never `#` or a control character; the ids Vitals makes are ULIDs.
        #[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[serde(try_from = "String", into = "String")]
        pub struct $name(String);

        // By hand rather than derived: the document states the constraints `parse`
        // enforces (utoipa cannot put them on a newtype), at most 32 characters so that a
        // value it calls valid always is (at most 128 bytes); the ULIDs are 26.
        #[cfg(feature = "openapi")]
        impl utoipa::PartialSchema for $name {
            fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
                utoipa::openapi::ObjectBuilder::new()
                    .schema_type(utoipa::openapi::schema::Type::String)
                    .description(Some(concat!(
                        "A ", $kind, ": 1 to 32 characters, never `#` or a control character; \
                         the ids Vitals makes are ULIDs."
                    )))
                    .min_length(Some(1))
                    .max_length(Some(32))
                    .pattern(Some(r"^[^#\u0000-\u001f\u007f-\u009f]+$"))
                    .examples(["01JNM7Q3W8X9Y2Z4A5B6C7D8E9"])
                    .into()
            }
        }

        #[cfg(feature = "openapi")]
        impl utoipa::ToSchema for $name {
            fn name() -> std::borrow::Cow<'static, str> {
                stringify!($name).into()
            }
        }

        impl $name {
            /// A fresh, time-ordered id (a ULID), greater than every one this process
            /// generated before (see [`next_ulid`]).
            pub fn generate() -> Self {
                Self(next_ulid().to_string())
            }

            /// The id derived from `seed` and `at` (see [`derived_ulid`]).
            pub fn derived(seed: &str, at: crate::time::Timestamp) -> Self {
                Self(derived_ulid(seed, at))
            }

            /// Validates and wraps an id received from outside.
            pub fn parse(raw: &str) -> Result<Self, IdError> {
                validate_id($kind, raw)?;
                Ok(Self(raw.to_owned()))
            }

            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl FromStr for $name {
            type Err = IdError;
            fn from_str(raw: &str) -> Result<Self, IdError> {
                Self::parse(raw)
            }
        }

        impl TryFrom<String> for $name {
            type Error = IdError;
            fn try_from(raw: String) -> Result<Self, IdError> {
                validate_id($kind, &raw)?;
                Ok(Self(raw))
            }
        }

        impl From<$name> for String {
            fn from(id: $name) -> String {
                id.0
            }
        }
    };
}

define_id!(/// A user (the `USER#<id>` partition of every context).
    UserId, "user id");
define_id!(/// A logged meal.
    MealId, "meal id");
define_id!(/// A scheduled (planned) meal.
    ScheduledMealId, "scheduled meal id");
define_id!(/// A curated recipe of the nutrition catalog.
    RecipeId, "recipe id");
define_id!(/// A curated meal plan of the nutrition catalog.
    MealPlanId, "meal plan id");
define_id!(/// A workout.
    WorkoutId, "workout id");
define_id!(/// A training block.
    TrainingBlockId, "training block id");
define_id!(/// A sleep session.
    SleepId, "sleep id");
define_id!(/// A goal.
    GoalId, "goal id");
define_id!(/// An event (the `EVT#<id>` outbox item and the envelope's id).
    EventId, "event id");
define_id!(/// An id given by an external provider (a wearable's workout id).
    ExternalId, "external id");
define_id!(/// A provider name such as `garmin` or `sandbox`.
    ProviderName, "provider");
define_id!(/// An OAuth `state` value.
    OAuthState, "oauth state");
define_id!(/// A geohash cell of the environment cache.
    Geohash, "geohash");
define_id!(/// A consumer (projector subscription) name, used in dedup markers.
    ConsumerName, "consumer name");
define_id!(/// The operation a client's idempotency key is scoped to (an HTTP route's name).
    OperationName, "operation name");
define_id!(/// A client's idempotency key (`IDEMPOTENCY#<key>` records).
    RequestKey, "idempotency key");
define_id!(/// A webhook delivery's id, as the provider numbers deliveries.
    DeliveryId, "delivery id");
define_id!(/// A user's id at a provider (who a webhook is about).
    ProviderUserId, "provider user id");
define_id!(/// A signed-in session (a chain of refresh tokens).
    SessionId, "session id");

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn generated_ids_are_valid_and_time_ordered() {
        let a = UserId::generate();
        let b = UserId::generate();
        assert!(UserId::parse(a.as_str()).is_ok());
        assert_eq!(a.as_str().len(), 26);
        assert_ne!(a, b);
    }

    #[test]
    fn derived_ids_are_deterministic_valid_and_time_ordered() {
        let at = crate::time::Timestamp::parse("2026-01-01T00:00:00.000Z").expect("valid");
        let later = crate::time::Timestamp::from_millis(at.millis() + 1).expect("valid");
        let id = EventId::derived("a|b", at);
        assert_eq!(id, EventId::derived("a|b", at));
        assert_ne!(id, EventId::derived("a|c", at));
        assert!(EventId::parse(id.as_str()).is_ok());
        assert!(id < EventId::derived("a|b", later));
    }

    #[test]
    fn delimiter_and_controls_are_rejected() {
        assert_eq!(
            MealId::parse("a#b"),
            Err(IdError::ReservedChar {
                kind: "meal id",
                ch: '#'
            })
        );
        assert!(MealId::parse("a\nb").is_err());
        assert_eq!(MealId::parse(""), Err(IdError::Empty { kind: "meal id" }));
        assert!(MealId::parse(&"x".repeat(MAX_ID_LEN + 1)).is_err());
        assert!(MealId::parse(&"x".repeat(MAX_ID_LEN)).is_ok());
    }

    #[test]
    fn serde_validates_on_the_way_in() {
        let ok: Result<GoalId, _> = serde_json::from_str("\"01J\"");
        assert!(ok.is_ok());
        let bad: Result<GoalId, _> = serde_json::from_str("\"a#b\"");
        assert!(bad.is_err());
    }

    proptest! {
        #[test]
        fn parse_never_panics_and_accepted_ids_have_no_delimiter(raw in any::<String>()) {
            if let Ok(id) = UserId::parse(&raw) {
                prop_assert!(!id.as_str().contains('#'));
                prop_assert_eq!(id.as_str(), raw.as_str());
            }
        }
    }

    #[test]
    fn generated_ids_increase_within_a_millisecond() {
        let ids: Vec<EventId> = (0..10_000).map(|_| EventId::generate()).collect();
        assert!(
            ids.windows(2).all(|w| w[0] < w[1]),
            "in the order generated"
        );
    }
}
