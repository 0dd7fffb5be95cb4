//! Opening an account: the sign-up's input and its checks, the profile and email
//! reservation it writes, and a keyed retry, which signs in only with the sign-up's own
//! password.

use super::IdentityCommands;
use super::profile::{
    AccountStatus, Profile, email_key, profile_key, reservation, validate_password,
};
use super::sessions::SignedIn;
use crate::idempotency::Committed;
use crate::items::to_item;
use crate::meta::{CommandMeta, Outcome};
use crate::optimistic;
use crate::outbox::{envelope, event_action};
use crate::secret::Secret;
use crate::{CommandError, password, validate};
use events_schema::events::identity::{Units, UserRegistered};
use events_schema::ids::UserId;
use infra::store::{CancelReason, Condition};
use infra::table::Action;
use serde::{Deserialize, Serialize};
use serde_json::json;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Register {
    pub email: String,
    /// Kept out of `Debug`.
    pub password: Secret,
    pub display_name: String,
    pub timezone: String,
    #[serde(default)]
    pub units: Units,
}

/// A valid sign-up, its password not hashed yet (hashing is slow: only valid input
/// pays for it).
#[derive(Debug)]
struct SignUp {
    email: String,
    display_name: String,
    timezone: String,
    units: Units,
}

/// The sign-up `input` asks for: an email, a password of 10 to 256 characters, a
/// display name of 1 to 80, a known timezone; an invalid-field error otherwise.
fn sign_up(input: &Register) -> Result<SignUp, CommandError> {
    let email = validate::email("email", &input.email)?;
    validate_password(input.password.expose())?;
    let display_name = validate::text("display_name", &input.display_name, 1, 80)?;
    validate::timezone("timezone", &input.timezone)?;
    Ok(SignUp {
        email,
        display_name,
        timezone: input.timezone.clone(),
        units: input.units,
    })
}

impl SignUp {
    /// The account `user` opens: its profile (active, version 1, the password only as
    /// `password_hash`) and its writes, the profile and the email's reservation, each
    /// only if free (the reservation second: its failure means the email is taken).
    fn account(
        self,
        user: UserId,
        password_hash: String,
    ) -> Result<(Profile, Vec<Action>), CommandError> {
        let profile = Profile {
            user_id: user.clone(),
            email_pk: self.email.clone(),
            email: self.email,
            display_name: self.display_name,
            timezone: self.timezone,
            units: self.units,
            password_hash: Secret::new(password_hash),
            status: AccountStatus::Active,
            version: 1,
            latest_session: None,
            credential_generation: 0,
        };
        let actions = vec![
            Action::Put {
                item: to_item(&profile_key(&user), &profile)?,
                condition: Some(Condition::ItemNotExists),
            },
            reservation(&profile.email, &user)?,
        ];
        Ok((profile, actions))
    }
}

impl IdentityCommands {
    /// Creates an account: profile + email reservation + event in one transaction.
    /// `meta.user` is ignored; the new user's id is returned.
    pub async fn register(
        &self,
        meta: &CommandMeta,
        input: Register,
    ) -> Result<Outcome<UserId>, CommandError> {
        let signed_up = self.sign_up(meta, input).await?;
        Ok(Outcome {
            value: signed_up.value.user,
            replayed: signed_up.replayed,
        })
    }

    /// [`Self::register`], answering who signed up with the credentials they proved,
    /// for their first session (a keyed retry proves the password again).
    pub async fn sign_up(
        &self,
        meta: &CommandMeta,
        input: Register,
    ) -> Result<Outcome<SignedIn>, CommandError> {
        let valid = sign_up(&input)?;
        let user = UserId::generate();
        let password_hash = password::hash(input.password.expose().to_owned()).await?;
        let (profile, mut actions) = valid.account(user.clone(), password_hash)?;
        let email = profile.email.clone();
        let meta = CommandMeta {
            user: user.clone(),
            ..meta.clone()
        };
        let event = envelope(
            &meta,
            &self.clock,
            self.clock.now(),
            &UserRegistered {
                profile: profile.state(),
            },
        )?;
        // Third: a cancelled sign-up reads the reservation's reason at index 1.
        actions.push(event_action(&meta.user_pk(), &event)?);
        // The password is not part of the request fingerprint: it is never stored,
        // not even hashed with a fast hash.
        let fingerprint = json!({"email": email, "display_name": profile.display_name, "timezone": profile.timezone, "units": profile.units});
        let record_pk = email_key(&email).pk;
        let committed = optimistic::commit_through_conflicts(
            &self.table,
            &meta,
            &record_pk,
            &fingerprint,
            actions,
            user.clone(),
        );
        let outcome = match committed.await? {
            Committed::Cancelled(reasons)
                if matches!(reasons.get(1), Some(CancelReason::ConditionFailed { .. })) =>
            {
                return Err(CommandError::EmailTaken);
            }
            committed => committed.or_unexpected()?,
        };
        // A retry of an earlier sign-up signs in only with that sign-up's password: the
        // record holds no secret, so it proves nothing on its own.
        if outcome.replayed {
            return self
                .confirm_retry(&email, outcome.value, input.password.expose().to_owned())
                .await;
        }
        Ok(Outcome::new(SignedIn::proved(&profile)))
    }

    /// The account an earlier sign-up with this key created, if it still has this email
    /// and the password verifies; otherwise the email is simply taken.
    async fn confirm_retry(
        &self,
        email: &str,
        user: UserId,
        password: String,
    ) -> Result<Outcome<SignedIn>, CommandError> {
        let profile = match self.profile(&user).await {
            Ok(profile) => profile,
            Err(CommandError::NotFound(_)) => return Err(CommandError::EmailTaken),
            Err(e) => return Err(e),
        };
        if profile.email != email || profile.status != AccountStatus::Active {
            return Err(CommandError::EmailTaken);
        }
        if !profile.has_password(&password).await? {
            return Err(CommandError::EmailTaken);
        }
        Ok(Outcome::replayed(SignedIn::proved(&profile)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::identity::profile::fixtures::profile;

    fn ana_signs_up() -> Register {
        Register {
            email: "ana@example.com".into(),
            password: "correct horse battery".into(),
            display_name: "Ana".into(),
            timezone: "Europe/Paris".into(),
            units: Units::Metric,
        }
    }

    #[test]
    fn a_sign_up_opens_an_active_profile_and_reserves_its_email() {
        let user = UserId::generate();
        let (opened, actions) = sign_up(&ana_signs_up())
            .expect("valid")
            .account(user.clone(), "argon2-hash".into())
            .expect("account");
        let never_signed_in = Profile {
            latest_session: None,
            ..profile(&user, "ana@example.com", 1)
        };
        assert_eq!(opened, never_signed_in);
        let shown = format!("{opened:?}");
        assert!(
            !shown.contains("argon2-hash"),
            "the hash stays out of logs: {shown}"
        );
        let asked = format!("{:?}", ana_signs_up());
        assert!(
            !asked.contains("correct horse"),
            "so does the password: {asked}"
        );
        assert_eq!(
            actions,
            vec![
                Action::Put {
                    item: to_item(&profile_key(&user), &opened).expect("item"),
                    condition: Some(Condition::ItemNotExists),
                },
                // Second: the command reads a taken email from this action's reason.
                reservation("ana@example.com", &user).expect("reservation"),
            ]
        );
        assert!(
            !format!("{actions:?}").contains("correct horse"),
            "the password is not stored"
        );
    }

    #[test]
    fn a_sign_up_out_of_range_names_its_field() {
        type Spoil = fn(&mut Register);
        let cases: [(Spoil, &str); 6] = [
            (|r| r.email = "not an email".into(), "email"),
            (|r| r.password = "short".into(), "password"),
            (|r| r.password = "x".repeat(257).into(), "password"),
            (|r| r.display_name = String::new(), "display_name"),
            (|r| r.display_name = "x".repeat(81), "display_name"),
            (|r| r.timezone = "Mars/Olympus".into(), "timezone"),
        ];
        for (spoil, field) in cases {
            let mut input = ana_signs_up();
            spoil(&mut input);
            let error = sign_up(&input).expect_err(field);
            assert!(error.to_string().contains(field), "{error} names {field}");
        }
    }
}
