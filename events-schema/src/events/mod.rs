//! The typed, versioned events every context publishes, one module per context. Events
//! are past-tense facts that carry the state the read side needs (a meal event carries
//! the day's totals after it), so projectors never have to read another context.

pub mod activity;
pub mod erasure;
pub mod goals;
pub mod identity;
pub mod integrations;
pub mod nutrition;
pub mod sleep;

use serde::{Deserialize, Serialize};

/// Where a workout or sleep session came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Source {
    /// Entered in the app.
    Manual,
    /// Synced from a wearable provider, with the provider's id for it.
    Provider {
        provider: crate::ids::ProviderName,
        external_id: crate::ids::ExternalId,
    },
}

/// Declares the `EventPayload` impls of a context's events, their catalog entries and
/// (with the `openapi` feature) their JSON Schemas. An event with older versions lists
/// each older version's type and the function that upcasts a stored payload of those
/// versions to the current type:
/// `WorkoutRecorded => 2 { 1: WorkoutRecordedV1 } upcast upcast::workout_recorded`.
macro_rules! events {
    ($context:expr; $($name:ident => $version:literal
        $({ $($old:literal : $old_ty:ty),+ } upcast $upcast:path)?),* $(,)?) => {
        $(impl $crate::envelope::EventPayload for $name {
            const EVENT_TYPE: &'static str = stringify!($name);
            const SCHEMA_VERSION: u32 = $version;
            const CONTEXT: $crate::Context = $context;
            $(fn upcast(
                stored: &$crate::EventEnvelope,
            ) -> Option<Result<Self, serde_json::Error>> {
                $upcast(stored.schema_version, stored.payload.clone())
            })?
        })*
        /// Every event type of this context, for decoders and schema generation.
        pub const EVENT_TYPES: &[&str] = &[$(stringify!($name)),*];
        /// `envelope` with its payload upcast to the current version of its type; `None`
        /// when the type is not one of this context's.
        pub fn upcast(
            envelope: &$crate::EventEnvelope,
        ) -> Option<Result<$crate::EventEnvelope, $crate::envelope::EnvelopeError>> {
            match envelope.event_type.as_str() {
                $(stringify!($name) => Some(envelope.upcast::<$name>()),)*
                _ => None,
            }
        }
        /// This context's entries of the event catalog.
        pub const CATALOG: &[$crate::spec::EventSpec] = &[$($crate::spec::EventSpec {
            event_type: stringify!($name),
            context: Some($context),
            version: $version,
        }),*];
        /// The JSON Schema of every version of this context's events, oldest first.
        #[cfg(feature = "openapi")]
        pub fn schemas() -> Vec<$crate::spec::VersionSchema> {
            vec![$(
                $($($crate::spec::of::<$old_ty>(stringify!($name), $old),)+)?
                $crate::spec::of::<$name>(stringify!($name), $version),
            )*]
        }
    };
}
pub(crate) use events;
