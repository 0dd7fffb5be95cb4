//! Integrations events: connections, and the wearable data a provider delivered (the
//! activity and sleep contexts turn these into their own idempotent sync commands).

use super::events;
use super::sleep::SleepStages;
use crate::Context;
use crate::ids::{ExternalId, ProviderName};
use crate::time::Timestamp;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProviderConnected {
    pub provider: ProviderName,
    pub connected_at: Timestamp,
    /// Scopes the user granted.
    pub scopes: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProviderDisconnected {
    pub provider: ProviderName,
}

/// A workout as a provider describes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProviderWorkout {
    pub external_id: ExternalId,
    pub sport: String,
    pub started_at: Timestamp,
    pub duration_s: u32,
    pub distance_m: Option<u32>,
    pub calories: Option<u32>,
}

/// A sleep session as a provider describes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProviderSleep {
    pub external_id: ExternalId,
    pub start: Timestamp,
    pub end: Timestamp,
    pub score: u8,
    pub stages: SleepStages,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WearableWorkoutReceived {
    pub provider: ProviderName,
    pub delivery_id: String,
    pub workout: ProviderWorkout,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WearableSleepReceived {
    pub provider: ProviderName,
    pub delivery_id: String,
    pub sleep: ProviderSleep,
}

events!(Context::Integrations;
    ProviderConnected => 1,
    ProviderDisconnected => 1,
    WearableWorkoutReceived => 1,
    WearableSleepReceived => 1,
);
