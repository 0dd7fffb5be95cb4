//! What the source events of several subscriptions carry, decoded once: the day totals
//! of a nutrition event, the workout of an activity event, the session of a sleep event
//! (each with the day it moved from, if it moved). Other event types give nothing.

use crate::projector::{ProjectionError, decode, user_pk};
use events_schema::envelope::{EventEnvelope, EventPayload};
use events_schema::events::activity::{Workout, WorkoutRecorded, WorkoutUpdated};
use events_schema::events::nutrition::{DayTotals, MealDeleted, MealEdited, MealLogged};
use events_schema::events::sleep::{SleepRecorded, SleepSession, SleepUpdated};
use events_schema::time::Day;

/// The nutrition events [`meal_days`] reads.
pub const MEAL_EVENTS: &[&str] =
    crate::projector::event_types![MealLogged, MealEdited, MealDeleted];
/// The activity events [`workout_of`] reads.
pub const WORKOUT_EVENTS: &[&str] = crate::projector::event_types![WorkoutRecorded, WorkoutUpdated];
/// The sleep events [`sleep_of`] reads.
pub const SLEEP_EVENTS: &[&str] = crate::projector::event_types![SleepRecorded, SleepUpdated];

/// The user's partition and the day totals a nutrition event carries; `None` for other
/// events, and for a meal event that changed no day.
pub fn meal_days(
    event: &EventEnvelope,
) -> Result<Option<(String, Vec<DayTotals>)>, ProjectionError> {
    let days = match event.event_type.as_str() {
        MealLogged::EVENT_TYPE => vec![decode::<MealLogged>(event)?.day_totals],
        MealEdited::EVENT_TYPE => decode::<MealEdited>(event)?.day_totals,
        MealDeleted::EVENT_TYPE => vec![decode::<MealDeleted>(event)?.day_totals],
        _ => Vec::new(),
    };
    if days.is_empty() {
        return Ok(None);
    }
    Ok(Some((user_pk(event)?, days)))
}

/// A workout event's workout and the day it moved from, if any.
pub fn workout_of(
    event: &EventEnvelope,
) -> Result<Option<(Workout, Option<Day>)>, ProjectionError> {
    Ok(match event.event_type.as_str() {
        WorkoutRecorded::EVENT_TYPE => Some((decode::<WorkoutRecorded>(event)?.workout, None)),
        WorkoutUpdated::EVENT_TYPE => {
            let updated: WorkoutUpdated = decode(event)?;
            Some((updated.workout, updated.previous_day))
        }
        _ => None,
    })
}

/// A sleep event's session and the night it moved from, if any.
pub fn sleep_of(
    event: &EventEnvelope,
) -> Result<Option<(SleepSession, Option<Day>)>, ProjectionError> {
    Ok(match event.event_type.as_str() {
        SleepRecorded::EVENT_TYPE => Some((decode::<SleepRecorded>(event)?.session, None)),
        SleepUpdated::EVENT_TYPE => {
            let updated: SleepUpdated = decode(event)?;
            Some((updated.session, updated.previous_night))
        }
        _ => None,
    })
}
