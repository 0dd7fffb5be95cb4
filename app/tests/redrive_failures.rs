//! `vitals redrive-failures` on the emulator named by `VITALS_TEST_DYNAMODB_ENDPOINT`:
//! a projector function's on-failure queue holds what Lambda puts there (a description of
//! the failed batch: shard and sequence range, not the records). The redrive fetches the
//! records back from Kinesis and applies them through the projector's code: its
//! subscriptions on the stream project them, the poison record is dead-lettered, the
//! message goes; a batch the stream no longer holds is reported and kept, and a message
//! that is no batch description is left alone rather than stopping the redrive.
//!
//! A pass reads the whole queue once and ends (issue 35, defect 9): a short poll's empty
//! answer is not the end of the queue, a message that reappears (its visibility timeout
//! outlasted by a long pass) is not handled again, and a shard read while it stays
//! behind is read at most five times a second and given up after a bounded number of
//! pages.

mod support;

use aws_sdk_kinesis::primitives::Blob;
use events_schema::Context;
use infra::Store;
use infra::dynamodb::DynamoStore;
use infra::store::Key;
use serde_json::{Value, json};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use support::Case;
use support::aws_local::Tables;
use vitals::admin::{
    FailureClients, FailuresRedriven, failure_queue, redrive_failures, redrive_failures_with,
};
use vitals_tests::sqs_polls::SqsPolls;

/// The recorded batch (`tests/fixtures/lambda/kinesis_nutrition_batch.json`: three meal
/// events, a state item, another application's record, the second event a poison),
/// its records' data rewritten for the tables under `prefix`.
fn recorded_changes(prefix: &str) -> Vec<(String, Vec<u8>)> {
    let raw = include_str!("../../tests/fixtures/lambda/kinesis_nutrition_batch.json");
    let event: Value = serde_json::from_str(raw).expect("the fixture");
    event["Records"]
        .as_array()
        .expect("records")
        .iter()
        .map(|record| {
            let data = record["kinesis"]["data"].as_str().expect("data");
            let data = base64_decode(data);
            let mut change: Value = serde_json::from_slice(&data).expect("a stream record");
            if change["tableName"] == "vitals-nutrition" {
                change["tableName"] = json!(format!("{prefix}nutrition"));
            }
            let pk = change["dynamodb"]["Keys"]["pk"]["S"]
                .as_str()
                .unwrap_or("x")
                .to_owned();
            (pk, serde_json::to_vec(&change).expect("json"))
        })
        .collect()
}

fn base64_decode(text: &str) -> Vec<u8> {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .expect("base64")
}

/// Lambda's on-failure message for the batch `start..=end` of `shard`.
fn on_failure_message(stream_arn: &str, shard: &str, start: &str, end: &str) -> String {
    json!({
        "requestContext": {"requestId": "r-1", "functionArn": "arn:aws:lambda:us-east-1:000000000000:function:vitals-nutrition-consumer",
            "condition": "RetryAttemptsExhausted", "approximateInvokeCount": 6},
        "responseContext": {"statusCode": 200, "executedVersion": "$LATEST", "functionError": "Unhandled"},
        "version": "1.0", "timestamp": "2026-03-01T08:00:00.000Z",
        "KinesisBatchInfo": {"shardId": shard, "startSequenceNumber": start, "endSequenceNumber": end,
            "approximateArrivalOfFirstRecord": "2026-03-01T07:59:58.835Z",
            "approximateArrivalOfLastRecord": "2026-03-01T07:59:59.580Z",
            "batchSize": 5, "streamArn": stream_arn}
    })
    .to_string()
}

async fn stream_arn_when_active(kinesis: &aws_sdk_kinesis::Client, name: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let summary = kinesis
            .describe_stream_summary()
            .stream_name(name)
            .send()
            .await
            .expect("stream");
        let summary = summary.stream_description_summary().expect("summary");
        if summary.stream_status() == &aws_sdk_kinesis::types::StreamStatus::Active {
            return summary.stream_arn().to_owned();
        }
        assert!(Instant::now() < deadline, "{name} did not become active");
        // Creation is asynchronous and has no notification: ask again shortly.
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// A failed batch of the nutrition stream on its way back: the records are put on the
/// stream, Lambda's message about them (and two that cannot be redriven) on the
/// consumer's on-failure queue; the redrive applies them; named cases, in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_batch_is_fetched_back_from_kinesis_and_applied_by_every_subscription() {
    let setup = a_stream_and_its_failure_queue().await;
    lambdas_failure_messages_are_queued(&setup).await;
    the_redrive_applies_the_batch_it_can_fetch_back(&setup).await;
    the_projectors_subscriptions_project_the_batch(&setup).await;
    a_poisoned_record_is_dead_lettered(&setup).await;
    only_the_redriven_message_leaves_the_queue(&setup).await;
}

/// The test's tables, the nutrition stream and the consumer's on-failure queue on the
/// emulator.
struct Setup {
    tables: Tables,
    store: Arc<dyn Store>,
    kinesis: aws_sdk_kinesis::Client,
    sqs: aws_sdk_sqs::Client,
    stream: String,
    stream_arn: String,
    queue: String,
}

/// Tables of a prefix of their own, the nutrition stream (active) and its consumer's
/// on-failure queue.
async fn a_stream_and_its_failure_queue() -> Setup {
    let _case = Case("a stream and its on-failure queue");
    let tables = Tables::new("f");
    let settings = tables.settings();
    let store = DynamoStore::connect(&settings, &tables.prefix).await;
    store.bootstrap().await.expect("tables");
    let config = infra::aws_client::load(&settings).await;
    let kinesis = infra::aws_client::kinesis(&config);
    let sqs = infra::aws_client::sqs(&config);
    let stream = format!("{}nutrition-changes", tables.prefix);
    kinesis
        .create_stream()
        .stream_name(&stream)
        .shard_count(1)
        .send()
        .await
        .expect("stream created");
    let stream_arn = stream_arn_when_active(&kinesis, &stream).await;
    let queue = sqs
        .create_queue()
        .queue_name(failure_queue(&tables.prefix, Context::Dashboard))
        .send()
        .await
        .expect("queue")
        .queue_url
        .expect("url");
    Setup {
        tables,
        store: Arc::new(store),
        kinesis,
        sqs,
        stream,
        stream_arn,
        queue,
    }
}

/// The recorded batch is put on the stream; on the queue, Lambda's message about it, a
/// message that is no batch description, and one about a shard the stream never had.
async fn lambdas_failure_messages_are_queued(setup: &Setup) {
    let _case = Case("lambda's failure messages are queued");
    let (kinesis, stream) = (&setup.kinesis, &setup.stream);
    let mut sequences = Vec::new();
    let mut shard = String::new();
    for (pk, data) in recorded_changes(&setup.tables.prefix) {
        let put = kinesis
            .put_record()
            .stream_name(stream)
            .partition_key(pk)
            .data(Blob::new(data))
            .send()
            .await
            .expect("record put");
        shard = put.shard_id().to_owned();
        sequences.push(put.sequence_number().to_owned());
    }
    let (first, last) = (sequences[0].clone(), sequences[sequences.len() - 1].clone());
    let stream_arn = &setup.stream_arn;
    for body in [
        on_failure_message(stream_arn, &shard, &first, &last),
        "{\"subscription\": \"not a batch description\"}".to_owned(),
        on_failure_message(stream_arn, "shardId-000000000099", &first, &last),
    ] {
        setup
            .sqs
            .send_message()
            .queue_url(&setup.queue)
            .message_body(body)
            .send()
            .await
            .expect("message sent");
    }
}

/// The redrive applies the one batch the stream still holds, counts the unreadable
/// message and reports the expired one.
async fn the_redrive_applies_the_batch_it_can_fetch_back(setup: &Setup) {
    let _case = Case("the redrive applies the batch it can fetch back");
    let aws = setup.tables.aws_args();
    let outcome = redrive_failures(&aws, Context::Dashboard)
        .await
        .expect("redrive");
    assert_eq!(outcome.batches, 1, "{outcome:?}");
    assert_eq!(outcome.unreadable, 1, "{outcome:?}");
    assert_eq!(outcome.expired.len(), 1, "{outcome:?}");
    assert!(
        outcome.expired[0].starts_with("shardId-000000000099"),
        "{outcome:?}"
    );
    assert_eq!(
        outcome.records, 4,
        "the batch's records of the nutrition table: {outcome:?}"
    );
}

/// The dashboard projector's subscription on the stream projected the healthy users'
/// meals; the other projectors' subscriptions did not (their failures are their own
/// queues').
async fn the_projectors_subscriptions_project_the_batch(setup: &Setup) {
    let _case = Case("the projector's subscriptions project the batch");
    let store = &setup.store;
    // A row of `user`'s partition, read consistently.
    let row = |table: Context, user: &str, sk: &str| {
        let (store, key) = (store.clone(), Key::new(format!("USER#{user}"), sk));
        async move { store.get(table, &key, true).await.expect("get") }
    };
    for user in ["U1", "U3"] {
        let daily = row(Context::Dashboard, user, "DAILY#2026-03-01").await;
        assert!(daily.is_some(), "{user}'s day is projected by the redrive");
        let intake = row(Context::Activity, user, "INTAKE#2026-03-01").await;
        assert!(
            intake.is_none(),
            "the activity projector's subscription is not the dashboard projector's to apply"
        );
    }
}

/// The poison record is a dead letter of the subscription it failed.
async fn a_poisoned_record_is_dead_lettered(setup: &Setup) {
    let _case = Case("a poisoned record is dead-lettered");
    let letters = infra::dlq::TableDlq::new(setup.store.clone(), Context::Dashboard);
    let letters = infra::dlq::DeadLetterQueue::list(&letters, "dashboard-from-nutrition", 10)
        .await
        .expect("letters");
    assert_eq!(letters.len(), 1, "the poison record is a dead letter");
    assert_eq!(letters[0].record.pk, "USER#U2");
}

/// The unreadable and the expired messages stay on the queue; the redriven one is gone.
async fn only_the_redriven_message_leaves_the_queue(setup: &Setup) {
    let _case = Case("only the redriven message leaves the queue");
    let attributes = setup
        .sqs
        .get_queue_attributes()
        .queue_url(&setup.queue)
        .attribute_names(aws_sdk_sqs::types::QueueAttributeName::ApproximateNumberOfMessages)
        .attribute_names(
            aws_sdk_sqs::types::QueueAttributeName::ApproximateNumberOfMessagesNotVisible,
        )
        .send()
        .await
        .expect("attributes");
    let count = |name| {
        attributes
            .attributes()
            .and_then(|a| a.get(&name))
            .and_then(|v| v.parse::<u32>().ok())
            .unwrap_or_default()
    };
    let left = count(aws_sdk_sqs::types::QueueAttributeName::ApproximateNumberOfMessages)
        + count(aws_sdk_sqs::types::QueueAttributeName::ApproximateNumberOfMessagesNotVisible);
    assert_eq!(
        left, 2,
        "the unreadable and the expired messages stay; the redriven one is gone"
    );
}

/// The redrive's clients for `setup`, its SQS client intercepted by `sqs`.
async fn clients_with(setup: &Setup, sqs: SqsPolls) -> FailureClients {
    let config = infra::aws_client::load(&setup.tables.settings()).await;
    let sqs = aws_sdk_sqs::config::Builder::from(&config)
        .interceptor(sqs)
        .build();
    FailureClients {
        store: setup.store.clone(),
        sqs: aws_sdk_sqs::Client::from_conf(sqs),
        kinesis: setup.kinesis.clone(),
        table_prefix: setup.tables.prefix.clone(),
    }
}

/// A pass of the redrive through `sqs`, over the queue [`lambdas_failure_messages_are_queued`]
/// fills; it must end within a generous time.
async fn one_pass(sqs: SqsPolls) -> (FailuresRedriven, usize) {
    let setup = a_stream_and_its_failure_queue().await;
    lambdas_failure_messages_are_queued(&setup).await;
    let clients = clients_with(&setup, sqs.clone()).await;
    let pass = redrive_failures_with(&clients, Context::Dashboard);
    let outcome = tokio::time::timeout(Duration::from_secs(30), pass).await;
    let receives = sqs.receives.load(Ordering::SeqCst);
    let outcome = outcome
        .unwrap_or_else(|_| panic!("the pass did not end in 30 s ({receives} receives)"))
        .expect("redrive");
    (outcome, receives)
}

/// Every message was handled, once: the batch applied, the unreadable and the expired
/// one counted.
fn assert_each_message_handled_once(outcome: &FailuresRedriven) {
    assert_eq!(outcome.batches, 1, "{outcome:?}");
    assert_eq!(outcome.records, 4, "{outcome:?}");
    assert_eq!(outcome.unreadable, 1, "{outcome:?}");
    assert_eq!(outcome.expired.len(), 1, "{outcome:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_short_polls_empty_answer_does_not_end_the_pass() {
    let (outcome, receives) = one_pass(SqsPolls::missing_the_first_short_poll()).await;
    eprintln!("{receives} receives: {outcome:?}");
    assert_each_message_handled_once(&outcome);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_that_reappear_are_handled_once_and_the_pass_ends() {
    let (outcome, receives) = one_pass(SqsPolls::reappearing_at_once()).await;
    eprintln!("{receives} receives: {outcome:?}");
    assert_each_message_handled_once(&outcome);
}

/// Kinesis answering every `GetRecords` of a client with no record, still behind the
/// tip of the shard (as a read far behind may be, page after page); the instant of each
/// call.
#[derive(Debug, Clone, Default)]
struct AlwaysBehind {
    iterator: Arc<Mutex<Option<String>>>,
    calls: Arc<Mutex<Vec<Instant>>>,
}

impl aws_sdk_kinesis::config::Intercept for AlwaysBehind {
    fn name(&self) -> &'static str {
        "AlwaysBehind"
    }

    fn modify_before_signing(
        &self,
        context: &mut aws_sdk_kinesis::config::interceptors::BeforeTransmitInterceptorContextMut<
            '_,
        >,
        _components: &aws_sdk_kinesis::config::RuntimeComponents,
        _cfg: &mut aws_sdk_kinesis::config::ConfigBag,
    ) -> Result<(), aws_sdk_kinesis::error::BoxError> {
        let request = context.request_mut();
        let target = request.headers().get("x-amz-target").unwrap_or_default();
        if target.ends_with(".GetRecords") {
            let body: Value = request
                .body()
                .bytes()
                .and_then(|b| serde_json::from_slice(b).ok())
                .unwrap_or_default();
            let iterator = body["ShardIterator"].as_str().map(str::to_owned);
            *self.iterator.lock().expect("iterator") = iterator;
            self.calls.lock().expect("calls").push(Instant::now());
        }
        Ok(())
    }

    fn modify_before_deserialization(
        &self,
        context: &mut aws_sdk_kinesis::config::interceptors::BeforeDeserializationInterceptorContextMut<'_>,
        _components: &aws_sdk_kinesis::config::RuntimeComponents,
        _cfg: &mut aws_sdk_kinesis::config::ConfigBag,
    ) -> Result<(), aws_sdk_kinesis::error::BoxError> {
        if let Some(iterator) = self.iterator.lock().expect("iterator").take() {
            let behind = json!({
                "Records": [],
                "MillisBehindLatest": 3_600_000,
                "NextShardIterator": iterator,
            });
            *context.response_mut().body_mut() = behind.to_string().into();
        }
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shard_read_while_behind_is_paced_and_given_up() {
    let setup = a_stream_and_its_failure_queue().await;
    let put = setup
        .kinesis
        .put_record()
        .stream_name(&setup.stream)
        .partition_key("USER#U1")
        .data(Blob::new(b"{}".to_vec()))
        .send()
        .await
        .expect("record put");
    let body = on_failure_message(
        &setup.stream_arn,
        put.shard_id(),
        put.sequence_number(),
        put.sequence_number(),
    );
    let batch = infra::feed::failures::parse(&body).expect("a batch");
    let behind = AlwaysBehind::default();
    let config = infra::aws_client::load(&setup.tables.settings()).await;
    let kinesis = aws_sdk_kinesis::config::Builder::from(&config)
        .interceptor(behind.clone())
        .build();
    let kinesis = aws_sdk_kinesis::Client::from_conf(kinesis);
    let fetch = infra::feed::failures::fetch(&kinesis, &batch, &setup.tables.prefix);
    let fetched = tokio::time::timeout(Duration::from_secs(30), fetch).await;
    let calls = behind.calls.lock().expect("calls").clone();
    let fetched = fetched
        .unwrap_or_else(|_| panic!("the read did not end in 30 s ({} GetRecords)", calls.len()))
        .expect("fetch");
    eprintln!("{} GetRecords: {fetched:?}", calls.len());
    assert!(
        fetched.incomplete,
        "given up, not taken for the end: {fetched:?}"
    );
    assert!(!fetched.expired, "nothing says it is gone: {fetched:?}");
    assert!(fetched.records.is_empty());
    assert!(
        calls.len() <= infra::feed::failures::MAX_PAGES,
        "{} GetRecords",
        calls.len()
    );
    let shortest = calls
        .windows(2)
        .map(|pair| pair[1] - pair[0])
        .min()
        .expect("more than one call");
    assert!(
        shortest >= Duration::from_millis(200),
        "at most five reads a second per shard: {shortest:?} between two"
    );
}
