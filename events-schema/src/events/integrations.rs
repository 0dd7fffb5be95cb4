//! Integrations events: connections, and the wearable data a provider delivered (the
//! activity and sleep contexts turn these into their own idempotent sync commands).

use super::events;
use super::sleep::SleepStages;
use crate::Context;
use crate::ids::{ExternalId, ProviderName};
use crate::time::Timestamp;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ProviderConnected {
    pub provider: ProviderName,
    pub connected_at: Timestamp,
    /// Scopes the user granted.
    pub scopes: Vec<String>,
    /// The connection's version after the change: milliseconds since the epoch, raised
    /// past the previous version, so it orders every change of the connection (0 on
    /// events written before it was recorded: their recording time orders them).
    #[serde(default)]
    pub version: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ProviderDisconnected {
    pub provider: ProviderName,
    /// As [`ProviderConnected::version`].
    #[serde(default)]
    pub version: u64,
}

/// A workout as a provider describes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ProviderWorkout {
    pub external_id: ExternalId,
    pub sport: String,
    pub started_at: Timestamp,
    pub duration_s: u32,
    pub distance_m: Option<u32>,
    pub calories: Option<u32>,
    /// When the provider last changed its record: a delivery older than the one applied
    /// is stale and changes nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<Timestamp>,
}

/// A sleep session as a provider describes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ProviderSleep {
    pub external_id: ExternalId,
    pub start: Timestamp,
    pub end: Timestamp,
    pub score: u8,
    pub stages: SleepStages,
    /// As [`ProviderWorkout::updated_at`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<Timestamp>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct WearableWorkoutReceived {
    pub provider: ProviderName,
    pub delivery_id: String,
    pub workout: ProviderWorkout,
    /// The user's timezone when they connected the provider: it names the day of the
    /// synced workout (UTC on events written before it was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timezone: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct WearableSleepReceived {
    pub provider: ProviderName,
    pub delivery_id: String,
    pub sleep: ProviderSleep,
    /// As [`WearableWorkoutReceived::timezone`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timezone: Option<String>,
}

events!(Context::Integrations;
    ProviderConnected => 1,
    ProviderDisconnected => 1,
    WearableWorkoutReceived => 1,
    WearableSleepReceived => 1,
);
