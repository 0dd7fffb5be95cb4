//! The embedded store's change log as a change feed. Checkpoints live in the same redb
//! file, written durably; consumers wake on commits instead of polling.

use super::{Batch, ChangeFeed, FeedRecord, Lag, Progress};
use crate::embedded::EmbeddedStore;
use crate::store::StoreError;
use async_trait::async_trait;
use std::sync::Arc;
use std::time::Duration;

#[derive(Debug, Clone)]
pub struct EmbeddedFeed {
    store: Arc<EmbeddedStore>,
}

impl EmbeddedFeed {
    pub fn new(store: Arc<EmbeddedStore>) -> Self {
        Self { store }
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
        let after = self.store.checkpoint(consumer).await?;
        let changes = self.store.changes_after(after, limit.max(1)).await?;
        let end = changes.last().map_or(after, |c| c.seq);
        let records = changes
            .into_iter()
            .map(|c| FeedRecord {
                position: c.seq.to_string(),
                table: c.table,
                pk: c.pk,
                sk: c.sk,
                old_image: c.old,
                new_image: c.new,
            })
            .collect();
        Ok(Batch {
            records,
            progress: Progress::Sequence(end),
        })
    }

    async fn commit(&self, consumer: &str, batch: &Batch) -> Result<(), StoreError> {
        match batch.progress {
            Progress::Sequence(end) if !batch.records.is_empty() => {
                self.store.set_checkpoint(consumer, end).await
            }
            _ => Ok(()),
        }
    }

    async fn lag(&self, consumer: &str) -> Result<Lag, StoreError> {
        let head = self.store.last_sequence().await?;
        Ok(Lag::Records(
            head.saturating_sub(self.store.checkpoint(consumer).await?),
        ))
    }

    async fn wait(&self, consumer: &str, at_most: Duration) {
        // Subscribe first, then compare: a commit after the comparison still wakes us.
        let mut commits = self.store.commits();
        let head = *commits.borrow_and_update();
        match self.store.checkpoint(consumer).await {
            Ok(checkpoint) if checkpoint < head => {}
            _ => {
                let _ = tokio::time::timeout(at_most, commits.changed()).await;
            }
        }
    }
}
