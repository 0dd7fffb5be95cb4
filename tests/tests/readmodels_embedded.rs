//! The query handlers on the embedded store with the projectors running: each answers
//! from projection or summary rows with exactly one request, never by reading entity
//! rows to aggregate them.

use commands::activity::{RecordWorkout, StartTrainingBlock};
use events_schema::Context;
use events_schema::events::goals::GoalStatus;
use events_schema::time::{Day, Timestamp};
use infra::Store;
use infra::counting::CountingStore;
use infra::table::Table;
use readmodels::QueryError;
use readmodels::history::PageRequest;
use std::collections::BTreeMap;
use std::sync::Arc;
use vitals_tests::commands::World;
use vitals_tests::commands::goals::daily_protein;
use vitals_tests::pipeline;

fn day(raw: &str) -> Day {
    Day::parse(raw).expect("day")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_query_is_one_request_on_projection_or_summary_rows() {
    let (store, _dir) = pipeline::open();
    let shared: Arc<dyn Store> = store.clone();
    let pipeline = pipeline::start(&store);
    // The evening of 2026-03-01: the goal counts from that day.
    let evening = Timestamp::parse("2026-03-01T20:00:00.000Z").expect("time");
    let world = World::with_clock(shared.clone(), events_schema::time::Clock::manual(evening));
    let user = world.meta.user.clone();
    let goal = world.create_goal(daily_protein(40)).await;
    for (at, calories) in [
        ("2026-03-01T08:00:00.000Z", 400),
        ("2026-03-02T08:00:00.000Z", 500),
        ("2026-03-02T12:00:00.000Z", 250),
    ] {
        let meal = vitals_tests::commands::nutrition::meal(at, &calories.to_string(), "30");
        world.log_meal(meal).await;
    }
    for (start, effort) in [
        ("2026-03-01T07:00:00.000Z", None),
        ("2026-03-02T07:00:00.000Z", Some(8)),
    ] {
        let workout = RecordWorkout {
            sport: "run".into(),
            started_at: Timestamp::parse(start).expect("ts"),
            timezone: "UTC".into(),
            duration_s: 1800,
            distance_m: None,
            calories: None,
            perceived_effort: effort,
        };
        world
            .activity
            .record_workout(&world.meta, workout)
            .await
            .expect("workout");
    }
    world
        .activity
        .start_training_block(
            &world.meta,
            StartTrainingBlock {
                start_day: day("2026-02-20"),
                weeks: 4,
                focus: "Base".into(),
            },
        )
        .await
        .expect("block");
    pipeline::wait_caught_up(&pipeline, &store).await;
    pipeline.stop().await;

    let counting = Arc::new(CountingStore::new(shared));
    let reads: Arc<dyn Store> = counting.clone();
    let dashboard = readmodels::dashboard::Dashboard::new(Table::new(reads.clone()));
    let history = readmodels::history::History::new(Table::new(reads.clone()));
    let nutrition = readmodels::nutrition::Nutrition::new(Table::new(reads.clone()));
    let activity = readmodels::activity::Activity::new(Table::new(reads.clone()));
    let goals_read = readmodels::goals::Goals::new(Table::new(reads));
    let one_request_on = |table: Context| {
        let counts = counting.take();
        assert_eq!(counts.total(), 1, "{counts:?}");
        assert_eq!(counting.take_tables(), BTreeMap::from([(table, 1)]));
    };

    let view = dashboard
        .home(&user, day("2026-03-02"))
        .await
        .expect("dashboard");
    one_request_on(Context::Dashboard);
    assert_eq!(view.day.nutrition.meals, 2);
    assert_eq!(view.recent_meals.len(), 3);
    assert_eq!(view.recent_workouts.len(), 2);
    let mut efforts: Vec<_> = view
        .recent_workouts
        .iter()
        .map(|w| (w.day, w.perceived_effort))
        .collect();
    efforts.sort();
    assert_eq!(
        efforts,
        vec![(day("2026-03-01"), None), (day("2026-03-02"), Some(8))]
    );
    assert_eq!(view.active_goals.len(), 1);

    let summaries = nutrition
        .daily(&user, day("2026-03-01"), day("2026-03-31"))
        .await
        .expect("summaries");
    one_request_on(Context::Nutrition);
    let totals: Vec<f64> = summaries
        .days
        .iter()
        .map(|s| s.totals.calories.as_f64())
        .collect();
    assert_eq!(totals, vec![400.0, 750.0]);
    assert!(matches!(
        nutrition
            .daily(&user, day("2026-03-01"), day("2026-04-01"))
            .await,
        Err(QueryError::Invalid { field: "to", .. })
    ));
    assert!(matches!(
        nutrition
            .daily(&user, day("2026-03-02"), day("2026-03-01"))
            .await,
        Err(QueryError::Invalid { .. })
    ));
    assert_eq!(counting.take().total(), 0, "invalid ranges cost nothing");

    let latest = activity
        .latest_workout(&user)
        .await
        .expect("latest")
        .expect("a workout");
    one_request_on(Context::Activity);
    assert_eq!(latest.day, day("2026-03-02"));

    let block = activity
        .current_training_block(&user, day("2026-03-02"))
        .await
        .expect("block");
    one_request_on(Context::Activity);
    assert_eq!(block.expect("running").focus, "Base");
    assert!(
        activity
            .current_training_block(&user, day("2026-03-25"))
            .await
            .expect("block")
            .is_none(),
        "four weeks from 02-20 end on 03-19"
    );
    counting.take_tables();
    counting.take();

    let goals = goals_read
        .with_status(&user, GoalStatus::Active, &PageRequest::default())
        .await
        .expect("goals")
        .items;
    assert_eq!(counting.take().index_queries, 1);
    assert_eq!(
        counting.take_tables(),
        BTreeMap::from([(Context::Goals, 1)])
    );
    assert_eq!(goals.len(), 1);

    let progress = goals_read
        .progress(&user, &goal, &PageRequest::default())
        .await
        .expect("progress");
    one_request_on(Context::Goals);
    let values: Vec<f64> = progress.items.iter().map(|p| p.value.as_f64()).collect();
    assert_eq!(values, vec![30.0, 60.0]);

    // The history screens: one request per page, on the dashboard table.
    let meals = history
        .meals_on(&user, day("2026-03-02"), &PageRequest::default())
        .await
        .expect("meals");
    one_request_on(Context::Dashboard);
    assert_eq!(meals.items.len(), 2);
    let page = PageRequest {
        limit: Some(1),
        cursor: None,
    };
    let first = history
        .workouts(&user, (day("2026-03-01"), day("2026-03-02")), &page)
        .await
        .expect("workouts");
    one_request_on(Context::Dashboard);
    assert_eq!(first.items.len(), 1);
    assert_eq!(first.items[0].day, day("2026-03-02"), "newest first");
}
