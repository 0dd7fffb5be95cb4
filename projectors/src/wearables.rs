//! Wearable data received by integrations becomes the activity and sleep contexts' own
//! sync commands, idempotent by external id: a redelivered event syncs nothing new, and
//! the entities and events a sync writes are content-addressed (ids derived from
//! provider, external id and version), so every delivery and every replay writes the
//! very same rows.

use crate::projector::{ProjectionError, Projector, decode, event_types, subscription};
use async_trait::async_trait;
use commands::activity::ActivityCommands;
use commands::sleep::SleepCommands;
use commands::{CommandError, CommandMeta};
use events_schema::envelope::{EventEnvelope, EventPayload};
use events_schema::events::integrations::{WearableSleepReceived, WearableWorkoutReceived};

/// The day of a synced entity is named in the user's timezone when they connected the
/// provider (the event carries it); events written before it was recorded use UTC.
const FALLBACK_TIMEZONE: &str = "UTC";

fn meta(event: &EventEnvelope) -> Result<CommandMeta, ProjectionError> {
    let user = event
        .user_id
        .clone()
        .ok_or_else(|| ProjectionError::Decode("user event without a user id".into()))?;
    Ok(CommandMeta::new(user))
}

fn rejected(error: CommandError) -> ProjectionError {
    match error {
        CommandError::Store(e) => ProjectionError::Store(e),
        // Worth another try: the retry policy backs off and applies it again.
        CommandError::Contention | CommandError::Busy { .. } => {
            ProjectionError::Store(infra::StoreError::Throttled)
        }
        other => ProjectionError::Rejected(other.to_string()),
    }
}

pub struct ActivityFromIntegrations(pub ActivityCommands);

#[async_trait]
impl Projector for ActivityFromIntegrations {
    subscription!("activity-from-integrations", Integrations -> Activity, consumes event_types![WearableWorkoutReceived], writes &["WORKOUT#", "EXTERNAL#", "EVT#"]);

    async fn apply(&self, event: &EventEnvelope) -> Result<(), ProjectionError> {
        if event.event_type != WearableWorkoutReceived::EVENT_TYPE {
            return Ok(());
        }
        let received: WearableWorkoutReceived = decode(event)?;
        self.0
            .sync_workout(
                &meta(event)?,
                &received.provider,
                received.timezone.as_deref().unwrap_or(FALLBACK_TIMEZONE),
                &received.workout,
            )
            .await
            .map_err(rejected)?;
        Ok(())
    }
}

pub struct SleepFromIntegrations(pub SleepCommands);

#[async_trait]
impl Projector for SleepFromIntegrations {
    subscription!("sleep-from-integrations", Integrations -> Sleep, consumes event_types![WearableSleepReceived], writes &["SLEEP#", "EXTERNAL#", "EVT#"]);

    async fn apply(&self, event: &EventEnvelope) -> Result<(), ProjectionError> {
        if event.event_type != WearableSleepReceived::EVENT_TYPE {
            return Ok(());
        }
        let received: WearableSleepReceived = decode(event)?;
        self.0
            .sync_sleep(
                &meta(event)?,
                &received.provider,
                received.timezone.as_deref().unwrap_or(FALLBACK_TIMEZONE),
                &received.sleep,
            )
            .await
            .map_err(rejected)?;
        Ok(())
    }
}
