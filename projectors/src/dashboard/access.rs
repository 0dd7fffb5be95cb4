//! The calls the dashboard projections make, as declared access patterns (see
//! `infra::access`).

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
        "every event that changes a day's groups (read, merged, written back)",
    )
    .volume(6.0)
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
