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

use crate::convert::{item_of, row_of};
use crate::projector::{ProjectionError, Projector};
use crate::runtime::RetryPolicy;
use events_schema::Context;
use events_schema::envelope::{EventEnvelope, is_outbox_item, outbox_event};
use events_schema::ids::UserId;
use events_schema::keys::{PartitionKey, prefix};
use events_schema::time::Clock;
use infra::buffered::Buffered;
use infra::store::{Cursor, Item, Key, Page, Query, Scan, SortKeyCondition};
use infra::{Store, StoreError};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Arc;
use tokio::task::JoinSet;

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

/// Items read per page.
const PAGE: usize = 1000;
/// Tasks a rebuild applies a batch's events on (see `Run::apply_events`).
const REBUILD_LANES: usize = 4;

/// Events applied between checkpoints (more when a page ends past it).
pub const BATCH_EVENTS: usize = 16_384;

/// How a replay writes its rows (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Through the store, event by event: safe next to running workers.
    Incremental,
    /// Folded in memory per batch, the final rows written in batches: workers stopped.
    Rebuild,
}

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
    // Per source, the subscriptions that publish into the source's own table
    // (goals-from-goals) run first, in a pass of their own, so the events they publish
    // are there when the others read the table.
    let runs: Vec<Run> = SOURCE_ORDER
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
        .collect();
    let mut total = 0;
    for run in &runs {
        // A source read by two passes is read twice.
        total += count_events(&*store, run.source, user).await?;
    }
    progress.total(total);

    let mut replayed = Replayed::default();
    for run in &runs {
        let checkpoint = run.checkpoint().await?;
        if checkpoint.as_ref().is_some_and(|c| c.done) {
            continue;
        }
        let mut cursor = checkpoint.and_then(|c| c.cursor);
        loop {
            // Read pages until a batch is large enough to keep many users' events in
            // flight at once (concurrent writes share durable commits), then apply it
            // and checkpoint after it.
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
                break;
            }
        }
    }
    // Finished: the next replay starts from the beginning.
    for run in &runs {
        run.clear_checkpoint().await?;
    }
    Ok(replayed)
}

/// How many outbox events a replay of `source` reads.
async fn count_events(
    store: &dyn Store,
    source: Context,
    user: Option<&UserId>,
) -> Result<u64, StoreError> {
    let mut count = 0;
    let mut cursor = None;
    loop {
        let page = read_page(store, source, user, cursor, PAGE).await?;
        count += page.items.iter().filter(|i| is_outbox_item(i)).count() as u64;
        match page.cursor {
            Some(next) => cursor = Some(next),
            None => return Ok(count),
        }
    }
}

async fn read_page(
    store: &dyn Store,
    source: Context,
    user: Option<&UserId>,
    cursor: Option<Cursor>,
    page: usize,
) -> Result<Page, StoreError> {
    match user {
        Some(user) => {
            let query = Query::partition(PartitionKey::User(user.clone()).to_string())
                .sort_key(SortKeyCondition::BeginsWith(prefix::EVENT.to_owned()))
                .limit(page)
                .consistent()
                .after(cursor);
            store.query(source, &query).await
        }
        None => {
            let scan = Scan {
                index: None,
                limit: Some(page),
                cursor,
            };
            store.scan(source, &scan).await
        }
    }
}

/// The events of a page's outbox items, grouped by partition (user), in key order.
fn outbox_events(items: &[Item]) -> Vec<(String, EventEnvelope)> {
    items
        .iter()
        .filter_map(|item| {
            let event = outbox_event(item)?.ok()?;
            Some((Key::of(item).ok()?.pk, event))
        })
        .collect()
}

/// A replay checkpoint as stored, one per subscription of the group (`REPLAY#<name>`):
/// the cursor is `null` rather than absent before the first page.
#[derive(Debug, Default, Serialize, Deserialize)]
struct StoredCheckpoint {
    #[serde(default)]
    cursor: Option<String>,
    #[serde(default)]
    done: bool,
}

struct Checkpoint {
    cursor: Option<Cursor>,
    done: bool,
}

#[derive(Default)]
struct Applied {
    applications: u64,
    rejected: u64,
}

/// The replay of one source for its subscriptions.
struct Run {
    store: Arc<dyn Store>,
    source: Context,
    group: Vec<Arc<dyn Projector>>,
    user: Option<UserId>,
    page_size: usize,
    mode: Mode,
    clock: Clock,
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
    async fn page(&self, cursor: Option<Cursor>) -> Result<Page, StoreError> {
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
    async fn apply(&self, events: &[(String, EventEnvelope)]) -> Result<Applied, StoreError> {
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

    fn checkpoint_key(subscription: &dyn Projector, user: Option<&UserId>) -> Key {
        // A user's replay is named by the digest of their id, so a checkpoint left by an
        // interrupted replay holds no user id.
        let scope = user.map_or_else(
            || "all".to_owned(),
            |u| format!("user-{}", events_schema::keys::Digest::erasure(u)),
        );
        Key::new(format!("REPLAY#{}", subscription.name()), scope)
    }

    /// Where the group stopped, if every subscription of it stopped at the same place:
    /// a checkpoint that only some hold (left by a replay of one subscription, or an
    /// interrupted save) is no group's, and the group starts from the beginning (its
    /// projections take events again without harm).
    async fn checkpoint(&self) -> Result<Option<Checkpoint>, StoreError> {
        let mut agreed: Option<(Option<String>, bool)> = None;
        for subscription in &self.group {
            let key = Self::checkpoint_key(&**subscription, self.user.as_ref());
            let Some(item) = self.store.get(subscription.target(), &key, true).await? else {
                return Ok(None);
            };
            let StoredCheckpoint { cursor, done } = row_of(&item).unwrap_or_default();
            match &agreed {
                Some(first) if *first != (cursor.clone(), done) => return Ok(None),
                _ => agreed = Some((cursor, done)),
            }
        }
        Ok(agreed.map(|(cursor, done)| Checkpoint {
            cursor: cursor.as_deref().map(Cursor::from_text),
            done,
        }))
    }

    async fn save_checkpoint(&self, cursor: Option<&Cursor>, done: bool) -> Result<(), StoreError> {
        for subscription in &self.group {
            let mut item = Self::checkpoint_key(&**subscription, self.user.as_ref()).to_item();
            item.extend(item_of(&StoredCheckpoint {
                cursor: cursor.map(|c| c.as_str().to_owned()),
                done,
            }));
            self.store.put(subscription.target(), item, None).await?;
        }
        Ok(())
    }

    async fn clear_checkpoint(&self) -> Result<(), StoreError> {
        for subscription in &self.group {
            let key = Self::checkpoint_key(&**subscription, self.user.as_ref());
            self.store.delete(subscription.target(), &key, None).await?;
        }
        Ok(())
    }
}

/// The calls this module makes, as declared access patterns (see `infra::access`).
pub(crate) mod access {
    use events_schema::Context;
    use infra::access::{AccessPattern as P, Op, Order::Forward, Sk};

    /// The replay tool's reads of a source table's outbox.
    macro_rules! source {
        ($table:ident) => {
            [
                P::new(
                    "every event of a table",
                    Context::$table,
                    Op::Scan,
                    "*",
                    Sk::Whole,
                    "vitals replay (all users), vitals migrate, the residue check of an erasure; a page at a time; operators only",
                )
                .volume(0.0)
                .size(1000, 800),
                P::new(
                    "a user's events",
                    Context::$table,
                    Op::query(Forward, true, true),
                    "USER#",
                    Sk::prefix("EVT#"),
                    "vitals replay --user, a page at a time; operators only",
                )
                .volume(0.0)
                .size(100, 800),
            ]
        };
    }

    /// The replay tool's checkpoints in a target table: `REPLAY#<subscription>`, scoped
    /// `all` or `user-<digest>`.
    macro_rules! checkpoints {
        ($table:ident) => {
            [
                checkpoint!(
                    $table,
                    Op::get(true),
                    "all",
                    "where a replay of every user stopped"
                ),
                checkpoint!($table, Op::Put, "all", "save a replay's place"),
                checkpoint!($table, Op::Delete, "all", "a replay done"),
                checkpoint!(
                    $table,
                    Op::get(true),
                    "user-",
                    "where a user's replay stopped"
                ),
                checkpoint!($table, Op::Put, "user-", "save a user's replay's place"),
                checkpoint!($table, Op::Delete, "user-", "a user's replay done"),
            ]
        };
    }

    macro_rules! checkpoint {
        ($table:ident, $op:expr, $scope:literal, $name:literal) => {
            P::new(
                $name,
                Context::$table,
                $op,
                "REPLAY#",
                Sk::exact($scope),
                "vitals replay (a page at a time); operators only",
            )
            .volume(0.0)
            .size(1, 200)
        };
    }

    /// The replay tool's reads, per source table.
    pub static SOURCES: &[[P; 2]] = &[
        source!(Identity),
        source!(Nutrition),
        source!(Activity),
        source!(Sleep),
        source!(Goals),
        source!(Integrations),
        source!(Insights),
        source!(Dashboard),
    ];

    /// The replay tool's checkpoints, per target table.
    pub static CHECKPOINTS: &[[P; 6]] = &[
        checkpoints!(Identity),
        checkpoints!(Nutrition),
        checkpoints!(Activity),
        checkpoints!(Sleep),
        checkpoints!(Goals),
        checkpoints!(Integrations),
        checkpoints!(Insights),
        checkpoints!(Dashboard),
    ];
}

/// A rebuild's own calls (`Mode::Rebuild`, through `infra::buffered`), generated from
/// the subscriptions' declared writes: each target table's partitions loaded a page at
/// a time, and its final rows written in batches: the kinds its subscriptions declare
/// (put or deleted), an erased user's partition drained, tombstones.
pub fn rebuild_access() -> Vec<&'static infra::access::AccessPattern> {
    use crate::Subscription;
    use infra::access::{AccessPattern as P, Action::*, Op, Order::Forward, Sk, Written as W};
    static PATTERNS: std::sync::OnceLock<Vec<P>> = std::sync::OnceLock::new();
    let patterns = PATTERNS.get_or_init(|| {
        let subscriptions: Vec<Subscription> = crate::registry::described()
            .iter()
            .map(|p| p.subscription())
            .collect();
        let mut patterns = Vec::new();
        for table in Context::ALL {
            let writers: Vec<&Subscription> =
                subscriptions.iter().filter(|s| s.target == table).collect();
            if writers.is_empty() {
                continue;
            }
            for pk in ["USER#", "ERASED#", "JOB#"] {
                patterns.push(
                    P::new(
                        "load a partition for a rebuild",
                        table,
                        Op::query(Forward, true, true),
                        pk,
                        Sk::Whole,
                        "vitals replay --rebuild (each partition read once, 100 rows a page)",
                    )
                    .volume(0.0)
                    .size(100, 400),
                );
            }
            let mut items = vec![
                W::new(Delete, table, "USER#", W::ANY).optional(),
                W::new(Put, table, "ERASED#", "TOMBSTONE").optional(),
            ];
            for kind in writers.iter().flat_map(|s| s.writes.iter()) {
                let kind = infra::access::intern(kind);
                for pk in events_schema::item_kinds::partitions_of(table, kind) {
                    // Several subscriptions write some kinds (`DAILY#`, `GOAL#`): once each.
                    for action in [Put, Delete] {
                        let item = W::new(action, table, pk, kind).optional();
                        if !items.contains(&item) {
                            items.push(item);
                        }
                    }
                }
            }
            let items: &'static [W] = Box::leak(items.into_boxed_slice());
            patterns.push(
                P::batch(
                    "write a rebuild's final rows",
                    items,
                    "vitals replay --rebuild (rows in key order, unconditional)",
                )
                .volume(0.0)
                .size(25, 400),
            );
        }
        patterns
    });
    patterns.iter().collect()
}
