//! Facts one context keeps about another: activity keeps each day's food intake
//! (`INTAKE#<date>`, from nutrition), nutrition keeps each day's training load
//! (`TRAINING_LOAD#<date>`, from activity; a set of workouts, one entry each).

use crate::projector::{ProjectionError, Projector, decode, subscription, user_pk};
use crate::rows::{live_entries, merge_entry, object, replace_newer};
use async_trait::async_trait;
use events_schema::envelope::EventEnvelope;
use events_schema::events::activity::{WorkoutRecorded, WorkoutUpdated};
use events_schema::events::nutrition::{DayTotals, MealDeleted, MealEdited, MealLogged};
use events_schema::keys::SortKey;
use infra::store::{Item, Key};
use infra::table::{Table, contexts};
use serde_json::{Value, json};

/// The day totals a nutrition event carries.
pub fn day_totals(event: &EventEnvelope) -> Result<Vec<DayTotals>, ProjectionError> {
    Ok(match event.event_type.as_str() {
        "MealLogged" => vec![decode::<MealLogged>(event)?.day_totals],
        "MealEdited" => decode::<MealEdited>(event)?.day_totals,
        "MealDeleted" => vec![decode::<MealDeleted>(event)?.day_totals],
        _ => Vec::new(),
    })
}

/// `INTAKE#<date>` in the activity table.
pub struct ActivityFromNutrition(pub Table<contexts::Activity>);

#[async_trait]
impl Projector for ActivityFromNutrition {
    subscription!("activity-from-nutrition", Nutrition -> Activity);

    async fn apply(&self, event: &EventEnvelope) -> Result<(), ProjectionError> {
        let totals = day_totals(event)?;
        if totals.is_empty() {
            return Ok(());
        }
        let pk = user_pk(event)?;
        for day in totals {
            let key = Key::new(&pk, SortKey::Intake(day.day).to_string());
            let attrs = object(json!({"day": day.day, "meals": day.meals, "totals": day.totals}));
            replace_newer(&self.0, &key, attrs, "version", day.version).await?;
        }
        Ok(())
    }
}

/// A workout event's workout and the day it moved from, if any.
pub fn workout_of(
    event: &EventEnvelope,
) -> Result<
    Option<(
        events_schema::events::activity::Workout,
        Option<events_schema::time::Day>,
    )>,
    ProjectionError,
> {
    Ok(match event.event_type.as_str() {
        "WorkoutRecorded" => Some((decode::<WorkoutRecorded>(event)?.workout, None)),
        "WorkoutUpdated" => {
            let updated: WorkoutUpdated = decode(event)?;
            Some((updated.workout, updated.previous_day))
        }
        _ => None,
    })
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
    subscription!("nutrition-from-activity", Activity -> Nutrition);

    async fn apply(&self, event: &EventEnvelope) -> Result<(), ProjectionError> {
        let Some((workout, previous_day)) = workout_of(event)? else {
            return Ok(());
        };
        let pk = user_pk(event)?;
        let id = workout.workout_id.to_string();
        if let Some(previous) = previous_day {
            let key = Key::new(&pk, SortKey::TrainingLoad(previous).to_string());
            merge_entry(
                &self.0,
                &key,
                &id,
                json!({}),
                workout.version,
                true,
                training_load,
            )
            .await?;
        }
        let key = Key::new(&pk, SortKey::TrainingLoad(workout.day).to_string());
        let entry = json!({"duration_s": workout.duration_s, "calories": workout.calories});
        merge_entry(
            &self.0,
            &key,
            &id,
            entry,
            workout.version,
            false,
            training_load,
        )
        .await?;
        Ok(())
    }
}
