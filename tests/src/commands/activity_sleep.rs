//! Activity and sleep command specifications: manual entries, idempotent wearable sync
//! by external id, training blocks.

use super::{Held, World, assert_invalid, assert_not_found, meanwhile, replayed, with_retry};
use crate::faults::{ConflictOnce, writes_sort_key};
use commands::activity::{RecordWorkout, StartTrainingBlock};
use commands::sleep::RecordSleep;
use events_schema::Context;
use events_schema::events::activity::{WorkoutRecorded, WorkoutUpdated};
use events_schema::events::integrations::{ProviderSleep, ProviderWorkout};
use events_schema::events::sleep::SleepStages;
use events_schema::ids::ExternalId;
use events_schema::time::{Day, Timestamp};
use infra::Store;
use infra::observed::Row;
use std::sync::Arc;

fn ts(raw: &str) -> Timestamp {
    Timestamp::parse(raw).expect("timestamp")
}

pub fn provider_workout(external: &str, start: &str, duration_s: u32) -> ProviderWorkout {
    ProviderWorkout {
        external_id: ExternalId::parse(external).expect("id"),
        sport: "run".into(),
        started_at: ts(start),
        duration_s,
        distance_m: Some(10_000),
        calories: Some(600),
        updated_at: None,
    }
}

/// Asserts that recording `input` fails validation on `field`.
async fn refuses(world: &World, field: &str, input: RecordWorkout) {
    assert_invalid(
        world.activity.record_workout(&world.meta, input).await,
        field,
    );
}

/// The world wrote one workout and its one event, in two transactions (the one
/// cancelled as a conflict, then the commit).
async fn one_workout_on_the_second_attempt(world: &World) {
    assert_eq!(world.store.counts().transactions, 2);
    assert_eq!(world.count(Context::Activity, "WORKOUT#").await, 1);
    assert_eq!(
        world.event_types(Context::Activity).await,
        vec!["WorkoutRecorded"]
    );
}

/// A ride recorded by hand.
pub(super) fn ride() -> RecordWorkout {
    RecordWorkout {
        sport: "Ride".into(),
        started_at: ts("2026-05-01T06:00:00.000Z"),
        timezone: "Europe/Paris".into(),
        duration_s: 3600,
        distance_m: Some(30_000),
        calories: None,
        perceived_effort: Some(6),
    }
}

pub async fn record_workout_writes_workout_and_event_once_per_key(store: Arc<dyn Store>) {
    let world = World::new(store);
    let input = ride();
    let keyed = world.keyed("w-1");
    let id = with_retry(|| world.activity.record_workout(&keyed, input.clone()))
        .await
        .workout_id;
    let workouts = world.items(Context::Activity, "WORKOUT#").await;
    assert_eq!(workouts.len(), 1);
    assert_eq!(
        workouts[0]["sk"],
        serde_json::json!(format!("WORKOUT#2026-05-01#{id}"))
    );
    assert_eq!(workouts[0]["sport"], "ride");
    assert_eq!(workouts[0]["perceived_effort"], 6);
    assert_eq!(
        world.event_types(Context::Activity).await,
        vec!["WorkoutRecorded"]
    );
    let recorded = &world.events(Context::Activity).await[0];
    assert_eq!(recorded.schema_version, 2);
    let payload: events_schema::events::activity::WorkoutRecorded =
        recorded.decode().expect("current version");
    assert_eq!(payload.workout.perceived_effort, Some(6));
    for effort in [0, 11, 255] {
        let refused = RecordWorkout {
            perceived_effort: Some(effort),
            ..input.clone()
        };
        refuses(&world, "perceived_effort", refused).await;
    }
    assert_eq!(
        world.count(Context::Activity, "WORKOUT#").await,
        1,
        "a refused effort writes nothing"
    );
    let zero = RecordWorkout {
        duration_s: 0,
        ..input.clone()
    };
    refuses(&world, "duration_s", zero).await;
    let too_far = RecordWorkout {
        distance_m: Some(2_000_000),
        ..input
    };
    refuses(&world, "distance_m", too_far).await;
}

/// A workout entered by hand whose transaction is cancelled as a conflict (nothing
/// written) is recorded on the next attempt, where it answered `Contention`.
pub async fn a_workout_cancelled_as_a_conflict_is_recorded_on_the_next_attempt(
    store: Arc<dyn Store>,
) {
    let world = World::new(ConflictOnce::on(store));
    let input = RecordWorkout {
        sport: "run".into(),
        started_at: ts("2026-05-01T06:00:00.000Z"),
        timezone: "UTC".into(),
        duration_s: 1800,
        distance_m: None,
        calories: None,
        perceived_effort: None,
    };
    let recorded = world.activity.record_workout(&world.meta, input).await;
    recorded.expect("recorded on the second attempt");
    one_workout_on_the_second_attempt(&world).await;
}

pub async fn retried_wearable_sync_returns_the_original_workout_in_one_request(
    store: Arc<dyn Store>,
) {
    let world = World::new(store);
    let workout = provider_workout("act-77", "2026-05-02T07:00:00.000Z", 1800);
    let first = world.sync_workout(&workout).await.expect("syncs");
    world.store.take();
    let retry = world.sync_workout(&workout).await.expect("retry");
    let counts = world.store.take();
    assert_eq!(
        (retry.value.clone(), retry.replayed),
        (first.value.clone(), true)
    );
    assert_eq!(
        (counts.total(), counts.transactions),
        (1, 1),
        "a retry costs one request: {counts:?}"
    );
    assert_eq!(world.count(Context::Activity, "WORKOUT#").await, 1);
    assert_eq!(
        world
            .count(Context::Activity, "EXTERNAL#garmin#act-77")
            .await,
        1
    );
    assert_eq!(
        world.event_types(Context::Activity).await,
        vec!["WorkoutRecorded"]
    );
}

/// The same provider record delivered to two processes at once (a webhook retried
/// while the first delivery is still being handled): the first process's transaction
/// is held at the store while the second's commits, so the first loses the race for
/// the record's pointer. Both answer with the one workout, the second as its writer and
/// the first as a replay, and it is written once, with one event.
pub async fn one_record_synced_by_two_processes_at_once_is_one_workout(store: Arc<dyn Store>) {
    let workout = provider_workout("act-88", "2026-05-02T07:00:00.000Z", 1800);
    let at_pointer = |row: &Row<'_>| writes_sort_key(row, "EXTERNAL#", "");
    let held = Held::start(&store, at_pointer, {
        let workout = workout.clone();
        |world| async move { world.sync_workout(&workout).await }
    })
    .await;
    let first = held.world.clone();
    let second = World::in_another_process(store).as_user(first.meta.user.clone());
    let wrote = meanwhile(second.sync_workout(&workout))
        .await
        .expect("the second syncs");
    let replayed = held.release().await.expect("the first syncs");
    assert_eq!(
        replayed.value, wrote.value,
        "both answer with the one workout"
    );
    assert_eq!((replayed.replayed, wrote.replayed), (true, false));
    assert_eq!(first.count(Context::Activity, "WORKOUT#").await, 1);
    assert_eq!(
        first.event_types(Context::Activity).await,
        vec!["WorkoutRecorded"]
    );
}

/// A first delivery whose transaction is cancelled as a conflict, with no pointer to
/// show for it (the other transaction did not write this record): the sync writes again
/// and the record is one workout.
pub async fn a_first_sync_cancelled_as_a_conflict_writes_again(store: Arc<dyn Store>) {
    let world = World::new(ConflictOnce::on(store));
    let workout = provider_workout("act-99", "2026-05-02T07:00:00.000Z", 1800);
    let synced = world.sync_workout(&workout).await.expect("syncs");
    assert!(!synced.replayed);
    one_workout_on_the_second_attempt(&world).await;
}

/// A later version of a synced record whose transaction is cancelled as a conflict
/// reads the pointer again and commits on the next attempt.
pub async fn a_later_sync_cancelled_as_a_conflict_commits_on_the_next_attempt(
    store: Arc<dyn Store>,
) {
    let world = World::new(store.clone());
    let first = provider_workout("act-55", "2026-05-02T07:00:00.000Z", 1800);
    world.sync_workout(&first).await.expect("syncs");
    let correcting = World::new(ConflictOnce::on(store)).as_user(world.meta.user.clone());
    let changed = provider_workout("act-55", "2026-05-02T07:00:00.000Z", 2400);
    let corrected = correcting.sync_workout(&changed).await;
    assert!(!corrected.expect("corrected on the second attempt").replayed);
    let events = ["WorkoutRecorded", "WorkoutUpdated"];
    correcting
        .assert_second_attempt_and_events(Context::Activity, &events)
        .await;
}

pub async fn wearable_sync_with_changed_fields_is_the_next_version(store: Arc<dyn Store>) {
    let world = World::new(store);
    let first = world
        .sync_workout(&provider_workout("act-9", "2026-05-02T07:00:00.000Z", 1800))
        .await
        .expect("syncs");
    // The provider corrected the start (to the next day) and the duration.
    let changed = provider_workout("act-9", "2026-05-03T07:00:00.000Z", 2000);
    let second = world.sync_workout(&changed).await.expect("updates");
    assert_eq!(
        (second.value.clone(), second.replayed),
        (first.value.clone(), false)
    );
    let workouts = world.items(Context::Activity, "WORKOUT#").await;
    assert_eq!(workouts.len(), 1, "the workout moved, it was not copied");
    assert_eq!(
        workouts[0]["sk"],
        serde_json::json!(format!("WORKOUT#2026-05-03#{}", first.value))
    );
    assert_eq!(workouts[0]["version"], 2);
    let events = world.events(Context::Activity).await;
    let recorded: WorkoutRecorded = events[0].decode().expect("typed");
    let updated: WorkoutUpdated = events[1].decode().expect("typed");
    assert_eq!(
        updated.previous_day,
        Some(Day::parse("2026-05-02").expect("day")),
        "the update says where the workout moved from"
    );
    assert_eq!(
        (
            recorded.workout.version,
            updated.workout.version,
            updated.workout.duration_s
        ),
        (1, 2, 2000)
    );
    assert!(replayed(world.sync_workout(&changed).await));
    assert_eq!(world.events(Context::Activity).await.len(), 2);
}

/// A later revision of a record with the same content: nothing the app reads changes,
/// so it is answered as a replay (no new version, no event); only the pointer's revision
/// moves on, and the earlier revision is stale from then on.
pub async fn a_later_revision_with_the_same_content_moves_only_the_revision(store: Arc<dyn Store>) {
    let world = World::new(store);
    let revised = |at: &str| ProviderWorkout {
        updated_at: Some(ts(at)),
        ..provider_workout("act-5", "2026-05-02T07:00:00.000Z", 1800)
    };
    let (nine, ten) = (
        revised("2026-05-02T09:00:00.000Z"),
        revised("2026-05-02T10:00:00.000Z"),
    );
    let first = world.sync_workout(&nine).await.expect("syncs");
    let later = world.sync_workout(&ten).await.expect("syncs");
    assert_eq!(
        (later.value.clone(), later.replayed),
        (first.value.clone(), true)
    );
    let pointer = world
        .items(Context::Activity, "EXTERNAL#garmin#act-5")
        .await;
    assert_eq!(
        (pointer.len(), pointer[0]["revision"].as_i64()),
        (1, Some(ts("2026-05-02T10:00:00.000Z").millis()))
    );
    let workouts = world.items(Context::Activity, "WORKOUT#").await;
    assert_eq!(
        (workouts.len(), workouts[0]["version"].as_u64()),
        (1, Some(1))
    );
    assert_eq!(
        world.event_types(Context::Activity).await,
        vec!["WorkoutRecorded"]
    );
    assert!(replayed(world.sync_workout(&nine).await), "stale now");
    let unchanged = world
        .items(Context::Activity, "EXTERNAL#garmin#act-5")
        .await;
    assert_eq!(unchanged, pointer, "a stale delivery changes nothing");
}

pub async fn training_block_started(store: Arc<dyn Store>) {
    let world = World::new(store);
    let input = StartTrainingBlock {
        start_day: Day::parse("2026-06-01").expect("day"),
        weeks: 8,
        focus: "Marathon base".into(),
    };
    let keyed = world.keyed("tb");
    let id = with_retry(|| world.activity.start_training_block(&keyed, input.clone()))
        .await
        .training_block_id;
    let block = format!("TRAINING_BLOCK#2026-06-01#{id}");
    world
        .assert_one_row_and_event(Context::Activity, &block, "TrainingBlockStarted")
        .await;
    assert_invalid(
        world
            .activity
            .start_training_block(&world.meta, StartTrainingBlock { weeks: 0, ..input })
            .await,
        "weeks",
    );
}

pub async fn sleep_sessions_recorded_and_synced_idempotently(store: Arc<dyn Store>) {
    let world = World::new(store);
    let stages = SleepStages {
        awake_min: 20,
        light_min: 240,
        deep_min: 90,
        rem_min: 100,
    };
    let manual = RecordSleep {
        start: ts("2026-05-01T22:00:00.000Z"),
        end: ts("2026-05-02T06:00:00.000Z"),
        timezone: "Europe/Paris".into(),
        score: 82,
        stages,
    };
    let keyed = world.keyed("s1");
    let id = with_retry(|| world.sleep.record_sleep(&keyed, manual.clone()))
        .await
        .sleep_id;
    // 22:00 UTC is midnight in Paris: the night is named by its local start day.
    let night = format!("SLEEP#2026-05-02#{id}");
    assert_eq!(world.count(Context::Sleep, &night).await, 1);

    let synced = ProviderSleep {
        external_id: ExternalId::parse("night-1").expect("id"),
        start: ts("2026-05-02T21:00:00.000Z"),
        end: ts("2026-05-03T05:00:00.000Z"),
        score: 75,
        stages,
        updated_at: None,
    };
    let first = world.sync_sleep(&synced).await.expect("syncs");
    let retry = world.sync_sleep(&synced).await.expect("retry");
    assert_eq!((retry.value, retry.replayed), (first.value, true));
    assert_eq!(
        world.event_types(Context::Sleep).await,
        vec!["SleepRecorded", "SleepRecorded"]
    );

    let too_much = SleepStages {
        deep_min: 900,
        ..stages
    };
    let refused = [
        (
            "score",
            RecordSleep {
                score: 101,
                ..manual.clone()
            },
        ),
        (
            "end",
            RecordSleep {
                end: manual.start,
                ..manual.clone()
            },
        ),
        (
            "stages",
            RecordSleep {
                stages: too_much,
                ..manual
            },
        ),
    ];
    for (field, input) in refused {
        assert_invalid(world.sleep.record_sleep(&world.meta, input).await, field);
    }
}

/// Ending a training block whose transaction is cancelled as a conflict (nothing
/// written) ends it on the next attempt, where it answered "ended already".
pub async fn ending_a_block_cancelled_as_a_conflict_ends_it_on_the_next_attempt(
    store: Arc<dyn Store>,
) {
    let world = World::new(store.clone());
    let start_day = Day::parse("2026-06-01").expect("day");
    let block = StartTrainingBlock {
        start_day,
        weeks: 2,
        focus: "Speed".into(),
    };
    let started = world
        .activity
        .start_training_block(&world.meta, block)
        .await;
    let id = started.expect("starts").value.training_block_id;
    let ending = World::new(ConflictOnce::on(store)).as_user(world.meta.user.clone());
    let ended_on = Day::parse("2026-06-07").expect("day");
    let ended = ending
        .activity
        .end_training_block(&ending.meta, start_day, &id, ended_on)
        .await
        .expect("ended on the second attempt");
    assert_eq!(ended.value.ended_on, ended_on);
    let events = ["TrainingBlockStarted", "TrainingBlockEnded"];
    ending
        .assert_second_attempt_and_events(Context::Activity, &events)
        .await;
}

/// A training block ends early once, on a day within it.
pub async fn a_training_block_ends_early_once(store: Arc<dyn Store>) {
    let world = World::new(store);
    let start_day = Day::parse("2026-06-01").expect("day");
    let id = world
        .activity
        .start_training_block(
            &world.meta,
            StartTrainingBlock {
                start_day,
                weeks: 2,
                focus: "Speed".into(),
            },
        )
        .await
        .expect("starts")
        .value
        .training_block_id;
    let on = |raw: &str| Day::parse(raw).expect("day");
    for outside in ["2026-05-31", "2026-06-15"] {
        assert_invalid(
            world
                .activity
                .end_training_block(&world.meta, start_day, &id, on(outside))
                .await,
            "ended_on",
        );
    }
    // It ends on its planned last day at the latest; a retry answers the first end.
    let keyed = world.keyed("end");
    let ended = with_retry(|| {
        world
            .activity
            .end_training_block(&keyed, start_day, &id, on("2026-06-14"))
    })
    .await;
    assert_eq!((ended.ended_on, ended.block.weeks), (on("2026-06-14"), 2));
    let twice = world
        .activity
        .end_training_block(&world.meta, start_day, &id, on("2026-06-10"))
        .await;
    assert!(
        matches!(twice, Err(commands::CommandError::Conflict(_))),
        "{twice:?}"
    );
    let unknown = world
        .activity
        .end_training_block(&world.meta, on("2026-06-02"), &id, on("2026-06-10"))
        .await;
    assert_not_found(unknown);
    assert_eq!(
        world.event_types(Context::Activity).await,
        vec!["TrainingBlockStarted", "TrainingBlockEnded"]
    );
}
