//! The embedded store's change log as a change feed. Checkpoints live in the same
//! store, written durably; consumers wake on commits instead of polling.
//!
//! Checkpoints are coalesced: a consumer's position moves in memory at every commit and
//! is written at most every [`CHECKPOINT_EVERY`], and whenever the consumer settles
//! (caught up, or stopping). Why: every commit to the log wakes every consumer, most
//! find nothing of their source in it, and a durable checkpoint per consumer per wake-up
//! made the checkpoints most of the writer's commits (and of the projection lag). A
//! crash re-delivers at most what was processed since the last written checkpoint,
//! which projections absorb.

use super::{Batch, ChangeFeed, FeedRecord, Lag, Progress};
use crate::embedded::{ChangeRecord, EmbeddedStore};
use crate::store::StoreError;
use async_trait::async_trait;
use events_schema::Context;
use events_schema::keys::prefix;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Records `poll_events` scans per record it may return, at most.
const SCAN_PER_RECORD: usize = 64;

impl From<ChangeRecord> for FeedRecord {
    fn from(c: ChangeRecord) -> Self {
        FeedRecord {
            position: c.seq.to_string(),
            table: c.table,
            pk: c.pk,
            sk: c.sk,
            old_image: c.old,
            new_image: c.new,
            fault: None,
        }
    }
}

/// How long a consumer's position may run ahead of its written checkpoint.
pub const CHECKPOINT_EVERY: Duration = Duration::from_millis(250);

/// A consumer's position: where it is, what is written, and when it was written.
#[derive(Debug, Clone, Copy)]
struct Position {
    seq: u64,
    written: u64,
    written_at: Instant,
}

#[derive(Debug, Clone)]
pub struct EmbeddedFeed {
    store: Arc<EmbeddedStore>,
    positions: Arc<Mutex<HashMap<String, Position>>>,
}

impl EmbeddedFeed {
    pub fn new(store: Arc<EmbeddedStore>) -> Self {
        Self {
            store,
            positions: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    fn remembered(&self, consumer: &str) -> Option<Position> {
        self.positions
            .lock()
            .ok()
            .and_then(|p| p.get(consumer).copied())
    }

    /// The consumer's position: in memory if it moved in this process, else as written.
    async fn position(&self, consumer: &str) -> Result<u64, StoreError> {
        match self.remembered(consumer) {
            Some(position) => Ok(position.seq),
            None => self.store.checkpoint(consumer).await,
        }
    }

    /// Writes the consumer's position if it is ahead of its checkpoint and `due` says so.
    async fn write_position(
        &self,
        consumer: &str,
        due: impl Fn(&Position) -> bool,
    ) -> Result<(), StoreError> {
        let Some(position) = self.remembered(consumer) else {
            return Ok(());
        };
        if position.seq <= position.written || !due(&position) {
            return Ok(());
        }
        self.store.set_checkpoint(consumer, position.seq).await?;
        if let Ok(mut positions) = self.positions.lock()
            && let Some(p) = positions.get_mut(consumer)
        {
            p.written = p.written.max(position.seq);
            p.written_at = Instant::now();
        }
        Ok(())
    }

    /// Deletes the change records every one of `consumers` has processed (see
    /// `EmbeddedStore::trim_changes`); returns how many.
    pub async fn trim_processed(&self, consumers: &[&str]) -> Result<usize, StoreError> {
        let mut lowest = u64::MAX;
        for consumer in consumers {
            lowest = lowest.min(self.store.checkpoint(consumer).await?);
        }
        if consumers.is_empty() || lowest == 0 {
            return Ok(0);
        }
        let mut trimmed = 0;
        loop {
            let n = self.store.trim_changes(lowest, 10_000).await?;
            trimmed += n;
            if n < 10_000 {
                return Ok(trimmed);
            }
        }
    }
}

#[async_trait]
impl ChangeFeed for EmbeddedFeed {
    async fn poll(&self, consumer: &str, limit: usize) -> Result<Batch, StoreError> {
        let after = self.position(consumer).await?;
        let changes = self.store.changes_after(after, limit.max(1)).await?;
        let end = changes.last().map_or(after, |c| c.seq);
        let records = changes.into_iter().map(FeedRecord::from).collect();
        Ok(Batch {
            records,
            progress: Progress::Sequence(end),
        })
    }

    async fn poll_events(
        &self,
        consumer: &str,
        source: Context,
        limit: usize,
    ) -> Result<Batch, StoreError> {
        let after = self.position(consumer).await?;
        let (changes, end) = self
            .store
            .matching_changes_after(after, limit, limit * SCAN_PER_RECORD, source, prefix::EVENT)
            .await?;
        Ok(Batch {
            records: changes.into_iter().map(FeedRecord::from).collect(),
            progress: Progress::Sequence(end),
        })
    }

    async fn commit(&self, consumer: &str, batch: &Batch) -> Result<(), StoreError> {
        let Progress::Sequence(end) = batch.progress else {
            return Ok(());
        };
        if self.remembered(consumer).is_none() {
            let written = self.store.checkpoint(consumer).await?;
            if let Ok(mut positions) = self.positions.lock() {
                positions.entry(consumer.to_owned()).or_insert(Position {
                    seq: written,
                    written,
                    written_at: Instant::now(),
                });
            }
        }
        if let Ok(mut positions) = self.positions.lock()
            && let Some(p) = positions.get_mut(consumer)
        {
            p.seq = p.seq.max(end);
        }
        self.settle(consumer, false).await
    }

    async fn settle(&self, consumer: &str, now: bool) -> Result<(), StoreError> {
        self.write_position(consumer, |p| {
            now || p.written_at.elapsed() >= CHECKPOINT_EVERY
        })
        .await
    }

    async fn lag(&self, consumer: &str) -> Result<Lag, StoreError> {
        let head = self.store.last_sequence().await?;
        Ok(Lag::Records(
            head.saturating_sub(self.position(consumer).await?),
        ))
    }

    async fn wait(&self, consumer: &str, at_most: Duration) {
        // Subscribe first, then compare: a commit after the comparison still wakes us.
        let mut commits = self.store.commits();
        let head = *commits.borrow_and_update();
        match self.position(consumer).await {
            Ok(checkpoint) if checkpoint < head => {}
            _ => {
                let _ = tokio::time::timeout(at_most, commits.changed()).await;
            }
        }
    }
}
