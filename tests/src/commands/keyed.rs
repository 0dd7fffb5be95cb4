//! Commands whose transaction met another one at an item the commit adds to the
//! command's own: the idempotency record of a keyed command (sent with an
//! `Idempotency-Key`), or the check that the account is not erased. DynamoDB cancels
//! such a transaction marking just that item `TransactionConflict` and every other
//! action `None`. Nothing was written, so each path must read it as a lost race and try
//! again: a keyed command writes the key's record on its second attempt, then answers
//! the key's retry as a replay. The meal's keyed path has a spec of its own in
//! [`super::nutrition`]; the record's specs here are the others, one per command the API
//! takes a key for; the erasure check's runs a command down each way of settling a
//! cancellation.

use super::identity::{PASSWORD, registration};
use super::{World, value};
use crate::faults::{ConflictOnce, writes_sort_key};
use crate::snapshot::snapshot;
use commands::activity::StartTrainingBlock;
use commands::identity::UpdateProfile;
use commands::integrations::SandboxProvider;
use commands::nutrition::{EatScheduledMeal, EditMeal, ScheduleMeal};
use commands::{CommandError, CommandMeta, Outcome};
use events_schema::Context;
use events_schema::events::goals::GoalStatus;
use events_schema::events::nutrition::Nutrients;
use events_schema::ids::UserId;
use events_schema::keys::SortKey;
use events_schema::time::{Day, Timestamp};
use infra::Store;
use infra::observed::Row;
use rust_decimal::Decimal;
use std::sync::Arc;

/// Runs `command` as `user`, keyed by `what`, on a world whose first transaction meets a
/// conflict at the idempotency record, then runs it again: it committed on its second
/// transaction, not as a replay, with the key's record, and the retry is answered as a
/// replay (from the record, or, where nothing is left to change, from the state). The
/// first answer's value.
async fn commits_after_a_conflict_at_its_record<T, Fut>(
    what: &str,
    store: &Arc<dyn Store>,
    user: &UserId,
    command: impl Fn(Arc<World>, CommandMeta) -> Fut,
) -> T
where
    Fut: Future<Output = Result<Outcome<T>, CommandError>>,
{
    let at_record = |row: &Row<'_>| writes_sort_key(row, "IDEMPOTENCY#", "");
    let world = World::new(ConflictOnce::at(store.clone(), at_record)).as_user(user.clone());
    let world = Arc::new(world);
    // The user's id in the key too: the DynamoDB suites share their tables.
    let key = format!("{}-{}", what.replace(' ', "-"), user.as_str());
    let record = world.keyed(&key).idempotency_key.map(|k| k.sort_key());
    assert_eq!(
        records(store, record.as_deref()).await,
        0,
        "{what}: no record yet"
    );
    let first = command(world.clone(), world.keyed(&key)).await;
    let first = committed_after_the_conflict(what, &world, first);
    let written = records(store, record.as_deref()).await;
    assert_eq!(
        written, 1,
        "{what}: the second attempt wrote the key's record"
    );
    let again = command(world.clone(), world.keyed(&key)).await;
    let again = again.unwrap_or_else(|e| panic!("{what}: the retry failed: {e}"));
    assert!(again.replayed, "{what}: the retry is answered as a replay");
    first
}

/// What `world`'s command answered, its first transaction having met a conflict: it
/// committed on its second transaction, not as a replay.
fn committed_after_the_conflict<T>(
    what: &str,
    world: &World,
    answer: Result<Outcome<T>, CommandError>,
) -> T {
    let done = answer.unwrap_or_else(|e| panic!("{what}: not committed after the conflict: {e}"));
    assert!(!done.replayed, "{what}: committed, not replayed");
    let transactions = world.store.counts().transactions;
    assert_eq!(transactions, 2, "{what}: the conflict, then the commit");
    done.value
}

/// How many items of the whole store have the sort key `record` (a keyed meta's record).
async fn records(store: &Arc<dyn Store>, record: Option<&str>) -> usize {
    let record = record.expect("a keyed command");
    let all = snapshot(&**store).await;
    all.keys().filter(|(_, _, sk)| sk == record).count()
}

fn day(raw: &str) -> Day {
    Day::parse(raw).expect("day")
}

fn at(raw: &str) -> Timestamp {
    Timestamp::parse(raw).expect("timestamp")
}

/// Creating a record (`Handlers::create`), a goal's status change, ending a training
/// block: the activity and goals contexts' keyed paths.
pub async fn keyed_activity_and_goal_commands_met_by_a_conflict_commit_on_the_next_attempt(
    store: Arc<dyn Store>,
) {
    let world = World::new(store.clone());
    let user = &world.meta.user;
    let ride = super::activity_sleep::ride();
    commits_after_a_conflict_at_its_record("record a workout", &store, user, |w, meta| {
        let ride = ride.clone();
        async move { w.activity.record_workout(&meta, ride).await }
    })
    .await;

    let goal = world.create_goal(super::goals::weekly_runs()).await;
    commits_after_a_conflict_at_its_record("pause a goal", &store, user, |w, meta| {
        let goal = goal.clone();
        async move {
            let paused = w.goals.change_status(&meta, &goal, GoalStatus::Paused);
            paused.await
        }
    })
    .await;

    let start_day = day("2026-06-01");
    let block = StartTrainingBlock {
        start_day,
        weeks: 2,
        focus: "Speed".into(),
    };
    let started = world.activity.start_training_block(&world.meta, block);
    let block = value(started.await).training_block_id;
    commits_after_a_conflict_at_its_record("end a training block", &store, user, |w, meta| {
        let block = block.clone();
        async move {
            let ending = w
                .activity
                .end_training_block(&meta, start_day, &block, day("2026-06-07"));
            ending.await
        }
    })
    .await;
}

/// Editing and deleting a meal, taking a scheduled meal off the plan and eating one:
/// nutrition's keyed paths besides logging.
pub async fn keyed_meal_changes_met_by_a_conflict_commit_on_the_next_attempt(
    store: Arc<dyn Store>,
) {
    let world = World::new(store.clone());
    let user = &world.meta.user;
    let meal = |at: &str, calories: &str| super::nutrition::meal(at, calories, "20");
    let edited = world
        .log_meal(meal("2026-03-01T08:00:00.000Z", "400"))
        .await;
    commits_after_a_conflict_at_its_record("edit a meal", &store, user, |w, meta| {
        let edit = EditMeal {
            meal_id: edited.clone(),
            meal: meal("2026-03-02T08:00:00.000Z", "350"),
        };
        async move { w.nutrition.edit_meal(&meta, edit).await }
    })
    .await;

    let deleted = world
        .log_meal(meal("2026-03-01T12:00:00.000Z", "600"))
        .await;
    commits_after_a_conflict_at_its_record("delete a meal", &store, user, |w, meta| {
        let deleted = deleted.clone();
        async move { w.nutrition.delete_meal(&meta, &deleted).await }
    })
    .await;

    let on = day("2026-03-05");
    let plan = ScheduleMeal {
        day: on,
        name: "Soup".into(),
        recipe_id: None,
    };
    let scheduled = world.nutrition.schedule_meal(&world.meta, plan).await;
    let scheduled = value(scheduled).scheduled_meal_id;
    commits_after_a_conflict_at_its_record("unschedule a meal", &store, user, |w, meta| {
        let scheduled = scheduled.clone();
        async move {
            w.nutrition
                .remove_scheduled_meal(&meta, on, &scheduled)
                .await
        }
    })
    .await;

    let plan = ScheduleMeal {
        day: on,
        name: "Stew".into(),
        recipe_id: None,
    };
    let scheduled = world.nutrition.schedule_meal(&world.meta, plan).await;
    let eaten = EatScheduledMeal {
        day: on,
        scheduled_meal_id: value(scheduled).scheduled_meal_id,
        eaten_at: at("2026-03-05T19:00:00.000Z"),
        timezone: "UTC".into(),
        nutrients: Some(Nutrients {
            calories: Decimal::from(700),
            protein_g: Decimal::from(30),
            carbs_g: Decimal::from(80),
            fat_g: Decimal::from(20),
        }),
    };
    commits_after_a_conflict_at_its_record("eat a scheduled meal", &store, user, |w, meta| {
        let eaten = eaten.clone();
        async move { w.nutrition.eat_scheduled_meal(&meta, eaten).await }
    })
    .await;
}

/// A sign-up, a profile update, an email change and the deletion request (identity); a
/// connect and a disconnect (integrations).
pub async fn keyed_account_and_connection_changes_met_by_a_conflict_commit_on_the_next_attempt(
    store: Arc<dyn Store>,
) {
    let world = World::new(store.clone());
    let email = |who: &str| format!("{who}-{}@example.com", UserId::generate().as_str());
    let registration = registration(&email("ana"));
    let user = world.meta.user.clone();
    let user = commits_after_a_conflict_at_its_record("sign up", &store, &user, |w, meta| {
        let registration = registration.clone();
        async move { w.identity.register(&meta, registration).await }
    })
    .await;
    commits_after_a_conflict_at_its_record("update a profile", &store, &user, |w, meta| {
        let update = UpdateProfile {
            display_name: Some("Ana B.".into()),
            ..Default::default()
        };
        async move { w.identity.update_profile(&meta, update).await }
    })
    .await;
    let new_email = email("ana.b").to_lowercase();
    commits_after_a_conflict_at_its_record("change an email", &store, &user, |w, meta| {
        let new_email = new_email.clone();
        async move { w.identity.change_email(&meta, &new_email, PASSWORD).await }
    })
    .await;

    let provider_user = format!("pu-{}", user.as_str().to_lowercase());
    let started =
        commits_after_a_conflict_at_its_record("connect", &store, &user, |w, meta| async move {
            w.integrations.start_connect(&meta, "sandbox").await
        })
        .await;
    let code = SandboxProvider::code_for(&provider_user, &started.authorize_url);
    let connected =
        commits_after_a_conflict_at_its_record("complete a connect", &store, &user, |w, meta| {
            let (state, code) = (started.state.clone(), code.clone());
            async move {
                let completing = w
                    .integrations
                    .complete_connect(&meta, "sandbox", &state, &code);
                completing.await
            }
        })
        .await;
    assert_eq!(connected, user);
    commits_after_a_conflict_at_its_record("disconnect", &store, &user, |w, meta| async move {
        w.integrations.disconnect(&meta, "sandbox").await
    })
    .await;
    commits_after_a_conflict_at_its_record(
        "delete the account",
        &store,
        &user,
        |w, meta| async move { w.identity.request_deletion(&meta, PASSWORD).await },
    )
    .await;
}

/// `user`'s world on `store`, its first transaction meeting a conflict at the erasure
/// check alone.
fn conflicted_at_the_erasure_check(store: &Arc<dyn Store>, user: &UserId) -> World {
    let tombstone = |key: &infra::store::Key| key.sk == SortKey::Tombstone.to_string();
    World::new(ConflictOnce::at_check(store.clone(), tombstone)).as_user(user.clone())
}

/// Every commit checks the account is not erased; a conflict on that check alone is
/// the command's to retry like any other: a meal (its own arm), a workout (a record's
/// creation), a goal's status and a profile update (`optimistic::settled`), an email
/// change (its own verdict). Each runs without a key on a world of its own.
pub async fn commands_whose_erasure_check_met_a_conflict_commit_on_the_next_attempt(
    store: Arc<dyn Store>,
) {
    let world = World::new(store.clone());
    let email = format!("ana-{}@example.com", world.meta.user.as_str()).to_lowercase();
    let user = value(
        world
            .identity
            .register(&world.meta, registration(&email))
            .await,
    );
    let world = world.as_user(user.clone());

    let w = conflicted_at_the_erasure_check(&store, &user);
    let breakfast = super::nutrition::meal("2026-03-01T08:00:00.000Z", "400", "20");
    let logged = w.nutrition.log_meal(&w.meta, breakfast).await;
    committed_after_the_conflict("log a meal", &w, logged);
    assert_eq!(world.count(Context::Nutrition, "MEAL#").await, 1);

    let w = conflicted_at_the_erasure_check(&store, &user);
    let recorded = w
        .activity
        .record_workout(&w.meta, super::activity_sleep::ride())
        .await;
    committed_after_the_conflict("record a workout", &w, recorded);

    let goal = world.create_goal(super::goals::weekly_runs()).await;
    let w = conflicted_at_the_erasure_check(&store, &user);
    let paused = w
        .goals
        .change_status(&w.meta, &goal, GoalStatus::Paused)
        .await;
    committed_after_the_conflict("pause a goal", &w, paused);

    let w = conflicted_at_the_erasure_check(&store, &user);
    let update = UpdateProfile {
        display_name: Some("Ana B.".into()),
        ..Default::default()
    };
    let updated = w.identity.update_profile(&w.meta, update).await;
    committed_after_the_conflict("update a profile", &w, updated);

    let w = conflicted_at_the_erasure_check(&store, &user);
    let new_email = format!("ana.b-{}@example.com", user.as_str()).to_lowercase();
    let moved = w.identity.change_email(&w.meta, &new_email, PASSWORD).await;
    let moved = committed_after_the_conflict("change an email", &w, moved);
    assert_eq!(moved.email, new_email);
}
