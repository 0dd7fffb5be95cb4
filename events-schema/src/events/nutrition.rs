//! Nutrition events. Each meal event carries the totals of the day(s) it changed, with
//! the summary's version, so projections can apply "only if newer".

use super::events;
use crate::Context;
use crate::ids::{MealId, MealPlanId, RecipeId, ScheduledMealId};
use crate::time::{Day, Timestamp};
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};

/// Energy and macronutrients of a meal or a day.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Nutrients {
    pub calories: Decimal,
    pub protein_g: Decimal,
    pub carbs_g: Decimal,
    pub fat_g: Decimal,
}

impl Nutrients {
    pub fn plus(self, other: Nutrients) -> Nutrients {
        Nutrients {
            calories: self.calories + other.calories,
            protein_g: self.protein_g + other.protein_g,
            carbs_g: self.carbs_g + other.carbs_g,
            fat_g: self.fat_g + other.fat_g,
        }
    }

    pub fn minus(self, other: Nutrients) -> Nutrients {
        Nutrients {
            calories: self.calories - other.calories,
            protein_g: self.protein_g - other.protein_g,
            carbs_g: self.carbs_g - other.carbs_g,
            fat_g: self.fat_g - other.fat_g,
        }
    }
}

/// A day's summary after a change: the sum of that day's meals.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct DayTotals {
    pub day: Day,
    pub meals: u32,
    pub totals: Nutrients,
    /// The summary item's version after the change.
    pub version: u64,
}

impl DayTotals {
    /// A day with no meals, before any change to it (version 0).
    pub fn empty(day: Day) -> Self {
        Self {
            day,
            meals: 0,
            totals: Nutrients::default(),
            version: 0,
        }
    }
}

// A meal. The same type is the meal the command stores (`MEAL#<date>#<id>`), the meal
// its events carry and the meal the read side keeps (`rows::MealRow`): the fields and
// their meaning are the same all the way. (A plain comment: a doc comment would change
// the published event schemas.)
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Meal {
    pub meal_id: MealId,
    pub day: Day,
    pub eaten_at: Timestamp,
    pub name: String,
    pub nutrients: Nutrients,
    pub version: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct MealLogged {
    pub meal: Meal,
    pub day_totals: DayTotals,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct MealEdited {
    pub meal: Meal,
    pub previous_day: Day,
    /// One entry per day changed: the new day, and the previous one if it moved.
    pub day_totals: Vec<DayTotals>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct MealDeleted {
    pub meal_id: MealId,
    pub day: Day,
    /// The meal's version after deletion (its last version + 1), so projections can
    /// tell the deletion from older edits arriving late.
    pub version: u64,
    pub day_totals: DayTotals,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct MealScheduled {
    pub scheduled_meal_id: ScheduledMealId,
    pub day: Day,
    pub name: String,
    pub recipe_id: Option<RecipeId>,
}

/// A scheduled meal left the plan: removed, or eaten (then `eaten_as` is the meal it
/// became, logged in the same transaction).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ScheduledMealCleared {
    pub scheduled_meal_id: ScheduledMealId,
    pub day: Day,
    pub eaten_as: Option<MealId>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RecipeCurated {
    pub recipe_id: RecipeId,
    pub name: String,
    pub category: String,
    pub nutrients: Nutrients,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct MealPlanCurated {
    pub meal_plan_id: MealPlanId,
    pub name: String,
    pub category: String,
    pub recipes: Vec<RecipeId>,
}

events!(Context::Nutrition;
    MealLogged => 1,
    MealEdited => 1,
    MealDeleted => 1,
    MealScheduled => 1,
    ScheduledMealCleared => 1,
    RecipeCurated => 1,
    MealPlanCurated => 1,
);
