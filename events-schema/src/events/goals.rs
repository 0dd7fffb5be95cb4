//! Goal events.

use super::events;
use crate::Context;
use crate::ids::GoalId;
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum GoalKind {
    WeeklyWorkoutCount,
    WeeklyActiveMinutes,
    DailyProteinGrams,
    WeeklyDistanceKm,
    NightlySleepHours,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum GoalPeriod {
    Daily,
    Weekly,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum GoalStatus {
    Active,
    Paused,
    Completed,
    Abandoned,
}

impl GoalStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            GoalStatus::Active => "active",
            GoalStatus::Paused => "paused",
            GoalStatus::Completed => "completed",
            GoalStatus::Abandoned => "abandoned",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Goal {
    pub goal_id: GoalId,
    pub kind: GoalKind,
    pub target: Decimal,
    pub period: GoalPeriod,
    pub status: GoalStatus,
    pub title: String,
    pub version: u64,
    /// The user's calendar day when the goal was set: progress counts the periods from
    /// the one holding it. Absent on goals set before it was recorded (no lower bound).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_on: Option<crate::time::Day>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct GoalCreated {
    pub goal: Goal,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct GoalStatusChanged {
    pub previous: GoalStatus,
    pub goal: Goal,
}

/// A goal's value for a period changed, recomputed from the facts the goals context
/// keeps. Published by the goals projectors, not by a command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct GoalProgressed {
    pub goal_id: GoalId,
    pub kind: GoalKind,
    pub period_start: crate::time::Day,
    pub previous_value: Decimal,
    pub value: Decimal,
    pub target: Decimal,
    pub met: bool,
}

events!(Context::Goals;
    GoalCreated => 1,
    GoalStatusChanged => 1,
    GoalProgressed => 1,
);
