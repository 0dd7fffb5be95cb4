//! The Lambda entry point of a subscription: a batch of Kinesis records (each a DynamoDB
//! stream record) from the event source mapping. Outbox events of the source context are
//! applied in order; the first that fails is reported in `batchItemFailures` (Lambda
//! retries from it, and after its retries sends it to the mapping's on-failure SQS
//! queue), and the records after it are left for that retry.

use crate::projector::Projector;
use aws_lambda_events::event::kinesis::KinesisEvent;
use aws_lambda_events::event::streams::KinesisEventResponse;

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
