//! [`Eraser`] (`erase-<context>`): one link of the erasure chain, erasing a user from
//! one context's table and setting off the next link.

use super::chain::{eraser_name, set_off_by};
use crate::projector::{ProjectionError, Projector, Subscription};
use async_trait::async_trait;
use commands::erasure;
use events_schema::Context;
use events_schema::envelope::EventEnvelope;
use events_schema::envelope::outbox_item;
use events_schema::events::erasure::PartitionDrained;
use events_schema::events::identity::AccountDeletionRequested;
use events_schema::ids::{EventId, UserId};
use events_schema::keys::{PartitionKey, erased};
use events_schema::time::{Clock, Timestamp};
use infra::dlq::DeadLetterQueue;
use infra::store::{Key, Update};
use infra::table::{Action, ContextTable, Table};
use std::sync::Arc;

/// An erasure on its way down the chain, as an eraser's trigger carries it.
struct Erasure {
    user: UserId,
    /// When the deletion was requested: the tombstones and event ids derive from it.
    requested_at: Timestamp,
    /// The contexts drained before, in the chain's order.
    drained: Vec<Context>,
}

/// `erase-<context>`: erases a user from one context's table, once the link before it
/// in [`ERASURE_CHAIN`] is done.
pub struct Eraser<C: ContextTable> {
    table: Table<C>,
    name: &'static str,
    /// Identity (its deletion request) for the chain's first link; the link before, whose
    /// `PartitionDrained` sets it off, for the others.
    after: Context,
    /// The dead letters of the subscriptions writing this table (rows of it, or their
    /// SQS queues), and those subscriptions: letters of the user may wait in any of them,
    /// with whole item images.
    dead_letters: Arc<dyn DeadLetterQueue>,
    subscriptions: Vec<&'static str>,
    /// When its `PartitionDrained` occurs.
    clock: Clock,
}

impl<C: ContextTable> Eraser<C> {
    /// The eraser of context `C`; `None` unless `C` is a link of [`ERASURE_CHAIN`].
    pub fn new(
        table: Table<C>,
        dead_letters: Arc<dyn DeadLetterQueue>,
        subscriptions: Vec<&'static str>,
    ) -> Option<Self> {
        Some(Self {
            name: eraser_name(C::CONTEXT),
            after: set_off_by(C::CONTEXT)?,
            table,
            dead_letters,
            subscriptions,
            clock: Clock::System,
        })
    }

    /// The same eraser, telling time by `clock`.
    pub fn with_clock(self, clock: Clock) -> Self {
        Self { clock, ..self }
    }

    /// The erasure `event` sets off here, if it is this eraser's trigger: identity's
    /// deletion request for the first link, the `PartitionDrained` of the link before
    /// for the others. Any other event, another context's `PartitionDrained` included,
    /// is none of its business.
    fn triggered_by(&self, event: &EventEnvelope) -> Result<Option<Erasure>, ProjectionError> {
        let user = || {
            event
                .user_id
                .clone()
                .ok_or_else(|| ProjectionError::Decode("erasure event without a user".into()))
        };
        if self.after == Context::Identity {
            if !event.is::<AccountDeletionRequested>() {
                return Ok(None);
            }
            return Ok(Some(Erasure {
                user: user()?,
                requested_at: event.occurred_at,
                drained: Vec::new(),
            }));
        }
        if !event.is::<PartitionDrained>() {
            return Ok(None);
        }
        let before: PartitionDrained = crate::projector::decode(event)?;
        if before.context != self.after {
            return Ok(None);
        }
        Ok(Some(Erasure {
            user: user()?,
            requested_at: before.requested_at,
            drained: before.drained,
        }))
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
        drained: Vec<Context>,
    ) -> Result<(), ProjectionError> {
        let mut event = EventEnvelope::new(
            Some(user.clone()),
            self.clock.now(),
            &PartitionDrained {
                context: C::CONTEXT,
                items_deleted,
                requested_at,
                drained,
            },
        )
        .map_err(|e| ProjectionError::Decode(e.to_string()))?;
        event.context = C::CONTEXT;
        let seed = format!("{user}|{}|drained", C::CONTEXT);
        event.event_id = EventId::derived(&seed, requested_at);
        let (pk, _) = erased(user);
        let outbox = outbox_item(&pk.to_string(), &event)
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
                    update: Update::default().set(erasure::STATUS, "drained"),
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
            source: self.after,
            target: C::CONTEXT,
            consumes: if self.after == Context::Identity {
                crate::projector::event_types![AccountDeletionRequested]
            } else {
                crate::projector::event_types![PartitionDrained]
            },
            // The erased user's tombstone and the PartitionDrained event handing on to
            // the next context (the drain itself deletes, it writes no row), and the
            // rows outside the user's partition it deletes: integrations' claims on
            // provider users.
            writes: match C::CONTEXT {
                Context::Integrations => &["TOMBSTONE", "EVT#", "PROVIDER_USER"],
                _ => &["TOMBSTONE", "EVT#"],
            },
        }
    }

    async fn apply(&self, event: &EventEnvelope) -> Result<(), ProjectionError> {
        let Some(erasure) = self.triggered_by(event)? else {
            return Ok(());
        };
        let user = &erasure.user;
        erasure::begin(&self.table, user, erasure.requested_at).await?;
        let user_pk = PartitionKey::User(user.clone()).to_string();
        let queues = &self.dead_letters;
        let mut deleted = queues
            .remove_about_each(&self.subscriptions, &user_pk)
            .await?;
        deleted += erasure::erase(&self.table, user).await?;
        let mut drained = erasure.drained;
        if !drained.contains(&C::CONTEXT) {
            drained.push(C::CONTEXT);
        }
        self.publish_drained(user, erasure.requested_at, deleted, drained)
            .await
    }
}
