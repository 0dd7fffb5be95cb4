//! The event pipeline on the embedded store, end to end: commands commit state and
//! events, the in-process workers (fed by the change log) write projections, and the
//! tests wait on the projected rows with a deadline (woken by commits, never by a fixed
//! sleep).

use async_trait::async_trait;
use events_schema::Context;
use events_schema::envelope::EventEnvelope;
use events_schema::ids::GoalId;
use events_schema::time::{Clock, Day, Timestamp};
use infra::Store;
use infra::dlq::{DeadLetterQueue, TableDlq};
use infra::embedded::EmbeddedStore;
use infra::feed::embedded::EmbeddedFeed;
use infra::store::{Item, Key, now_epoch_seconds};
use infra::table::Table;
use projectors::dashboard::{DashboardFromNutrition, DashboardRows};
use projectors::runtime::{RetryPolicy, Worker, redrive};
use projectors::{ProjectionError, Projector, Subscription};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use vitals_tests::commands::activity_sleep::provider_workout;
use vitals_tests::commands::goals::daily_protein;
use vitals_tests::commands::integrations::webhook_body;
use vitals_tests::commands::nutrition::meal;
use vitals_tests::commands::{World, items_of, row_of};
use vitals_tests::pipeline::{self, UserRows, at, open};

/// The waits on `world`'s projected rows.
fn rows_of<'a>(store: &'a EmbeddedStore, world: &World) -> UserRows<'a> {
    UserRows {
        store,
        pk: world.pk(),
    }
}

/// Logs a meal of `calories` and `protein` eaten at `at` for `world`'s user.
async fn log(world: &World, at: &str, calories: i64, protein: i64) {
    let meal = meal(at, &calories.to_string(), &protein.to_string());
    world.log_meal(meal).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commands_reach_the_dashboard_goals_and_insights() {
    let (store, _dir) = open();
    let pipeline = pipeline::start(&store);
    // The evening of 2026-03-01: the goal counts that day's meals.
    let evening = Timestamp::parse("2026-03-01T20:00:00.000Z").expect("time");
    let world = World::with_clock(store.clone(), Clock::manual(evening));
    let (pk, rows) = (world.pk(), rows_of(&store, &world));

    let goal = world.create_goal(daily_protein(50)).await;
    log(&world, "2026-03-01T08:00:00.000Z", 400, 30).await;
    log(&world, "2026-03-01T12:00:00.000Z", 600, 25).await;

    let daily = rows
        .wait(Context::Dashboard, "DAILY#2026-03-01", "nutrition.meals", 2)
        .await;
    assert_eq!(at(&daily, "nutrition.totals.calories"), "1000");
    let active = format!("ACTIVE_GOAL#{goal}");
    rows.wait(Context::Dashboard, active, "title", "Protein")
        .await;
    let goal_row = goal_reaches_55(&rows, &goal, "2026-03-01").await;
    assert_eq!(at(&goal_row, "status"), "active");
    let progressed: Vec<serde_json::Value> = items_of(&*store, Context::Goals, &pk, "EVT#")
        .await
        .into_iter()
        .filter(|row| at(row, "event_type") == "GoalProgressed")
        .map(|row| at(&row, "envelope.payload.value"))
        .collect();
    assert!(
        progressed.contains(&serde_json::json!("55")),
        "the final progress was published: {progressed:?}"
    );
    rows.wait(Context::Insights, "ACTIVE_DAY#2026-03-01", "meals", 2)
        .await;
    rows.wait(Context::Activity, "INTAKE#2026-03-01", "meals", 2)
        .await;

    // A wearable webhook: integrations publishes, activity syncs, the dashboard shows it.
    world.connect_as("pu-e2e").await.expect("callback");
    let workout = provider_workout("run-1", "2026-03-01T17:00:00.000Z", 2700);
    let body = webhook_body("pu-e2e", "d-1", workout);
    world
        .receive_signed(&body, now_epoch_seconds())
        .await
        .expect("webhook");
    let minutes = "activity.active_minutes";
    rows.wait(Context::Dashboard, "DAILY#2026-03-01", minutes, 45)
        .await;
    rows.wait(Context::Dashboard, "CONNECTION#sandbox", "connected", true)
        .await;

    let stats = pipeline.stats().await.expect("stats");
    assert!(
        stats
            .iter()
            .all(|s| s.dead_lettered == 0 && s.dlq_depth == 0),
        "{stats:?}"
    );
    assert!(
        stats.iter().map(|s| s.processed).sum::<u64>() >= 10,
        "{stats:?}"
    );
    let text = projectors::pipeline::metrics_text(&stats);
    assert!(
        text.contains("vitals_projector_lag_records{subscription=\"dashboard-from-nutrition\"}")
    );
    pipeline.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_resume_from_their_checkpoints_after_a_restart() {
    let (store, _dir) = open();
    let world = World::new(store.clone());
    let rows = rows_of(&store, &world);
    let first = pipeline::start(&store);
    log(&world, "2026-03-01T08:00:00.000Z", 100, 1).await;
    rows.wait(Context::Dashboard, "DAILY#2026-03-01", "nutrition.meals", 1)
        .await;
    first.stop().await;

    // Written while no worker runs.
    log(&world, "2026-03-01T09:00:00.000Z", 200, 2).await;
    let second = pipeline::start(&store);
    rows.wait(Context::Dashboard, "DAILY#2026-03-01", "nutrition.meals", 2)
        .await;
    pipeline::wait_caught_up(&second, &store).await;
    let stats = second.stats().await.expect("stats");
    let nutrition = stats
        .iter()
        .find(|s| s.subscription == "dashboard-from-nutrition")
        .expect("subscription");
    assert_eq!(
        nutrition.processed, 1,
        "the restarted worker applied only the new event"
    );
    second.stop().await;
}

/// Waits until the goal's progress of the period from `day` is 55 and met, and the goal
/// itself shows 55; the goal row.
async fn goal_reaches_55(rows: &UserRows<'_>, goal: &GoalId, day: &str) -> Item {
    let progress = format!("PROGRESS#{goal}#{day}T00:00:00.000Z");
    let row = rows.wait(Context::Goals, progress, "value", "55").await;
    assert_eq!(at(&row, "met"), true);
    let goal_row = format!("GOAL#{goal}");
    rows.wait(Context::Goals, goal_row, "current_value", "55")
        .await
}

/// Fails every event of one user while the fault is on, like a bug in a projector.
struct Faulty {
    inner: DashboardFromNutrition,
    poisoned_user: String,
    fault: AtomicBool,
}

#[async_trait]
impl Projector for Faulty {
    fn subscription(&self) -> Subscription {
        self.inner.subscription()
    }
    async fn apply(&self, event: &EventEnvelope) -> Result<(), ProjectionError> {
        let poisoned = event
            .user_id
            .as_ref()
            .is_some_and(|u| u.as_str() == self.poisoned_user);
        if poisoned && self.fault.load(Ordering::SeqCst) {
            return Err(ProjectionError::Store(infra::StoreError::Backend(
                "injected fault".into(),
            )));
        }
        self.inner.apply(event).await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_poison_event_is_dead_lettered_while_others_flow_and_redrive_applies_it() {
    let (store, _dir) = open();
    let shared: Arc<dyn Store> = store.clone();
    let poisoned = World::new(store.clone());
    let healthy = World::new(store.clone());
    let faulty = Arc::new(Faulty {
        inner: DashboardFromNutrition(DashboardRows::new(Table::new(shared.clone()))),
        poisoned_user: poisoned.meta.user.to_string(),
        fault: AtomicBool::new(true),
    });
    // The dead-letter queue's calls (the worker's, the listing's and redrive's) are
    // recorded against the declared access patterns.
    let recorded = vitals_tests::access::recording(shared.clone(), vitals_tests::access::catalog());
    let dlq = Arc::new(TableDlq::new(recorded.clone(), Context::Dashboard));
    let mut worker = Worker::new(
        faulty.clone(),
        Arc::new(EmbeddedFeed::new(store.clone())),
        dlq.clone(),
    );
    worker.policy = RetryPolicy {
        attempts: 3,
        first_backoff: Duration::from_millis(1),
        max_backoff: Duration::from_millis(5),
    };
    let metrics = worker.metrics.clone();
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let task = tokio::spawn(worker.run(stopped));

    log(&poisoned, "2026-03-01T08:00:00.000Z", 300, 3).await;
    log(&healthy, "2026-03-01T08:00:00.000Z", 500, 5).await;
    rows_of(&store, &healthy)
        .wait(Context::Dashboard, "DAILY#2026-03-01", "nutrition.meals", 1)
        .await;

    // The worker applies users' partitions independently: the healthy user's row can
    // land before the poisoned event has used up its attempts. Wait for the letter.
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut commits = store.commits();
    let letters = loop {
        commits.borrow_and_update();
        let letters = dlq
            .list("dashboard-from-nutrition", 10)
            .await
            .expect("letters");
        // (The count goes up just after the letter is written: no commit to wait for.)
        if !letters.is_empty() && metrics.dead_lettered.load(Ordering::SeqCst) > 0 {
            break letters;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        assert!(
            !left.is_zero(),
            "the poisoned event was never dead-lettered"
        );
        let wait = left.min(Duration::from_millis(20));
        let _ = tokio::time::timeout(wait, commits.changed()).await;
    };
    assert_eq!(letters.len(), 1);
    assert_eq!(letters[0].attempts, 3);
    let envelope = letters[0]
        .record
        .envelope()
        .expect("an outbox record")
        .expect("decodes");
    assert_eq!(
        envelope.user_id.as_ref(),
        Some(&poisoned.meta.user),
        "the letter holds the full record"
    );
    assert_eq!(envelope.event_type, "MealLogged");
    assert_eq!(metrics.dead_lettered.load(Ordering::SeqCst), 1);
    let poisoned_day = || {
        row_of(
            &*store,
            Context::Dashboard,
            poisoned.pk(),
            "DAILY#2026-03-01",
        )
    };
    assert!(poisoned_day().await.is_none());

    // Still faulty: redrive keeps the letter.
    assert_eq!(
        redrive(faulty.as_ref(), dlq.as_ref())
            .await
            .expect("redrive")
            .still_failing,
        1
    );
    faulty.fault.store(false, Ordering::SeqCst);
    let outcome = redrive(faulty.as_ref(), dlq.as_ref())
        .await
        .expect("redrive");
    assert_eq!((outcome.applied, outcome.still_failing), (1, 0));
    assert_eq!(
        dlq.depth("dashboard-from-nutrition").await.expect("depth"),
        0
    );
    let row = poisoned_day().await.expect("row");
    assert_eq!(at(&row, "nutrition.totals.calories"), "300");
    let _ = stop.send(true);
    task.await.expect("worker stops");
    vitals_tests::access::finish(&recorded, "dead-letters");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nightly_readiness_scores_the_users_active_that_day_through_the_index() {
    let (store, _dir) = open();
    let pipeline = pipeline::start(&store);
    let (active, other_day) = (World::new(store.clone()), World::new(store.clone()));
    log(&active, "2026-03-04T08:00:00.000Z", 300, 3).await;
    let sleep = commands::sleep::RecordSleep {
        start: events_schema::time::Timestamp::parse("2026-03-03T22:00:00.000Z").expect("ts"),
        end: events_schema::time::Timestamp::parse("2026-03-04T06:00:00.000Z").expect("ts"),
        timezone: "UTC".into(),
        score: 80,
        stages: Default::default(),
    };
    active
        .sleep
        .record_sleep(&active.meta, sleep)
        .await
        .expect("sleep");
    log(&other_day, "2026-03-05T08:00:00.000Z", 300, 3).await;
    let rows = rows_of(&store, &active);
    rows.wait(Context::Insights, "ACTIVE_DAY#2026-03-04", "meals", 1)
        .await;
    rows.wait(
        Context::Insights,
        "ACTIVE_DAY#2026-03-03",
        "sleep_minutes",
        480,
    )
    .await;
    rows_of(&store, &other_day)
        .wait(Context::Insights, "ACTIVE_DAY#2026-03-05", "meals", 1)
        .await;
    pipeline.stop().await;

    let counting = Arc::new(infra::counting::CountingStore::new(store.clone()));
    let table = Table::new(counting.clone() as Arc<dyn Store>);
    let day = Day::parse("2026-03-04").expect("day");
    let now = events_schema::time::Timestamp::parse("2026-03-05T13:00:00.000Z").expect("now");
    let scored = projectors::nightly::rescore_day(&table, day, now)
        .await
        .expect("job");
    assert_eq!(scored, 1, "only the user active that day");
    let readiness = items_of(&*store, Context::Insights, &active.pk(), "READINESS#").await;
    assert_eq!(readiness.len(), 1);
    // 480 sleep minutes over the week: 480 * 50 / 3360 = 7; no activity minutes.
    assert_eq!(at(&readiness[0], "score"), 7);
    assert!(
        items_of(&*store, Context::Insights, &other_day.pk(), "READINESS#")
            .await
            .is_empty()
    );
    let counts = counting.counts();
    assert_eq!(
        (counts.index_queries, counts.queries),
        (1, 1),
        "one index page, one week query per active user: {counts:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_goal_set_after_the_days_meals_starts_from_them() {
    let (store, _dir) = open();
    let pipeline = pipeline::start(&store);
    // The handlers' clock shows one in the afternoon: the goal is set on the day of the
    // meals (a UTC day, its current period), whatever the wall clock says.
    let today = "2026-03-04".to_owned();
    let noon = format!("{today}T12:00:00.000Z");
    let afternoon =
        events_schema::time::Timestamp::parse(&format!("{today}T13:00:00.000Z")).expect("time");
    let world = World::with_clock(store.clone(), events_schema::time::Clock::manual(afternoon));
    let rows = rows_of(&store, &world);
    // Meals of that day, projected before the goal exists. At noon UTC: the meals' own
    // timezone (Paris) puts them on the same day.
    for (calories, protein) in [(400, 30), (600, 25)] {
        log(&world, &noon, calories, protein).await;
    }
    rows.wait(Context::Goals, format!("NUT_DAILY#{today}"), "meals", 2)
        .await;

    let goal = world.create_goal(daily_protein(50)).await;
    goal_reaches_55(&rows, &goal, &today).await;
    pipeline.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscriptions_feed_reads_only_its_sources_events_and_moves_past_the_rest() {
    use infra::feed::ChangeFeed;
    let (store, _dir) = open();
    let world = World::new(store.clone());
    log(&world, "2026-03-01T08:00:00.000Z", 100, 1).await;
    // An outbox item of another table, in the log between the two meals' events.
    let other = Key::new(world.pk(), "EVT#2026-03-01T08:30:00.000Z#probe").to_item();
    store
        .put(Context::Activity, other, None)
        .await
        .expect("an outbox item of another table");
    log(&world, "2026-03-01T09:00:00.000Z", 200, 2).await;

    let feed = EmbeddedFeed::new(store.clone());
    let everything = feed.poll("probe-everything", 1000).await.expect("poll");
    let expected: Vec<String> = everything
        .records
        .iter()
        .filter(|r| r.table == Context::Nutrition && r.sk.starts_with("EVT#"))
        .map(|r| r.position.clone())
        .collect();
    assert_eq!(expected.len(), 2, "two meals, two events");
    assert!(
        everything
            .records
            .iter()
            .any(|r| r.table == Context::Activity),
        "the other table's record is in the log"
    );

    let events = feed
        .poll_events("probe", Context::Nutrition, 1000)
        .await
        .expect("poll events");
    let positions: Vec<String> = events.records.iter().map(|r| r.position.clone()).collect();
    assert_eq!(positions, expected);
    feed.commit("probe", &events).await.expect("commit");
    assert!(
        feed.lag("probe").await.expect("lag").is_zero(),
        "past the skipped records too"
    );

    // Settled, the position survives the process: a new feed starts after it.
    feed.settle("probe", true).await.expect("settle");
    let restarted = EmbeddedFeed::new(store.clone());
    assert!(restarted.lag("probe").await.expect("lag").is_zero());
    let again = restarted
        .poll_events("probe", Context::Nutrition, 1000)
        .await
        .expect("poll");
    assert!(
        again.records.is_empty(),
        "nothing delivered twice after a settle"
    );
}
