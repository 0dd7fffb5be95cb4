//! Goal command specifications: creation and status changes, with the sparse
//! `by-status` index kept right.

use super::{World, assert_invalid, with_retry};
use crate::faults::ConflictOnce;
use commands::CommandError;
use commands::goals::CreateGoal;
use events_schema::Context;
use events_schema::events::goals::{GoalKind, GoalPeriod, GoalStatus};
use infra::Store;
use infra::store::IndexQuery;
use rust_decimal::Decimal;
use std::sync::Arc;

async fn goals_with_status(world: &World, status: &str) -> Vec<String> {
    let query = IndexQuery::partition("by-status", format!("{}#STATUS#{status}", world.pk()));
    let page = world
        .store
        .query_index(Context::Goals, &query)
        .await
        .expect("index query");
    page.items
        .iter()
        .map(|i| i["goal_id"].as_str().expect("goal id").to_owned())
        .collect()
}

/// A daily goal of `target` grams of protein, in the user's timezone.
pub fn daily_protein(target: i64) -> CreateGoal {
    CreateGoal {
        kind: GoalKind::DailyProteinGrams,
        target: Decimal::from(target),
        title: "Protein".into(),
        timezone: None,
    }
}

/// Four workouts a week.
pub(super) fn weekly_runs() -> CreateGoal {
    CreateGoal {
        kind: GoalKind::WeeklyWorkoutCount,
        target: Decimal::from(4),
        title: "Run 4x a week".into(),
        timezone: None,
    }
}

pub async fn created_goal_is_active_and_in_the_index(store: Arc<dyn Store>) {
    let world = World::new(store);
    let keyed = world.keyed("g-1");
    let id = with_retry(|| world.goals.create_goal(&keyed, weekly_runs()))
        .await
        .goal_id;
    let goal = world.goals.goal(&world.meta, &id).await.expect("goal");
    assert_eq!(
        (goal.status, goal.period, goal.version),
        (GoalStatus::Active, GoalPeriod::Weekly, 1)
    );
    assert_eq!(
        goals_with_status(&world, "active").await,
        vec![id.to_string()]
    );
    assert_eq!(world.event_types(Context::Goals).await, vec!["GoalCreated"]);
    let sleep = CreateGoal {
        kind: GoalKind::NightlySleepHours,
        target: Decimal::from(17),
        title: "Sleep".into(),
        timezone: None,
    };
    assert_invalid(world.goals.create_goal(&world.meta, sleep).await, "target");
    assert_invalid(
        world
            .goals
            .create_goal(
                &world.meta,
                CreateGoal {
                    title: "".into(),
                    ..weekly_runs()
                },
            )
            .await,
        "title",
    );
}

/// A status change whose transaction is cancelled as a conflict reads the goal again
/// and commits on the next attempt (it reads a conflict as a lost race).
pub async fn a_status_change_cancelled_as_a_conflict_commits_on_the_next_attempt(
    store: Arc<dyn Store>,
) {
    let world = World::new(store.clone());
    let id = world.create_goal(weekly_runs()).await;
    let pausing = World::new(ConflictOnce::on(store)).as_user(world.meta.user.clone());
    let paused = pausing
        .goals
        .change_status(&pausing.meta, &id, GoalStatus::Paused);
    let paused = paused.await.expect("paused on the second attempt").value;
    assert_eq!(paused.version, 2);
    assert_eq!(pausing.store.counts().transactions, 2);
    assert_eq!(
        goals_with_status(&world, "paused").await,
        vec![id.to_string()]
    );
}

pub async fn status_changes_move_the_goal_between_index_partitions(store: Arc<dyn Store>) {
    let world = World::new(store);
    let id = world.create_goal(weekly_runs()).await;
    let keyed = world.keyed("pause");
    let paused = with_retry(|| world.goals.change_status(&keyed, &id, GoalStatus::Paused)).await;
    assert_eq!(paused.version, 2);
    assert!(goals_with_status(&world, "active").await.is_empty());
    assert_eq!(
        goals_with_status(&world, "paused").await,
        vec![id.to_string()]
    );
    world
        .goals
        .change_status(&world.meta, &id, GoalStatus::Completed)
        .await
        .expect("completes");
    assert_eq!(
        goals_with_status(&world, "completed").await,
        vec![id.to_string()]
    );
    let reopen = world
        .goals
        .change_status(&world.meta, &id, GoalStatus::Active)
        .await;
    assert!(
        matches!(reopen, Err(CommandError::Conflict(_))),
        "{reopen:?}"
    );
    assert_eq!(
        world.event_types(Context::Goals).await,
        vec!["GoalCreated", "GoalStatusChanged", "GoalStatusChanged"]
    );
    let other = events_schema::ids::GoalId::generate();
    let missing = world
        .goals
        .change_status(&world.meta, &other, GoalStatus::Paused)
        .await;
    assert!(
        matches!(missing, Err(CommandError::NotFound("goal"))),
        "{missing:?}"
    );
}
