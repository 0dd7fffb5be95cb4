//! What a sync writes, decided from the delivery and the pointer read: a first
//! delivery's pointer, entity and event; a newer one's revision only, or the entity's
//! next version with the pointer moved on to it; and the event made content-addressed.
//! Pure: nothing here touches the table.

use super::pointer::{Delivery, Pointer};
use crate::CommandError;
use crate::items::to_item;
use crate::outbox::event_action;
use events_schema::envelope::EventEnvelope;
use events_schema::ids::{ExternalId, ProviderName};
use infra::store::{Condition, Item, Key, Update};
use infra::table::Action;
use serde_json::json;

/// What a sync writes for the entity: its item (keys included) and its event.
pub(super) struct Written {
    pub(super) item: Item,
    pub(super) event: EventEnvelope,
}

/// A first delivery's writes: the pointer (version 1) and the entity `new_id` on free
/// keys, and its event.
pub(super) fn first_writes(
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

/// What a delivery newer than the `existing` pointer writes: with the same content,
/// only the pointer's revision ([`revision_update`]); with changed content, the entity's
/// next version, which `next_version(version)` makes, and the pointer moved on to it
/// ([`correction_writes`]).
pub(super) fn newer_writes(
    pk: &str,
    pointer_key: &Key,
    existing: &Pointer,
    delivery: &Delivery,
    next_version: impl FnOnce(u64) -> Result<Written, CommandError>,
) -> Result<Vec<Action>, CommandError> {
    if existing.fingerprint == delivery.fingerprint {
        return Ok(vec![revision_update(
            pointer_key,
            existing,
            delivery.revision_millis(),
        )]);
    }
    let next = next_version(existing.version + 1)?;
    correction_writes(
        pk,
        pointer_key,
        existing,
        next,
        &delivery.fingerprint,
        delivery.revision_millis(),
    )
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

/// The sort key of an entity's `item`.
fn sort_key_of(item: &Item) -> Result<String, CommandError> {
    item.get("sk")
        .and_then(|v| v.as_str())
        .map(str::to_owned)
        .ok_or_else(|| CommandError::Internal("entity item has no sort key".into()))
}

/// Makes a synced entity's event content-addressed: its id comes from provider,
/// external id, version and type, its times from the entity. Whichever delivery (or
/// replay) of the provider's data writes a version, it publishes the very same event.
pub(super) fn canonical(
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::items::from_item;
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
