//! Version 1 of the workout events, before workouts had a perceived effort. Stored
//! events of it stay readable: decoding one reads it as these types and upcasts it to
//! the current version (no effort was rated). These types are frozen: their schema is
//! the one published as `WorkoutRecorded.v1.json` and `WorkoutUpdated.v1.json` (the
//! schema names and descriptions of the originals are kept, hence `as` and plain
//! comments).

use super::{Workout, WorkoutRecorded, WorkoutUpdated};
use crate::events::Source;
use crate::ids::WorkoutId;
use crate::time::{Day, Timestamp};
use serde::{Deserialize, Serialize};
use serde_json::Value;

// A workout as version 1 of the events carried it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = Workout))]
pub struct WorkoutV1 {
    pub workout_id: WorkoutId,
    /// The day it started, in the user's timezone.
    pub day: Day,
    pub started_at: Timestamp,
    /// Such as `run`, `ride`, `strength`.
    pub sport: String,
    pub duration_s: u32,
    pub distance_m: Option<u32>,
    pub calories: Option<u32>,
    pub source: Source,
    /// Starts at 1; a re-sync with changed fields makes the next version.
    pub version: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = WorkoutRecorded))]
pub struct WorkoutRecordedV1 {
    pub workout: WorkoutV1,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = WorkoutUpdated))]
pub struct WorkoutUpdatedV1 {
    pub workout: WorkoutV1,
    /// The day it was filed under before, when the update moved it.
    pub previous_day: Option<Day>,
}

/// v1 -> v2: a workout recorded before efforts were rated has none.
impl From<WorkoutV1> for Workout {
    fn from(v1: WorkoutV1) -> Self {
        Workout {
            workout_id: v1.workout_id,
            day: v1.day,
            started_at: v1.started_at,
            sport: v1.sport,
            duration_s: v1.duration_s,
            distance_m: v1.distance_m,
            calories: v1.calories,
            perceived_effort: None,
            source: v1.source,
            version: v1.version,
        }
    }
}

impl From<WorkoutRecordedV1> for WorkoutRecorded {
    fn from(v1: WorkoutRecordedV1) -> Self {
        WorkoutRecorded {
            workout: v1.workout.into(),
        }
    }
}

impl From<WorkoutUpdatedV1> for WorkoutUpdated {
    fn from(v1: WorkoutUpdatedV1) -> Self {
        WorkoutUpdated {
            workout: v1.workout.into(),
            previous_day: v1.previous_day,
        }
    }
}

/// Reads a stored `WorkoutRecorded` of an older version as the current one.
pub(crate) fn workout_recorded(
    version: u32,
    payload: Value,
) -> Option<Result<WorkoutRecorded, serde_json::Error>> {
    match version {
        1 => Some(serde_json::from_value::<WorkoutRecordedV1>(payload).map(Into::into)),
        _ => None,
    }
}

/// Reads a stored `WorkoutUpdated` of an older version as the current one.
pub(crate) fn workout_updated(
    version: u32,
    payload: Value,
) -> Option<Result<WorkoutUpdated, serde_json::Error>> {
    match version {
        1 => Some(serde_json::from_value::<WorkoutUpdatedV1>(payload).map(Into::into)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::EventEnvelope;
    use crate::envelope::EnvelopeError;
    use serde_json::json;

    fn v1_workout() -> Value {
        json!({
            "workout_id": "01JNM7Q3W8X9Y2Z4A5B6C7D8E9", "day": "2026-03-01",
            "started_at": "2026-03-01T07:00:00.000Z", "sport": "run", "duration_s": 2400,
            "distance_m": 6200, "calories": null, "source": {"kind": "manual"}, "version": 1
        })
    }

    fn stored(event_type: &str, payload: Value) -> EventEnvelope {
        let json = json!({
            "event_id": "01JNM7Q3W8X9Y2Z4A5B6C7D8EA", "event_type": event_type,
            "schema_version": 1, "context": "activity", "user_id": "01JNM7Q3W8X9Y2Z4A5B6C7D8EB",
            "occurred_at": "2026-03-01T07:00:00.000Z", "recorded_at": "2026-03-01T08:00:00.000Z",
            "payload": payload
        });
        serde_json::from_value(json).expect("an envelope")
    }

    #[test]
    fn a_stored_v1_workout_recorded_reads_as_v2_without_an_effort() {
        let recorded: WorkoutRecorded = stored("WorkoutRecorded", json!({"workout": v1_workout()}))
            .decode()
            .expect("upcast");
        assert_eq!(recorded.workout.perceived_effort, None);
        assert_eq!(recorded.workout.duration_s, 2400);
        assert_eq!(recorded.workout.distance_m, Some(6200));
        assert_eq!(recorded.workout.source, Source::Manual);
    }

    #[test]
    fn a_stored_v1_workout_updated_keeps_the_day_it_moved_from() {
        let payload = json!({"workout": v1_workout(), "previous_day": "2026-02-28"});
        let updated: WorkoutUpdated = stored("WorkoutUpdated", payload).decode().expect("upcast");
        assert_eq!(updated.previous_day, Day::parse("2026-02-28").ok());
        assert_eq!(updated.workout.perceived_effort, None);
    }

    #[test]
    fn a_v1_payload_missing_a_field_it_always_had_is_an_error_not_a_guess() {
        let mut workout = v1_workout();
        workout.as_object_mut().map(|w| w.remove("duration_s"));
        let broken = stored("WorkoutRecorded", json!({"workout": workout}));
        assert!(matches!(
            broken.decode::<WorkoutRecorded>(),
            Err(EnvelopeError::Payload(_))
        ));
    }
}
