//! [`Guarded`]: a projection that leaves erased users alone (see the module docs of
//! `erasure`).

use crate::projector::{ProjectionError, Projector, Subscription};
use async_trait::async_trait;
use events_schema::envelope::EventEnvelope;
use events_schema::ids::UserId;
use events_schema::keys::PartitionKey;
use infra::store::Key;
use infra::{Store, StoreError};
use std::sync::Arc;

/// A projection that leaves erased users alone (see the module docs).
pub struct Guarded {
    inner: Arc<dyn Projector>,
    store: Arc<dyn Store>,
}

impl Guarded {
    pub fn new(inner: Arc<dyn Projector>, store: Arc<dyn Store>) -> Self {
        Self { inner, store }
    }

    /// Whether the target table holds the user's tombstone. `consistent`: a strongly
    /// consistent read (twice the read units of an eventually consistent one on DynamoDB).
    async fn holds_tombstone(&self, tombstone: &Key, consistent: bool) -> Result<bool, StoreError> {
        Ok(self
            .store
            .get(self.inner.target(), tombstone, consistent)
            .await?
            .is_some())
    }

    /// Drains what a late write left of an erased user in the target table.
    async fn sweep(&self, user: &UserId) -> Result<(), StoreError> {
        let pk = PartitionKey::User(user.clone()).to_string();
        let swept = infra::store::drain_partition(&*self.store, self.inner.target(), &pk).await?;
        if swept > 0 {
            tracing::info!(
                subscription = self.inner.name(),
                swept,
                "swept rows written for an erased user"
            );
        }
        Ok(())
    }
}

#[async_trait]
impl Projector for Guarded {
    fn subscription(&self) -> Subscription {
        self.inner.subscription()
    }

    async fn erased(&self, user: &UserId) -> Result<bool, StoreError> {
        self.holds_tombstone(&Key::tombstone(user), true).await
    }

    async fn apply(&self, event: &EventEnvelope) -> Result<(), ProjectionError> {
        let Some(user) = &event.user_id else {
            return self.inner.apply(event).await;
        };
        // The first look only spares an erased user's event the work: it may read a
        // replica that has not seen a fresh tombstone yet (half the read units), because
        // the second look, strongly consistent, is what keeps the guarantee: whatever
        // the event wrote, or whatever error it met, is swept if the user is erased.
        let tombstone = Key::tombstone(user);
        if self.holds_tombstone(&tombstone, false).await? {
            self.sweep(user).await?;
            return Ok(());
        }
        let applied = self.inner.apply(event).await;
        if self.holds_tombstone(&tombstone, true).await? {
            // Erased while this event was applied: whatever it wrote goes, and an error
            // of an erased user's event is not worth a dead letter.
            self.sweep(user).await?;
            return Ok(());
        }
        applied
    }
}
