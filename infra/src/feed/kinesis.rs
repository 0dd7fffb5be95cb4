//! The Kinesis change feed ("Kinesis Data Streams for DynamoDB"): one stream per
//! publishing context table, read shard by shard with `aws-sdk-kinesis`. Each consumer's
//! position per shard (an opaque sequence number) is kept as a row of a table, so a
//! restarted `vitals work` resumes where it stopped. Also provisions the streams and
//! turns on each table's streaming destination.

use super::{Batch, ChangeFeed, Lag, Progress, stream_record};
use crate::store::{Item, Key, Store, StoreError};
use async_trait::async_trait;
use aws_sdk_kinesis::error::{DisplayErrorContext, ProvideErrorMetadata};
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
}

impl std::fmt::Debug for KinesisFeed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KinesisFeed")
            .field("stream", &self.stream)
            .finish_non_exhaustive()
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
        }
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
}

#[async_trait]
impl ChangeFeed for KinesisFeed {
    async fn poll(&self, consumer: &str, limit: usize) -> Result<Batch, StoreError> {
        let mut records = Vec::new();
        let mut positions = Vec::new();
        let mut behind = 0u64;
        for shard in self.shards().await? {
            let checkpoint = self
                .checkpoints
                .get(
                    self.checkpoint_table,
                    &self.checkpoint_key(consumer, &shard),
                    true,
                )
                .await?;
            let after = checkpoint.and_then(|row| {
                row.get("sequence")
                    .and_then(|v| v.as_str())
                    .map(str::to_owned)
            });
            let request = self
                .client
                .get_shard_iterator()
                .stream_name(&self.stream)
                .shard_id(&shard);
            let request = match &after {
                Some(sequence) => request
                    .shard_iterator_type(ShardIteratorType::AfterSequenceNumber)
                    .starting_sequence_number(sequence),
                None => request.shard_iterator_type(ShardIteratorType::TrimHorizon),
            };
            let Some(iterator) = request.send().await.map_err(kinesis_error)?.shard_iterator else {
                continue;
            };
            let output = self
                .client
                .get_records()
                .shard_iterator(iterator)
                .limit(limit.clamp(1, 10_000) as i32)
                .send()
                .await
                .map_err(kinesis_error)?;
            behind = behind.max(output.millis_behind_latest().unwrap_or(0).max(0) as u64);
            let mut last = None;
            for record in output.records() {
                let sequence = record.sequence_number().to_owned();
                match stream_record::decode(
                    record.data().as_ref(),
                    sequence.clone(),
                    &self.table_prefix,
                ) {
                    Ok(decoded) => records.push(decoded),
                    // Not a Vitals table change: nothing to project, but move past it.
                    Err(error) => {
                        tracing::warn!(stream = %self.stream, %sequence, %error, "skipping undecodable record")
                    }
                }
                last = Some(sequence);
            }
            if let Some(last) = last {
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
        for (shard, sequence) in positions {
            let mut item: Item = self.checkpoint_key(consumer, shard).to_item();
            item.insert("sequence".into(), sequence.clone().into());
            self.checkpoints
                .put(self.checkpoint_table, item, None)
                .await?;
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
        match kinesis
            .create_stream()
            .stream_name(&name)
            .shard_count(1)
            .send()
            .await
        {
            Ok(_) => {}
            Err(e) if e.code() == Some("ResourceInUseException") => {}
            Err(e) => return Err(kinesis_error(e)),
        }
        let deadline = Instant::now() + Duration::from_secs(60);
        let arn = loop {
            let summary = kinesis
                .describe_stream_summary()
                .stream_name(&name)
                .send()
                .await
                .map_err(kinesis_error)?;
            let description = summary.stream_description_summary();
            if description.is_some_and(|d| d.stream_status() == &StreamStatus::Active) {
                break description
                    .map(|d| d.stream_arn().to_owned())
                    .unwrap_or_default();
            }
            if Instant::now() > deadline {
                return Err(StoreError::Backend(format!(
                    "stream {name} is not active after 60 s"
                )));
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        };
        streams.push(name);
        if !forward {
            continue;
        }
        let table = def.physical_name(prefix);
        match dynamodb
            .enable_kinesis_streaming_destination()
            .table_name(&table)
            .stream_arn(&arn)
            .send()
            .await
        {
            Ok(_) => {}
            // Already streaming to it (a second bootstrap).
            Err(e)
                if e.code() == Some("ResourceInUseException")
                    || e.message().is_some_and(|m| m.contains("already")) => {}
            Err(e) => {
                return Err(StoreError::Backend(
                    aws_sdk_dynamodb::error::DisplayErrorContext(&e).to_string(),
                ));
            }
        }
    }
    Ok(streams)
}
