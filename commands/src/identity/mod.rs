//! Identity: accounts, emails, profiles, passwords, deletion requests, and the
//! signed-in sessions (`sessions`).
//!
//! Items: `USER#<id>/PROFILE` (with `email_pk` for the `by-email` index, the argon2
//! password hash, status, version, the id of the session started last, the generation
//! of the credentials that access tokens carry) and the reservation `EMAIL#<email>/EMAIL`,
//! which commits together with the profile so two accounts can never share an email;
//! and the tries at a credential this minute, `TRIES#<digest>#<minute>/TRIES` (`tries`),
//! counted by every process together.
//!
//! What a stolen access token could do without the password, it cannot: an email change
//! and a deletion request take the current password, and commit only while it is still
//! the account's; a password or email change moves the credentials on a generation,
//! which ends every access token issued before it (`sessions`).

use crate::idempotency::{self, Committed};
use crate::items::{from_item, to_item};
use crate::meta::{CommandMeta, Outcome};
use crate::optimistic::{self, Attempt};
use crate::outbox::{envelope, event_action};
use crate::secret::Secret;
use crate::{CommandError, password, validate};
use events_schema::envelope::EventEnvelope;
use events_schema::events::identity::{
    AccountDeletionRequested, EmailChanged, ProfileState, ProfileUpdated, Units, UserRegistered,
};
use events_schema::ids::UserId;
use events_schema::keys::{PartitionKey, SortKey};
use events_schema::time::Timestamp;
use infra::store::{CancelReason, Condition, IndexQuery, Key, Query, SortKeyCondition, Update};
use infra::table::{Action, contexts::Identity};
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
    fn still_has_password(&self) -> Condition {
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

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct UpdateProfile {
    pub display_name: Option<String>,
    pub timezone: Option<String>,
    pub units: Option<Units>,
}

impl UpdateProfile {
    /// Checks the change without writing anything: a caller that makes it together with
    /// another (an email change) checks both before writing either.
    pub fn check(&self) -> Result<(), CommandError> {
        self.checked_display_name().map(drop)
    }

    /// The display name as stored (trimmed), after checking every field.
    fn checked_display_name(&self) -> Result<Option<String>, CommandError> {
        let display_name = self
            .display_name
            .as_deref()
            .map(|n| validate::text("display_name", n, 1, 80))
            .transpose()?;
        if let Some(tz) = &self.timezone {
            validate::timezone("timezone", tz)?;
        }
        Ok(display_name)
    }
}

pub(crate) fn profile_key(user: &UserId) -> Key {
    Key::new(
        PartitionKey::User(user.clone()).to_string(),
        SortKey::Profile.to_string(),
    )
}

fn email_key(email: &str) -> Key {
    Key::new(
        PartitionKey::Email(email.to_owned()).to_string(),
        SortKey::Email.to_string(),
    )
}

fn reservation(email: &str, user: &UserId) -> Result<Action, CommandError> {
    let item = to_item(&email_key(email), &json!({"user_id": user}))?;
    Ok(Action::Put {
        item,
        condition: Some(Condition::ItemNotExists),
    })
}

fn validate_password(password: &str) -> Result<(), CommandError> {
    let count = password.chars().count();
    if !(10..=256).contains(&count) {
        return Err(CommandError::invalid(
            "password",
            "must be 10 to 256 characters",
        ));
    }
    Ok(())
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

/// A hash to verify against when the email is unknown, so an unknown email costs the
/// same time as a wrong password and does not reveal which emails are registered.
async fn dummy_hash() -> Result<&'static str, CommandError> {
    static HASH: tokio::sync::OnceCell<String> = tokio::sync::OnceCell::const_new();
    HASH.get_or_try_init(|| password::hash("not a real password".into()))
        .await
        .map(String::as_str)
}

pub(crate) mod sessions;
pub(crate) mod tries;

pub use sessions::{Access, RefreshToken, SESSION_DAYS, SignedIn};
pub use tries::Tried;

/// The identity context's commands: sign-up, sessions, profile, email, deletion.
pub type IdentityCommands = crate::handlers::Handlers<Identity>;

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

    /// Whether `user` asked for their account's deletion (from the request on: the
    /// identity tombstone is written with it). One strongly consistent read.
    pub async fn is_deleted(&self, user: &UserId) -> Result<bool, CommandError> {
        Ok(self.table.get(&Key::tombstone(user), true).await?.is_some())
    }

    /// Checks `email` and `password` (one index query): who signed in, with the
    /// credentials they proved (a session starts on them only while they are still the
    /// account's).
    pub async fn login(&self, email: &str, password: &str) -> Result<SignedIn, CommandError> {
        let email =
            validate::email("email", email).map_err(|_| CommandError::InvalidCredentials)?;
        let page = self
            .table
            .query_index(&IndexQuery::partition("by-email", &email).limit(1))
            .await?;
        let Some(item) = page.items.into_iter().next() else {
            password::verify(password.to_owned(), dummy_hash().await?.to_owned()).await?;
            return Err(CommandError::InvalidCredentials);
        };
        let profile: Profile = from_item(item)?;
        if !profile.has_password(password).await? {
            return Err(CommandError::InvalidCredentials);
        }
        if profile.status != AccountStatus::Active {
            return Err(CommandError::AccountDeleted);
        }
        Ok(SignedIn::proved(&profile))
    }

    pub async fn profile(&self, user: &UserId) -> Result<Profile, CommandError> {
        self.record(&profile_key(user), "profile").await
    }

    /// `user`'s profile, read to make a change that `password`, the current password,
    /// proves: `InvalidCredentials` when it is not the account's.
    async fn proved_by(&self, user: &UserId, password: &str) -> Result<Profile, CommandError> {
        let profile = self.profile(user).await?;
        if !profile.has_password(password).await? {
            return Err(CommandError::InvalidCredentials);
        }
        Ok(profile)
    }

    /// Moves the account to a new email, proved by the current password (a wrong one:
    /// `InvalidCredentials`, nothing written): the old reservation is released and the
    /// new one taken in the same transaction as the profile change, which ends every
    /// session and every access token issued before it.
    pub async fn change_email(
        &self,
        meta: &CommandMeta,
        new_email: &str,
        current_password: &str,
    ) -> Result<Outcome<ProfileState>, CommandError> {
        let new_email = validate::email("email", new_email)?;
        let _writer = self.writers.user(&meta.user).await;
        let proved = self.proved_by(&meta.user, current_password).await?;
        optimistic::run!({
            let current = self.profile(&meta.user).await?;
            if current.password_hash != proved.password_hash {
                // The password changed since it was checked: the one given is not the
                // account's any more.
                return Err(CommandError::InvalidCredentials);
            }
            if current.email == new_email {
                return Ok(Attempt::Done(Outcome::replayed(current.state())));
            }
            // The sign-up's request records live under the old email: they go with it.
            let records = self
                .registration_records(&current.email, &meta.user)
                .await?;
            let next = Profile {
                email: new_email.clone(),
                email_pk: new_email.clone(),
                version: current.version + 1,
                ..current.clone()
            };
            let event = self.event_now(
                meta,
                &EmailChanged {
                    old_email: current.email.clone(),
                    profile: next.state(),
                },
            )?;
            let mut actions = email_change(&meta.user, &current, &next, &event, records)?;
            // A new email ends every session: whoever signs in again signs in to it.
            actions.extend(self.end_every_session(&meta.user).await?);
            match idempotency::commit(
                &self.table,
                meta,
                &meta.user_pk(),
                &json!({"email": new_email}),
                actions,
                next.state(),
            )
            .await?
            {
                Committed::Done(outcome) => Ok(Attempt::Done(outcome)),
                Committed::Cancelled(reasons) => email_change_cancelled(&reasons),
            }
        })
    }

    /// The registration request records of `user` kept under `email`'s partition.
    async fn registration_records(
        &self,
        email: &str,
        user: &UserId,
    ) -> Result<Vec<Key>, CommandError> {
        let query = Query::partition(email_key(email).pk)
            .sort_key(SortKeyCondition::BeginsWith("IDEMPOTENCY#".into()))
            .consistent();
        let page = self.table.query(&query).await?;
        Ok(page
            .items
            .iter()
            .filter(|record| record.get("response") == Some(&json!(user)))
            .filter_map(|record| Key::of(record).ok())
            .collect())
    }

    /// Changes display name, timezone or units; no event when nothing changes.
    pub async fn update_profile(
        &self,
        meta: &CommandMeta,
        input: UpdateProfile,
    ) -> Result<Outcome<ProfileState>, CommandError> {
        let display_name = input.checked_display_name()?;
        let _writer = self.writers.user(&meta.user).await;
        optimistic::run!({
            let current = self.profile(&meta.user).await?;
            let Some((update, next)) = profile_update(&current, display_name.clone(), &input)
            else {
                return Ok(Attempt::Done(Outcome::replayed(current.state())));
            };
            let event = self.event_now(
                meta,
                &ProfileUpdated {
                    profile: next.state(),
                },
            )?;
            let actions = vec![update, event_action(&meta.user_pk(), &event)?];
            optimistic::settled(
                idempotency::commit(
                    &self.table,
                    meta,
                    &meta.user_pk(),
                    &input,
                    actions,
                    next.state(),
                )
                .await?,
            )
        })
    }

    /// Records the request to delete the account (the drain comes later), proved by the
    /// current password (a wrong one: `InvalidCredentials`, nothing written). Login is
    /// refused from now on; asking again publishes nothing new.
    pub async fn request_deletion(
        &self,
        meta: &CommandMeta,
        current_password: &str,
    ) -> Result<Outcome<()>, CommandError> {
        let _writer = self.writers.user(&meta.user).await;
        let proved = self.proved_by(&meta.user, current_password).await?;
        optimistic::run!({
            let current = self.profile(&meta.user).await?;
            if current.password_hash != proved.password_hash {
                return Err(CommandError::InvalidCredentials);
            }
            if current.status == AccountStatus::DeletionRequested {
                return Ok(Attempt::Done(Outcome::replayed(())));
            }
            let event = self.event_now(
                meta,
                &AccountDeletionRequested {
                    email: current.email.clone(),
                },
            )?;
            let (marked, tombstone) = deletion_request(&current, self.clock.now());
            let mut actions = vec![marked, event_action(&meta.user_pk(), &event)?, tombstone];
            actions.extend(self.end_every_session(&meta.user).await?);
            optimistic::settled(
                idempotency::commit(
                    &self.table,
                    meta,
                    &meta.user_pk(),
                    &json!("delete"),
                    actions,
                    (),
                )
                .await?,
            )
        })
    }
}

/// A new erasure tombstone for `user`: `status` `erasing`, no context drained yet.
fn erasure_tombstone(user: &UserId, now: Timestamp) -> infra::store::Item {
    let key = Key::tombstone(user);
    let mut item = key.to_item();
    item.insert("status".into(), json!("erasing"));
    item.insert("requested_at".into(), json!(now));
    item
}

/// What asking to delete `current`'s account writes (event and sessions aside): the
/// profile marked, if still at the version read and with the password read (the one the
/// request was proved with), and identity's tombstone: from then on no command writes
/// the user's identity items, and the erasure's progress is recorded there (no personal
/// data, only which contexts are done).
fn deletion_request(current: &Profile, now: Timestamp) -> (Action, Action) {
    let marked = Action::Update {
        key: profile_key(&current.user_id),
        update: Update::default()
            .set("status", json!(AccountStatus::DeletionRequested))
            .set("version", current.version + 1),
        condition: Some(Condition::All(vec![
            Condition::VersionEquals(current.version),
            current.still_has_password(),
        ])),
    };
    let tombstone = Action::Put {
        item: erasure_tombstone(&current.user_id, now),
        condition: None,
    };
    (marked, tombstone)
}

/// The profile `input` makes of `current` (`display_name` already checked) and its
/// write, if still at the version read; None when nothing changes.
fn profile_update(
    current: &Profile,
    display_name: Option<String>,
    input: &UpdateProfile,
) -> Option<(Action, Profile)> {
    let mut next = current.clone();
    next.display_name = display_name.unwrap_or(next.display_name);
    next.timezone = input.timezone.clone().unwrap_or(next.timezone);
    next.units = input.units.unwrap_or(next.units);
    if &next == current {
        return None;
    }
    next.version += 1;
    let update = Action::Update {
        key: profile_key(&current.user_id),
        update: Update::default()
            .set("display_name", next.display_name.clone())
            .set("timezone", next.timezone.clone())
            .set("units", json!(next.units))
            .set("version", next.version),
        condition: Some(Condition::VersionEquals(current.version)),
    };
    Some((update, next))
}

/// What moving `current`'s account to `next`'s email writes (sessions aside): the profile
/// if still at the version read and with the password read (the one the change was
/// proved with), its credentials a generation on (every access token issued before
/// ends), the old email's reservation released if still this user's, the new one taken
/// (the third action: its failure with the profile as read means the email is taken),
/// the event, and the sign-up's request records under the old email deleted.
fn email_change(
    user: &UserId,
    current: &Profile,
    next: &Profile,
    event: &EventEnvelope,
    records: Vec<Key>,
) -> Result<Vec<Action>, CommandError> {
    let mut actions = vec![
        Action::Update {
            key: profile_key(user),
            update: Update::default()
                .set("email", next.email.clone())
                .set("email_pk", next.email.clone())
                .set("version", next.version)
                .add(CREDENTIAL_GENERATION, 1),
            // No session may start meanwhile: this ends every session read.
            condition: Some(Condition::All(vec![
                Condition::VersionEquals(current.version),
                sessions::latest_session_is(current),
                current.still_has_password(),
            ])),
        },
        Action::Delete {
            key: email_key(&current.email),
            condition: Some(Condition::AttributeEquals("user_id".into(), json!(user))),
        },
        reservation(&next.email, user)?,
        event_action(&PartitionKey::User(user.clone()).to_string(), event)?,
    ];
    actions.extend(records.into_iter().map(|key| Action::Delete {
        key,
        condition: None,
    }));
    Ok(actions)
}

/// What a cancelled email change (laid out by [`email_change`]) means.
fn email_change_cancelled<T>(reasons: &[CancelReason]) -> Result<Attempt<T>, CommandError> {
    match reasons {
        // The profile changed since it was read, or another transaction was writing it
        // (a conflict): read it again. Its new email's reservation may have failed too,
        // and still not be someone else's: another process may have moved this account
        // to the same email first, which the re-read finds done.
        [
            CancelReason::ConditionFailed { .. } | CancelReason::Conflict,
            ..,
        ] => Ok(Attempt::LostRace),
        // The profile was as read, the new email's reservation was not: someone else
        // has the email.
        [
            CancelReason::None,
            _,
            CancelReason::ConditionFailed { .. },
            ..,
        ] => Err(CommandError::EmailTaken),
        // The transaction met another on an item (the key's record, say): nothing was
        // written, try again.
        other if other.contains(&CancelReason::Conflict) => Ok(Attempt::LostRace),
        other => Err(idempotency::unexpected(other)),
    }
}

/// The calls this module makes, as declared access patterns (see `infra::access`).
pub(crate) mod access {
    use crate::idempotency::command_tx;
    use events_schema::Context::Identity as IDENTITY;
    use infra::access::{AccessPattern as P, Action::*, Op, Order::Forward, Sk, Written as W};

    /// The identity commands' calls: sign-up, profile changes, the deletion request.
    pub static ACCESS: &[P] = &[
        P::transact(
            "sign up",
            command_tx!(Identity, "EMAIL#", [
                W::new(Put, IDENTITY, "USER#", "PROFILE"),
                W::new(Put, IDENTITY, "EMAIL#", "EMAIL"),
                W::new(Put, IDENTITY, "USER#", "EVT#"),
            ]),
            "POST /v1/auth/register",
        )
        .volume(0.01)
        .size(3, 600),
        P::new(
            "a sign-up retried",
            IDENTITY,
            Op::query(Forward, false, true),
            "EMAIL#",
            Sk::prefix("IDEMPOTENCY#"),
            "POST /v1/auth/register with an Idempotency-Key; erasure's last step (the user's records)",
        )
        .volume(0.01),
        P::new(
            "the account of an email",
            IDENTITY,
            Op::query_index("by-email", Forward, true),
            infra::access::EMAIL,
            Sk::Whole,
            "POST /v1/auth/login",
        )
        .volume(0.3)
        .size(1, 400),
        P::new(
            "the profile, to decide",
            IDENTITY,
            Op::get(true),
            "USER#",
            Sk::exact("PROFILE"),
            "PATCH /v1/me/profile, POST /v1/me/password, DELETE /v1/me, token checks, erasure's last step",
        )
        .volume(2.0)
        .size(1, 600),
        P::transact(
            "change the profile",
            command_tx!(Identity, "USER#", [
                W::new(Update, IDENTITY, "USER#", "PROFILE"),
                W::new(Put, IDENTITY, "USER#", "EVT#"),
            ]),
            "PATCH /v1/me/profile",
        )
        .volume(0.05)
        .size(2, 700),
        P::transact(
            "change the email",
            command_tx!(Identity, "USER#", [
                W::new(Update, IDENTITY, "USER#", "PROFILE"),
                W::new(Delete, IDENTITY, "EMAIL#", "EMAIL"),
                W::new(Put, IDENTITY, "EMAIL#", "EMAIL"),
                W::new(Put, IDENTITY, "USER#", "EVT#"),
                W::new(Delete, IDENTITY, "USER#", "SESSION#").optional(),
                // The old email's sign-up record: a retried sign-up must not replay it.
                W::new(Delete, IDENTITY, "EMAIL#", "IDEMPOTENCY#").optional(),
            ]),
            "PATCH /v1/me/profile with an email (other sessions end)",
        )
        .volume(0.001)
        .size(5, 600),
        P::transact(
            "ask for the account's deletion",
            &[
                W::new(Update, IDENTITY, "USER#", "PROFILE"),
                W::new(Put, IDENTITY, "USER#", "EVT#"),
                W::new(Put, IDENTITY, "ERASED#", "TOMBSTONE"),
                W::new(Delete, IDENTITY, "USER#", "SESSION#").optional(),
                W::new(Put, IDENTITY, "USER#", "IDEMPOTENCY#").optional(),
            ],
            "DELETE /v1/me",
        )
        .volume(0.0003)
        .size(4, 500),
    ];
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile(user: &UserId, email: &str, version: u64) -> Profile {
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

    #[test]
    fn an_email_change_moves_the_reservation_with_the_profile() {
        // Given Ana's profile at version 3 under ana@old.example,
        let user = UserId::generate();
        let current = profile(&user, "ana@old.example", 3);
        // when she moves to ana@new.example (one sign-up record under the old email),
        let next = Profile {
            email: "ana@new.example".into(),
            email_pk: "ana@new.example".into(),
            version: 4,
            ..current.clone()
        };
        let event = EventEnvelope::new(
            Some(user.clone()),
            Timestamp::now(),
            &EmailChanged {
                old_email: current.email.clone(),
                profile: next.state(),
            },
        )
        .expect("event");
        let record = Key::new("EMAIL#ana@old.example", "REQ#sign-up");
        let actions =
            email_change(&user, &current, &next, &event, vec![record.clone()]).expect("decide");
        // then the profile changes if still at version 3,
        assert_eq!(actions.len(), 5);
        match &actions[0] {
            Action::Update {
                key,
                update,
                condition,
            } => {
                assert_eq!(key, &profile_key(&user));
                assert_eq!(update.set["email"], json!("ana@new.example"));
                assert_eq!(update.set["email_pk"], json!("ana@new.example"));
                assert_eq!(update.set["version"], json!(4));
                // her credentials a generation on: every access token issued before ends;
                assert_eq!(update.add, vec![(CREDENTIAL_GENERATION.to_owned(), 1)]);
                // and no session started since the read (S1 the latest): it ends them; and
                // the password is still the one she proved the change with.
                let latest = Condition::AttributeEquals("latest_session".into(), json!("S1"));
                let proved =
                    Condition::AttributeEquals("password_hash".into(), json!("argon2-hash"));
                let unchanged = Condition::All(vec![Condition::VersionEquals(3), latest, proved]);
                assert_eq!(condition, &Some(unchanged));
            }
            other => panic!("not an update: {other:?}"),
        }
        // the old reservation goes only if it is still hers,
        match &actions[1] {
            Action::Delete { key, condition } => {
                assert_eq!(key, &email_key("ana@old.example"));
                assert_eq!(
                    condition,
                    &Some(Condition::AttributeEquals("user_id".into(), json!(user)))
                );
            }
            other => panic!("not a delete: {other:?}"),
        }
        // the new one is taken only if free (third: its failure alone: "email taken"),
        assert_eq!(
            actions[2],
            reservation("ana@new.example", &user).expect("reservation")
        );
        // the event is published, and the sign-up's record goes with the old email.
        assert!(matches!(&actions[3], Action::Put { .. }));
        assert_eq!(
            actions[4],
            Action::Delete {
                key: record,
                condition: None
            }
        );
    }

    #[test]
    fn a_cancelled_email_change_reads_again_unless_only_the_new_email_was_refused() {
        use CancelReason::{ConditionFailed, Conflict, None as Fine};
        let failed = || ConditionFailed { existing: None };
        let verdict = |reasons: Vec<CancelReason>| match email_change_cancelled::<()>(&reasons) {
            Ok(Attempt::LostRace) => "read again",
            Ok(Attempt::Done(())) => unreachable!("a cancellation is never done"),
            Err(CommandError::EmailTaken) => "email taken",
            Err(_) => "error",
        };
        // Given the reasons of profile, old reservation, new reservation, event, then
        // the sign-up records and sessions (and a conflict `commit` met at the key's
        // record or the erasure check, appended last):
        // the new email refused while the profile was as read: someone else has it,
        // whatever met the key's record;
        assert_eq!(
            verdict(vec![Fine, Fine, failed(), Fine, Fine]),
            "email taken"
        );
        assert_eq!(
            verdict(vec![Fine, Fine, failed(), Fine, Conflict]),
            "email taken"
        );
        // the profile moved on, or was being written, whatever else failed with it
        // (another process may have moved the account to this very email): read again;
        assert_eq!(
            verdict(vec![failed(), failed(), failed(), Fine]),
            "read again"
        );
        assert_eq!(verdict(vec![Conflict, Fine, failed(), Fine]), "read again");
        assert_eq!(verdict(vec![failed(), Fine, Fine, Fine]), "read again");
        // a conflict anywhere (the key's record, say): read again;
        assert_eq!(
            verdict(vec![Fine, Fine, Fine, Fine, Conflict]),
            "read again"
        );
        // the old reservation alone refused is not a state a read explains.
        assert_eq!(verdict(vec![Fine, failed(), Fine, Fine]), "error");
    }

    #[test]
    fn a_profile_update_writes_only_what_changes_the_profile() {
        let user = UserId::generate();
        let current = profile(&user, "ana@example.com", 5);
        // Given a profile in Paris, metric, at version 5: moving it to Lisbon
        let input = UpdateProfile {
            display_name: None,
            timezone: Some("Europe/Lisbon".into()),
            units: None,
        };
        let (update, next) = profile_update(&current, None, &input).expect("a change");
        // makes version 6 with the new timezone, written if still at version 5;
        assert_eq!((next.timezone.as_str(), next.version), ("Europe/Lisbon", 6));
        assert_eq!(next.display_name, current.display_name);
        match update {
            Action::Update {
                key,
                update,
                condition,
            } => {
                assert_eq!(key, profile_key(&user));
                assert_eq!(update.set["timezone"], json!("Europe/Lisbon"));
                assert_eq!(update.set["version"], json!(6));
                assert_eq!(condition, Some(Condition::VersionEquals(5)));
            }
            other => panic!("not an update: {other:?}"),
        }
        // asking for what it already is writes nothing.
        let same = UpdateProfile {
            display_name: Some("Ana".into()),
            timezone: Some("Europe/Paris".into()),
            units: Some(Units::Metric),
        };
        assert!(profile_update(&current, Some("Ana".into()), &same).is_none());
    }

    #[test]
    fn a_deletion_request_marks_the_profile_and_lays_the_tombstone() {
        // Given Ana's active profile at version 2,
        let user = UserId::generate();
        let current = profile(&user, "ana@example.com", 2);
        // when she asks to delete her account,
        let now = Timestamp::now();
        let (marked, tombstone) = deletion_request(&current, now);
        // then the profile is marked if still at version 2, with the password she proved
        // the request with,
        match marked {
            Action::Update {
                key,
                update,
                condition,
            } => {
                assert_eq!(key, profile_key(&user));
                assert_eq!(
                    update.set["status"],
                    json!(AccountStatus::DeletionRequested)
                );
                assert_eq!(update.set["version"], json!(3));
                let proved =
                    Condition::AttributeEquals("password_hash".into(), json!("argon2-hash"));
                let unchanged = Condition::All(vec![Condition::VersionEquals(2), proved]);
                assert_eq!(condition, Some(unchanged));
            }
            other => panic!("not an update: {other:?}"),
        }
        // and the tombstone goes under the erasure key, holding no email or name.
        match tombstone {
            Action::Put { item, condition } => {
                assert_eq!(Key::of(&item).expect("key"), Key::tombstone(&user));
                let text = serde_json::to_string(&item).expect("json");
                assert!(
                    !text.contains("ana@example.com") && !text.contains("Ana"),
                    "{text}"
                );
                assert_eq!(condition, None);
            }
            other => panic!("not a put: {other:?}"),
        }
    }

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
