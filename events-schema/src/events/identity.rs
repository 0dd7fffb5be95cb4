//! Identity events. No event ever carries a password or its hash.

use super::events;
use crate::Context;
use serde::{Deserialize, Serialize};

/// Preferred units in the app.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum Units {
    #[default]
    Metric,
    Imperial,
}

/// The public part of a profile, as it is after the event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ProfileState {
    pub email: String,
    pub display_name: String,
    /// IANA timezone name, such as `Europe/Paris`.
    pub timezone: String,
    pub units: Units,
    /// Increases with every profile change.
    pub version: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct UserRegistered {
    pub profile: ProfileState,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct EmailChanged {
    pub old_email: String,
    pub profile: ProfileState,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ProfileUpdated {
    pub profile: ProfileState,
}

/// The password changed (the event says when, never what); every session ended with it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PasswordChanged {
    pub changed_at: crate::time::Timestamp,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AccountDeletionRequested {
    pub email: String,
}

events!(Context::Identity;
    UserRegistered => 1,
    EmailChanged => 1,
    ProfileUpdated => 1,
    PasswordChanged => 1,
    AccountDeletionRequested => 1,
);
