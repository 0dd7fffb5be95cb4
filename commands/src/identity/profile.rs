//! The account's stored profile: its status, its credentials (the password hash and
//! their generation), its key and its email's reservation, the rule a password must meet,
//! and the reads of it that the other commands decide on.

use super::IdentityCommands;
use crate::items::to_item;
use crate::secret::Secret;
use crate::{CommandError, password};
use events_schema::events::identity::{ProfileState, Units};
use events_schema::ids::UserId;
use events_schema::keys::{PartitionKey, SortKey};
use infra::store::{Condition, Key};
use infra::table::Action;
use serde::{Deserialize, Serialize};
use serde_json::json;

/// Account status stored on the profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AccountStatus {
    Active,
    DeletionRequested,
}

/// The stored profile item.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Profile {
    pub user_id: UserId,
    pub email: String,
    /// The `by-email` index key (the normalized email).
    pub email_pk: String,
    pub display_name: String,
    pub timezone: String,
    pub units: Units,
    /// The argon2 hash (kept out of `Debug`).
    pub password_hash: Secret,
    pub status: AccountStatus,
    pub version: u64,
    /// The id of the session started last: a change that ends every session commits
    /// only while it is the one read, so no session started meanwhile outlives it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latest_session: Option<String>,
    /// How many times the credentials changed (the password or the email): an access
    /// token carries the generation it was issued at and holds only while it is still
    /// this one, so a change ends every token issued before it, whatever second it was
    /// issued in. Absent until the first change (0), then one more at each (an atomic
    /// add, so two changes at once count two).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub credential_generation: u64,
}

/// The profile attribute of [`Profile::credential_generation`].
pub(crate) const CREDENTIAL_GENERATION: &str = "credential_generation";

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Profile {
    /// Whether `password` is the account's (argon2, on the bounded hashing pool).
    pub(crate) async fn has_password(&self, password: &str) -> Result<bool, CommandError> {
        let hash = self.password_hash.expose().to_owned();
        password::verify(password.to_owned(), hash).await
    }

    /// The condition that the profile still has the password it had when read (a change
    /// proved with that password commits only while it is the account's).
    pub(super) fn still_has_password(&self) -> Condition {
        Condition::AttributeEquals("password_hash".into(), json!(self.password_hash))
    }

    pub fn state(&self) -> ProfileState {
        ProfileState {
            email: self.email.clone(),
            display_name: self.display_name.clone(),
            timezone: self.timezone.clone(),
            units: self.units,
            version: self.version,
        }
    }
}

pub(crate) fn profile_key(user: &UserId) -> Key {
    Key::new(
        PartitionKey::User(user.clone()).to_string(),
        SortKey::Profile.to_string(),
    )
}

/// The key of `email`'s reservation.
pub(super) fn email_key(email: &str) -> Key {
    Key::new(
        PartitionKey::Email(email.to_owned()).to_string(),
        SortKey::Email.to_string(),
    )
}

/// The reservation of `email` for `user`, taken only if free.
pub(super) fn reservation(email: &str, user: &UserId) -> Result<Action, CommandError> {
    let item = to_item(&email_key(email), &json!({"user_id": user}))?;
    Ok(Action::Put {
        item,
        condition: Some(Condition::ItemNotExists),
    })
}

/// A password of 10 to 256 characters; an invalid-field error otherwise.
pub(super) fn validate_password(password: &str) -> Result<(), CommandError> {
    let count = password.chars().count();
    if !(10..=256).contains(&count) {
        return Err(CommandError::invalid(
            "password",
            "must be 10 to 256 characters",
        ));
    }
    Ok(())
}

impl IdentityCommands {
    pub async fn profile(&self, user: &UserId) -> Result<Profile, CommandError> {
        self.record(&profile_key(user), "profile").await
    }

    /// `user`'s profile, read to make a change that `password`, the current password,
    /// proves: `InvalidCredentials` when it is not the account's.
    pub(super) async fn proved_by(
        &self,
        user: &UserId,
        password: &str,
    ) -> Result<Profile, CommandError> {
        let profile = self.profile(user).await?;
        if !profile.has_password(password).await? {
            return Err(CommandError::InvalidCredentials);
        }
        Ok(profile)
    }
}

/// Profiles for the identity context's tests.
#[cfg(test)]
pub(super) mod fixtures {
    use super::*;

    /// Ana's active profile under `email` at `version`, session S1 started last.
    pub(in crate::identity) fn profile(user: &UserId, email: &str, version: u64) -> Profile {
        Profile {
            user_id: user.clone(),
            email: email.into(),
            email_pk: email.into(),
            display_name: "Ana".into(),
            timezone: "Europe/Paris".into(),
            units: Units::Metric,
            password_hash: Secret::new("argon2-hash"),
            status: AccountStatus::Active,
            version,
            latest_session: Some("S1".into()),
            credential_generation: 0,
        }
    }
}
