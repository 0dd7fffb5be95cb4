//! The Kinesis change feed ("Kinesis Data Streams for DynamoDB"): one stream per
//! publishing context table, read shard by shard with `aws-sdk-kinesis`. Each consumer's
//! position per shard (an opaque sequence number) is kept as a row of a table, so a
//! restarted `vitals work` resumes where it stopped. Also provisions the streams and
//! turns on each table's streaming destination.
//!
//! Between polls a consumer keeps, per shard, the iterator Kinesis handed back: a page
//! may be empty although later records exist (trimmed or sparse stretches of a shard),
//! and only following the iterator moves past it; taking a fresh one from the
//! checkpoint on every poll would read the same empty page for ever. A batch not
//! committed is read again from the checkpoint. Checkpoint rows are written at most
//! every [`CHECKPOINT_EVERY`], and only for progress past events (or when the consumer
//! stops): a checkpoint row is itself a change of a streamed table, so writing one for
//! every page of other consumers' checkpoints would keep idle consumers waking each
//! other for ever. After a crash, what was processed since the last row is delivered
//! again, which projections absorb.

use super::{Batch, ChangeFeed, Lag, Progress, stream_record};
use crate::store::{Item, Key, Store, StoreError};
use async_trait::async_trait;
use aws_sdk_kinesis::error::{DisplayErrorContext, ProvideErrorMetadata};
use aws_sdk_kinesis::operation::get_records::GetRecordsOutput;
use aws_sdk_kinesis::types::{ShardIteratorType, StreamStatus};
use events_schema::Context;
use events_schema::tables::TABLES;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn kinesis_error<E: ProvideErrorMetadata + std::error::Error + 'static, R: std::fmt::Debug>(
    e: aws_sdk_kinesis::error::SdkError<E, R>,
) -> StoreError {
    match e.code() {
        Some("ProvisionedThroughputExceededException" | "LimitExceededException") => {
            StoreError::Throttled
        }
        _ => StoreError::Backend(DisplayErrorContext(&e).to_string()),
    }
}

/// How often, at most, a consumer's position in a shard is written while it works.
pub const CHECKPOINT_EVERY: Duration = Duration::from_secs(1);

/// The Kinesis stream carrying a context table's changes.
pub fn stream_name(prefix: &str, context: Context) -> String {
    format!("{prefix}{context}-changes")
}

/// Reads one context's stream for any number of named consumers.
pub struct KinesisFeed {
    client: aws_sdk_kinesis::Client,
    stream: String,
    table_prefix: String,
    checkpoints: Arc<dyn Store>,
    checkpoint_table: Context,
    behind_ms: Mutex<HashMap<String, u64>>,
    /// Per consumer and shard: where it is (see [`ShardCursor`]).
    cursors: Mutex<HashMap<(String, String), ShardCursor>>,
    checkpoint_every: Duration,
}

/// Where one consumer is in one shard, kept between polls.
#[derive(Debug, Clone)]
struct ShardCursor {
    /// The last sequence number the consumer committed (`None`: none yet).
    committed: Option<String>,
    /// The last one a poll handed out: ahead of `committed` while a batch is processed,
    /// or after it failed (the next poll then reads again from `committed`).
    delivered: Option<String>,
    /// The iterator after `delivered`, as the last page answered it.
    next: Option<String>,
    /// What the checkpoint row holds.
    written: Option<String>,
    written_at: Instant,
    /// Whether batches with events were committed past `written`.
    events_unwritten: bool,
}

impl ShardCursor {
    /// A consumer at the position its checkpoint row holds.
    fn at(written: Option<String>) -> Self {
        Self {
            committed: written.clone(),
            delivered: written.clone(),
            next: None,
            written,
            written_at: Instant::now(),
            events_unwritten: false,
        }
    }

    /// Whether settling writes the checkpoint row: progress is unwritten, and the
    /// consumer stops (`now`), or events were committed and `every` has passed.
    fn due(&self, now: bool, every: Duration) -> bool {
        self.committed != self.written
            && (now || (self.events_unwritten && self.written_at.elapsed() >= every))
    }
}

impl std::fmt::Debug for KinesisFeed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "KinesisFeed({})", self.stream)
    }
}

impl KinesisFeed {
    /// A feed of `source`'s stream; checkpoints go to `checkpoint_table` through
    /// `checkpoints` (the subscriber's own table).
    pub fn new(
        client: aws_sdk_kinesis::Client,
        table_prefix: &str,
        source: Context,
        checkpoints: Arc<dyn Store>,
        checkpoint_table: Context,
    ) -> Self {
        Self {
            client,
            stream: stream_name(table_prefix, source),
            table_prefix: table_prefix.to_owned(),
            checkpoints,
            checkpoint_table,
            behind_ms: Mutex::new(HashMap::new()),
            cursors: Mutex::new(HashMap::new()),
            checkpoint_every: CHECKPOINT_EVERY,
        }
    }

    /// Writes positions past events at most `every` (default [`CHECKPOINT_EVERY`]).
    pub fn checkpoint_every(mut self, every: Duration) -> Self {
        self.checkpoint_every = every;
        self
    }

    fn checkpoint_key(&self, consumer: &str, shard: &str) -> Key {
        Key::new(
            format!("CHECKPOINT#{consumer}"),
            format!("{}#{shard}", self.stream),
        )
    }

    async fn shards(&self) -> Result<Vec<String>, StoreError> {
        let listed = self
            .client
            .list_shards()
            .stream_name(&self.stream)
            .send()
            .await
            .map_err(kinesis_error)?;
        Ok(listed
            .shards()
            .iter()
            .map(|s| s.shard_id().to_owned())
            .collect())
    }

    /// `consumer`'s cursor in `shard`: the one kept, or one at its checkpoint row.
    async fn cursor(&self, consumer: &str, shard: &str) -> Result<ShardCursor, StoreError> {
        let id = (consumer.to_owned(), shard.to_owned());
        if let Some(kept) = self.cursors.lock().ok().and_then(|c| c.get(&id).cloned()) {
            return Ok(kept);
        }
        let key = self.checkpoint_key(consumer, shard);
        let row = self
            .checkpoints
            .get(self.checkpoint_table, &key, true)
            .await?;
        let written = row.and_then(|row| {
            row.get("sequence")
                .and_then(|v| v.as_str())
                .map(str::to_owned)
        });
        Ok(ShardCursor::at(written))
    }

    fn keep(&self, consumer: &str, shard: &str, cursor: ShardCursor) {
        if let Ok(mut cursors) = self.cursors.lock() {
            cursors.insert((consumer.to_owned(), shard.to_owned()), cursor);
        }
    }

    /// A new iterator in `shard` just after `after` (from its start without one).
    async fn iterator_after(
        &self,
        shard: &str,
        after: Option<&str>,
    ) -> Result<Option<String>, StoreError> {
        let request = self
            .client
            .get_shard_iterator()
            .stream_name(&self.stream)
            .shard_id(shard);
        let request = match after {
            Some(sequence) => request
                .shard_iterator_type(ShardIteratorType::AfterSequenceNumber)
                .starting_sequence_number(sequence),
            None => request.shard_iterator_type(ShardIteratorType::TrimHorizon),
        };
        Ok(request.send().await.map_err(kinesis_error)?.shard_iterator)
    }

    /// The next page of `shard` for `cursor`, which it moves on: after the kept iterator
    /// when the last page was committed, else from what was committed. An iterator kept
    /// too long (they expire after five minutes) is replaced by a fresh one; one whose
    /// read failed otherwise is kept for the next poll.
    async fn page(
        &self,
        shard: &str,
        cursor: &mut ShardCursor,
        limit: usize,
    ) -> Result<Option<GetRecordsOutput>, StoreError> {
        let kept = cursor.next.take();
        let mut from_kept = kept.is_some() && cursor.delivered == cursor.committed;
        let mut iterator = kept.filter(|_| from_kept);
        let output = loop {
            let Some(current) = iterator.take() else {
                from_kept = false;
                cursor.delivered = cursor.committed.clone();
                match self
                    .iterator_after(shard, cursor.committed.as_deref())
                    .await?
                {
                    Some(fresh) => {
                        iterator = Some(fresh);
                        continue;
                    }
                    None => return Ok(None),
                }
            };
            let read = self
                .client
                .get_records()
                .shard_iterator(current.clone())
                .limit(limit.clamp(1, 10_000) as i32)
                .send()
                .await;
            match read {
                Err(e) if from_kept && e.code() == Some("ExpiredIteratorException") => {}
                // A throttled or failed read keeps its iterator: from the checkpoint
                // instead, the next poll would read again every empty page since.
                Err(e) => {
                    cursor.next = Some(current);
                    return Err(kinesis_error(e));
                }
                Ok(output) => break output,
            }
        };
        cursor.next = output.next_shard_iterator().map(str::to_owned);
        if let Some(last) = output.records().last() {
            cursor.delivered = Some(last.sequence_number().to_owned());
        }
        Ok(Some(output))
    }
}

#[async_trait]
impl ChangeFeed for KinesisFeed {
    async fn poll(&self, consumer: &str, limit: usize) -> Result<Batch, StoreError> {
        let mut records = Vec::new();
        let mut positions = Vec::new();
        let mut behind = 0u64;
        for shard in self.shards().await? {
            let mut cursor = self.cursor(consumer, &shard).await?;
            let page = self.page(&shard, &mut cursor, limit).await;
            let delivered = cursor.delivered.clone();
            self.keep(consumer, &shard, cursor);
            let Some(output) = page? else {
                continue;
            };
            behind = behind.max(output.millis_behind_latest().unwrap_or(0).max(0) as u64);
            for record in output.records() {
                let sequence = record.sequence_number().to_owned();
                match stream_record::decode(
                    record.data().as_ref(),
                    sequence.clone(),
                    &self.table_prefix,
                ) {
                    Ok(decoded) => records.push(decoded),
                    // Nothing to project (see `decode`), but move past it.
                    Err(error) => {
                        tracing::warn!(stream = %self.stream, %sequence, %error, "skipping a record with nothing to project")
                    }
                }
            }
            if let (Some(last), false) = (delivered, output.records().is_empty()) {
                positions.push((shard, last));
            }
        }
        if let Ok(mut lag) = self.behind_ms.lock() {
            lag.insert(consumer.to_owned(), behind);
        }
        Ok(Batch {
            records,
            progress: Progress::Shards(positions),
        })
    }

    async fn commit(&self, consumer: &str, batch: &Batch) -> Result<(), StoreError> {
        let Progress::Shards(positions) = &batch.progress else {
            return Ok(());
        };
        // What a subscription commits holds only the events it kept: a batch without
        // any moved past other rows (checkpoints, projections), nothing to rewrite.
        let events = !batch.records.is_empty();
        for (shard, sequence) in positions {
            let mut cursor = self.cursor(consumer, shard).await?;
            cursor.committed = Some(sequence.clone());
            cursor.events_unwritten |= events;
            self.keep(consumer, shard, cursor);
        }
        self.settle(consumer, false).await
    }

    async fn settle(&self, consumer: &str, now: bool) -> Result<(), StoreError> {
        let due: Vec<(String, ShardCursor)> = match self.cursors.lock() {
            Ok(cursors) => cursors
                .iter()
                .filter(|((owner, _), c)| owner == consumer && c.due(now, self.checkpoint_every))
                .map(|((_, shard), cursor)| (shard.clone(), cursor.clone()))
                .collect(),
            Err(_) => Vec::new(),
        };
        for (shard, cursor) in due {
            let Some(sequence) = &cursor.committed else {
                continue;
            };
            let mut item: Item = self.checkpoint_key(consumer, &shard).to_item();
            item.insert("sequence".into(), sequence.clone().into());
            self.checkpoints
                .put(self.checkpoint_table, item, None)
                .await?;
            let mut settled = self.cursor(consumer, &shard).await?;
            settled.written = cursor.committed.clone();
            settled.written_at = Instant::now();
            settled.events_unwritten = false;
            self.keep(consumer, &shard, settled);
        }
        Ok(())
    }

    async fn lag(&self, consumer: &str) -> Result<Lag, StoreError> {
        Ok(Lag::Millis(
            self.behind_ms
                .lock()
                .ok()
                .and_then(|lag| lag.get(consumer).copied())
                .unwrap_or(0),
        ))
    }

    async fn wait(&self, _consumer: &str, at_most: Duration) {
        // Kinesis has no push to wait on: poll again after a short pause.
        tokio::time::sleep(at_most.min(Duration::from_millis(250))).await;
    }
}

/// Creates the Kinesis stream `name` of one shard, unless it exists.
async fn create_stream(kinesis: &aws_sdk_kinesis::Client, name: &str) -> Result<(), StoreError> {
    match kinesis
        .create_stream()
        .stream_name(name)
        .shard_count(1)
        .send()
        .await
    {
        Ok(_) => Ok(()),
        Err(e) if e.code() == Some("ResourceInUseException") => Ok(()),
        Err(e) => Err(kinesis_error(e)),
    }
}

/// Waits (at most 60 s) for the stream `name` to be active; returns its ARN.
async fn active_stream_arn(
    kinesis: &aws_sdk_kinesis::Client,
    name: &str,
) -> Result<String, StoreError> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let summary = kinesis
            .describe_stream_summary()
            .stream_name(name)
            .send()
            .await
            .map_err(kinesis_error)?;
        let description = summary.stream_description_summary();
        if description.is_some_and(|d| d.stream_status() == &StreamStatus::Active) {
            return Ok(description
                .map(|d| d.stream_arn().to_owned())
                .unwrap_or_default());
        }
        if Instant::now() > deadline {
            return Err(StoreError::Backend(format!(
                "stream {name} is not active after 60 s"
            )));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Turns on the streaming destination of the table `table` to the stream `arn`, unless
/// it is on already.
async fn stream_table_to(
    dynamodb: &aws_sdk_dynamodb::Client,
    table: &str,
    arn: &str,
) -> Result<(), StoreError> {
    match dynamodb
        .enable_kinesis_streaming_destination()
        .table_name(table)
        .stream_arn(arn)
        .send()
        .await
    {
        Ok(_) => Ok(()),
        // Already streaming to it (a second bootstrap).
        Err(e)
            if e.code() == Some("ResourceInUseException")
                || e.message().is_some_and(|m| m.contains("already")) =>
        {
            Ok(())
        }
        Err(e) => Err(StoreError::Backend(
            aws_sdk_dynamodb::error::DisplayErrorContext(&e).to_string(),
        )),
    }
}

/// Creates the Kinesis stream of every publishing table and, with `forward`, turns on
/// the table's streaming destination to it (without, a [`super::bridge`] forwards).
/// Idempotent.
pub async fn provision(
    dynamodb: &aws_sdk_dynamodb::Client,
    kinesis: &aws_sdk_kinesis::Client,
    prefix: &str,
    forward: bool,
) -> Result<Vec<String>, StoreError> {
    let mut streams = Vec::new();
    for def in TABLES.iter().filter(|def| def.stream) {
        let name = stream_name(prefix, def.context);
        create_stream(kinesis, &name).await?;
        let arn = active_stream_arn(kinesis, &name).await?;
        streams.push(name);
        if forward {
            stream_table_to(dynamodb, &def.physical_name(prefix), &arn).await?;
        }
    }
    Ok(streams)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cursor(written: &str, committed: &str, events: bool, age: Duration) -> ShardCursor {
        ShardCursor {
            committed: Some(committed.into()),
            delivered: Some(committed.into()),
            next: None,
            written: Some(written.into()),
            written_at: Instant::now() - age,
            events_unwritten: events,
        }
    }

    #[test]
    fn a_position_is_written_past_events_after_the_interval_and_any_when_stopping() {
        let (every, long_ago) = (Duration::from_secs(1), Duration::from_secs(5));
        let past_events = cursor("1", "2", true, long_ago);
        assert!(past_events.due(false, every));
        assert!(
            !cursor("1", "2", true, Duration::ZERO).due(false, every),
            "too soon"
        );
        let past_other_rows = cursor("1", "2", false, long_ago);
        assert!(
            !past_other_rows.due(false, every),
            "held back while it works"
        );
        assert!(past_other_rows.due(true, every), "written when it stops");
        assert!(
            !cursor("2", "2", true, long_ago).due(true, every),
            "already written"
        );
    }
}
