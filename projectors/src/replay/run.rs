//! The replay of one source for its subscriptions ([`Run`]): a batch of events applied
//! through the store or folded on a buffered view ([`Mode`]), users concurrently, each
//! user's events in order.

use super::source::read_page;
use crate::projector::{ProjectionError, Projector};
use crate::runtime::RetryPolicy;
use events_schema::Context;
use events_schema::envelope::EventEnvelope;
use events_schema::ids::UserId;
use events_schema::time::Clock;
use infra::buffered::Buffered;
use infra::store::{Cursor, Page};
use infra::{Store, StoreError};
use std::collections::BTreeMap;
use std::sync::Arc;
use tokio::task::JoinSet;

/// Tasks a rebuild applies a batch's events on (see `Run::apply_events`).
const REBUILD_LANES: usize = 4;

/// How a replay writes its rows (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Through the store, event by event: safe next to running workers.
    Incremental,
    /// Folded in memory per batch, the final rows written in batches: workers stopped.
    Rebuild,
}

#[derive(Default)]
pub(super) struct Applied {
    pub(super) applications: u64,
    pub(super) rejected: u64,
}

/// The replay of one source for its subscriptions.
pub(super) struct Run {
    pub(super) store: Arc<dyn Store>,
    pub(super) source: Context,
    pub(super) group: Vec<Arc<dyn Projector>>,
    pub(super) user: Option<UserId>,
    pub(super) page_size: usize,
    pub(super) mode: Mode,
    pub(super) clock: Clock,
}

/// A user's events of a batch, for one subscription.
type Unit = (Arc<dyn Projector>, Arc<Vec<EventEnvelope>>);

/// Applies `events` in order through `subscription`, counting into `applied`. Retried
/// as live retries; what live would dead-letter is counted and reported instead.
async fn apply_unit(
    subscription: &dyn Projector,
    events: &[EventEnvelope],
    applied: &mut Applied,
) -> Result<(), StoreError> {
    for event in events {
        match RetryPolicy::default()
            .apply(subscription, event, |_, _| {})
            .await
        {
            Ok(()) => applied.applications += 1,
            Err((ProjectionError::Store(e), _)) => return Err(e),
            Err((error, _)) => {
                tracing::warn!(subscription = subscription.name(), event = %event.event_id, %error, "replay: event refused");
                applied.rejected += 1;
            }
        }
    }
    Ok(())
}

impl Run {
    pub(super) async fn page(&self, cursor: Option<Cursor>) -> Result<Page, StoreError> {
        read_page(
            &*self.store,
            self.source,
            self.user.as_ref(),
            cursor,
            self.page_size,
        )
        .await
    }

    /// Applies a batch's events: through the store, or folded on a buffered view of the
    /// target tables whose changed rows are then written in batches.
    pub(super) async fn apply(
        &self,
        events: &[(String, EventEnvelope)],
    ) -> Result<Applied, StoreError> {
        match self.mode {
            Mode::Incremental => Self::apply_events(&self.group, events, None).await,
            Mode::Rebuild => {
                let buffered = Arc::new(Buffered::new(
                    self.store.clone(),
                    self.group.iter().map(|s| s.target()),
                ));
                // The same subscriptions, bound to the buffered view.
                let names: Vec<&str> = self.group.iter().map(|s| s.name()).collect();
                let bound: Vec<Arc<dyn Projector>> =
                    crate::registry::projections_on(buffered.clone(), &self.clock)
                        .into_iter()
                        .filter(|s| names.contains(&s.name()))
                        .collect();
                if bound.len() != self.group.len() {
                    return Err(StoreError::Validation(format!(
                        "a rebuild runs the registry's projections only, not {names:?}"
                    )));
                }
                let applied = Self::apply_events(&bound, events, Some(REBUILD_LANES)).await?;
                buffered.flush().await?;
                Ok(applied)
            }
        }
    }

    /// Applies a batch's events: partitions (users) concurrently, each user's events in
    /// order, every subscription of the source in turn, on `lanes` tasks (`None`: one
    /// task per user and subscription).
    async fn apply_events(
        group: &[Arc<dyn Projector>],
        events: &[(String, EventEnvelope)],
        lanes: Option<usize>,
    ) -> Result<Applied, StoreError> {
        let mut by_partition: BTreeMap<&str, Vec<EventEnvelope>> = BTreeMap::new();
        for (pk, event) in events {
            by_partition.entry(pk).or_default().push(event.clone());
        }
        // A unit of work is a user's events for one subscription, applied in order.
        // Subscriptions of one source write rows of their own, so units need not wait
        // for each other: through the store, one task per unit puts more writers in
        // flight to share commits; on a buffered view, where writes are in memory, a
        // few lanes working through many units each spare the scheduler (task switches
        // and futex calls were about 6% of a rebuild's profile; the gain measured was
        // within the machine's noise: docs/embedded-engine.md).
        let mut units = Vec::new();
        for (_, events) in by_partition {
            let events = Arc::new(events);
            units.extend(group.iter().map(|s| (s.clone(), events.clone())));
        }
        let lanes = lanes.unwrap_or(units.len()).clamp(1, units.len().max(1));
        let mut per_lane: Vec<Vec<Unit>> = (0..lanes).map(|_| Vec::new()).collect();
        for (n, unit) in units.into_iter().enumerate() {
            per_lane[n % lanes].push(unit);
        }
        let mut tasks = JoinSet::new();
        for lane in per_lane {
            tasks.spawn(async move {
                let mut applied = Applied::default();
                for (subscription, events) in lane {
                    apply_unit(&*subscription, &events, &mut applied).await?;
                }
                Ok::<Applied, StoreError>(applied)
            });
        }
        let mut total = Applied::default();
        while let Some(done) = tasks.join_next().await {
            let applied =
                done.map_err(|e| StoreError::Backend(format!("replay task failed: {e}")))??;
            total.applications += applied.applications;
            total.rejected += applied.rejected;
        }
        Ok(total)
    }
}
