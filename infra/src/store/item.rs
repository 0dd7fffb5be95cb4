//! Items and keys. An item is a JSON object of attributes; `pk` and `sk` are strings.
//! Both backends map it losslessly (the DynamoDB one through `serde_dynamo`).

use super::StoreError;
use events_schema::tables::{PK, SK, TTL};
use serde_json::Value;

/// An item: attribute name -> value.
pub type Item = serde_json::Map<String, Value>;

/// The primary key of an item.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Key {
    pub pk: String,
    pub sk: String,
}

/// DynamoDB's limits on key attribute sizes, in UTF-8 bytes.
const MAX_PK_BYTES: usize = 2048;
const MAX_SK_BYTES: usize = 1024;

impl Key {
    pub fn new(pk: impl Into<String>, sk: impl Into<String>) -> Self {
        Self {
            pk: pk.into(),
            sk: sk.into(),
        }
    }

    /// The key of an item, checked as DynamoDB checks it.
    pub fn of(item: &Item) -> Result<Self, StoreError> {
        let attr = |name: &str| match item.get(name) {
            Some(Value::String(s)) => Ok(s.clone()),
            Some(_) => Err(StoreError::Validation(format!(
                "key attribute {name} must be a string"
            ))),
            None => Err(StoreError::Validation(format!(
                "item has no key attribute {name}"
            ))),
        };
        let key = Self {
            pk: attr(PK)?,
            sk: attr(SK)?,
        };
        key.validate()?;
        Ok(key)
    }

    pub fn validate(&self) -> Result<(), StoreError> {
        for (name, value, max) in [(PK, &self.pk, MAX_PK_BYTES), (SK, &self.sk, MAX_SK_BYTES)] {
            if value.is_empty() {
                return Err(StoreError::Validation(format!(
                    "key attribute {name} is empty"
                )));
            }
            if value.len() > max {
                return Err(StoreError::Validation(format!(
                    "key attribute {name} is longer than {max} bytes"
                )));
            }
        }
        Ok(())
    }

    /// The key as an item holding only `pk` and `sk`.
    /// The key of `user`'s erasure tombstone, as the key map names it
    /// (`events_schema::keys::erased`): every context's table holds it once the user's
    /// erasure has begun there.
    pub fn tombstone(user: &events_schema::ids::UserId) -> Self {
        let (pk, sk) = events_schema::keys::erased(user);
        Self::new(pk.to_string(), sk.to_string())
    }

    pub fn to_item(&self) -> Item {
        let mut item = Item::new();
        item.insert(PK.to_owned(), Value::String(self.pk.clone()));
        item.insert(SK.to_owned(), Value::String(self.sk.clone()));
        item
    }
}

/// Checks that every index key attribute among `attrs` is a non-empty string, as
/// DynamoDB requires. Both backends call it before writing, so they fail alike.
pub fn validate_index_attributes(
    table: events_schema::Context,
    attrs: &Item,
) -> Result<(), StoreError> {
    for gsi in events_schema::tables::table(table).gsis {
        for name in std::iter::once(gsi.partition_key).chain(gsi.sort_key) {
            match attrs.get(name) {
                None => {}
                Some(Value::String(s)) if !s.is_empty() => {}
                Some(_) => {
                    return Err(StoreError::Validation(format!(
                        "index key attribute {name} of {} must be a non-empty string",
                        gsi.name
                    )));
                }
            }
        }
    }
    Ok(())
}

/// Seconds since the Unix epoch, the unit of the TTL attribute.
pub fn now_epoch_seconds() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// Whether the item's TTL attribute is a number of epoch seconds at or before `now`.
/// Items without it, or with a non-numeric one, never expire (as in DynamoDB).
pub fn is_expired(item: &Item, now: i64) -> bool {
    item.get(TTL)
        .and_then(Value::as_f64)
        .is_some_and(|at| at <= now as f64)
}

/// The size of an item as DynamoDB counts it, closely enough to enforce the limit the
/// same way on every backend: attribute names plus the JSON text of their values.
pub(crate) fn item_size(item: &Item) -> usize {
    item.iter()
        .map(|(name, value)| name.len() + json_len(value))
        .sum()
}

/// The length of a value's JSON text, without building the text.
fn json_len(value: &Value) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // Writing a `Value` to an in-memory counter cannot fail.
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_items_size_counts_its_values_json_text() {
        let value = json!({"pk": "USER#1", "sk": "DAILY#2026-01-01", "n": 12.5, "s": "caf\u{e9} \"q\"\n",
                           "l": [1, null, true, {"a": []}], "m": {"k": "v"}});
        let Value::Object(item) = value else {
            unreachable!()
        };
        let expected: usize = item
            .iter()
            .map(|(k, v)| k.len() + v.to_string().len())
            .sum();
        assert_eq!(item_size(&item), expected);
    }

    #[test]
    fn key_of_requires_string_keys() {
        let ok = json!({"pk": "USER#1", "sk": "PROFILE", "n": 1});
        let Value::Object(ok) = ok else {
            unreachable!()
        };
        assert_eq!(Key::of(&ok).expect("valid"), Key::new("USER#1", "PROFILE"));
        for bad in [
            json!({"pk": "USER#1"}),
            json!({"pk": 1, "sk": "x"}),
            json!({"pk": "", "sk": "x"}),
        ] {
            let Value::Object(bad) = bad else {
                unreachable!()
            };
            assert!(matches!(Key::of(&bad), Err(StoreError::Validation(_))));
        }
    }

    #[test]
    fn expiry_is_by_epoch_seconds() {
        let Value::Object(item) = json!({"expires_at": 100}) else {
            unreachable!()
        };
        assert!(is_expired(&item, 100));
        assert!(!is_expired(&item, 99));
        let Value::Object(text) = json!({"expires_at": "100"}) else {
            unreachable!()
        };
        assert!(!is_expired(&text, 1000));
    }
}
