//! The reference model: what every read row must be, computed from the final
//! command-side state (meals, summaries, workouts, sleep sessions, goals, connections,
//! profile) and the little the history knows that state cannot (when and where a goal
//! was set, which provider revisions were delivered). It is written for clarity, not
//! speed: sums over lists, one day at a time. Its verdict is a list of differences.

use super::execute::{Delivered, Payload, UserRun, external_id};
use crate::pipeline::value_at;
use chrono::Datelike;
use commands::nutrition::{MealRecord, SummaryRecord};
use events_schema::Context;
use events_schema::events::Source;
use events_schema::events::activity::Workout;
use events_schema::events::goals::{Goal, GoalKind, GoalPeriod, GoalStatus};
use events_schema::events::sleep::SleepSession;
use events_schema::tables;
use events_schema::time::{Day, Timestamp};
use infra::Store;
use infra::store::Item;
use rust_decimal::Decimal;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};

/// Days of dated dashboard rows kept behind the newest day (as the dashboard says).
const WINDOW_DAYS: i64 = projectors::dashboard::WINDOW_DAYS;

/// Every item of partition `pk` of a table.
async fn partition(store: &dyn Store, table: Context, pk: &str) -> Vec<Item> {
    crate::commands::items_of(store, table, pk, "").await
}

fn sk(item: &Item) -> &str {
    item.get("sk").and_then(Value::as_str).unwrap_or_default()
}

fn with_prefix<'a>(items: &'a [Item], prefix: &'a str) -> impl Iterator<Item = &'a Item> + 'a {
    items.iter().filter(move |i| sk(i).starts_with(prefix))
}

fn decode<T: serde::de::DeserializeOwned>(item: &Item) -> T {
    serde_json::from_value(Value::Object(item.clone()))
        .unwrap_or_else(|e| panic!("stored item does not decode ({e}): {item:?}"))
}

fn decimal(value: Option<&Value>) -> Decimal {
    match value {
        Some(Value::String(s)) => s.parse().unwrap_or_default(),
        Some(Value::Number(n)) => n.to_string().parse().unwrap_or_default(),
        _ => Decimal::ZERO,
    }
    .normalize()
}

fn is_tombstone(item: &Item) -> bool {
    item.get("deleted")
        .and_then(Value::as_bool)
        .unwrap_or(false)
}

fn number(day: Day) -> i64 {
    i64::from(day.date().num_days_from_ce())
}

fn week_start(day: Day) -> Day {
    Day::new(
        day.date() - chrono::Duration::days(i64::from(day.date().weekday().num_days_from_monday())),
    )
}

fn period_of(period: GoalPeriod, day: Day) -> Day {
    match period {
        GoalPeriod::Daily => day,
        GoalPeriod::Weekly => week_start(day),
    }
}

fn day_in(at: Timestamp, tz: &str) -> Day {
    let zone: chrono_tz::Tz = tz.parse().unwrap_or(chrono_tz::UTC);
    Day::new(at.datetime().with_timezone(&zone).date_naive())
}

fn minutes(session: &SleepSession) -> i64 {
    ((session.end.millis() - session.start.millis()) / 60_000).max(0)
}

/// What the command side holds of one user.
struct Facts {
    profile: Option<Item>,
    meals: Vec<MealRecord>,
    summaries: BTreeMap<Day, SummaryRecord>,
    workouts: Vec<Workout>,
    sleeps: Vec<SleepSession>,
    goals: Vec<Goal>,
    connections: Vec<Item>,
}

impl Facts {
    async fn read(store: &dyn Store, pk: &str) -> Self {
        let identity = partition(store, Context::Identity, pk).await;
        let nutrition = partition(store, Context::Nutrition, pk).await;
        let activity = partition(store, Context::Activity, pk).await;
        let sleep = partition(store, Context::Sleep, pk).await;
        let goals = partition(store, Context::Goals, pk).await;
        let integrations = partition(store, Context::Integrations, pk).await;
        Self {
            profile: identity.iter().find(|i| sk(i) == "PROFILE").cloned(),
            meals: with_prefix(&nutrition, "MEAL#").map(decode).collect(),
            summaries: with_prefix(&nutrition, "DAILY_SUMMARY#")
                .map(decode::<SummaryRecord>)
                .map(|s| (s.day, s))
                .collect(),
            workouts: with_prefix(&activity, "WORKOUT#").map(decode).collect(),
            sleeps: with_prefix(&sleep, "SLEEP#").map(decode).collect(),
            goals: with_prefix(&goals, "GOAL#").map(decode).collect(),
            connections: with_prefix(&integrations, "CONNECTION#").cloned().collect(),
        }
    }

    fn workouts_on(&self, day: Day) -> impl Iterator<Item = &Workout> {
        self.workouts.iter().filter(move |w| w.day == day)
    }

    fn sleeps_on(&self, night: Day) -> impl Iterator<Item = &SleepSession> {
        self.sleeps.iter().filter(move |s| s.night == night)
    }

    /// Every day something is recorded on.
    fn days(&self) -> BTreeSet<Day> {
        self.summaries
            .keys()
            .copied()
            .chain(self.workouts.iter().map(|w| w.day))
            .chain(self.sleeps.iter().map(|s| s.night))
            .collect()
    }

    fn activity(&self, day: Day) -> Value {
        let seconds: u64 = self.workouts_on(day).map(|w| u64::from(w.duration_s)).sum();
        json!({"workouts": self.workouts_on(day).count(), "active_minutes": seconds / 60})
    }

    fn sleep(&self, night: Day) -> Value {
        let sessions: Vec<&SleepSession> = self.sleeps_on(night).collect();
        let main = sessions.iter().max_by(|a, b| {
            minutes(a)
                .cmp(&minutes(b))
                .then_with(|| a.sleep_id.cmp(&b.sleep_id))
        });
        match main {
            None => json!({"sessions": 0, "minutes": 0}),
            Some(main) => {
                json!({"sessions": sessions.len(), "minutes": sessions.iter().map(|s| minutes(s)).sum::<i64>(),
                                 "sleep_id": main.sleep_id, "score": main.score, "stages": main.stages})
            }
        }
    }

    /// A goal's value over the period starting on `start`.
    fn value(&self, goal: &Goal, start: Day) -> Decimal {
        let in_period = |day: Day| period_of(goal.period, day) == start;
        let workouts: Vec<&Workout> = self.workouts.iter().filter(|w| in_period(w.day)).collect();
        match goal.kind {
            GoalKind::WeeklyWorkoutCount => Decimal::from(workouts.len()),
            GoalKind::WeeklyActiveMinutes => {
                let seconds: u64 = workouts.iter().map(|w| u64::from(w.duration_s)).sum();
                (Decimal::from(seconds) / Decimal::from(60)).round_dp(1)
            }
            GoalKind::WeeklyDistanceKm => {
                let metres: u64 = workouts
                    .iter()
                    .filter_map(|w| w.distance_m)
                    .map(u64::from)
                    .sum();
                (Decimal::from(metres) / Decimal::from(1000)).round_dp(2)
            }
            GoalKind::DailyProteinGrams => self
                .summaries
                .get(&start)
                .map(|s| s.totals.protein_g)
                .unwrap_or_default(),
            GoalKind::NightlySleepHours => {
                let total: i64 = self.sleeps_on(start).map(minutes).sum();
                (Decimal::from(total) / Decimal::from(60)).round_dp(2)
            }
        }
        .normalize()
    }
}

/// Differences between the read rows and the model, for one backend and delivery.
#[derive(Debug, Default)]
pub struct Verdict {
    pub differences: Vec<String>,
    /// How many rows and values were compared.
    pub compared: usize,
}

impl Verdict {
    fn same(&mut self, what: impl FnOnce() -> String, actual: &Value, expected: &Value) {
        self.compared += 1;
        if actual != expected {
            self.differences
                .push(format!("{}: read {actual}, model says {expected}", what()));
        }
    }

    fn holds(&mut self, what: impl FnOnce() -> String, ok: bool) {
        self.compared += 1;
        if !ok {
            self.differences.push(what());
        }
    }
}

/// Attribute `name` of `row`, or `absent` where there is no row or no such attribute.
fn field(row: Option<&Item>, name: &str, absent: Value) -> Value {
    row.and_then(|r| r.get(name)).cloned().unwrap_or(absent)
}

/// Checks every read row of `run`'s user against the model.
pub async fn check_user(store: &dyn Store, run: &UserRun, verdict: &mut Verdict) {
    let pk = format!("USER#{}", run.user);
    let facts = Facts::read(store, &pk).await;
    let user = run.user.to_string();
    check_commands(&facts, &user, verdict);
    check_synced(&facts, run, verdict);
    check_dashboard(store, &pk, &facts, &user, verdict).await;
    check_goals(store, &pk, &facts, run, verdict).await;
    check_cross(store, &pk, &facts, &user, verdict).await;
}

/// The command side's own invariant: a day's summary is the sum of its meals.
fn check_commands(facts: &Facts, user: &str, verdict: &mut Verdict) {
    for (day, summary) in &facts.summaries {
        let meals: Vec<&MealRecord> = facts.meals.iter().filter(|m| m.day == *day).collect();
        let protein: Decimal = meals.iter().map(|m| m.nutrients.protein_g).sum();
        let calories: Decimal = meals.iter().map(|m| m.nutrients.calories).sum();
        verdict.same(
            || format!("{user} summary {day}"),
            &json!([
                summary.meals,
                summary.totals.protein_g.normalize(),
                summary.totals.calories.normalize()
            ]),
            &json!([meals.len(), protein.normalize(), calories.normalize()]),
        );
    }
}

/// A synced record shows its newest delivered revision.
fn check_synced(facts: &Facts, run: &UserRun, verdict: &mut Verdict) {
    for (record, deliveries) in &run.delivered {
        let Some(newest) = deliveries.iter().map(|d| d.revision).max() else {
            continue;
        };
        let newest: Vec<&Delivered> = deliveries.iter().filter(|d| d.revision == newest).collect();
        let external = external_id(*record);
        let from_record = |source: &Source| matches!(source, Source::Provider { external_id, .. } if external_id.as_str() == external);
        match &newest[0].payload {
            Payload::Workout(sent) => {
                let stored: Vec<&Workout> = facts
                    .workouts
                    .iter()
                    .filter(|w| from_record(&w.source))
                    .collect();
                let days: BTreeSet<Day> = newest
                    .iter()
                    .map(|d| day_in(sent.started_at, &d.timezone))
                    .collect();
                verdict.holds(
                    || format!("{} workout {external}: stored {stored:?}, newest revision {sent:?} on {days:?}", run.user),
                    stored.len() == 1
                        && stored[0].started_at == sent.started_at
                        && stored[0].duration_s == sent.duration_s
                        && stored[0].distance_m == sent.distance_m
                        && days.contains(&stored[0].day),
                );
            }
            Payload::Sleep(sent) => {
                let stored: Vec<&SleepSession> = facts
                    .sleeps
                    .iter()
                    .filter(|s| from_record(&s.source))
                    .collect();
                let days: BTreeSet<Day> = newest
                    .iter()
                    .map(|d| day_in(sent.start, &d.timezone))
                    .collect();
                verdict.holds(
                    || format!("{} sleep {external}: stored {stored:?}, newest revision {sent:?} on {days:?}", run.user),
                    stored.len() == 1
                        && stored[0].start == sent.start
                        && stored[0].end == sent.end
                        && stored[0].score == sent.score
                        && days.contains(&stored[0].night),
                );
            }
        }
    }
}

/// One user's dashboard rows, as read.
struct Dashboard<'a> {
    user: &'a str,
    rows: Vec<Item>,
}

impl Dashboard<'_> {
    /// The row with sort key `key`.
    fn row(&self, key: &str) -> Option<&Item> {
        self.rows.iter().find(|r| sk(r) == key)
    }

    /// The live (not tombstoned) rows under `prefix`, as lists of their `fields`, are
    /// exactly `expected` (the same lists, made of the facts).
    fn check_live(
        &self,
        verdict: &mut Verdict,
        what: &str,
        (prefix, fields): (&str, &[&str]),
        expected: impl Iterator<Item = Value>,
    ) {
        let read: BTreeSet<String> = with_prefix(&self.rows, prefix)
            .filter(|r| !is_tombstone(r))
            .map(|r| json!(fields.iter().map(|f| r[*f].clone()).collect::<Vec<_>>()).to_string())
            .collect();
        let expected: BTreeSet<String> = expected.map(|row| row.to_string()).collect();
        let user = self.user;
        verdict.same(|| format!("{user} {what}"), &json!(read), &json!(expected));
    }
}

/// The days the dashboard keeps dated rows of: the `WINDOW_DAYS` up to day number `hwm`.
#[derive(Clone, Copy)]
struct Window {
    hwm: i64,
}

impl Window {
    /// Whether `day` is one of the window's days.
    fn contains(self, day: Day) -> bool {
        number(day) > self.hwm - WINDOW_DAYS && number(day) <= self.hwm
    }
}

/// Checks every dashboard row of `pk` against the model; without a window (nothing
/// recorded yet) only the profile and the window itself.
async fn check_dashboard(
    store: &dyn Store,
    pk: &str,
    facts: &Facts,
    user: &str,
    verdict: &mut Verdict,
) {
    let dashboard = Dashboard {
        user,
        rows: partition(store, Context::Dashboard, pk).await,
    };
    check_profile_row(&dashboard, facts, verdict);
    let days = facts.days();
    let Some(window) = check_window(&dashboard, &days, verdict) else {
        return;
    };
    check_daily_rows(&dashboard, facts, &days, window, verdict);
    check_dated_rows(&dashboard, window, verdict);
    check_recent_rows(&dashboard, facts, window, verdict);
    check_histories(&dashboard, facts, verdict);
    check_active_goals(&dashboard, facts, verdict);
    check_connections(&dashboard, facts, verdict);
}

/// The PROFILE row shows the profile's email, name, timezone and units.
fn check_profile_row(dashboard: &Dashboard<'_>, facts: &Facts, verdict: &mut Verdict) {
    let Some(profile) = &facts.profile else {
        return;
    };
    let (user, shown) = (dashboard.user, dashboard.row("PROFILE"));
    for attr in ["email", "display_name", "timezone", "units"] {
        verdict.same(
            || format!("{user} dashboard PROFILE.{attr}"),
            &field(shown, attr, Value::Null),
            &profile.get(attr).cloned().unwrap_or_default(),
        );
    }
}

/// The window: every recorded day (`days`) up to the newest is inside it or pruned.
/// Returns the window, if the dashboard has one.
fn check_window(
    dashboard: &Dashboard<'_>,
    days: &BTreeSet<Day>,
    verdict: &mut Verdict,
) -> Option<Window> {
    let user = dashboard.user;
    let hwm = dashboard
        .row("WINDOW")
        .and_then(|r| r.get("hwm"))
        .and_then(Value::as_i64);
    let Some(hwm) = hwm else {
        verdict.holds(
            || format!("{user} dashboard has no WINDOW but days {days:?}"),
            days.is_empty(),
        );
        return None;
    };
    let newest = days.iter().map(|d| number(*d)).max().unwrap_or(0);
    verdict.holds(
        || format!("{user} dashboard window {hwm} behind the newest day {newest}"),
        hwm >= newest,
    );
    Some(Window { hwm })
}

/// Every recorded day (`days`) inside the window has a DAILY row: its nutrition,
/// activity, sleep.
fn check_daily_rows(
    dashboard: &Dashboard<'_>,
    facts: &Facts,
    days: &BTreeSet<Day>,
    window: Window,
    verdict: &mut Verdict,
) {
    let user = dashboard.user;
    for &day in days.iter().filter(|d| window.contains(**d)) {
        let daily = dashboard.row(&format!("DAILY#{day}"));
        let nutrition = facts
            .summaries
            .get(&day)
            .map(|s| json!({"meals": s.meals, "totals": s.totals}));
        verdict.same(
            || format!("{user} DAILY#{day}.nutrition"),
            &field(daily, "nutrition", Value::Null),
            &nutrition.unwrap_or_default(),
        );
        verdict.same(
            || format!("{user} DAILY#{day}.activity"),
            &field(
                daily,
                "activity",
                json!({"workouts": 0, "active_minutes": 0}),
            ),
            &facts.activity(day),
        );
        verdict.same(
            || format!("{user} DAILY#{day}.sleep"),
            &field(daily, "sleep", json!({"sessions": 0, "minutes": 0})),
            &facts.sleep(day),
        );
    }
}

/// Dated rows (DAILY, RECENT_MEAL, RECENT_WORKOUT) are only kept inside the window.
fn check_dated_rows(dashboard: &Dashboard<'_>, window: Window, verdict: &mut Verdict) {
    let user = dashboard.user;
    for row in &dashboard.rows {
        let key = sk(row);
        let dated = ["DAILY#", "RECENT_MEAL#", "RECENT_WORKOUT#"]
            .iter()
            .any(|p| key.starts_with(p));
        let day = key.split('#').nth(1).and_then(|d| Day::parse(d).ok());
        if let (true, Some(day)) = (dated, day) {
            verdict.holds(
                || format!("{user} dashboard keeps {key} outside its window"),
                window.contains(day),
            );
        }
    }
}

/// The live RECENT_MEAL and RECENT_WORKOUT rows are exactly the meals and workouts
/// inside the window.
fn check_recent_rows(
    dashboard: &Dashboard<'_>,
    facts: &Facts,
    window: Window,
    verdict: &mut Verdict,
) {
    let meals = facts.meals.iter().filter(|m| window.contains(m.day));
    dashboard.check_live(
        verdict,
        "RECENT_MEAL rows",
        (
            "RECENT_MEAL#",
            &["meal_id", "day", "name", "eaten_at", "nutrients"],
        ),
        meals.map(|m| json!([m.meal_id, m.day, m.name, m.eaten_at, m.nutrients])),
    );
    let workouts = facts.workouts.iter().filter(|w| window.contains(w.day));
    dashboard.check_live(
        verdict,
        "RECENT_WORKOUT rows",
        (
            "RECENT_WORKOUT#",
            &[
                "workout_id",
                "day",
                "started_at",
                "duration_s",
                "distance_m",
            ],
        ),
        workouts.map(|w| {
            json!([
                w.workout_id,
                w.day,
                w.started_at,
                w.duration_s,
                w.distance_m
            ])
        }),
    );
}

/// The history rows: every meal, workout and sleep session, wherever its day.
fn check_histories(dashboard: &Dashboard<'_>, facts: &Facts, verdict: &mut Verdict) {
    dashboard.check_live(
        verdict,
        "meal history",
        ("~MEAL#", &["meal_id", "day", "eaten_at", "nutrients"]),
        facts
            .meals
            .iter()
            .map(|m| json!([m.meal_id, m.day, m.eaten_at, m.nutrients])),
    );
    dashboard.check_live(
        verdict,
        "workout history",
        (
            "~WORKOUT#",
            &["workout_id", "day", "started_at", "duration_s"],
        ),
        facts
            .workouts
            .iter()
            .map(|w| json!([w.workout_id, w.day, w.started_at, w.duration_s])),
    );
    dashboard.check_live(
        verdict,
        "sleep history",
        ("~SLEEP#", &["sleep_id", "night", "start", "end", "score"]),
        facts
            .sleeps
            .iter()
            .map(|s| json!([s.sleep_id, s.night, s.start, s.end, s.score])),
    );
}

/// The live ACTIVE_GOAL rows are exactly the active goals.
fn check_active_goals(dashboard: &Dashboard<'_>, facts: &Facts, verdict: &mut Verdict) {
    let active = facts
        .goals
        .iter()
        .filter(|g| g.status == GoalStatus::Active);
    dashboard.check_live(
        verdict,
        "ACTIVE_GOAL rows",
        ("ACTIVE_GOAL#", &["goal_id", "kind", "title", "target"]),
        active.map(|g| json!([g.goal_id, g.kind, g.title, g.target])),
    );
}

/// Each connection's dashboard row says whether it is connected.
fn check_connections(dashboard: &Dashboard<'_>, facts: &Facts, verdict: &mut Verdict) {
    let user = dashboard.user;
    for connection in &facts.connections {
        let key = sk(connection);
        let connected = connection.get("status").and_then(Value::as_str) != Some("disconnected");
        verdict.same(
            || format!("{user} dashboard {key}.connected"),
            &field(dashboard.row(key), "connected", Value::Null),
            &json!(connected),
        );
    }
}

async fn check_goals(
    store: &dyn Store,
    pk: &str,
    facts: &Facts,
    run: &UserRun,
    verdict: &mut Verdict,
) {
    let rows = partition(store, Context::Goals, pk).await;
    let user = &run.user;
    for set in &run.goals {
        let Some(goal) = facts.goals.iter().find(|g| g.goal_id == set.id) else {
            verdict.holds(|| format!("{user} goal {} is not stored", set.id), false);
            continue;
        };
        // The model's own view of the first period: the user's day when they set it.
        let first = period_of(goal.period, day_in(set.at, &set.timezone));
        let mut expected: BTreeMap<Day, Decimal> = BTreeMap::new();
        for day in facts.days() {
            let start = period_of(goal.period, day);
            let value = facts.value(goal, start);
            if start >= first && !value.is_zero() {
                expected.insert(start, value);
            }
        }
        let prefix = format!("PROGRESS#{}#", goal.goal_id);
        let read: BTreeMap<Day, Decimal> = with_prefix(&rows, &prefix)
            .filter(|r| !is_tombstone(r))
            .filter_map(|r| {
                let day = r
                    .get("period_start")
                    .and_then(Value::as_str)
                    .and_then(|d| Day::parse(d).ok())?;
                Some((day, decimal(r.get("value"))))
            })
            .collect();
        verdict.same(
            || {
                format!(
                    "{user} progress of {:?} goal {} (first period {first})",
                    goal.kind, goal.goal_id
                )
            },
            &json!(
                read.iter()
                    .map(|(d, v)| (d.to_string(), v.to_string()))
                    .collect::<BTreeMap<_, _>>()
            ),
            &json!(
                expected
                    .iter()
                    .map(|(d, v)| (d.to_string(), v.to_string()))
                    .collect::<BTreeMap<_, _>>()
            ),
        );
        let item = rows
            .iter()
            .find(|r| sk(r) == format!("GOAL#{}", goal.goal_id));
        let current = item
            .and_then(|i| i.get("current_value"))
            .map(|v| decimal(Some(v)).to_string());
        let latest = expected.iter().next_back().map(|(_, v)| v.to_string());
        verdict.same(
            || format!("{user} current_value of goal {}", goal.goal_id),
            &json!(current),
            &json!(latest),
        );
    }
}

async fn check_cross(
    store: &dyn Store,
    pk: &str,
    facts: &Facts,
    user: &str,
    verdict: &mut Verdict,
) {
    let insights = partition(store, Context::Insights, pk).await;
    let intake = partition(store, Context::Activity, pk).await;
    let load = partition(store, Context::Nutrition, pk).await;
    let row = |rows: &[Item], key: String| rows.iter().find(|r| sk(r) == key).cloned();
    for day in facts.days() {
        let meals = facts.summaries.get(&day).map_or(0, |s| s.meals);
        let active: u64 = facts
            .workouts_on(day)
            .map(|w| u64::from(w.duration_s / 60))
            .sum();
        let sleep: i64 = facts.sleeps_on(day).map(minutes).sum();
        let marker = row(&insights, format!("ACTIVE_DAY#{day}"));
        let read = |attr: &str| {
            marker
                .as_ref()
                .and_then(|m| m.get(attr))
                .and_then(Value::as_i64)
                .unwrap_or(0)
        };
        verdict.same(
            || format!("{user} ACTIVE_DAY#{day}"),
            &json!([read("meals"), read("active_minutes"), read("sleep_minutes")]),
            &json!([meals, active, sleep]),
        );
        let indexed = marker
            .as_ref()
            .is_some_and(|m| m.contains_key("active_day_pk"));
        verdict.same(
            || format!("{user} ACTIVE_DAY#{day} in the active-day index"),
            &json!(indexed),
            &json!(meals > 0 || active > 0 || sleep > 0),
        );
        let intake_row = row(&intake, format!("INTAKE#{day}"));
        verdict.same(
            || format!("{user} INTAKE#{day}"),
            &json!(
                intake_row
                    .as_ref()
                    .map(|r| json!([r["meals"], r["totals"]]))
            ),
            &json!(
                facts
                    .summaries
                    .get(&day)
                    .map(|s| json!([s.meals, s.totals]))
            ),
        );
        let load_row = row(&load, format!("TRAINING_LOAD#{day}"));
        let seconds: u64 = facts
            .workouts_on(day)
            .map(|w| u64::from(w.duration_s))
            .sum();
        let calories: u64 = facts
            .workouts_on(day)
            .filter_map(|w| w.calories)
            .map(u64::from)
            .sum();
        let read = |attr: &str| {
            load_row
                .as_ref()
                .and_then(|m| value_at(m, attr))
                .and_then(Value::as_u64)
                .unwrap_or(0)
        };
        verdict.same(
            || format!("{user} TRAINING_LOAD#{day}"),
            &json!([read("workouts"), read("active_minutes"), read("calories")]),
            &json!([facts.workouts_on(day).count(), seconds / 60, calories]),
        );
    }
}

/// Nothing of an erased user is left in any table or index (tombstones name no one).
pub async fn check_erased(store: &dyn Store, run: &UserRun, verdict: &mut Verdict) {
    let id = run.user.to_string();
    for table in Context::ALL {
        let indexes = tables::table(table)
            .gsis
            .iter()
            .map(|g| Some(g.name.to_owned()));
        for index in std::iter::once(None).chain(indexes) {
            let items = crate::snapshot::scan_all(store, table, index.as_deref(), 1000).await;
            for item in &items {
                verdict.holds(
                    || {
                        format!(
                            "erased {id}: {table} {index:?} keeps {} {}",
                            item["pk"], item["sk"]
                        )
                    },
                    !Value::Object(item.clone()).to_string().contains(&id),
                );
            }
        }
    }
}
