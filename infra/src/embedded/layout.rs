//! How the embedded store lays items out in redb, and the key-range arithmetic that
//! turns sort-key conditions into redb ranges.
//!
//! - `items/<context>`: `(pk, sk)` -> item JSON
//! - `index/<context>/<gsi>`: `(index pk, index sk or "", pk, sk)` -> ()
//! - `expiry`: `(epoch seconds, context, pk, sk)` -> () for items carrying the TTL attribute
//! - `changelog`: sequence number -> change record JSON
//! - `checkpoints`: change-log consumer -> last sequence number it processed
//! - `meta`: what the store is: `format_version`, `created_at` (see `meta.rs`)
//!
//! redb orders `&str` by bytes and tuples element by element, which is DynamoDB's
//! order for string keys.

use crate::store::{Item, SortKeyCondition, StoreError};
use events_schema::Context;
use events_schema::tables::{GsiDef, TABLES, TTL};
use redb::TableDefinition;
use std::ops::Bound;

pub(super) type ItemKey<'a> = (&'a str, &'a str);
pub(super) type IndexKey<'a> = (&'a str, &'a str, &'a str, &'a str);
pub(super) type ExpiryKey<'a> = (i64, &'a str, &'a str, &'a str);

pub(super) const CHANGELOG: TableDefinition<u64, &[u8]> = TableDefinition::new("changelog");
pub(super) const EXPIRY: TableDefinition<ExpiryKey, ()> = TableDefinition::new("expiry");
/// Change-log consumers' checkpoints: consumer name -> last processed sequence number.
pub(super) const CHECKPOINTS: TableDefinition<&str, u64> = TableDefinition::new("checkpoints");
/// What the store is: `format_version`, `created_at` (text values).
pub(super) const META: TableDefinition<&str, &str> = TableDefinition::new("meta");

pub(super) struct Names {
    items: [String; 9],
}

impl Names {
    pub(super) fn new() -> Self {
        Self {
            items: Context::ALL.map(|c| format!("items/{c}")),
        }
    }

    pub(super) fn items(
        &self,
        table: Context,
    ) -> TableDefinition<'_, ItemKey<'static>, &'static [u8]> {
        TableDefinition::new(&self.items[table as usize])
    }
}

/// Something done to each table of the store, whatever its key and value types (made,
/// copied into a backup, read through).
pub(super) trait EachTable {
    fn table<K: redb::Key + 'static, V: redb::Value + 'static>(
        &mut self,
        def: TableDefinition<'_, K, V>,
    ) -> Result<(), StoreError>;
}

/// Visits every table of the store, the one list of them: each context's items and its
/// indexes, then `expiry`, `changelog`, `checkpoints` and `meta`.
pub(super) fn each_table(names: &Names, each: &mut impl EachTable) -> Result<(), StoreError> {
    for def in &TABLES {
        each.table(names.items(def.context))?;
        for gsi in def.gsis {
            each.table(index_def(&index_table_name(def.context, gsi)))?;
        }
    }
    each.table(EXPIRY)?;
    each.table(CHANGELOG)?;
    each.table(CHECKPOINTS)?;
    each.table(META)
}

/// The name of an index's redb table (built per use: index writes are rare enough).
pub(super) fn index_table_name(table: Context, gsi: &GsiDef) -> String {
    format!("index/{table}/{}", gsi.name)
}

pub(super) fn index_def(name: &str) -> TableDefinition<'_, IndexKey<'static>, ()> {
    TableDefinition::new(name)
}

pub(super) fn encode(item: &Item) -> Vec<u8> {
    // Serializing a JSON map cannot fail.
    serde_json::to_vec(item).unwrap_or_default()
}

pub(super) fn decode(bytes: &[u8]) -> Result<Item, StoreError> {
    serde_json::from_slice(bytes).map_err(|e| StoreError::Backend(format!("corrupt item: {e}")))
}

/// The item's entry in an index, if it belongs there (items are checked with
/// `validate_index_attributes` before they are written).
pub(super) fn index_entry(gsi: &GsiDef, item: &Item) -> Option<(String, String)> {
    let attr = |name: &str| {
        item.get(name)
            .and_then(serde_json::Value::as_str)
            .map(str::to_owned)
    };
    let pk = attr(gsi.partition_key)?;
    let sk = match gsi.sort_key {
        Some(name) => attr(name)?,
        None => String::new(),
    };
    Some((pk, sk))
}

/// The item's TTL, if it carries a numeric one.
pub(super) fn expiry_of(item: &Item) -> Option<i64> {
    item.get(TTL)
        .and_then(serde_json::Value::as_f64)
        .map(|at| at as i64)
}

/// Bounds on a string key: an inclusive lower bound and an exclusive upper bound, or
/// none. Exclusive lower and inclusive upper bounds are expressed with the fact that
/// `s + "\0"` is the smallest string greater than `s`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(super) struct StrRange {
    pub lower: Option<String>,
    pub upper: Option<String>,
}

fn just_after(s: &str) -> String {
    format!("{s}\0")
}

/// The smallest string greater than every string starting with `prefix`, if any.
fn prefix_end(prefix: &str) -> Option<String> {
    let mut chars: Vec<char> = prefix.chars().collect();
    while let Some(last) = chars.pop() {
        let next = match last as u32 + 1 {
            0xD800 => Some('\u{E000}'),
            n => char::from_u32(n),
        };
        if let Some(next) = next {
            chars.push(next);
            return Some(chars.into_iter().collect());
        }
    }
    None
}

impl StrRange {
    pub(super) fn of(condition: Option<&SortKeyCondition>) -> Self {
        use SortKeyCondition::*;
        let Some(condition) = condition else {
            return Self::default();
        };
        let (lower, upper) = match condition {
            Equals(v) => (Some(v.clone()), Some(just_after(v))),
            BeginsWith(p) => (Some(p.clone()), prefix_end(p)),
            Between(lo, hi) => (Some(lo.clone()), Some(just_after(hi))),
            LessThan(v) => (None, Some(v.clone())),
            LessOrEqual(v) => (None, Some(just_after(v))),
            GreaterThan(v) => (Some(just_after(v)), None),
            GreaterOrEqual(v) => (Some(v.clone()), None),
        };
        Self { lower, upper }
    }
}

/// redb bounds for `(pk, sk)` keys of one partition within `range`.
pub(super) fn item_bounds<'a>(
    pk: &'a str,
    pk_end: &'a str,
    range: &'a StrRange,
) -> (Bound<ItemKey<'a>>, Bound<ItemKey<'a>>) {
    let lower = Bound::Included((pk, range.lower.as_deref().unwrap_or("")));
    let upper = match &range.upper {
        Some(hi) => Bound::Excluded((pk, hi.as_str())),
        None => Bound::Excluded((pk_end, "")),
    };
    (lower, upper)
}

/// redb bounds for `(index pk, index sk, pk, sk)` keys of one index partition.
pub(super) fn index_bounds<'a>(
    pk: &'a str,
    pk_end: &'a str,
    range: &'a StrRange,
) -> (Bound<IndexKey<'a>>, Bound<IndexKey<'a>>) {
    let lower = Bound::Included((pk, range.lower.as_deref().unwrap_or(""), "", ""));
    let upper = match &range.upper {
        Some(hi) => Bound::Excluded((pk, hi.as_str(), "", "")),
        None => Bound::Excluded((pk_end, "", "", "")),
    };
    (lower, upper)
}

/// The smallest partition key greater than `pk`.
pub(super) fn partition_end(pk: &str) -> String {
    just_after(pk)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_end_is_the_next_string_after_the_prefix_block() {
        assert_eq!(prefix_end("MEAL#"), Some("MEAL$".to_owned()));
        assert_eq!(prefix_end("a\u{10FFFF}"), Some("b".to_owned()));
        assert_eq!(prefix_end("\u{D7FF}"), Some("\u{E000}".to_owned()));
        assert_eq!(prefix_end("\u{10FFFF}"), None);
        assert_eq!(prefix_end(""), None);
    }

    #[test]
    fn ranges_match_the_conditions() {
        let cases = [
            SortKeyCondition::Equals("b".into()),
            SortKeyCondition::BeginsWith("b".into()),
            SortKeyCondition::Between("b".into(), "c".into()),
            SortKeyCondition::LessThan("b".into()),
            SortKeyCondition::LessOrEqual("b".into()),
            SortKeyCondition::GreaterThan("b".into()),
            SortKeyCondition::GreaterOrEqual("b".into()),
        ];
        let keys = ["a", "b", "b\0", "ba", "bz", "c", "c\0", "ca", "é", "😀"];
        for condition in cases {
            let range = StrRange::of(Some(&condition));
            for key in keys {
                let inside = range.lower.as_deref().is_none_or(|lo| key >= lo)
                    && range.upper.as_deref().is_none_or(|hi| key < hi);
                assert_eq!(inside, condition.matches(key), "{condition:?} on {key:?}");
            }
        }
    }
}
