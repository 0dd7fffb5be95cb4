//! The on-failure queue of a stream consumer. For a batch that failed past its retries,
//! Lambda's event source mapping puts in the queue only a description of it
//! (`KinesisBatchInfo`: stream, shard, first and last sequence numbers), never the
//! records. This reads those descriptions and fetches the records back from Kinesis,
//! while the stream still retains them, so they can be applied again: at most five
//! reads a second on the shard, and a bounded number of them per batch.

use super::{FeedRecord, stream_record};
use crate::store::StoreError;
use aws_sdk_kinesis::error::{DisplayErrorContext, ProvideErrorMetadata};
use aws_sdk_kinesis::types::ShardIteratorType;
use serde::Deserialize;
use std::cmp::Ordering;

/// The part of an on-failure message that locates the batch.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BatchInfo {
    pub shard_id: String,
    pub start_sequence_number: String,
    pub end_sequence_number: String,
    pub stream_arn: String,
    #[serde(default)]
    pub batch_size: Option<u64>,
}

#[derive(Deserialize)]
struct OnFailureMessage {
    #[serde(rename = "KinesisBatchInfo")]
    batch: BatchInfo,
}

/// The batch an on-failure message describes, or why the body is not one.
pub fn parse(body: &str) -> Result<BatchInfo, String> {
    serde_json::from_str::<OnFailureMessage>(body)
        .map(|m| m.batch)
        .map_err(|e| format!("not a Kinesis batch description: {e}"))
}

/// Orders Kinesis sequence numbers: decimal strings of up to 128 bits, so a longer one
/// is larger and equal lengths compare as text (no parsing, nothing assumed about their
/// size).
pub fn compare_sequences(a: &str, b: &str) -> Ordering {
    a.len().cmp(&b.len()).then_with(|| a.cmp(b))
}

/// What could be fetched of a batch.
#[derive(Debug, Default)]
pub struct Fetched {
    /// The records still retained, in order: each with its sequence number, decoded or
    /// with why it did not decode.
    pub records: Vec<(String, Result<FeedRecord, String>)>,
    /// The first records (or all of them) are no longer retained by the stream.
    pub expired: bool,
    /// The read stopped after [`MAX_PAGES`] pages before reaching the batch's last
    /// record.
    pub incomplete: bool,
}

/// The most `GetRecords` pages one batch is read in: a failed batch holds at most
/// 10,000 records (ten full pages); the rest allows for pages a shard answers empty while
/// the read is behind its tip. Past this the batch is left for a later pass.
pub const MAX_PAGES: usize = 50;

/// The least time from one `GetRecords` answer to the next call on the shard: Kinesis
/// serves five reads a second per shard, shared by every reader of it (the stream's own
/// consumer included), so a read that is behind must not spin.
pub const READ_INTERVAL: std::time::Duration = std::time::Duration::from_millis(200);

/// Records read per `GetRecords` call.
const PAGE: i32 = 1_000;

/// An iterator of `batch`'s shard at the batch's first sequence number; `None` when
/// nothing of the batch is retained any more.
async fn first_iterator(
    kinesis: &aws_sdk_kinesis::Client,
    batch: &BatchInfo,
) -> Result<Option<String>, StoreError> {
    let iterator = kinesis
        .get_shard_iterator()
        .stream_arn(&batch.stream_arn)
        .shard_id(&batch.shard_id)
        .shard_iterator_type(ShardIteratorType::AtSequenceNumber)
        .starting_sequence_number(&batch.start_sequence_number)
        .send()
        .await;
    match iterator {
        Ok(found) => Ok(found.shard_iterator),
        // The shard (or the stream) is gone, or the sequence number is past its trim
        // horizon: nothing of the batch is retained any more.
        Err(e)
            if matches!(
                e.code(),
                Some("ResourceNotFoundException" | "InvalidArgumentException")
            ) =>
        {
            Ok(None)
        }
        Err(e) => Err(StoreError::Backend(DisplayErrorContext(&e).to_string())),
    }
}

/// Adds to `fetched` the records of a page up to `batch`'s last, decoded; marks it
/// expired if the first record kept comes after the batch's first. Returns whether the
/// page went past the batch's last record (the batch is read whole).
fn keep_records(
    fetched: &mut Fetched,
    records: &[aws_sdk_kinesis::types::Record],
    batch: &BatchInfo,
    table_prefix: &str,
) -> bool {
    for record in records {
        let sequence = record.sequence_number().to_owned();
        if compare_sequences(&sequence, &batch.end_sequence_number) == Ordering::Greater {
            return true;
        }
        if fetched.records.is_empty()
            && compare_sequences(&sequence, &batch.start_sequence_number) == Ordering::Greater
        {
            // The stream starts after the batch's first record: trimmed.
            fetched.expired = true;
        }
        let decoded = stream_record::decode(record.data().as_ref(), sequence.clone(), table_prefix);
        fetched.records.push((sequence, decoded));
    }
    false
}

/// Fetches the records of `batch` from its shard, from its first sequence number to its
/// last.
pub async fn fetch(
    kinesis: &aws_sdk_kinesis::Client,
    batch: &BatchInfo,
    table_prefix: &str,
) -> Result<Fetched, StoreError> {
    let mut iterator = first_iterator(kinesis, batch).await?;
    let mut fetched = Fetched::default();
    let mut pages = 0;
    let mut answered: Option<tokio::time::Instant> = None;
    while let Some(current) = iterator.take() {
        if pages == MAX_PAGES {
            tracing::warn!(
                shard = %batch.shard_id,
                start = %batch.start_sequence_number,
                end = %batch.end_sequence_number,
                pages,
                "the batch's last record was not reached; left for a later pass"
            );
            fetched.incomplete = true;
            break;
        }
        if let Some(answered) = answered {
            tokio::time::sleep_until(answered + READ_INTERVAL).await;
        }
        pages += 1;
        let page = kinesis
            .get_records()
            .stream_arn(&batch.stream_arn)
            .shard_iterator(current)
            .limit(PAGE)
            .send()
            .await
            .map_err(|e| StoreError::Backend(DisplayErrorContext(&e).to_string()))?;
        answered = Some(tokio::time::Instant::now());
        let records = page.records();
        if keep_records(&mut fetched, records, batch, table_prefix) {
            return Ok(fetched);
        }
        let caught_up = page.millis_behind_latest().unwrap_or(0) == 0;
        if records.is_empty() && caught_up {
            break;
        }
        iterator = page.next_shard_iterator().map(str::to_owned);
    }
    // Nothing retained (the shard gone, or trimmed past the batch): expired.
    if fetched.records.is_empty() && !fetched.incomplete {
        fetched.expired = true;
    }
    Ok(fetched)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_on_failure_message_of_lambda_parses() {
        let body = r#"{
            "requestContext": {"requestId": "r-1", "functionArn": "arn:aws:lambda:us-east-1:1:function:f",
                "condition": "RetryAttemptsExhausted", "approximateInvokeCount": 6},
            "responseContext": {"statusCode": 200, "executedVersion": "$LATEST", "functionError": "Unhandled"},
            "version": "1.0", "timestamp": "2026-03-01T08:00:00.000Z",
            "KinesisBatchInfo": {"shardId": "shardId-000000000001",
                "startSequenceNumber": "49601189658422359378836298521827638475320189012309704722",
                "endSequenceNumber": "49601189658422359378836298522902373528957594348623495186",
                "approximateArrivalOfFirstRecord": "2026-03-01T07:59:58.835Z",
                "approximateArrivalOfLastRecord": "2026-03-01T07:59:59.580Z",
                "batchSize": 3, "streamArn": "arn:aws:kinesis:us-east-1:1:stream/vitals-nutrition-changes"}
        }"#;
        let batch = parse(body).expect("a batch");
        assert_eq!(batch.shard_id, "shardId-000000000001");
        assert_eq!(batch.batch_size, Some(3));
        assert!(parse("{\"subscription\": \"a dead letter\"}").is_err());
        assert!(parse("not json").is_err());
    }

    #[test]
    fn sequence_numbers_order_as_numbers() {
        assert_eq!(compare_sequences("9", "10"), Ordering::Less);
        assert_eq!(compare_sequences("495", "495"), Ordering::Equal);
        assert_eq!(compare_sequences("496", "495"), Ordering::Greater);
        assert_eq!(
            compare_sequences(
                "49601189658422359378836298522902373528957594348623495186",
                "49601189658422359378836298521827638475320189012309704722"
            ),
            Ordering::Greater
        );
    }
}
