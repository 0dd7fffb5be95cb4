//! Sync by external id, shared by workouts and sleep sessions. A pointer item
//! `EXTERNAL#<provider>#<external-id>` commits together with the entity and its event,
//! on condition that it does not exist. A retried sync is detected from that action's
//! cancellation reason, which carries the pointer.
//!
//! Deliveries of one record arrive in any order (shards, redrives, replays), so each
//! carries an order of its own: the provider's revision (its `updated_at`), then the
//! fingerprint of the content as a tie-break. A delivery applies only if it is newer than
//! the one the pointer records: an older or repeated one changes nothing (the original
//! id, one request in all); a newer one with changed content is the next version of the
//! entity, guarded by the pointer's version; a newer one with the same content only
//! records its revision.
//!
//! The entry is [`Handlers::sync_entity`]: a [`Delivered`] record (a wearable's workout
//! or night) and the [`Synced`] entity a version of it writes.
//!
//! Layout: `entity` (the [`Delivered`] record, the [`Synced`] entity, the id and item
//! of an entity), `pointer` (where a delivery stands in its record's order), `writes`
//! (what a delivery writes, decided from the pointer read), `apply` (the commits and
//! their retries), and here the entries and their access patterns.

mod apply;
pub(crate) mod entity;
mod pointer;
mod writes;

pub use entity::Delivered;
pub(crate) use entity::{Synced, delivered};

use crate::CommandError;
use crate::handlers::Handlers;
use crate::meta::{CommandMeta, Outcome};
use crate::outbox::envelope;
use entity::{entity_id, moved_from, synced_item};
use events_schema::envelope::{EventEnvelope, EventPayload};
use events_schema::events::Source;
use events_schema::ids::ProviderName;
use events_schema::time::{Clock, Timestamp};
use infra::table::{ContextTable, Table};
use pointer::{Delivery, fingerprint};
use serde::Serialize;
use std::fmt::Display;
use std::str::FromStr;
use writes::Written;

impl<C: ContextTable> Handlers<C> {
    /// Records an entity entered in the app (version 1): its item and its first event,
    /// through [`Handlers::create`], answered with the entity.
    pub(crate) async fn record_entered<E: Synced>(
        &self,
        meta: &CommandMeta,
        entity: E,
        input: &impl Serialize,
    ) -> Result<Outcome<E>, CommandError> {
        let item = synced_item(&meta.user_pk(), &entity)?;
        let recorded = entity.recorded();
        self.create(meta, item, (entity.began(), &recorded), input, entity)
            .await
    }

    /// Syncs a wearable's record under the user's writer ([`sync_delivered`]):
    /// `version(id, source, version)` is the entity a version of it writes, filed by its
    /// sort key and published as recorded (version 1) or updated.
    pub(crate) async fn sync_entity<D, E, Id>(
        &self,
        meta: &CommandMeta,
        provider: &ProviderName,
        timezone: &str,
        input: &D,
        version: impl Fn(Id, Source, u64) -> E,
    ) -> Result<Outcome<Id>, CommandError>
    where
        D: Delivered,
        E: Synced,
        Id: FromStr + Display,
    {
        let _writer = self.writers.user(&meta.user).await;
        let pk = meta.user_pk();
        let build = |id, source: &Source, number, previous_sk: Option<&str>| {
            let entity = version(id, source.clone(), number);
            let event = version_event(
                meta,
                &self.clock,
                entity.began(),
                number,
                || entity.recorded(),
                || entity.updated(moved_from(previous_sk, entity.day())),
            )?;
            Ok(Written {
                item: synced_item(&pk, &entity)?,
                event,
            })
        };
        sync_delivered(&self.table, meta, provider, timezone, input, build).await
    }
}

/// Syncs one delivered record of a wearable, in the user's `timezone` (part of what a
/// version is: the same record in another timezone may fall on another day).
/// `build(entity_id, source, version, previous_sk)` makes the item and event of a
/// version, as in [`apply::sync`].
async fn sync_delivered<C, Id, D>(
    table: &Table<C>,
    meta: &CommandMeta,
    provider: &ProviderName,
    timezone: &str,
    input: &D,
    build: impl Fn(Id, &Source, u64, Option<&str>) -> Result<Written, CommandError>,
) -> Result<Outcome<Id>, CommandError>
where
    C: ContextTable,
    Id: FromStr + Display,
    D: Delivered,
{
    let delivery = Delivery {
        revision: input.revision(),
        fingerprint: fingerprint(&(input.content(), timezone)),
    };
    let source = Source::Provider {
        provider: provider.clone(),
        external_id: input.external_id().clone(),
    };
    let new_id = entity_id(provider, input.external_id(), input.began())?;
    apply::sync(
        table,
        meta,
        provider,
        input.external_id(),
        delivery,
        new_id,
        |id, version, previous| build(id, &source, version, previous),
    )
    .await
}

/// The event of an entity's `version`: `first` creates it (version 1), `next` changes it.
fn version_event<A: EventPayload, B: EventPayload>(
    meta: &CommandMeta,
    clock: &Clock,
    occurred_at: Timestamp,
    version: u64,
    first: impl FnOnce() -> A,
    next: impl FnOnce() -> B,
) -> Result<EventEnvelope, CommandError> {
    if version == 1 {
        envelope(meta, clock, occurred_at, &first())
    } else {
        envelope(meta, clock, occurred_at, &next())
    }
}

/// The calls this module makes, as declared access patterns (see `infra::access`).
pub(crate) mod access {
    use crate::idempotency::command_tx;
    use events_schema::Context::{Activity as ACTIVITY, Sleep as SLEEP};
    use infra::access::{AccessPattern as P, Action::*, Op, Sk, Written as W};

    /// The wearables' sync calls: a record found by its external id, then written once.
    pub static ACCESS: &[P] = &[
        P::transact(
            "note a synced workout's later revision",
            command_tx!(
                Activity,
                "USER#",
                [W::new(Update, ACTIVITY, "USER#", "EXTERNAL#")]
            ),
            "POST /v1/integrations/{provider}/webhook (a revision with the same content)",
        )
        .volume(0.1)
        .size(1, 200),
        P::transact(
            "note a synced night's later revision",
            command_tx!(
                Sleep,
                "USER#",
                [W::new(Update, SLEEP, "USER#", "EXTERNAL#")]
            ),
            "POST /v1/integrations/{provider}/webhook (a revision with the same content)",
        )
        .volume(0.1)
        .size(1, 200),
        P::new(
            "a synced workout, by external id",
            ACTIVITY,
            Op::get(true),
            "USER#",
            Sk::exact("EXTERNAL#"),
            "POST /v1/integrations/{provider}/webhook (a workout)",
        )
        .volume(1.0)
        .size(1, 200),
        P::transact(
            "sync a workout",
            command_tx!(
                Activity,
                "USER#",
                [
                    W::new(Put, ACTIVITY, "USER#", "EXTERNAL#").optional(),
                    W::new(Update, ACTIVITY, "USER#", "EXTERNAL#").optional(),
                    W::new(Delete, ACTIVITY, "USER#", "WORKOUT#").optional(),
                    W::new(Put, ACTIVITY, "USER#", "WORKOUT#"),
                    W::new(Put, ACTIVITY, "USER#", "EVT#"),
                ]
            ),
            "POST /v1/integrations/{provider}/webhook (a workout)",
        )
        .volume(1.0)
        .size(3, 500),
        P::new(
            "a synced night, by external id",
            SLEEP,
            Op::get(true),
            "USER#",
            Sk::exact("EXTERNAL#"),
            "POST /v1/integrations/{provider}/webhook (a night)",
        )
        .volume(1.0)
        .size(1, 200),
        P::transact(
            "sync a night",
            command_tx!(
                Sleep,
                "USER#",
                [
                    W::new(Put, SLEEP, "USER#", "EXTERNAL#").optional(),
                    W::new(Update, SLEEP, "USER#", "EXTERNAL#").optional(),
                    W::new(Delete, SLEEP, "USER#", "SLEEP#").optional(),
                    W::new(Put, SLEEP, "USER#", "SLEEP#"),
                    W::new(Put, SLEEP, "USER#", "EVT#"),
                ]
            ),
            "POST /v1/integrations/{provider}/webhook (a night)",
        )
        .volume(1.0)
        .size(3, 500),
    ];
}
