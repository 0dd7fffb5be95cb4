//! The views of what a user plans and the catalog offers: training blocks, scheduled
//! meals, curated recipes and meal plans.

use super::quantity::NutrientsView;
use events_schema::ids::{MealPlanId, RecipeId, ScheduledMealId, TrainingBlockId};
use events_schema::time::Day;
use serde::Serialize;

#[cfg(feature = "openapi")]
use utoipa::ToSchema;

/// A training block.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct TrainingBlockView {
    pub training_block_id: TrainingBlockId,
    pub start_day: Day,
    /// The last day of the block.
    pub end_day: Day,
    pub weeks: u8,
    pub focus: String,
}

/// A training block in the list: `ended_early` when it was ended before its planned
/// last day (then `end_day` is the day it ended).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct TrainingBlockListed {
    #[serde(flatten)]
    pub block: TrainingBlockView,
    pub ended_early: bool,
}

/// A meal planned for a day, not eaten yet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct ScheduledMealView {
    pub scheduled_meal_id: ScheduledMealId,
    pub day: Day,
    pub name: String,
    /// The catalog recipe it follows, if any.
    pub recipe_id: Option<RecipeId>,
}

/// A curated recipe.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct RecipeView {
    pub recipe_id: RecipeId,
    pub name: String,
    /// A lowercase slug, such as `breakfast`.
    pub category: String,
    pub nutrients: NutrientsView,
}

/// A curated meal plan: recipes in order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct MealPlanView {
    pub meal_plan_id: MealPlanId,
    pub name: String,
    pub category: String,
    pub recipes: Vec<RecipeId>,
}
