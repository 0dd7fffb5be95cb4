//! The dead letter itself ([`DeadLetter`]: a record a subscription gave up on, and its
//! id) and the interface every place that keeps letters implements
//! ([`DeadLetterQueue`]), with the helpers both adapters share.

use crate::feed::FeedRecord;
use crate::store::StoreError;
use async_trait::async_trait;
use futures_util::future::try_join_all;
use serde::{Deserialize, Serialize};

/// A record a subscription gave up on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeadLetter {
    /// One per record and subscription ([`DeadLetter::id_for`]); in SQS, the message's
    /// receipt handle once listed.
    pub id: String,
    pub subscription: String,
    pub record: FeedRecord,
    /// The last error, for the operator (never shown to users).
    pub error: String,
    pub attempts: u32,
}

#[async_trait]
pub trait DeadLetterQueue: Send + Sync {
    async fn put(&self, letter: &DeadLetter) -> Result<(), StoreError>;
    /// The oldest letters of a subscription.
    async fn list(&self, subscription: &str, limit: usize) -> Result<Vec<DeadLetter>, StoreError>;
    async fn remove(&self, subscription: &str, id: &str) -> Result<(), StoreError>;
    async fn depth(&self, subscription: &str) -> Result<usize, StoreError>;
    /// Removes a subscription's letters whose record is about partition `pk` (one
    /// user's, when their account is erased); returns how many.
    async fn remove_about(&self, subscription: &str, pk: &str) -> Result<u64, StoreError>;
    /// How many of a subscription's letters are about partition `pk` (operators' tools).
    async fn count_about(&self, subscription: &str, pk: &str) -> Result<u64, StoreError>;

    /// [`Self::remove_about`] for each of `subscriptions`, all at once (a queue's sweep
    /// waits a second to be sure it has read the queue through); how many in all.
    async fn remove_about_each(&self, subscriptions: &[&str], pk: &str) -> Result<u64, StoreError> {
        let each = subscriptions.iter().map(|s| self.remove_about(s, pk));
        Ok(try_join_all(each).await?.into_iter().sum())
    }

    /// [`Self::count_about`] for each of `subscriptions`, all at once, in their order.
    async fn count_about_each(
        &self,
        subscriptions: &[&str],
        pk: &str,
    ) -> Result<Vec<u64>, StoreError> {
        try_join_all(subscriptions.iter().map(|s| self.count_about(s, pk))).await
    }
}

impl DeadLetter {
    /// The id of the letter about `record`: the length of its position, the position
    /// (so that the decimal positions of every feed, Kinesis sequence numbers and the
    /// change log's counter, sort in feed order), then its item's key (Kinesis promises
    /// a sequence number unique within a shard only). The same for every try, so a
    /// record dead-lettered again (a Lambda batch retried because another subscription's
    /// letter could not be written, a worker restarted before its checkpoint) finds its
    /// row there and adds no second. An SQS standard queue cannot deduplicate: there a
    /// copy can stand, which `redrive` applies again harmlessly (projections are
    /// idempotent).
    pub fn id_for(record: &FeedRecord) -> String {
        let position = &record.position;
        format!(
            "{:03}.{position}#{}#{}",
            position.len(),
            record.pk,
            record.sk
        )
    }
}

/// A letter's record is about `pk` (its item's partition).
pub(super) fn is_about(letter: &serde_json::Value, pk: &str) -> bool {
    letter
        .get("record")
        .and_then(|r| r.get("pk"))
        .and_then(serde_json::Value::as_str)
        == Some(pk)
}

/// A letter that does not turn into JSON or back.
pub(super) fn invalid(e: serde_json::Error) -> StoreError {
    StoreError::Backend(format!("dead letter does not (de)serialize: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use events_schema::Context;

    fn record(position: &str, sk: &str) -> FeedRecord {
        FeedRecord {
            position: position.into(),
            table: Context::Nutrition,
            pk: "USER#U1".into(),
            sk: sk.into(),
            old_image: None,
            new_image: None,
            fault: None,
        }
    }

    #[test]
    fn a_letters_id_is_its_records_and_sorts_in_feed_order() {
        let id = |position, sk| DeadLetter::id_for(&record(position, sk));
        assert_eq!(id("9", "EVT#A"), id("9", "EVT#A"), "every try, one letter");
        assert_ne!(
            id("9", "EVT#A"),
            id("9", "EVT#B"),
            "another shard's record at the same sequence number"
        );
        let mut ids = [id("10", "EVT#A"), id("9", "EVT#A"), id("100", "EVT#A")];
        ids.sort();
        assert_eq!(
            ids,
            [id("9", "EVT#A"), id("10", "EVT#A"), id("100", "EVT#A")]
        );
    }
}
