//! Where a delivery stands in its record's order: the stored pointer (the delivery
//! applied last) and what a new delivery carries (its revision and the fingerprint of
//! its content), each ordered the same way (see the parent module's docs).

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The stored pointer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Pointer {
    pub entity_id: String,
    pub target_sk: String,
    pub fingerprint: String,
    pub version: u64,
    /// The provider's revision (milliseconds of its `updated_at`) of the delivery
    /// applied; absent when that delivery had none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<i64>,
}

impl Pointer {
    /// Where the applied delivery stands in the record's order (see the parent module's docs).
    pub(super) fn order(&self) -> (i64, &str) {
        (self.revision.unwrap_or(i64::MIN), &self.fingerprint)
    }
}

/// What a delivery of an external record carries for ordering it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Delivery {
    /// The provider's `updated_at`, if it sent one.
    pub(super) revision: Option<events_schema::time::Timestamp>,
    /// A fingerprint of the content (see [`fingerprint`]), without the revision.
    pub(super) fingerprint: String,
}

impl Delivery {
    /// The provider's revision in milliseconds, as the pointer records it.
    pub(super) fn revision_millis(&self) -> Option<i64> {
        self.revision.map(events_schema::time::Timestamp::millis)
    }

    /// Where this delivery stands in the record's order (see the parent module's docs).
    pub(super) fn order(&self) -> (i64, &str) {
        (
            self.revision_millis().unwrap_or(i64::MIN),
            &self.fingerprint,
        )
    }
}

/// A fingerprint of the provider's fields, to tell a retry from a change.
pub(super) fn fingerprint(fields: &impl Serialize) -> String {
    hex::encode(Sha256::digest(
        serde_json::to_vec(fields).unwrap_or_default(),
    ))
}
