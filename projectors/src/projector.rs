//! What a projection is: a named subscription to one source context that applies events
//! to rows of its own table.

use async_trait::async_trait;
use events_schema::Context;
use events_schema::envelope::EventEnvelope;
use events_schema::ids::UserId;
use infra::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum ProjectionError {
    /// The event does not decode as the type it claims; retrying will not help.
    #[error("event does not decode: {0}")]
    Decode(String),
    /// The event was written by a newer release than this one (a rolling deployment):
    /// it waits as a dead letter until a redrive on that release applies it.
    #[error("{0}")]
    NewerVersion(String),
    /// The event asks for something its subscriber refuses (a command's validation
    /// failed); retrying will not help.
    #[error("rejected: {0}")]
    Rejected(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Who a projection is: its name, the context it consumes, the context whose table it
/// writes and the event types it applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Subscription {
    /// Such as `dashboard-from-nutrition`: its checkpoint and dead-letter queue are kept
    /// under it.
    pub name: &'static str,
    /// The context whose events it consumes.
    pub source: Context,
    /// The context whose table it writes (and where its dead letters go).
    pub target: Context,
    /// The event types of its source it applies; it ignores every other one (the events
    /// index, `vitals docs events`, lists the subscriptions of each event).
    pub consumes: &'static [&'static str],
    /// The kinds of row it writes in its target's table: a sort-key prefix ending in
    /// `#` (`ACT_WORKOUT#`), a whole sort key (`PROFILE`), or `*` for any (erasure's
    /// completer, which deletes whatever identity holds of the user). The events index
    /// draws the wiring from them; the projector fixtures and the model-based test
    /// refuse a write outside them.
    pub writes: &'static [&'static str],
}

impl Subscription {
    /// Whether `sort_key` is of a kind it declares it writes.
    pub fn declares(&self, sort_key: &str) -> bool {
        self.writes.iter().any(|kind| {
            *kind == "*" || sort_key == *kind || (kind.ends_with('#') && sort_key.starts_with(kind))
        })
    }
}

#[async_trait]
pub trait Projector: Send + Sync {
    /// Its subscription. A projector implements this one; `name`, `source`, `target`
    /// and `consumes` read from it (a wrapper forwards it whole).
    fn subscription(&self) -> Subscription;
    /// The subscription's name.
    fn name(&self) -> &'static str {
        self.subscription().name
    }
    /// The context whose events it consumes.
    fn source(&self) -> Context {
        self.subscription().source
    }
    /// The context whose table it writes.
    fn target(&self) -> Context {
        self.subscription().target
    }
    /// The event types of its source it applies.
    fn consumes(&self) -> &'static [&'static str] {
        self.subscription().consumes
    }
    /// Applies one event. Must converge: applying an event twice, or events in any
    /// order, leaves the same rows. Events it does not use are ignored.
    async fn apply(&self, event: &EventEnvelope) -> Result<(), ProjectionError>;
    /// Whether `user` is erased from its target table (a strongly consistent look). Only
    /// a projection guarded against erased users knows; any other answers no.
    async fn erased(&self, _user: &UserId) -> Result<bool, StoreError> {
        Ok(false)
    }
}

/// The identity of a subscription inside an `impl Projector`: its name, the context it
/// consumes, the context whose table it writes and the event types it applies.
macro_rules! subscription {
    ($name:literal, $source:ident -> $target:ident, consumes $consumes:expr, writes $writes:expr) => {
        fn subscription(&self) -> $crate::projector::Subscription {
            $crate::projector::Subscription {
                name: $name,
                source: events_schema::Context::$source,
                target: events_schema::Context::$target,
                consumes: $consumes,
                writes: $writes,
            }
        }
    };
}
pub(crate) use subscription;

/// Decodes an event's payload, as a `ProjectionError`.
pub fn decode<P: events_schema::envelope::EventPayload>(
    event: &EventEnvelope,
) -> Result<P, ProjectionError> {
    event.decode::<P>().map_err(|e| match e {
        events_schema::envelope::EnvelopeError::NewerVersion { .. } => {
            ProjectionError::NewerVersion(e.to_string())
        }
        _ => ProjectionError::Decode(e.to_string()),
    })
}

/// The event type names of payload types, as a subscription's `consumes` list.
macro_rules! event_types {
    ($($event:ty),* $(,)?) => {
        &[$(<$event as events_schema::envelope::EventPayload>::EVENT_TYPE),*]
    };
}
pub(crate) use event_types;

/// The `USER#<id>` partition of the user an event belongs to.
pub fn user_pk(event: &EventEnvelope) -> Result<String, ProjectionError> {
    event
        .user_id
        .clone()
        .map(|u| events_schema::keys::PartitionKey::User(u).to_string())
        .ok_or_else(|| ProjectionError::Decode("user event without a user id".into()))
}

#[cfg(test)]
mod tests {
    use super::Subscription;
    use events_schema::Context;

    #[test]
    fn a_declared_kind_is_a_prefix_ending_in_a_hash_a_whole_key_or_any() {
        let of = |writes| Subscription {
            name: "x",
            source: Context::Nutrition,
            target: Context::Dashboard,
            consumes: &[],
            writes,
        };
        let declared = of(&["DAILY#", "WINDOW"]);
        assert!(declared.declares("DAILY#2026-03-01"));
        assert!(declared.declares("WINDOW"));
        assert!(
            !declared.declares("WINDOW#x"),
            "a whole key is not a prefix"
        );
        assert!(!declared.declares("DAILY"), "a prefix needs its #");
        assert!(!declared.declares("RECENT_MEAL#1"));
        assert!(of(&["*"]).declares("SESSION#1"));
        assert!(!of(&[]).declares(""));
    }
}
