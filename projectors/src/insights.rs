//! Insights: an `ACTIVE_DAY#<date>` marker per user and day with activity (meals,
//! workouts, sleep; one versioned entry each), carrying the sparse `active-day` index keys
//! (`DAY#<date>` -> `USER#<id>`) while the day has live entries; and the nightly
//! readiness job, which lists a day's active users through that index (never a scan) and
//! writes `READINESS#<date>` from the user's markers of the last seven days.

use crate::facts::{meal_days, sleep_of, workout_of};
use crate::projector::{ProjectionError, Projector, subscription, user_pk};
use crate::rows::{Entry, Moved, live_entries, merge_entry, merge_moved, object};
use async_trait::async_trait;
use chrono::Duration;
use events_schema::envelope::EventEnvelope;
use events_schema::keys::SortKey;
use events_schema::rows::ReadinessRow;
use events_schema::time::{Day, Timestamp};
use infra::StoreError;
use infra::store::{IndexQuery, Item, Key, Query, SortKeyCondition};
use infra::table::{Table, contexts};
use serde_json::{Value, json};

fn marker(pk: &str, day: Day) -> impl Fn(&serde_json::Map<String, Value>) -> Item {
    let (pk, day) = (pk.to_owned(), day);
    move |entries| {
        let mut meals = 0;
        let mut active_minutes = 0;
        let mut sleep_minutes = 0;
        for (id, entry) in live_entries(entries) {
            let number = |name: &str| entry.get(name).and_then(Value::as_u64).unwrap_or(0);
            match id.split_once(':').map(|(kind, _)| kind) {
                Some("nutrition") => meals += number("meals"),
                Some("workout") => active_minutes += number("minutes"),
                Some("sleep") => sleep_minutes += number("minutes"),
                _ => {}
            }
        }
        let mut item = object(
            json!({"day": day, "meals": meals, "active_minutes": active_minutes, "sleep_minutes": sleep_minutes}),
        );
        // In the index only while the day has activity.
        if had_data(&item) {
            item.insert("active_day_pk".into(), json!(format!("DAY#{day}")));
            item.insert("active_day_sk".into(), json!(pk));
        }
        item
    }
}

/// The marker row of `day` and how it derives from its entries: each entity has one
/// entry among the day's (`nutrition:day`, `workout:<id>`, `sleep:<id>`).
fn marker_row(pk: &str, day: Day) -> (Key, impl Fn(&serde_json::Map<String, Value>) -> Item) {
    let key = Key::new(pk, SortKey::ActiveDay(day).to_string());
    (key, marker(pk, day))
}

/// Markers from nutrition: the meals of each day changed.
pub struct InsightsFromNutrition(pub Table<contexts::Insights>);

#[async_trait]
impl Projector for InsightsFromNutrition {
    subscription!("insights-from-nutrition", Nutrition -> Insights, consumes crate::facts::MEAL_EVENTS);

    async fn apply(&self, event: &EventEnvelope) -> Result<(), ProjectionError> {
        let Some((pk, days)) = meal_days(event)? else {
            return Ok(());
        };
        for day in days {
            let (key, derive) = marker_row(&pk, day.day);
            let entry = Entry::live("nutrition:day", json!({"meals": day.meals}), day.version);
            merge_entry(&self.0, &key, entry, derive).await?;
        }
        Ok(())
    }
}

/// Markers from activity: one entry per workout (moved workouts leave their old day).
pub struct InsightsFromActivity(pub Table<contexts::Insights>);

#[async_trait]
impl Projector for InsightsFromActivity {
    subscription!("insights-from-activity", Activity -> Insights, consumes crate::facts::WORKOUT_EVENTS);

    async fn apply(&self, event: &EventEnvelope) -> Result<(), ProjectionError> {
        let Some((workout, previous_day)) = workout_of(event)? else {
            return Ok(());
        };
        let pk = user_pk(event)?;
        let member = Moved {
            id: &format!("workout:{}", workout.workout_id),
            value: json!({"minutes": workout.duration_s / 60}),
            version: workout.version,
            day: workout.day,
            from: previous_day,
        };
        merge_moved(&self.0, member, |day| marker_row(&pk, day)).await?;
        Ok(())
    }
}

/// Markers from sleep: one entry per session, on its night.
pub struct InsightsFromSleep(pub Table<contexts::Insights>);

#[async_trait]
impl Projector for InsightsFromSleep {
    subscription!("insights-from-sleep", Sleep -> Insights, consumes crate::facts::SLEEP_EVENTS);

    async fn apply(&self, event: &EventEnvelope) -> Result<(), ProjectionError> {
        let Some((session, previous)) = sleep_of(event)? else {
            return Ok(());
        };
        let pk = user_pk(event)?;
        let member = Moved {
            id: &format!("sleep:{}", session.sleep_id),
            value: json!({"minutes": session.start.minutes_until(session.end)}),
            version: session.version,
            day: session.night,
            from: previous,
        };
        merge_moved(&self.0, member, |night| marker_row(&pk, night)).await?;
        Ok(())
    }
}

/// Whether a day's marker still counts anything: a marker stays when what it counted
/// is deleted or moves to another day, with zero totals.
fn had_data(marker: &Item) -> bool {
    ["meals", "active_minutes", "sleep_minutes"]
        .iter()
        .any(|total| marker.get(*total).and_then(Value::as_u64).unwrap_or(0) > 0)
}

/// A readiness score from a week of markers: sleep against 8 h a night and activity
/// against 30 min a day, each half of the score, capped at 100.
pub fn readiness_score(markers: &[Item]) -> u64 {
    let sum = |name: &str| {
        markers
            .iter()
            .filter_map(|m| m.get(name).and_then(Value::as_u64))
            .sum::<u64>()
    };
    let sleep = (sum("sleep_minutes") * 50 / (7 * 480)).min(50);
    let activity = (sum("active_minutes") * 50 / (7 * 30)).min(50);
    sleep + activity
}

/// Writes `READINESS#<day>` for every user active on `day`, found through the
/// `active-day` index; returns how many users it scored.
pub async fn nightly_readiness(
    table: &Table<contexts::Insights>,
    day: Day,
) -> Result<usize, StoreError> {
    let week_start = Day::new(day.date() - Duration::days(6));
    let mut scored = 0;
    let mut cursor = None;
    loop {
        let query = IndexQuery::partition("active-day", format!("DAY#{day}"))
            .limit(100)
            .after(cursor);
        let page = table.query_index(&query).await?;
        for marker in &page.items {
            let Some(pk) = marker.get("pk").and_then(Value::as_str) else {
                continue;
            };
            let Ok(events_schema::keys::PartitionKey::User(user)) = pk.parse() else {
                continue;
            };
            if commands::erasure::tombstone(table, &user).await?.is_some() {
                continue;
            }
            let range = SortKeyCondition::Between(
                SortKey::ActiveDay(week_start).to_string(),
                SortKey::ActiveDay(day).to_string(),
            );
            let week = table
                .query(&Query::partition(pk).sort_key(range).consistent())
                .await?
                .items;
            let row = ReadinessRow {
                day,
                score: readiness_score(&week),
                days_with_data: u64::try_from(week.iter().filter(|m| had_data(m)).count())
                    .unwrap_or(u64::MAX),
            };
            let mut item = object(serde_json::to_value(&row).map_err(|e| {
                StoreError::Backend(format!("a readiness row does not serialize: {e}"))
            })?);
            item.extend(Key::new(pk, SortKey::Readiness(day).to_string()).to_item());
            table.put(item, None).await?;
            // Erased meanwhile: the erasure's drain may have passed already.
            if commands::erasure::tombstone(table, &user).await?.is_some() {
                commands::erasure::erase(table, &user).await?;
                continue;
            }
            scored += 1;
        }
        match page.cursor {
            Some(next) => cursor = Some(next),
            None => return Ok(scored),
        }
    }
}

/// The latest day that has ended in every timezone at `now`. A user's day is a day of
/// their own timezone, and the last place a day ends is UTC-12: day D has ended
/// everywhere at D+1 12:00 UTC. Scoring then (rather than per timezone) scores each
/// user after their own night, once, with every marker of the day in place.
pub fn last_ended_day(now: Timestamp) -> Day {
    Day::new((now.datetime() - Duration::hours(12)).date_naive() - Duration::days(1))
}

/// The nightly job run by a long-lived process (`vitals serve` on the embedded shape,
/// which has no scheduler of its own): each [`tick`](NightlySchedule::tick) scores the
/// days that have ended everywhere since the last one, at most [`CATCH_UP_DAYS`] back
/// (a process that was down a few days catches up; scoring is an idempotent put).
#[derive(Debug)]
pub struct NightlySchedule {
    table: Table<contexts::Insights>,
    scored_through: Option<Day>,
}

/// How many ended days a first tick (or a tick after a long pause) scores.
pub const CATCH_UP_DAYS: i64 = 2;

impl NightlySchedule {
    pub fn new(table: Table<contexts::Insights>) -> Self {
        Self {
            table,
            scored_through: None,
        }
    }

    /// Scores every day ended at `now` and not scored yet; returns (day, users scored)
    /// for each day it scored.
    pub async fn tick(&mut self, now: Timestamp) -> Result<Vec<(Day, usize)>, StoreError> {
        let last = last_ended_day(now);
        let earliest = Day::new(last.date() - Duration::days(CATCH_UP_DAYS - 1));
        let mut day = match self.scored_through {
            Some(done) if done >= last => return Ok(Vec::new()),
            Some(done) => Day::new(done.date() + Duration::days(1)).max(earliest),
            None => earliest,
        };
        let mut scored = Vec::new();
        while day <= last {
            scored.push((day, nightly_readiness(&self.table, day).await?));
            self.scored_through = Some(day);
            day = Day::new(day.date() + Duration::days(1));
        }
        Ok(scored)
    }
}
