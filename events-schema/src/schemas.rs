//! The published JSON Schemas (draft 2020-12) of the events: one self-contained document
//! per event type and version, generated from the Rust types through utoipa (the same
//! derive the HTTP API's OpenAPI document uses), with the types it refers to under
//! `$defs`. Committed under `events-schema/schemas/`; `crate::schema_compat` checks
//! that a change keeps every stored version readable.

use crate::events::{activity, erasure, goals, identity, integrations, nutrition, sleep};
pub use crate::spec::{VersionSchema, of};

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog;
    use serde_json::Value;

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
