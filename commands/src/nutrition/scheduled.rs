//! Scheduled (planned) meals.

use super::NutritionCommands;
use crate::envelope::{CommandMeta, Outcome};
use crate::idempotency::{self};
use crate::items::to_item;
use crate::outbox::envelope;
use crate::{CommandError, validate};
use events_schema::events::nutrition::MealScheduled;
use events_schema::ids::{RecipeId, ScheduledMealId};
use events_schema::keys::SortKey;
use events_schema::time::Day;
use infra::store::Key;
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
            id,
        )
        .await
    }
}
