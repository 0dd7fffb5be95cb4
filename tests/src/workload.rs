//! A generated workload for whole-system tests: many users, each registering, setting
//! goals, logging, editing and deleting meals, recording workouts and sleep, through the
//! real command handlers, on a clock of their own. Deterministic in shape (counts,
//! days); ids are fresh.

use crate::commands::World;
use commands::activity::RecordWorkout;
use commands::goals::CreateGoal;
use commands::identity::Register;
use commands::nutrition::{EditMeal, MealInput};
use commands::sleep::RecordSleep;
use events_schema::events::goals::GoalKind;
use events_schema::ids::UserId;
use events_schema::time::{Clock, Timestamp};
use infra::Store;
use rust_decimal::Decimal;
use std::sync::Arc;
use tokio::task::JoinSet;

fn at(day: usize, hour: usize) -> Timestamp {
    Timestamp::parse(&format!("2026-11-{:02}T{hour:02}:30:00.000Z", 1 + day % 28)).expect("time")
}

fn meal(n: usize, day: usize) -> MealInput {
    MealInput {
        name: format!("meal {n}"),
        eaten_at: at(day, 8 + n % 10),
        timezone: "UTC".into(),
        calories: Decimal::from(300 + (n * 37) % 500),
        protein_g: Decimal::from(10 + n % 40),
        carbs_g: Decimal::from(40),
        fat_g: Decimal::from(12),
    }
}

/// The commands of one user; returns the user. Its goals are set on 2026-10-31, the eve
/// of the month its facts fall in, so every fact counts towards a goal (a goal counts
/// from the day it was set); the rest is done on 2026-11-30.
async fn user_workload(store: Arc<dyn Store>, u: usize) -> UserId {
    let clock = Clock::manual(Timestamp::parse("2026-10-31T12:00:00.000Z").expect("time"));
    let world = World::with_clock(store, clock.clone());
    let meta = world.meta.clone();
    world
        .identity
        .register(
            &meta,
            Register {
                email: format!("user{u}-{}@example.com", meta.user),
                password: "correct horse battery".into(),
                display_name: format!("User {u}"),
                timezone: "UTC".into(),
                units: Default::default(),
            },
        )
        .await
        .expect("register");
    for (kind, target) in [
        (GoalKind::WeeklyWorkoutCount, 3),
        (GoalKind::DailyProteinGrams, 60),
        (GoalKind::NightlySleepHours, 7),
    ] {
        world
            .goals
            .create_goal(
                &meta,
                CreateGoal {
                    kind,
                    target: Decimal::from(target),
                    title: format!("{kind:?}"),
                    timezone: None,
                },
            )
            .await
            .expect("goal");
    }
    clock.set(Timestamp::parse("2026-11-30T12:00:00.000Z").expect("time"));
    let mut meals = Vec::new();
    for n in 0..6 {
        let id = world
            .nutrition
            .log_meal(&meta, meal(u + n, u + n / 2))
            .await
            .expect("meal")
            .value
            .meal_id;
        meals.push(id);
    }
    // One meal moves to another day, one is deleted.
    world
        .nutrition
        .edit_meal(
            &meta,
            EditMeal {
                meal_id: meals[0].clone(),
                meal: meal(u + 100, u + 5),
            },
        )
        .await
        .expect("edit");
    world
        .nutrition
        .delete_meal(&meta, &meals[1])
        .await
        .expect("delete");
    for n in 0..2 {
        world
            .activity
            .record_workout(
                &meta,
                RecordWorkout {
                    sport: if n == 0 { "run" } else { "ride" }.into(),
                    started_at: at(u + n, 6),
                    timezone: "UTC".into(),
                    duration_s: 1200 + (u as u32 % 7) * 300,
                    distance_m: Some(4000 + n as u32 * 1000),
                    calories: Some(250),
                    // Rated on every other user's workouts: rows with and without one.
                    perceived_effort: u.is_multiple_of(2).then_some(1 + (u + n) as u8 % 10),
                },
            )
            .await
            .expect("workout");
        world
            .sleep
            .record_sleep(
                &meta,
                RecordSleep {
                    start: at(u + n, 0),
                    end: at(u + n, 7),
                    timezone: "UTC".into(),
                    score: 60 + (u % 40) as u8,
                    stages: Default::default(),
                },
            )
            .await
            .expect("sleep");
    }
    meta.user
}

/// Runs `users` users' workloads, `parallel` users at a time; returns the users.
pub async fn generate(store: Arc<dyn Store>, users: usize, parallel: usize) -> Vec<UserId> {
    let mut done = Vec::with_capacity(users);
    let mut tasks = JoinSet::new();
    for u in 0..users {
        if tasks.len() >= parallel.max(1)
            && let Some(user) = tasks.join_next().await
        {
            done.push(user.expect("workload task"));
        }
        tasks.spawn(user_workload(store.clone(), u));
    }
    while let Some(user) = tasks.join_next().await {
        done.push(user.expect("workload task"));
    }
    done
}
