//! The dashboard: one partition per user holding everything the app's home screen shows,
//! read with one Query. Rows: `PROFILE`, `DAILY#<date>` (attribute groups: `nutrition`,
//! the day's summary, guarded by its version: a copy of the totals the meal commands
//! computed in their own transaction and carried in the event's `day_totals`, nothing
//! here adds meals up; `activity` and `sleep`, each derived from a
//! set of versioned entries, one per workout or session of the day), `RECENT_MEAL#<date>#<id>`,
//! `RECENT_WORKOUT#<date>#<id>`, `ACTIVE_GOAL#<goal-id>`, `CONNECTION#<provider>`.
//!
//! The partition stays bounded: dated rows are kept for a rolling window of
//! [`WINDOW_DAYS`] days behind the newest day seen (the `WINDOW` row's high-water mark).
//! Rows that fall out are deleted, and events older than the window are ignored, so the
//! partition has the same rows whatever order events arrive in.

use crate::daily::{SleepEntry, WorkoutEntry};
use crate::facts::{sleep_of, workout_of};
use crate::projector::{ProjectionError, Projector, decode, event_types, subscription, user_pk};
use crate::rows::{
    Entry, Moved, merge_group_entry, object, replace_newer, tombstone_newer, upsert_newer, value_of,
};
use async_trait::async_trait;
use chrono::{Datelike as _, Duration};
use events_schema::envelope::{EventEnvelope, EventPayload};
use events_schema::events::activity::Workout;
use events_schema::events::goals::{Goal, GoalCreated, GoalStatus, GoalStatusChanged};
use events_schema::events::identity::{EmailChanged, ProfileState, ProfileUpdated, UserRegistered};
use events_schema::events::integrations::{ProviderConnected, ProviderDisconnected};
use events_schema::events::nutrition::{DayTotals, Meal, MealDeleted, MealEdited, MealLogged};
use events_schema::ids::{MealId, WorkoutId};
use events_schema::keys::{SortKey, prefix};
use events_schema::rows::{
    ActiveGoalRow, ConnectionRow, DailyGroup, DayNutrition, MealRow, ProfileRow, SleepRow,
    WorkoutRow,
};
use events_schema::time::Day;
use infra::StoreError;
use infra::store::{Key, Query, SortKeyCondition};
use infra::table::{Table, contexts};
use serde_json::json;

/// Days of dated rows kept behind the newest day seen.
pub const WINDOW_DAYS: i64 = 30;
const WINDOW_SK: &str = "WINDOW";
const VERSION: &str = "version";

/// Which days one event's application found inside the window (asked once per day).
#[derive(Debug, Default)]
pub struct Admissions(std::collections::HashMap<Day, bool>);

/// The dashboard table, with the window bookkeeping every dashboard projector shares.
#[derive(Clone)]
pub struct DashboardRows {
    table: Table<contexts::Dashboard>,
}

fn day_number(day: Day) -> i64 {
    day.date().num_days_from_ce() as i64
}

impl DashboardRows {
    pub fn new(table: Table<contexts::Dashboard>) -> Self {
        Self { table }
    }

    /// Whether `day` is inside the window. Advancing the high-water mark prunes the
    /// rows that fell out of the window.
    async fn admit(&self, pk: &str, day: Day, memo: &mut Admissions) -> Result<bool, StoreError> {
        if let Some(known) = memo.0.get(&day) {
            return Ok(*known);
        }
        let admitted = self.admit_uncached(pk, day).await?;
        memo.0.insert(day, admitted);
        Ok(admitted)
    }

    async fn admit_uncached(&self, pk: &str, day: Day) -> Result<bool, StoreError> {
        let n = day_number(day);
        // Day numbers are positive for every valid `Day`, so the cast is lossless.
        let key = Key::new(pk, WINDOW_SK);
        if upsert_newer(&self.table, &key, object(json!({})), "hwm", n as u64).await? {
            self.prune(pk, day.date() - Duration::days(WINDOW_DAYS))
                .await?;
            return Ok(true);
        }
        let hwm = self
            .table
            .get(&key, true)
            .await?
            .and_then(|row| row.get("hwm").and_then(|v| v.as_i64()))
            .unwrap_or(n);
        Ok(n > hwm - WINDOW_DAYS)
    }

    /// Deletes dated rows of `cutoff` and before.
    async fn prune(&self, pk: &str, cutoff: chrono::NaiveDate) -> Result<(), StoreError> {
        let cutoff = Day::new(cutoff);
        for kind in [prefix::DAILY, prefix::RECENT_MEAL, prefix::RECENT_WORKOUT] {
            loop {
                let range = SortKeyCondition::up_to_day(kind, cutoff);
                let page = self
                    .table
                    .query(&Query::partition(pk).sort_key(range).limit(25).consistent())
                    .await?;
                if page.items.is_empty() {
                    break;
                }
                for row in page.items {
                    if let Some(sk) = row.get("sk").and_then(|v| v.as_str()) {
                        self.table.delete(&Key::new(pk, sk), None).await?;
                    }
                }
            }
        }
        Ok(())
    }

    async fn daily_group(
        &self,
        memo: &mut Admissions,
        pk: &str,
        group: DailyGroup,
        day: Day,
        value: serde_json::Value,
        version: u64,
    ) -> Result<(), StoreError> {
        if !self.admit(pk, day, memo).await? {
            return Ok(());
        }
        let key = Key::new(pk, SortKey::Daily(day).to_string());
        let attrs = object(json!({ "day": day, group.attr(): value }));
        upsert_newer(&self.table, &key, attrs, &group.version_attr(), version)
            .await
            .map(|_| ())
    }

    /// Merges one entry into a group of `DAILY#<day>` (see `rows::merge_group_entry`),
    /// if the day is inside the window.
    async fn daily_entry(
        &self,
        memo: &mut Admissions,
        pk: &str,
        (day, group): (Day, DailyGroup),
        entry: Entry<'_>,
    ) -> Result<(), StoreError> {
        if !self.admit(pk, day, memo).await? {
            return Ok(());
        }
        let key = Key::new(pk, SortKey::Daily(day).to_string());
        let also = object(json!({ "day": day }));
        let derive = |entries: &_| crate::daily::derive(group, entries);
        merge_group_entry(&self.table, &key, group, entry, derive, &also)
            .await
            .map(|_| ())
    }

    /// An entity's entry in a group of its day's `DAILY#` row, taken off the day it moved
    /// from, if it moved: a workout of a day's activity, a session of a night's sleep.
    async fn moved_entry(
        &self,
        memo: &mut Admissions,
        pk: &str,
        group: DailyGroup,
        member: Moved<'_>,
    ) -> Result<(), StoreError> {
        for (day, entry) in member.entries() {
            self.daily_entry(memo, pk, (day, group), entry).await?;
        }
        Ok(())
    }

    async fn dated_row(
        &self,
        memo: &mut Admissions,
        pk: &str,
        day: Day,
        sk: String,
        attrs: serde_json::Value,
        version: u64,
    ) -> Result<(), StoreError> {
        if self.admit(pk, day, memo).await? {
            replace_newer(
                &self.table,
                &Key::new(pk, sk),
                object(attrs),
                VERSION,
                version,
            )
            .await?;
        }
        Ok(())
    }

    async fn dated_tombstone(
        &self,
        memo: &mut Admissions,
        pk: &str,
        day: Day,
        sk: String,
        version: u64,
    ) -> Result<(), StoreError> {
        if self.admit(pk, day, memo).await? {
            tombstone_newer(&self.table, &Key::new(pk, sk), VERSION, version).await?;
        }
        Ok(())
    }

    /// A thing on a day, as the home screen keeps it (`recent`, inside the window) and as
    /// the history keeps it (`log`, forever): both written, or both tombstoned (`None`),
    /// at `version`.
    async fn dated_pair(
        &self,
        memo: &mut Admissions,
        pk: &str,
        day: Day,
        (recent, log): (String, String),
        (row, version): (Option<serde_json::Value>, u64),
    ) -> Result<(), StoreError> {
        let log = Key::new(pk, log);
        match row {
            Some(row) => {
                replace_newer(&self.table, &log, object(row.clone()), VERSION, version).await?;
                self.dated_row(memo, pk, day, recent, row, version).await
            }
            None => {
                tombstone_newer(&self.table, &log, VERSION, version).await?;
                self.dated_tombstone(memo, pk, day, recent, version).await
            }
        }
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
        let pk = user_pk(event)?;
        let key = Key::new(&pk, SortKey::Profile.to_string());
        let row = ProfileRow {
            email: profile.email,
            display_name: profile.display_name,
            timezone: profile.timezone,
            units: profile.units,
            version: profile.version,
        };
        replace_newer(
            &self.0.table,
            &key,
            object(value_of(&row)),
            VERSION,
            row.version,
        )
        .await?;
        Ok(())
    }
}

/// `DAILY#` nutrition totals, `RECENT_MEAL#` rows and the meal history (`~MEAL#`) from
/// nutrition events.
pub struct DashboardFromNutrition(pub DashboardRows);

fn meal_row(meal: &Meal) -> serde_json::Value {
    value_of(&MealRow {
        meal_id: meal.meal_id.clone(),
        day: meal.day,
        name: meal.name.clone(),
        eaten_at: meal.eaten_at,
        nutrients: meal.nutrients,
        version: meal.version,
    })
}

/// The keys of a meal's two rows (home screen, history).
fn meal_keys(day: Day, meal: &MealId) -> (String, String) {
    (
        SortKey::RecentMeal(day, meal.clone()).to_string(),
        SortKey::MealLog(day, meal.clone()).to_string(),
    )
}

impl DashboardFromNutrition {
    /// A meal's two rows on its day, taken off the day it moved from (if it moved).
    async fn meal(
        &self,
        memo: &mut Admissions,
        pk: &str,
        meal: &Meal,
        moved_from: Option<Day>,
    ) -> Result<(), StoreError> {
        if let Some(previous) = moved_from {
            let gone = (None, meal.version);
            self.meal_rows(memo, pk, previous, &meal.meal_id, gone)
                .await?;
        }
        let row = (Some(meal_row(meal)), meal.version);
        self.meal_rows(memo, pk, meal.day, &meal.meal_id, row).await
    }

    /// Writes (or, with no row, deletes) a meal's two rows of `day`.
    async fn meal_rows(
        &self,
        memo: &mut Admissions,
        pk: &str,
        day: Day,
        meal: &MealId,
        row: (Option<serde_json::Value>, u64),
    ) -> Result<(), StoreError> {
        let keys = meal_keys(day, meal);
        self.0.dated_pair(memo, pk, day, keys, row).await
    }

    async fn totals(
        &self,
        memo: &mut Admissions,
        pk: &str,
        totals: &DayTotals,
    ) -> Result<(), StoreError> {
        let value = value_of(&DayNutrition {
            meals: totals.meals,
            totals: totals.totals,
        });
        self.0
            .daily_group(
                memo,
                pk,
                DailyGroup::Nutrition,
                totals.day,
                value,
                totals.version,
            )
            .await
    }
}

#[async_trait]
impl Projector for DashboardFromNutrition {
    subscription!("dashboard-from-nutrition", Nutrition -> Dashboard, consumes crate::facts::MEAL_EVENTS, writes &["RECENT_MEAL#", "~MEAL#", "DAILY#", "WINDOW"]);

    async fn apply(&self, event: &EventEnvelope) -> Result<(), ProjectionError> {
        let mut memo = Admissions::default();
        match event.event_type.as_str() {
            MealLogged::EVENT_TYPE => {
                let logged: MealLogged = decode(event)?;
                let pk = user_pk(event)?;
                self.totals(&mut memo, &pk, &logged.day_totals).await?;
                self.meal(&mut memo, &pk, &logged.meal, None).await?;
            }
            MealEdited::EVENT_TYPE => {
                let edited: MealEdited = decode(event)?;
                let pk = user_pk(event)?;
                for totals in &edited.day_totals {
                    self.totals(&mut memo, &pk, totals).await?;
                }
                let moved = (edited.previous_day != edited.meal.day).then_some(edited.previous_day);
                self.meal(&mut memo, &pk, &edited.meal, moved).await?;
            }
            MealDeleted::EVENT_TYPE => {
                let deleted: MealDeleted = decode(event)?;
                let pk = user_pk(event)?;
                self.totals(&mut memo, &pk, &deleted.day_totals).await?;
                let gone = (None, deleted.version);
                self.meal_rows(&mut memo, &pk, deleted.day, &deleted.meal_id, gone)
                    .await?;
            }
            _ => {}
        }
        Ok(())
    }
}

/// `RECENT_WORKOUT#` rows, and the `activity` group of `DAILY#`: one entry per workout
/// of the day (a moved workout leaves its old day as a deleted entry).
pub struct DashboardFromActivity(pub DashboardRows);

fn workout_row(w: &Workout) -> serde_json::Value {
    value_of(&WorkoutRow {
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
    })
}

/// The keys of a workout's two rows (home screen, history).
fn workout_keys(day: Day, workout: &WorkoutId) -> (String, String) {
    (
        SortKey::RecentWorkout(day, workout.clone()).to_string(),
        SortKey::WorkoutLog(day, workout.clone()).to_string(),
    )
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
        if let Some(previous) = previous_day {
            let old = workout_keys(previous, &workout.workout_id);
            self.0
                .dated_pair(&mut memo, &pk, previous, old, (None, workout.version))
                .await?;
        }
        let keys = workout_keys(workout.day, &workout.workout_id);
        let row = (Some(workout_row(&workout)), workout.version);
        self.0
            .dated_pair(&mut memo, &pk, workout.day, keys, row)
            .await?;
        let member = Moved {
            id: &workout.workout_id.to_string(),
            value: value_of(&WorkoutEntry {
                duration_s: u64::from(workout.duration_s),
            }),
            version: workout.version,
            day: workout.day,
            from: previous_day,
        };
        self.0
            .moved_entry(&mut memo, &pk, DailyGroup::Activity, member)
            .await?;
        Ok(())
    }
}

/// The `sleep` group of `DAILY#<night>`: one entry per session of the night (a moved
/// session leaves its old night as a deleted entry).
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
        let log = |night| {
            Key::new(
                &pk,
                SortKey::SleepLog(night, session.sleep_id.clone()).to_string(),
            )
        };
        if let Some(previous) = previous {
            tombstone_newer(&self.0.table, &log(previous), VERSION, session.version).await?;
        }
        let row = SleepRow {
            sleep_id: session.sleep_id.clone(),
            night: session.night,
            start: session.start,
            end: session.end,
            score: session.score,
            stages: session.stages,
            source: session.source.clone(),
            version: session.version,
        };
        replace_newer(
            &self.0.table,
            &log(session.night),
            object(value_of(&row)),
            VERSION,
            row.version,
        )
        .await?;
        let minutes = session.start.minutes_until(session.end);
        let member = Moved {
            id: &session.sleep_id.to_string(),
            value: value_of(&SleepEntry {
                minutes: Some(minutes),
                score: Some(session.score),
                stages: Some(session.stages),
            }),
            version: session.version,
            day: session.night,
            from: previous,
        };
        self.0
            .moved_entry(&mut memo, &pk, DailyGroup::Sleep, member)
            .await?;
        Ok(())
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
        let key = Key::new(&pk, SortKey::ActiveGoal(goal.goal_id.clone()).to_string());
        if goal.status == GoalStatus::Active {
            let row = ActiveGoalRow {
                goal_id: goal.goal_id.clone(),
                kind: goal.kind,
                title: goal.title.clone(),
                target: goal.target,
                period: goal.period,
                version: goal.version,
            };
            replace_newer(
                &self.0.table,
                &key,
                object(value_of(&row)),
                VERSION,
                row.version,
            )
            .await?;
        } else {
            tombstone_newer(&self.0.table, &key, VERSION, goal.version).await?;
        }
        Ok(())
    }
}

/// `CONNECTION#<provider>` rows; the most recently recorded change wins.
pub struct DashboardFromIntegrations(pub DashboardRows);

#[async_trait]
impl Projector for DashboardFromIntegrations {
    subscription!("dashboard-from-integrations", Integrations -> Dashboard, consumes event_types![ProviderConnected, ProviderDisconnected], writes &["CONNECTION#"]);

    async fn apply(&self, event: &EventEnvelope) -> Result<(), ProjectionError> {
        let mut row = match event.event_type.as_str() {
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
            _ => return Ok(()),
        };
        let pk = user_pk(event)?;
        let key = Key::new(&pk, SortKey::Connection(row.provider.clone()).to_string());
        // Events written before connections carried a version are ordered by their
        // recording time, on the same scale (milliseconds).
        if row.version == 0 {
            row.version = event.recorded_at.millis().max(0) as u64;
        }
        replace_newer(
            &self.0.table,
            &key,
            object(value_of(&row)),
            VERSION,
            row.version,
        )
        .await?;
        Ok(())
    }
}

/// The calls this module makes, as declared access patterns (see `infra::access`).
pub(crate) mod access {
    use events_schema::Context::Dashboard as DASHBOARD;
    use infra::access::{AccessPattern as P, Op, Order::Forward, Sk};

    /// A row the dashboard projections put if newer (`rows::put_if_newer`).
    macro_rules! projected {
        ($name:literal, $kind:literal, $feature:literal, $volume:expr) => {
            P::new(
                $name,
                DASHBOARD,
                Op::Put,
                "USER#",
                Sk::exact($kind),
                $feature,
            )
            .volume($volume)
            .size(1, 400)
        };
    }

    /// The window's trimming: the oldest rows of one kind beyond the kept days.
    macro_rules! trimmed {
        ($kind:literal) => {
            [
                P::new(
                    "the oldest rows beyond the window",
                    DASHBOARD,
                    Op::query(Forward, true, true),
                    "USER#",
                    Sk::range($kind),
                    "the dashboard's window moving on (a day's first event)",
                )
                .volume(1.0)
                .size(25, 300),
                P::new(
                    "drop a row beyond the window",
                    DASHBOARD,
                    Op::Delete,
                    "USER#",
                    Sk::exact($kind),
                    "the dashboard's window moving on",
                )
                .volume(3.0)
                .size(1, 300),
            ]
        };
    }

    /// The dashboard projections' calls.
    pub static ACCESS: &[P] = &[
        projected!(
            "project a recent meal",
            "RECENT_MEAL#",
            "MealLogged, MealEdited, MealDeleted",
            4.0
        ),
        projected!(
            "project a recent workout",
            "RECENT_WORKOUT#",
            "WorkoutLogged",
            1.0
        ),
        projected!(
            "project a meal into the history",
            "~MEAL#",
            "MealLogged, MealEdited, MealDeleted",
            4.0
        ),
        projected!(
            "project a workout into the history",
            "~WORKOUT#",
            "WorkoutLogged",
            1.0
        ),
        projected!(
            "project a night into the history",
            "~SLEEP#",
            "SleepRecorded",
            1.0
        ),
        projected!(
            "project the profile",
            "PROFILE",
            "UserRegistered, ProfileUpdated",
            0.05
        ),
        projected!(
            "project an active goal",
            "ACTIVE_GOAL#",
            "GoalSet, GoalUpdated, GoalProgressed",
            2.0
        ),
        projected!(
            "project a connection",
            "CONNECTION#",
            "ProviderConnected, ProviderDisconnected",
            0.001
        ),
        P::new(
            "a day's dashboard row",
            DASHBOARD,
            Op::get(true),
            "USER#",
            Sk::exact("DAILY#"),
            "WorkoutLogged, SleepRecorded (merged into the day's groups)",
        )
        .volume(2.0)
        .size(1, 1500),
        P::new(
            "merge into a day's dashboard row",
            DASHBOARD,
            Op::Update,
            "USER#",
            Sk::exact("DAILY#"),
            "MealLogged and every event that changes a day's totals",
        )
        .volume(6.0)
        .size(1, 1500),
        P::new(
            "the dashboard's window",
            DASHBOARD,
            Op::get(true),
            "USER#",
            Sk::exact("WINDOW"),
            "every dashboard event (which days the home screen keeps)",
        )
        .volume(6.0)
        .size(1, 100),
        P::new(
            "move the dashboard's window",
            DASHBOARD,
            Op::Update,
            "USER#",
            Sk::exact("WINDOW"),
            "a day's first dashboard event",
        )
        .volume(1.0)
        .size(1, 100),
    ];

    /// The window's trimming, per kept kind.
    pub static TRIMMING: &[[P; 2]] = &[
        trimmed!("DAILY#"),
        trimmed!("RECENT_MEAL#"),
        trimmed!("RECENT_WORKOUT#"),
    ];
}
