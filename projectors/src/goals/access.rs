//! The calls the goals projections make, as declared access patterns (see
//! `infra::access`).
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
