//! The Lambda entry points on a batch of Kinesis records (each a DynamoDB stream record)
//! from an event source mapping:
//! - [`fan_out`]: a stream consumer (the deployed shape, one per stream): every record is
//!   applied to every subscription of the stream, each with its retries and its dead
//!   letters, so one subscription's poison event never holds the others back. Only a
//!   record that cannot even be dead-lettered (the store is down) is reported in
//!   `batchItemFailures`, for Lambda to retry from it; after its retries the mapping
//!   sends the batch's description to the on-failure queue (`vitals redrive --failures`).
//! - [`handle_kinesis_event`]: one subscription, failing the batch at its first failing
//!   record (`vitals lambda --subscription`, for trying one projection alone).

use crate::emf::{self, SubscriptionBatch};
use crate::projector::Projector;
use crate::runtime::Handler;
use aws_lambda_events::event::kinesis::KinesisEvent;
use aws_lambda_events::event::streams::KinesisEventResponse;
use events_schema::Context;
use infra::feed::FeedRecord;
use std::sync::atomic::Ordering;

/// [`fan_out`], with the batch's metrics as Embedded Metric Format documents (one per
/// subscription) for the function to log.
pub async fn fan_out_measured(
    handlers: &[Handler],
    source: Context,
    event: &KinesisEvent,
    table_prefix: &str,
) -> (KinesisEventResponse, Vec<serde_json::Value>) {
    let counts = |h: &Handler| {
        let m = h.metrics();
        [&m.processed, &m.failed, &m.dead_lettered].map(|c| c.load(Ordering::Relaxed))
    };
    let before: Vec<[u64; 3]> = handlers.iter().map(counts).collect();
    let response = fan_out(handlers, source, event, table_prefix).await;
    let batches: Vec<SubscriptionBatch> = handlers
        .iter()
        .zip(before)
        .map(|(handler, before)| {
            let after = counts(handler);
            SubscriptionBatch {
                subscription: handler.projector().name(),
                processed: after[0] - before[0],
                failed: after[1] - before[1],
                dead_lettered: after[2] - before[2],
            }
        })
        .collect();
    // The newest record applied: the last one before the first reported for retry.
    let first_failed = response
        .batch_item_failures
        .first()
        .and_then(|f| f.item_identifier.clone());
    let now = chrono::Utc::now();
    let newest_age_ms = event
        .records
        .iter()
        .take_while(|r| Some(&r.kinesis.sequence_number) != first_failed.as_ref())
        .map(|r| *r.kinesis.approximate_arrival_timestamp)
        .max()
        .map(|arrival| (now - arrival).num_milliseconds().max(0) as u64);
    let documents = emf::documents(source, &batches, newest_age_ms, now.timestamp_millis());
    (response, documents)
}

/// Applies a batch of `source`'s stream to every subscription of it (`handlers`).
pub async fn fan_out(
    handlers: &[Handler],
    source: Context,
    event: &KinesisEvent,
    table_prefix: &str,
) -> KinesisEventResponse {
    let mut response = KinesisEventResponse::default();
    for (sequence, record) in changes_of(source, event, table_prefix) {
        for handler in handlers {
            if let Err(error) = handler.handle(&record).await {
                tracing::error!(subscription = handler.projector().name(), %sequence, %error,
                    "record neither applied nor dead-lettered; reporting it for retry");
                response.add_failure(sequence);
                return response;
            }
        }
    }
    response
}

pub async fn handle_kinesis_event(
    projector: &dyn Projector,
    event: &KinesisEvent,
    table_prefix: &str,
) -> KinesisEventResponse {
    let mut response = KinesisEventResponse::default();
    for (sequence, record) in changes_of(projector.source(), event, table_prefix) {
        let applied = match record.envelope() {
            None => Ok(()),
            Some(Ok(envelope)) => projector.apply(&envelope).await.map_err(|e| e.to_string()),
            Some(Err(error)) => Err(error),
        };
        if let Err(error) = applied {
            tracing::error!(subscription = projector.name(), %sequence, %error, "record failed; reporting it");
            response.add_failure(sequence);
            break;
        }
    }
    response
}

/// The changes of `source`'s table in a batch, with their sequence numbers. A record
/// with nothing to project (not a change of a Vitals table, or a change that publishes
/// no event and does not decode) is logged and skipped; one that may publish an event
/// and does not decode comes with its fault, to be dead-lettered.
fn changes_of(
    source: Context,
    event: &KinesisEvent,
    table_prefix: &str,
) -> impl Iterator<Item = (String, FeedRecord)> {
    let records = infra::feed::lambda::records(event, table_prefix);
    records
        .into_iter()
        .filter_map(move |(sequence, decoded)| match decoded {
            Ok(record) => (record.table == source).then_some((sequence, record)),
            Err(error) => {
                tracing::warn!(%source, %sequence, %error, "skipping a record with nothing to project");
                None
            }
        })
}
