//! What a projection is: a named subscription to one source context that applies events
//! to rows of its own table.

use async_trait::async_trait;
use events_schema::Context;
use events_schema::envelope::EventEnvelope;
use infra::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum ProjectionError {
    /// The event does not decode as the type it claims; retrying will not help.
    #[error("event does not decode: {0}")]
    Decode(String),
    /// The event asks for something its subscriber refuses (a command's validation
    /// failed); retrying will not help.
    #[error("rejected: {0}")]
    Rejected(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

#[async_trait]
pub trait Projector: Send + Sync {
    /// The subscription's name, such as `dashboard-from-nutrition`: its checkpoint and
    /// dead-letter queue are kept under it.
    fn name(&self) -> &'static str;
    /// The context whose events it consumes.
    fn source(&self) -> Context;
    /// The context whose table it writes (and where its dead letters go).
    fn target(&self) -> Context;
    /// Applies one event. Must converge: applying an event twice, or events in any
    /// order, leaves the same rows. Events it does not use are ignored.
    async fn apply(&self, event: &EventEnvelope) -> Result<(), ProjectionError>;
}

/// The identity of a subscription inside an `impl Projector`: its name, the context it
/// consumes and the context whose table it writes.
macro_rules! subscription {
    ($name:literal, $source:ident -> $target:ident) => {
        fn name(&self) -> &'static str {
            $name
        }
        fn source(&self) -> events_schema::Context {
            events_schema::Context::$source
        }
        fn target(&self) -> events_schema::Context {
            events_schema::Context::$target
        }
    };
}
pub(crate) use subscription;

/// Decodes an event's payload, as a `ProjectionError`.
pub fn decode<P: events_schema::envelope::EventPayload>(
    event: &EventEnvelope,
) -> Result<P, ProjectionError> {
    event
        .decode::<P>()
        .map_err(|e| ProjectionError::Decode(e.to_string()))
}

/// The `USER#<id>` partition of the user an event belongs to.
pub fn user_pk(event: &EventEnvelope) -> Result<String, ProjectionError> {
    event
        .user_id
        .clone()
        .map(|u| events_schema::keys::PartitionKey::User(u).to_string())
        .ok_or_else(|| ProjectionError::Decode("user event without a user id".into()))
}
