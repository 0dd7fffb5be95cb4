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

use crate::CommandError;
use crate::handlers::Handlers;
use crate::idempotency::{self, Committed};
use crate::items::{from_item, to_item};
use crate::meta::{CommandMeta, Outcome};
use crate::optimistic::{self, Attempt};
use crate::outbox::envelope;
use crate::outbox::event_action;
use events_schema::envelope::{EventEnvelope, EventPayload};
use events_schema::events::Source;
use events_schema::ids::{ExternalId, ProviderName};
use events_schema::keys::SortKey;
use events_schema::time::{Clock, Day, Timestamp};
use infra::store::{CancelReason, Condition, Item, Key, Update};
use infra::table::{Action, ContextTable, Table};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::json;
use sha2::{Digest, Sha256};
use std::fmt::Display;
use std::str::FromStr;

/// The stored pointer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Pointer {
    pub entity_id: String,
    pub target_sk: String,
    pub fingerprint: String,
    pub version: u64,
    /// The provider's revision (milliseconds of its `updated_at`) of the delivery
    /// applied; absent when that delivery had none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<i64>,
}

impl Pointer {
    /// Where the applied delivery stands in the record's order (see the module docs).
    fn order(&self) -> (i64, &str) {
        (self.revision.unwrap_or(i64::MIN), &self.fingerprint)
    }
}

/// What a delivery of an external record carries for ordering it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Delivery {
    /// The provider's `updated_at`, if it sent one.
    revision: Option<events_schema::time::Timestamp>,
    /// A fingerprint of the content (see [`fingerprint`]), without the revision.
    fingerprint: String,
}

impl Delivery {
    fn revision_millis(&self) -> Option<i64> {
        self.revision.map(events_schema::time::Timestamp::millis)
    }

    fn order(&self) -> (i64, &str) {
        (
            self.revision_millis().unwrap_or(i64::MIN),
            &self.fingerprint,
        )
    }
}

/// What a sync writes for the entity: its item (keys included) and its event.
struct Written {
    item: Item,
    event: EventEnvelope,
}

/// A fingerprint of the provider's fields, to tell a retry from a change.
fn fingerprint(fields: &impl Serialize) -> String {
    hex::encode(Sha256::digest(
        serde_json::to_vec(fields).unwrap_or_default(),
    ))
}

/// A record a wearable delivers (a workout, a night), kept as versions of one entity.
pub trait Delivered: Serialize + Clone {
    /// The provider's id of the record.
    fn external_id(&self) -> &ExternalId;
    /// When the record began: its entity's id is derived from it ([`entity_id`]).
    fn began(&self) -> Timestamp;
    /// The provider's `updated_at`, if it sent one.
    fn revision(&self) -> Option<Timestamp>;
    /// The record without its revision: what tells a retry from a change.
    fn content(&self) -> Self;
}

/// Implements [`Delivered`] for a provider's record type: its `external_id` field is the
/// provider's id, its `updated_at` field the revision, and the field named by `began`
/// when it began.
macro_rules! delivered {
    ($record:ty, began: $began:ident) => {
        impl $crate::external_sync::Delivered for $record {
            fn external_id(&self) -> &events_schema::ids::ExternalId {
                &self.external_id
            }
            fn began(&self) -> events_schema::time::Timestamp {
                self.$began
            }
            fn revision(&self) -> Option<events_schema::time::Timestamp> {
                self.updated_at
            }
            fn content(&self) -> Self {
                Self {
                    updated_at: None,
                    ..self.clone()
                }
            }
        }
    };
}
pub(crate) use delivered;

/// An entity kept as versions of a wearable's record, or entered in the app as version
/// 1 (a workout, a sleep session): where it is filed and what its versions publish.
pub(crate) trait Synced: Serialize + DeserializeOwned + Clone {
    /// The event of version 1.
    type Recorded: EventPayload;
    /// The event of a later version.
    type Updated: EventPayload;
    /// When it began: when its events occurred.
    fn began(&self) -> Timestamp;
    /// The day it is filed under (part of its sort key).
    fn day(&self) -> Day;
    /// The sort key of its item in the user's partition.
    fn sort_key(&self) -> SortKey;
    /// Its event as version 1.
    fn recorded(&self) -> Self::Recorded;
    /// Its event as a later version; `moved_from` is the day it was filed under before,
    /// if this version moved it off that day.
    fn updated(&self, moved_from: Option<Day>) -> Self::Updated;
}

/// The item of `entity` in the partition `pk`.
fn synced_item<E: Synced>(pk: &str, entity: &E) -> Result<Item, CommandError> {
    to_item(&Key::new(pk, entity.sort_key().to_string()), entity)
}

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
/// version, as in [`sync`].
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
    sync(
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

/// Syncs one external entity. `build(entity_id, version, previous_sk)` makes the item
/// and event of that version (version 1 is the creation; `previous_sk` is the sort key
/// the entity was filed under before an update). Returns the entity's id: `new_id` when it
/// was created, the stored one otherwise.
async fn sync<C, Id>(
    table: &Table<C>,
    meta: &CommandMeta,
    provider: &ProviderName,
    external_id: &ExternalId,
    delivery: Delivery,
    new_id: Id,
    build: impl Fn(Id, u64, Option<&str>) -> Result<Written, CommandError>,
) -> Result<Outcome<Id>, CommandError>
where
    C: ContextTable,
    Id: FromStr + Display,
{
    let parse = |raw: &str| {
        Id::from_str(raw)
            .map_err(|_| CommandError::Internal(format!("stored id {raw:?} is not valid")))
    };
    let outcome = sync_ids(
        table,
        meta,
        provider,
        external_id,
        delivery,
        new_id.to_string(),
        |raw, version, previous| build(parse(raw)?, version, previous),
    )
    .await?;
    Ok(Outcome {
        value: parse(&outcome.value)?,
        replayed: outcome.replayed,
    })
}

async fn sync_ids<C: ContextTable>(
    table: &Table<C>,
    meta: &CommandMeta,
    provider: &ProviderName,
    external_id: &ExternalId,
    delivery: Delivery,
    new_id: String,
    build: impl Fn(&str, u64, Option<&str>) -> Result<Written, CommandError>,
) -> Result<Outcome<String>, CommandError> {
    let pk = meta.user_pk();
    let pointer_key = Key::new(
        &pk,
        SortKey::External(provider.clone(), external_id.clone()).to_string(),
    );
    let fingerprint = delivery.fingerprint.clone();
    let request = json!({"provider": provider, "external_id": external_id,
                         "fingerprint": fingerprint, "revision": delivery.revision_millis()});

    let first = canonical(build(&new_id, 1, None)?, provider, external_id, 1);
    let actions = first_writes(&pk, &pointer_key, &new_id, &delivery, first)?;
    let first = FirstWrite {
        pk: &pk,
        pointer_key: &pointer_key,
        request: &request,
    };
    let mut existing = match first.commit(table, meta, actions, new_id).await? {
        First::Written(outcome) => return Ok(outcome),
        First::Exists(pointer) => pointer,
    };
    optimistic::run!({
        // Stale or repeated: what is stored is at least as new.
        if delivery.order() <= existing.order() {
            return Ok(Attempt::Done(Outcome::replayed(existing.entity_id.clone())));
        }
        // Newer with the same content: only the revision moves on, and as nothing the
        // app reads changes, the sync is answered as a replay.
        let same_content = existing.fingerprint == fingerprint;
        let actions = if same_content {
            vec![revision_update(
                &pointer_key,
                &existing,
                delivery.revision_millis(),
            )]
        } else {
            let version = existing.version + 1;
            let next = canonical(
                build(&existing.entity_id, version, Some(&existing.target_sk))?,
                provider,
                external_id,
                version,
            );
            correction_writes(
                &pk,
                &pointer_key,
                &existing,
                next,
                &fingerprint,
                delivery.revision_millis(),
            )?
        };
        let entity_id = existing.entity_id.clone();
        let committed = idempotency::commit(table, meta, &pk, &request, actions, entity_id).await?;
        Ok(
            match settle(table, &pointer_key, &mut existing, committed).await? {
                Attempt::Done(outcome) if same_content => {
                    Attempt::Done(Outcome::replayed(outcome.value))
                }
                attempt => attempt,
            },
        )
    })
}

/// What a first delivery's commit came to.
enum First {
    Written(Outcome<String>),
    /// Another delivery of the record wrote it first: its pointer.
    Exists(Pointer),
}

/// A first delivery's commit, in the record's partition under its pointer's key.
struct FirstWrite<'a> {
    pk: &'a str,
    pointer_key: &'a Key,
    request: &'a serde_json::Value,
}

impl FirstWrite<'_> {
    /// Commits `actions`: written, or the pointer another delivery wrote first. A
    /// transaction conflict with no pointer to show for it (the other transaction did
    /// not write this record) is tried again.
    async fn commit<C: ContextTable>(
        &self,
        table: &Table<C>,
        meta: &CommandMeta,
        actions: Vec<Action>,
        new_id: String,
    ) -> Result<First, CommandError> {
        optimistic::run!({
            let (actions, id) = (actions.clone(), new_id.clone());
            let committed = idempotency::commit(table, meta, self.pk, self.request, actions, id);
            match committed.await? {
                Committed::Done(outcome) => Ok(Attempt::Done(First::Written(outcome))),
                Committed::Cancelled(reasons) => {
                    match pointer_after(table, self.pointer_key, &reasons).await? {
                        Some(pointer) => Ok(Attempt::Done(First::Exists(pointer))),
                        None => Ok(Attempt::LostRace),
                    }
                }
            }
        })
    }
}

/// A sync's commit read: done, or lost to another delivery of the same record, whose
/// pointer (from the cancellation, or read again) becomes `existing`.
async fn settle<C: ContextTable>(
    table: &Table<C>,
    pointer_key: &Key,
    existing: &mut Pointer,
    committed: Committed<String>,
) -> Result<Attempt<Outcome<String>>, CommandError> {
    match committed {
        Committed::Done(outcome) => Ok(Attempt::Done(outcome)),
        Committed::Cancelled(reasons) => {
            // The record had a pointer when the attempt read it; none now means it was
            // deleted meanwhile: nothing to retry on.
            let pointer = pointer_after(table, pointer_key, &reasons).await?;
            *existing = pointer.ok_or(CommandError::Contention)?;
            Ok(Attempt::LostRace)
        }
    }
}

/// A first delivery's writes: the pointer (version 1) and the entity `new_id` on free
/// keys, and its event.
fn first_writes(
    pk: &str,
    pointer_key: &Key,
    new_id: &str,
    delivery: &Delivery,
    first: Written,
) -> Result<Vec<Action>, CommandError> {
    let pointer = Pointer {
        entity_id: new_id.to_owned(),
        target_sk: sort_key_of(&first.item)?,
        fingerprint: delivery.fingerprint.clone(),
        version: 1,
        revision: delivery.revision_millis(),
    };
    Ok(vec![
        Action::Put {
            item: to_item(pointer_key, &pointer)?,
            condition: Some(Condition::ItemNotExists),
        },
        Action::Put {
            item: first.item,
            condition: Some(Condition::ItemNotExists),
        },
        event_action(pk, &first.event)?,
    ])
}

/// A newer delivery of the same content: only the pointer's revision moves on, if the
/// pointer is still as read.
fn revision_update(pointer_key: &Key, existing: &Pointer, revision: Option<i64>) -> Action {
    Action::Update {
        key: pointer_key.clone(),
        update: with_revision(Update::default(), revision),
        condition: Some(Condition::All(vec![
            Condition::VersionEquals(existing.version),
            match existing.revision {
                Some(r) => Condition::AttributeEquals("revision".into(), json!(r)),
                None => Condition::AttributeNotExists("revision".into()),
            },
        ])),
    }
}

/// A corrected delivery's writes: the pointer moves on (if still at the version read),
/// the entity is rewritten (moved when its day, held in its sort key, changed), and its
/// event.
fn correction_writes(
    pk: &str,
    pointer_key: &Key,
    existing: &Pointer,
    next: Written,
    fingerprint: &str,
    revision: Option<i64>,
) -> Result<Vec<Action>, CommandError> {
    let sk = sort_key_of(&next.item)?;
    let mut actions = vec![Action::Update {
        key: pointer_key.clone(),
        update: with_revision(
            Update::default()
                .set("fingerprint", fingerprint)
                .set("version", existing.version + 1)
                .set("target_sk", sk.clone()),
            revision,
        ),
        condition: Some(Condition::VersionEquals(existing.version)),
    }];
    if sk != existing.target_sk {
        actions.push(Action::Delete {
            key: Key::new(pk, &existing.target_sk),
            condition: None,
        });
    }
    actions.push(Action::Put {
        item: next.item,
        condition: None,
    });
    actions.push(event_action(pk, &next.event)?);
    Ok(actions)
}

/// Records `revision` on the pointer (removes it when the delivery had none).
fn with_revision(update: Update, revision: Option<i64>) -> Update {
    match revision {
        Some(revision) => update.set("revision", revision),
        None => update.remove("revision"),
    }
}

fn sort_key_of(item: &Item) -> Result<String, CommandError> {
    item.get("sk")
        .and_then(|v| v.as_str())
        .map(str::to_owned)
        .ok_or_else(|| CommandError::Internal("entity item has no sort key".into()))
}

/// The pointer returned by the pointer action's failed condition; after a transaction
/// conflict (which carries no item), the pointer as it is now, if there is one.
async fn pointer_after<C: ContextTable>(
    table: &Table<C>,
    key: &Key,
    reasons: &[CancelReason],
) -> Result<Option<Pointer>, CommandError> {
    match reasons.first() {
        Some(CancelReason::ConditionFailed {
            existing: Some(item),
        }) => from_item(item.clone()).map(Some),
        _ if reasons.contains(&CancelReason::Conflict) => {
            table.get(key, true).await?.map(from_item).transpose()
        }
        _ => Err(idempotency::unexpected(reasons)),
    }
}

/// The day an entity was filed under before (from its previous sort key), if an update
/// moved it off that day.
fn moved_from(previous_sk: Option<&str>, day: Day) -> Option<Day> {
    match previous_sk.and_then(|sk| sk.parse::<SortKey>().ok()) {
        Some(SortKey::Workout(previous, _) | SortKey::Sleep(previous, _)) if previous != day => {
            Some(previous)
        }
        _ => None,
    }
}

/// The id a synced entity gets: a ULID whose time is the entity's start and whose random
/// part is a hash of provider and external id. The same wearable record always gets the
/// same id, on every delivery and in every replay.
fn entity_id<Id: FromStr>(
    provider: &ProviderName,
    external_id: &ExternalId,
    start: events_schema::time::Timestamp,
) -> Result<Id, CommandError> {
    let raw = events_schema::ids::derived_ulid(&format!("{provider}|{external_id}"), start);
    Id::from_str(&raw).map_err(|_| CommandError::Internal("derived id is invalid".into()))
}

/// Makes a synced entity's event content-addressed: its id comes from provider,
/// external id, version and type, its times from the entity. Whichever delivery (or
/// replay) of the provider's data writes a version, it publishes the very same event.
fn canonical(
    mut written: Written,
    provider: &ProviderName,
    external_id: &ExternalId,
    version: u64,
) -> Written {
    let event = &mut written.event;
    let seed = format!("{provider}|{external_id}|{version}|{}", event.event_type);
    event.event_id = events_schema::ids::EventId::derived(&seed, event.occurred_at);
    event.recorded_at = event.occurred_at;
    written
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

#[cfg(test)]
mod tests {
    use super::*;
    use events_schema::events::erasure::PartitionDrained;

    const PK: &str = "USER#01M8ZF5ZSJP5Z70GTS7AGAV9T7";

    fn pointer_key() -> Key {
        Key::new(PK, "EXTERNAL#sandbox#run-1")
    }

    /// An entity item on `sk` and an event (its type does not matter here).
    fn written(sk: &str) -> Written {
        let mut item = Key::new(PK, sk).to_item();
        item.insert("minutes".into(), json!(40));
        let event = EventEnvelope::new(
            None,
            events_schema::time::Timestamp::now(),
            &PartitionDrained {
                context: events_schema::Context::Activity,
                items_deleted: 0,
                requested_at: events_schema::time::Timestamp::now(),
                drained: vec![events_schema::Context::Activity],
            },
        )
        .expect("event");
        Written { item, event }
    }

    fn pointer(version: u64, sk: &str, revision: Option<i64>) -> Pointer {
        Pointer {
            entity_id: "w-1".into(),
            target_sk: sk.into(),
            fingerprint: "old".into(),
            version,
            revision,
        }
    }

    #[test]
    fn a_first_delivery_takes_free_keys_for_its_pointer_and_entity() {
        let delivery = Delivery {
            revision: None,
            fingerprint: "f1".into(),
        };
        let actions = first_writes(
            PK,
            &pointer_key(),
            "w-1",
            &delivery,
            written("WORKOUT#2026-03-01#w-1"),
        )
        .expect("decide");
        assert_eq!(actions.len(), 3);
        match &actions[0] {
            Action::Put { item, condition } => {
                let stored: Pointer = from_item(item.clone()).expect("pointer");
                assert_eq!(stored.version, 1);
                assert_eq!(stored.target_sk, "WORKOUT#2026-03-01#w-1");
                assert_eq!(stored.fingerprint, "f1");
                assert_eq!(condition, &Some(Condition::ItemNotExists));
            }
            other => panic!("not a put: {other:?}"),
        }
        assert!(matches!(
            &actions[1],
            Action::Put {
                condition: Some(Condition::ItemNotExists),
                ..
            }
        ));
    }

    #[test]
    fn the_same_content_newer_moves_only_the_revision_of_the_pointer_read() {
        let existing = pointer(3, "WORKOUT#2026-03-01#w-1", Some(1_000));
        match revision_update(&pointer_key(), &existing, Some(2_000)) {
            Action::Update {
                key,
                update,
                condition,
            } => {
                assert_eq!(key, pointer_key());
                assert_eq!(update.set.len(), 1);
                assert_eq!(update.set["revision"], json!(2_000));
                assert_eq!(
                    condition,
                    Some(Condition::All(vec![
                        Condition::VersionEquals(3),
                        Condition::AttributeEquals("revision".into(), json!(1_000)),
                    ]))
                );
            }
            other => panic!("not an update: {other:?}"),
        }
    }

    #[test]
    fn a_correction_that_changes_the_day_moves_the_entity() {
        // Given the workout stored on the 1st (pointer version 2),
        let existing = pointer(2, "WORKOUT#2026-03-01#w-1", None);
        // when a correction puts it on the 2nd,
        let actions = correction_writes(
            PK,
            &pointer_key(),
            &existing,
            written("WORKOUT#2026-03-02#w-1"),
            "f2",
            None,
        )
        .expect("decide");
        // then the pointer moves on to version 3 if still at 2, the old item goes,
        // the new one is written, and the event is published.
        assert_eq!(actions.len(), 4);
        match &actions[0] {
            Action::Update {
                update, condition, ..
            } => {
                assert_eq!(update.set["version"], json!(3));
                assert_eq!(update.set["target_sk"], json!("WORKOUT#2026-03-02#w-1"));
                assert_eq!(update.set["fingerprint"], json!("f2"));
                assert_eq!(update.remove, vec!["revision".to_owned()]);
                assert_eq!(condition, &Some(Condition::VersionEquals(2)));
            }
            other => panic!("not an update: {other:?}"),
        }
        assert_eq!(
            actions[1],
            Action::Delete {
                key: Key::new(PK, "WORKOUT#2026-03-01#w-1"),
                condition: None
            }
        );
        // On the same day, nothing is deleted.
        let same_day = correction_writes(
            PK,
            &pointer_key(),
            &existing,
            written("WORKOUT#2026-03-01#w-1"),
            "f2",
            None,
        )
        .expect("decide");
        assert_eq!(same_day.len(), 3);
        assert!(!same_day.iter().any(|a| matches!(a, Action::Delete { .. })));
    }
}
