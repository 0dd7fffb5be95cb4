//! The sleep history (`~SLEEP#`) and the `sleep` group of `DAILY#<night>`: one entry per
//! session of the night (a moved session leaves its old night as a deleted entry).

use super::window::{Admissions, DashboardRows};
use crate::convert::item_of;
use crate::daily::SleepEntry;
use crate::facts::sleep_of;
use crate::projector::{ProjectionError, Projector, subscription, user_pk};
use crate::rows::{Moved, put_if_newer, tombstone};
use async_trait::async_trait;
use events_schema::envelope::EventEnvelope;
use events_schema::keys::SortKey;
use events_schema::rows::{DailyGroup, KeyedRow as _, SleepRow};
use infra::store::Key;

/// The projection of sleep sessions into the dashboard.
pub struct DashboardFromSleep(pub DashboardRows);

#[async_trait]
impl Projector for DashboardFromSleep {
    subscription!("dashboard-from-sleep", Sleep -> Dashboard, consumes crate::facts::SLEEP_EVENTS, writes &["~SLEEP#", "DAILY#", "WINDOW"]);

    async fn apply(&self, event: &EventEnvelope) -> Result<(), ProjectionError> {
        let mut memo = Admissions::default();
        let Some((session, previous)) = sleep_of(event)? else {
            return Ok(());
        };
        let pk = user_pk(event)?;
        // The history: a row per session, on its night (moved: the old night's goes).
        if let Some(previous) = previous {
            let old = SortKey::SleepLog(previous, session.sleep_id.clone());
            let old = Key::new(&pk, old.to_string());
            tombstone::<_, SleepRow>(&self.0.table, &old, session.version).await?;
        }
        // The event's session is the row: one type from the command to the read side.
        let row: &SleepRow = &session;
        let key = Key::new(&pk, row.sort_key().to_string());
        put_if_newer(&self.0.table, &key, row).await?;
        let member = Moved {
            id: &session.sleep_id.to_string(),
            value: item_of(&SleepEntry {
                minutes: Some(session.start.minutes_until(session.end)),
                score: Some(session.score),
                stages: Some(session.stages),
            }),
            version: session.version,
            day: session.night,
            from: previous,
        };
        self.0
            .daily_member(&mut memo, &pk, DailyGroup::Sleep, member)
            .await?;
        Ok(())
    }
}
