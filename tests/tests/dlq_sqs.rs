//! The SQS dead-letter queue against the emulator (`VITALS_TEST_DYNAMODB_ENDPOINT`,
//! required): letters keep their whole record, the depth counts them, a redrive
//! applies them on the DynamoDB backend and empties the queue, and an erasure's sweep
//! is not fooled by a short poll's empty answer.

use events_schema::Context;
use events_schema::envelope::{EventEnvelope, OUTBOX_ATTR};
use events_schema::events::nutrition::{DayTotals, Meal, MealLogged, Nutrients};
use events_schema::ids::{MealId, UserId};
use events_schema::time::{Day, Timestamp};
use infra::Store;
use infra::aws_client::AwsSettings;
use infra::dlq::{DeadLetter, DeadLetterQueue, SqsDlq};
use infra::dynamodb::DynamoStore;
use infra::feed::FeedRecord;
use infra::store::Key;
use infra::table::Table;
use projectors::dashboard::{DashboardFromNutrition, DashboardRows};
use projectors::runtime::redrive;
use rust_decimal::Decimal;
use std::sync::Arc;
use vitals_tests::commands::row_of;
use vitals_tests::sqs_polls::SqsPolls;

fn letter(user: &UserId, n: u32) -> DeadLetter {
    let day = Day::parse("2026-03-01").expect("day");
    let nutrients = Nutrients {
        calories: Decimal::from(100 * n),
        ..Nutrients::default()
    };
    let payload = MealLogged {
        meal: Meal {
            meal_id: MealId::generate(),
            day,
            eaten_at: Timestamp::now(),
            name: "Soup".into(),
            nutrients,
            version: 1,
        },
        day_totals: DayTotals {
            day,
            meals: n,
            totals: nutrients,
            version: u64::from(n),
        },
    };
    let envelope =
        EventEnvelope::new(Some(user.clone()), Timestamp::now(), &payload).expect("envelope");
    let pk = format!("USER#{user}");
    let mut image = Key::new(&pk, format!("EVT#{}", envelope.event_id)).to_item();
    image.insert(
        OUTBOX_ATTR.into(),
        serde_json::to_value(&envelope).expect("json"),
    );
    DeadLetter {
        id: format!("L{n}"),
        subscription: "dashboard-from-nutrition".into(),
        record: FeedRecord {
            position: n.to_string(),
            table: Context::Nutrition,
            pk,
            sk: image["sk"].as_str().unwrap_or_default().to_owned(),
            old_image: None,
            new_image: Some(image),
            fault: None,
        },
        error: "injected".into(),
        attempts: 5,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn letters_survive_whole_in_sqs_and_redrive_applies_them() {
    let endpoint = vitals_tests::backends::dynamodb_endpoint();
    let settings = AwsSettings {
        endpoint_url: Some(endpoint),
        ..AwsSettings::default()
    };
    let prefix = format!("q{}-", UserId::generate().as_str().to_lowercase());
    let config = infra::aws_client::load(&settings).await;
    let dlq = SqsDlq::new(infra::aws_client::sqs(&config), &prefix);
    dlq.provision("dashboard-from-nutrition")
        .await
        .expect("queue");
    let store = DynamoStore::connect(&settings, &prefix).await;
    store.bootstrap().await.expect("tables");
    let store: Arc<dyn Store> = Arc::new(store);

    let user = UserId::generate();
    let (first, second) = (letter(&user, 1), letter(&user, 2));
    dlq.put(&first).await.expect("put");
    dlq.put(&second).await.expect("put");
    assert_eq!(
        dlq.depth("dashboard-from-nutrition").await.expect("depth"),
        2
    );
    let listed = dlq
        .list("dashboard-from-nutrition", 10)
        .await
        .expect("list");
    assert_eq!(listed.len(), 2);
    let records: Vec<&FeedRecord> = listed.iter().map(|l| &l.record).collect();
    assert!(
        records.contains(&&first.record) && records.contains(&&second.record),
        "whole records come back"
    );

    // The listed letters are hidden for a while; remove them through redrive.
    for letter in &listed {
        dlq.remove("dashboard-from-nutrition", &letter.id)
            .await
            .expect("remove");
    }
    assert_eq!(
        dlq.depth("dashboard-from-nutrition").await.expect("depth"),
        0
    );
    dlq.put(&first).await.expect("put");
    dlq.put(&second).await.expect("put");
    let projector = DashboardFromNutrition(DashboardRows::new(Table::new(store.clone())));
    let outcome = redrive(&projector, &dlq).await.expect("redrive");
    assert_eq!((outcome.applied, outcome.still_failing), (2, 0));
    assert_eq!(
        dlq.depth("dashboard-from-nutrition").await.expect("depth"),
        0
    );
    let pk = format!("USER#{user}");
    let row = row_of(&*store, Context::Dashboard, &pk, "DAILY#2026-03-01")
        .await
        .expect("row");
    assert_eq!(
        row["nutrition"]["meals"], 2,
        "the newest summary wins whatever the redrive order"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_erasures_sweep_finds_the_users_letter_whatever_one_poll_answers() {
    let settings = AwsSettings {
        endpoint_url: Some(vitals_tests::backends::dynamodb_endpoint()),
        ..AwsSettings::default()
    };
    let prefix = format!("q{}-", UserId::generate().as_str().to_lowercase());
    let config = infra::aws_client::load(&settings).await;
    let sqs = aws_sdk_sqs::config::Builder::from(&config)
        .interceptor(SqsPolls::missing_the_first_short_poll())
        .build();
    let dlq = SqsDlq::new(aws_sdk_sqs::Client::from_conf(sqs), &prefix);
    let subscription = "dashboard-from-nutrition";
    dlq.provision(subscription).await.expect("queue");
    let user = UserId::generate();
    dlq.put(&letter(&user, 1)).await.expect("put");

    let removed = dlq
        .remove_about(subscription, &format!("USER#{user}"))
        .await
        .expect("sweep");
    assert_eq!(removed, 1, "the user's letter is found and removed");
    assert_eq!(dlq.depth(subscription).await.expect("depth"), 0);
}
