//! Nutrition: meals and the daily summaries that always equal the sum of their day's
//! meals, scheduled meals, and the curated catalog.
//!
//! Items: `MEAL#<date>#<id>`, `MEAL_REF#<id>` (the meal's current date, so a meal is
//! found by id alone), `DAILY_SUMMARY#<date>` (version-guarded), `SCHEDULED_MEAL#<date>#<id>`,
//! and catalog items `RECIPE#<id>` / `MEAL_PLAN#<id>` with the sparse `catalog` index keys.

pub(crate) mod catalog;
pub(crate) mod meals;
pub(crate) mod scheduled;

pub use catalog::{CatalogKind, CurateMealPlan, CurateRecipe};
pub use meals::{EditMeal, LogMeal, MealInput, MealRecord, SummaryRecord};
pub use scheduled::{EatScheduledMeal, ScheduleMeal};

use infra::table::contexts::Nutrition;

/// The nutrition context's commands: meals, scheduled meals, the catalog.
pub type NutritionCommands = crate::handlers::Handlers<Nutrition>;
