//! The published JSON Schemas (draft 2020-12) of the events: one self-contained document
//! per event type and version, generated from the Rust types through utoipa (the same
//! derive the HTTP API's OpenAPI document uses), with the types it refers to under
//! `$defs`. Committed under `events-schema/schemas/`; `crate::schema_compat` checks
//! that a change keeps every stored version readable.

use crate::events::{activity, erasure, goals, identity, integrations, nutrition, sleep};
use serde_json::{Map, Value, json};

/// The schema of one version of one event type.
#[derive(Debug, Clone, PartialEq)]
pub struct VersionSchema {
    pub event_type: &'static str,
    pub version: u32,
    pub schema: Value,
}

impl VersionSchema {
    /// Its file under `events-schema/schemas/`: `MealLogged.v1.json`.
    pub fn file_name(&self) -> String {
        crate::catalog::schema_file(self.event_type, self.version)
    }
}

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
            crate::catalog::schema_file(event_type, version)
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

/// Every version of every event, by context then type, oldest version first.
pub fn all() -> Vec<VersionSchema> {
    [
        identity::schemas(),
        nutrition::schemas(),
        activity::schemas(),
        sleep::schemas(),
        goals::schemas(),
        integrations::schemas(),
        erasure::schemas(),
    ]
    .concat()
}

fn to_json<S: serde::Serialize>(schema: &S) -> Value {
    // A schema is plain data: serializing it cannot fail.
    serde_json::to_value(schema).unwrap_or(Value::Null)
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog;

    #[test]
    fn every_version_of_every_cataloged_event_has_one_schema() {
        let schemas = all();
        for spec in catalog::all() {
            for version in spec.versions() {
                let found = schemas
                    .iter()
                    .filter(|s| s.event_type == spec.event_type && s.version == version)
                    .count();
                assert_eq!(found, 1, "{} v{version}", spec.event_type);
            }
        }
        let versions: usize = catalog::all().iter().map(|s| s.version as usize).sum();
        assert_eq!(schemas.len(), versions, "no schema outside the catalog");
    }

    #[test]
    fn references_resolve_inside_the_document() {
        fn refs(value: &Value, into: &mut Vec<String>) {
            match value {
                Value::Object(map) => map.iter().for_each(|(k, v)| match (k.as_str(), v) {
                    ("$ref", Value::String(target)) => into.push(target.clone()),
                    _ => refs(v, into),
                }),
                Value::Array(items) => items.iter().for_each(|v| refs(v, into)),
                _ => {}
            }
        }
        for published in all() {
            let mut found = Vec::new();
            refs(&published.schema, &mut found);
            for target in found {
                let name = target.strip_prefix("#/$defs/").unwrap_or(&target);
                assert!(
                    published.schema["$defs"].get(name).is_some(),
                    "{}: dangling {target}",
                    published.file_name()
                );
            }
        }
    }
}
