//! The goals context's projections: the facts goal progress is computed from, copied
//! into the goals table (`ACT_WORKOUT#<date>#<workout-id>`, `NUT_DAILY#<date>`,
//! `SLEEP_NIGHT#<date>`), and `PROGRESS#<goal-id>#<period-start>` rows recomputed from
//! those owned rows only. One progress row per goal and period, rewritten from the same
//! rows whatever the delivery order, so progress converges.

use crate::facts::{day_totals, sleep_of, workout_of};
use crate::projector::{ProjectionError, Projector, subscription, user_pk};
use crate::rows::{is_tombstone, object, replace_newer, tombstone_newer};
use async_trait::async_trait;
use chrono::{Datelike, Duration};
use events_schema::envelope::EventEnvelope;
use events_schema::events::goals::{Goal, GoalCreated, GoalKind, GoalProgressed};
use events_schema::keys::{SortKey, prefix};
use events_schema::time::{Day, Timestamp};
use infra::StoreError;
use infra::store::{
    CancelReason, Condition, IndexQuery, Item, Key, Query, SortKeyCondition, Update,
};
use infra::table::Action;
use infra::table::{Table, contexts};
use rust_decimal::Decimal;
use serde_json::json;

const VERSION: &str = "version";

#[derive(Clone)]
pub struct GoalRows {
    table: Table<contexts::Goals>,
}

/// The `GoalProgressed` event of one change, with an id derived from the change (goal,
/// period, old and new value), so a redelivered fact cannot publish it twice.
fn progress_event(
    pk: &str,
    progressed: &GoalProgressed,
    period: Timestamp,
) -> Result<EventEnvelope, ProjectionError> {
    let user = pk
        .strip_prefix("USER#")
        .and_then(|u| events_schema::ids::UserId::parse(u).ok());
    let mut event = EventEnvelope::new(user, period, progressed)
        .map_err(|e| ProjectionError::Decode(e.to_string()))?;
    let seed = format!(
        "{}|{}|{}|{}",
        progressed.goal_id, period, progressed.previous_value, progressed.value
    );
    event.event_id = events_schema::ids::EventId::derived(&seed, period);
    Ok(event)
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
            if kinds.contains(&goal.kind) {
                self.goal_progress(pk, &goal, day).await?;
            }
        }
        Ok(())
    }

    /// Recomputes one goal's `PROGRESS#` row for the period of `day`, publishing
    /// `GoalProgressed` when it changed, and its current value.
    async fn goal_progress(&self, pk: &str, goal: &Goal, day: Day) -> Result<(), ProjectionError> {
        let (period_start, value) = self.value(pk, goal, day).await?;
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
        let previous = self.table.get(&key, true).await?;
        let previous_value = previous
            .as_ref()
            .map(|row| decimal_of(row, &["value"]))
            .unwrap_or_default();
        if previous.is_some() && previous_value == value {
            // Unchanged (a redelivery, or a fact that does not move this goal).
            return Ok(());
        }
        let met = value >= goal.target;
        let mut item = object(
            json!({"goal_id": goal.goal_id, "period_start": period_start, "value": value, "target": goal.target, "met": met}),
        );
        item.extend(key.to_item());
        let progressed = GoalProgressed {
            goal_id: goal.goal_id.clone(),
            kind: goal.kind,
            period_start,
            previous_value,
            value,
            target: goal.target,
            met,
        };
        let event = progress_event(pk, &progressed, start)?;
        let outbox = events_schema::envelope::OUTBOX_ATTR;
        let mut event_item = object(json!({"event_type": event.event_type, outbox: event}));
        event_item
            .extend(Key::new(pk, SortKey::Event(event.event_id.clone()).to_string()).to_item());
        // The progress row and its event commit together.
        let actions = vec![
            Action::Put {
                item,
                condition: None,
            },
            Action::Put {
                item: event_item,
                condition: Some(Condition::ItemNotExists),
            },
        ];
        match self.table.transact(actions).await {
            Ok(()) => {}
            // This very change is already published (the event id is derived from
            // it): nothing more to do.
            Err(StoreError::TransactionCanceled { reasons })
                if !reasons.contains(&CancelReason::Conflict) => {}
            Err(e) => return Err(e.into()),
        }
        // The goal's current value is its latest period's: a later period replaces
        // it, an earlier one arriving late does not.
        let rank = period_start.date().num_days_from_ce().max(0) as u64;
        let goal_key = Key::new(pk, SortKey::Goal(goal.goal_id.clone()).to_string());
        let update = Update::default()
            .set("current_value", json!(value))
            .set("current_period_start", json!(period_start))
            .set("current_period_rank", rank);
        let newer = Condition::All(vec![
            Condition::ItemExists,
            Condition::Newer {
                attr: "current_period_rank".into(),
                version: rank + 1,
            },
        ]);
        match self.table.update(&goal_key, update, Some(newer)).await {
            Ok(_) | Err(StoreError::ConditionFailed { .. }) => {}
            Err(e) => return Err(e.into()),
        }
        Ok(())
    }
}

/// A goal set after facts of its period were recorded starts from them: on
/// `GoalCreated`, its progress is computed from the fact rows already in the table.
pub struct GoalsFromGoals(pub GoalRows);

#[async_trait]
impl Projector for GoalsFromGoals {
    subscription!("goals-from-goals", Goals -> Goals);

    async fn apply(&self, event: &EventEnvelope) -> Result<(), ProjectionError> {
        if !event.is::<GoalCreated>() {
            return Ok(());
        }
        let created: GoalCreated = crate::projector::decode(event)?;
        let pk = user_pk(event)?;
        let day = Day::new(
            chrono::DateTime::from_timestamp_millis(event.occurred_at.millis())
                .map(|t| t.date_naive())
                .ok_or_else(|| ProjectionError::Decode("creation time out of range".into()))?,
        );
        // Nothing recorded yet in its first period: no progress row until a fact comes
        // (as for a goal created before its facts).
        let (_, value) = self.0.value(&pk, &created.goal, day).await?;
        if value.is_zero() {
            return Ok(());
        }
        self.0.goal_progress(&pk, &created.goal, day).await
    }
}

/// `ACT_WORKOUT#` rows and weekly workout goals' progress.
pub struct GoalsFromActivity(pub GoalRows);

#[async_trait]
impl Projector for GoalsFromActivity {
    subscription!("goals-from-activity", Activity -> Goals);

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
    subscription!("goals-from-nutrition", Nutrition -> Goals);

    async fn apply(&self, event: &EventEnvelope) -> Result<(), ProjectionError> {
        let totals = day_totals(event)?;
        if totals.is_empty() {
            return Ok(());
        }
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
    subscription!("goals-from-sleep", Sleep -> Goals);

    async fn apply(&self, event: &EventEnvelope) -> Result<(), ProjectionError> {
        // A session of one night: the most recently recorded one wins (see the version).
        let Some((session, _)) = sleep_of(event)? else {
            return Ok(());
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
