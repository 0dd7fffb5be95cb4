//! Every subscription, wired to its own table. The one place that lists them.

use crate::dashboard::{
    DashboardFromActivity, DashboardFromGoals, DashboardFromIdentity, DashboardFromIntegrations,
    DashboardFromNutrition, DashboardFromSleep, DashboardRows,
};
use crate::goals::{GoalRows, GoalsFromActivity, GoalsFromNutrition, GoalsFromSleep};
use crate::projector::Projector;
use infra::Store;
use infra::table::Table;
use std::sync::Arc;

pub fn all(store: Arc<dyn Store>) -> Vec<Arc<dyn Projector>> {
    let dashboard = DashboardRows::new(Table::new(store.clone()));
    let goals = GoalRows::new(Table::new(store));
    vec![
        Arc::new(DashboardFromIdentity(dashboard.clone())),
        Arc::new(DashboardFromNutrition(dashboard.clone())),
        Arc::new(DashboardFromActivity(dashboard.clone())),
        Arc::new(DashboardFromSleep(dashboard.clone())),
        Arc::new(DashboardFromGoals(dashboard.clone())),
        Arc::new(DashboardFromIntegrations(dashboard)),
        Arc::new(GoalsFromActivity(goals.clone())),
        Arc::new(GoalsFromNutrition(goals.clone())),
        Arc::new(GoalsFromSleep(goals)),
    ]
}

/// The subscription named `name`.
pub fn find(store: Arc<dyn Store>, name: &str) -> Option<Arc<dyn Projector>> {
    all(store).into_iter().find(|p| p.name() == name)
}
