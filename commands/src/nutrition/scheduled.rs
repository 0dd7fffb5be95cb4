//! Scheduled (planned) meals: planned on a day, taken off the plan, or eaten (logged as a
//! meal in the same transaction that takes them off, so a day never counts one twice).

use super::NutritionCommands;
use super::meals::{MealInput, MealRecord};
use crate::idempotency::{self, Committed};
use crate::items::{from_item, to_item};
use crate::meta::{CommandMeta, Outcome};
use crate::optimistic;
use crate::outbox::{envelope, event_action};
use crate::{CommandError, validate};
use events_schema::envelope::EventEnvelope;
use events_schema::events::nutrition::{
    MealScheduled, Nutrients, RecipeCurated, ScheduledMealCleared,
};
use events_schema::ids::{RecipeId, ScheduledMealId};
use events_schema::keys::{PartitionKey, SortKey};
use events_schema::time::{Day, Timestamp};
use infra::store::{CancelReason, Condition, Key};
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
        let payload = scheduled_meal(&input, ScheduledMealId::generate())?;
        if let Some(recipe) = &input.recipe_id {
            // A plan names only a recipe of the catalog.
            self.recipe(recipe).await?;
        }
        let key = scheduled_key(&meta.user_pk(), payload.day, &payload.scheduled_meal_id);
        let item = to_item(&key, &payload)?;
        let now = self.clock.now();
        self.create(meta, item, (now, &payload), &input, payload.clone())
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

/// The meal `input` plans under `id`: a name of 1 to 120 characters; an invalid-field
/// error otherwise. (That a named recipe exists is read, not decided.)
fn scheduled_meal(
    input: &ScheduleMeal,
    id: ScheduledMealId,
) -> Result<MealScheduled, CommandError> {
    Ok(MealScheduled {
        scheduled_meal_id: id,
        day: input.day,
        name: validate::text("name", &input.name, 1, 120)?,
        recipe_id: input.recipe_id.clone(),
    })
}

/// Whether eating `scheduled` as `input` needs its recipe's nutrients read.
fn needs_recipe(scheduled: &MealScheduled, input: &EatScheduledMeal) -> Option<RecipeId> {
    match input.nutrients {
        Some(_) => None,
        None => scheduled.recipe_id.clone(),
    }
}

/// The meal logged when `scheduled` is eaten as `input`: its name, and the nutrients
/// given, else its recipe's (`recipe`, read when [`needs_recipe`] said so); an
/// invalid-field error when neither is there.
fn eaten_meal(
    scheduled: &MealScheduled,
    input: &EatScheduledMeal,
    recipe: Option<Nutrients>,
) -> Result<MealInput, CommandError> {
    let Some(nutrients) = input.nutrients.or(recipe) else {
        return Err(CommandError::invalid(
            "nutrients",
            "are required when the scheduled meal names no recipe",
        ));
    };
    Ok(MealInput {
        name: scheduled.name.clone(),
        eaten_at: input.eaten_at,
        timezone: input.timezone.clone(),
        calories: nutrients.calories,
        protein_g: nutrients.protein_g,
        carbs_g: nutrients.carbs_g,
        fat_g: nutrients.fat_g,
    })
}

/// Taking a scheduled meal off the plan: deleted only if it is still there (removed or
/// eaten meanwhile, the transaction is cancelled), with its event.
fn clearing(
    pk: &str,
    cleared: &ScheduledMealCleared,
    event: &EventEnvelope,
) -> Result<Vec<Action>, CommandError> {
    Ok(vec![
        Action::Delete {
            key: scheduled_key(pk, cleared.day, &cleared.scheduled_meal_id),
            condition: Some(Condition::ItemExists),
        },
        event_action(pk, event)?,
    ])
}

impl NutritionCommands {
    async fn load_scheduled(
        &self,
        pk: &str,
        day: Day,
        id: &ScheduledMealId,
    ) -> Result<MealScheduled, CommandError> {
        self.record(&scheduled_key(pk, day, id), "scheduled meal")
            .await
    }

    /// Takes a scheduled meal off the plan (it was not eaten).
    pub async fn remove_scheduled_meal(
        &self,
        meta: &CommandMeta,
        day: Day,
        id: &ScheduledMealId,
    ) -> Result<Outcome<()>, CommandError> {
        let _writer = self.writers.user(&meta.user).await;
        let pk = meta.user_pk();
        let request = (day, id);
        if let Some(first) = idempotency::replayed(&self.table, meta, &request).await? {
            return Ok(first);
        }
        self.load_scheduled(&pk, day, id).await?;
        let cleared = ScheduledMealCleared {
            scheduled_meal_id: id.clone(),
            day,
            eaten_as: None,
        };
        let event = self.event_now(meta, &cleared)?;
        let actions = clearing(&pk, &cleared, &event)?;
        let committed =
            optimistic::commit_through_conflicts(&self.table, meta, &pk, &request, actions, ());
        match committed.await? {
            // Removed or eaten meanwhile.
            Committed::Cancelled(reasons) if CancelReason::failed_condition(&reasons) => {
                Err(CommandError::NotFound("scheduled meal"))
            }
            committed => committed.or_unexpected(),
        }
    }

    /// Logs a scheduled meal as eaten: the meal is logged (the day's summary with it) and
    /// the scheduled meal leaves the plan in one transaction, so it counts once.
    pub async fn eat_scheduled_meal(
        &self,
        meta: &CommandMeta,
        input: EatScheduledMeal,
    ) -> Result<Outcome<MealRecord>, CommandError> {
        let _writer = self.writers.user(&meta.user).await;
        let pk = meta.user_pk();
        if let Some(first) = idempotency::replayed(&self.table, meta, &input).await? {
            return Ok(first);
        }
        let scheduled = self
            .load_scheduled(&pk, input.day, &input.scheduled_meal_id)
            .await?;
        let recipe = match needs_recipe(&scheduled, &input) {
            Some(recipe) => Some(self.recipe(&recipe).await?.nutrients),
            None => None,
        };
        let meal = eaten_meal(&scheduled, &input, recipe)?;
        let cleared = |record: &MealRecord| {
            let cleared = ScheduledMealCleared {
                scheduled_meal_id: input.scheduled_meal_id.clone(),
                day: input.day,
                eaten_as: Some(record.meal_id.clone()),
            };
            let event = envelope(meta, &self.clock, record.eaten_at, &cleared)?;
            clearing(&pk, &cleared, &event)
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

/// The calls this module makes, as declared access patterns (see `infra::access`).
pub(crate) mod access {
    use crate::idempotency::command_tx;
    use events_schema::Context::Nutrition as NUTRITION;
    use infra::access::{AccessPattern as P, Action::*, Op, Sk, Written as W};

    const SCHEDULED: W = W::new(Put, NUTRITION, "USER#", "SCHEDULED_MEAL#");
    const EVENT: W = W::new(Put, NUTRITION, "USER#", "EVT#");

    /// The scheduled meals' calls.
    pub static ACCESS: &[P] = &[
        P::new(
            "a recipe to schedule",
            NUTRITION,
            Op::get(false),
            "RECIPE#",
            Sk::exact("RECIPE"),
            "POST /v1/me/scheduled-meals",
        )
        .volume(0.5)
        .size(1, 1500),
        P::transact(
            "schedule a meal",
            command_tx!(Nutrition, "USER#", [SCHEDULED, EVENT]),
            "POST /v1/me/scheduled-meals",
        )
        .volume(0.5)
        .size(2, 600),
        P::new(
            "a scheduled meal, to change it",
            NUTRITION,
            Op::get(true),
            "USER#",
            Sk::exact("SCHEDULED_MEAL#"),
            "DELETE /v1/me/scheduled-meals/{day}/{id}, POST …/eaten",
        )
        .volume(0.4)
        .size(1, 600),
        P::transact(
            "cancel a scheduled meal",
            command_tx!(
                Nutrition,
                "USER#",
                [W::new(Delete, NUTRITION, "USER#", "SCHEDULED_MEAL#"), EVENT,]
            ),
            "DELETE /v1/me/scheduled-meals/{day}/{id}",
        )
        .volume(0.05)
        .size(2, 400),
        P::transact(
            "eat a scheduled meal",
            command_tx!(
                Nutrition,
                "USER#",
                [
                    W::new(Put, NUTRITION, "USER#", "MEAL#"),
                    W::new(Put, NUTRITION, "USER#", "MEAL_REF#"),
                    W::new(Put, NUTRITION, "USER#", "DAILY_SUMMARY#"),
                    EVENT,
                    W::new(Delete, NUTRITION, "USER#", "SCHEDULED_MEAL#"),
                ]
            ),
            "POST /v1/me/scheduled-meals/{day}/{id}/eaten (a meal logged, the plan consumed)",
        )
        .volume(0.3)
        .size(6, 600),
    ];
}

#[cfg(test)]
mod tests {
    use super::*;
    use rust_decimal::Decimal;

    fn day() -> Day {
        Day::parse("2026-03-02").expect("day")
    }

    fn nutrients(calories: i64) -> Nutrients {
        Nutrients {
            calories: Decimal::from(calories),
            protein_g: Decimal::from(30),
            carbs_g: Decimal::from(40),
            fat_g: Decimal::from(10),
        }
    }

    fn planned(recipe: Option<RecipeId>) -> MealScheduled {
        scheduled_meal(
            &ScheduleMeal {
                day: day(),
                name: "Lentil soup".into(),
                recipe_id: recipe,
            },
            ScheduledMealId::generate(),
        )
        .expect("valid")
    }

    fn eating(scheduled: &MealScheduled, given: Option<Nutrients>) -> EatScheduledMeal {
        EatScheduledMeal {
            day: scheduled.day,
            scheduled_meal_id: scheduled.scheduled_meal_id.clone(),
            eaten_at: Timestamp::parse("2026-03-02T12:30:00.000Z").expect("timestamp"),
            timezone: "UTC".into(),
            nutrients: given,
        }
    }

    #[test]
    fn a_scheduled_meal_has_a_name_of_one_to_120_characters() {
        let id = ScheduledMealId::generate();
        let input = |name: &str| ScheduleMeal {
            day: day(),
            name: name.into(),
            recipe_id: None,
        };
        let meal = scheduled_meal(&input("Lentil soup"), id.clone()).expect("valid");
        assert_eq!((meal.scheduled_meal_id, meal.day), (id, day()));
        for name in ["", &"x".repeat(121)] {
            let error = scheduled_meal(&input(name), ScheduledMealId::generate()).expect_err(name);
            assert!(error.to_string().contains("name"), "{error}");
        }
    }

    #[test]
    fn an_eaten_meal_takes_the_given_nutrients_else_its_recipes() {
        let recipe = RecipeId::generate();
        // Given a meal planned from a recipe,
        let scheduled = planned(Some(recipe.clone()));
        // when it is eaten with nutrients of its own, then the recipe is not read and
        // the meal has the given ones, under the planned name;
        let given = eating(&scheduled, Some(nutrients(610)));
        assert_eq!(needs_recipe(&scheduled, &given), None);
        let meal = eaten_meal(&scheduled, &given, None).expect("given");
        assert_eq!(
            (meal.name.as_str(), meal.calories),
            ("Lentil soup", Decimal::from(610))
        );
        assert_eq!(meal.eaten_at, given.eaten_at);
        // when it is eaten without, then the recipe is read and its nutrients logged.
        let plain = eating(&scheduled, None);
        assert_eq!(needs_recipe(&scheduled, &plain), Some(recipe));
        let meal = eaten_meal(&scheduled, &plain, Some(nutrients(450))).expect("recipe");
        assert_eq!(meal.calories, Decimal::from(450));
    }

    #[test]
    fn a_meal_planned_without_a_recipe_is_eaten_only_with_nutrients() {
        let scheduled = planned(None);
        let plain = eating(&scheduled, None);
        assert_eq!(needs_recipe(&scheduled, &plain), None);
        let error = eaten_meal(&scheduled, &plain, None).expect_err("no nutrients");
        assert!(error.to_string().contains("nutrients"), "{error}");
    }

    #[test]
    fn clearing_deletes_the_planned_meal_only_if_it_is_still_there() {
        let scheduled = planned(None);
        let cleared = ScheduledMealCleared {
            scheduled_meal_id: scheduled.scheduled_meal_id.clone(),
            day: scheduled.day,
            eaten_as: None,
        };
        let meta = CommandMeta::new(events_schema::ids::UserId::generate());
        let clock = events_schema::time::Clock::System;
        let event = envelope(&meta, &clock, clock.now(), &cleared).expect("event");
        let actions = clearing("USER#u", &cleared, &event).expect("actions");
        assert_eq!(actions.len(), 2);
        assert_eq!(
            actions[0],
            Action::Delete {
                key: scheduled_key("USER#u", scheduled.day, &scheduled.scheduled_meal_id),
                condition: Some(Condition::ItemExists),
            }
        );
        assert_eq!(
            actions[1],
            event_action("USER#u", &event).expect("event action")
        );
    }
}
