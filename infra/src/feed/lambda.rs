//! Decoding the Kinesis events Lambda hands a function (`aws_lambda_events`): each
//! record's data is a DynamoDB stream record, identified for partial batch failures by
//! its Kinesis sequence number.

use super::FeedRecord;
use super::stream_record;
use aws_lambda_events::event::kinesis::KinesisEvent;

/// Every record of the event: its sequence number, and the decoded change or why it
/// did not decode.
pub fn records(
    event: &KinesisEvent,
    table_prefix: &str,
) -> Vec<(String, Result<FeedRecord, String>)> {
    event
        .records
        .iter()
        .map(|record| {
            let sequence = record.kinesis.sequence_number.clone();
            let decoded =
                stream_record::decode(&record.kinesis.data.0, sequence.clone(), table_prefix);
            (sequence, decoded)
        })
        .collect()
}
