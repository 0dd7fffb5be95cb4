//! What DynamoDB bills for a request, computed from the items it touches, on-demand:
//! - item size: attribute names plus values (a string its UTF-8 bytes; a number one
//!   byte per two significant digits plus one; booleans and nulls one byte; a map or a
//!   list 3 bytes, plus one per element, plus its elements and a map's names);
//! - a write: one write unit per started KB of the larger of the item before and after
//!   (a failed condition still costs the item's units); in a transaction, twice that,
//!   and a `ConditionCheck` costs the same as a write of the item it checks;
//! - an index (projection ALL) costs a write for each entry it gains, loses or rewrites,
//!   two when the entry's key changes, nothing when its view is unchanged;
//! - a read: one read unit per started 4 KB (a query: of all the items it returns),
//!   half that when eventually consistent; a read that finds nothing costs the minimum;
//! - change data capture (Kinesis Data Streams for DynamoDB): one unit per started KB of
//!   every change of a table that streams.

use crate::store::Item;
use events_schema::Context;
use events_schema::tables;
use serde_json::Value;

/// Capacity units, as DynamoDB bills them.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Capacity {
    pub read_units: f64,
    pub write_units: f64,
    /// Change data capture units of the tables that stream to Kinesis.
    pub cdc_units: f64,
    /// Of the write units, those of writes that left the item as it was (waste).
    pub unchanged_write_units: f64,
}

impl std::ops::AddAssign for Capacity {
    fn add_assign(&mut self, other: Self) {
        self.read_units += other.read_units;
        self.write_units += other.write_units;
        self.cdc_units += other.cdc_units;
        self.unchanged_write_units += other.unchanged_write_units;
    }
}

/// The size DynamoDB gives an item, in bytes.
pub fn item_size(item: &Item) -> usize {
    item.iter()
        .map(|(name, value)| name.len() + value_size(value))
        .sum()
}

fn value_size(value: &Value) -> usize {
    match value {
        Value::String(s) => s.len(),
        Value::Number(n) => number_size(&n.to_string()),
        Value::Bool(_) | Value::Null => 1,
        Value::Array(items) => 3 + items.iter().map(|v| 1 + value_size(v)).sum::<usize>(),
        Value::Object(map) => {
            3 + map
                .iter()
                .map(|(k, v)| 1 + k.len() + value_size(v))
                .sum::<usize>()
        }
    }
}

/// A number's size: its significant digits in pairs aligned on the decimal point, plus
/// one byte (and one more when negative).
fn number_size(text: &str) -> usize {
    let negative = text.starts_with('-');
    let unsigned = text.trim_start_matches(['-', '+']);
    let (mantissa, exponent) = match unsigned.to_ascii_lowercase().split_once('e') {
        Some((m, e)) => (m.to_owned(), e.parse::<i64>().unwrap_or(0)),
        None => (unsigned.to_owned(), 0),
    };
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((&mantissa, ""));
    let digits = format!("{whole}{fraction}");
    let leading = digits.trim_start_matches('0');
    let significant = leading.trim_end_matches('0');
    if significant.is_empty() {
        return 1;
    }
    let trailing_zeros = (leading.len() - significant.len()) as i64;
    let exponent = exponent - fraction.len() as i64 + trailing_zeros;
    let mut count = significant.len() + usize::from(exponent.rem_euclid(2) == 1);
    count += count % 2;
    1 + count / 2 + usize::from(negative)
}

/// Write units for `bytes` (one per started KB, at least one).
pub fn write_units(bytes: usize) -> f64 {
    bytes.div_ceil(1024).max(1) as f64
}

/// Read units for `bytes` read (one per started 4 KB, at least one; half when eventually
/// consistent).
pub fn read_units(bytes: usize, consistent: bool) -> f64 {
    let units = bytes.div_ceil(4096).max(1) as f64;
    if consistent { units } else { units / 2.0 }
}

/// What a write of `table` costs, from the item before (`old`) and after (`new`); in a
/// transaction, `transactional`.
pub fn write(
    table: Context,
    old: Option<&Item>,
    new: Option<&Item>,
    transactional: bool,
) -> Capacity {
    let size = old.map_or(0, item_size).max(new.map_or(0, item_size));
    let base = write_units(size) * if transactional { 2.0 } else { 1.0 };
    let def = tables::table(table);
    let indexes: f64 = def
        .gsis
        .iter()
        .map(|gsi| index_write_units(gsi, old, new))
        .sum();
    // A write that changes nothing makes no change record (as DynamoDB Streams).
    Capacity {
        read_units: 0.0,
        write_units: base + indexes,
        cdc_units: if def.stream && old != new {
            write_units(size)
        } else {
            0.0
        },
        unchanged_write_units: if old.is_some() && old == new {
            base
        } else {
            0.0
        },
    }
}

/// What a write refused by its condition costs: the units of the item it found.
pub fn refused_write(existing: Option<&Item>, transactional: bool) -> Capacity {
    let units = write_units(existing.map_or(0, item_size));
    Capacity {
        write_units: if transactional { 2.0 * units } else { units },
        ..Capacity::default()
    }
}

/// What reading `items` costs (a get, a query page).
pub fn read<'a>(items: impl IntoIterator<Item = &'a Item>, consistent: bool) -> Capacity {
    let bytes = items.into_iter().map(item_size).sum();
    Capacity {
        read_units: read_units(bytes, consistent),
        ..Capacity::default()
    }
}

/// The key of an index entry: its partition and sort key values.
type IndexKey = (Value, Option<Value>);

fn index_write_units(gsi: &tables::GsiDef, old: Option<&Item>, new: Option<&Item>) -> f64 {
    // The entry an item has in the index: its key, and (projection ALL) the item.
    fn entry<'a>(gsi: &tables::GsiDef, item: Option<&'a Item>) -> Option<(IndexKey, &'a Item)> {
        let item = item?;
        let pk = item.get(gsi.partition_key)?;
        let sk = match gsi.sort_key {
            Some(name) => Some(item.get(name)?),
            None => None,
        };
        Some(((pk.clone(), sk.cloned()), item))
    }
    match (entry(gsi, old), entry(gsi, new)) {
        (None, None) => 0.0,
        (None, Some((_, item))) | (Some((_, item)), None) => write_units(item_size(item)),
        (Some((old_key, old)), Some((new_key, new))) if old_key != new_key => {
            write_units(item_size(old)) + write_units(item_size(new))
        }
        (Some((_, old)), Some((_, new))) if old == new => 0.0,
        (Some((_, old)), Some((_, new))) => write_units(item_size(old).max(item_size(new))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn item(value: Value) -> Item {
        value.as_object().cloned().expect("an object")
    }

    #[test]
    fn numbers_count_digit_pairs_plus_one() {
        for (text, size) in [
            ("0", 1),
            ("1", 2),
            ("12", 2),
            ("123", 3),
            ("-5", 3),
            ("1000", 2),
            ("0.5", 2),
            ("1.5", 3),
            ("12345678901234567890", 11),
        ] {
            assert_eq!(number_size(text), size, "{text}");
        }
    }

    #[test]
    fn an_item_is_its_names_and_values() {
        let meal = item(
            json!({"pk": "USER#1", "sk": "MEAL#a", "calories": "420", "version": 3,
            "tags": ["x", "yz"], "meta": {"ok": true}}),
        );
        // pk 2+6, sk 2+6, calories 8+3, version 7+2, tags 4+(3+1+1+1+2), meta 4+(3+1+2+1)
        assert_eq!(item_size(&meal), 8 + 8 + 11 + 9 + 12 + 11);
    }

    #[test]
    fn units_round_up_per_kilobyte_and_transactions_double() {
        let small = item(json!({"pk": "USER#1", "sk": "EVT#1", "body": "x".repeat(100)}));
        let big = item(json!({"pk": "USER#1", "sk": "EVT#1", "body": "x".repeat(1500)}));
        assert_eq!(
            write(Context::Sleep, None, Some(&small), false).write_units,
            1.0
        );
        assert_eq!(
            write(Context::Sleep, None, Some(&big), false).write_units,
            2.0
        );
        assert_eq!(
            write(Context::Sleep, None, Some(&small), true).write_units,
            2.0
        );
        // The larger of before and after.
        assert_eq!(
            write(Context::Sleep, Some(&big), Some(&small), false).write_units,
            2.0
        );
        assert_eq!(read([&big], true).read_units, 1.0);
        assert_eq!(read([&big], false).read_units, 0.5);
    }

    #[test]
    fn index_entries_cost_when_they_change() {
        // The goals table's index `by-status` keys on status_pk / status_sk.
        let goal = |status: &str, title: &str| {
            item(
                json!({"pk": "USER#1", "sk": "GOAL#1", "status_pk": format!("USER#1#{status}"),
                "status_sk": "GOAL#1", "title": title}),
            )
        };
        let active = goal("active", "Protein");
        let renamed = goal("active", "More protein");
        let paused = goal("paused", "Protein");
        let w = |old: Option<&Item>, new: Option<&Item>| {
            write(Context::Goals, old, new, false).write_units
        };
        assert_eq!(w(None, Some(&active)), 2.0, "table and a new entry");
        assert_eq!(
            w(Some(&active), Some(&active)),
            1.0,
            "an unchanged entry is free"
        );
        assert_eq!(w(Some(&active), Some(&renamed)), 2.0, "an entry rewritten");
        assert_eq!(
            w(Some(&active), Some(&paused)),
            3.0,
            "an entry moved: removed and added"
        );
        assert_eq!(w(Some(&active), None), 2.0, "a deletion removes the entry");
    }

    #[test]
    fn only_streaming_tables_pay_change_data_capture() {
        let row = item(json!({"pk": "USER#1", "sk": "X"}));
        let streams = |c: Context| write(c, None, Some(&row), false).cdc_units;
        assert_eq!(streams(Context::Nutrition), 1.0);
        assert_eq!(
            streams(Context::Environment),
            0.0,
            "environment streams nowhere"
        );
    }
}
