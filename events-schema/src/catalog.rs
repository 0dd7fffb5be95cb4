//! The event catalog: every event type this release reads, the context that publishes
//! it and the version it writes. Each context's `events!` declaration is the source
//! (older versions and their upcasters are listed there); this module gathers them.

use crate::events::{activity, erasure, goals, identity, integrations, nutrition, sleep};
pub use crate::spec::{EventSpec, schema_file};

/// Every event type, grouped by publishing context.
pub fn all() -> Vec<EventSpec> {
    [
        identity::CATALOG,
        nutrition::CATALOG,
        activity::CATALOG,
        sleep::CATALOG,
        goals::CATALOG,
        integrations::CATALOG,
        erasure::CATALOG,
    ]
    .concat()
}

/// `envelope` with its payload upcast to the current version of its type (decoded and
/// encoded again: what this release would have written); `None` for an unknown type.
pub fn upcast(
    envelope: &crate::EventEnvelope,
) -> Option<Result<crate::EventEnvelope, crate::envelope::EnvelopeError>> {
    identity::upcast(envelope)
        .or_else(|| nutrition::upcast(envelope))
        .or_else(|| activity::upcast(envelope))
        .or_else(|| sleep::upcast(envelope))
        .or_else(|| goals::upcast(envelope))
        .or_else(|| integrations::upcast(envelope))
        .or_else(|| erasure::upcast(envelope))
}

/// The catalog entry of `event_type`.
pub fn find(event_type: &str) -> Option<EventSpec> {
    all().into_iter().find(|e| e.event_type == event_type)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Context;

    #[test]
    fn every_event_type_is_listed_once() {
        let all = all();
        let mut names: Vec<_> = all.iter().map(|e| e.event_type).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), all.len());
        assert!(find("MealLogged").is_some_and(|e| e.context == Some(Context::Nutrition)));
        assert!(find("PartitionDrained").is_some_and(|e| e.context.is_none()));
        assert_eq!(find("NoSuchEvent"), None);
    }
}
