//! How the embedded store lays items out in fjall partitions, how their keys are
//! encoded, and the key-range arithmetic that turns sort-key conditions into ranges.
//!
//! - `items#<context>`: `(pk, sk)` -> item JSON
//! - `index#<context>#<gsi>`: `(index pk, index sk or "", pk, sk)` -> nothing
//! - `expiry`: `(epoch seconds, context, pk, sk)` -> nothing, for items with the TTL attribute
//! - `changelog`: sequence number -> change record JSON
//! - `checkpoints`: change-log consumer -> last sequence number it processed
//! - `meta`: what the store is: `format_version`, `created_at` (see `meta.rs`)
//!
//! Keys are byte strings ordered by bytes. A tuple of strings is encoded so that byte
//! order is the tuple's order, element by element, which is DynamoDB's order for string
//! keys: each string's NUL bytes are escaped as `00 FF` and each string ends with
//! `00 01` (smaller than any byte that can follow inside a string). Numbers are
//! big-endian, a signed one with its sign bit flipped. Each table also has the name it
//! has in a backup (`archive.rs`), `items/<context>` and so on.

use crate::store::{Item, SortKeyCondition, StoreError};
use events_schema::Context;
use events_schema::tables::{GsiDef, TABLES, TTL};
use fjall::{PartitionCreateOptions, TxKeyspace, TxPartitionHandle};
use std::ops::Bound;

/// What a table's keys and values are (how a backup writes them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Shape {
    /// `(pk, sk)` -> bytes.
    Items,
    /// `(index pk, index sk, pk, sk)` -> nothing.
    Index,
    /// `(epoch seconds, context, pk, sk)` -> nothing.
    Expiry,
    /// sequence number -> bytes.
    Changelog,
    /// text -> number.
    Checkpoints,
    /// text -> text.
    Meta,
}

/// One table of the store: its name in a backup, and its shape.
#[derive(Debug, Clone)]
pub(super) struct TableDef {
    pub name: String,
    pub shape: Shape,
}

impl TableDef {
    /// The fjall partition's name (fjall allows no `/`).
    pub(super) fn partition_name(&self) -> String {
        self.name.replace('/', "#")
    }
}

/// Every table of the store, the one list of them: each context's items and its
/// indexes, then `expiry`, `changelog`, `checkpoints` and `meta`.
pub(super) fn tables() -> Vec<TableDef> {
    let def = |name: String, shape| TableDef { name, shape };
    let mut all = Vec::new();
    for table in &TABLES {
        all.push(def(format!("items/{}", table.context), Shape::Items));
        for gsi in table.gsis {
            all.push(def(index_table_name(table.context, gsi), Shape::Index));
        }
    }
    all.push(def("expiry".into(), Shape::Expiry));
    all.push(def("changelog".into(), Shape::Changelog));
    all.push(def("checkpoints".into(), Shape::Checkpoints));
    all.push(def("meta".into(), Shape::Meta));
    all
}

/// The name of an index's table.
pub(super) fn index_table_name(table: Context, gsi: &GsiDef) -> String {
    format!("index/{table}/{}", gsi.name)
}

/// The open partitions of a store, by what they hold.
#[derive(Clone)]
pub(super) struct Partitions {
    items: Vec<TxPartitionHandle>,
    indexes: Vec<(Context, &'static str, TxPartitionHandle)>,
    pub expiry: TxPartitionHandle,
    pub changelog: TxPartitionHandle,
    pub checkpoints: TxPartitionHandle,
    pub meta: TxPartitionHandle,
    /// Every table with its partition, in [`tables`]' order.
    pub all: Vec<(TableDef, TxPartitionHandle)>,
}

impl Partitions {
    /// Opens (making those missing) every partition of the store in `keyspace`.
    pub(super) fn open(keyspace: &TxKeyspace) -> Result<Self, StoreError> {
        let mut all = Vec::new();
        for def in tables() {
            let handle = keyspace
                .open_partition(&def.partition_name(), PartitionCreateOptions::default())
                .map_err(|e| StoreError::Backend(e.to_string()))?;
            all.push((def, handle));
        }
        let named = |name: &str| {
            all.iter()
                .find(|(def, _)| def.name == name)
                .map(|(_, handle)| handle.clone())
        };
        let mut items = Vec::new();
        let mut indexes = Vec::new();
        for table in &TABLES {
            items.extend(named(&format!("items/{}", table.context)));
            for gsi in table.gsis {
                let handle = named(&index_table_name(table.context, gsi));
                indexes.extend(handle.map(|h| (table.context, gsi.name, h)));
            }
        }
        let fixed =
            |name| named(name).ok_or_else(|| StoreError::Backend(format!("no partition {name}")));
        Ok(Self {
            items,
            indexes,
            expiry: fixed("expiry")?,
            changelog: fixed("changelog")?,
            checkpoints: fixed("checkpoints")?,
            meta: fixed("meta")?,
            all,
        })
    }

    /// The items of `table` (`Context::ALL` and `TABLES` list the contexts in one order).
    pub(super) fn items(&self, table: Context) -> &TxPartitionHandle {
        &self.items[table as usize]
    }

    /// The entries of `table`'s index `gsi`.
    pub(super) fn index(
        &self,
        table: Context,
        gsi: &GsiDef,
    ) -> Result<&TxPartitionHandle, StoreError> {
        self.indexes
            .iter()
            .find(|(context, name, _)| *context == table && *name == gsi.name)
            .map(|(_, _, handle)| handle)
            .ok_or_else(|| StoreError::Backend(format!("no index {} on {table}", gsi.name)))
    }
}

/// Appends `s`, escaped and terminated (see the module's note).
fn push_str(out: &mut Vec<u8>, s: &str) {
    for byte in s.bytes() {
        match byte {
            0 => out.extend_from_slice(&[0, 0xFF]),
            b => out.push(b),
        }
    }
    out.extend_from_slice(&[0, 1]);
}

/// The key of a tuple of strings.
pub(super) fn key_of(parts: &[&str]) -> Vec<u8> {
    let mut out = Vec::with_capacity(parts.iter().map(|p| p.len() + 2).sum());
    for part in parts {
        push_str(&mut out, part);
    }
    out
}

/// An item's key.
pub(super) fn item_key(pk: &str, sk: &str) -> Vec<u8> {
    key_of(&[pk, sk])
}

/// An expiry entry's key: the time first, so entries come in the order they fall due.
pub(super) fn expiry_key(at: i64, table: &str, pk: &str, sk: &str) -> Vec<u8> {
    let mut out = expiry_prefix(at);
    for part in [table, pk, sk] {
        push_str(&mut out, part);
    }
    out
}

/// The first 8 bytes of every expiry key at `at`.
pub(super) fn expiry_prefix(at: i64) -> Vec<u8> {
    ((at as u64) ^ (1 << 63)).to_be_bytes().to_vec()
}

/// The time of an expiry key, and the strings after it.
pub(super) fn split_expiry(key: &[u8]) -> Result<(i64, Vec<String>), StoreError> {
    let Some((time, rest)) = key.split_first_chunk::<8>() else {
        return Err(corrupt_key(key));
    };
    let at = (u64::from_be_bytes(*time) ^ (1 << 63)) as i64;
    Ok((at, split(rest)?))
}

/// The strings of an encoded tuple key.
pub(super) fn split(key: &[u8]) -> Result<Vec<String>, StoreError> {
    let mut parts = Vec::new();
    let mut current = Vec::new();
    let mut bytes = key.iter();
    while let Some(&byte) = bytes.next() {
        match (byte, byte == 0) {
            (_, false) => current.push(byte),
            (_, true) => match bytes.next() {
                Some(0xFF) => current.push(0),
                Some(1) => {
                    let part = String::from_utf8(std::mem::take(&mut current))
                        .map_err(|_| corrupt_key(key))?;
                    parts.push(part);
                }
                _ => return Err(corrupt_key(key)),
            },
        }
    }
    if !current.is_empty() {
        return Err(corrupt_key(key));
    }
    Ok(parts)
}

/// The two strings of an item key.
pub(super) fn split_item_key(key: &[u8]) -> Result<(String, String), StoreError> {
    match <[String; 2]>::try_from(split(key)?) {
        Ok([pk, sk]) => Ok((pk, sk)),
        Err(_) => Err(corrupt_key(key)),
    }
}

/// The four strings of an index key.
pub(super) fn split_index_key(key: &[u8]) -> Result<[String; 4], StoreError> {
    <[String; 4]>::try_from(split(key)?).map_err(|_| corrupt_key(key))
}

fn corrupt_key(key: &[u8]) -> StoreError {
    StoreError::Backend(format!("corrupt key in the store: {key:?}"))
}

/// A sequence number's key (big-endian: byte order is number order).
pub(super) fn seq_key(seq: u64) -> [u8; 8] {
    seq.to_be_bytes()
}

/// The number of a sequence key, or of a checkpoint's value.
pub(super) fn number(bytes: &[u8]) -> Result<u64, StoreError> {
    <[u8; 8]>::try_from(bytes)
        .map(u64::from_be_bytes)
        .map_err(|_| StoreError::Backend(format!("corrupt number in the store: {bytes:?}")))
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

/// Byte bounds of a key range.
pub(super) type Bounds = (Bound<Vec<u8>>, Bound<Vec<u8>>);

/// Bounds for the item keys of partition `pk` whose sort key is within `range`.
pub(super) fn item_bounds(pk: &str, range: &StrRange) -> Bounds {
    let lower = Bound::Included(item_key(pk, range.lower.as_deref().unwrap_or("")));
    let upper = match &range.upper {
        Some(hi) => Bound::Excluded(item_key(pk, hi)),
        None => Bound::Excluded(item_key(&just_after(pk), "")),
    };
    (lower, upper)
}

/// Bounds for the index keys of index partition `pk` whose index sort key is within
/// `range`.
pub(super) fn index_bounds(pk: &str, range: &StrRange) -> Bounds {
    let lower = Bound::Included(key_of(&[pk, range.lower.as_deref().unwrap_or(""), "", ""]));
    let upper = match &range.upper {
        Some(hi) => Bound::Excluded(key_of(&[pk, hi, "", ""])),
        None => Bound::Excluded(key_of(&[&just_after(pk), "", "", ""])),
    };
    (lower, upper)
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

    /// Byte order of encoded tuples is the tuples' order, and they decode to what was
    /// encoded, NUL bytes and all.
    #[test]
    fn encoded_tuples_sort_as_tuples_and_decode_back() {
        let strings = [
            "",
            "\0",
            "\0\0",
            "a",
            "a\0",
            "a\0b",
            "ab",
            "b",
            "é",
            "\u{10FFFF}",
        ];
        let mut pairs = Vec::new();
        for a in strings {
            for b in strings {
                pairs.push((a, b));
            }
        }
        for x in &pairs {
            let key = item_key(x.0, x.1);
            let (pk, sk) = split_item_key(&key).expect("decodes");
            assert_eq!((pk.as_str(), sk.as_str()), *x);
            for y in &pairs {
                assert_eq!(
                    key.cmp(&item_key(y.0, y.1)),
                    x.cmp(y),
                    "{x:?} against {y:?}"
                );
            }
        }
        for (a, b) in [
            (-5_i64, 3_i64),
            (-1, 0),
            (0, 1),
            (i64::MIN, i64::MAX),
            (7, 7),
        ] {
            let (ka, kb) = (expiry_key(a, "t", "p", "s"), expiry_key(b, "t", "p", "s"));
            assert_eq!(ka.cmp(&kb), a.cmp(&b), "{a} against {b}");
            assert_eq!(split_expiry(&ka).expect("decodes").0, a);
        }
        assert!(split(&[b'a', 0]).is_err(), "a string cut short is corrupt");
    }

    #[test]
    fn bounds_hold_exactly_the_partition_and_range() {
        let range = StrRange::of(Some(&SortKeyCondition::BeginsWith("M".into())));
        let (lower, upper) = item_bounds("p", &range);
        let inside = |key: &[u8]| {
            let above = match &lower {
                Bound::Included(lo) => key >= lo.as_slice(),
                _ => true,
            };
            let below = match &upper {
                Bound::Excluded(hi) => key < hi.as_slice(),
                _ => true,
            };
            above && below
        };
        for (pk, sk, expected) in [
            ("p", "M", true),
            ("p", "MEAL#1", true),
            ("p", "N", false),
            ("p", "L", false),
            ("p\0", "M", false),
            ("pa", "M", false),
            ("", "M", false),
        ] {
            assert_eq!(inside(&item_key(pk, sk)), expected, "{pk:?} {sk:?}");
        }
        let everything = StrRange::default();
        let (_, upper) = item_bounds("p", &everything);
        let Bound::Excluded(hi) = upper else {
            panic!("an upper bound")
        };
        assert!(item_key("p", "\u{10FFFF}\u{10FFFF}").as_slice() < hi.as_slice());
        assert!(item_key("p\0", "").as_slice() >= hi.as_slice());
    }
}
