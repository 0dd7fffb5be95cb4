//! Account erasure end to end on the embedded store, projectors running: a user asks
//! for deletion in the middle of a burst of their own commands; afterwards nothing of
//! them is left in any table or index, and a full replay brings nothing back.

mod support;

use commands::activity::RecordWorkout;
use commands::goals::CreateGoal;
use commands::identity::Register;
use commands::nutrition::MealInput;
use commands::sleep::RecordSleep;
use commands::{CommandError, CommandMeta};
use events_schema::events::goals::GoalKind;
use events_schema::ids::UserId;
use events_schema::time::Timestamp;
use infra::Store;
use infra::embedded::EmbeddedStore;
use infra::feed::embedded::EmbeddedFeed;
use infra::table::Table;
use projectors::pipeline::Pipeline;
use projectors::replay::Mode;
use rust_decimal::Decimal;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use support::Case;
use vitals::http::api::Api;

fn at(day: u32, hour: u32) -> Timestamp {
    Timestamp::parse(&format!("2026-11-{day:02}T{hour:02}:15:00.000Z")).expect("time")
}

fn register(email: &str) -> Register {
    Register {
        email: email.into(),
        password: "correct horse battery".into(),
        display_name: "Erin".into(),
        timezone: "UTC".into(),
        units: Default::default(),
    }
}

/// One command of the burst, chosen by `n`: meals, workouts, sleep, goals, connects.
async fn command(api: &Api, meta: &CommandMeta, n: usize) -> Result<(), CommandError> {
    let day = 1 + (n % 28) as u32;
    match n % 5 {
        0 | 1 => api
            .nutrition
            .log_meal(
                meta,
                MealInput {
                    name: format!("meal {n}"),
                    eaten_at: at(day, 12),
                    timezone: "UTC".into(),
                    calories: Decimal::from(400 + n as i64),
                    protein_g: Decimal::from(20),
                    carbs_g: Decimal::from(50),
                    fat_g: Decimal::from(10),
                },
            )
            .await
            .map(|_| ()),
        2 => api
            .activity
            .record_workout(
                meta,
                RecordWorkout {
                    sport: "run".into(),
                    started_at: at(day, 7),
                    timezone: "UTC".into(),
                    duration_s: 1800,
                    distance_m: Some(5000),
                    calories: Some(300),
                    perceived_effort: Some(4),
                },
            )
            .await
            .map(|_| ()),
        3 => api
            .sleep
            .record_sleep(
                meta,
                RecordSleep {
                    start: at(day, 0),
                    end: at(day, 7),
                    timezone: "UTC".into(),
                    score: 80,
                    stages: Default::default(),
                },
            )
            .await
            .map(|_| ()),
        _ if n % 10 == 4 => api
            .goals
            .create_goal(
                meta,
                CreateGoal {
                    kind: GoalKind::WeeklyWorkoutCount,
                    target: Decimal::from(3),
                    title: format!("goal {n}"),
                    timezone: None,
                },
            )
            .await
            .map(|_| ()),
        _ => api
            .integrations
            .start_connect(meta, "sandbox")
            .await
            .map(|_| ()),
    }
}

async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + Duration::from_secs(90);
    while !check().await {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// The world the cases share: the store, its projectors running, the API on it.
struct World {
    embedded: Arc<EmbeddedStore>,
    pipeline: Pipeline,
    api: Arc<Api>,
}

impl World {
    /// The embedded store behind the storage port.
    fn store(&self) -> Arc<dyn Store> {
        self.embedded.clone()
    }
}

/// The erasure on one store: named cases, in order, each saying its name when it fails.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn deletion_mid_burst_leaves_nothing_even_after_a_replay() {
    let (embedded, _dir) = vitals_tests::pipeline::open();
    let pipeline = vitals_tests::pipeline::start(&embedded);
    let api = support::api(embedded.clone(), 1000);
    let world = World {
        embedded,
        pipeline,
        api,
    };

    let (bystander, user) = a_bystander_with_data_and_a_user(&world).await;
    deletion_mid_burst(&world, &user).await;
    the_erasure_completes(&world, &user).await;
    nothing_of_the_user_is_left(&world, &user, &bystander).await;
    a_replay_brings_nothing_back(&world, &user).await;
    the_change_log_is_trimmed_of_the_user(&world, &user).await;
    the_email_is_free_again(&world).await;

    world.pipeline.stop().await;
    world.embedded.close();
}

/// Two accounts; the bystander runs twenty commands. (bystander, user).
async fn a_bystander_with_data_and_a_user(world: &World) -> (UserId, UserId) {
    let _case = Case("a bystander with data, and a user");
    let api = &world.api;
    let bystander_meta = CommandMeta::new(UserId::generate());
    let bystander = api
        .identity
        .register(&bystander_meta, register("stays@example.com"))
        .await
        .expect("register")
        .value;
    let user = api
        .identity
        .register(
            &CommandMeta::new(UserId::generate()),
            register("leaves@example.com"),
        )
        .await
        .expect("register")
        .value;
    let bystander_meta = CommandMeta::new(bystander.clone());
    for n in 0..20 {
        command(api, &bystander_meta, n)
            .await
            .expect("bystander command");
    }
    (bystander, user)
}

/// The burst: the user's commands keep coming, before, during and after the request
/// for deletion, until every context refuses them; login is refused at once.
async fn deletion_mid_burst(world: &World, user: &UserId) {
    let _case = Case("deletion mid-burst");
    let api = &world.api;
    let meta = CommandMeta::new(user.clone());
    let stop = Arc::new(AtomicBool::new(false));
    let accepted = Arc::new(AtomicUsize::new(0));
    let refused = Arc::new(AtomicUsize::new(0));
    let burst = {
        let (api, meta, stop, accepted, refused) = (
            api.clone(),
            meta.clone(),
            stop.clone(),
            accepted.clone(),
            refused.clone(),
        );
        tokio::spawn(async move {
            let mut n = 0;
            while !stop.load(Ordering::SeqCst) {
                match command(&api, &meta, n).await {
                    Ok(()) => accepted.fetch_add(1, Ordering::SeqCst),
                    Err(CommandError::AccountDeleted) => refused.fetch_add(1, Ordering::SeqCst),
                    Err(other) => panic!("command {n} failed: {other}"),
                };
                n += 1;
            }
        })
    };
    eventually("the burst to get going", || async {
        accepted.load(Ordering::SeqCst) >= 40
    })
    .await;
    api.identity
        .request_deletion(&meta, "correct horse battery")
        .await
        .expect("deletion requested");
    assert!(
        matches!(
            api.identity
                .login("leaves@example.com", "correct horse battery")
                .await,
            Err(CommandError::AccountDeleted)
        ),
        "login is refused while the deletion runs"
    );
    // Keep the burst going until every context refuses the user.
    eventually("every context to refuse the user", || async {
        refused.load(Ordering::SeqCst) >= 30
    })
    .await;
    stop.store(true, Ordering::SeqCst);
    burst.await.expect("burst task");
}

/// Every context drains the user, and the projectors catch up.
async fn the_erasure_completes(world: &World, user: &UserId) {
    let _case = Case("the erasure completes");
    let (store, pipeline) = (&world.store(), &world.pipeline);
    let identity = Table::new(store.clone());
    let deadline = Instant::now() + Duration::from_secs(90);
    while !projectors::erasure::is_complete(&identity, user)
        .await
        .expect("tombstone")
    {
        if Instant::now() > deadline {
            let key = infra::store::Key::tombstone(user);
            for table in events_schema::Context::ALL {
                let tombstone = store.get(table, &key, true).await.expect("read");
                eprintln!("{table}: {tombstone:?}");
            }
            eprintln!("{:#?}", pipeline.stats().await.expect("stats"));
            panic!("timed out waiting for the erasure to complete");
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    eventually("the projectors to catch up", || async {
        pipeline.caught_up().await.expect("lag")
    })
    .await;
}

/// Nothing of the user is left in any table or index; the bystander's data is.
async fn nothing_of_the_user_is_left(world: &World, user: &UserId, bystander: &UserId) {
    let _case = Case("nothing of the user is left");
    let store = &world.store();
    let left = vitals::residue::find(&**store, user)
        .await
        .expect("residue");
    assert!(left.is_empty(), "left of the user: {left:#?}");
    let kept = vitals::residue::find(&**store, bystander)
        .await
        .expect("residue");
    assert!(
        kept.len() > 20,
        "the bystander's data is untouched ({} items)",
        kept.len()
    );
}

/// A full replay of every projection, live workers still running, brings nothing back.
async fn a_replay_brings_nothing_back(world: &World, user: &UserId) {
    let _case = Case("a replay brings nothing back");
    let store = &world.store();
    let batch = projectors::replay::BATCH_EVENTS;
    let replayed = vitals_tests::pipeline::replay_all(store.clone(), batch, Mode::Incremental)
        .await
        .expect("replay");
    assert!(
        replayed.events > 20,
        "the replay read the bystander's events"
    );
    let left = vitals::residue::find(&**store, user)
        .await
        .expect("residue");
    assert!(left.is_empty(), "left after a replay: {left:#?}");
}

/// Once every subscription has processed them, the change log's records of the user
/// (their items' old images included) are trimmed away as well.
async fn the_change_log_is_trimmed_of_the_user(world: &World, user: &UserId) {
    let _case = Case("the change log is trimmed of the user");
    let (embedded, store, pipeline) = (&world.embedded, &world.store(), &world.pipeline);
    eventually("the projectors to catch up", || async {
        pipeline.caught_up().await.expect("lag")
    })
    .await;
    let consumers: Vec<&str> = projectors::registry::all(store.clone())
        .iter()
        .map(|p| p.name())
        .collect();
    assert!(
        !vitals::residue::find_in_change_log(embedded, user)
            .await
            .expect("log")
            .is_empty(),
        "before trimming, the log still holds the user's changes"
    );
    // Trimming goes by the checkpoints written, which follow a caught-up worker within
    // a second or so (they are coalesced): trim until the user's records are gone.
    let feed = EmbeddedFeed::new(embedded.clone());
    let trimmed_away = || async {
        feed.trim_processed(&consumers).await.expect("trim");
        vitals::residue::find_in_change_log(embedded, user)
            .await
            .expect("log")
            .is_empty()
    };
    eventually("the user's change records to be trimmed", trimmed_away).await;
}

/// The email is free again.
async fn the_email_is_free_again(world: &World) {
    let _case = Case("the email is free again");
    let api = &world.api;
    assert!(matches!(
        api.identity
            .login("leaves@example.com", "correct horse battery")
            .await,
        Err(CommandError::InvalidCredentials)
    ));
    api.identity
        .register(
            &CommandMeta::new(UserId::generate()),
            register("leaves@example.com"),
        )
        .await
        .expect("the email registers again");
}
