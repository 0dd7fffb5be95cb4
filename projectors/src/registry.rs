//! Every subscription, wired to its own table. The one place that lists them.

use crate::cross::{ActivityFromNutrition, NutritionFromActivity};
use crate::dashboard::{
    DashboardFromActivity, DashboardFromGoals, DashboardFromIdentity, DashboardFromIntegrations,
    DashboardFromNutrition, DashboardFromSleep, DashboardRows,
};
use crate::erasure::{self, Completer, Eraser, Guarded};
use crate::goals::{
    GoalRows, GoalsFromActivity, GoalsFromGoals, GoalsFromNutrition, GoalsFromSleep,
};
use crate::insights::{InsightsFromActivity, InsightsFromNutrition, InsightsFromSleep};
use crate::projector::Projector;
use crate::wearables::{ActivityFromIntegrations, SleepFromIntegrations};
use commands::activity::ActivityCommands;
use commands::sleep::SleepCommands;
use events_schema::Context;
use events_schema::time::Clock;
use infra::dlq::DeadLetterStore;
use infra::store::{Condition, Found, SingleRead, SingleWrite, TransactAction, Written};
use infra::table::{ContextTable, Table};
use infra::{Store, StoreError};
use std::sync::Arc;

/// Every subscription of a pipeline that keeps dead letters in the subscribers' tables
/// (the embedded shape): see [`all_with`].
pub fn all(store: Arc<dyn Store>) -> Vec<Arc<dyn Projector>> {
    all_on(store, &Clock::System)
}

/// [`all`], its subscriptions telling time by `clock`: a wearable's record is checked
/// against it, and a marker changed for a day the nightly job may have finished is
/// told apart by it. A test or simulation on a manual clock projects in its own time.
pub fn all_on(store: Arc<dyn Store>, clock: &Clock) -> Vec<Arc<dyn Projector>> {
    let dead_letters = DeadLetterStore::Tables(store.clone());
    subscriptions(store, &dead_letters, clock)
}

/// Every subscription a pipeline runs: the projections (guarded against erased users)
/// and the erasure subscriptions, whose erasers clear the user's letters from
/// `dead_letters`, wherever the pipeline keeps them.
pub fn all_with(store: Arc<dyn Store>, dead_letters: &DeadLetterStore) -> Vec<Arc<dyn Projector>> {
    subscriptions(store, dead_letters, &Clock::System)
}

fn subscriptions(
    store: Arc<dyn Store>,
    dead_letters: &DeadLetterStore,
    clock: &Clock,
) -> Vec<Arc<dyn Projector>> {
    let projections = projections_on(store.clone(), clock);
    let mut subscriptions = projections.clone();
    subscriptions.extend(erasure(store, dead_letters, &projections, clock));
    subscriptions
}

/// Every subscription of `source`'s stream as a handler, dead letters in its
/// subscriber's table: what applies each record of that stream.
pub fn stream_handlers(store: Arc<dyn Store>, source: Context) -> Vec<crate::runtime::Handler> {
    handlers_where(store, |s| s.source() == source)
}

/// Every subscription writing `target`'s table as a handler, its dead letters in that
/// table: what the projector function writing it (and its redrive) applies a record
/// with, through the handlers whose source is the record's table.
pub fn projector_handlers(store: Arc<dyn Store>, target: Context) -> Vec<crate::runtime::Handler> {
    handlers_where(store, |s| s.target() == target)
}

/// The subscriptions `keep` keeps as handlers, each dead-lettering in its own table.
fn handlers_where(
    store: Arc<dyn Store>,
    keep: impl Fn(&dyn Projector) -> bool,
) -> Vec<crate::runtime::Handler> {
    let dead_letters = DeadLetterStore::Tables(store.clone());
    all_with(store, &dead_letters)
        .into_iter()
        .filter(|s| keep(&**s))
        .map(|s| {
            let dlq = dead_letters.queue_for(s.target());
            crate::runtime::Handler::new(s, dlq)
        })
        .collect()
}

/// The read-model projections only (what `vitals replay` rebuilds), each guarded so an
/// erased user's events write nothing.
pub fn projections(store: Arc<dyn Store>) -> Vec<Arc<dyn Projector>> {
    projections_on(store, &Clock::System)
}

/// [`projections`], telling time by `clock` (see [`all_on`]).
pub fn projections_on(store: Arc<dyn Store>, clock: &Clock) -> Vec<Arc<dyn Projector>> {
    unguarded(store.clone(), clock)
        .into_iter()
        .map(|p| Arc::new(Guarded::new(p, store.clone())) as Arc<dyn Projector>)
        .collect()
}

/// The erasers of every link of the erasure chain, and identity's completer.
fn erasure(
    store: Arc<dyn Store>,
    dead_letters: &DeadLetterStore,
    projections: &[Arc<dyn Projector>],
    clock: &Clock,
) -> Vec<Arc<dyn Projector>> {
    use infra::table::contexts;
    let erasers = [
        eraser::<contexts::Integrations>(&store, dead_letters, projections, clock),
        eraser::<contexts::Activity>(&store, dead_letters, projections, clock),
        eraser::<contexts::Nutrition>(&store, dead_letters, projections, clock),
        eraser::<contexts::Goals>(&store, dead_letters, projections, clock),
        eraser::<contexts::Sleep>(&store, dead_letters, projections, clock),
        eraser::<contexts::Insights>(&store, dead_letters, projections, clock),
        eraser::<contexts::Dashboard>(&store, dead_letters, projections, clock),
    ];
    let mut subscriptions: Vec<Arc<dyn Projector>> = erasers.into_iter().flatten().collect();
    subscriptions.push(Arc::new(Completer::new(Table::new(store))));
    subscriptions
}

/// The eraser of context `C` (`None` unless `C` is a link of the erasure chain), with
/// the dead letters of the subscriptions that write its table: letters of the user may
/// wait in any of them.
fn eraser<C: ContextTable + 'static>(
    store: &Arc<dyn Store>,
    dead_letters: &DeadLetterStore,
    projections: &[Arc<dyn Projector>],
    clock: &Clock,
) -> Option<Arc<dyn Projector>> {
    let subscriptions = projections
        .iter()
        .filter(|p| p.target() == C::CONTEXT)
        .map(|p| p.name())
        .chain([erasure::eraser_name(C::CONTEXT)])
        .collect();
    let eraser = Eraser::<C>::new(
        Table::new(store.clone()),
        dead_letters.queue_for(C::CONTEXT),
        subscriptions,
    )?;
    Some(Arc::new(eraser.with_clock(clock.clone())))
}

fn unguarded(store: Arc<dyn Store>, clock: &Clock) -> Vec<Arc<dyn Projector>> {
    let goals = GoalRows::new(Table::new(store.clone()), clock.clone());
    let mut all = foldable(store.clone(), clock);
    // In the registry's order (the documents listing subscriptions follow it): the
    // dashboard's, the goals', the cross-context ones, the wearables', the insights'.
    let insights = all.split_off(8);
    let cross = all.split_off(6);
    all.extend([
        Arc::new(GoalsFromActivity(goals.clone())) as Arc<dyn Projector>,
        Arc::new(GoalsFromNutrition(goals.clone())),
        Arc::new(GoalsFromSleep(goals.clone())),
        Arc::new(GoalsFromGoals(goals)),
    ]);
    all.extend(cross);
    all.extend([
        Arc::new(ActivityFromIntegrations(
            ActivityCommands::new(Table::new(store.clone())).with_clock(clock.clone()),
        )) as Arc<dyn Projector>,
        Arc::new(SleepFromIntegrations(
            SleepCommands::new(Table::new(store)).with_clock(clock.clone()),
        )),
    ]);
    all.extend(insights);
    all
}

/// The projections a stream consumer may fold ([`crate::fold`]): those that write
/// their table with single conditional writes only. The others write in transactions
/// (a goal's revision with its outbox event, a synced workout with its own), which a
/// fold's row-by-row flush would not keep whole. Unguarded: the fold looks for the
/// user's tombstone itself, once per batch.
pub fn foldable(store: Arc<dyn Store>, clock: &Clock) -> Vec<Arc<dyn Projector>> {
    let dashboard = DashboardRows::new(Table::new(store.clone()));
    vec![
        Arc::new(DashboardFromIdentity(dashboard.clone())),
        Arc::new(DashboardFromNutrition(dashboard.clone())),
        Arc::new(DashboardFromActivity(dashboard.clone())),
        Arc::new(DashboardFromSleep(dashboard.clone())),
        Arc::new(DashboardFromGoals(dashboard.clone())),
        Arc::new(DashboardFromIntegrations(dashboard)),
        Arc::new(ActivityFromNutrition(Table::new(store.clone()))),
        Arc::new(NutritionFromActivity(Table::new(store.clone()))),
        Arc::new(InsightsFromNutrition(
            Table::new(store.clone()),
            clock.clone(),
        )),
        Arc::new(InsightsFromActivity(
            Table::new(store.clone()),
            clock.clone(),
        )),
        Arc::new(InsightsFromSleep(Table::new(store), clock.clone())),
    ]
}

/// The subscription named `name`, its erasers clearing letters from `dead_letters`.
pub fn find_with(
    store: Arc<dyn Store>,
    dead_letters: &DeadLetterStore,
    name: &str,
) -> Option<Arc<dyn Projector>> {
    all_with(store, dead_letters)
        .into_iter()
        .find(|p| p.name() == name)
}

/// The subscription named `name`, dead letters kept in its table.
pub fn find(store: Arc<dyn Store>, name: &str) -> Option<Arc<dyn Projector>> {
    let dead_letters = DeadLetterStore::Tables(store.clone());
    find_with(store, &dead_letters, name)
}

/// Every subscription, built only to be described (names, sources, targets, the event
/// types each consumes): their store refuses every request.
pub fn described() -> Vec<Arc<dyn Projector>> {
    all(Arc::new(Detached))
}

/// The subscriptions [`foldable`] folds, built only to be described.
pub fn described_foldable() -> Vec<Arc<dyn Projector>> {
    foldable(Arc::new(Detached), &Clock::System)
}

/// A store for subscriptions that are described, never run.
struct Detached;

impl Detached {
    fn refuse<T>() -> Result<T, StoreError> {
        Err(StoreError::Backend(
            "a described subscription has no store".into(),
        ))
    }
}

#[async_trait::async_trait]
impl Store for Detached {
    fn backend(&self) -> &'static str {
        "detached"
    }
    async fn health(&self) -> Result<(), StoreError> {
        Self::refuse()
    }
    async fn read(&self, _: Context, _: SingleRead<'_>) -> Result<Found, StoreError> {
        Self::refuse()
    }
    async fn write(
        &self,
        _: Context,
        _: SingleWrite,
        _: Option<Condition>,
    ) -> Result<Written, StoreError> {
        Self::refuse()
    }
    async fn transact(&self, _: Vec<TransactAction>) -> Result<(), StoreError> {
        Self::refuse()
    }
    async fn drain_partition_page(
        &self,
        _: Context,
        _: &str,
        _: usize,
    ) -> Result<usize, StoreError> {
        Self::refuse()
    }
}
