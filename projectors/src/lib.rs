//! Projector workers: each subscription (subscriber context, source topic) turns the
//! events of its source into rows of its own table. Delivery is at least once and in any
//! order, so every write converges: rows are guarded by the version the event carries
//! ("only if newer"), deletions leave versioned tombstones, aggregates are recomputed
//! from rows the subscriber owns.
//!
//! Layout:
//! - [`projector`]: the `Projector` trait and its error.
//! - [`facts`]: what source events carry, decoded once for every subscription.
//! - [`convert`]: the one conversion between typed rows and entries and stored items.
//! - [`rows`]: convergent row writes (newer-guarded upserts, tombstones, merged groups).
//! - [`daily`]: the typed groups of the dashboard's `DAILY#` row and what they derive.
//! - [`runtime`]: the worker loop: poll, decode, apply with retries, dead-letter,
//!   checkpoint; metrics; redrive.
//! - [`dashboard`], [`goals`], [`cross`], [`wearables`], [`insights`]: the projections.
//! - [`nightly`]: the nightly readiness job, resumable from a checkpoint per day.
//! - [`erasure`]: account erasure (a chain of erasers, one context after another, then
//!   identity's completer) and the guard that keeps an erased user's events from
//!   writing anything.
//! - [`registry`]: every subscription, wired to its table.
//! - [`event_index`]: the events index: each event's versions and subscriptions.
//! - [`replay`]: rebuilds read models from the outbox events of the source tables.
//! - [`pipeline`]: every subscription's worker on one feed, in-process, with metrics.
//! - [`lambda`]: a subscription as a Lambda function on Kinesis events.
//! - [`fold`]: a user's records of a Lambda batch applied in memory, each row written once.
//! - [`applied_lag`]: the histogram of how long after its recording an event was applied.
//! - [`emf`]: a consumer's per-batch figures in CloudWatch Embedded Metric Format.

pub mod applied_lag;
pub mod convert;
pub mod cross;
pub mod daily;
pub mod dashboard;
pub mod emf;
pub mod erasure;
pub mod event_index;
pub mod facts;
pub mod fold;
pub mod goals;
pub mod insights;
pub mod lambda;
pub mod nightly;
pub mod pipeline;
pub mod projector;
pub mod registry;
pub mod replay;
pub mod rows;
pub mod runtime;
pub mod wearables;

pub use projector::{ProjectionError, Projector, Subscription};

/// The access patterns this crate's code issues, declared beside the calls (see
/// `infra::access`).
pub fn access_patterns() -> Vec<&'static infra::access::AccessPattern> {
    let modules: &[&'static [infra::access::AccessPattern]] = &[
        dashboard::access::ACCESS,
        dashboard::access::TRIMMING.as_flattened(),
        goals::access::ACCESS,
        goals::access::FACTS.as_flattened(),
        insights::access::ACCESS,
        cross::access::ACCESS,
        nightly::access::ACCESS,
        erasure::access::GUARDS,
        erasure::access::ANNOUNCEMENTS.as_flattened(),
        replay::access::SOURCES.as_flattened(),
        replay::access::CHECKPOINTS.as_flattened(),
    ];
    let mut all: Vec<_> = modules.iter().flat_map(|m| m.iter()).collect();
    // The generated ones (a rebuild's, a fold's) where no declaration above has the
    // same shape: one physical access, one pattern, whoever issues it.
    for generated in replay::rebuild_access()
        .into_iter()
        .chain(fold::fold_access())
    {
        if !all.iter().any(|p| p.shape == generated.shape) {
            all.push(generated);
        }
    }
    all
}
