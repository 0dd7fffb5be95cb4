//! The meal commands' inputs and stored records: a meal as the client describes it, its
//! validation, the stored meal and daily summary, and the meal as its events carry it.
//! Nothing here reads or writes the table.

use crate::{CommandError, validate};
use events_schema::events::nutrition::{DayTotals, Meal, Nutrients};
use events_schema::ids::MealId;
use events_schema::time::{Day, Timestamp};
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};

/// A meal as the client describes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MealInput {
    pub name: String,
    pub eaten_at: Timestamp,
    /// The user's IANA timezone: the meal's day is its time there.
    pub timezone: String,
    pub calories: Decimal,
    pub protein_g: Decimal,
    pub carbs_g: Decimal,
    pub fat_g: Decimal,
}

pub type LogMeal = MealInput;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EditMeal {
    pub meal_id: MealId,
    pub meal: MealInput,
}

/// The stored meal item: the meal its events carry, field for field.
pub type MealRecord = Meal;

/// The stored daily summary item: the day totals its events carry, field for field.
pub type SummaryRecord = DayTotals;

/// A valid meal: name, time, day, nutrients.
pub(super) struct ValidMeal {
    pub(super) name: String,
    pub(super) eaten_at: Timestamp,
    pub(super) day: Day,
    pub(super) nutrients: Nutrients,
}

/// Nutrients in range: calories to 10,000, grams to 1,000, one decimal; an
/// invalid-field error naming the first out of range otherwise.
pub(in crate::nutrition) fn valid_nutrients(n: Nutrients) -> Result<Nutrients, CommandError> {
    let grams =
        |field, value| validate::decimal(field, value, Decimal::ZERO, Decimal::from(1000), 1);
    Ok(Nutrients {
        calories: validate::decimal(
            "calories",
            n.calories,
            Decimal::ZERO,
            Decimal::from(10_000),
            1,
        )?,
        protein_g: grams("protein_g", n.protein_g)?,
        carbs_g: grams("carbs_g", n.carbs_g)?,
        fat_g: grams("fat_g", n.fat_g)?,
    })
}

pub(super) fn validate_meal(input: &MealInput, now: Timestamp) -> Result<ValidMeal, CommandError> {
    let name = validate::text("name", &input.name, 1, 120)?;
    let eaten_at = validate::instant("eaten_at", input.eaten_at, now)?;
    let tz = validate::timezone("timezone", &input.timezone)?;
    let nutrients = valid_nutrients(Nutrients {
        calories: input.calories,
        protein_g: input.protein_g,
        carbs_g: input.carbs_g,
        fat_g: input.fat_g,
    })?;
    Ok(ValidMeal {
        name,
        eaten_at,
        day: validate::day_in(eaten_at, tz),
        nutrients,
    })
}
