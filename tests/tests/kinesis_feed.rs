//! The Kinesis change feed against the emulator (`VITALS_TEST_DYNAMODB_ENDPOINT`,
//! required): a consumer follows the shard iterator Kinesis hands back instead of asking
//! for a new one every poll, a batch not committed is read again, progress past other
//! rows than events is kept in memory until the consumer stops, a failed read keeps the
//! iterator it was given, and a new feed resumes from the checkpoint rows.

use aws_sdk_kinesis::config::interceptors::BeforeTransmitInterceptorContextRef;
use aws_sdk_kinesis::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_sdk_kinesis::error::BoxError;
use aws_sdk_kinesis::primitives::Blob;
use aws_sdk_kinesis::types::StreamStatus;
use events_schema::Context;
use infra::Store;
use infra::aws_client::{AwsSettings, load};
use infra::counting::CountingStore;
use infra::embedded::EmbeddedStore;
use infra::feed::kinesis::{KinesisFeed, stream_name};
use infra::feed::{Batch, ChangeFeed};
use serde_json::json;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use vitals_tests::backends::dynamodb_endpoint;

const CONSUMER: &str = "dashboard-from-nutrition";

/// The Kinesis operations a client sent, by name (`GetShardIterator`, ...); the next
/// `GetRecords` fails before it is sent when `refuse_a_read` was called (as a
/// throttled read would).
#[derive(Debug, Clone, Default)]
struct Calls {
    sent: Arc<Mutex<Vec<String>>>,
    refuse_next_read: Arc<AtomicBool>,
}

impl Calls {
    fn of(&self, operation: &str) -> usize {
        let calls = self.sent.lock().expect("calls");
        calls.iter().filter(|c| *c == operation).count()
    }

    fn refuse_a_read(&self) {
        self.refuse_next_read.store(true, Ordering::SeqCst);
    }
}

impl Intercept for Calls {
    fn name(&self) -> &'static str {
        "Calls"
    }

    fn read_before_transmit(
        &self,
        context: &BeforeTransmitInterceptorContextRef<'_>,
        _components: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let target = context.request().headers().get("x-amz-target");
        let operation = target.and_then(|t| t.rsplit('.').next()).unwrap_or("?");
        if let Ok(mut calls) = self.sent.lock() {
            calls.push(operation.to_owned());
        }
        if operation == "GetRecords" && self.refuse_next_read.swap(false, Ordering::SeqCst) {
            return Err("read refused (as if throttled)".into());
        }
        Ok(())
    }
}

/// A fresh nutrition stream on the emulator, a client counting its calls, and the
/// checkpoints' store (counting its writes).
struct Stream {
    client: aws_sdk_kinesis::Client,
    calls: Calls,
    prefix: String,
    checkpoints: Arc<CountingStore>,
    _dir: tempfile::TempDir,
}

impl Stream {
    async fn new() -> Self {
        let settings = AwsSettings {
            endpoint_url: Some(dynamodb_endpoint()),
            ..AwsSettings::default()
        };
        let calls = Calls::default();
        let config = aws_sdk_kinesis::config::Builder::from(&load(&settings).await)
            .interceptor(calls.clone())
            .build();
        let client = aws_sdk_kinesis::Client::from_conf(config);
        let prefix = format!("k{}-", ulid::Ulid::new().to_string().to_lowercase());
        let name = stream_name(&prefix, Context::Nutrition);
        client
            .create_stream()
            .stream_name(&name)
            .shard_count(1)
            .send()
            .await
            .expect("stream created");
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let summary = client
                .describe_stream_summary()
                .stream_name(&name)
                .send()
                .await
                .expect("stream described");
            let status = summary
                .stream_description_summary()
                .map(|d| d.stream_status());
            if status == Some(&StreamStatus::Active) {
                break;
            }
            assert!(Instant::now() < deadline, "{name} not active: {status:?}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let dir = tempfile::tempdir().expect("temporary directory");
        let store: Arc<dyn Store> = Arc::new(EmbeddedStore::open(dir.path()).expect("opens"));
        Self {
            client,
            calls,
            prefix,
            checkpoints: Arc::new(CountingStore::new(store)),
            _dir: dir,
        }
    }

    /// A feed of the stream, as a `vitals work` process starting now holds it.
    fn feed(&self) -> KinesisFeed {
        KinesisFeed::new(
            self.client.clone(),
            &self.prefix,
            Context::Nutrition,
            self.checkpoints.clone(),
            Context::Dashboard,
        )
    }

    /// Puts a change of the nutrition table's row `sk` on the stream.
    async fn put(&self, sk: &str) {
        let keys = json!({"pk": {"S": "USER#u1"}, "sk": {"S": sk}});
        let record = json!({"tableName": format!("{}nutrition", self.prefix),
            "dynamodb": {"Keys": keys, "NewImage": keys}});
        self.client
            .put_record()
            .stream_name(stream_name(&self.prefix, Context::Nutrition))
            .partition_key("USER#u1")
            .data(Blob::new(record.to_string().into_bytes()))
            .send()
            .await
            .expect("record put");
    }

    fn checkpoint_writes(&self) -> usize {
        self.checkpoints.counts().writes()
    }
}

/// The row keys of what `feed` hands `CONSUMER` next (every row, events or not).
async fn next_rows(feed: &KinesisFeed) -> (Vec<String>, Batch) {
    let batch = feed.poll(CONSUMER, 100).await.expect("polled");
    (batch.records.iter().map(|r| r.sk.clone()).collect(), batch)
}

/// A fresh stream carrying two events, a feed of it, and its first batch (the two).
async fn two_events_read() -> (Stream, KinesisFeed, Batch) {
    let stream = Stream::new().await;
    stream.put("EVT#1").await;
    stream.put("EVT#2").await;
    let feed = stream.feed();
    let (rows, batch) = next_rows(&feed).await;
    assert_eq!(rows, ["EVT#1", "EVT#2"]);
    (stream, feed, batch)
}

#[tokio::test]
async fn a_consumer_follows_its_shard_iterator_instead_of_asking_for_one_every_poll() {
    let (stream, feed, batch) = two_events_read().await;
    feed.commit(CONSUMER, &batch).await.expect("committed");
    for _ in 0..5 {
        let (rows, batch) = next_rows(&feed).await;
        assert!(rows.is_empty(), "{rows:?}");
        feed.commit(CONSUMER, &batch).await.expect("committed");
    }
    stream.put("EVT#3").await;
    let (rows, _) = next_rows(&feed).await;
    assert_eq!(rows, ["EVT#3"], "the kept iterator reaches what came later");
    assert_eq!(
        stream.calls.of("GetShardIterator"),
        1,
        "one iterator for seven polls"
    );
    assert_eq!(stream.calls.of("GetRecords"), 7);
}

#[tokio::test]
async fn a_failed_read_keeps_the_iterator_it_was_given() {
    let (stream, feed, batch) = two_events_read().await;
    feed.commit(CONSUMER, &batch).await.expect("committed");
    let (rows, batch) = next_rows(&feed).await;
    assert!(rows.is_empty(), "{rows:?}");
    feed.commit(CONSUMER, &batch).await.expect("committed");
    // A throttled read: the poll fails, the position past the empty page stands.
    stream.calls.refuse_a_read();
    feed.poll(CONSUMER, 100)
        .await
        .expect_err("the read was refused");
    stream.put("EVT#3").await;
    let (rows, _) = next_rows(&feed).await;
    assert_eq!(rows, ["EVT#3"]);
    assert_eq!(
        stream.calls.of("GetShardIterator"),
        1,
        "the iterator kept past the empty page is read again, not one from the checkpoint"
    );
}

#[tokio::test]
async fn a_batch_not_committed_is_read_again() {
    let (stream, feed, _) = two_events_read().await;
    // Its processing failed: nothing committed, the same records again.
    let (again, batch) = next_rows(&feed).await;
    assert_eq!(again, ["EVT#1", "EVT#2"]);
    feed.commit(CONSUMER, &batch).await.expect("committed");
    stream.put("EVT#3").await;
    let (rows, _) = next_rows(&feed).await;
    assert_eq!(rows, ["EVT#3"]);
}

#[tokio::test]
async fn progress_past_other_rows_is_written_only_when_the_consumer_stops() {
    let stream = Stream::new().await;
    // Every commit past events is written at once: what is not written is held back
    // for what it is, not for the interval.
    let feed = stream.feed().checkpoint_every(Duration::ZERO);
    stream.put("EVT#1").await;
    let batch = feed
        .poll_events(CONSUMER, Context::Nutrition, 100)
        .await
        .expect("polled");
    assert_eq!(batch.records.len(), 1);
    feed.commit(CONSUMER, &batch).await.expect("committed");
    assert_eq!(stream.checkpoint_writes(), 1, "progress past an event");
    // Other consumers' checkpoints, a projection: nothing for this consumer to apply.
    // A checkpoint row is a change on a streamed table: writing one for a page of such
    // rows would wake the other consumers, whose rows would wake this one.
    for sk in ["CHECKPOINT#a", "DAILY#2026-03-01", "CHECKPOINT#b"] {
        stream.put(sk).await;
    }
    let batch = feed
        .poll_events(CONSUMER, Context::Nutrition, 100)
        .await
        .expect("polled");
    assert!(batch.records.is_empty(), "{batch:?}");
    feed.commit(CONSUMER, &batch).await.expect("committed");
    feed.settle(CONSUMER, false).await.expect("settled");
    assert_eq!(stream.checkpoint_writes(), 1, "nothing written for them");
    let (rows, _) = next_rows(&stream.feed()).await;
    assert_eq!(rows.len(), 3, "a new feed starts after the event: {rows:?}");
    feed.settle(CONSUMER, true).await.expect("stopped");
    assert_eq!(
        stream.checkpoint_writes(),
        2,
        "written when the consumer stops"
    );
    let (rows, _) = next_rows(&stream.feed()).await;
    assert!(rows.is_empty(), "a new feed resumes after them: {rows:?}");
}
