//! Sleep events.

use super::{Source, events};
use crate::Context;
use crate::ids::SleepId;
use crate::time::{Day, Timestamp};
use serde::{Deserialize, Serialize};

/// Minutes spent in each stage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SleepStages {
    pub awake_min: u32,
    pub light_min: u32,
    pub deep_min: u32,
    pub rem_min: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SleepSession {
    pub sleep_id: SleepId,
    /// The night, named by the day it started in the user's timezone.
    pub night: Day,
    pub start: Timestamp,
    pub end: Timestamp,
    pub score: u8,
    pub stages: SleepStages,
    pub source: Source,
    pub version: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SleepRecorded {
    pub session: SleepSession,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SleepUpdated {
    pub session: SleepSession,
    /// The night it was filed under before, when the update moved it.
    pub previous_night: Option<Day>,
}

events!(Context::Sleep;
    SleepRecorded => 1,
    SleepUpdated => 1,
);
