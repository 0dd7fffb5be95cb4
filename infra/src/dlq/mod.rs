//! Dead-letter queues: where a subscription puts a record it could not process after its
//! retries, whole (not only its position), so `vitals redrive` can apply it later. The
//! table adapter keeps letters as `DLQ#<subscription>` rows in the subscriber's own
//! table (the embedded shape, and DynamoDB without SQS); [`SqsDlq`] keeps them in one SQS
//! queue per subscription (the AWS shape).

use crate::feed::FeedRecord;
use crate::store::{Condition, Item, Key, Query, Store, StoreError};
use async_trait::async_trait;
use events_schema::Context;
use futures_util::future::try_join_all;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

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

/// Where each subscriber's dead letters are kept: rows of its own table (the embedded
/// shape, and DynamoDB without SQS), or one SQS queue per subscription (the AWS shape).
#[derive(Clone)]
pub enum DeadLetterStore {
    Tables(Arc<dyn Store>),
    Sqs(SqsDlq),
}

impl std::fmt::Debug for DeadLetterStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DeadLetterStore::Tables(_) => f.write_str("DeadLetterStore::Tables"),
            DeadLetterStore::Sqs(sqs) => write!(f, "DeadLetterStore::Sqs({})", sqs.prefix),
        }
    }
}

impl DeadLetterStore {
    /// The queue of the subscriptions that write `target`'s table.
    pub fn queue_for(&self, target: Context) -> Arc<dyn DeadLetterQueue> {
        match self {
            DeadLetterStore::Tables(store) => Arc::new(TableDlq::new(store.clone(), target)),
            DeadLetterStore::Sqs(sqs) => Arc::new(sqs.clone()),
        }
    }
}

/// A letter's record is about `pk` (its item's partition).
fn is_about(letter: &serde_json::Value, pk: &str) -> bool {
    letter
        .get("record")
        .and_then(|r| r.get("pk"))
        .and_then(serde_json::Value::as_str)
        == Some(pk)
}

/// Letters as rows of a table (the subscriber's own).
pub struct TableDlq {
    store: Arc<dyn Store>,
    table: Context,
}

impl std::fmt::Debug for TableDlq {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TableDlq({})", self.table)
    }
}

impl TableDlq {
    pub fn new(store: Arc<dyn Store>, table: Context) -> Self {
        Self { store, table }
    }

    fn pk(subscription: &str) -> String {
        format!("DLQ#{subscription}")
    }

    /// Applies `f` to every letter row of a subscription.
    async fn each_letter(
        &self,
        subscription: &str,
        mut f: impl FnMut(&Item) -> bool,
    ) -> Result<Vec<Key>, StoreError> {
        let mut chosen = Vec::new();
        let mut cursor = None;
        loop {
            let query = Query::partition(Self::pk(subscription))
                .consistent()
                .after(cursor);
            let page = self.store.query(self.table, &query).await?;
            for letter in &page.items {
                if f(letter) {
                    chosen.push(Key::of(letter)?);
                }
            }
            match page.cursor {
                Some(next) => cursor = Some(next),
                None => return Ok(chosen),
            }
        }
    }
}

fn invalid(e: serde_json::Error) -> StoreError {
    StoreError::Backend(format!("dead letter does not (de)serialize: {e}"))
}

#[async_trait]
impl DeadLetterQueue for TableDlq {
    async fn put(&self, letter: &DeadLetter) -> Result<(), StoreError> {
        let mut item: Item = match serde_json::to_value(letter).map_err(invalid)? {
            serde_json::Value::Object(map) => map,
            _ => Item::new(),
        };
        item.insert("pk".into(), Self::pk(&letter.subscription).into());
        item.insert("sk".into(), letter.id.clone().into());
        let put = self
            .store
            .put(self.table, item, Some(Condition::ItemNotExists));
        match put.await {
            // The record's letter is there from an earlier try: it stays as first written.
            Err(StoreError::ConditionFailed { .. }) => Ok(()),
            done => done,
        }
    }

    async fn list(&self, subscription: &str, limit: usize) -> Result<Vec<DeadLetter>, StoreError> {
        let query = Query::partition(Self::pk(subscription))
            .limit(limit.max(1))
            .consistent();
        let page = self.store.query(self.table, &query).await?;
        page.items
            .into_iter()
            .map(|item| serde_json::from_value(item.into()).map_err(invalid))
            .collect()
    }

    async fn remove(&self, subscription: &str, id: &str) -> Result<(), StoreError> {
        self.store
            .delete(self.table, &Key::new(Self::pk(subscription), id), None)
            .await
            .map(|_| ())
    }

    async fn depth(&self, subscription: &str) -> Result<usize, StoreError> {
        Ok(self.each_letter(subscription, |_| true).await?.len())
    }

    async fn remove_about(&self, subscription: &str, pk: &str) -> Result<u64, StoreError> {
        let doomed = self
            .each_letter(subscription, |letter| {
                is_about(&serde_json::Value::Object(letter.clone()), pk)
            })
            .await?;
        for key in &doomed {
            self.store.delete(self.table, key, None).await?;
        }
        Ok(doomed.len() as u64)
    }

    async fn count_about(&self, subscription: &str, pk: &str) -> Result<u64, StoreError> {
        let about = self
            .each_letter(subscription, |letter| {
                is_about(&serde_json::Value::Object(letter.clone()), pk)
            })
            .await?;
        Ok(about.len() as u64)
    }
}

/// Letters as SQS messages, one queue per subscription (the AWS shape). A listed
/// letter's id is its receipt handle, which `remove` deletes.
#[derive(Debug, Clone)]
pub struct SqsDlq {
    client: aws_sdk_sqs::Client,
    prefix: String,
}

/// How long a sweep of a queue hides the messages it has read (see [`SqsDlq::sweep`]).
const SWEEP_VISIBILITY_S: i32 = 60;

/// How long the receive that ends a read through a queue (a sweep, a redrive's listing)
/// waits for a message. A short poll (no wait) asks only some of SQS's servers and may
/// answer empty while the queue holds messages; a long poll asks them all. A read goes on
/// with short polls and takes an empty answer for the end only once a long poll agrees:
/// one wait of this length per queue read through.
const CONFIRM_EMPTY_WAIT_S: i32 = 1;

fn sqs_error(e: impl std::fmt::Display) -> StoreError {
    StoreError::Backend(format!("SQS: {e}"))
}

/// Receives up to `max` (at most 10) messages of a queue, each hidden from other
/// receivers for `visibility_s` seconds, waiting up to `wait_s` seconds for one (0: a
/// short poll, which may answer empty while the queue holds messages).
async fn receive(
    client: &aws_sdk_sqs::Client,
    url: &str,
    max: i32,
    visibility_s: i32,
    wait_s: i32,
) -> Result<Vec<aws_sdk_sqs::types::Message>, StoreError> {
    let received = client
        .receive_message()
        .queue_url(url)
        .max_number_of_messages(max)
        .visibility_timeout(visibility_s)
        .wait_time_seconds(wait_s)
        .send()
        .await
        .map_err(|e| sqs_error(aws_sdk_sqs::error::DisplayErrorContext(&e)))?;
    Ok(received.messages.unwrap_or_default())
}

/// The next messages of a queue being read through (a sweep, a listing, a redrive of
/// on-failure messages): a short poll, and when that answers empty a long poll of
/// [`CONFIRM_EMPTY_WAIT_S`]; none only when the long poll agrees the queue has no more
/// visible. Each message received is hidden from other receivers for `visibility_s`.
pub async fn read_on(
    client: &aws_sdk_sqs::Client,
    url: &str,
    max: i32,
    visibility_s: i32,
) -> Result<Vec<aws_sdk_sqs::types::Message>, StoreError> {
    let messages = receive(client, url, max, visibility_s, 0).await?;
    if !messages.is_empty() {
        return Ok(messages);
    }
    receive(client, url, max, visibility_s, CONFIRM_EMPTY_WAIT_S).await
}

impl SqsDlq {
    pub fn new(client: aws_sdk_sqs::Client, prefix: &str) -> Self {
        Self {
            client,
            prefix: prefix.to_owned(),
        }
    }

    pub fn queue_name(&self, subscription: &str) -> String {
        format!("{}{subscription}-dlq", self.prefix)
    }

    /// Creates the subscription's queue if it does not exist; returns its URL.
    pub async fn provision(&self, subscription: &str) -> Result<String, StoreError> {
        let created = self
            .client
            .create_queue()
            .queue_name(self.queue_name(subscription))
            .send()
            .await;
        let created =
            created.map_err(|e| sqs_error(aws_sdk_sqs::error::DisplayErrorContext(&e)))?;
        created.queue_url.ok_or_else(|| sqs_error("no queue URL"))
    }

    /// The next messages of a queue being read through (see [`read_on`]).
    async fn read_on(
        &self,
        url: &str,
        max: i32,
        visibility_s: i32,
    ) -> Result<Vec<aws_sdk_sqs::types::Message>, StoreError> {
        read_on(&self.client, url, max, visibility_s).await
    }

    /// Reads every message of a subscription's queue once (each is hidden while the
    /// sweep runs, so none is read twice), deletes those `doomed` picks and makes the
    /// others visible again; returns how many it picked. SQS has no way to look at a
    /// message without receiving it: this is how an operator's tool searches a queue.
    async fn sweep(
        &self,
        subscription: &str,
        doomed: impl Fn(&serde_json::Value) -> bool,
        delete: bool,
    ) -> Result<u64, StoreError> {
        let url = self.url(subscription).await?;
        let mut picked = 0;
        let mut kept = Vec::new();
        loop {
            let messages = self.read_on(&url, 10, SWEEP_VISIBILITY_S).await?;
            if messages.is_empty() {
                break;
            }
            for message in messages {
                let body: serde_json::Value =
                    serde_json::from_str(message.body().unwrap_or_default()).unwrap_or_default();
                let handle = message.receipt_handle().unwrap_or_default().to_owned();
                if doomed(&body) {
                    picked += 1;
                    if delete {
                        self.remove(subscription, &handle).await?;
                        continue;
                    }
                }
                kept.push(handle);
            }
        }
        for handle in kept {
            self.client
                .change_message_visibility()
                .queue_url(&url)
                .receipt_handle(handle)
                .visibility_timeout(0)
                .send()
                .await
                .map_err(|e| sqs_error(aws_sdk_sqs::error::DisplayErrorContext(&e)))?;
        }
        Ok(picked)
    }

    async fn url(&self, subscription: &str) -> Result<String, StoreError> {
        let found = self
            .client
            .get_queue_url()
            .queue_name(self.queue_name(subscription))
            .send()
            .await;
        let found = found.map_err(|e| sqs_error(aws_sdk_sqs::error::DisplayErrorContext(&e)))?;
        found.queue_url.ok_or_else(|| sqs_error("no queue URL"))
    }
}

#[async_trait]
impl DeadLetterQueue for SqsDlq {
    async fn put(&self, letter: &DeadLetter) -> Result<(), StoreError> {
        let body = serde_json::to_string(letter).map_err(invalid)?;
        let url = self.url(&letter.subscription).await?;
        self.client
            .send_message()
            .queue_url(url)
            .message_body(body)
            .send()
            .await
            .map_err(|e| sqs_error(aws_sdk_sqs::error::DisplayErrorContext(&e)))?;
        Ok(())
    }

    async fn list(&self, subscription: &str, limit: usize) -> Result<Vec<DeadLetter>, StoreError> {
        let url = self.url(subscription).await?;
        let mut letters = Vec::new();
        while letters.len() < limit {
            let wanted = (limit - letters.len()).min(10) as i32;
            let messages = self.read_on(&url, wanted, 60).await?;
            if messages.is_empty() {
                break;
            }
            for message in messages {
                let mut letter: DeadLetter =
                    serde_json::from_str(message.body().unwrap_or_default()).map_err(invalid)?;
                letter.id = message.receipt_handle().unwrap_or_default().to_owned();
                letters.push(letter);
            }
        }
        Ok(letters)
    }

    async fn remove(&self, subscription: &str, id: &str) -> Result<(), StoreError> {
        let url = self.url(subscription).await?;
        self.client
            .delete_message()
            .queue_url(url)
            .receipt_handle(id)
            .send()
            .await
            .map_err(|e| sqs_error(aws_sdk_sqs::error::DisplayErrorContext(&e)))?;
        Ok(())
    }

    async fn depth(&self, subscription: &str) -> Result<usize, StoreError> {
        use aws_sdk_sqs::types::QueueAttributeName;
        let url = self.url(subscription).await?;
        let attributes = self
            .client
            .get_queue_attributes()
            .queue_url(url)
            .attribute_names(QueueAttributeName::ApproximateNumberOfMessages)
            .attribute_names(QueueAttributeName::ApproximateNumberOfMessagesNotVisible)
            .send()
            .await
            .map_err(|e| sqs_error(aws_sdk_sqs::error::DisplayErrorContext(&e)))?;
        let map = attributes.attributes.unwrap_or_default();
        let count = |name: QueueAttributeName| {
            map.get(&name)
                .and_then(|v| v.parse::<usize>().ok())
                .unwrap_or(0)
        };
        Ok(count(QueueAttributeName::ApproximateNumberOfMessages)
            + count(QueueAttributeName::ApproximateNumberOfMessagesNotVisible))
    }

    async fn remove_about(&self, subscription: &str, pk: &str) -> Result<u64, StoreError> {
        self.sweep(subscription, |letter| is_about(letter, pk), true)
            .await
    }

    async fn count_about(&self, subscription: &str, pk: &str) -> Result<u64, StoreError> {
        self.sweep(subscription, |letter| is_about(letter, pk), false)
            .await
    }
}

/// The calls this module makes, as declared access patterns (see `infra::access`).
pub(crate) mod access {
    use crate::access::{AccessPattern as P, Op, Order::Forward, Sk};
    use events_schema::Context;

    /// The dead-letter rows' calls in `$table`: `DLQ#<subscription>` partitions whose sort
    /// key is the letter's id: its record's feed position and key (`DeadLetter::id_for`).
    macro_rules! letters {
        ($table:ident) => {
            [
                P::new(
                    "dead-letter an event",
                    Context::$table,
                    Op::Put,
                    "DLQ#",
                    Sk::exact(crate::access::POSITION),
                    "a projection failing an event past its retries",
                )
                .volume(0.0)
                .size(1, 2000),
                P::new(
                    "a subscription's dead letters",
                    Context::$table,
                    Op::query(Forward, false, true),
                    "DLQ#",
                    Sk::Whole,
                    "/metrics (queue depth), erasure (letters about the user), vitals dlq",
                )
                .volume(0.0)
                .size(1, 2000),
                P::new(
                    "a page of a subscription's dead letters",
                    Context::$table,
                    Op::query(Forward, true, true),
                    "DLQ#",
                    Sk::Whole,
                    "vitals dlq list, redrive",
                )
                .volume(0.0)
                .size(10, 2000),
                P::new(
                    "remove a dead letter",
                    Context::$table,
                    Op::Delete,
                    "DLQ#",
                    Sk::exact(crate::access::POSITION),
                    "redrive, erasure",
                )
                .volume(0.0)
                .size(1, 2000),
            ]
        };
    }

    /// The dead-letter rows' calls, table by table (every table a subscription writes).
    pub static ACCESS: &[[P; 4]] = &[
        letters!(Identity),
        letters!(Nutrition),
        letters!(Activity),
        letters!(Sleep),
        letters!(Goals),
        letters!(Integrations),
        letters!(Insights),
        letters!(Dashboard),
    ];
}

#[cfg(test)]
mod tests {
    use super::*;

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
