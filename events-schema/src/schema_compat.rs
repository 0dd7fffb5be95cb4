//! Whether a newly generated event schema still reads what a stored version holds. The
//! outbox keeps events forever (replay reads them, redrive applies them), so the schema
//! of a published version may only change in ways every stored payload still satisfies:
//! new optional fields, wider types, more enum values. Removing or retyping a field, or
//! requiring one that old payloads lack, needs a new version with an upcaster instead.

use serde_json::{Map, Value};

/// Keywords that document a schema without constraining what it accepts.
const ANNOTATIONS: [&str; 6] = [
    "description",
    "title",
    "example",
    "examples",
    "default",
    "$comment",
];

/// Types are not recursive; a deeper walk means a cycle of references.
const MAX_DEPTH: usize = 64;

/// What `candidate` (the schema this build generates for a published version) no longer
/// accepts of `stored` (the schema committed when that version was published), one line
/// per breaking change; empty when every stored payload still reads.
pub fn breaking_changes(stored: &Value, candidate: &Value) -> Vec<String> {
    let mut found = Vec::new();
    let walk = Walk {
        old_root: stored,
        new_root: candidate,
    };
    walk.compare(stored, candidate, "$", 0, &mut found);
    found
}

/// The committed schemas (file name, document) against the generated ones: every
/// committed version must still be generated and accept what it accepted.
pub fn check(committed: &[(String, Value)], generated: &[(String, Value)]) -> Vec<String> {
    let mut found = Vec::new();
    for (file, stored) in committed {
        match generated.iter().find(|(name, _)| name == file) {
            None => found.push(format!(
                "{file}: no longer generated, but stored events hold this version \
                 (keep its type and an upcaster)"
            )),
            Some((_, candidate)) => found.extend(
                breaking_changes(stored, candidate)
                    .into_iter()
                    .map(|change| format!("{file}: {change}")),
            ),
        }
    }
    found
}

struct Walk<'a> {
    old_root: &'a Value,
    new_root: &'a Value,
}

impl Walk<'_> {
    fn compare(&self, old: &Value, new: &Value, path: &str, depth: usize, found: &mut Vec<String>) {
        if depth > MAX_DEPTH {
            found.push(format!("{path}: references nest too deep to compare"));
            return;
        }
        let old = resolve(self.old_root, old);
        let new = resolve(self.new_root, new);
        if old == new {
            return;
        }
        let (Some(old_map), Some(new_map)) = (old.as_object(), new.as_object()) else {
            found.push(format!("{path}: schema changed from {old} to {new}"));
            return;
        };
        if let Some(alternatives) = alternatives(old_map) {
            for (i, alternative) in alternatives.iter().enumerate() {
                if !self.accepts(alternative, new, depth) {
                    found.push(format!(
                        "{path}: alternative {i} ({}) is no longer accepted",
                        summary(resolve(self.old_root, alternative))
                    ));
                }
            }
            return;
        }
        if let Some(new_alternatives) = alternatives(new_map) {
            if !new_alternatives
                .iter()
                .any(|alternative| self.accepts(old, alternative, depth))
            {
                found.push(format!("{path}: {} is no longer accepted", summary(old)));
            }
            return;
        }
        self.compare_types(old_map, new_map, path, found);
        self.compare_enums(old_map, new_map, path, found);
        self.compare_objects(old_map, new_map, path, depth, found);
        if let (Some(old_items), Some(new_items)) = (old_map.get("items"), new_map.get("items")) {
            self.compare(old_items, new_items, &format!("{path}[]"), depth + 1, found);
        }
    }

    /// Whether `new` accepts everything `old` does.
    fn accepts(&self, old: &Value, new: &Value, depth: usize) -> bool {
        let mut found = Vec::new();
        self.compare(old, new, "", depth + 1, &mut found);
        found.is_empty()
    }

    fn compare_types(
        &self,
        old: &Map<String, Value>,
        new: &Map<String, Value>,
        path: &str,
        found: &mut Vec<String>,
    ) {
        let (old_types, new_types) = (types(old), types(new));
        if !new_types.is_empty() && old_types.iter().any(|t| !new_types.contains(t)) {
            found.push(format!(
                "{path}: retyped from {} to {}",
                old_types.join("|"),
                new_types.join("|")
            ));
        }
        let format = |m: &Map<String, Value>| m.get("format").cloned();
        if format(old).is_some() && format(new).is_some() && format(old) != format(new) {
            found.push(format!(
                "{path}: format changed from {} to {}",
                format(old).unwrap_or_default(),
                format(new).unwrap_or_default()
            ));
        }
    }

    fn compare_enums(
        &self,
        old: &Map<String, Value>,
        new: &Map<String, Value>,
        path: &str,
        found: &mut Vec<String>,
    ) {
        let (Some(Value::Array(old_values)), Some(Value::Array(new_values))) =
            (old.get("enum"), new.get("enum"))
        else {
            return;
        };
        for value in old_values.iter().filter(|v| !new_values.contains(v)) {
            found.push(format!("{path}: value {value} removed"));
        }
    }

    fn compare_objects(
        &self,
        old: &Map<String, Value>,
        new: &Map<String, Value>,
        path: &str,
        depth: usize,
        found: &mut Vec<String>,
    ) {
        let empty = Map::new();
        let properties = |m: &'_ Map<String, Value>| -> Map<String, Value> {
            m.get("properties")
                .and_then(Value::as_object)
                .unwrap_or(&empty)
                .clone()
        };
        let (old_properties, new_properties) = (properties(old), properties(new));
        for (name, old_property) in &old_properties {
            match new_properties.get(name) {
                None => found.push(format!("{path}.{name}: removed")),
                Some(new_property) => self.compare(
                    old_property,
                    new_property,
                    &format!("{path}.{name}"),
                    depth + 1,
                    found,
                ),
            }
        }
        let (old_required, new_required) = (required(old), required(new));
        for name in new_required.iter().filter(|n| !old_required.contains(n)) {
            found.push(format!(
                "{path}.{name}: now required, but stored payloads may lack it"
            ));
        }
    }
}

/// `value` itself, or the definition its `$ref` names inside `root`.
fn resolve<'a>(root: &'a Value, value: &'a Value) -> &'a Value {
    value
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|target| target.strip_prefix("#/$defs/"))
        .and_then(|name| root.get("$defs").and_then(|defs| defs.get(name)))
        .map_or(value, |found| resolve(root, found))
}

/// The alternatives of a `oneOf` or `anyOf` schema, annotations aside.
fn alternatives(map: &Map<String, Value>) -> Option<&Vec<Value>> {
    map.get("oneOf")
        .or_else(|| map.get("anyOf"))
        .and_then(Value::as_array)
}

fn types(map: &Map<String, Value>) -> Vec<String> {
    match map.get("type") {
        Some(Value::String(t)) => vec![t.clone()],
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        _ => Vec::new(),
    }
}

fn required(map: &Map<String, Value>) -> Vec<String> {
    map.get("required")
        .and_then(Value::as_array)
        .map(|names| {
            names
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// A short description of a schema for messages: its type, or its keys.
fn summary(value: &Value) -> String {
    let Some(map) = value.as_object() else {
        return value.to_string();
    };
    let types = types(map);
    if !types.is_empty() {
        return types.join("|");
    }
    let keys: Vec<&str> = map
        .keys()
        .map(String::as_str)
        .filter(|k| !ANNOTATIONS.contains(k))
        .collect();
    format!("{{{}}}", keys.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn workout() -> Value {
        json!({
            "type": "object",
            "required": ["workout_id", "duration_s", "source"],
            "properties": {
                "workout_id": {"$ref": "#/$defs/WorkoutId"},
                "duration_s": {"type": "integer", "format": "int32", "minimum": 0},
                "distance_m": {"type": ["integer", "null"], "format": "int32"},
                "sport": {"type": "string", "enum": ["run", "ride"]},
                "source": {"oneOf": [
                    {"type": "object", "required": ["kind"], "properties": {"kind": {"type": "string", "enum": ["manual"]}}},
                    {"type": "object", "required": ["kind", "provider"], "properties": {
                        "kind": {"type": "string", "enum": ["provider"]},
                        "provider": {"type": "string"}}}
                ]}
            },
            "$defs": {"WorkoutId": {"type": "string", "pattern": "^[0-9A-Z]+$"}}
        })
    }

    fn changed(edit: impl FnOnce(&mut Value)) -> Vec<String> {
        let mut candidate = workout();
        edit(&mut candidate);
        breaking_changes(&workout(), &candidate)
    }

    #[test]
    fn the_same_schema_is_compatible() {
        assert_eq!(
            breaking_changes(&workout(), &workout()),
            Vec::<String>::new()
        );
    }

    #[test]
    fn an_optional_field_more_or_a_new_description_is_compatible() {
        let found = changed(|s| {
            s["properties"]["perceived_effort"] = json!({"type": ["integer", "null"]});
            s["properties"]["duration_s"]["description"] = json!("seconds");
            s["properties"]["sport"]["enum"] = json!(["run", "ride", "swim"]);
        });
        assert_eq!(found, Vec::<String>::new());
    }

    #[test]
    fn a_removed_field_breaks_the_stored_version() {
        let found = changed(|s| {
            s["properties"]
                .as_object_mut()
                .map(|p| p.remove("distance_m"));
        });
        assert_eq!(found, vec!["$.distance_m: removed".to_owned()]);
    }

    #[test]
    fn a_retyped_field_or_a_narrower_one_breaks_it() {
        let retyped = changed(|s| s["properties"]["duration_s"] = json!({"type": "string"}));
        assert_eq!(
            retyped,
            vec!["$.duration_s: retyped from integer to string".to_owned()]
        );
        let not_null = changed(|s| s["properties"]["distance_m"]["type"] = json!("integer"));
        assert_eq!(
            not_null,
            vec!["$.distance_m: retyped from integer|null to integer".to_owned()]
        );
        let fewer = changed(|s| s["properties"]["sport"]["enum"] = json!(["run"]));
        assert_eq!(fewer, vec!["$.sport: value \"ride\" removed".to_owned()]);
        let referenced = changed(|s| s["$defs"]["WorkoutId"] = json!({"type": "integer"}));
        assert_eq!(
            referenced,
            vec!["$.workout_id: retyped from string to integer".to_owned()]
        );
    }

    #[test]
    fn a_field_newly_required_breaks_it() {
        let found = changed(|s| {
            s["properties"]["perceived_effort"] = json!({"type": "integer"});
            s["required"] = json!(["workout_id", "duration_s", "source", "perceived_effort"]);
        });
        assert_eq!(
            found,
            vec!["$.perceived_effort: now required, but stored payloads may lack it".to_owned()]
        );
    }

    #[test]
    fn a_variant_dropped_from_a_tagged_union_breaks_it() {
        let found = changed(|s| {
            s["properties"]["source"]["oneOf"]
                .as_array_mut()
                .map(|alternatives| alternatives.remove(1));
        });
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].starts_with("$.source: alternative 1"), "{found:?}");
    }

    #[test]
    fn a_committed_version_that_is_no_longer_generated_breaks() {
        let committed = vec![
            ("WorkoutRecorded.v1.json".to_owned(), workout()),
            ("WorkoutRecorded.v2.json".to_owned(), workout()),
        ];
        let generated = vec![("WorkoutRecorded.v2.json".to_owned(), workout())];
        let found = check(&committed, &generated);
        assert_eq!(found.len(), 1);
        assert!(found[0].starts_with("WorkoutRecorded.v1.json: no longer generated"));
    }
}
