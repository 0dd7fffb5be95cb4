//! The goals context's projections: the facts goal progress is computed from, copied
//! into the goals table (`ACT_WORKOUT#<date>#<workout-id>`, `NUT_DAILY#<date>`,
//! `SLEEP_NIGHT#<date>`), and `PROGRESS#<goal-id>#<period-start>` rows recomputed from
//! those owned rows only. One progress row per goal and period, rewritten from the same
//! rows whatever the delivery order, so progress converges.

use crate::projector::{ProjectionError, Projector, decode, user_pk};
use crate::rows::{is_tombstone, object, replace_newer, tombstone_newer};
use async_trait::async_trait;
use chrono::{Datelike, Duration};
use events_schema::Context;
use events_schema::envelope::EventEnvelope;
use events_schema::events::activity::{WorkoutRecorded, WorkoutUpdated};
use events_schema::events::goals::{Goal, GoalKind};
use events_schema::events::nutrition::{DayTotals, MealDeleted, MealEdited, MealLogged};
use events_schema::events::sleep::{SleepRecorded, SleepUpdated};
use events_schema::keys::{SortKey, prefix};
use events_schema::time::{Day, Timestamp};
use infra::StoreError;
use infra::store::{IndexQuery, Item, Key, Query, SortKeyCondition};
use infra::table::{Table, contexts};
use rust_decimal::Decimal;
use serde_json::json;

const VERSION: &str = "version";

#[derive(Clone)]
pub struct GoalRows {
    table: Table<contexts::Goals>,
}

/// Monday of the ISO week holding `day`.
pub fn week_start(day: Day) -> Day {
    Day::new(day.date() - Duration::days(i64::from(day.date().weekday().num_days_from_monday())))
}

fn decimal_of(row: &Item, path: &[&str]) -> Decimal {
    let mut value = row.get(path[0]);
    for part in &path[1..] {
        value = value.and_then(|v| v.get(*part));
    }
    match value {
        Some(serde_json::Value::String(s)) => s.parse().unwrap_or_default(),
        Some(serde_json::Value::Number(n)) => n.to_string().parse().unwrap_or_default(),
        _ => Decimal::ZERO,
    }
}

impl GoalRows {
    pub fn new(table: Table<contexts::Goals>) -> Self {
        Self { table }
    }

    async fn rows(&self, pk: &str, condition: SortKeyCondition) -> Result<Vec<Item>, StoreError> {
        let mut rows = Vec::new();
        let mut cursor = None;
        loop {
            let page = self
                .table
                .query(
                    &Query::partition(pk)
                        .sort_key(condition.clone())
                        .consistent()
                        .after(cursor),
                )
                .await?;
            rows.extend(page.items.into_iter().filter(|r| !is_tombstone(r)));
            match page.cursor {
                Some(next) => cursor = Some(next),
                None => return Ok(rows),
            }
        }
    }

    /// The goal's value over the period holding `day`, from owned rows only.
    async fn value(&self, pk: &str, goal: &Goal, day: Day) -> Result<(Day, Decimal), StoreError> {
        let weekly = |kind_prefix: &str| {
            let monday = week_start(day);
            let sunday = Day::new(monday.date() + Duration::days(6));
            SortKeyCondition::Between(
                format!("{kind_prefix}{monday}"),
                format!("{kind_prefix}{sunday}#\u{10FFFF}"),
            )
        };
        Ok(match goal.kind {
            GoalKind::WeeklyWorkoutCount => (
                week_start(day),
                Decimal::from(self.rows(pk, weekly(prefix::ACT_WORKOUT)).await?.len()),
            ),
            GoalKind::WeeklyActiveMinutes => {
                let rows = self.rows(pk, weekly(prefix::ACT_WORKOUT)).await?;
                let seconds: Decimal = rows.iter().map(|r| decimal_of(r, &["duration_s"])).sum();
                (week_start(day), (seconds / Decimal::from(60)).round_dp(1))
            }
            GoalKind::WeeklyDistanceKm => {
                let rows = self.rows(pk, weekly(prefix::ACT_WORKOUT)).await?;
                let metres: Decimal = rows.iter().map(|r| decimal_of(r, &["distance_m"])).sum();
                (week_start(day), (metres / Decimal::from(1000)).round_dp(2))
            }
            GoalKind::DailyProteinGrams => {
                let rows = self
                    .rows(
                        pk,
                        SortKeyCondition::Equals(SortKey::NutDaily(day).to_string()),
                    )
                    .await?;
                (
                    day,
                    rows.first()
                        .map(|r| decimal_of(r, &["totals", "protein_g"]))
                        .unwrap_or_default(),
                )
            }
            GoalKind::NightlySleepHours => {
                let rows = self
                    .rows(
                        pk,
                        SortKeyCondition::Equals(SortKey::SleepNight(day).to_string()),
                    )
                    .await?;
                let minutes = rows
                    .first()
                    .map(|r| decimal_of(r, &["minutes"]))
                    .unwrap_or_default();
                (day, (minutes / Decimal::from(60)).round_dp(2))
            }
        })
    }

    /// Recomputes `PROGRESS#` of the user's active goals of `kinds` for the period of `day`.
    async fn progress(
        &self,
        pk: &str,
        kinds: &[GoalKind],
        day: Day,
    ) -> Result<(), ProjectionError> {
        let active = IndexQuery::partition("by-status", format!("{pk}#STATUS#active"));
        let goals = self.table.query_index(&active).await?.items;
        for row in goals {
            let goal: Goal = serde_json::from_value(row.into())
                .map_err(|e| ProjectionError::Decode(e.to_string()))?;
            if !kinds.contains(&goal.kind) {
                continue;
            }
            let (period_start, value) = self.value(pk, &goal, day).await?;
            let start = Timestamp::from_millis(
                period_start
                    .date()
                    .and_hms_opt(0, 0, 0)
                    .map(|t| t.and_utc().timestamp_millis())
                    .unwrap_or(0),
            )
            .ok_or_else(|| ProjectionError::Decode("period start out of range".into()))?;
            let key = Key::new(
                pk,
                SortKey::Progress(goal.goal_id.clone(), start).to_string(),
            );
            let mut item = object(
                json!({"goal_id": goal.goal_id, "period_start": period_start, "value": value, "target": goal.target, "met": value >= goal.target}),
            );
            item.insert("pk".into(), key.pk.clone().into());
            item.insert("sk".into(), key.sk.clone().into());
            // A function of owned rows, written by one subscription per goal kind.
            self.table.put(item, None).await?;
        }
        Ok(())
    }
}

/// `ACT_WORKOUT#` rows and weekly workout goals' progress.
pub struct GoalsFromActivity(pub GoalRows);

#[async_trait]
impl Projector for GoalsFromActivity {
    fn name(&self) -> &'static str {
        "goals-from-activity"
    }
    fn source(&self) -> Context {
        Context::Activity
    }
    fn target(&self) -> Context {
        Context::Goals
    }

    async fn apply(&self, event: &EventEnvelope) -> Result<(), ProjectionError> {
        let (workout, previous_day) = match event.event_type.as_str() {
            "WorkoutRecorded" => (decode::<WorkoutRecorded>(event)?.workout, None),
            "WorkoutUpdated" => {
                let updated: WorkoutUpdated = decode(event)?;
                (updated.workout, updated.previous_day)
            }
            _ => return Ok(()),
        };
        let pk = user_pk(event)?;
        let kinds = [
            GoalKind::WeeklyWorkoutCount,
            GoalKind::WeeklyActiveMinutes,
            GoalKind::WeeklyDistanceKm,
        ];
        if let Some(previous) = previous_day {
            let old = Key::new(
                &pk,
                SortKey::ActWorkout(previous, workout.workout_id.clone()).to_string(),
            );
            tombstone_newer(&self.0.table, &old, VERSION, workout.version).await?;
            self.0.progress(&pk, &kinds, previous).await?;
        }
        let key = Key::new(
            &pk,
            SortKey::ActWorkout(workout.day, workout.workout_id.clone()).to_string(),
        );
        let attrs = object(
            json!({"workout_id": workout.workout_id, "day": workout.day, "sport": workout.sport, "duration_s": workout.duration_s, "distance_m": workout.distance_m}),
        );
        replace_newer(&self.0.table, &key, attrs, VERSION, workout.version).await?;
        self.0.progress(&pk, &kinds, workout.day).await
    }
}

/// `NUT_DAILY#` rows and daily protein goals' progress.
pub struct GoalsFromNutrition(pub GoalRows);

#[async_trait]
impl Projector for GoalsFromNutrition {
    fn name(&self) -> &'static str {
        "goals-from-nutrition"
    }
    fn source(&self) -> Context {
        Context::Nutrition
    }
    fn target(&self) -> Context {
        Context::Goals
    }

    async fn apply(&self, event: &EventEnvelope) -> Result<(), ProjectionError> {
        let totals: Vec<DayTotals> = match event.event_type.as_str() {
            "MealLogged" => vec![decode::<MealLogged>(event)?.day_totals],
            "MealEdited" => decode::<MealEdited>(event)?.day_totals,
            "MealDeleted" => vec![decode::<MealDeleted>(event)?.day_totals],
            _ => return Ok(()),
        };
        let pk = user_pk(event)?;
        for day in totals {
            let key = Key::new(&pk, SortKey::NutDaily(day.day).to_string());
            let attrs = object(json!({"day": day.day, "meals": day.meals, "totals": day.totals}));
            replace_newer(&self.0.table, &key, attrs, VERSION, day.version).await?;
            self.0
                .progress(&pk, &[GoalKind::DailyProteinGrams], day.day)
                .await?;
        }
        Ok(())
    }
}

/// `SLEEP_NIGHT#` rows (the most recently recorded session of a night) and nightly
/// sleep goals' progress.
pub struct GoalsFromSleep(pub GoalRows);

#[async_trait]
impl Projector for GoalsFromSleep {
    fn name(&self) -> &'static str {
        "goals-from-sleep"
    }
    fn source(&self) -> Context {
        Context::Sleep
    }
    fn target(&self) -> Context {
        Context::Goals
    }

    async fn apply(&self, event: &EventEnvelope) -> Result<(), ProjectionError> {
        let session = match event.event_type.as_str() {
            "SleepRecorded" => decode::<SleepRecorded>(event)?.session,
            "SleepUpdated" => decode::<SleepUpdated>(event)?.session,
            _ => return Ok(()),
        };
        let pk = user_pk(event)?;
        let key = Key::new(&pk, SortKey::SleepNight(session.night).to_string());
        let minutes = (session.end.millis() - session.start.millis()) / 60_000;
        let attrs = object(
            json!({"night": session.night, "sleep_id": session.sleep_id, "minutes": minutes}),
        );
        let version = event.recorded_at.millis().max(0) as u64;
        replace_newer(&self.0.table, &key, attrs, VERSION, version).await?;
        self.0
            .progress(&pk, &[GoalKind::NightlySleepHours], session.night)
            .await
    }
}
