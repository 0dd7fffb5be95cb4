//! Typed items: a domain struct plus its keys becomes an item, and back, through serde.

use crate::CommandError;
use infra::store::{Item, Key};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// `value`'s fields plus `pk` and `sk`.
pub fn to_item(key: &Key, value: &impl Serialize) -> Result<Item, CommandError> {
    let mut item = match serde_json::to_value(value) {
        Ok(Value::Object(map)) => map,
        Ok(_) => {
            return Err(CommandError::Internal(
                "item must serialize to an object".into(),
            ));
        }
        Err(e) => {
            return Err(CommandError::Internal(format!(
                "item does not serialize: {e}"
            )));
        }
    };
    item.insert("pk".into(), Value::String(key.pk.clone()));
    item.insert("sk".into(), Value::String(key.sk.clone()));
    Ok(item)
}

/// The domain struct stored in an item (extra attributes such as keys are ignored).
pub fn from_item<T: DeserializeOwned>(item: Item) -> Result<T, CommandError> {
    serde_json::from_value(Value::Object(item)).map_err(|e| {
        CommandError::Store(infra::StoreError::Backend(format!(
            "stored item does not decode: {e}"
        )))
    })
}
