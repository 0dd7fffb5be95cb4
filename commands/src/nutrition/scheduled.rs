//! Scheduled (planned) meals.

use super::NutritionCommands;
use crate::envelope::{CommandMeta, Outcome};
use crate::idempotency::{self, Committed};
use crate::items::to_item;
use crate::outbox::{envelope, event_action};
use crate::{CommandError, validate};
use events_schema::events::nutrition::MealScheduled;
use events_schema::ids::{RecipeId, ScheduledMealId};
use events_schema::keys::SortKey;
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
    ) -> Result<Outcome<ScheduledMealId>, CommandError> {
        let name = validate::text("name", &input.name, 1, 120)?;
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
        let event = envelope(meta, Timestamp::now(), &payload)?;
        let actions = vec![
            Action::Put {
                item: to_item(&key, &payload)?,
                condition: Some(Condition::ItemNotExists),
            },
            event_action(&pk, &event)?,
        ];
        match idempotency::commit(&self.table, meta, &pk, &input, actions, id).await? {
            Committed::Done(outcome) => Ok(outcome),
            Committed::Cancelled(reasons) => Err(idempotency::unexpected(&reasons)),
        }
    }
}
