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

use crate::projector::Projector;
use crate::runtime::Handler;
use aws_lambda_events::event::kinesis::KinesisEvent;
use aws_lambda_events::event::streams::KinesisEventResponse;
use events_schema::Context;

/// Applies a batch of `source`'s stream to every subscription of it (`handlers`).
pub async fn fan_out(
    handlers: &[Handler],
    source: Context,
    event: &KinesisEvent,
    table_prefix: &str,
) -> KinesisEventResponse {
    let mut response = KinesisEventResponse::default();
    for (sequence, decoded) in infra::feed::lambda::records(event, table_prefix) {
        let record = match decoded {
            Ok(record) if record.table == source => record,
            Ok(_) => continue,
            Err(error) => {
                tracing::warn!(%source, %sequence, %error, "skipping a record that is not a change of a Vitals table");
                continue;
            }
        };
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
    for (sequence, decoded) in infra::feed::lambda::records(event, table_prefix) {
        let record = match decoded {
            Ok(record) => record,
            // Not a change of a Vitals table: nothing to project.
            Err(error) => {
                tracing::warn!(subscription = projector.name(), %sequence, %error, "skipping record");
                continue;
            }
        };
        if record.table != projector.source() {
            continue;
        }
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
