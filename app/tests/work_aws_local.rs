//! The aws-local shape end to end, against the emulator named by
//! `VITALS_TEST_DYNAMODB_ENDPOINT` (required): `vitals bootstrap --kinesis --dlq-queues`,
//! then `vitals work` as a child process, then commands on the DynamoDB backend; the
//! dashboard and goal rows appear in DynamoDB, waited for with a deadline. ministack
//! forwards table changes to Kinesis itself; with `VITALS_TEST_FORWARDING=bridge` (for
//! moto, which cannot) the streams are created without forwarding and `vitals work
//! --bridge` forwards them.

mod support;

use commands::CommandMeta;
use commands::goals::{CreateGoal, GoalCommands};
use commands::nutrition::{MealInput, NutritionCommands};
use events_schema::Context;
use events_schema::events::goals::GoalKind;
use events_schema::ids::UserId;
use events_schema::time::Timestamp;
use infra::Store;
use infra::store::{Item, Key};
use infra::table::Table;
use rust_decimal::Decimal;
use std::time::{Duration, Instant};
use support::Case;
use support::aws_local::{Tables, Worker, forwarding};

async fn wait_for(store: &dyn Store, table: Context, key: Key, ok: impl Fn(&Item) -> bool) -> Item {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(row) = store.get(table, &key, true).await.expect("get")
            && ok(&row)
        {
            return row;
        }
        assert!(
            Instant::now() < deadline,
            "{table} {} {} did not appear in time",
            key.pk,
            key.sk
        );
        // DynamoDB has no change notification to wait on here: check again shortly.
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The dashboard's row of 2026-03-01 once it counts `meals` meals.
async fn daily_of(store: &dyn Store, pk: &str, meals: u64) -> Item {
    wait_for(
        store,
        Context::Dashboard,
        Key::new(pk, "DAILY#2026-03-01"),
        |row| {
            row.get("nutrition")
                .and_then(|n| n.get("meals"))
                .is_some_and(|m| m == meals)
        },
    )
    .await
}

/// The pipeline on one set of tables: named cases, in order, each saying its name when
/// it fails.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commands_reach_the_dashboard_through_kinesis_and_vitals_work() {
    let tables = Tables::new("w");
    bootstrap_streams_every_table(&tables);
    let work_args = [&tables.args()[..], forwarding()].concat();
    let mut worker = Worker::spawn(&work_args);

    let store = tables.store().await;
    let meta = CommandMeta::new(UserId::generate());
    let nutrition = NutritionCommands::new(Table::new(store.clone()));
    let goal = a_goal_and_a_meal(&store, &meta, &nutrition).await;
    the_dashboard_and_the_goal_converge(&*store, &meta, &goal).await;
    a_stopped_worker_kept_its_checkpoints(&*store, &mut worker).await;
    a_new_worker_resumes_from_them(&*store, &meta, &nutrition, &work_args).await;
}

/// `vitals bootstrap --kinesis --dlq-queues` streams every publishing table.
fn bootstrap_streams_every_table(tables: &Tables) {
    let _case = Case("bootstrap");
    let printed = tables.bootstrap(forwarding());
    assert_eq!(
        printed
            .lines()
            .filter(|l| l.starts_with("streaming\t"))
            .count(),
        8,
        "{printed}"
    );
}

/// A goal set on the day of the meals it counts, then a meal; the goal's id.
async fn a_goal_and_a_meal(
    store: &std::sync::Arc<dyn Store>,
    meta: &CommandMeta,
    nutrition: &NutritionCommands,
) -> String {
    let _case = Case("a goal and a meal");
    let set_on = events_schema::time::Clock::manual(
        Timestamp::parse("2026-03-01T20:00:00.000Z").expect("time"),
    );
    let goal = GoalCommands::new(Table::new(store.clone()))
        .with_clock(set_on)
        .create_goal(
            meta,
            CreateGoal {
                kind: GoalKind::DailyProteinGrams,
                target: Decimal::from(30),
                title: "Protein".into(),
                timezone: None,
            },
        )
        .await
        .expect("goal")
        .value
        .goal_id;
    nutrition
        .log_meal(meta, meal_input(450))
        .await
        .expect("meal");
    goal.to_string()
}

/// The dashboard's day, its active goal and the goal's progress appear in DynamoDB.
async fn the_dashboard_and_the_goal_converge(store: &dyn Store, meta: &CommandMeta, goal: &str) {
    let _case = Case("the dashboard and the goal converge");
    let pk = meta.user_pk();
    let daily = daily_of(store, &pk, 1).await;
    assert_eq!(daily["nutrition"]["totals"]["calories"], "450");
    wait_for(
        store,
        Context::Dashboard,
        Key::new(&pk, format!("ACTIVE_GOAL#{goal}")),
        |_| true,
    )
    .await;
    let progress = Key::new(&pk, format!("PROGRESS#{goal}#2026-03-01T00:00:00.000Z"));
    let row = wait_for(store, Context::Goals, progress, |row| {
        row.get("met").is_some_and(|m| m == true)
    })
    .await;
    assert_eq!(row["value"], "32");
}

/// `vitals work` stops cleanly on SIGTERM, its shard positions kept in its table.
async fn a_stopped_worker_kept_its_checkpoints(store: &dyn Store, worker: &mut Worker) {
    let _case = Case("a stopped worker kept its checkpoints");
    let status = tokio::task::block_in_place(|| worker.stop());
    assert!(status.success(), "{status:?}");
    let checkpoints = store
        .query(
            Context::Dashboard,
            &infra::store::Query::partition("CHECKPOINT#dashboard-from-nutrition").consistent(),
        )
        .await
        .expect("query");
    assert!(
        checkpoints.items.iter().any(|row| row
            .get("sequence")
            .and_then(|s| s.as_str())
            .is_some_and(|s| !s.is_empty())),
        "the worker kept its shard position in its table"
    );
}

/// Written while no worker runs; a new `vitals work` resumes from the checkpoints kept
/// in the tables and applies it.
async fn a_new_worker_resumes_from_them(
    store: &dyn Store,
    meta: &CommandMeta,
    nutrition: &NutritionCommands,
    work_args: &[&str],
) {
    let _case = Case("a new worker resumes from them");
    nutrition
        .log_meal(meta, meal_input(150))
        .await
        .expect("meal");
    let mut restarted = Worker::spawn(work_args);
    let daily = daily_of(store, &meta.user_pk(), 2).await;
    assert_eq!(daily["nutrition"]["totals"]["calories"], "600");
    let status = tokio::task::block_in_place(|| restarted.stop());
    assert!(status.success(), "{status:?}");
}

fn meal_input(calories: i64) -> MealInput {
    MealInput {
        name: "Lentils".into(),
        eaten_at: Timestamp::parse("2026-03-01T12:00:00.000Z").expect("ts"),
        timezone: "UTC".into(),
        calories: Decimal::from(calories),
        protein_g: Decimal::from(32),
        carbs_g: Decimal::from(60),
        fat_g: Decimal::from(8),
    }
}
