//! The one conversion between the projections' typed values (rows, entries, derived
//! groups) and the stored items they become: serialize a value into an item or an
//! attribute, read a set's live entries back as a type. Nothing else in this crate
//! builds or takes apart a row's JSON; this module names no module above it.

use infra::store::Item;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// The attribute flagging a tombstone row (or a tombstoned entry of a set), and the
/// test for one: the read side's, so writer and reader agree.
pub use events_schema::rows::{DELETED, is_tombstone};

/// A value as a stored attribute.
pub fn value_of(value: &impl Serialize) -> Value {
    // Rows and entries are plain data (no maps with non-string keys, no failing
    // `Serialize`): serializing them cannot fail.
    serde_json::to_value(value).unwrap_or_default()
}

/// A row (a struct) as the attributes of an item.
pub fn item_of(row: &impl Serialize) -> Item {
    object(value_of(row))
}

/// A JSON object as an item (anything else as no attributes).
pub fn object(value: Value) -> Item {
    match value {
        Value::Object(map) => map,
        _ => Item::new(),
    }
}

/// The version an entry of a set was written at.
fn entry_version(entry: &Value) -> Option<u64> {
    entry.get("version").and_then(Value::as_u64)
}

/// A tombstone's attributes (its version is added by the write).
pub fn tombstone_item() -> Item {
    Item::from_iter([(DELETED.to_owned(), Value::Bool(true))])
}

/// The revision of a stored set: the sum of its entries' versions (see
/// `rows::merge_entry`).
pub fn set_revision(entries: &Item) -> u64 {
    entries.values().filter_map(entry_version).sum()
}

/// One versioned member of a set: a workout of a day, a session of a night.
#[derive(Debug, Clone)]
pub struct Entry<'a> {
    pub id: &'a str,
    /// Its attributes (a typed entry, as [`item_of`] makes it).
    pub value: Item,
    pub version: u64,
    /// A deleted member stays as a versioned tombstone, so an older fact cannot bring it
    /// back.
    pub deleted: bool,
}

impl<'a> Entry<'a> {
    /// A live entry.
    pub fn live(id: &'a str, value: Item, version: u64) -> Self {
        Self {
            id,
            value,
            version,
            deleted: false,
        }
    }

    /// The tombstone of a deleted (or moved away) entry.
    pub fn gone(id: &'a str, version: u64) -> Self {
        Self {
            id,
            value: Item::new(),
            version,
            deleted: true,
        }
    }
}

/// The set the stored `row` holds under `entries_attr`, with `member` merged in, and the
/// revision (under `revision_attr`) it was read at; None when the row already holds the
/// member at its version or a newer one (nothing to write).
pub fn merged_set(
    row: Option<&Item>,
    (entries_attr, revision_attr): (&str, &str),
    member: &Entry<'_>,
) -> Option<(Option<u64>, Item)> {
    let revision = row.and_then(|r| attr_of::<u64>(r, revision_attr));
    let mut entries = row
        .and_then(|r| r.get(entries_attr))
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let stored = entries.get(member.id).and_then(entry_version);
    if stored.is_some_and(|v| v >= member.version) {
        return None;
    }
    let mut attrs = member.value.clone();
    attrs.insert("version".into(), member.version.into());
    attrs.insert(DELETED.into(), Value::Bool(member.deleted));
    entries.insert(member.id.to_owned(), Value::Object(attrs));
    Some((revision, entries))
}

/// The live (not deleted) entries of a set row.
pub fn live_entries(entries: &Item) -> impl Iterator<Item = (&String, &Value)> {
    entries
        .iter()
        .filter(|(_, e)| !e.as_object().is_some_and(is_tombstone))
}

/// The live entries of a stored set, by id, decoded as `T`: the one place an entry set
/// is read. An entry that does not decode (none is written so) counts as `T`'s default,
/// as a missing attribute always did.
pub fn live_decoded<T: DeserializeOwned + Default>(entries: &Item) -> Vec<(&str, T)> {
    live_entries(entries)
        .map(|(id, e)| (id.as_str(), T::deserialize(e).unwrap_or_default()))
        .collect()
}

/// A stored attribute decoded as `T`, if present and of that shape.
pub fn attr_of<T: DeserializeOwned>(item: &Item, attr: &str) -> Option<T> {
    item.get(attr).and_then(|v| T::deserialize(v).ok())
}

/// A version or revision attribute of `row` as a write's guard would read it: `Some(None)`
/// when there is no row or no such attribute, `Some(Some(n))` when it holds a whole
/// number, and `None` when it holds anything else. No condition can be stated on such a
/// value, so no write is made over it, as DynamoDB's "only if newer" would refuse it
/// rather than retry.
pub fn guard_of(row: Option<&Item>, attr: &str) -> Option<Option<u64>> {
    match row.and_then(|r| r.get(attr)) {
        None => Some(None),
        Some(value) => value.as_u64().map(Some),
    }
}

/// An item decoded as the row type `T` (read in place, not copied).
pub fn row_of<T: DeserializeOwned>(item: &Item) -> Result<T, serde_json::Error> {
    T::deserialize(item)
}
