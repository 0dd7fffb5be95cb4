//! The worker loop of one subscription: poll the change feed, decode outbox events of
//! the source context (every other record is skipped), apply each with retries and
//! backoff, dead-letter what still fails (the whole record) and go on, then checkpoint
//! the batch. Also: metrics per subscription, and redrive of dead letters.

use crate::projector::{ProjectionError, Projector};
use events_schema::envelope::EventEnvelope;
use events_schema::ids::UserId;
use events_schema::keys::PartitionKey;
use infra::StoreError;
use infra::dlq::{DeadLetter, DeadLetterQueue};
use infra::feed::{ChangeFeed, FeedRecord};
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::sync::watch;
use tokio::task::JoinSet;
use tracing::Instrument;

/// How a subscription retries a failing event before dead-lettering it.
#[derive(Debug, Clone, Copy)]
pub struct RetryPolicy {
    pub attempts: u32,
    pub first_backoff: Duration,
    pub max_backoff: Duration,
}

impl RetryPolicy {
    /// Applies `event`, retrying failures with exponential backoff; an event that does
    /// not decode, that a newer release wrote, or that the projector rejects is not
    /// retried. `on_failure` sees every
    /// failed attempt. On failure returns the last error and the attempts made.
    pub async fn apply(
        &self,
        projector: &dyn Projector,
        event: &EventEnvelope,
        on_failure: impl Fn(u32, &ProjectionError),
    ) -> Result<(), (ProjectionError, u32)> {
        let mut backoff = self.first_backoff;
        let mut attempt = 1;
        loop {
            let error = match projector.apply(event).await {
                Ok(()) => return Ok(()),
                Err(error) => error,
            };
            on_failure(attempt, &error);
            let retryable = !matches!(
                error,
                ProjectionError::Decode(_)
                    | ProjectionError::Rejected(_)
                    | ProjectionError::NewerVersion(_)
            );
            if !retryable || attempt >= self.attempts {
                return Err((error, attempt));
            }
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(self.max_backoff);
            attempt += 1;
        }
    }
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            attempts: 5,
            first_backoff: Duration::from_millis(20),
            max_backoff: Duration::from_secs(2),
        }
    }
}

/// Counters of one subscription.
#[derive(Debug, Default)]
pub struct Metrics {
    /// Events applied.
    pub processed: AtomicU64,
    /// Failed attempts (each retry counts).
    pub failed: AtomicU64,
    /// Records put in the dead-letter queue.
    pub dead_lettered: AtomicU64,
}

/// Records read per poll.
const BATCH: usize = 256;
/// How long an idle worker waits for new records before polling again anyway.
const IDLE_WAIT: Duration = Duration::from_secs(1);

pub struct Worker {
    pub projector: Arc<dyn Projector>,
    pub feed: Arc<dyn ChangeFeed>,
    pub dlq: Arc<dyn DeadLetterQueue>,
    pub policy: RetryPolicy,
    pub metrics: Arc<Metrics>,
}

impl Worker {
    pub fn new(
        projector: Arc<dyn Projector>,
        feed: Arc<dyn ChangeFeed>,
        dlq: Arc<dyn DeadLetterQueue>,
    ) -> Self {
        Self {
            projector,
            feed,
            dlq,
            policy: RetryPolicy::default(),
            metrics: Arc::new(Metrics::default()),
        }
    }

    pub fn name(&self) -> &'static str {
        self.projector.name()
    }

    /// Processes one batch; returns how many records it read (0 when caught up).
    pub async fn run_once(&self) -> Result<usize, StoreError> {
        let batch = self
            .feed
            .poll_events(self.name(), self.projector.source(), BATCH)
            .await?;
        // Events of one partition (one user) are applied in feed order; partitions are
        // independent, so they are applied concurrently and their writes share commits.
        let mut by_partition: HashMap<&str, Vec<FeedRecord>> = HashMap::new();
        for record in batch
            .records
            .iter()
            .filter(|r| r.table == self.projector.source())
        {
            by_partition
                .entry(record.pk.as_str())
                .or_default()
                .push(record.clone());
        }
        let mut tasks = JoinSet::new();
        for records in by_partition.into_values() {
            let handler = self.handler();
            tasks.spawn(async move {
                for record in &records {
                    handler.handle(record).await?;
                }
                Ok::<(), StoreError>(())
            });
        }
        while let Some(done) = tasks.join_next().await {
            done.map_err(|e| StoreError::Backend(format!("projector task failed: {e}")))??;
        }
        self.feed.commit(self.name(), &batch).await?;
        Ok(batch.records.len())
    }

    fn handler(&self) -> Handler {
        Handler {
            projector: self.projector.clone(),
            dlq: self.dlq.clone(),
            policy: self.policy,
            metrics: self.metrics.clone(),
        }
    }

    /// Runs until `shutdown` becomes true. Storage failures of the feed itself are
    /// logged and retried after a pause; nothing is skipped.
    pub async fn run(self, mut shutdown: watch::Receiver<bool>) {
        while !*shutdown.borrow() {
            match self.run_once().await {
                Ok(0) => {
                    // Caught up: the position becomes durable before the worker idles.
                    if let Err(error) = self.feed.settle(self.name(), false).await {
                        tracing::warn!(subscription = self.name(), %error, "checkpoint not written; retrying");
                    }
                    tokio::select! {
                        () = self.feed.wait(self.name(), IDLE_WAIT) => {}
                        _ = shutdown.changed() => {}
                    }
                }
                Ok(_) => {}
                Err(error) => {
                    tracing::warn!(subscription = self.name(), %error, "change feed failed; retrying");
                    tokio::select! {
                        () = tokio::time::sleep(self.policy.max_backoff) => {}
                        _ = shutdown.changed() => {}
                    }
                }
            }
        }
        if let Err(error) = self.feed.settle(self.name(), true).await {
            tracing::warn!(subscription = self.name(), %error, "checkpoint not written at stop");
        }
    }
}

/// What applies one record for one subscription: the projector with its retry policy,
/// dead-letter queue and counters. Cheap to clone into concurrent tasks.
#[derive(Clone)]
pub struct Handler {
    projector: Arc<dyn Projector>,
    dlq: Arc<dyn DeadLetterQueue>,
    policy: RetryPolicy,
    metrics: Arc<Metrics>,
}

impl Handler {
    /// `projector`, dead-lettering into `dlq` with the default retry policy.
    pub fn new(projector: Arc<dyn Projector>, dlq: Arc<dyn DeadLetterQueue>) -> Self {
        Self {
            projector,
            dlq,
            policy: RetryPolicy::default(),
            metrics: Arc::new(Metrics::default()),
        }
    }

    pub fn projector(&self) -> &Arc<dyn Projector> {
        &self.projector
    }

    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// Applies `record` (retrying failures); a record that still fails becomes a dead
    /// letter, whole, and the subscription goes on. An error only when even the dead
    /// letter cannot be written: then nothing may be skipped.
    ///
    /// Everything logged meanwhile (this subscription's lines and the rows its store
    /// writes) carries the event's correlation id (the request that caused it) and its
    /// id as the causation id.
    pub async fn handle(&self, record: &FeedRecord) -> Result<(), StoreError> {
        let event = match record.envelope() {
            None => return Ok(()),
            Some(Ok(event)) => event,
            // Retrying cannot fix an undecodable record.
            Some(Err(error)) => return self.dead_letter(record, error, 1).await,
        };
        let span = self.event_span(&event);
        // What the projection records (a wearable's sync, an eraser's events) carries
        // the same correlation id.
        let apply = self.apply(record, &event).instrument(span);
        match event.correlation_id.clone() {
            Some(id) => commands::correlation::scope(id, apply).await,
            None => apply.await,
        }
    }

    /// The span of this subscription's application of `event`: its name, the event's
    /// type and id (the causation id) and the request that caused it (the correlation
    /// id), which every line logged in it carries.
    pub(crate) fn event_span(&self, event: &EventEnvelope) -> tracing::Span {
        tracing::info_span!(
            "event",
            subscription = self.projector.name(),
            event_type = %event.event_type,
            causation_id = %event.event_id,
            correlation_id = event.correlation_id.as_deref().unwrap_or("-"),
        )
    }

    async fn apply(&self, record: &FeedRecord, event: &EventEnvelope) -> Result<(), StoreError> {
        let outcome = self
            .policy
            .apply(&*self.projector, event, |attempt, error| {
                self.metrics.failed.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(subscription = self.projector.name(), event = %event.event_id, attempt, %error, "projection failed");
            })
            .await;
        match outcome {
            Ok(()) => {
                self.metrics.processed.fetch_add(1, Ordering::Relaxed);
                self.observe_lag(event);
                tracing::info!("event applied");
                Ok(())
            }
            Err((error, attempts)) => self.dead_letter(record, error.to_string(), attempts).await,
        }
    }

    /// Observes how long after its recording `event` was applied.
    pub(crate) fn observe_lag(&self, event: &EventEnvelope) {
        let recorded = event.recorded_at.datetime();
        let seconds = (chrono::Utc::now() - recorded).num_milliseconds().max(0) as f64 / 1000.0;
        let labels = crate::applied_lag::BySubscription {
            subscription: self.projector.name(),
        };
        crate::applied_lag::APPLIED_LAG
            .get_or_create(&labels)
            .observe(seconds);
    }

    async fn dead_letter(
        &self,
        record: &FeedRecord,
        error: String,
        attempts: u32,
    ) -> Result<(), StoreError> {
        let letter = DeadLetter {
            id: DeadLetter::id_for(record),
            subscription: self.projector.name().to_owned(),
            record: record.clone(),
            error,
            attempts,
        };
        self.dlq.put(&letter).await?;
        // The user's erasure may have finished between the projection's last look and
        // this put (its eraser cleared the letters there were then): the letter would
        // keep their data after "complete".
        if let Ok(PartitionKey::User(user)) = record.pk.parse() {
            match self.drop_if_erased(&user).await {
                Ok(true) => return Ok(()),
                Ok(false) => {}
                // The letter is written: a retry of the record would not come back here
                // (the projection's first look would find the tombstone), so this is
                // said, not retried.
                Err(error) => {
                    tracing::warn!(
                        subscription = self.projector.name(),
                        %error,
                        "could not tell whether a dead letter's user is erased"
                    );
                }
            }
        }
        self.metrics.dead_lettered.fetch_add(1, Ordering::Relaxed);
        tracing::error!(subscription = self.projector.name(), position = %record.position, "record dead-lettered");
        Ok(())
    }

    /// Removes the letters about `user`'s partition if they are erased from the target
    /// table; whether it removed any. (An SQS queue's sweep reads it through, a long poll
    /// confirming its end, so a letter just put is found.)
    async fn drop_if_erased(&self, user: &UserId) -> Result<bool, StoreError> {
        if !self.projector.erased(user).await? {
            return Ok(false);
        }
        let pk = &PartitionKey::User(user.clone()).to_string();
        let subscription = self.projector.name();
        // By partition, not by id: an SQS queue removes by receipt handle only.
        if self.dlq.remove_about(subscription, pk).await? > 0 {
            tracing::info!(subscription, "an erased user's dead letter dropped");
            return Ok(true);
        }
        tracing::warn!(
            subscription,
            "an erased user's dead letter was not found to drop"
        );
        Ok(false)
    }
}

/// What a redrive did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Redriven {
    pub applied: usize,
    pub still_failing: usize,
}

/// Applies a subscription's dead letters again, oldest first; each one that applies
/// leaves the queue, the others stay.
pub async fn redrive(
    projector: &dyn Projector,
    dlq: &dyn DeadLetterQueue,
) -> Result<Redriven, StoreError> {
    let mut outcome = Redriven::default();
    let letters = dlq.list(projector.name(), 10_000).await?;
    for letter in letters {
        let applied = match letter.record.envelope() {
            Some(Ok(event)) => projector.apply(&event).await.is_ok(),
            _ => false,
        };
        if applied {
            dlq.remove(projector.name(), &letter.id).await?;
            outcome.applied += 1;
        } else {
            outcome.still_failing += 1;
        }
    }
    Ok(outcome)
}
