//! The dashboard rows one fact owns whole, each replaced by the newer fact: `PROFILE`
//! (identity), `ACTIVE_GOAL#<goal-id>` (goals; a tombstone while the goal is not active)
//! and `CONNECTION#<provider>` (integrations).

use super::window::DashboardRows;
use crate::projector::{ProjectionError, Projector, decode, event_types, subscription, user_pk};
use crate::rows::{put_if_newer, tombstone};
use async_trait::async_trait;
use events_schema::envelope::{EventEnvelope, EventPayload};
use events_schema::events::goals::{Goal, GoalCreated, GoalStatus, GoalStatusChanged};
use events_schema::events::identity::{EmailChanged, ProfileState, ProfileUpdated, UserRegistered};
use events_schema::events::integrations::{ProviderConnected, ProviderDisconnected};
use events_schema::keys::SortKey;
use events_schema::rows::{ActiveGoalRow, ConnectionRow, KeyedRow, ProfileRow};
use infra::store::Key;

impl DashboardRows {
    /// Puts `row` under its own key in `pk`'s partition, if newer.
    async fn put_keyed(&self, pk: &str, row: &impl KeyedRow) -> Result<(), ProjectionError> {
        let key = Key::new(pk, row.sort_key().to_string());
        put_if_newer(&self.table, &key, row).await?;
        Ok(())
    }
}

/// `PROFILE` from identity events.
pub struct DashboardFromIdentity(pub DashboardRows);

#[async_trait]
impl Projector for DashboardFromIdentity {
    subscription!("dashboard-from-identity", Identity -> Dashboard, consumes event_types![UserRegistered, EmailChanged, ProfileUpdated], writes &["PROFILE"]);

    async fn apply(&self, event: &EventEnvelope) -> Result<(), ProjectionError> {
        let profile: ProfileState = match event.event_type.as_str() {
            UserRegistered::EVENT_TYPE => decode::<UserRegistered>(event)?.profile,
            EmailChanged::EVENT_TYPE => decode::<EmailChanged>(event)?.profile,
            ProfileUpdated::EVENT_TYPE => decode::<ProfileUpdated>(event)?.profile,
            _ => return Ok(()),
        };
        // The event's public profile is the row.
        let row: ProfileRow = profile;
        self.0.put_keyed(&user_pk(event)?, &row).await
    }
}

/// `ACTIVE_GOAL#<goal-id>` rows: present while a goal is active, a tombstone otherwise.
pub struct DashboardFromGoals(pub DashboardRows);

#[async_trait]
impl Projector for DashboardFromGoals {
    subscription!("dashboard-from-goals", Goals -> Dashboard, consumes event_types![GoalCreated, GoalStatusChanged], writes &["ACTIVE_GOAL#"]);

    async fn apply(&self, event: &EventEnvelope) -> Result<(), ProjectionError> {
        let goal: Goal = match event.event_type.as_str() {
            GoalCreated::EVENT_TYPE => decode::<GoalCreated>(event)?.goal,
            GoalStatusChanged::EVENT_TYPE => decode::<GoalStatusChanged>(event)?.goal,
            _ => return Ok(()),
        };
        let pk = user_pk(event)?;
        if goal.status != GoalStatus::Active {
            let key = Key::new(&pk, SortKey::ActiveGoal(goal.goal_id).to_string());
            tombstone::<_, ActiveGoalRow>(&self.0.table, &key, goal.version).await?;
            return Ok(());
        }
        let row = ActiveGoalRow {
            goal_id: goal.goal_id,
            kind: goal.kind,
            title: goal.title,
            target: goal.target,
            period: goal.period,
            version: goal.version,
        };
        self.0.put_keyed(&pk, &row).await
    }
}

/// `CONNECTION#<provider>` rows; the most recently recorded change wins.
pub struct DashboardFromIntegrations(pub DashboardRows);

/// The row a connection event makes, if it is one.
fn connection_row(event: &EventEnvelope) -> Result<Option<ConnectionRow>, ProjectionError> {
    Ok(Some(match event.event_type.as_str() {
        ProviderConnected::EVENT_TYPE => {
            let connected: ProviderConnected = decode(event)?;
            ConnectionRow {
                provider: connected.provider,
                connected: true,
                connected_at: Some(connected.connected_at),
                scopes: connected.scopes,
                version: connected.version,
            }
        }
        ProviderDisconnected::EVENT_TYPE => {
            let disconnected: ProviderDisconnected = decode(event)?;
            ConnectionRow {
                provider: disconnected.provider,
                connected: false,
                connected_at: None,
                scopes: Vec::new(),
                version: disconnected.version,
            }
        }
        _ => return Ok(None),
    }))
}

#[async_trait]
impl Projector for DashboardFromIntegrations {
    subscription!("dashboard-from-integrations", Integrations -> Dashboard, consumes event_types![ProviderConnected, ProviderDisconnected], writes &["CONNECTION#"]);

    async fn apply(&self, event: &EventEnvelope) -> Result<(), ProjectionError> {
        let Some(mut row) = connection_row(event)? else {
            return Ok(());
        };
        // Events written before connections carried a version are ordered by their
        // recording time, on the same scale (milliseconds).
        if row.version == 0 {
            row.version = event.recorded_at.millis().max(0) as u64;
        }
        self.0.put_keyed(&user_pk(event)?, &row).await
    }
}
