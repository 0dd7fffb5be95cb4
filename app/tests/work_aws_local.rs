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
use infra::aws_client::AwsSettings;
use infra::dynamodb::DynamoStore;
use infra::store::{Item, Key};
use infra::table::Table;
use rust_decimal::Decimal;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn endpoint() -> String {
    match std::env::var("VITALS_TEST_DYNAMODB_ENDPOINT") {
        Ok(url) if !url.trim().is_empty() => url,
        _ => panic!(
            "VITALS_TEST_DYNAMODB_ENDPOINT is not set: run `scripts/test-all`, or start an emulator with `scripts/emulator.sh start`"
        ),
    }
}

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commands_reach_the_dashboard_through_kinesis_and_vitals_work() {
    let endpoint = endpoint();
    let prefix = format!("w{}-", UserId::generate().as_str().to_lowercase());
    let args = [
        "--endpoint-url",
        endpoint.as_str(),
        "--table-prefix",
        prefix.as_str(),
    ];
    let bridge = std::env::var("VITALS_TEST_FORWARDING").is_ok_and(|f| f == "bridge");
    let forwarding: &[&str] = if bridge { &["--bridge"] } else { &[] };
    let bootstrap = Command::new(env!("CARGO_BIN_EXE_vitals"))
        .arg("bootstrap")
        .args(args)
        .args(["--kinesis", "--dlq-queues"])
        .args(forwarding)
        .output()
        .expect("bootstrap runs");
    assert!(
        bootstrap.status.success(),
        "bootstrap: {}",
        String::from_utf8_lossy(&bootstrap.stderr)
    );
    let printed = String::from_utf8_lossy(&bootstrap.stdout);
    assert_eq!(
        printed
            .lines()
            .filter(|l| l.starts_with("streaming\t"))
            .count(),
        8,
        "{printed}"
    );

    let work_args: Vec<&str> = args.iter().chain(forwarding).copied().collect();
    let mut worker = spawn_worker(&work_args);

    let settings = AwsSettings {
        endpoint_url: Some(endpoint.clone()),
        ..AwsSettings::default()
    };
    let store: Arc<dyn Store> = Arc::new(DynamoStore::connect(&settings, &prefix).await);
    let meta = CommandMeta::new(UserId::generate());
    let pk = meta.user_pk();
    // The goal is set on the day of the meals it counts.
    let set_on = events_schema::time::Clock::manual(
        Timestamp::parse("2026-03-01T20:00:00.000Z").expect("time"),
    );
    let goal = GoalCommands::new(Table::new(store.clone()))
        .with_clock(set_on)
        .create_goal(
            &meta,
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
    let nutrition = NutritionCommands::new(Table::new(store.clone()));
    nutrition
        .log_meal(&meta, meal_input(450))
        .await
        .expect("meal");

    let daily = wait_for(
        &*store,
        Context::Dashboard,
        Key::new(&pk, "DAILY#2026-03-01"),
        |row| {
            row.get("nutrition")
                .and_then(|n| n.get("meals"))
                .is_some_and(|m| m == 1)
        },
    )
    .await;
    assert_eq!(daily["nutrition"]["totals"]["calories"], "450");
    wait_for(
        &*store,
        Context::Dashboard,
        Key::new(&pk, format!("ACTIVE_GOAL#{goal}")),
        |_| true,
    )
    .await;
    let progress = Key::new(&pk, format!("PROGRESS#{goal}#2026-03-01T00:00:00.000Z"));
    let row = wait_for(&*store, Context::Goals, progress, |row| {
        row.get("met").is_some_and(|m| m == true)
    })
    .await;
    assert_eq!(row["value"], "32");
    stop(&mut worker).await;
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

    // Written while no worker runs; a new `vitals work` resumes from the checkpoints
    // kept in the tables and applies it.
    nutrition
        .log_meal(&meta, meal_input(150))
        .await
        .expect("meal");
    let mut restarted = spawn_worker(&work_args);
    let daily = wait_for(
        &*store,
        Context::Dashboard,
        Key::new(&pk, "DAILY#2026-03-01"),
        |row| {
            row.get("nutrition")
                .and_then(|n| n.get("meals"))
                .is_some_and(|m| m == 2)
        },
    )
    .await;
    assert_eq!(daily["nutrition"]["totals"]["calories"], "600");
    stop(&mut restarted).await;
}

/// A running `vitals work`, killed if the test fails before stopping it.
struct Worker(std::process::Child);

impl Drop for Worker {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

fn spawn_worker(args: &[&str]) -> Worker {
    Worker(
        Command::new(env!("CARGO_BIN_EXE_vitals"))
            .arg("work")
            .args(["--metrics-listen", "127.0.0.1:0"])
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("vitals work starts"),
    )
}

async fn stop(worker: &mut Worker) {
    let worker = &mut worker.0;
    let pid = worker.id().to_string();
    Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .expect("kill runs");
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = worker.try_wait().expect("wait") {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "vitals work did not stop on SIGTERM"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
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
