//! Facts one context keeps about another: activity keeps each day's food intake
//! (`INTAKE#<date>`, from nutrition), nutrition keeps each day's training load
//! (`TRAINING_LOAD#<date>`, from activity; a set of workouts, one entry each).

use crate::convert::{live_entries, object};
use crate::facts::{meal_days, totals_row, workout_of};
use crate::projector::{ProjectionError, Projector, subscription, user_pk};
use crate::rows::{Moved, merge_moved, replace_newer};
use async_trait::async_trait;
use events_schema::envelope::EventEnvelope;
use events_schema::keys::SortKey;
use infra::store::{Item, Key};
use infra::table::{Table, contexts};
use serde_json::{Value, json};

/// `INTAKE#<date>` in the activity table.
pub struct ActivityFromNutrition(pub Table<contexts::Activity>);

#[async_trait]
impl Projector for ActivityFromNutrition {
    subscription!("activity-from-nutrition", Nutrition -> Activity, consumes crate::facts::MEAL_EVENTS, writes &["INTAKE#"]);

    async fn apply(&self, event: &EventEnvelope) -> Result<(), ProjectionError> {
        let Some((pk, days)) = meal_days(event)? else {
            return Ok(());
        };
        for day in days {
            let key = Key::new(&pk, SortKey::Intake(day.day).to_string());
            replace_newer(&self.0, &key, totals_row(&day), "version", day.version).await?;
        }
        Ok(())
    }
}

fn training_load(entries: &serde_json::Map<String, Value>) -> Item {
    let live: Vec<&Value> = live_entries(entries).map(|(_, e)| e).collect();
    let seconds: u64 = live
        .iter()
        .filter_map(|e| e.get("duration_s").and_then(Value::as_u64))
        .sum();
    let calories: u64 = live
        .iter()
        .filter_map(|e| e.get("calories").and_then(Value::as_u64))
        .sum();
    object(json!({"workouts": live.len(), "active_minutes": seconds / 60, "calories": calories}))
}

/// `TRAINING_LOAD#<date>` in the nutrition table: one entry per workout of the day.
pub struct NutritionFromActivity(pub Table<contexts::Nutrition>);

#[async_trait]
impl Projector for NutritionFromActivity {
    subscription!("nutrition-from-activity", Activity -> Nutrition, consumes crate::facts::WORKOUT_EVENTS, writes &["TRAINING_LOAD#"]);

    async fn apply(&self, event: &EventEnvelope) -> Result<(), ProjectionError> {
        let Some((workout, previous_day)) = workout_of(event)? else {
            return Ok(());
        };
        let pk = user_pk(event)?;
        let member = Moved {
            id: &workout.workout_id.to_string(),
            value: json!({"duration_s": workout.duration_s, "calories": workout.calories}),
            version: workout.version,
            day: workout.day,
            from: previous_day,
        };
        merge_moved(&self.0, member, |day| {
            let key = Key::new(&pk, SortKey::TrainingLoad(day).to_string());
            (key, training_load)
        })
        .await?;
        Ok(())
    }
}

/// The calls this module makes, as declared access patterns (see `infra::access`).
pub(crate) mod access {
    use events_schema::Context::{Activity as ACTIVITY, Nutrition as NUTRITION};
    use infra::access::{AccessPattern as P, Op, Sk};

    /// The cross-context projections' calls.
    pub static ACCESS: &[P] = &[
        P::new(
            "project a day's intake for activity",
            ACTIVITY,
            Op::Put,
            "USER#",
            Sk::exact("INTAKE#"),
            "MealLogged, MealEdited, MealDeleted (nutrition-to-activity)",
        )
        .volume(4.0)
        .size(1, 300),
        P::new(
            "a day's training load",
            NUTRITION,
            Op::get(true),
            "USER#",
            Sk::exact("TRAINING_LOAD#"),
            "WorkoutLogged (activity-to-nutrition, merged into the day)",
        )
        .volume(1.0)
        .size(1, 300),
        P::new(
            "project a day's training load for nutrition",
            NUTRITION,
            Op::Put,
            "USER#",
            Sk::exact("TRAINING_LOAD#"),
            "WorkoutLogged (activity-to-nutrition)",
        )
        .volume(1.0)
        .size(1, 300),
    ];
}
