//! Query handlers for the mobile app: one module per read model, each holding only the
//! handle of the table it reads, each answering with exactly one GetItem or one Query on
//! projection or summary rows (never by reading entity rows to aggregate them), and each
//! returning views: the shapes the app shows, without storage keys, index attributes,
//! tombstones or internal versions.
//!
//! Layout:
//! - [`views`]: the views, and how a stored quantity becomes a JSON number.
//! - [`dashboard`]: the home screen and the profile (dashboard table).
//! - [`history`]: a day's meals, and workouts and sleep over a range, cursor-paginated
//!   (the dashboard table's history rows).
//! - [`nutrition`]: daily summaries (nutrition table).
//! - [`activity`]: the latest workout and the current training block (activity table).
//! - [`goals`]: goals by status and a goal's progress (goals table).
//! - [`planning`]: scheduled meals (nutrition table) and training blocks (activity table).
//! - [`catalog`]: curated recipes and meal plans (the nutrition table's `catalog` index).
//! - [`insights`]: the nightly readiness score (insights table).

pub mod activity;
pub mod catalog;
pub mod dashboard;
pub mod goals;
pub mod history;
pub mod insights;
pub mod nutrition;
pub mod planning;
pub mod views;

use infra::StoreError;

/// Why a query was not answered.
#[derive(Debug, thiserror::Error)]
pub enum QueryError {
    /// A parameter is invalid: the field and the rule.
    #[error("{field}: {reason}")]
    Invalid { field: &'static str, reason: String },
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl QueryError {
    pub fn invalid(field: &'static str, reason: impl Into<String>) -> Self {
        QueryError::Invalid {
            field,
            reason: reason.into(),
        }
    }
}

/// A stored row that does not decode is the store's fault, never the caller's.
pub(crate) fn decode<T: serde::de::DeserializeOwned>(
    row: infra::store::Item,
) -> Result<T, QueryError> {
    serde_json::from_value(serde_json::Value::Object(row))
        .map_err(|e| QueryError::Store(StoreError::Backend(format!("a row does not decode: {e}"))))
}

/// The live rows of a page (tombstones left out).
pub(crate) fn live(rows: Vec<infra::store::Item>) -> impl Iterator<Item = infra::store::Item> {
    rows.into_iter()
        .filter(|row| !events_schema::rows::is_tombstone(row))
}

/// The access patterns this crate's code issues, declared beside the calls (see
/// `infra::access`).
pub fn access_patterns() -> Vec<&'static infra::access::AccessPattern> {
    let modules: &[&'static [infra::access::AccessPattern]] = &[
        dashboard::access::ACCESS,
        goals::access::ACCESS,
        history::access::ACCESS,
        nutrition::access::ACCESS,
        insights::access::ACCESS,
        activity::access::ACCESS,
        planning::access::ACCESS,
        catalog::access::ACCESS,
    ];
    modules.iter().flat_map(|m| m.iter()).collect()
}
