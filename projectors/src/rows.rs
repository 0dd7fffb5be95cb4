//! Convergent writes of projection rows. Every row (or group of attributes within a
//! row) carries the version of the fact it shows; a write applies only if it is newer,
//! so duplicates and late events change nothing. Deleted things become tombstones with
//! the deleting version, so an older event arriving afterwards cannot bring them back.

pub use crate::convert::Entry;

use crate::convert::{DELETED, guard_of, item_of, merged_set, set_revision, tombstone_item};
use events_schema::rows::{DailyGroup, Row};
use events_schema::time::Day;
use infra::StoreError;
use infra::store::{Condition, Item, Key, Update};
use infra::table::{ContextTable, Table};

/// Sets `attrs` and `version_attr = version` on `key` if `version` is newer than the
/// stored one, leaving the row's other attributes alone: for rows whose attribute
/// groups have versions of their own (`DAILY#`). Returns whether it applied.
pub async fn upsert_newer<C: ContextTable>(
    table: &Table<C>,
    key: &Key,
    attrs: Item,
    version_attr: &str,
    version: u64,
) -> Result<bool, StoreError> {
    // A newer fact also revives a tombstoned row (a paused goal made active again).
    let mut update = Update::default().set(version_attr, version).remove(DELETED);
    for (name, value) in attrs {
        update = update.set(name, value);
    }
    let condition = Condition::Newer {
        attr: version_attr.to_owned(),
        version,
    };
    match table.update(key, update, Some(condition)).await {
        Ok(_) => Ok(true),
        Err(StoreError::ConditionFailed { .. }) => Ok(false),
        Err(e) => Err(e),
    }
}

/// Replaces the whole row at `key` by `attrs` with `version_attr = version`, if
/// `version` is newer than the stored one. For rows one fact owns entirely, so no
/// attribute of an older fact can survive into the new row. Returns whether it applied.
pub async fn replace_newer<C: ContextTable>(
    table: &Table<C>,
    key: &Key,
    attrs: Item,
    version_attr: &str,
    version: u64,
) -> Result<bool, StoreError> {
    let mut item = attrs;
    item.extend(key.to_item());
    item.insert(version_attr.into(), version.into());
    let condition = Condition::Newer {
        attr: version_attr.to_owned(),
        version,
    };
    match table.put(item, Some(condition)).await {
        Ok(()) => Ok(true),
        Err(StoreError::ConditionFailed { .. }) => Ok(false),
        Err(e) => Err(e),
    }
}

/// Replaces a row by a tombstone at `version`, if newer (see module docs).
pub async fn tombstone_newer<C: ContextTable>(
    table: &Table<C>,
    key: &Key,
    version_attr: &str,
    version: u64,
) -> Result<bool, StoreError> {
    replace_newer(table, key, tombstone_item(), version_attr, version).await
}

/// Writes `row` whole at `key` if its version is newer than the stored one (see
/// [`replace_newer`]): the typed write of a row one fact owns.
pub async fn put_if_newer<C: ContextTable, R: Row>(
    table: &Table<C>,
    key: &Key,
    row: &R,
) -> Result<bool, StoreError> {
    replace_newer(table, key, item_of(row), R::VERSION_ATTR, row.version()).await
}

/// Replaces the `R` row at `key` by its tombstone at `version`, if newer.
pub async fn tombstone<C: ContextTable, R: Row>(
    table: &Table<C>,
    key: &Key,
    version: u64,
) -> Result<bool, StoreError> {
    tombstone_newer(table, key, R::VERSION_ATTR, version).await
}

/// Attribute of a set row holding its entries, and its revision.
pub const ENTRIES: &str = "entries";
/// The revision of a set row: the sum of its entries' versions. Every merge that
/// changes the row raises it, so it guards read-modify-write like a counter would, and
/// it depends only on the entries, so rows built in different orders are identical.
const REVISION: &str = "rev";

/// Merges one versioned entry into a set row (`entries.<id>`), keeping the newest version
/// of each entry (a deleted entry stays as a versioned tombstone), then sets the row's
/// other attributes to `derive(entries)`. The result depends only on the set of facts
/// seen, not on their order or repetition. Read-modify-write guarded by the row's
/// revision, retried when another subscription wrote the row in between.
pub async fn merge_entry<C: ContextTable>(
    table: &Table<C>,
    key: &Key,
    entry: Entry<'_>,
    derive: impl Fn(&Item) -> Item,
) -> Result<(), StoreError> {
    for _ in 0..32 {
        let row = table.get(key, true).await?;
        let Some((revision, entries)) = merged_set(row.as_ref(), (ENTRIES, REVISION), &entry)
        else {
            return Ok(());
        };
        let mut item = derive(&entries);
        item.extend(key.to_item());
        item.insert(REVISION.into(), set_revision(&entries).into());
        item.insert(ENTRIES.into(), entries.into());
        let condition = match revision {
            Some(rev) => Condition::AttributeEquals(REVISION.into(), rev.into()),
            None => Condition::ItemNotExists,
        };
        match table.put(item, Some(condition)).await {
            Ok(()) => return Ok(()),
            Err(StoreError::ConditionFailed { .. }) => continue,
            Err(e) => return Err(e),
        }
    }
    Err(StoreError::Backend(format!(
        "set row {} {} kept changing",
        key.pk, key.sk
    )))
}

/// A set member that belongs to one day and may move between days (a workout whose
/// start changed, a night's session): its entry, the day it is on and the day it left.
pub struct Moved<'a> {
    pub id: &'a str,
    pub value: Item,
    pub version: u64,
    pub day: Day,
    /// The day it was on before this fact, if the fact moved it.
    pub from: Option<Day>,
}

impl<'a> Moved<'a> {
    /// What a move writes, in order: the tombstone of the entry on the day it left (so
    /// that day stops counting it), if it moved, then the live entry on its day.
    pub fn entries(self) -> impl Iterator<Item = (Day, Entry<'a>)> {
        let gone = self
            .from
            .map(|from| (from, Entry::gone(self.id, self.version)));
        let live = (self.day, Entry::live(self.id, self.value, self.version));
        gone.into_iter().chain([live])
    }
}

/// Merges a member that may have moved into its days' rows ([`Moved::entries`]).
/// `row_of` names a day's row and how the row's attributes derive from its entries (as
/// in [`merge_entry`]). Returns the days whose rows it merged into, the day it left first.
pub async fn merge_moved<C: ContextTable, D>(
    table: &Table<C>,
    member: Moved<'_>,
    row_of: impl Fn(Day) -> (Key, D),
) -> Result<Vec<Day>, StoreError>
where
    D: Fn(&Item) -> Item,
{
    let mut days = Vec::with_capacity(2);
    for (day, entry) in member.entries() {
        let (key, derive) = row_of(day);
        merge_entry(table, &key, entry, derive).await?;
        days.push(day);
    }
    Ok(days)
}

/// A change to one group of a `DAILY#` row (see [`merge_group`]).
#[derive(Debug, Clone)]
pub enum GroupChange<'a> {
    /// The group's whole value at a version: the newer wins (nutrition's totals, which
    /// the meal commands compute and version).
    Whole(Item, u64),
    /// One versioned entry of the group's set (a workout, a session); the group's value
    /// is derived from the set's live entries (`daily::derive`).
    Entry(Entry<'a>),
}

/// Applies `change` to the group `group` of a row that holds other groups too
/// (`DAILY#`), leaving the row's other attributes as they are; `also` is set with it
/// (the row's own fixed attributes, such as its day). Returns whether the row changed.
///
/// Every group is written the same way: read the row, merge the change into what the
/// group holds ([`group_update`]), and write it on condition that the group's guard is
/// still what was read, retrying when another subscription wrote the group in between.
/// The guard is the group's version for a whole group and its revision for a set. A
/// read costs one consistent get more than a blind "only if newer" write would for a
/// whole group; in exchange there is one method to reason about, and like
/// [`merge_entry`] the result depends only on the set of facts seen.
pub async fn merge_group<C: ContextTable>(
    table: &Table<C>,
    key: &Key,
    group: DailyGroup,
    change: GroupChange<'_>,
    also: &Item,
) -> Result<bool, StoreError> {
    for _ in 0..32 {
        let row = table.get(key, true).await?;
        let Some((guard, read, mut update)) = group_update(row.as_ref(), group, &change) else {
            return Ok(false);
        };
        for (name, value) in also {
            update = update.set(name.clone(), value.clone());
        }
        let condition = match read {
            Some(at) => Condition::AttributeEquals(guard, at.into()),
            None => Condition::AttributeNotExists(guard),
        };
        match table.update(key, update, Some(condition)).await {
            Ok(_) => return Ok(true),
            Err(StoreError::ConditionFailed { .. }) => continue,
            Err(e) => return Err(e),
        }
    }
    Err(StoreError::Backend(format!(
        "group {} of {} {} kept changing",
        group.attr(),
        key.pk,
        key.sk
    )))
}

/// What applying `change` to `group` of the stored `row` writes: the group's guard
/// attribute, its value as read, and the update; None when the row already holds the
/// change or a newer one.
fn group_update(
    row: Option<&Item>,
    group: DailyGroup,
    change: &GroupChange<'_>,
) -> Option<(String, Option<u64>, Update)> {
    match change {
        GroupChange::Whole(value, version) => {
            let guard = group.version_attr();
            let read = guard_of(row, &guard)?;
            if read.is_some_and(|stored| stored >= *version) {
                return None;
            }
            let update = Update::default()
                .set(group.attr(), value.clone())
                .set(guard.clone(), *version);
            Some((guard, read, update))
        }
        GroupChange::Entry(entry) => {
            let guard = group.revision_attr();
            let (read, entries) = merged_set(row, (&group.entries_attr(), &guard), entry)?;
            let update = Update::default()
                .set(group.attr(), crate::daily::derive(group, &entries))
                .set(guard.clone(), set_revision(&entries))
                .set(group.entries_attr(), entries);
            Some((guard, read, update))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn whole(version: u64) -> GroupChange<'static> {
        GroupChange::Whole(Item::from_iter([("meals".to_owned(), json!(1))]), version)
    }

    fn row(version: serde_json::Value) -> Item {
        Item::from_iter([(DailyGroup::Nutrition.version_attr(), version)])
    }

    /// A whole group is written over an older version or none, guarded by the version
    /// read, and not over an equal or newer one.
    #[test]
    fn a_whole_group_is_guarded_by_the_version_read() {
        let group = DailyGroup::Nutrition;
        let (guard, read, _) = group_update(None, group, &whole(3)).expect("a first write");
        assert_eq!((guard.as_str(), read), ("nutrition_version", None));
        let older = row(json!(2));
        let (_, read, _) = group_update(Some(&older), group, &whole(3)).expect("newer");
        assert_eq!(read, Some(2));
        assert!(group_update(Some(&row(json!(3))), group, &whole(3)).is_none());
        assert!(group_update(Some(&row(json!(4))), group, &whole(3)).is_none());
    }

    /// A stored version that is not a whole number cannot guard a write: nothing is
    /// written (rather than retried until the loop gives up).
    #[test]
    fn a_version_that_is_not_a_number_writes_nothing() {
        let group = DailyGroup::Nutrition;
        for odd in [json!("7"), json!(7.5), json!(-1)] {
            assert!(
                group_update(Some(&row(odd.clone())), group, &whole(9)).is_none(),
                "{odd}"
            );
        }
    }
}
