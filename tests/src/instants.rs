//! Specifications at the instants where days, weeks and clocks change, run on every
//! backend (see `instants_suite!`): a night across a daylight-saving change lasts what
//! it lasted, and a weekly goal counts the user's own ISO week, at either end of the
//! world. Every case runs on a manual clock; none reads the wall clock for a date.

use crate::commands::{World, row_of};
use crate::regressions::{deliver, events_of};
use commands::activity::RecordWorkout;
use commands::goals::CreateGoal;
use commands::sleep::RecordSleep;
use events_schema::Context;
use events_schema::time::{Clock, Timestamp};
use infra::Store;
use serde_json::{Value, json};
use std::sync::Arc;

fn at(raw: &str) -> Timestamp {
    Timestamp::parse(raw).expect("an instant")
}

fn from_json<T: serde::de::DeserializeOwned>(value: Value) -> T {
    serde_json::from_value(value).expect("valid input")
}

/// A world whose clock shows `minutes` after `instant`.
fn world_after(store: &Arc<dyn Store>, instant: &str, minutes: i64) -> World {
    let now = Timestamp::from_millis(at(instant).millis() + minutes * 60_000).expect("time");
    World::with_clock(store.clone(), Clock::manual(now))
}

/// A number as a row holds it (a JSON number or a decimal string), as text.
fn number(value: &Value) -> String {
    value
        .as_str()
        .map_or_else(|| value.to_string(), str::to_owned)
}

/// A night in Paris from 23:00 to 07:00 local time, across each of the two changes of
/// 2026: seven hours when the clocks go forward, nine when they go back; the dashboard,
/// the sleep goal's night and the insights marker all say so.
pub async fn a_night_across_a_clock_change_lasts_what_it_lasted(store: Arc<dyn Store>) {
    let nights = [
        // 23:00 CET -> 07:00 CEST (02:00 became 03:00).
        (
            "2026-03-28T22:00:00.000Z",
            "2026-03-29T05:00:00.000Z",
            "2026-03-28",
            420,
        ),
        // 23:00 CEST -> 07:00 CET (03:00 became 02:00).
        (
            "2026-10-24T21:00:00.000Z",
            "2026-10-25T06:00:00.000Z",
            "2026-10-24",
            540,
        ),
    ];
    for (start, end, night, minutes) in nights {
        let world = world_after(&store, end, 60);
        let input: RecordSleep = from_json(json!({
            "start": start, "end": end, "timezone": "Europe/Paris", "score": 80,
            "stages": {"awake_min": 30, "light_min": 200, "deep_min": 90, "rem_min": 90},
        }));
        world
            .sleep
            .record_sleep(&world.meta, input)
            .await
            .expect("recorded");
        let events = events_of(&*store, Context::Sleep, &world.meta.user).await;
        let subscriptions = [
            "dashboard-from-sleep",
            "goals-from-sleep",
            "insights-from-sleep",
        ];
        deliver(&store, &subscriptions, &events).await;
        let pk = world.pk();
        let daily = row_of(&*store, Context::Dashboard, &pk, &format!("DAILY#{night}"))
            .await
            .unwrap_or_else(|| panic!("a daily row for the night of {night}"));
        assert_eq!(
            daily["sleep"]["minutes"],
            json!(minutes),
            "{night}: {daily:?}"
        );
        let goal_night = row_of(
            &*store,
            Context::Goals,
            &pk,
            &format!("SLEEP_NIGHT#{night}"),
        )
        .await
        .unwrap_or_else(|| panic!("a goal night row for {night}"));
        assert_eq!(
            goal_night["minutes"],
            json!(minutes),
            "{night}: {goal_night:?}"
        );
        let marker = row_of(
            &*store,
            Context::Insights,
            &pk,
            &format!("ACTIVE_DAY#{night}"),
        )
        .await
        .unwrap_or_else(|| panic!("an insights marker for {night}"));
        assert!(
            Value::Object(marker.clone())
                .to_string()
                .contains(&format!("\"minutes\":{minutes}")),
            "{night}: {marker:?}"
        );
    }
}

/// A weekly workout goal set on a Monday in `timezone` counts the workouts of that
/// ISO week of the user's: not one at 23:30 on the Sunday before (local time), one at
/// 00:30 on the Monday. Both instants are on the same UTC day for Kiritimati (UTC+14),
/// and on two UTC days that are not the local ones for UTC-12.
pub async fn a_weekly_goal_counts_the_users_own_iso_week(store: Arc<dyn Store>) {
    let cases = [
        // Sunday 23:30 and Monday 00:30 in UTC+14 are Sunday 09:30 and 10:30 UTC.
        (
            "Pacific/Kiritimati",
            "2026-12-27T09:30:00.000Z",
            "2026-12-27T10:30:00.000Z",
            "2026-12-28",
        ),
        // In UTC-12 they are Monday 11:30 and 12:30 UTC.
        (
            "Etc/GMT+12",
            "2026-02-02T11:30:00.000Z",
            "2026-02-02T12:30:00.000Z",
            "2026-02-02",
        ),
    ];
    for (timezone, sunday_night, monday_morning, week) in cases {
        let world = world_after(&store, monday_morning, 10);
        let goal: CreateGoal = from_json(json!({
            "kind": "weekly_workout_count", "target": "3", "title": "Three a week",
            "timezone": timezone,
        }));
        let goal = world
            .goals
            .create_goal(&world.meta, goal)
            .await
            .expect("goal")
            .value;
        for started_at in [sunday_night, monday_morning] {
            let run: RecordWorkout = from_json(json!({
                "sport": "run", "started_at": started_at, "timezone": timezone,
                "duration_s": 1_200, "distance_m": 3_000,
            }));
            world
                .activity
                .record_workout(&world.meta, run)
                .await
                .expect("workout");
        }
        let mut events = events_of(&*store, Context::Goals, &world.meta.user).await;
        events.extend(events_of(&*store, Context::Activity, &world.meta.user).await);
        let subscriptions = ["goals-from-goals", "goals-from-activity"];
        deliver(&store, &subscriptions, &events).await;
        let progress = crate::commands::items_of(
            &*store,
            Context::Goals,
            &world.pk(),
            &format!("PROGRESS#{}#", goal.goal_id),
        )
        .await;
        let values: Vec<(String, String)> = progress
            .iter()
            .map(|row| (number(&row["period_start"]), number(&row["value"])))
            .collect();
        assert_eq!(
            values,
            vec![(week.to_owned(), "1".to_owned())],
            "{timezone}: only the Monday's workout is of the goal's week"
        );
    }
}
