//! The goals subscriptions: each keeps its source's facts as goal fact rows
//! (`fact_rows`), then recomputes the progress of the goals they count towards; a new
//! goal starts from the facts already there.

use super::fact_rows::{ActWorkoutRow, NightEntry, SleepNightRow, day_of_fact, fact_prefix};
use super::period::period_start;
use super::table::GoalRows;
use crate::convert::item_of;
use crate::facts::{meal_days, sleep_of, workout_of};
use crate::projector::{ProjectionError, Projector, event_types, subscription, user_pk};
use crate::rows::{Moved, merge_moved, put_if_newer, tombstone};
use async_trait::async_trait;
use events_schema::envelope::EventEnvelope;
use events_schema::events::goals::{GoalCreated, GoalKind};
use events_schema::keys::SortKey;
use events_schema::time::Day;
use infra::store::{Item, Key, SortKeyCondition};

/// A goal set after facts of its periods were recorded starts from them: on
/// `GoalCreated`, its progress is computed for every period (from the one holding the
/// day it was set) that has facts.
pub struct GoalsFromGoals(pub GoalRows);

#[async_trait]
impl Projector for GoalsFromGoals {
    subscription!("goals-from-goals", Goals -> Goals, consumes event_types![GoalCreated], writes &["GOAL#", "PROGRESS#", "EVT#"]);

    async fn apply(&self, event: &EventEnvelope) -> Result<(), ProjectionError> {
        if !event.is::<GoalCreated>() {
            return Ok(());
        }
        let created: GoalCreated = crate::projector::decode(event)?;
        let goal = created.goal;
        let pk = user_pk(event)?;
        let kind_prefix = fact_prefix(goal.kind);
        let from = goal
            .created_on
            .map(|day| format!("{kind_prefix}{}", period_start(goal.period, day)))
            .unwrap_or_else(|| kind_prefix.to_owned());
        let last = format!("{kind_prefix}\u{10FFFF}");
        let facts = self
            .0
            .rows(&pk, SortKeyCondition::Between(from, last))
            .await?;
        let mut periods: Vec<Day> = facts
            .iter()
            .filter_map(day_of_fact)
            .map(|day| period_start(goal.period, day))
            .collect();
        periods.sort();
        periods.dedup();
        for start in periods {
            self.0.recompute(&pk, &goal, start).await?;
        }
        Ok(())
    }
}

/// `ACT_WORKOUT#` rows and weekly workout goals' progress.
pub struct GoalsFromActivity(pub GoalRows);

#[async_trait]
impl Projector for GoalsFromActivity {
    subscription!("goals-from-activity", Activity -> Goals, consumes crate::facts::WORKOUT_EVENTS, writes &["ACT_WORKOUT#", "GOAL#", "PROGRESS#", "EVT#"]);

    async fn apply(&self, event: &EventEnvelope) -> Result<(), ProjectionError> {
        let Some((workout, previous_day)) = workout_of(event)? else {
            return Ok(());
        };
        let pk = user_pk(event)?;
        let kinds = [
            GoalKind::WeeklyWorkoutCount,
            GoalKind::WeeklyActiveMinutes,
            GoalKind::WeeklyDistanceKm,
        ];
        let key = |day| {
            let sk = SortKey::ActWorkout(day, workout.workout_id.clone());
            Key::new(&pk, sk.to_string())
        };
        if let Some(previous) = previous_day {
            tombstone::<_, ActWorkoutRow>(&self.0.table, &key(previous), workout.version).await?;
            self.0.progress(&pk, &kinds, previous).await?;
        }
        let row = ActWorkoutRow {
            workout_id: workout.workout_id.clone(),
            day: workout.day,
            sport: workout.sport.clone(),
            duration_s: workout.duration_s,
            distance_m: workout.distance_m,
            version: workout.version,
        };
        put_if_newer(&self.0.table, &key(workout.day), &row).await?;
        self.0.progress(&pk, &kinds, workout.day).await
    }
}

/// `NUT_DAILY#` rows and daily protein goals' progress.
pub struct GoalsFromNutrition(pub GoalRows);

#[async_trait]
impl Projector for GoalsFromNutrition {
    subscription!("goals-from-nutrition", Nutrition -> Goals, consumes crate::facts::MEAL_EVENTS, writes &["NUT_DAILY#", "GOAL#", "PROGRESS#", "EVT#"]);

    async fn apply(&self, event: &EventEnvelope) -> Result<(), ProjectionError> {
        let Some((pk, days)) = meal_days(event)? else {
            return Ok(());
        };
        for day in days {
            let key = Key::new(&pk, SortKey::NutDaily(day.day).to_string());
            put_if_newer(&self.0.table, &key, &day).await?;
            self.0
                .progress(&pk, &[GoalKind::DailyProteinGrams], day.day)
                .await?;
        }
        Ok(())
    }
}

/// `SLEEP_NIGHT#` rows (one entry per session of the night; a moved session leaves its
/// old night) and nightly sleep goals' progress.
pub struct GoalsFromSleep(pub GoalRows);

#[async_trait]
impl Projector for GoalsFromSleep {
    subscription!("goals-from-sleep", Sleep -> Goals, consumes crate::facts::SLEEP_EVENTS, writes &["SLEEP_NIGHT#", "GOAL#", "PROGRESS#", "EVT#"]);

    async fn apply(&self, event: &EventEnvelope) -> Result<(), ProjectionError> {
        let Some((session, previous)) = sleep_of(event)? else {
            return Ok(());
        };
        let pk = user_pk(event)?;
        let member = Moved {
            id: &session.sleep_id.to_string(),
            value: item_of(&NightEntry {
                minutes: session.start.minutes_until(session.end),
            }),
            version: session.version,
            day: session.night,
            from: previous,
        };
        let nights = merge_moved(&self.0.table, member, |night| {
            let key = Key::new(&pk, SortKey::SleepNight(night).to_string());
            (key, move |entries: &Item| {
                item_of(&SleepNightRow::of(night, entries))
            })
        })
        .await?;
        // Progress after both nights' rows are merged: the night it left first.
        for night in nights {
            self.0
                .progress(&pk, &[GoalKind::NightlySleepHours], night)
                .await?;
        }
        Ok(())
    }
}
