//! The goals context's projections: the facts goal progress is computed from, copied
//! into the goals table (`ACT_WORKOUT#<date>#<workout-id>`, `NUT_DAILY#<date>`,
//! `SLEEP_NIGHT#<date>`), and each goal's progress computed from those owned rows only.
//!
//! Progress is a function of the facts, not of the order they arrived in:
//! - a goal has a `PROGRESS#<goal-id>#<period-start>` row for every period, from the one
//!   holding the day it was set (`created_on`), whose value is not zero (a period whose
//!   value falls back to zero loses its row);
//! - its `current_value` is the value of the latest such period;
//! - every goal counts, whatever its status: a status says what the user intends, not
//!   what they did, and reading it at delivery time would make progress depend on when
//!   an event happened to be applied.
//!
//! Every recompute of a goal's progress ends in one compare-and-set on the goal item's
//! `progress_rev`: the goal is read first, then the facts, then the write applies only if
//! no other worker recomputed that goal's progress in between (else it reads again). A
//! recompute that finds nothing to change moves the revision on all the same, so a
//! worker holding older facts cannot commit them after it. The `GoalProgressed` event
//! of a change is named by that revision, so it is unique per change and commits with
//! it.

use crate::convert::{is_tombstone, live_entries, object};
use crate::facts::{meal_days, sleep_of, totals_row, workout_of};
use crate::projector::{ProjectionError, Projector, event_types, subscription, user_pk};
use crate::rows::{Moved, merge_moved, replace_newer, tombstone_newer};
use async_trait::async_trait;
use chrono::{Datelike, Duration};
use events_schema::envelope::{EventEnvelope, outbox_item};
use events_schema::events::goals::{Goal, GoalCreated, GoalKind, GoalPeriod, GoalProgressed};
use events_schema::keys::{SortKey, prefix};
use events_schema::time::{Clock, Day, Timestamp};
use infra::StoreError;
use infra::store::{CancelReason, Condition, Item, Key, Query, SortKeyCondition, Update};
use infra::table::Action;
use infra::table::{Table, contexts};
use rust_decimal::Decimal;
use serde_json::{Value, json};

const VERSION: &str = "version";
/// The goal item's count of progress changes: the compare-and-set guard.
const PROGRESS_REV: &str = "progress_rev";
/// How many times a recompute reads again after losing its compare-and-set.
const MAX_ATTEMPTS: usize = 64;

#[derive(Clone)]
pub struct GoalRows {
    table: Table<contexts::Goals>,
    /// When a `GoalProgressed` it publishes occurred.
    clock: Clock,
}

/// Monday of the ISO week holding `day`.
pub fn week_start(day: Day) -> Day {
    Day::new(day.date() - Duration::days(i64::from(day.date().weekday().num_days_from_monday())))
}

/// The first day of the period of `period` holding `day`.
pub fn period_start(period: GoalPeriod, day: Day) -> Day {
    match period {
        GoalPeriod::Daily => day,
        GoalPeriod::Weekly => week_start(day),
    }
}

/// The sort-key prefix of the fact rows a kind of goal is computed from.
fn fact_prefix(kind: GoalKind) -> &'static str {
    match kind {
        GoalKind::WeeklyWorkoutCount
        | GoalKind::WeeklyActiveMinutes
        | GoalKind::WeeklyDistanceKm => prefix::ACT_WORKOUT,
        GoalKind::DailyProteinGrams => "NUT_DAILY#",
        GoalKind::NightlySleepHours => "SLEEP_NIGHT#",
    }
}

fn decimal_of(row: &Item, path: &[&str]) -> Decimal {
    let mut value = row.get(path[0]);
    for part in &path[1..] {
        value = value.and_then(|v| v.get(*part));
    }
    match value {
        Some(Value::String(s)) => s.parse().unwrap_or_default(),
        Some(Value::Number(n)) => n.to_string().parse().unwrap_or_default(),
        _ => Decimal::ZERO,
    }
}

/// A goal's value over one period, from its fact rows (live ones only).
pub fn value_of(kind: GoalKind, facts: &[Item]) -> Decimal {
    let sum = |path: &[&str]| -> Decimal { facts.iter().map(|r| decimal_of(r, path)).sum() };
    match kind {
        GoalKind::WeeklyWorkoutCount => Decimal::from(facts.len()),
        GoalKind::WeeklyActiveMinutes => (sum(&["duration_s"]) / Decimal::from(60)).round_dp(1),
        GoalKind::WeeklyDistanceKm => (sum(&["distance_m"]) / Decimal::from(1000)).round_dp(2),
        GoalKind::DailyProteinGrams => sum(&["totals", "protein_g"]),
        GoalKind::NightlySleepHours => (sum(&["minutes"]) / Decimal::from(60)).round_dp(2),
    }
    .normalize()
}

/// The goal item as the projection reads it: the goal, and its progress bookkeeping.
struct GoalState {
    goal: Goal,
    revision: Option<u64>,
    current: Option<Day>,
}

impl GoalState {
    fn of(row: Item) -> Result<Self, ProjectionError> {
        let revision = row.get(PROGRESS_REV).and_then(Value::as_u64);
        let current = row
            .get("current_period_start")
            .and_then(Value::as_str)
            .and_then(|d| Day::parse(d).ok());
        let goal: Goal = serde_json::from_value(Value::Object(row))
            .map_err(|e| ProjectionError::Decode(e.to_string()))?;
        Ok(Self {
            goal,
            revision,
            current,
        })
    }

    /// The first period the goal counts, if it records the day it was set.
    fn first_period(&self) -> Option<Day> {
        self.goal
            .created_on
            .map(|day| period_start(self.goal.period, day))
    }
}

/// What a change of one period does to the goal's current value.
enum Current {
    Keep,
    Set(Day, Decimal),
    /// No period is above zero any more.
    Clear,
}

/// The key of a goal's progress row for the period starting on `start`.
fn progress_key(pk: &str, goal: &Goal, start: Day) -> Result<Key, ProjectionError> {
    let at = start
        .date()
        .and_hms_opt(0, 0, 0)
        .map(|t| t.and_utc().timestamp_millis())
        .and_then(Timestamp::from_millis)
        .ok_or_else(|| ProjectionError::Decode("period start out of range".into()))?;
    Ok(Key::new(
        pk,
        SortKey::Progress(goal.goal_id.clone(), at).to_string(),
    ))
}

/// The `GoalProgressed` event of change number `revision` of a goal's progress,
/// occurring `at`.
fn progress_event(
    pk: &str,
    progressed: &GoalProgressed,
    revision: u64,
    at: Timestamp,
) -> Result<EventEnvelope, ProjectionError> {
    let user = pk
        .strip_prefix("USER#")
        .and_then(|u| events_schema::ids::UserId::parse(u).ok());
    let mut event = EventEnvelope::new(user, at, progressed)
        .map_err(|e| ProjectionError::Decode(e.to_string()))?;
    let seed = format!("{}|progress|{revision}", progressed.goal_id);
    event.event_id = events_schema::ids::EventId::derived(&seed, at);
    Ok(event)
}

/// The compare-and-set on a goal read as `state`: it still exists, at the revision read.
fn revision_guard(state: &GoalState) -> Condition {
    let revision = match state.revision {
        Some(rev) => Condition::AttributeEquals(PROGRESS_REV.into(), rev.into()),
        None => Condition::AttributeNotExists(PROGRESS_REV.into()),
    };
    Condition::All(vec![Condition::ItemExists, revision])
}

impl GoalRows {
    /// The goals' rows in `table`, telling time by `clock`.
    pub fn new(table: Table<contexts::Goals>, clock: Clock) -> Self {
        Self { table, clock }
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

    /// The live fact rows of `kind` in the period starting on `start`.
    async fn facts(&self, pk: &str, goal: &Goal, start: Day) -> Result<Vec<Item>, StoreError> {
        let kind_prefix = fact_prefix(goal.kind);
        let last = match goal.period {
            GoalPeriod::Daily => start,
            GoalPeriod::Weekly => Day::new(start.date() + Duration::days(6)),
        };
        let range = SortKeyCondition::days(kind_prefix, start, last);
        self.rows(pk, range).await
    }

    /// Every goal of the user (any status) of one of `kinds`: one Query.
    async fn goals(&self, pk: &str, kinds: &[GoalKind]) -> Result<Vec<Goal>, ProjectionError> {
        let mut goals = Vec::new();
        for row in self
            .rows(pk, SortKeyCondition::BeginsWith(prefix::GOAL.to_owned()))
            .await?
        {
            let state = GoalState::of(row)?;
            if kinds.contains(&state.goal.kind) {
                goals.push(state.goal);
            }
        }
        Ok(goals)
    }

    /// Recomputes the progress of the user's goals of `kinds` for the periods holding
    /// `day`.
    async fn progress(
        &self,
        pk: &str,
        kinds: &[GoalKind],
        day: Day,
    ) -> Result<(), ProjectionError> {
        for goal in self.goals(pk, kinds).await? {
            self.recompute(pk, &goal, period_start(goal.period, day))
                .await?;
        }
        Ok(())
    }

    /// Recomputes one goal's progress for the period starting on `start` (see the module
    /// docs for the compare-and-set).
    async fn recompute(&self, pk: &str, goal: &Goal, start: Day) -> Result<(), ProjectionError> {
        let goal_key = Key::new(pk, SortKey::Goal(goal.goal_id.clone()).to_string());
        let key = progress_key(pk, goal, start)?;
        for _ in 0..MAX_ATTEMPTS {
            // The goal first: whatever changed its progress after this read also makes
            // the write below fail.
            let Some(row) = self.table.get(&goal_key, true).await? else {
                return Ok(());
            };
            let state = GoalState::of(row)?;
            if state.first_period().is_some_and(|first| start < first) {
                return Ok(());
            }
            let value = value_of(goal.kind, &self.facts(pk, goal, start).await?);
            let previous = self
                .table
                .get(&key, true)
                .await?
                .filter(|row| !is_tombstone(row))
                .map(|row| decimal_of(&row, &["value"]))
                .unwrap_or_default();
            let revision = state.revision.unwrap_or(0) + 1;
            let actions = if previous == value {
                // Nothing to change; but a worker that read older facts may be about to
                // commit them: moving the revision on fails its compare-and-set, so it
                // reads again. (A transaction of one write: a conflict with another
                // worker's transaction is then a cancellation, read like the change's.)
                vec![Action::Update {
                    key: goal_key.clone(),
                    update: Update::default().set(PROGRESS_REV, revision),
                    condition: Some(revision_guard(&state)),
                }]
            } else {
                let current = self.current_after(pk, &state, start, value).await?;
                self.change(pk, &state, (start, previous, value), revision, current)?
            };
            match self.table.transact(actions).await {
                Ok(()) => return Ok(()),
                // Another worker changed this goal's progress: read again.
                Err(StoreError::TransactionCanceled { reasons })
                    if CancelReason::lost_race(&reasons) =>
                {
                    continue;
                }
                Err(e) => return Err(e.into()),
            }
        }
        Err(StoreError::Backend(format!("progress of goal {} kept changing", goal.goal_id)).into())
    }

    /// How the goal's current value (its latest non-zero period's) changes once the
    /// period starting on `start` has `value`.
    async fn current_after(
        &self,
        pk: &str,
        state: &GoalState,
        start: Day,
        value: Decimal,
    ) -> Result<Current, ProjectionError> {
        if !value.is_zero() {
            return Ok(match state.current {
                Some(current) if current > start => Current::Keep,
                _ => Current::Set(start, value),
            });
        }
        if state.current != Some(start) {
            return Ok(Current::Keep);
        }
        // The latest period falls to zero: the one before it that is not zero, if any.
        let rows = self
            .rows(
                pk,
                SortKeyCondition::BeginsWith(prefix::progress_of(&state.goal.goal_id)),
            )
            .await?;
        let earlier = rows
            .iter()
            .filter_map(|row| {
                let day = row
                    .get("period_start")
                    .and_then(Value::as_str)
                    .and_then(|d| Day::parse(d).ok())?;
                (day < start).then(|| (day, decimal_of(row, &["value"])))
            })
            .filter(|(_, value)| !value.is_zero())
            .max_by_key(|(day, _)| *day);
        Ok(earlier.map_or(Current::Clear, |(day, value)| Current::Set(day, value)))
    }

    /// The transaction of one change: the goal's revision (and current value), the
    /// progress row (or its tombstone) and the `GoalProgressed` event.
    fn change(
        &self,
        pk: &str,
        state: &GoalState,
        (start, previous, value): (Day, Decimal, Decimal),
        revision: u64,
        current: Current,
    ) -> Result<Vec<Action>, ProjectionError> {
        let goal = &state.goal;
        let met = value >= goal.target;
        let mut update = Update::default().set(PROGRESS_REV, revision);
        match current {
            Current::Clear => {
                update = update
                    .remove("current_value")
                    .remove("current_period_start")
                    .remove("current_period_rank");
            }
            Current::Set(day, value) => {
                update = update
                    .set("current_value", json!(value))
                    .set("current_period_start", json!(day))
                    .set(
                        "current_period_rank",
                        day.date().num_days_from_ce().max(0) as u64,
                    );
            }
            Current::Keep => {}
        }
        let key = progress_key(pk, goal, start)?;
        // A period back to zero has no row: which rows exist is then a function of the
        // facts alone (the goal's revision, not the row, orders the changes).
        let row = if value.is_zero() {
            Action::Delete {
                key,
                condition: None,
            }
        } else {
            let mut row = object(json!({"goal_id": goal.goal_id, "period_start": start,
                                        "value": value, "target": goal.target, "met": met}));
            row.extend(key.to_item());
            Action::Put {
                item: row,
                condition: None,
            }
        };
        let progressed = GoalProgressed {
            goal_id: goal.goal_id.clone(),
            kind: goal.kind,
            period_start: start,
            previous_value: previous,
            value,
            target: goal.target,
            met,
        };
        let event = progress_event(pk, &progressed, revision, self.clock.now())?;
        let event_item =
            outbox_item(pk, &event).map_err(|e| ProjectionError::Decode(e.to_string()))?;
        Ok(vec![
            Action::Update {
                key: Key::new(pk, SortKey::Goal(goal.goal_id.clone()).to_string()),
                update,
                condition: Some(revision_guard(state)),
            },
            row,
            Action::Put {
                item: event_item,
                condition: Some(Condition::ItemNotExists),
            },
        ])
    }
}

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
        let facts = self
            .0
            .rows(
                &pk,
                SortKeyCondition::Between(from, format!("{kind_prefix}\u{10FFFF}")),
            )
            .await?;
        let mut periods: Vec<Day> = facts
            .iter()
            .filter_map(|row| row.get("day").or_else(|| row.get("night")))
            .filter_map(Value::as_str)
            .filter_map(|d| Day::parse(d).ok())
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
    subscription!("goals-from-nutrition", Nutrition -> Goals, consumes crate::facts::MEAL_EVENTS, writes &["NUT_DAILY#", "GOAL#", "PROGRESS#", "EVT#"]);

    async fn apply(&self, event: &EventEnvelope) -> Result<(), ProjectionError> {
        let Some((pk, days)) = meal_days(event)? else {
            return Ok(());
        };
        for day in days {
            let key = Key::new(&pk, SortKey::NutDaily(day.day).to_string());
            replace_newer(&self.0.table, &key, totals_row(&day), VERSION, day.version).await?;
            self.0
                .progress(&pk, &[GoalKind::DailyProteinGrams], day.day)
                .await?;
        }
        Ok(())
    }
}

/// A night's sleep from its session entries: sessions and their minutes in all.
fn night_of(entries: &serde_json::Map<String, Value>) -> Item {
    let live: Vec<&Value> = live_entries(entries).map(|(_, e)| e).collect();
    let minutes: u64 = live
        .iter()
        .filter_map(|e| e.get("minutes").and_then(Value::as_u64))
        .sum();
    object(json!({"sessions": live.len(), "minutes": minutes}))
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
            value: json!({"minutes": session.start.minutes_until(session.end)}),
            version: session.version,
            day: session.night,
            from: previous,
        };
        let nights = merge_moved(&self.0.table, member, |night| {
            let key = Key::new(&pk, SortKey::SleepNight(night).to_string());
            let row = move |entries: &serde_json::Map<String, Value>| {
                let mut item = night_of(entries);
                item.insert("night".into(), json!(night));
                item
            };
            (key, row)
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

/// The calls this module makes, as declared access patterns (see `infra::access`).
pub(crate) mod access {
    use events_schema::Context::Goals as GOALS;
    use infra::access::{AccessPattern as P, Action::*, Op, Order::Forward, Sk, Written as W};

    /// A fact row the goals projections keep in the goals table.
    macro_rules! fact {
        ($kind:literal, $events:literal) => {
            [
                P::new(
                    "project a fact for the goals",
                    GOALS,
                    Op::Put,
                    "USER#",
                    Sk::exact($kind),
                    $events,
                )
                .volume(2.0)
                .size(1, 300),
                P::new(
                    "the facts of a goal's period",
                    GOALS,
                    Op::query(Forward, false, true),
                    "USER#",
                    Sk::range($kind),
                    "a goal's progress recomputed (GoalSet, GoalUpdated and each fact)",
                )
                .volume(3.0)
                .size(7, 300),
            ]
        };
    }

    /// The goals projections' calls.
    pub static ACCESS: &[P] = &[
        P::new(
            "a user's goals",
            GOALS,
            Op::query(Forward, false, true),
            "USER#",
            Sk::prefix("GOAL#"),
            "each fact (which goals it counts for)",
        )
        .volume(4.0)
        .size(5, 600),
        P::new(
            "a goal's progress of a period",
            GOALS,
            Op::get(true),
            "USER#",
            Sk::exact("PROGRESS#"),
            "a goal's progress recomputed",
        )
        .volume(3.0)
        .size(1, 300),
        P::new(
            "a goal's progress rows",
            GOALS,
            Op::query(Forward, false, true),
            "USER#",
            Sk::prefix("PROGRESS#"),
            "a goal changed (its periods rescored)",
        )
        .volume(0.1)
        .size(10, 300),
        P::new(
            "a night's sleep fact",
            GOALS,
            Op::get(true),
            "USER#",
            Sk::exact("SLEEP_NIGHT#"),
            "SleepRecorded (a night's sessions merged)",
        )
        .volume(1.0)
        .size(1, 300),
        P::transact(
            "record a goal's progress",
            &[
                W::new(Update, GOALS, "USER#", "GOAL#"),
                W::new(Put, GOALS, "USER#", "PROGRESS#").optional(),
                W::new(Delete, GOALS, "USER#", "PROGRESS#").optional(),
                W::new(Put, GOALS, "USER#", "EVT#").optional(),
            ],
            "a goal's progress recomputed (GoalProgressed published with it)",
        )
        .volume(3.0)
        .size(3, 400),
    ];

    /// The facts, per kind.
    pub static FACTS: &[[P; 2]] = &[
        fact!("ACT_WORKOUT#", "WorkoutLogged"),
        fact!("NUT_DAILY#", "MealLogged, MealEdited, MealDeleted"),
        fact!("SLEEP_NIGHT#", "SleepRecorded"),
    ];
}
