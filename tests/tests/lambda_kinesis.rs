//! The Lambda entry point on a recorded AWS-format Kinesis event
//! (`tests/fixtures/lambda/kinesis_nutrition_batch.json`, the shape Kinesis Data Streams
//! for DynamoDB delivers): outbox events are applied, other records skipped, and the
//! first record that fails is reported in `batchItemFailures`, with the records after it
//! left for Lambda's retry; and the stream consumer of the deployed shape applies every
//! record to every subscription of the stream, dead-lettering the poison record whole
//! (per subscription) and going on.

use aws_lambda_events::event::kinesis::KinesisEvent;
use events_schema::Context;
use infra::dlq::{DeadLetter, DeadLetterQueue};
use infra::table::Table;
use infra::{Store, StoreError};
use projectors::dashboard::{DashboardFromNutrition, DashboardRows};
use projectors::lambda::{Delivery, fan_out, fan_out_with, handle_kinesis_event};
use projectors::runtime::Handler;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use vitals_tests::commands::row_of;
use vitals_tests::pipeline;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recorded_kinesis_batch_is_applied_up_to_its_poison_record() {
    let (store, _dir) = pipeline::open();
    let store: Arc<dyn Store> = store;
    let projector = DashboardFromNutrition(DashboardRows::new(Table::new(store.clone())));
    let raw = include_str!("../fixtures/lambda/kinesis_nutrition_batch.json");
    let event: KinesisEvent = serde_json::from_str(raw).expect("an AWS Kinesis event");
    assert_eq!(event.records.len(), 5);

    let response = handle_kinesis_event(&projector, &event, "vitals-").await;
    let failures: Vec<Option<String>> = response
        .batch_item_failures
        .iter()
        .map(|f| f.item_identifier.clone())
        .collect();
    assert_eq!(
        failures,
        vec![Some(event.records[3].kinesis.sequence_number.clone())],
        "the poison record, only"
    );
    let body = serde_json::to_value(&response).expect("serializes");
    assert_eq!(
        body["batchItemFailures"][0]["itemIdentifier"],
        event.records[3].kinesis.sequence_number.as_str()
    );

    let applied = row_of(&*store, Context::Dashboard, "USER#U1", "DAILY#2026-03-01").await;
    assert_eq!(
        applied.expect("row")["nutrition"]["totals"]["calories"],
        "420"
    );
    let after_poison = row_of(&*store, Context::Dashboard, "USER#U3", "DAILY#2026-03-01").await;
    assert!(
        after_poison.is_none(),
        "records after the failure wait for the retry"
    );

    // Lambda retries from the failed record; with the poison skipped by the on-failure
    // destination, the rest applies and a repeated record changes nothing.
    let mut retry = event.clone();
    retry.records.drain(..4);
    let response = handle_kinesis_event(&projector, &retry, "vitals-").await;
    assert!(response.batch_item_failures.is_empty());
    assert!(
        row_of(&*store, Context::Dashboard, "USER#U3", "DAILY#2026-03-01")
            .await
            .is_some()
    );
    let again = handle_kinesis_event(&projector, &event, "vitals-").await;
    assert_eq!(again.batch_item_failures.len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_consumer_dead_letters_the_poison_record_and_applies_the_rest_everywhere() {
    let (store, dead_letters, _dir) = pipeline::open_with_dead_letters();
    let handlers = pipeline::handlers(&store, &dead_letters, |s| s.source() == Context::Nutrition);
    assert!(handlers.len() >= 4, "every subscription of nutrition");
    let raw = include_str!("../fixtures/lambda/kinesis_nutrition_batch.json");
    let event: KinesisEvent = serde_json::from_str(raw).expect("an AWS Kinesis event");

    let (response, metrics) = projectors::lambda::fan_out_measured(
        &handlers,
        Context::Nutrition,
        &event,
        "vitals-",
        &Default::default(),
    )
    .await;
    assert!(
        response.batch_item_failures.is_empty(),
        "a poison record is dead-lettered, not retried by Lambda"
    );
    // The batch's metrics: one EMF document per subscription, with what it did.
    assert_eq!(metrics.len(), handlers.len());
    for (document, handler) in metrics.iter().zip(&handlers) {
        let line = document.to_string();
        assert!(!line.contains('\n'), "one line");
        assert_is_emf(&serde_json::from_str(&line).expect("JSON"));
        let name = handler.projector().name();
        assert_eq!(document["subscription"], name);
        let consumes_meals = handler.projector().consumes().contains(&"MealLogged");
        assert_eq!(
            document["vitals_projector_dead_lettered_total"],
            u64::from(consumes_meals),
            "{name}: the poison, once: {document}"
        );
        assert_eq!(
            document["vitals_projector_events_processed_total"].as_u64(),
            Some(
                handler
                    .metrics()
                    .processed
                    .load(std::sync::atomic::Ordering::Relaxed)
            ),
            "{document}"
        );
        assert!(
            document["vitals_projector_lag_milliseconds"].as_u64() > Some(0),
            "the age of the newest record applied: {document}"
        );
    }
    let projected = [
        (
            Context::Dashboard,
            "DAILY#2026-03-01",
            "day is projected, before and after the poison",
        ),
        (
            Context::Activity,
            "INTAKE#2026-03-01",
            "intake reaches the activity table too",
        ),
    ];
    for user in ["U1", "U3"] {
        let pk = format!("USER#{user}");
        for (table, sk, what) in projected {
            let row = row_of(&*store, table, &pk, sk).await;
            assert!(row.is_some(), "{user}'s {what}");
        }
    }
    for handler in &handlers {
        let name = handler.projector().name();
        let letters = pipeline::letters_of(&dead_letters, handler).await;
        let poison = letters.iter().filter(|l| l.record.pk == "USER#U2").count();
        if handler.projector().consumes().contains(&"MealLogged") {
            assert_eq!(poison, 1, "{name} keeps the poison record as a dead letter");
        }
        assert_eq!(letters.len(), poison, "{name}: nothing else dead-lettered");
    }
}

/// A dead-letter queue whose first put fails, as if its store were briefly down.
struct RefusesFirstPut {
    inner: Arc<dyn DeadLetterQueue>,
    refused: AtomicBool,
}

#[async_trait::async_trait]
impl DeadLetterQueue for RefusesFirstPut {
    async fn put(&self, letter: &DeadLetter) -> Result<(), StoreError> {
        if !self.refused.swap(true, Ordering::SeqCst) {
            return Err(StoreError::Backend("refused once by the test".into()));
        }
        self.inner.put(letter).await
    }
    async fn list(&self, subscription: &str, limit: usize) -> Result<Vec<DeadLetter>, StoreError> {
        self.inner.list(subscription, limit).await
    }
    async fn remove(&self, subscription: &str, id: &str) -> Result<(), StoreError> {
        self.inner.remove(subscription, id).await
    }
    async fn depth(&self, subscription: &str) -> Result<usize, StoreError> {
        self.inner.depth(subscription).await
    }
    async fn remove_about(&self, subscription: &str, pk: &str) -> Result<u64, StoreError> {
        self.inner.remove_about(subscription, pk).await
    }
    async fn count_about(&self, subscription: &str, pk: &str) -> Result<u64, StoreError> {
        self.inner.count_about(subscription, pk).await
    }
}

/// When one subscription cannot write its dead letter, Lambda retries the batch from
/// that record for every subscription of the stream: those that had dead-lettered it
/// already keep one letter, not two.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_retried_for_one_subscription_leaves_one_letter_in_each() {
    let (store, dead_letters, _dir) = pipeline::open_with_dead_letters();
    let mut handlers =
        pipeline::handlers(&store, &dead_letters, |s| s.source() == Context::Nutrition);
    let consumes_meals = |h: &Handler| h.projector().consumes().contains(&"MealLogged");
    let last = handlers
        .iter()
        .rposition(consumes_meals)
        .expect("a subscription to meals");
    assert!(
        handlers[..last].iter().any(consumes_meals),
        "another one before it"
    );
    let projector = handlers[last].projector().clone();
    let refusing = RefusesFirstPut {
        inner: dead_letters.queue_for(projector.target()),
        refused: AtomicBool::new(false),
    };
    handlers[last] = Handler::new(projector, Arc::new(refusing));
    let raw = include_str!("../fixtures/lambda/kinesis_nutrition_batch.json");
    let event: KinesisEvent = serde_json::from_str(raw).expect("an AWS Kinesis event");

    let poison = event.records[3].kinesis.sequence_number.clone();
    let response = fan_out(&handlers, Context::Nutrition, &event, "vitals-").await;
    let failed: Vec<_> = response
        .batch_item_failures
        .iter()
        .map(|f| f.item_identifier.clone())
        .collect();
    assert_eq!(failed, vec![Some(poison)], "reported for Lambda's retry");

    let mut retry = event.clone();
    retry.records.drain(..3);
    let response = fan_out(&handlers, Context::Nutrition, &retry, "vitals-").await;
    assert!(response.batch_item_failures.is_empty());
    for handler in handlers.iter().filter(|h| consumes_meals(h)) {
        let letters = pipeline::letters_of(&dead_letters, handler).await;
        let about_poison = letters.iter().filter(|l| l.record.pk == "USER#U2").count();
        let name = handler.projector().name();
        assert_eq!(about_poison, 1, "{name}: {letters:?}");
    }
}

/// A change of a Vitals table whose outbox item does not decode is not dropped: every
/// subscription of the stream keeps it as a dead letter (at its position, with why),
/// and the rest of the batch applies.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_undecodable_event_record_is_dead_lettered_by_every_subscription() {
    let (store, dead_letters, _dir) = pipeline::open_with_dead_letters();
    let handlers = pipeline::handlers(&store, &dead_letters, |s| s.source() == Context::Nutrition);
    let raw = include_str!("../fixtures/lambda/kinesis_nutrition_batch.json");
    let mut event: KinesisEvent = serde_json::from_str(raw).expect("an AWS Kinesis event");
    // The first record's keys, with a partition key that is a number, not a string.
    let broken = br#"{"tableName":"vitals-nutrition","dynamodb":{"Keys":{"pk":{"N":"1"},"sk":{"S":"EVT#E1"}}}}"#;
    *event.records[0].kinesis.data = broken.to_vec();
    let position = event.records[0].kinesis.sequence_number.clone();

    let response = fan_out(&handlers, Context::Nutrition, &event, "vitals-").await;
    assert!(response.batch_item_failures.is_empty());
    for handler in &handlers {
        let letters = pipeline::letters_of(&dead_letters, handler).await;
        let broken: Vec<_> = letters
            .iter()
            .filter(|l| l.record.position == position)
            .collect();
        let name = handler.projector().name();
        assert_eq!(broken.len(), 1, "{name}: {letters:?}");
        assert!(
            broken[0].error.contains("does not decode"),
            "{name}: {letters:?}"
        );
    }
    let after = row_of(&*store, Context::Dashboard, "USER#U3", "DAILY#2026-03-01").await;
    assert!(after.is_some(), "the rest of the batch applies");
}

/// Checks a document against the Embedded Metric Format specification: an `_aws`
/// member with an integer `Timestamp` and `CloudWatchMetrics` directives, each naming a
/// namespace, dimension sets of at most 30 dimensions that are string members of the
/// root, and metrics (a name of 1 to 255 characters, a CloudWatch unit) that are number
/// members of the root.
fn assert_is_emf(document: &serde_json::Value) {
    const UNITS: [&str; 27] = [
        "Seconds",
        "Microseconds",
        "Milliseconds",
        "Bytes",
        "Kilobytes",
        "Megabytes",
        "Gigabytes",
        "Terabytes",
        "Bits",
        "Kilobits",
        "Megabits",
        "Gigabits",
        "Terabits",
        "Percent",
        "Count",
        "Bytes/Second",
        "Kilobytes/Second",
        "Megabytes/Second",
        "Gigabytes/Second",
        "Terabytes/Second",
        "Bits/Second",
        "Kilobits/Second",
        "Megabits/Second",
        "Gigabits/Second",
        "Terabits/Second",
        "Count/Second",
        "None",
    ];
    let aws = &document["_aws"];
    assert!(aws["Timestamp"].is_i64(), "Timestamp: {document}");
    let directives = aws["CloudWatchMetrics"]
        .as_array()
        .expect("CloudWatchMetrics");
    assert!(!directives.is_empty(), "{document}");
    for directive in directives {
        let namespace = directive["Namespace"].as_str().expect("Namespace");
        assert!(
            !namespace.is_empty() && namespace.len() <= 255,
            "{document}"
        );
        for set in directive["Dimensions"].as_array().expect("Dimensions") {
            let set = set.as_array().expect("a dimension set");
            assert!(set.len() <= 30, "{document}");
            for dimension in set {
                let name = dimension.as_str().expect("a dimension name");
                assert!(document[name].is_string(), "dimension {name}: {document}");
            }
        }
        let metrics = directive["Metrics"].as_array().expect("Metrics");
        assert!(!metrics.is_empty() && metrics.len() <= 100, "{document}");
        for metric in metrics {
            let name = metric["Name"].as_str().expect("Name");
            assert!(!name.is_empty() && name.len() <= 255, "{document}");
            if let Some(unit) = metric.get("Unit") {
                assert!(UNITS.contains(&unit.as_str().unwrap_or("")), "unit {unit}");
            }
            assert!(document[name].is_number(), "metric {name}: {document}");
        }
    }
}

/// A subscription that records the order it is given meals in, letting other tasks run
/// between a record's start and its end (as a store request would).
struct RecordsOrder {
    seen: std::sync::Mutex<Vec<(Option<String>, String)>>,
    fails_on: Option<String>,
    /// Records begun and not yet ended, and the most there ever were.
    in_flight: std::sync::atomic::AtomicUsize,
    most_in_flight: std::sync::atomic::AtomicUsize,
}

impl RecordsOrder {
    fn new(fails_on: Option<String>) -> Self {
        Self {
            seen: std::sync::Mutex::new(Vec::new()),
            fails_on,
            in_flight: Default::default(),
            most_in_flight: Default::default(),
        }
    }

    fn seen(&self) -> Vec<(Option<String>, String)> {
        self.seen.lock().map(|s| s.clone()).unwrap_or_default()
    }
}

#[async_trait::async_trait]
impl projectors::Projector for RecordsOrder {
    fn subscription(&self) -> projectors::projector::Subscription {
        projectors::projector::Subscription {
            name: "records-order",
            source: Context::Nutrition,
            target: Context::Dashboard,
            consumes: &["MealLogged"],
            writes: &[],
        }
    }

    async fn apply(
        &self,
        event: &events_schema::envelope::EventEnvelope,
    ) -> Result<(), projectors::projector::ProjectionError> {
        let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        self.most_in_flight.fetch_max(now, Ordering::SeqCst);
        for _ in 0..3 {
            tokio::task::yield_now().await;
        }
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
        if self.fails_on.as_deref() == Some(event.event_id.to_string().as_str()) {
            return Err(projectors::projector::ProjectionError::Rejected(
                "failed by the test".into(),
            ));
        }
        if let Ok(mut seen) = self.seen.lock() {
            seen.push((
                event.user_id.as_ref().map(ToString::to_string),
                event.event_id.to_string(),
            ));
        }
        Ok(())
    }
}

/// A dead-letter queue that cannot be written, as if its table were down.
struct Unwritable;

#[async_trait::async_trait]
impl DeadLetterQueue for Unwritable {
    async fn put(&self, _: &DeadLetter) -> Result<(), StoreError> {
        Err(StoreError::Backend(
            "the dead letters' table is down".into(),
        ))
    }
    async fn list(&self, _: &str, _: usize) -> Result<Vec<DeadLetter>, StoreError> {
        Ok(Vec::new())
    }
    async fn remove(&self, _: &str, _: &str) -> Result<(), StoreError> {
        Ok(())
    }
    async fn depth(&self, _: &str) -> Result<usize, StoreError> {
        Ok(0)
    }
    async fn remove_about(&self, _: &str, _: &str) -> Result<u64, StoreError> {
        Ok(0)
    }
    async fn count_about(&self, _: &str, _: &str) -> Result<u64, StoreError> {
        Ok(0)
    }
}

/// Eight users' three meals each, as one batch of the nutrition stream, with each
/// record's (user, event id) in batch order.
async fn eight_users_batch() -> (
    KinesisEvent,
    Vec<(Option<String>, String)>,
    tempfile::TempDir,
) {
    let (store, dir) = pipeline::open();
    let changes = vitals_tests::kinesis_batches::logged_meals(&store, 8, 3)
        .await
        .expect("meals logged");
    let order = changes
        .iter()
        .map(|c| {
            let event = c.envelope().expect("an event").expect("decodes");
            (
                event.user_id.as_ref().map(ToString::to_string),
                event.event_id.to_string(),
            )
        })
        .collect();
    (batch_of(&changes), order, dir)
}

/// `changes` as one batch of their stream, in order.
fn batch_of(changes: &[infra::feed::FeedRecord]) -> KinesisEvent {
    let records = changes
        .iter()
        .enumerate()
        .map(|(n, c)| {
            vitals_tests::kinesis_batches::record_of(c, "vitals-", n as u64 + 1, 1.0e9)
                .expect("a record")
        })
        .collect();
    vitals_tests::kinesis_batches::batch(records)
}

fn of_user<'a>(order: &'a [(Option<String>, String)], user: &'a Option<String>) -> Vec<&'a String> {
    order
        .iter()
        .filter(|(u, _)| u == user)
        .map(|(_, id)| id)
        .collect()
}

/// Different users' records are applied concurrently (as many users at once as the
/// delivery allows), each user's in the batch's order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_applies_users_concurrently_each_in_order() {
    let (event, order, _dir) = eight_users_batch().await;
    assert_eq!(order.len(), 24);
    for concurrency in [1, 4, 8] {
        let recorder = Arc::new(RecordsOrder::new(None));
        let handlers = [Handler::new(recorder.clone(), Arc::new(Unwritable))];
        let delivery = Delivery {
            concurrency,
            ..Default::default()
        };
        let response =
            fan_out_with(&handlers, Context::Nutrition, &event, "vitals-", &delivery).await;
        assert!(response.batch_item_failures.is_empty(), "{response:?}");
        let seen = recorder.seen();
        assert_eq!(seen.len(), order.len(), "every record applied once");
        for (user, _) in &order {
            assert_eq!(
                of_user(&seen, user),
                of_user(&order, user),
                "{user:?}'s order"
            );
        }
        assert_eq!(
            recorder.most_in_flight.load(Ordering::SeqCst),
            concurrency,
            "{concurrency} users at once"
        );
    }
}

/// A record that can be neither applied nor dead-lettered stops its user's later records
/// (not other users'), and is the one reported, for Lambda to deliver the batch again
/// from it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_earliest_record_not_applied_is_reported_and_its_users_later_ones_wait() {
    let (event, order, _dir) = eight_users_batch().await;
    // The second user's second meal: the 10th record of the batch (8 users a round).
    let (failing_user, failing) = order[9].clone();
    let recorder = Arc::new(RecordsOrder::new(Some(failing.clone())));
    let handlers = [Handler::new(recorder.clone(), Arc::new(Unwritable))];
    let response = fan_out_with(
        &handlers,
        Context::Nutrition,
        &event,
        "vitals-",
        &Delivery::default(),
    )
    .await;
    let reported: Vec<_> = response
        .batch_item_failures
        .iter()
        .map(|f| f.item_identifier.clone())
        .collect();
    assert_eq!(
        reported,
        vec![Some(event.records[9].kinesis.sequence_number.clone())]
    );
    let seen = recorder.seen();
    assert_eq!(
        of_user(&seen, &failing_user),
        of_user(&order, &failing_user)[..1].to_vec(),
        "nothing of that user's after the failure"
    );
    assert_eq!(seen.len(), order.len() - 2, "every other record applied");
}

/// Past the deadline (less its margin) no record is begun: the first is reported, and
/// Lambda delivers the whole batch again rather than losing it to a timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_begun_past_its_deadline_is_handed_back_whole() {
    let (event, _, _dir) = eight_users_batch().await;
    let recorder = Arc::new(RecordsOrder::new(None));
    let handlers = [Handler::new(recorder.clone(), Arc::new(Unwritable))];
    let delivery = Delivery {
        deadline: Some(std::time::Instant::now() + std::time::Duration::from_secs(5)),
        margin: std::time::Duration::from_secs(60),
        ..Default::default()
    };
    let response = fan_out_with(&handlers, Context::Nutrition, &event, "vitals-", &delivery).await;
    let reported: Vec<_> = response
        .batch_item_failures
        .iter()
        .map(|f| f.item_identifier.clone())
        .collect();
    assert_eq!(
        reported,
        vec![Some(event.records[0].kinesis.sequence_number.clone())]
    );
    assert!(recorder.seen().is_empty());
}

/// A user's several records of a batch are folded: the dashboard and insights functions
/// leave exactly the rows they leave applying the records one at a time, with each row
/// written once (not once per meal: the day's summary and the window mark are rewritten
/// by every meal one at a time) and fewer reads (the tombstone read once per user, not
/// twice per record).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_users_records_of_a_batch_are_folded_into_one_write_a_row() {
    use infra::counting::CountingStore;
    let (source, _source_dir) = pipeline::open();
    let changes = vitals_tests::kinesis_batches::logged_meals(&source, 3, 10)
        .await
        .expect("meals logged");
    let event = batch_of(&changes);
    for target in [Context::Dashboard, Context::Insights] {
        let mut outcomes = Vec::new();
        for fold in [false, true] {
            let (store, _dir) = pipeline::open();
            let counting = Arc::new(CountingStore::new(store.clone()));
            let shared: Arc<dyn Store> = counting.clone();
            let handlers: Vec<Handler> =
                projectors::registry::projector_handlers(shared.clone(), target)
                    .into_iter()
                    .filter(|h| h.projector().source() == Context::Nutrition)
                    .collect();
            let folding =
                projectors::fold::Folding::new(shared, events_schema::time::Clock::System);
            let delivery = Delivery {
                fold: fold.then(|| folding.clone()),
                ..Default::default()
            };
            let response =
                fan_out_with(&handlers, Context::Nutrition, &event, "vitals-", &delivery).await;
            assert!(response.batch_item_failures.is_empty(), "{response:?}");
            let applied: u64 = handlers
                .iter()
                .map(|h| h.metrics().processed.load(Ordering::Relaxed))
                .sum();
            let counts = counting.take();
            let tally = folding.tally();
            outcomes.push((
                vitals_tests::snapshot::snapshot(&*store).await,
                counts.writes(),
                counts.reads(),
                applied,
                tally.applied.load(Ordering::Relaxed),
            ));
        }
        let (unfolded, folded) = (&outcomes[0], &outcomes[1]);
        assert_eq!(folded.0, unfolded.0, "{target}: the same rows either way");
        assert_eq!(
            folded.3, unfolded.3,
            "{target}: every record counted as applied"
        );
        assert_eq!(folded.4, 3, "{target}: the three users of ten meals folded");
        assert_eq!(unfolded.4, 0);
        assert_eq!(
            folded.1,
            folded.0.len(),
            "{target}: one write a row ({} one at a time)",
            unfolded.1
        );
        assert!(
            folded.1 < unfolded.1,
            "{target}: {} writes against {}",
            folded.1,
            unfolded.1
        );
        assert!(
            folded.2 < unfolded.2,
            "{target}: folded reads {} against {}",
            folded.2,
            unfolded.2
        );
    }
}

/// A subscription that waits (up to a deadline) for its partner to be applying the
/// same record: the two meet only if a record's subscriptions are applied at once.
struct Meets {
    name: &'static str,
    partner: Arc<tokio::sync::Barrier>,
}

#[async_trait::async_trait]
impl projectors::Projector for Meets {
    fn subscription(&self) -> projectors::projector::Subscription {
        projectors::projector::Subscription {
            name: self.name,
            source: Context::Nutrition,
            target: Context::Dashboard,
            consumes: &["MealLogged"],
            writes: &[],
        }
    }

    async fn apply(
        &self,
        _: &events_schema::envelope::EventEnvelope,
    ) -> Result<(), projectors::projector::ProjectionError> {
        let deadline = std::time::Duration::from_secs(20);
        tokio::time::timeout(deadline, self.partner.wait())
            .await
            .map(drop)
            .map_err(|_| projectors::projector::ProjectionError::Rejected("applied alone".into()))
    }
}

/// A record's subscriptions are applied at once, not one after another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_records_subscriptions_are_applied_at_once() {
    let (event, _order, _dir) = eight_users_batch().await;
    let partner = Arc::new(tokio::sync::Barrier::new(2));
    let handlers: Vec<Handler> = ["meets-a", "meets-b"]
        .into_iter()
        .map(|name| {
            let meets = Arc::new(Meets {
                name,
                partner: partner.clone(),
            });
            Handler::new(meets, Arc::new(Unwritable))
        })
        .collect();
    let one_user_at_a_time = Delivery {
        concurrency: 1,
        ..Default::default()
    };
    let response = fan_out_with(
        &handlers,
        Context::Nutrition,
        &event,
        "vitals-",
        &one_user_at_a_time,
    )
    .await;
    assert!(
        response.batch_item_failures.is_empty(),
        "a subscription was applied alone: {response:?}"
    );
    for handler in &handlers {
        assert_eq!(handler.metrics().processed.load(Ordering::Relaxed), 24);
    }
}
