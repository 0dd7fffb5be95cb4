//! `vitals redrive-failures`: the batches a projector function could not apply, as its
//! on-failure queue describes them, fetched again from their stream and applied.

use crate::storage;
use anyhow::Context as _;
use infra::Store;
use std::collections::HashSet;
use std::sync::Arc;

/// The on-failure queue of the projector function writing `target`'s table (see
/// `deploy::template`): every mapping of that function fails over to it.
pub fn failure_queue(prefix: &str, target: events_schema::Context) -> String {
    format!("{prefix}{target}-projector-failures")
}

/// What `vitals redrive-failures` did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct FailuresRedriven {
    /// Batches whose records were all fetched and applied (their messages deleted).
    pub batches: usize,
    /// Records applied (to every subscription of the projector on the record's stream, or
    /// dead-lettered there).
    pub records: usize,
    /// Batches the stream no longer retains (in part or whole), left in the queue:
    /// `shard start..end` of each.
    pub expired: Vec<String>,
    /// Messages that are not batch descriptions, left in the queue.
    pub unreadable: usize,
    /// Batches whose last record was not reached within the pages a batch is read in
    /// (the shard answered empty while behind), left in the queue for a later pass:
    /// `shard start..end` of each.
    pub incomplete: Vec<String>,
}

/// Seconds a message being redriven stays hidden from other readers.
const REDRIVE_VISIBILITY_S: i32 = 120;

/// What tells a message apart across receives: its id (a receipt handle changes with
/// every receive), or else its body's digest and the body itself.
fn message_identity(message: &aws_sdk_sqs::types::Message) -> String {
    match message.message_id() {
        Some(id) => format!("id:{id}"),
        None => format!(
            "body:{}:{}",
            message.md5_of_body().unwrap_or_default(),
            message.body().unwrap_or_default()
        ),
    }
}

/// What `vitals redrive-failures` talks to: the tables the records are applied to, the
/// on-failure queues and the streams.
#[derive(Clone)]
pub struct FailureClients {
    pub store: Arc<dyn Store>,
    pub sqs: aws_sdk_sqs::Client,
    pub kinesis: aws_sdk_kinesis::Client,
    pub table_prefix: String,
}

impl std::fmt::Debug for FailureClients {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FailureClients")
            .field("table_prefix", &self.table_prefix)
            .finish_non_exhaustive()
    }
}

impl FailureClients {
    /// The clients of the AWS configuration `aws` names.
    pub async fn of(aws: &crate::cli::AwsArgs) -> Self {
        let config = storage::aws_config(aws).await;
        Self {
            store: Arc::new(storage::dynamodb_on(&config, aws)),
            sqs: infra::aws_client::sqs(&config),
            kinesis: infra::aws_client::kinesis(&config),
            table_prefix: aws.table_prefix.clone(),
        }
    }
}

/// Reads the on-failure queue of `target`'s projector function, fetches each described
/// batch back from its Kinesis shard and applies its records through the function's own
/// code (the subscriptions writing `target` of the stream the record came from). One pass: every
/// message is handled at most once (one that reappears is hidden again, not handled
/// twice), and the queue is taken for read through only when a long poll finds nothing
/// more (see [`infra::dlq::read_on`]).
pub async fn redrive_failures(
    aws: &crate::cli::AwsArgs,
    target: events_schema::Context,
) -> anyhow::Result<FailuresRedriven> {
    redrive_failures_with(&FailureClients::of(aws).await, target).await
}

/// [`redrive_failures`] through `clients`.
pub async fn redrive_failures_with(
    clients: &FailureClients,
    target: events_schema::Context,
) -> anyhow::Result<FailuresRedriven> {
    let handlers = projectors::registry::projector_handlers(clients.store.clone(), target);
    let queue = failure_queue(&clients.table_prefix, target);
    let url = queue_url(&clients.sqs, &queue).await?;
    let mut outcome = FailuresRedriven::default();
    // The messages this pass has received: one it left in the queue (unreadable, expired,
    // not read to its end) reappears once its visibility timeout has passed, and is not
    // handled again, so the pass ends.
    let mut seen = HashSet::new();
    loop {
        let messages = infra::dlq::read_on(&clients.sqs, &url, 10, REDRIVE_VISIBILITY_S)
            .await
            .context("reading the on-failure queue")?;
        if messages.is_empty() {
            return Ok(outcome);
        }
        for message in messages {
            if !seen.insert(message_identity(&message)) {
                // Hidden again for as long as a pass keeps what it received: the reads
                // that follow find what this pass has not seen yet.
                hide_again(&clients.sqs, &url, &message).await?;
                continue;
            }
            redrive_message(clients, &handlers, &queue, &url, &message, &mut outcome).await?;
        }
    }
}

/// The URL of the SQS queue named `queue`.
async fn queue_url(sqs: &aws_sdk_sqs::Client, queue: &str) -> anyhow::Result<String> {
    sqs.get_queue_url()
        .queue_name(queue)
        .send()
        .await
        .with_context(|| format!("finding the queue {queue}"))?
        .queue_url
        .with_context(|| format!("no URL for the queue {queue}"))
}

/// Hides `message` of the queue at `url` again for [`REDRIVE_VISIBILITY_S`]: this pass
/// has handled it already.
async fn hide_again(
    sqs: &aws_sdk_sqs::Client,
    url: &str,
    message: &aws_sdk_sqs::types::Message,
) -> anyhow::Result<()> {
    sqs.change_message_visibility()
        .queue_url(url)
        .receipt_handle(message.receipt_handle().unwrap_or_default())
        .visibility_timeout(REDRIVE_VISIBILITY_S)
        .send()
        .await
        .context("hiding a message already handled in this pass")?;
    Ok(())
}

/// Redrives the batch that `message` (of the queue named `queue`, at `url`) describes,
/// counted in `outcome`: fetches its records back from the stream and applies them
/// through `handlers`, then deletes the message unless the stream no longer retains the
/// whole batch. A message that is not a batch description, or a batch not read to its
/// end, is left in the queue.
async fn redrive_message(
    clients: &FailureClients,
    handlers: &[projectors::runtime::Handler],
    queue: &str,
    url: &str,
    message: &aws_sdk_sqs::types::Message,
    outcome: &mut FailuresRedriven,
) -> anyhow::Result<()> {
    let batch = match infra::feed::failures::parse(message.body().unwrap_or_default()) {
        Ok(batch) => batch,
        Err(error) => {
            tracing::warn!(%queue, %error, "leaving a message that is not a batch description");
            outcome.unreadable += 1;
            return Ok(());
        }
    };
    let described = format!(
        "{} {}..{}",
        batch.shard_id, batch.start_sequence_number, batch.end_sequence_number
    );
    let fetched =
        infra::feed::failures::fetch(&clients.kinesis, &batch, &clients.table_prefix).await?;
    if fetched.incomplete {
        // Read again, whole, by a later pass.
        outcome.incomplete.push(described);
        return Ok(());
    }
    if fetched.expired {
        outcome.expired.push(described);
    }
    outcome.records += apply_fetched(handlers, &fetched).await?;
    if !fetched.expired {
        clients
            .sqs
            .delete_message()
            .queue_url(url)
            .receipt_handle(message.receipt_handle().unwrap_or_default())
            .send()
            .await
            .context("deleting a redriven batch's message")?;
        outcome.batches += 1;
    }
    Ok(())
}

/// Applies each decoded record of `fetched` through those of `handlers` on the stream it
/// came from; returns how many records at least one handler applied.
async fn apply_fetched(
    handlers: &[projectors::runtime::Handler],
    fetched: &infra::feed::failures::Fetched,
) -> anyhow::Result<usize> {
    let mut records = 0;
    for (_, record) in &fetched.records {
        let Ok(record) = record else { continue };
        let mine = handlers
            .iter()
            .filter(|h| h.projector().source() == record.table);
        let mut applied = false;
        for handler in mine {
            handler.handle(record).await?;
            applied = true;
        }
        records += usize::from(applied);
    }
    Ok(records)
}
