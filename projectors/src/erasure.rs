//! Account erasure on the projector side.
//!
//! - [`Eraser`] (`erase-<context>`, one per context but identity): on identity's
//!   `AccountDeletionRequested` it writes the context's tombstone, deletes what the
//!   context owns of the user (see `commands::erasure`), drains `USER#<id>` in pages and
//!   publishes `PartitionDrained`. Redelivered after a crash, it simply finishes.
//! - [`Completer`] (`identity-from-<context>-erasure`): ticks the context off on
//!   identity's tombstone; whichever sees the last one deletes the email reservation,
//!   drains identity's partition and marks the erasure `complete`.
//! - [`Guarded`]: wraps every projection so nothing of an erased user comes back: an
//!   event of a user with a tombstone in the target table is not applied, and sweeps the
//!   user's partition instead (a worker that died between its write and its second look
//!   may have left a row: the redelivery removes it); a write that raced the tombstone is
//!   swept away right after (the tombstone is checked again once the event is applied;
//!   any write that landed after the eraser's drain passed is therefore seen and
//!   drained).

use crate::projector::{ProjectionError, Projector, Subscription};
use async_trait::async_trait;
use commands::erasure;
use commands::outbox::event_item;
use events_schema::Context;
use events_schema::envelope::EventEnvelope;
use events_schema::events::erasure::PartitionDrained;
use events_schema::events::identity::AccountDeletionRequested;
use events_schema::ids::{EventId, UserId};
use events_schema::keys::{PartitionKey, erased};
use events_schema::time::Timestamp;
use infra::dlq::DeadLetterQueue;
use infra::store::{Key, Update};
use infra::table::{Action, ContextTable, Table};
use infra::{Store, StoreError};
use serde_json::{Value, json};
use std::sync::Arc;

/// Every context that drains on identity's request (identity itself finishes last).
/// Not environment: it holds no user's data (weather and air per place and hour) and
/// publishes no changes.
pub const DRAINING: [Context; 7] = [
    Context::Nutrition,
    Context::Activity,
    Context::Sleep,
    Context::Goals,
    Context::Integrations,
    Context::Insights,
    Context::Dashboard,
];

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

/// `erase-<context>`: erases a user from one context's table.
pub struct Eraser<C: ContextTable> {
    table: Table<C>,
    name: &'static str,
    /// The dead letters of the subscriptions writing this table (rows of it, or their
    /// SQS queues), and those subscriptions: letters of the user may wait in any of them,
    /// with whole item images.
    dead_letters: Arc<dyn DeadLetterQueue>,
    subscriptions: Vec<&'static str>,
}

impl<C: ContextTable> Eraser<C> {
    pub fn new(
        table: Table<C>,
        dead_letters: Arc<dyn DeadLetterQueue>,
        subscriptions: Vec<&'static str>,
    ) -> Self {
        Self {
            name: eraser_name(C::CONTEXT),
            table,
            dead_letters,
            subscriptions,
        }
    }

    /// Publishes `PartitionDrained` from the `ERASED#` partition (the user's own is
    /// gone) and marks the tombstone drained, in one transaction; the outbox item is
    /// removed right after, once the change feed has it. The event's id is derived from
    /// the user, the context and when the erasure was requested (`requested_at`): a
    /// redelivery after the removal failed writes the same item again and removes it,
    /// where a fresh id left the first one, naming the user, for ever.
    async fn publish_drained(
        &self,
        user: &UserId,
        requested_at: Timestamp,
        items_deleted: u64,
    ) -> Result<(), ProjectionError> {
        let mut event = EventEnvelope::new(
            Some(user.clone()),
            Timestamp::now(),
            &PartitionDrained {
                context: C::CONTEXT,
                items_deleted,
            },
        )
        .map_err(|e| ProjectionError::Decode(e.to_string()))?;
        event.context = C::CONTEXT;
        let seed = format!("{user}|{}|drained", C::CONTEXT);
        event.event_id = EventId::derived(&seed, requested_at);
        let (pk, _) = erased(user);
        let outbox = event_item(&pk.to_string(), &event)
            .map_err(|e| ProjectionError::Rejected(e.to_string()))?;
        let outbox_key = Key::of(&outbox)?;
        self.table
            .transact(vec![
                Action::Put {
                    item: outbox,
                    condition: None,
                },
                Action::Update {
                    key: Key::tombstone(user),
                    update: Update::default().set(erasure::STATUS, json!("drained")),
                    condition: None,
                },
            ])
            .await?;
        self.table.delete(&outbox_key, None).await?;
        Ok(())
    }
}

#[async_trait]
impl<C: ContextTable> Projector for Eraser<C> {
    fn subscription(&self) -> Subscription {
        Subscription {
            name: self.name,
            source: Context::Identity,
            target: C::CONTEXT,
            consumes: crate::projector::event_types![AccountDeletionRequested],
        }
    }

    async fn apply(&self, event: &EventEnvelope) -> Result<(), ProjectionError> {
        if !event.is::<AccountDeletionRequested>() {
            return Ok(());
        }
        let user = event
            .user_id
            .clone()
            .ok_or_else(|| ProjectionError::Decode("deletion request without a user".into()))?;
        erasure::begin(&self.table, &user, event.occurred_at).await?;
        let user_pk = PartitionKey::User(user.clone()).to_string();
        let queues = &self.dead_letters;
        let mut deleted = queues
            .remove_about_each(&self.subscriptions, &user_pk)
            .await?;
        deleted += erasure::erase(&self.table, &user).await?;
        self.publish_drained(&user, event.occurred_at, deleted)
            .await
    }
}

/// `identity-from-<context>-erasure`: records in identity's tombstone that a context is
/// drained; the last one completes the erasure.
pub struct Completer {
    table: Table<infra::table::contexts::Identity>,
    source: Context,
    name: &'static str,
}

impl Completer {
    pub fn new(table: Table<infra::table::contexts::Identity>, source: Context) -> Self {
        Self {
            table,
            source,
            name: completer_name(source),
        }
    }
}

/// The tombstone attribute recording that `context` is drained.
pub fn drained_attr(context: Context) -> String {
    format!("drained_{context}")
}

#[async_trait]
impl Projector for Completer {
    fn subscription(&self) -> Subscription {
        Subscription {
            name: self.name,
            source: self.source,
            target: Context::Identity,
            consumes: crate::projector::event_types![PartitionDrained],
        }
    }

    async fn apply(&self, event: &EventEnvelope) -> Result<(), ProjectionError> {
        if !event.is::<PartitionDrained>() {
            return Ok(());
        }
        let drained: PartitionDrained = crate::projector::decode(event)?;
        let user = event
            .user_id
            .clone()
            .ok_or_else(|| ProjectionError::Decode("drained event without a user".into()))?;
        let tombstone = match erasure::mark(
            &self.table,
            &user,
            Update::default().set(drained_attr(drained.context), true),
        )
        .await
        {
            Ok(item) => item,
            // No deletion was requested in identity: nothing to complete.
            Err(StoreError::ConditionFailed { .. }) => return Ok(()),
            Err(e) => return Err(e.into()),
        };
        let all_drained = DRAINING
            .iter()
            .all(|c| tombstone.get(&drained_attr(*c)) == Some(&Value::Bool(true)));
        if all_drained {
            // Email reservation, profile and identity's partition go; the tombstone
            // stays (it names no one) so late events and replays keep finding it.
            erasure::finish_identity(&self.table, &user).await?;
            tracing::info!("account erasure complete");
        }
        Ok(())
    }
}

/// Whether `user`'s erasure is complete (identity's tombstone says so).
pub async fn is_complete(
    identity: &Table<infra::table::contexts::Identity>,
    user: &UserId,
) -> Result<bool, StoreError> {
    Ok(erasure::status(identity, user).await?.as_deref() == Some("complete"))
}

pub(crate) fn eraser_name(context: Context) -> &'static str {
    match context {
        Context::Identity => "erase-identity",
        Context::Nutrition => "erase-nutrition",
        Context::Activity => "erase-activity",
        Context::Sleep => "erase-sleep",
        Context::Goals => "erase-goals",
        Context::Integrations => "erase-integrations",
        Context::Environment => "erase-environment",
        Context::Insights => "erase-insights",
        Context::Dashboard => "erase-dashboard",
    }
}

fn completer_name(context: Context) -> &'static str {
    match context {
        Context::Identity => "identity-from-identity-erasure",
        Context::Nutrition => "identity-from-nutrition-erasure",
        Context::Activity => "identity-from-activity-erasure",
        Context::Sleep => "identity-from-sleep-erasure",
        Context::Goals => "identity-from-goals-erasure",
        Context::Integrations => "identity-from-integrations-erasure",
        Context::Environment => "identity-from-environment-erasure",
        Context::Insights => "identity-from-insights-erasure",
        Context::Dashboard => "identity-from-dashboard-erasure",
    }
}
