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

/// Declares the `EventPayload` impls of a context's events.
macro_rules! events {
    ($context:expr; $($name:ident => $version:literal),* $(,)?) => {
        $(impl $crate::envelope::EventPayload for $name {
            const EVENT_TYPE: &'static str = stringify!($name);
            const SCHEMA_VERSION: u32 = $version;
            const CONTEXT: $crate::Context = $context;
        })*
        /// Every event type of this context, for decoders and schema generation.
        pub const EVENT_TYPES: &[&str] = &[$(stringify!($name)),*];
    };
}
pub(crate) use events;
