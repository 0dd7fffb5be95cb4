//! The change-feed port: committed item changes of the context tables, in order per
//! item, delivered at least once to named consumers that record how far they got.
//! Adapters: the embedded store's change log ([`embedded`]); the DynamoDB stream record
//! format that Kinesis and Lambda carry ([`stream_record`]); Kinesis ([`kinesis`]); and
//! the bridge for emulators without forwarding ([`bridge`]); and the batches a Lambda
//! consumer's on-failure queue describes, fetched back from Kinesis ([`failures`]).
//! Benchmarks hold a feed to a Kinesis shard's limits with [`shard_limits`].

pub mod bridge;
pub mod embedded;
pub mod failures;
pub mod kinesis;
pub mod lambda;
pub mod shard_limits;
pub mod stream_record;

use crate::store::{Item, StoreError};
use async_trait::async_trait;
use events_schema::Context;
use events_schema::envelope::{EventEnvelope, envelope_in};
use events_schema::keys::prefix;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// One committed item change.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FeedRecord {
    /// The record's position in its feed (a sequence number), opaque to consumers.
    pub position: String,
    pub table: Context,
    pub pk: String,
    pub sk: String,
    pub old_image: Option<Item>,
    pub new_image: Option<Item>,
    /// Why a change of a Vitals table that may publish an event did not decode from its
    /// stream record (its keys or an image); such a record keeps no image, and a key that
    /// did not decode is empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault: Option<String>,
}

impl FeedRecord {
    /// The event this record publishes: only a newly written outbox item is one. Every
    /// other record (state items, projections, deletions) is `None`. A record with a
    /// [`fault`](Self::fault) is an error: retrying cannot mend it, so each subscription
    /// dead-letters it rather than lose an event without a trace.
    pub fn envelope(&self) -> Option<Result<EventEnvelope, String>> {
        if let Some(fault) = &self.fault {
            return Some(Err(format!("stream record does not decode: {fault}")));
        }
        if !self.sk.starts_with(prefix::EVENT) || self.old_image.is_some() {
            return None;
        }
        let event = envelope_in(self.new_image.as_ref()?)?;
        Some(event.map_err(|e| format!("outbox item does not decode: {e}")))
    }
}

/// Records handed to a consumer, to be committed once processed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Batch {
    pub records: Vec<FeedRecord>,
    /// Where the consumer will be once this batch is committed.
    pub(crate) progress: Progress,
}

/// A feed's own notion of position.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) enum Progress {
    #[default]
    Unchanged,
    /// The embedded change log's sequence number.
    Sequence(u64),
    /// The last sequence number read per Kinesis shard (opaque strings).
    Shards(Vec<(String, String)>),
}

/// How far a consumer is behind its feed. The embedded log counts records; Kinesis
/// tells only time (`MillisBehindLatest` of the last read): each is reported in its own
/// unit, never one passed off as the other.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lag {
    Records(u64),
    Millis(u64),
}

impl Lag {
    /// Nothing left to read.
    pub fn is_zero(self) -> bool {
        matches!(self, Lag::Records(0) | Lag::Millis(0))
    }
}

#[async_trait]
pub trait ChangeFeed: Send + Sync {
    /// Up to `limit` records after `consumer`'s checkpoint, oldest first.
    async fn poll(&self, consumer: &str, limit: usize) -> Result<Batch, StoreError>;

    /// Records that `consumer` processed `batch` (and everything before it). A feed may
    /// make this durable lazily (coalescing checkpoints), at the latest at the next
    /// [`ChangeFeed::settle`]: after a crash it then delivers again what was processed
    /// since, which projections absorb (they converge).
    async fn commit(&self, consumer: &str, batch: &Batch) -> Result<(), StoreError>;

    /// Makes what `consumer` committed durable: `now`, or only if the feed's own
    /// interval has passed since it last did. Workers call it when they are caught up
    /// (not now) and when they stop (now).
    async fn settle(&self, _consumer: &str, _now: bool) -> Result<(), StoreError> {
        Ok(())
    }

    /// Like [`ChangeFeed::poll`], keeping only the records that can publish an event of
    /// `source` (its outbox items, `EVT#`): what a subscription reads. The batch still
    /// commits past the records it skipped. Feeds that can skip records without
    /// decoding them do it here.
    async fn poll_events(
        &self,
        consumer: &str,
        source: Context,
        limit: usize,
    ) -> Result<Batch, StoreError> {
        let mut batch = self.poll(consumer, limit).await?;
        batch
            .records
            .retain(|r| r.table == source && r.sk.starts_with(prefix::EVENT));
        Ok(batch)
    }

    /// How far behind `consumer` is, in the unit the feed knows.
    async fn lag(&self, consumer: &str) -> Result<Lag, StoreError>;

    /// Returns as soon as records past `consumer`'s checkpoint exist, or after `at_most`.
    async fn wait(&self, consumer: &str, at_most: Duration);
}
