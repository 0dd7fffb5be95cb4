//! What a sign-in proved and what an access token is issued on: [`SignedIn`] (the
//! credentials checked) and [`Access`] (the account and the generation of its
//! credentials), with the conditions on the profile that they still hold.

use crate::identity::profile::{AccountStatus, CREDENTIAL_GENERATION, Profile};
use crate::secret::Secret;
use events_schema::ids::UserId;
use infra::store::Condition;
use serde_json::json;

/// What an access token is issued on: whose it is, their timezone (the token names it)
/// and the generation of their credentials when the sign-in or refresh read them (the
/// token carries it, and holds only while it is the account's: see
/// [`IdentityCommands::access_holds`](crate::identity::IdentityCommands::access_holds)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Access {
    pub user: UserId,
    pub timezone: String,
    pub generation: u64,
}

impl Access {
    /// What a token is issued on for `profile`, as read.
    pub(super) fn of(profile: &Profile) -> Self {
        Self {
            user: profile.user_id.clone(),
            timezone: profile.timezone.clone(),
            generation: profile.credential_generation,
        }
    }
}

/// Who signed in (or signed up), and the credentials they proved: a session starts on
/// them only while they are still the account's, so a sign-in that checked a password
/// (or an email) changed before its session commits is refused.
#[derive(Clone)]
pub struct SignedIn {
    pub user: UserId,
    /// The password hash the sign-in was checked against (or the sign-up wrote), kept
    /// out of `Debug` and so out of logs.
    password_hash: Secret,
    /// The email it was checked against: not a secret, but personal data, which logs
    /// name by user id only (see `Debug`).
    email: String,
    /// What its access token is issued on (the generation of the credentials checked).
    access: Access,
}

impl std::fmt::Debug for SignedIn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SignedIn {{ user: {:?}, .. }}", self.user)
    }
}

impl SignedIn {
    /// Signed in to `profile`, with the credentials it holds.
    pub(in crate::identity) fn proved(profile: &Profile) -> Self {
        Self {
            user: profile.user_id.clone(),
            password_hash: profile.password_hash.clone(),
            email: profile.email.clone(),
            access: Access::of(profile),
        }
    }

    /// What the sign-in's access token is issued on: it holds until the credentials
    /// checked change (once its session started: a change before refuses the session).
    pub fn access(&self) -> &Access {
        &self.access
    }

    /// The condition on the profile for a session to start: the account is active and
    /// still has the credentials it was signed in with, at the generation read (an
    /// email changed and changed back is a change).
    pub(super) fn still_holds(&self) -> Condition {
        Condition::All(vec![
            active(),
            Condition::AttributeEquals("password_hash".into(), json!(self.password_hash.expose())),
            Condition::AttributeEquals("email".into(), json!(self.email)),
            generation_is(self.access.generation),
        ])
    }
}

/// The condition that the profile's credentials are at `generation` (absent before the
/// first change: see [`Profile::credential_generation`]).
fn generation_is(generation: u64) -> Condition {
    match generation {
        0 => Condition::AttributeNotExists(CREDENTIAL_GENERATION.into()),
        n => Condition::AttributeEquals(CREDENTIAL_GENERATION.into(), json!(n)),
    }
}

/// The condition that no session started since `read` was read (see
/// [`Profile::latest_session`]).
pub(in crate::identity) fn latest_session_is(read: &Profile) -> Condition {
    match &read.latest_session {
        Some(session) => Condition::AttributeEquals("latest_session".into(), json!(session)),
        None => Condition::AttributeNotExists("latest_session".into()),
    }
}

/// The condition that the profile is an active account's.
pub(super) fn active() -> Condition {
    Condition::AttributeEquals("status".into(), json!(AccountStatus::Active))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::identity::profile::fixtures;

    #[test]
    fn who_signed_in_is_logged_by_user_id_only() {
        let user = UserId::generate();
        let hashed = Profile {
            password_hash: Secret::new("$argon2id$h"),
            ..fixtures::profile(&user, "ana@example.com", 2)
        };
        let shown = format!("{:?}", SignedIn::proved(&hashed));
        assert!(shown.contains(user.as_str()), "{shown}");
        assert!(
            !shown.contains("argon2") && !shown.contains("ana@"),
            "{shown}"
        );
    }
}
