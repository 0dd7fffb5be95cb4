//! The Lambda entry points on a batch of Kinesis records (each a DynamoDB stream record)
//! from an event source mapping:
//! - [`fan_out_with`]: a projector function (the deployed shape, one per written table,
//!   a mapping per stream it reads): every record is applied to each of the function's
//!   subscriptions on the record's stream, each with its retries and its dead letters, so
//!   one subscription's poison event never holds the others back; different users'
//!   records concurrently, each user's in order, a record's subscriptions at once. Only
//!   a record that cannot even be dead-lettered (the store is down), or one the
//!   invocation's deadline leaves no time for, is reported in `batchItemFailures`, for
//!   Lambda to deliver again from it; after its retries the mapping sends the batch's
//!   description to the on-failure queue (`vitals redrive-failures`). With
//!   [`Delivery::fold`], a user's several records are folded first ([`crate::fold`]):
//!   each row written once, the tombstone read once.
//! - [`handle_kinesis_event`]: one subscription, failing the batch at its first failing
//!   record (`vitals lambda --subscription`, for trying one projection alone).

use crate::emf::{self, SubscriptionBatch};
use crate::fold::{Folding, Outcome};
use crate::projector::Projector;
use crate::runtime::Handler;
use aws_lambda_events::event::kinesis::KinesisEvent;
use aws_lambda_events::event::streams::KinesisEventResponse;
use events_schema::Context;
use futures_util::StreamExt as _;
use infra::feed::FeedRecord;
use std::sync::atomic::Ordering;

/// [`fan_out_with`], with the batch's metrics as Embedded Metric Format documents (one
/// per subscription) for the function to log.
pub async fn fan_out_measured(
    handlers: &[Handler],
    source: Context,
    event: &KinesisEvent,
    table_prefix: &str,
    delivery: &Delivery,
) -> (KinesisEventResponse, Vec<serde_json::Value>) {
    let counts = |h: &Handler| {
        let m = h.metrics();
        [&m.processed, &m.failed, &m.dead_lettered].map(|c| c.load(Ordering::Relaxed))
    };
    let before: Vec<[u64; 3]> = handlers.iter().map(counts).collect();
    let response = fan_out_with(handlers, source, event, table_prefix, delivery).await;
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

/// How a projector function applies a batch: how many users' records at once, and when
/// to stop taking records so the invocation ends before its deadline.
#[derive(Debug, Clone)]
pub struct Delivery {
    /// Users whose records are applied at once (each user's in order).
    pub concurrency: usize,
    /// When the invocation is cut off; `None`, never.
    pub deadline: Option<std::time::Instant>,
    /// No record is begun closer than this to the deadline.
    pub margin: std::time::Duration,
    /// When set, a user's two or more records of a batch are folded: applied in
    /// memory and each changed row written once ([`crate::fold`]).
    pub fold: Option<Folding>,
}

/// Users applied at once in a batch. A record costs a projection a few requests of a
/// few milliseconds each on DynamoDB; applied one after another, a shard's batch of 100
/// takes seconds (about 40 records a second). Applying 64 users' records at once keeps
/// 64 requests in flight per batch (x the mapping's parallelization factor per shard),
/// far below a table's on-demand throughput.
pub const DEFAULT_CONCURRENCY: usize = 64;

impl Default for Delivery {
    fn default() -> Self {
        Self {
            concurrency: DEFAULT_CONCURRENCY,
            deadline: None,
            margin: std::time::Duration::ZERO,
            fold: None,
        }
    }
}

impl Delivery {
    /// Whether a record may still be begun.
    fn open(&self) -> bool {
        self.deadline
            .is_none_or(|deadline| std::time::Instant::now() + self.margin < deadline)
    }
}

/// Applies a batch of `source`'s stream to every subscription of it (`handlers`), one
/// user at a time ([`fan_out_with`] with the default delivery and no deadline).
pub async fn fan_out(
    handlers: &[Handler],
    source: Context,
    event: &KinesisEvent,
    table_prefix: &str,
) -> KinesisEventResponse {
    fan_out_with(handlers, source, event, table_prefix, &Delivery::default()).await
}

/// Applies a batch of `source`'s stream to every subscription of it (`handlers`): the
/// records of different users concurrently (`delivery.concurrency` users at once), each
/// user's in the batch's order, which is the only order projections need (Lambda keeps
/// it per partition key across a shard's concurrent batches too). A record that could
/// not be applied nor dead-lettered stops its user's records; so does the deadline
/// drawing near. The earliest such record is reported, and Lambda delivers the batch
/// again from it: what other users had applied past it is applied again, which a
/// projection's version guards make a no-op.
pub async fn fan_out_with(
    handlers: &[Handler],
    source: Context,
    event: &KinesisEvent,
    table_prefix: &str,
    delivery: &Delivery,
) -> KinesisEventResponse {
    let records: Vec<(String, FeedRecord)> = changes_of(source, event, table_prefix).collect();
    let records = &records;
    let stopped: Vec<usize> = futures_util::stream::iter(by_user(records))
        .map(|positions| apply_user(handlers, records, positions, delivery))
        .buffer_unordered(delivery.concurrency.max(1))
        .filter_map(std::future::ready)
        .collect()
        .await;
    let mut response = KinesisEventResponse::default();
    if let Some(first) = stopped.into_iter().min() {
        let (sequence, _) = &records[first];
        if delivery.open() {
            tracing::warn!(%sequence, "a record failed: the batch is delivered again from it");
        } else {
            tracing::warn!(%sequence, "the deadline is near: the batch's rest is delivered again from here");
        }
        response.add_failure(sequence.clone());
    }
    response
}

/// The positions of `records`, grouped by user ([`user_key`]), each user's in order,
/// the users in the order of their first record.
fn by_user(records: &[(String, FeedRecord)]) -> Vec<Vec<usize>> {
    let mut users: Vec<Vec<usize>> = Vec::new();
    let mut user_of: std::collections::HashMap<String, usize> = Default::default();
    for (at, (_, record)) in records.iter().enumerate() {
        let next = users.len();
        let group = *user_of.entry(user_key(record)).or_insert(next);
        if group == next {
            users.push(Vec::new());
        }
        users[group].push(at);
    }
    users
}

/// Applies one user's records (at `positions`) in order: folded, when the delivery
/// folds and the fold applies them all, else record by record through every handler.
/// Returns the position where it stopped (a record not applied, or the deadline), if
/// it did.
async fn apply_user(
    handlers: &[Handler],
    records: &[(String, FeedRecord)],
    positions: Vec<usize>,
    delivery: &Delivery,
) -> Option<usize> {
    if let Some(folding) = delivery.fold.as_ref().filter(|_| delivery.open()) {
        let mine: Vec<&FeedRecord> = positions.iter().map(|&at| &records[at].1).collect();
        if folding.apply(handlers, &mine).await == Outcome::Applied {
            return None;
        }
    }
    for at in positions {
        if !delivery.open() {
            return Some(at);
        }
        let (sequence, record) = &records[at];
        // A record's subscriptions at once: each writes its own rows, and each
        // converges whatever the others do (as the embedded pipeline's workers).
        let applied = futures_util::future::join_all(
            handlers
                .iter()
                .map(|handler| async move { (handler, handler.handle(record).await) }),
        )
        .await;
        let mut failed = false;
        for (handler, outcome) in applied {
            if let Err(error) = outcome {
                tracing::error!(subscription = handler.projector().name(), %sequence, %error,
                    "record neither applied nor dead-lettered; reporting it for retry");
                failed = true;
            }
        }
        if failed {
            return Some(at);
        }
    }
    None
}

/// Whose record this is: the event's user, else the item's partition. A user's events
/// come from their `USER#` partition and, for an erasure's `PartitionDrained`, from
/// `ERASED#`: the envelope names the user in both.
fn user_key(record: &FeedRecord) -> String {
    match record.envelope() {
        Some(Ok(envelope)) => envelope
            .user_id
            .map_or_else(|| record.pk.clone(), |user| user.to_string()),
        _ => record.pk.clone(),
    }
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
