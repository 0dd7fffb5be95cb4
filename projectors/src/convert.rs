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

/// The version an entry of a set was written at (0 for none).
pub fn entry_version(entry: &Value) -> Option<u64> {
    entry.get("version").and_then(Value::as_u64)
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

/// An item decoded as the row type `T`.
pub fn row_of<T: DeserializeOwned>(item: &Item) -> Result<T, serde_json::Error> {
    T::deserialize(&Value::Object(item.clone()))
}
