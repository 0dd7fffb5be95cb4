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
use infra::Store;
use infra::dlq::TableDlq;
use infra::table::{ContextTable, Table};
use std::sync::Arc;

/// Every subscription a pipeline runs: the projections (guarded against erased users)
/// and the erasure subscriptions.
pub fn all(store: Arc<dyn Store>) -> Vec<Arc<dyn Projector>> {
    let projections = projections(store.clone());
    let mut subscriptions = projections.clone();
    subscriptions.extend(erasure(store, &projections));
    subscriptions
}

/// The read-model projections only (what `vitals replay` rebuilds), each guarded so an
/// erased user's events write nothing.
pub fn projections(store: Arc<dyn Store>) -> Vec<Arc<dyn Projector>> {
    unguarded(store.clone())
        .into_iter()
        .map(|p| Arc::new(Guarded::new(p, store.clone())) as Arc<dyn Projector>)
        .collect()
}

/// The erasers of every context but identity, and identity's completers.
fn erasure(store: Arc<dyn Store>, projections: &[Arc<dyn Projector>]) -> Vec<Arc<dyn Projector>> {
    use infra::table::contexts;
    // Letters of a user may wait in any dead-letter partition of the table.
    let letters = |context: Context| -> Vec<&'static str> {
        projections
            .iter()
            .filter(|p| p.target() == context)
            .map(|p| p.name())
            .chain([erasure::eraser_name(context)])
            .collect()
    };
    let mut subscriptions: Vec<Arc<dyn Projector>> = vec![
        eraser::<contexts::Nutrition>(&store, letters(Context::Nutrition)),
        eraser::<contexts::Activity>(&store, letters(Context::Activity)),
        eraser::<contexts::Sleep>(&store, letters(Context::Sleep)),
        eraser::<contexts::Goals>(&store, letters(Context::Goals)),
        eraser::<contexts::Integrations>(&store, letters(Context::Integrations)),
        eraser::<contexts::Insights>(&store, letters(Context::Insights)),
        eraser::<contexts::Dashboard>(&store, letters(Context::Dashboard)),
    ];
    subscriptions.extend(
        erasure::DRAINING
            .iter()
            .map(|c| Arc::new(Completer::new(Table::new(store.clone()), *c)) as Arc<dyn Projector>),
    );
    subscriptions
}

/// The eraser of context `C`, with its table's dead letters.
fn eraser<C: ContextTable + 'static>(
    store: &Arc<dyn Store>,
    subscriptions: Vec<&'static str>,
) -> Arc<dyn Projector> {
    Arc::new(Eraser::<C>::new(
        Table::new(store.clone()),
        TableDlq::new(store.clone(), C::CONTEXT),
        subscriptions,
    ))
}

fn unguarded(store: Arc<dyn Store>) -> Vec<Arc<dyn Projector>> {
    let dashboard = DashboardRows::new(Table::new(store.clone()));
    let goals = GoalRows::new(Table::new(store.clone()));
    vec![
        Arc::new(DashboardFromIdentity(dashboard.clone())),
        Arc::new(DashboardFromNutrition(dashboard.clone())),
        Arc::new(DashboardFromActivity(dashboard.clone())),
        Arc::new(DashboardFromSleep(dashboard.clone())),
        Arc::new(DashboardFromGoals(dashboard.clone())),
        Arc::new(DashboardFromIntegrations(dashboard)),
        Arc::new(GoalsFromActivity(goals.clone())),
        Arc::new(GoalsFromNutrition(goals.clone())),
        Arc::new(GoalsFromSleep(goals.clone())),
        Arc::new(GoalsFromGoals(goals)),
        Arc::new(ActivityFromNutrition(Table::new(store.clone()))),
        Arc::new(NutritionFromActivity(Table::new(store.clone()))),
        Arc::new(ActivityFromIntegrations(ActivityCommands::new(Table::new(
            store.clone(),
        )))),
        Arc::new(SleepFromIntegrations(SleepCommands::new(Table::new(
            store.clone(),
        )))),
        Arc::new(InsightsFromNutrition(Table::new(store.clone()))),
        Arc::new(InsightsFromActivity(Table::new(store.clone()))),
        Arc::new(InsightsFromSleep(Table::new(store))),
    ]
}

/// The subscription named `name`.
pub fn find(store: Arc<dyn Store>, name: &str) -> Option<Arc<dyn Projector>> {
    all(store).into_iter().find(|p| p.name() == name)
}
