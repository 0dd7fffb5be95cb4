//! Every subscription, wired to its own table. The one place that lists them.

use crate::cross::{ActivityFromNutrition, NutritionFromActivity};
use crate::dashboard::{
    DashboardFromActivity, DashboardFromGoals, DashboardFromIdentity, DashboardFromIntegrations,
    DashboardFromNutrition, DashboardFromSleep, DashboardRows,
};
use crate::goals::{GoalRows, GoalsFromActivity, GoalsFromNutrition, GoalsFromSleep};
use crate::insights::{InsightsFromActivity, InsightsFromNutrition, InsightsFromSleep};
use crate::projector::Projector;
use crate::wearables::{ActivityFromIntegrations, SleepFromIntegrations};
use commands::activity::ActivityCommands;
use commands::sleep::SleepCommands;
use infra::Store;
use infra::table::Table;
use std::sync::Arc;

pub fn all(store: Arc<dyn Store>) -> Vec<Arc<dyn Projector>> {
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
        Arc::new(GoalsFromSleep(goals)),
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
