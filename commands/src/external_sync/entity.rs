//! The two sides of a sync: a record a wearable delivers ([`Delivered`], implemented by
//! [`delivered!`]) and the entity its versions write ([`Synced`]); with the id a synced
//! entity gets, its item, and the day an update moved it off.

use crate::CommandError;
use crate::items::to_item;
use events_schema::envelope::EventPayload;
use events_schema::ids::{ExternalId, ProviderName};
use events_schema::keys::SortKey;
use events_schema::time::{Day, Timestamp};
use infra::store::{Item, Key};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::str::FromStr;

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
        impl $crate::external_sync::entity::Delivered for $record {
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
pub(super) fn synced_item<E: Synced>(pk: &str, entity: &E) -> Result<Item, CommandError> {
    to_item(&Key::new(pk, entity.sort_key().to_string()), entity)
}

/// The day an entity was filed under before (from its previous sort key), if an update
/// moved it off that day.
pub(super) fn moved_from(previous_sk: Option<&str>, day: Day) -> Option<Day> {
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
pub(super) fn entity_id<Id: FromStr>(
    provider: &ProviderName,
    external_id: &ExternalId,
    start: events_schema::time::Timestamp,
) -> Result<Id, CommandError> {
    let raw = events_schema::ids::derived_ulid(&format!("{provider}|{external_id}"), start);
    Id::from_str(&raw).map_err(|_| CommandError::Internal("derived id is invalid".into()))
}
