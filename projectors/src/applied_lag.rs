//! How long after its recording each subscription applied an event: the projection
//! lag as users feel it, observed by every handler of the process (one at a time or
//! folded) and exposed by `/metrics` as a histogram, so dashboards show its p99.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use std::sync::LazyLock;

/// The label of the subscription families.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct BySubscription {
    pub subscription: &'static str,
}

/// How long after an event was recorded each subscription applied it, in seconds: the
/// projection lag as users feel it (a histogram, so dashboards show its p99). Observed
/// by every handler of the process.
pub static APPLIED_LAG: LazyLock<Family<BySubscription, Histogram>> = LazyLock::new(|| {
    Family::new_with_constructor(|| Histogram::new(exponential_buckets(0.005, 2.0, 16)))
});

/// The name of the applied-lag histogram family.
pub const APPLIED_LAG_NAME: &str = "vitals_projector_applied_lag_seconds";
