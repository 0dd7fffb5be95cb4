//! Activity events. Workout events are at version 2 (a perceived effort); [`v1`] keeps
//! version 1 readable.

pub mod v1;

use super::{Source, events};
use crate::Context;
use crate::ids::{TrainingBlockId, WorkoutId};
use crate::time::{Day, Timestamp};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Workout {
    pub workout_id: WorkoutId,
    /// The day it started, in the user's timezone.
    pub day: Day,
    pub started_at: Timestamp,
    /// Such as `run`, `ride`, `strength`.
    pub sport: String,
    pub duration_s: u32,
    pub distance_m: Option<u32>,
    pub calories: Option<u32>,
    /// How hard it felt to the user, from 1 (very light) to 10 (maximal effort), the
    /// session-RPE scale coaches use for training load; `null` when not rated (synced
    /// workouts, and every workout recorded before version 2 of the workout events).
    #[cfg_attr(
        feature = "openapi",
        schema(required = true, minimum = 1, maximum = 10)
    )]
    pub perceived_effort: Option<u8>,
    pub source: Source,
    /// Starts at 1; a re-sync with changed fields makes the next version.
    pub version: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct WorkoutRecorded {
    pub workout: Workout,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct WorkoutUpdated {
    pub workout: Workout,
    /// The day it was filed under before, when the update moved it.
    pub previous_day: Option<Day>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TrainingBlockStarted {
    pub training_block_id: TrainingBlockId,
    pub start_day: Day,
    pub weeks: u8,
    pub focus: String,
}

impl TrainingBlockStarted {
    /// The block's planned last day: `weeks` weeks from its first day (the first day
    /// itself for a block without weeks, or one that would end after the calendar).
    pub fn planned_last_day(&self) -> Day {
        self.start_day
            .date()
            .checked_add_days(chrono::Days::new(
                (u64::from(self.weeks) * 7).saturating_sub(1),
            ))
            .map_or(self.start_day, Day::new)
    }
}

/// A training block ended before its planned last day: `ended_on` is its last day.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TrainingBlockEnded {
    pub training_block_id: TrainingBlockId,
    pub start_day: Day,
    pub ended_on: Day,
}

events!(Context::Activity;
    WorkoutRecorded => 2 { 1: v1::WorkoutRecordedV1 } upcast v1::workout_recorded,
    WorkoutUpdated => 2 { 1: v1::WorkoutUpdatedV1 } upcast v1::workout_updated,
    TrainingBlockStarted => 1,
    TrainingBlockEnded => 1,
);
