//! `RECENT_WORKOUT#` rows, the workout history (`~WORKOUT#`) and the `activity` group of
//! `DAILY#`: one entry per workout of the day (a moved workout leaves its old day as a
//! deleted entry).

use super::window::{Admissions, DashboardRows, Dated};
use crate::convert::item_of;
use crate::daily::WorkoutEntry;
use crate::facts::workout_of;
use crate::projector::{ProjectionError, Projector, subscription, user_pk};
use crate::rows::Moved;
use async_trait::async_trait;
use events_schema::envelope::EventEnvelope;
use events_schema::events::activity::Workout;
use events_schema::rows::{DailyGroup, WorkoutRow};

/// The projection of workouts into the dashboard.
pub struct DashboardFromActivity(pub DashboardRows);

/// A workout as its two rows keep it.
fn workout_row(w: &Workout) -> WorkoutRow {
    WorkoutRow {
        workout_id: w.workout_id.clone(),
        day: w.day,
        sport: w.sport.clone(),
        started_at: w.started_at,
        duration_s: w.duration_s,
        distance_m: w.distance_m,
        calories: w.calories,
        perceived_effort: w.perceived_effort,
        source: Some(w.source.clone()),
        version: w.version,
    }
}

#[async_trait]
impl Projector for DashboardFromActivity {
    subscription!("dashboard-from-activity", Activity -> Dashboard, consumes crate::facts::WORKOUT_EVENTS, writes &["RECENT_WORKOUT#", "~WORKOUT#", "DAILY#", "WINDOW"]);

    async fn apply(&self, event: &EventEnvelope) -> Result<(), ProjectionError> {
        let mut memo = Admissions::default();
        let Some((workout, previous_day)) = workout_of(event)? else {
            return Ok(());
        };
        let pk = user_pk(event)?;
        let id = &workout.workout_id;
        if let Some(previous) = previous_day {
            let old = WorkoutRow::keys(previous, id);
            let gone = Dated::<WorkoutRow>::Gone(workout.version);
            self.0
                .dated_pair(&mut memo, &pk, previous, old, gone)
                .await?;
        }
        let keys = WorkoutRow::keys(workout.day, id);
        let row = workout_row(&workout);
        self.0
            .dated_pair(&mut memo, &pk, workout.day, keys, Dated::Row(&row))
            .await?;
        let member = Moved {
            id: &id.to_string(),
            value: item_of(&WorkoutEntry {
                duration_s: u64::from(workout.duration_s),
            }),
            version: workout.version,
            day: workout.day,
            from: previous_day,
        };
        self.0
            .daily_member(&mut memo, &pk, DailyGroup::Activity, member)
            .await?;
        Ok(())
    }
}
