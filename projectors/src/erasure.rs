//! Account erasure on the projector side: the contexts erase a user one after another
//! ([`ERASURE_CHAIN`]), then identity completes the erasure.
//!
//! - [`Eraser`] (`erase-<context>`, one per link of the chain): set off by the link
//!   before it (identity's `AccountDeletionRequested` for the first link, the previous
//!   context's `PartitionDrained` for the others), it writes the context's tombstone,
//!   removes the user's dead letters of every subscription writing its table, deletes
//!   what the context owns of the user (see `commands::erasure`), drains `USER#<id>` in
//!   pages and publishes `PartitionDrained`, carrying on when the deletion was requested
//!   and every context drained so far. Redelivered after a crash, it simply finishes:
//!   the tombstone and the event's id derive from the request, not from the run.
//! - [`Completer`] (`identity-from-dashboard-erasure`, on the chain's last context):
//!   ticks off on identity's tombstone every context the last `PartitionDrained` lists
//!   (a tick is an idempotent set); once every link is ticked it deletes the email
//!   reservation, drains identity's partition and marks the erasure `complete`.
//! - [`Guarded`]: wraps every projection so nothing of an erased user comes back: an
//!   event of a user with a tombstone in the target table is not applied, and sweeps the
//!   user's partition instead (a worker that died between its write and its second look
//!   may have left a row: the redelivery removes it); a write that raced the tombstone is
//!   swept away right after (the tombstone is checked again once the event is applied;
//!   any write that landed after the eraser's drain passed is therefore seen and
//!   drained). A context later in the chain keeps projecting the user's events until its
//!   own link runs, and its drain takes them.

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
use infra::{Store, StoreError};
use serde_json::Value;
use std::sync::Arc;

/// The order in which the contexts erase a user: the first link's eraser is set off by
/// identity's `AccountDeletionRequested`, every other by the `PartitionDrained` of the
/// link before it (read from that context's stream), and identity's [`Completer`] by the
/// last link's. Every context that holds a user's data drains, identity last; not
/// environment, which holds none (weather and air per place and hour) and publishes no
/// changes.
///
/// Why this order. In production a stream consumer writes one table, with an event
/// source mapping per stream it reads; a shard serves 5 `GetRecords` calls a second to
/// all of them and a mapping polls about once a second, so at most 4 target tables read
/// any stream (a call a second is left for redrive or an operator). Erasers all set off
/// by identity's request had 7 target tables read identity's stream, and completers on
/// every context's stream put an identity reader on each (5 on nutrition and activity).
/// Here each link reads one stream for one table, and rides a (source -> target) pair
/// that exists already (a projection's, or identity -> integrations and dashboard ->
/// identity, an eraser's and the completer's before), except goals -> sleep and
/// insights -> dashboard, which land on streams with room. The target tables reading
/// each stream:
///
/// | stream | target tables |
/// |---|---|
/// | identity | dashboard, integrations |
/// | nutrition | activity, dashboard, goals, insights |
/// | activity | dashboard, goals, insights, nutrition |
/// | sleep | dashboard, goals, insights |
/// | goals | dashboard, goals, sleep |
/// | integrations | activity, dashboard, sleep |
/// | insights | dashboard |
/// | dashboard | identity |
pub const ERASURE_CHAIN: [Context; 7] = [
    Context::Integrations,
    Context::Activity,
    Context::Nutrition,
    Context::Goals,
    Context::Sleep,
    Context::Insights,
    Context::Dashboard,
];

/// The chain's last link: its `PartitionDrained` is what the [`Completer`] reads.
pub const LAST: Context = ERASURE_CHAIN[ERASURE_CHAIN.len() - 1];

/// The context whose event sets off `context`'s eraser: identity (its deletion request)
/// for the chain's first link, the link before for the others; `None` for a context
/// outside the chain.
pub fn set_off_by(context: Context) -> Option<Context> {
    let at = ERASURE_CHAIN.iter().position(|c| *c == context)?;
    Some(
        at.checked_sub(1)
            .map_or(Context::Identity, |i| ERASURE_CHAIN[i]),
    )
}

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

/// `identity-from-dashboard-erasure`: reads the chain's last `PartitionDrained`, records
/// in identity's tombstone every context it lists as drained, and completes the erasure
/// once every link of [`ERASURE_CHAIN`] is.
pub struct Completer {
    table: Table<infra::table::contexts::Identity>,
}

impl Completer {
    pub fn new(table: Table<infra::table::contexts::Identity>) -> Self {
        Self { table }
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
            name: completer_name(LAST),
            source: LAST,
            target: Context::Identity,
            consumes: crate::projector::event_types![PartitionDrained],
            // The account's tombstone and its email claim, and every row of the
            // user's identity partition, which it deletes (identity is drained last,
            // by it): any kind.
            writes: &["TOMBSTONE", "EMAIL", "*"],
        }
    }

    async fn apply(&self, event: &EventEnvelope) -> Result<(), ProjectionError> {
        if !event.is::<PartitionDrained>() {
            return Ok(());
        }
        let last: PartitionDrained = crate::projector::decode(event)?;
        if last.context != LAST {
            return Ok(());
        }
        let user = event
            .user_id
            .clone()
            .ok_or_else(|| ProjectionError::Decode("drained event without a user".into()))?;
        let ticks = last
            .drained
            .iter()
            .chain([&last.context])
            .fold(Update::default(), |update, c| {
                update.set(drained_attr(*c), true)
            });
        let tombstone = match erasure::mark(&self.table, &user, ticks).await {
            Ok(item) => item,
            // No deletion was requested in identity: nothing to complete.
            Err(StoreError::ConditionFailed { .. }) => return Ok(()),
            Err(e) => return Err(e.into()),
        };
        let all_drained = ERASURE_CHAIN
            .iter()
            .all(|c| tombstone.get(&drained_attr(*c)) == Some(&Value::Bool(true)));
        if all_drained {
            // Email reservation, profile and identity's partition go; the tombstone
            // stays (it names no one) so late events and replays keep finding it.
            erasure::finish_identity(&self.table, &user).await?;
            tracing::info!("account erasure complete");
        } else {
            tracing::warn!(
                drained = ?last.drained,
                "the erasure chain ended with contexts not drained"
            );
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

/// Whether `name` is one of erasure's subscriptions (an eraser or the completer), by
/// the names given here.
pub fn is_erasure_subscription(name: &str) -> bool {
    Context::ALL
        .into_iter()
        .any(|c| eraser_name(c) == name || completer_name(c) == name)
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

/// The calls this module makes, as declared access patterns (see `infra::access`).
pub(crate) mod access {
    use events_schema::Context;
    use infra::access::{AccessPattern as P, Action::*, Op, Sk, Written as W};

    /// The erasure guard's first look, in `$table` (the strongly consistent second look
    /// is the command side's "an erasure's tombstone").
    macro_rules! guard {
        ($table:ident) => {
            P::new(
                "is the event's user erased (first look)",
                Context::$table,
                Op::get(false),
                "ERASED#",
                Sk::exact("TOMBSTONE"),
                "every event a projection applies to a user's rows",
            )
            .volume(20.0)
            .size(1, 200)
        };
    }

    /// A context announcing its partition drained (the outbox item is published, then
    /// removed: the tombstone partition keeps no event).
    macro_rules! drained {
        ($table:ident) => {
            [
                P::transact(
                    "announce a partition drained",
                    &[
                        W::new(Put, Context::$table, "ERASED#", "EVT#"),
                        W::new(Update, Context::$table, "ERASED#", "TOMBSTONE"),
                    ],
                    "account erasure (PartitionDrained)",
                )
                .volume(0.0003)
                .size(2, 400),
                P::new(
                    "remove a published erasure event",
                    Context::$table,
                    Op::Delete,
                    "ERASED#",
                    Sk::exact("EVT#"),
                    "account erasure (PartitionDrained, once published)",
                )
                .volume(0.0003)
                .size(1, 400),
            ]
        };
    }

    /// The guard's first look, table by table.
    pub static GUARDS: &[P] = &[
        guard!(Identity),
        guard!(Nutrition),
        guard!(Activity),
        guard!(Sleep),
        guard!(Goals),
        guard!(Integrations),
        guard!(Insights),
        guard!(Dashboard),
    ];

    /// The erasure chain's announcements, table by table.
    pub static ANNOUNCEMENTS: &[[P; 2]] = &[
        drained!(Nutrition),
        drained!(Activity),
        drained!(Sleep),
        drained!(Goals),
        drained!(Integrations),
        drained!(Insights),
        drained!(Dashboard),
    ];
}
