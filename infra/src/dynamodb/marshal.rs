//! Marshalling between the port's JSON items and DynamoDB attribute values, through
//! `serde_dynamo` (strings -> S, numbers -> N, booleans -> BOOL, null -> NULL,
//! arrays -> L, objects -> M).

use crate::store::{Item, StoreError};
use aws_sdk_dynamodb::types::AttributeValue;
use std::collections::HashMap;

pub(super) type Attributes = HashMap<String, AttributeValue>;

fn invalid(e: serde_dynamo::Error) -> StoreError {
    StoreError::Validation(format!("value cannot be stored: {e}"))
}

pub(super) fn to_attributes(item: &Item) -> Result<Attributes, StoreError> {
    serde_dynamo::aws_sdk_dynamodb_1::to_item(item).map_err(invalid)
}

pub(super) fn from_attributes(attributes: Attributes) -> Result<Item, StoreError> {
    serde_dynamo::aws_sdk_dynamodb_1::from_item(attributes)
        .map_err(|e| StoreError::Backend(format!("item from DynamoDB does not decode: {e}")))
}

pub(super) fn attribute(value: &serde_json::Value) -> Result<AttributeValue, StoreError> {
    serde_dynamo::aws_sdk_dynamodb_1::to_attribute_value(value).map_err(invalid)
}

/// A last evaluated key (all string attributes) as plain strings, for a cursor.
pub(super) fn string_key(attributes: &Attributes) -> std::collections::BTreeMap<String, String> {
    attributes
        .iter()
        .filter_map(|(name, value)| value.as_s().ok().map(|s| (name.clone(), s.clone())))
        .collect()
}

pub(super) fn from_string_key(key: std::collections::BTreeMap<String, String>) -> Attributes {
    key.into_iter()
        .map(|(name, value)| (name, AttributeValue::S(value)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_items_round_trip() {
        let serde_json::Value::Object(item) = json!({
            "pk": "USER#1", "sk": "MEAL#2026-01-01#A", "kcal": 512, "ratio": 0.25,
            "neg": -3, "ok": true, "none": null, "tags": ["a", 1], "m": {"x": {"y": "z"}}
        }) else {
            unreachable!()
        };
        let attributes = to_attributes(&item).expect("marshals");
        assert_eq!(attributes["kcal"], AttributeValue::N("512".into()));
        assert_eq!(attributes["pk"], AttributeValue::S("USER#1".into()));
        assert_eq!(from_attributes(attributes).expect("unmarshals"), item);
    }
}
