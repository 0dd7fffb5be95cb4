//! The stream bridge, for emulators that do not forward table changes to Kinesis (moto):
//! it tails each publishing table's DynamoDB stream and puts every record into the
//! context's Kinesis stream in the JSON shape "Kinesis Data Streams for DynamoDB" uses,
//! keyed by the item's keys so one item's changes stay in order. Positions are kept in
//! memory: after a restart it forwards from the streams' trim horizon again, which the
//! at-least-once, convergent consumers absorb.

use super::kinesis::stream_name;
use crate::store::StoreError;
use aws_sdk_dynamodbstreams::types::{Record, ShardIteratorType};
use aws_sdk_kinesis::primitives::Blob;
use events_schema::tables::TABLES;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Mutex;

fn backend(e: impl std::fmt::Display) -> StoreError {
    StoreError::Backend(e.to_string())
}

fn image(
    attributes: Option<&HashMap<String, aws_sdk_dynamodbstreams::types::AttributeValue>>,
) -> Result<Option<Value>, StoreError> {
    let Some(attributes) = attributes else {
        return Ok(None);
    };
    let item: HashMap<String, serde_dynamo::AttributeValue> = attributes
        .iter()
        .map(|(k, v)| (k.clone(), v.clone().into()))
        .collect();
    serde_json::to_value(item).map(Some).map_err(backend)
}

/// A DynamoDB stream record in the Kinesis Data Streams for DynamoDB JSON shape.
pub fn kinesis_json(table: &str, record: &Record) -> Result<Value, StoreError> {
    let change = record
        .dynamodb()
        .ok_or_else(|| backend("stream record without a change"))?;
    let created_ms = change
        .approximate_creation_date_time()
        .map(|t| t.to_millis().unwrap_or(0))
        .unwrap_or(0);
    Ok(json!({
        "awsRegion": record.aws_region(),
        "eventID": record.event_id(),
        "eventName": record.event_name().map(|n| n.as_str().to_owned()),
        "userIdentity": null,
        "recordFormat": "application/json",
        "tableName": table,
        "dynamodb": {
            "ApproximateCreationDateTime": created_ms,
            "ApproximateCreationDateTimePrecision": "MILLISECOND",
            "Keys": image(change.keys.as_ref())?,
            "NewImage": image(change.new_image.as_ref())?,
            "OldImage": image(change.old_image.as_ref())?,
            "SizeBytes": change.size_bytes(),
        },
        "eventSource": "aws:dynamodb",
    }))
}

pub struct StreamBridge {
    dynamodb: aws_sdk_dynamodb::Client,
    streams: aws_sdk_dynamodbstreams::Client,
    kinesis: aws_sdk_kinesis::Client,
    prefix: String,
    positions: Mutex<HashMap<String, String>>,
}

impl std::fmt::Debug for StreamBridge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "StreamBridge({})", self.prefix)
    }
}

impl StreamBridge {
    pub fn new(config: &aws_config::SdkConfig, prefix: &str) -> Self {
        Self {
            dynamodb: crate::aws_client::dynamodb(config),
            streams: crate::aws_client::dynamodb_streams(config),
            kinesis: crate::aws_client::kinesis(config),
            prefix: prefix.to_owned(),
            positions: Mutex::new(HashMap::new()),
        }
    }

    /// Forwards what the table streams hold past the last forwarded records; returns how
    /// many records it forwarded.
    pub async fn forward_once(&self) -> Result<usize, StoreError> {
        let mut forwarded = 0;
        for def in TABLES.iter().filter(|def| def.stream) {
            let table = def.physical_name(&self.prefix);
            let Some((arn, shards)) = self.stream_shards(&table).await? else {
                continue;
            };
            for shard in shards {
                forwarded += self
                    .forward_shard(def.context, &table, &arn, &shard)
                    .await?;
            }
        }
        Ok(forwarded)
    }

    /// The table's stream and its shards (None when the table has no stream).
    async fn stream_shards(
        &self,
        table: &str,
    ) -> Result<Option<(String, Vec<String>)>, StoreError> {
        let described = self
            .dynamodb
            .describe_table()
            .table_name(table)
            .send()
            .await
            .map_err(backend)?;
        let Some(arn) = described
            .table()
            .and_then(|t| t.latest_stream_arn())
            .map(str::to_owned)
        else {
            return Ok(None);
        };
        let stream = self
            .streams
            .describe_stream()
            .stream_arn(&arn)
            .send()
            .await
            .map_err(backend)?;
        let shards: Vec<String> = stream
            .stream_description()
            .map(|d| {
                d.shards()
                    .iter()
                    .filter_map(|s| s.shard_id().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        Ok(Some((arn, shards)))
    }

    /// An iterator of `shard` of the stream `arn` just past the last record forwarded
    /// from it (kept under `position`), or at its oldest record if none was; `None` if
    /// the shard gives none.
    async fn iterator_after(
        &self,
        arn: &str,
        shard: &str,
        position: &str,
    ) -> Result<Option<String>, StoreError> {
        let after = self
            .positions
            .lock()
            .ok()
            .and_then(|p| p.get(position).cloned());
        let request = self
            .streams
            .get_shard_iterator()
            .stream_arn(arn)
            .shard_id(shard);
        let request = match &after {
            Some(sequence) => request
                .shard_iterator_type(ShardIteratorType::AfterSequenceNumber)
                .sequence_number(sequence),
            None => request.shard_iterator_type(ShardIteratorType::TrimHorizon),
        };
        Ok(request.send().await.map_err(backend)?.shard_iterator)
    }

    /// Forwards what `shard` of `table`'s stream holds past the last record forwarded
    /// from it; returns how many records.
    async fn forward_shard(
        &self,
        context: events_schema::Context,
        table: &str,
        arn: &str,
        shard: &str,
    ) -> Result<usize, StoreError> {
        // Shard ids repeat across streams: positions are per stream and shard.
        let position = format!("{arn}|{shard}");
        let Some(iterator) = self.iterator_after(arn, shard, &position).await? else {
            return Ok(0);
        };
        let records = self
            .streams
            .get_records()
            .shard_iterator(iterator)
            .limit(1000)
            .send()
            .await
            .map_err(backend)?;
        let mut forwarded = 0;
        for record in records.records() {
            let data = serde_json::to_vec(&kinesis_json(table, record)?).map_err(backend)?;
            let keys = record
                .dynamodb()
                .and_then(|c| image(c.keys.as_ref()).ok().flatten())
                .unwrap_or_default();
            self.kinesis
                .put_record()
                .stream_name(stream_name(&self.prefix, context))
                .partition_key(keys.to_string())
                .data(Blob::new(data))
                .send()
                .await
                .map_err(backend)?;
            if let (Some(sequence), Ok(mut positions)) = (
                record.dynamodb().and_then(|c| c.sequence_number()),
                self.positions.lock(),
            ) {
                positions.insert(position.clone(), sequence.to_owned());
            }
            forwarded += 1;
        }
        Ok(forwarded)
    }

    /// Forwards until `shutdown` becomes true.
    pub async fn run(self, mut shutdown: tokio::sync::watch::Receiver<bool>) {
        while !*shutdown.borrow() {
            match self.forward_once().await {
                Ok(n) if n > 0 => continue,
                Ok(_) => {}
                Err(error) => tracing::warn!(%error, "stream bridge failed; retrying"),
            }
            tokio::select! {
                () = tokio::time::sleep(std::time::Duration::from_millis(200)) => {}
                _ = shutdown.changed() => {}
            }
        }
    }
}
