//! The SQS dead-letter queue against the emulator (`VITALS_TEST_DYNAMODB_ENDPOINT`,
//! required): letters keep their whole record, the depth counts them, a redrive
//! applies them on the DynamoDB backend and empties the queue, and an erasure's sweep
//! is not fooled by a short poll's empty answer.

use aws_sdk_sqs::config::interceptors::{
    BeforeDeserializationInterceptorContextMut, BeforeTransmitInterceptorContextMut,
};
use aws_sdk_sqs::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_sdk_sqs::error::BoxError;
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
use std::sync::atomic::{AtomicBool, Ordering};
use vitals_tests::commands::row_of;

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

/// SQS as its documentation describes a short poll (no `WaitTimeSeconds`): it asks some
/// of the servers only, and may answer empty while the queue holds messages. Here the
/// first short-polled receive is answered empty, and leaves what it did receive visible
/// (its visibility timeout set to 0), as a poll of the other servers would have.
#[derive(Debug, Default)]
struct ShortPollsMissOnce {
    missing: AtomicBool,
    missed: AtomicBool,
}

impl Intercept for ShortPollsMissOnce {
    fn name(&self) -> &'static str {
        "ShortPollsMissOnce"
    }

    fn modify_before_signing(
        &self,
        context: &mut BeforeTransmitInterceptorContextMut<'_>,
        _components: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let request = context.request_mut();
        let target = request.headers().get("x-amz-target").unwrap_or_default();
        let mut body: serde_json::Value = request
            .body()
            .bytes()
            .and_then(|b| serde_json::from_slice(b).ok())
            .unwrap_or_default();
        let short_poll = target.ends_with(".ReceiveMessage")
            && body["WaitTimeSeconds"].as_i64().unwrap_or(0) == 0;
        let miss = short_poll && !self.missed.swap(true, Ordering::SeqCst);
        self.missing.store(miss, Ordering::SeqCst);
        if miss {
            body["VisibilityTimeout"] = serde_json::json!(0);
            let body = body.to_string();
            request
                .headers_mut()
                .insert("content-length", body.len().to_string());
            *request.body_mut() = body.into();
        }
        Ok(())
    }

    fn modify_before_deserialization(
        &self,
        context: &mut BeforeDeserializationInterceptorContextMut<'_>,
        _components: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        if self.missing.swap(false, Ordering::SeqCst) {
            *context.response_mut().body_mut() = String::from("{}").into();
        }
        Ok(())
    }
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
        .interceptor(ShortPollsMissOnce::default())
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
