//! The published event contract is what the code generates, and changes only in ways
//! every stored event survives:
//! - `events-schema/schemas/` holds exactly the generated JSON Schema of every event
//!   version, and no generated schema stops accepting what its committed version
//!   accepted (a field removed, retyped or newly required needs a new version and an
//!   upcaster: `events_schema::schema_compat`);
//! - `docs/events.md` is exactly the generated events index.
//!
//! After changing an event, regenerate both with
//! `VITALS_WRITE_EVENT_DOCS=1 cargo test -p vitals --test event_contract`: it refuses to
//! overwrite a schema with an incompatible one.

use serde_json::Value;
use std::path::PathBuf;

const REGENERATE: &str = "VITALS_WRITE_EVENT_DOCS=1 cargo test -p vitals --test event_contract";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn schema_dir() -> PathBuf {
    root().join("events-schema/schemas")
}

fn writing() -> bool {
    std::env::var_os("VITALS_WRITE_EVENT_DOCS").is_some()
}

/// The committed schema files, by name.
fn committed_schemas() -> Vec<(String, String)> {
    let mut files: Vec<(String, String)> = std::fs::read_dir(schema_dir())
        .map(|dir| {
            dir.filter_map(Result::ok)
                .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
                .map(|e| {
                    let text = std::fs::read_to_string(e.path()).expect("readable schema");
                    (e.file_name().to_string_lossy().into_owned(), text)
                })
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

fn parsed(files: &[(String, String)]) -> Vec<(String, Value)> {
    files
        .iter()
        .map(|(name, text)| {
            let value = serde_json::from_str(text).unwrap_or_else(|e| panic!("{name}: {e}"));
            (name.clone(), value)
        })
        .collect()
}

#[test]
fn no_committed_event_version_loses_what_it_accepted() {
    let committed = parsed(&committed_schemas());
    let generated = parsed(&vitals::event_docs::schema_files());
    let breaking = events_schema::schema_compat::check(&committed, &generated);
    assert!(
        breaking.is_empty(),
        "changes that stored events would not survive (publish a new version with an \
         upcaster instead):\n{}",
        breaking.join("\n")
    );
}

#[test]
fn the_committed_event_schemas_are_the_generated_ones() {
    let mut generated = vitals::event_docs::schema_files();
    generated.sort();
    if writing() {
        let breaking =
            events_schema::schema_compat::check(&parsed(&committed_schemas()), &parsed(&generated));
        assert!(breaking.is_empty(), "not written: {}", breaking.join("\n"));
        vitals::event_docs::write_schemas(&schema_dir()).expect("schemas written");
        return;
    }
    let committed = committed_schemas();
    let names =
        |files: &[(String, String)]| files.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
    assert_eq!(
        names(&committed),
        names(&generated),
        "the schema files differ from the generated ones; regenerate with {REGENERATE}"
    );
    for ((name, committed), (_, generated)) in committed.iter().zip(&generated) {
        assert!(
            committed == generated,
            "{name} differs from the generated schema; regenerate with {REGENERATE}"
        );
    }
}

#[test]
fn the_committed_events_index_is_the_generated_one() {
    let path = root().join("docs/events.md");
    let generated = vitals::event_docs::index();
    if writing() {
        std::fs::write(&path, &generated).expect("index written");
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "docs/events.md differs from the generated index; regenerate with {REGENERATE}"
    );
}

#[test]
fn every_event_type_a_subscription_consumes_is_published_by_its_source() {
    let catalog = events_schema::catalog::all();
    for subscription in projectors::registry::described() {
        for event_type in subscription.consumes() {
            let spec = catalog
                .iter()
                .find(|e| e.event_type == *event_type)
                .unwrap_or_else(|| panic!("{}: unknown event {event_type}", subscription.name()));
            assert!(
                spec.context.is_none_or(|c| c == subscription.source()),
                "{} reads {} from {}, but {event_type} is published by {:?}",
                subscription.name(),
                event_type,
                subscription.source(),
                spec.context
            );
        }
    }
}
