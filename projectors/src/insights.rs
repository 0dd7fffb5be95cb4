//! Insights: an `ACTIVE_DAY#<date>` marker per user and day with activity (meals,
//! workouts, sleep; one versioned entry each), carrying the sparse `active-day` index keys
//! (`DAY#<date>` -> `USER#<id>`) while the day has live entries, which the nightly
//! readiness job ([`crate::nightly`]) lists a day's users through. A marker that changes
//! for a day the job has finished has that user's readiness scored again at once
//! ([`rescore_late`]).

use crate::convert::{item_of, live_decoded};
use crate::facts::{meal_days, sleep_of, workout_of};
use crate::nightly::rescore_late;
use crate::projector::{ProjectionError, Projector, subscription, user_pk};
use crate::rows::{Entry, Moved, merge_entry, merge_moved};
use async_trait::async_trait;
use events_schema::envelope::EventEnvelope;
use events_schema::keys::SortKey;
use events_schema::rows::ActiveDayRow;
use events_schema::time::{Clock, Day};
use infra::store::{Item, Key};
use infra::table::{Table, contexts};
use serde::{Deserialize, Serialize};

/// What an entry of a day's marker counts: the day's meals (the one entry
/// [`MEALS_ENTRY`]), or a workout's or a session's minutes (`workout:<id>`,
/// `sleep:<id>`).
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
struct Counted {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    meals: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    minutes: Option<i64>,
}

/// The id of the entry holding a day's meals.
const MEALS_ENTRY: &str = "nutrition:day";
/// The kinds of entry, as their ids start.
const NUTRITION: &str = "nutrition";
const WORKOUT: &str = "workout";
const SLEEP: &str = "sleep";

fn marker(pk: &str, day: Day) -> impl Fn(&Item) -> Item {
    let pk = pk.to_owned();
    move |entries| {
        let (mut meals, mut active_minutes, mut sleep_minutes) = (0, 0, 0);
        for (id, counted) in live_decoded::<Counted>(entries) {
            let minutes = counted
                .minutes
                .and_then(|m| u64::try_from(m).ok())
                .unwrap_or(0);
            match id.split_once(':').map(|(kind, _)| kind) {
                Some(NUTRITION) => meals += counted.meals.unwrap_or(0),
                Some(WORKOUT) => active_minutes += minutes,
                Some(SLEEP) => sleep_minutes += minutes,
                _ => {}
            }
        }
        let row = ActiveDayRow::new(&pk, day, meals, active_minutes, sleep_minutes);
        item_of(&row)
    }
}

/// The marker row of `day` and how it derives from its entries: each entity has one
/// entry among the day's (`nutrition:day`, `workout:<id>`, `sleep:<id>`).
fn marker_row(pk: &str, day: Day) -> (Key, impl Fn(&Item) -> Item) {
    let key = Key::new(pk, SortKey::ActiveDay(day).to_string());
    (key, marker(pk, day))
}

/// Markers from nutrition: the meals of each day changed.
/// The clock tells which days the nightly job may have finished.
pub struct InsightsFromNutrition(pub Table<contexts::Insights>, pub Clock);

#[async_trait]
impl Projector for InsightsFromNutrition {
    subscription!("insights-from-nutrition", Nutrition -> Insights, consumes crate::facts::MEAL_EVENTS, writes &["ACTIVE_DAY#", "READINESS#"]);

    async fn apply(&self, event: &EventEnvelope) -> Result<(), ProjectionError> {
        let Some((pk, days)) = meal_days(event)? else {
            return Ok(());
        };
        for day in &days {
            let (key, derive) = marker_row(&pk, day.day);
            let counted = Counted {
                meals: Some(u64::from(day.meals)),
                minutes: None,
            };
            let entry = Entry::live(MEALS_ENTRY, item_of(&counted), day.version);
            merge_entry(&self.0, &key, entry, derive).await?;
        }
        let changed: Vec<Day> = days.iter().map(|d| d.day).collect();
        rescore_late(&self.0, &pk, &changed, self.1.now()).await?;
        Ok(())
    }
}

/// Markers from activity: one entry per workout (moved workouts leave their old day).
/// The clock tells which days the nightly job may have finished.
pub struct InsightsFromActivity(pub Table<contexts::Insights>, pub Clock);

#[async_trait]
impl Projector for InsightsFromActivity {
    subscription!("insights-from-activity", Activity -> Insights, consumes crate::facts::WORKOUT_EVENTS, writes &["ACTIVE_DAY#", "READINESS#"]);

    async fn apply(&self, event: &EventEnvelope) -> Result<(), ProjectionError> {
        let Some((workout, previous_day)) = workout_of(event)? else {
            return Ok(());
        };
        let pk = user_pk(event)?;
        let member = Moved {
            id: &format!("{WORKOUT}:{}", workout.workout_id),
            value: item_of(&Counted {
                meals: None,
                minutes: Some(i64::from(workout.duration_s / 60)),
            }),
            version: workout.version,
            day: workout.day,
            from: previous_day,
        };
        let changed = merge_moved(&self.0, member, |day| marker_row(&pk, day)).await?;
        rescore_late(&self.0, &pk, &changed, self.1.now()).await?;
        Ok(())
    }
}

/// Markers from sleep: one entry per session, on its night.
/// The clock tells which days the nightly job may have finished.
pub struct InsightsFromSleep(pub Table<contexts::Insights>, pub Clock);

#[async_trait]
impl Projector for InsightsFromSleep {
    subscription!("insights-from-sleep", Sleep -> Insights, consumes crate::facts::SLEEP_EVENTS, writes &["ACTIVE_DAY#", "READINESS#"]);

    async fn apply(&self, event: &EventEnvelope) -> Result<(), ProjectionError> {
        let Some((session, previous)) = sleep_of(event)? else {
            return Ok(());
        };
        let pk = user_pk(event)?;
        let member = Moved {
            id: &format!("{SLEEP}:{}", session.sleep_id),
            value: item_of(&Counted {
                meals: None,
                minutes: Some(session.start.minutes_until(session.end)),
            }),
            version: session.version,
            day: session.night,
            from: previous,
        };
        let changed = merge_moved(&self.0, member, |night| marker_row(&pk, night)).await?;
        rescore_late(&self.0, &pk, &changed, self.1.now()).await?;
        Ok(())
    }
}

/// The calls this module makes, as declared access patterns (see `infra::access`).
pub(crate) mod access {
    use events_schema::Context::Insights as INSIGHTS;
    use infra::access::{AccessPattern as P, Op, Sk};

    /// The day markers' calls.
    pub static ACCESS: &[P] = &[
        P::new(
            "a user's day marker",
            INSIGHTS,
            Op::get(true),
            "USER#",
            Sk::exact("ACTIVE_DAY#"),
            "every meal, workout and night (merged into the day's marker)",
        )
        .volume(6.0)
        .size(1, 300),
        P::new(
            "mark a day active",
            INSIGHTS,
            Op::Put,
            "USER#",
            Sk::exact("ACTIVE_DAY#"),
            "every meal, workout and night",
        )
        .volume(6.0)
        .size(1, 300),
    ];
}
