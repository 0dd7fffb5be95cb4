//! Facts one context keeps about another: activity keeps each day's food intake
//! (`INTAKE#<date>`, from nutrition), nutrition keeps each day's training load
//! (`TRAINING_LOAD#<date>`, from activity; a set of workouts, one entry each).

use crate::convert::{item_of, live_decoded};
use crate::facts::{meal_days, workout_of};
use crate::projector::{ProjectionError, Projector, subscription, user_pk};
use crate::rows::{Moved, merge_moved, put_if_newer};
use async_trait::async_trait;
use events_schema::envelope::EventEnvelope;
use events_schema::keys::SortKey;
use infra::store::{Item, Key};
use infra::table::{Table, contexts};
use serde::{Deserialize, Serialize};

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
            put_if_newer(&self.0, &key, &day).await?;
        }
        Ok(())
    }
}

/// A workout's entry in its day's `TRAINING_LOAD#` row.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoadEntry {
    #[serde(default)]
    pub duration_s: u32,
    #[serde(default)]
    pub calories: Option<u32>,
}

/// Nutrition `TRAINING_LOAD#<date>`: the day's workouts in all, derived from their
/// entries (the set beside it is the projection's bookkeeping).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrainingLoadRow {
    pub workouts: u64,
    pub active_minutes: u64,
    pub calories: u64,
}

impl TrainingLoadRow {
    /// The day's load from its live workouts.
    pub fn of(entries: &Item) -> Self {
        let live = live_decoded::<LoadEntry>(entries);
        let seconds: u64 = live.iter().map(|(_, w)| u64::from(w.duration_s)).sum();
        Self {
            workouts: live.len() as u64,
            active_minutes: seconds / 60,
            calories: live
                .iter()
                .filter_map(|(_, w)| w.calories.map(u64::from))
                .sum(),
        }
    }
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
            value: item_of(&LoadEntry {
                duration_s: workout.duration_s,
                calories: workout.calories,
            }),
            version: workout.version,
            day: workout.day,
            from: previous_day,
        };
        merge_moved(&self.0, member, |day| {
            let key = Key::new(&pk, SortKey::TrainingLoad(day).to_string());
            (key, |entries: &Item| item_of(&TrainingLoadRow::of(entries)))
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
