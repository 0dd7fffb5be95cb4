//! Applying one delivery: the first one's commit (or the pointer another delivery wrote
//! first), then, for as long as races are lost, the next version or revision over the
//! pointer read. Reads the table only for a pointer a cancellation did not return.

use super::pointer::{Delivery, Pointer};
use super::writes::{Written, canonical, first_writes, newer_writes};
use crate::CommandError;
use crate::idempotency::{self, Committed};
use crate::items::from_item;
use crate::meta::{CommandMeta, Outcome};
use crate::optimistic::{self, Attempt};
use events_schema::ids::{ExternalId, ProviderName};
use events_schema::keys::SortKey;
use infra::store::{CancelReason, Key};
use infra::table::{Action, ContextTable, Table};
use serde_json::json;
use std::fmt::Display;
use std::str::FromStr;

/// Syncs one external entity. `build(entity_id, version, previous_sk)` makes the item
/// and event of that version (version 1 is the creation; `previous_sk` is the sort key
/// the entity was filed under before an update). Returns the entity's id: `new_id` when it
/// was created, the stored one otherwise.
pub(super) async fn sync<C, Id>(
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

/// [`sync`], the entity's id as text: answers `new_id` when the delivery created the
/// entity, the id its pointer holds otherwise.
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
    let request = json!({"provider": provider, "external_id": external_id,
                         "fingerprint": delivery.fingerprint, "revision": delivery.revision_millis()});

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
        let same_content = existing.fingerprint == delivery.fingerprint;
        let actions = newer_writes(&pk, &pointer_key, &existing, &delivery, |version| {
            let previous = Some(existing.target_sk.as_str());
            let next = build(&existing.entity_id, version, previous)?;
            Ok(canonical(next, provider, external_id, version))
        })?;
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
