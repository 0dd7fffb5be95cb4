//! What the event declarations (`events!`) describe themselves with: an event type's
//! catalog entry and the JSON Schema of one of its versions. A leaf module, so the
//! declarations and the modules that gather them (`catalog`, `schemas`) do not import
//! each other.

use crate::Context;
#[cfg(feature = "openapi")]
use serde_json::{Map, Value, json};

/// One event type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventSpec {
    pub event_type: &'static str,
    /// The context that publishes it; `None` for an event every context publishes.
    pub context: Option<Context>,
    /// The version this release writes; every version from 1 up to it is read.
    pub version: u32,
}

impl EventSpec {
    /// Every version a stored event of this type may hold, oldest first.
    pub fn versions(&self) -> std::ops::RangeInclusive<u32> {
        1..=self.version
    }
}

/// The file of `event_type`'s schema at `version`, under `events-schema/schemas/`.
pub fn schema_file(event_type: &str, version: u32) -> String {
    format!("{event_type}.v{version}.json")
}

#[cfg(feature = "openapi")]
/// The schema of one version of one event type.
#[derive(Debug, Clone, PartialEq)]
pub struct VersionSchema {
    pub event_type: &'static str,
    pub version: u32,
    pub schema: Value,
}

#[cfg(feature = "openapi")]
impl VersionSchema {
    /// Its file under `events-schema/schemas/`: `MealLogged.v1.json`.
    pub fn file_name(&self) -> String {
        schema_file(self.event_type, self.version)
    }
}

#[cfg(feature = "openapi")]
/// The schema of payload type `T`, published as `event_type` version `version`.
pub fn of<T: utoipa::ToSchema>(event_type: &'static str, version: u32) -> VersionSchema {
    let mut used = Vec::new();
    T::schemas(&mut used);
    let defs: Map<String, Value> = used
        .into_iter()
        .map(|(name, schema)| (name, to_json(&schema)))
        .collect();
    let mut document = Map::new();
    document.insert(
        "$schema".into(),
        json!("https://json-schema.org/draft/2020-12/schema"),
    );
    document.insert(
        "$id".into(),
        json!(format!(
            "vitals:events/{}",
            schema_file(event_type, version)
        )),
    );
    document.insert("title".into(), json!(format!("{event_type} v{version}")));
    if let Value::Object(root) = to_json(&T::schema()) {
        document.extend(root);
    }
    if !defs.is_empty() {
        document.insert("$defs".into(), Value::Object(defs));
    }
    let mut schema = Value::Object(document);
    point_refs_at_defs(&mut schema);
    VersionSchema {
        event_type,
        version,
        schema,
    }
}

#[cfg(feature = "openapi")]
fn to_json<S: serde::Serialize>(schema: &S) -> Value {
    // A schema is plain data: serializing it cannot fail.
    serde_json::to_value(schema).unwrap_or(Value::Null)
}

#[cfg(feature = "openapi")]
/// utoipa refers to `#/components/schemas/X` (an OpenAPI document's place for them);
/// a standalone JSON Schema keeps them under `#/$defs/X`.
fn point_refs_at_defs(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (key, child) in map.iter_mut() {
                if key == "$ref"
                    && let Value::String(target) = child
                    && let Some(name) = target.strip_prefix("#/components/schemas/")
                {
                    *target = format!("#/$defs/{name}");
                } else {
                    point_refs_at_defs(child);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(point_refs_at_defs),
        _ => {}
    }
}
