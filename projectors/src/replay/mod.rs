//! Rebuilding read models from the outbox: every `EVT#` item of a subscription's
//! source table, in key order (per user: event-id order, which is time order), applied
//! through the same projector code as live. Projections are version-guarded, so a
//! replay running next to the live workers converges with them, and applying an event
//! twice changes no read row (a goal's `progress_rev` counts recomputes, so it moves).
//!
//! Sources are replayed in dependency order (integrations first: the wearable
//! projections publish activity and sleep events; goals last: its projections publish
//! `GoalProgressed`), so events produced while replaying are replayed too. The event
//! count shown up front is of the events there before the replay. The scan
//! position of each source is checkpointed after every page (`REPLAY#<subscription>` in
//! each target table), so an interrupted replay resumes where it stopped; a finished
//! one removes its checkpoints.
//!
//! Two ways to write ([`Mode`]): incremental (every event applied through the store,
//! version-guarded, safe next to running workers: `vitals replay --user` repairs one
//! user live) and rebuild (each batch folded in memory through the same projector code
//! on an [`infra::buffered::Buffered`] view of the target tables, then only the final
//! rows written, in large unconditional batches; the workers must be stopped). Both
//! produce the rows the live pipeline produces (`tests/tests/replay_rebuild.rs`, the
//! model-based test).

//!
//! Layout: [`source`] (reading a source's outbox), [`run`] (one source's replay and its
//! [`Mode`]), [`checkpoint`] (where each stopped), [`access`].

pub(crate) mod access;
mod checkpoint;
mod run;
mod source;

pub use access::rebuild_access;
pub use run::Mode;

use crate::projector::Projector;
use events_schema::Context;
use events_schema::ids::UserId;
use events_schema::time::Clock;
use infra::{Store, StoreError};
use run::Run;
use source::{PAGE, count_events, outbox_events};
use std::sync::Arc;

/// The order sources are replayed in (see the module docs).
const SOURCE_ORDER: [Context; 9] = [
    Context::Integrations,
    Context::Identity,
    Context::Nutrition,
    Context::Activity,
    Context::Sleep,
    Context::Environment,
    Context::Insights,
    Context::Goals,
    Context::Dashboard,
];

/// Events applied between checkpoints (more when a page ends past it).
pub const BATCH_EVENTS: usize = 16_384;

/// What a replay reports as it goes.
pub trait Progress: Send + Sync {
    /// The number of events it is about to replay (counted first).
    fn total(&self, events: u64);
    /// `events` more were applied.
    fn advance(&self, events: u64);
}

/// No reporting.
pub struct Quiet;

impl Progress for Quiet {
    fn total(&self, _: u64) {}
    fn advance(&self, _: u64) {}
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Replayed {
    /// Events read from the sources.
    pub events: u64,
    /// Event applications (an event with n subscriptions counts n times).
    pub applications: u64,
    /// Events a projector refused (decode or validation); live would dead-letter them.
    pub rejected: u64,
}

/// Replays `subscriptions` (from `registry::projections`), for one user or everyone.
pub async fn replay(
    store: Arc<dyn Store>,
    subscriptions: &[Arc<dyn Projector>],
    user: Option<&UserId>,
    progress: &dyn Progress,
) -> Result<Replayed, StoreError> {
    replay_with(
        store,
        subscriptions,
        user,
        progress,
        BATCH_EVENTS,
        Mode::Incremental,
    )
    .await
}

/// A replay in either [`Mode`], checkpointing after every `batch_events` events.
pub async fn replay_with(
    store: Arc<dyn Store>,
    subscriptions: &[Arc<dyn Projector>],
    user: Option<&UserId>,
    progress: &dyn Progress,
    batch_events: usize,
    mode: Mode,
) -> Result<Replayed, StoreError> {
    let clock = Clock::System;
    replay_on(
        store,
        subscriptions,
        user,
        progress,
        batch_events,
        mode,
        &clock,
    )
    .await
}

/// [`replay_with`], a rebuild's projections telling time by `clock` (the one
/// `subscriptions` were made with: see `registry::projections_on`).
pub async fn replay_on(
    store: Arc<dyn Store>,
    subscriptions: &[Arc<dyn Projector>],
    user: Option<&UserId>,
    progress: &dyn Progress,
    batch_events: usize,
    mode: Mode,
    clock: &Clock,
) -> Result<Replayed, StoreError> {
    let batch_events = batch_events.max(1);
    let runs = runs_of(
        store.clone(),
        subscriptions,
        user,
        mode,
        clock,
        batch_events,
    );
    let mut total = 0;
    for run in &runs {
        // A source read by two passes is read twice.
        total += count_events(&*store, run.source, user).await?;
    }
    progress.total(total);
    let mut replayed = Replayed::default();
    for run in &runs {
        replay_run(run, batch_events, progress, &mut replayed).await?;
    }
    // Finished: the next replay starts from the beginning.
    for run in &runs {
        run.clear_checkpoint().await?;
    }
    Ok(replayed)
}

/// The runs of a replay, in [`SOURCE_ORDER`]. Per source, the subscriptions that
/// publish into the source's own table (goals-from-goals) run first, in a pass of their
/// own, so the events they publish are there when the others read the table.
fn runs_of(
    store: Arc<dyn Store>,
    subscriptions: &[Arc<dyn Projector>],
    user: Option<&UserId>,
    mode: Mode,
    clock: &Clock,
    batch_events: usize,
) -> Vec<Run> {
    SOURCE_ORDER
        .iter()
        .flat_map(|source| {
            let (producers, consumers): (Vec<_>, Vec<_>) = subscriptions
                .iter()
                .filter(|s| s.source() == *source)
                .cloned()
                .partition(|s| s.target() == *source);
            [(*source, producers), (*source, consumers)]
        })
        .filter(|(_, group)| !group.is_empty())
        .map(|(source, group)| Run {
            store: store.clone(),
            source,
            group,
            user: user.cloned(),
            page_size: PAGE.min(batch_events),
            mode,
            clock: clock.clone(),
        })
        .collect()
}

/// Replays one run from its checkpoint (nothing if it finished), checkpointing after
/// every batch; adds what it did to `replayed`.
async fn replay_run(
    run: &Run,
    batch_events: usize,
    progress: &dyn Progress,
    replayed: &mut Replayed,
) -> Result<(), StoreError> {
    let checkpoint = run.checkpoint().await?;
    if checkpoint.as_ref().is_some_and(|c| c.done) {
        return Ok(());
    }
    let mut cursor = checkpoint.and_then(|c| c.cursor);
    loop {
        // Read pages until a batch is large enough to keep many users' events in
        // flight at once (concurrent writes share durable commits), then apply it and
        // checkpoint after it.
        let mut events = Vec::new();
        loop {
            let page = run.page(cursor.clone()).await?;
            events.extend(outbox_events(&page.items));
            cursor = page.cursor;
            if cursor.is_none() || events.len() >= batch_events {
                break;
            }
        }
        let applied = run.apply(&events).await?;
        replayed.events += events.len() as u64;
        replayed.applications += applied.applications;
        replayed.rejected += applied.rejected;
        progress.advance(events.len() as u64);
        run.save_checkpoint(cursor.as_ref(), cursor.is_none())
            .await?;
        if cursor.is_none() {
            return Ok(());
        }
    }
}
