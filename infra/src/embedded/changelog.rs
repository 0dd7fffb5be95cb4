//! The embedded store's change log: one record per committed change that a consumer
//! reads (see [`publishes`]), written in the same redb commit as the change itself,
//! numbered without gaps. It is to the embedded shape what a DynamoDB stream is to the
//! aws shape, less the records nobody reads.

use crate::store::plan::Planned as Change;
use crate::store::{Item, StoreError};
use events_schema::Context;
use events_schema::keys::prefix;
use events_schema::tables;
use serde::{Deserialize, Serialize};

/// Whether `change` gets a change record: an outbox item (`EVT#`) written to a table
/// with a stream. Only these are read: the projector workers take the events of
/// outbox items (`ChangeFeed::poll_events`), and an outbox item's removal (TTL purge,
/// erasure) publishes nothing (`FeedRecord::event` is `None` without a new image).
/// Why not log every change, as a DynamoDB stream does: a logged meal changes about
/// ten items through the pipeline, and each record cost the writer a second row in the
/// same commit that nothing read. The aws shape's consumers filter the full stream
/// the same way (`poll_events`).
pub(super) fn publishes(change: &Change) -> bool {
    change.new.is_some()
        && change.key.sk.starts_with(prefix::EVENT)
        && tables::table(change.table).stream
}

/// One committed item change.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChangeRecord {
    /// Position in the log, from 1, gap-free, in commit order.
    pub seq: u64,
    pub table: Context,
    pub pk: String,
    pub sk: String,
    /// The item before the change (None for an insert).
    pub old: Option<Item>,
    /// The item after the change (None for a delete).
    pub new: Option<Item>,
    /// Commit time, Unix milliseconds.
    pub at_ms: i64,
}

/// A change record as written: the same fields as [`ChangeRecord`], the images
/// borrowed from the change, so writing a record does not copy them.
#[derive(Serialize)]
pub(super) struct ChangeRecordRef<'a> {
    pub seq: u64,
    pub table: Context,
    pub pk: &'a str,
    pub sk: &'a str,
    pub old: Option<&'a Item>,
    pub new: Option<&'a Item>,
    pub at_ms: i64,
}

impl ChangeRecordRef<'_> {
    pub(super) fn encode(&self) -> Vec<u8> {
        // Strings, numbers and JSON maps always serialize.
        serde_json::to_vec(self).unwrap_or_default()
    }
}

impl ChangeRecord {
    /// Whether the encoded record is of `table` with a sort key starting with
    /// `sk_prefix`, read without building its images (they are skipped, not decoded).
    pub(super) fn matches(
        bytes: &[u8],
        table: Context,
        sk_prefix: &str,
    ) -> Result<bool, StoreError> {
        #[derive(Deserialize)]
        struct Header<'a> {
            table: Context,
            #[serde(borrow)]
            sk: std::borrow::Cow<'a, str>,
        }
        let header: Header = serde_json::from_slice(bytes)
            .map_err(|e| StoreError::Backend(format!("corrupt change record: {e}")))?;
        Ok(header.table == table && header.sk.starts_with(sk_prefix))
    }

    pub(super) fn decode(bytes: &[u8]) -> Result<Self, StoreError> {
        serde_json::from_slice(bytes)
            .map_err(|e| StoreError::Backend(format!("corrupt change record: {e}")))
    }
}
