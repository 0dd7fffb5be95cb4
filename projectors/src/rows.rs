//! Convergent writes of projection rows. Every row (or group of attributes within a
//! row) carries the version of the fact it shows; a write applies only if it is newer,
//! so duplicates and late events change nothing. Deleted things become tombstones with
//! the deleting version, so an older event arriving afterwards cannot bring them back.

use infra::StoreError;
use infra::store::{Condition, Item, Key, Update};
use infra::table::{ContextTable, Table};
use serde_json::Value;

/// Attribute flagging a tombstone row.
pub const DELETED: &str = "deleted";

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
    let mut tombstone = Item::new();
    tombstone.insert(DELETED.into(), Value::Bool(true));
    replace_newer(table, key, tombstone, version_attr, version).await
}

/// Whether a row is a tombstone.
pub fn is_tombstone(item: &Item) -> bool {
    item.get(DELETED).and_then(Value::as_bool).unwrap_or(false)
}

/// A JSON object as an item.
pub fn object(value: Value) -> Item {
    match value {
        Value::Object(map) => map,
        _ => Item::new(),
    }
}
