//! Letters as SQS messages, one queue per subscription (the AWS shape), and reading a
//! queue through ([`read_on`]), which the redrive of on-failure queues uses too.

use super::letter::{DeadLetter, DeadLetterQueue, invalid, is_about};
use crate::store::StoreError;
use async_trait::async_trait;

/// Letters as SQS messages, one queue per subscription (the AWS shape). A listed
/// letter's id is its receipt handle, which `remove` deletes.
#[derive(Debug, Clone)]
pub struct SqsDlq {
    client: aws_sdk_sqs::Client,
    pub(super) prefix: String,
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
