//! Scheduled (planned) meals: planned on a day, taken off the plan, or eaten (logged as a
//! meal in the same transaction that takes them off, so a day never counts one twice).

use super::NutritionCommands;
use super::meals::{MealInput, MealRecord};
use crate::idempotency::{self, Committed};
use crate::items::{from_item, to_item};
use crate::meta::{CommandMeta, Outcome};
use crate::outbox::{envelope, event_action};
use crate::{CommandError, validate};
use events_schema::events::nutrition::{
    MealScheduled, Nutrients, RecipeCurated, ScheduledMealCleared,
};
use events_schema::ids::{RecipeId, ScheduledMealId};
use events_schema::keys::{PartitionKey, SortKey};
use events_schema::time::{Day, Timestamp};
use infra::store::{Condition, Key};
use infra::table::Action;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScheduleMeal {
    pub day: Day,
    pub name: String,
    pub recipe_id: Option<RecipeId>,
}

impl NutritionCommands {
    pub async fn schedule_meal(
        &self,
        meta: &CommandMeta,
        input: ScheduleMeal,
    ) -> Result<Outcome<MealScheduled>, CommandError> {
        let name = validate::text("name", &input.name, 1, 120)?;
        if let Some(recipe) = &input.recipe_id {
            // A plan names only a recipe of the catalog.
            self.recipe(recipe).await?;
        }
        let _writer = crate::serial::user(&meta.user).await;
        let pk = meta.user_pk();
        let id = ScheduledMealId::generate();
        let payload = MealScheduled {
            scheduled_meal_id: id.clone(),
            day: input.day,
            name,
            recipe_id: input.recipe_id.clone(),
        };
        let key = Key::new(
            &pk,
            SortKey::ScheduledMeal(input.day, id.clone()).to_string(),
        );
        let event = envelope(meta, &self.clock, self.clock.now(), &payload)?;
        idempotency::create(
            &self.table,
            meta,
            to_item(&key, &payload)?,
            &event,
            &input,
            payload,
        )
        .await
    }
}

/// A scheduled meal eaten: when, and (unless its recipe says) what it held.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EatScheduledMeal {
    pub day: Day,
    pub scheduled_meal_id: ScheduledMealId,
    pub eaten_at: Timestamp,
    pub timezone: String,
    /// The meal's nutrients; absent, the scheduled recipe's.
    pub nutrients: Option<Nutrients>,
}

fn scheduled_key(pk: &str, day: Day, id: &ScheduledMealId) -> Key {
    Key::new(pk, SortKey::ScheduledMeal(day, id.clone()).to_string())
}

impl NutritionCommands {
    async fn load_scheduled(
        &self,
        pk: &str,
        day: Day,
        id: &ScheduledMealId,
    ) -> Result<MealScheduled, CommandError> {
        let item = self
            .table
            .get(&scheduled_key(pk, day, id), true)
            .await?
            .ok_or(CommandError::NotFound("scheduled meal"))?;
        from_item(item)
    }

    /// Takes a scheduled meal off the plan (it was not eaten).
    pub async fn remove_scheduled_meal(
        &self,
        meta: &CommandMeta,
        day: Day,
        id: &ScheduledMealId,
    ) -> Result<Outcome<()>, CommandError> {
        let _writer = crate::serial::user(&meta.user).await;
        let pk = meta.user_pk();
        let request = (day, id);
        if let Some(first) = idempotency::replayed(&self.table, meta, &request).await? {
            return Ok(first);
        }
        self.load_scheduled(&pk, day, id).await?;
        let event = envelope(
            meta,
            &self.clock,
            self.clock.now(),
            &ScheduledMealCleared {
                scheduled_meal_id: id.clone(),
                day,
                eaten_as: None,
            },
        )?;
        let actions = vec![
            Action::Delete {
                key: scheduled_key(&pk, day, id),
                condition: Some(Condition::ItemExists),
            },
            event_action(&pk, &event)?,
        ];
        match idempotency::commit(&self.table, meta, &pk, &request, actions, ()).await? {
            Committed::Done(outcome) => Ok(outcome),
            // Removed or eaten meanwhile.
            Committed::Cancelled(reasons) if idempotency::lost_race(&reasons) => {
                Err(CommandError::NotFound("scheduled meal"))
            }
            Committed::Cancelled(reasons) => Err(idempotency::unexpected(&reasons)),
        }
    }

    /// Logs a scheduled meal as eaten: the meal is logged (the day's summary with it) and
    /// the scheduled meal leaves the plan in one transaction, so it counts once.
    pub async fn eat_scheduled_meal(
        &self,
        meta: &CommandMeta,
        input: EatScheduledMeal,
    ) -> Result<Outcome<MealRecord>, CommandError> {
        let _writer = crate::serial::user(&meta.user).await;
        let pk = meta.user_pk();
        if let Some(first) = idempotency::replayed(&self.table, meta, &input).await? {
            return Ok(first);
        }
        let scheduled = self
            .load_scheduled(&pk, input.day, &input.scheduled_meal_id)
            .await?;
        let nutrients = match (input.nutrients, &scheduled.recipe_id) {
            (Some(given), _) => given,
            (None, Some(recipe)) => self.recipe(recipe).await?.nutrients,
            (None, None) => {
                return Err(CommandError::invalid(
                    "nutrients",
                    "are required when the scheduled meal names no recipe",
                ));
            }
        };
        let meal = MealInput {
            name: scheduled.name.clone(),
            eaten_at: input.eaten_at,
            timezone: input.timezone.clone(),
            calories: nutrients.calories,
            protein_g: nutrients.protein_g,
            carbs_g: nutrients.carbs_g,
            fat_g: nutrients.fat_g,
        };
        let cleared = |record: &MealRecord| {
            let event = envelope(
                meta,
                &self.clock,
                record.eaten_at,
                &ScheduledMealCleared {
                    scheduled_meal_id: input.scheduled_meal_id.clone(),
                    day: input.day,
                    eaten_as: Some(record.meal_id.clone()),
                },
            )?;
            Ok(vec![
                Action::Delete {
                    key: scheduled_key(&pk, input.day, &input.scheduled_meal_id),
                    condition: Some(Condition::ItemExists),
                },
                event_action(&pk, &event)?,
            ])
        };
        self.log_meal_with(meta, &meal, &input, cleared).await
    }

    /// A curated recipe (catalog items live in partitions of their own).
    pub(super) async fn recipe(&self, id: &RecipeId) -> Result<RecipeCurated, CommandError> {
        let key = Key::new(
            PartitionKey::Recipe(id.clone()).to_string(),
            SortKey::Recipe.to_string(),
        );
        let item = self
            .table
            .get(&key, false)
            .await?
            .ok_or(CommandError::NotFound("recipe"))?;
        from_item(item)
    }
}
