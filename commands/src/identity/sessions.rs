//! Signed-in sessions, for a phone that stays signed in for weeks: each sign-in starts a
//! session whose refresh token (`<user-id>.<session-id>.<secret>`, 256 random bits of
//! secret) exchanges for a new access token and a new refresh token, once: it is rotated
//! on use. Only the secret's SHA-256 is stored (`USER#<id>/SESSION#<session-id>`), so
//! the table holds nothing a client could present. A token presented a second time (a
//! stolen one, or a replay) ends its session. Sessions end on logout, on a password or
//! email change and on the account's deletion, and expire after [`SESSION_DAYS`].
//!
//! A sign-in's session starts only while the account still has the password and email
//! the sign-in checked ([`SignedIn`]), and marks the profile with its id: a change that
//! ends every session commits only while the session it read last is still the latest,
//! so none started meanwhile outlives it.
//!
//! Access tokens (the API's, short-lived) are issued on an [`Access`]: the account and
//! the generation of its credentials (`Profile::credential_generation`) read by the
//! sign-in or refresh that issues it. A password or email change moves the generation on
//! in the same transaction that ends the sessions, and [`IdentityCommands::access_holds`]
//! refuses a token of an earlier generation: a stolen access token stops working at the
//! change, on every process. (A counter, not a time: a token issued in the same second
//! as the change, before it or after, is told apart.)
//!
//! Layout: `credentials` (what a sign-in proved, what an access token is issued on),
//! `tokens` (refresh tokens and their secrets), `writes` (what each session change
//! writes, and what its cancellation means), and here the commands and their access
//! patterns.

mod credentials;
mod tokens;
mod writes;

pub(super) use credentials::latest_session_is;
pub use credentials::{Access, SignedIn};
pub use tokens::RefreshToken;

use super::IdentityCommands;
use super::profile::{AccountStatus, Profile, profile_key, validate_password};
use crate::items::from_item;
use crate::optimistic::{self, Attempt};
use crate::{CommandError, idempotency, password};
use events_schema::events::identity::PasswordChanged;
use events_schema::ids::{SessionId, UserId};
use events_schema::keys::{PartitionKey, prefix};
use infra::store::{Key, Query, SortKeyCondition, StoreError, now_epoch_seconds};
use infra::table::Action;
use serde_json::{Value, json};
use tokens::{Presented, fresh_secret, is_current, refused};
use writes::{
    RotationCancelled, password_change, rotation, rotation_cancelled, session_end, session_key,
    start_cancelled, starting,
};

/// How long a session lasts without being used.
pub const SESSION_DAYS: i64 = 30;

impl IdentityCommands {
    /// Starts a session for `signed_in` (after a sign-up or a sign-in); returns its
    /// first refresh token. Refused once the account's deletion is requested
    /// (`AccountDeleted`), or once the credentials the sign-in checked changed
    /// (`InvalidCredentials`).
    pub async fn start_session(&self, signed_in: &SignedIn) -> Result<RefreshToken, CommandError> {
        let user = &signed_in.user;
        let session = SessionId::generate();
        let secret = fresh_secret();
        let expires_at = now_epoch_seconds() + SESSION_DAYS * 86_400;
        optimistic::run!({
            let existing = self.session_keys(user).await?;
            let now = self.clock.now();
            let actions = starting(signed_in, &session, &secret, now, expires_at, existing)?;
            match self.table.transact(actions).await {
                Ok(()) => Ok(Attempt::Done(RefreshToken(format!(
                    "{user}.{session}.{secret}"
                )))),
                Err(StoreError::TransactionCanceled { reasons }) => start_cancelled(&reasons),
                Err(e) => Err(e.into()),
            }
        })
    }

    /// Exchanges a refresh token for what the next access token is issued on and the
    /// session's next refresh token. A token that is not the session's current one ends
    /// the session.
    pub async fn refresh_session(
        &self,
        token: &str,
    ) -> Result<(Access, RefreshToken), CommandError> {
        let presented = Presented::parse(token)?;
        // The credentials' generation is read before the rotation: a change that ends
        // this session commits either before the rotation (which then finds the session
        // gone) or after it, and then after this read, so the token issued on it ends
        // with the change.
        let access = match self.table.get(&profile_key(&presented.user), true).await? {
            Some(profile) => Access::of(&from_item::<Profile>(profile)?),
            None => return Err(refused()),
        };
        let key = session_key(&presented.user, &presented.session);
        let stored = self
            .table
            .get(&key, true)
            .await?
            .and_then(|s| {
                s.get("secret_hash")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            })
            .ok_or_else(refused)?;
        let secret = fresh_secret();
        let expires_at = now_epoch_seconds() + SESSION_DAYS * 86_400;
        let Some(actions) = rotation(&presented, &stored, &secret, self.clock.now(), expires_at)
        else {
            // Presented again after it was rotated: whoever holds the chain now, it ends.
            self.table.delete(&key, None).await?;
            return Err(refused());
        };
        let user = &presented.user;
        optimistic::run!({
            let reasons = match self.table.transact(actions.clone()).await {
                Ok(()) => {
                    let next = RefreshToken(format!("{user}.{}.{secret}", presented.session));
                    return Ok(Attempt::Done((access.clone(), next)));
                }
                Err(StoreError::TransactionCanceled { reasons }) => reasons,
                Err(e) => return Err(e.into()),
            };
            match rotation_cancelled(&reasons) {
                RotationCancelled::Conflict => Ok(Attempt::LostRace),
                RotationCancelled::Reused => {
                    // The same token rotated first by another presentation: a reuse, as
                    // if this one had come a moment later.
                    self.table.delete(&key, None).await?;
                    Err(refused())
                }
                RotationCancelled::Inactive => Err(refused()),
                RotationCancelled::Unexpected => Err(idempotency::unexpected(&reasons)),
            }
        })
    }

    /// Whether an access token of `user` issued at `generation` of their credentials
    /// still holds: `AccountDeleted` once the account's deletion is requested, false once
    /// a password or email change moved the credentials past `generation`. One strongly
    /// consistent `GetItem` of the profile, which answers both (its status is set in the
    /// same transaction as the erasure tombstone); the tombstone is read too only when
    /// there is no profile (an erased account). Nothing is cached: a token refused here is
    /// refused by every process from the change on.
    ///
    /// A user with neither profile nor tombstone never had an account here (tests mint
    /// such tokens): nothing to revoke, the token holds.
    pub async fn access_holds(&self, user: &UserId, generation: u64) -> Result<bool, CommandError> {
        let Some(item) = self.table.get(&profile_key(user), true).await? else {
            if self.is_deleted(user).await? {
                return Err(CommandError::AccountDeleted);
            }
            return Ok(true);
        };
        let profile: Profile = from_item(item)?;
        if profile.status != AccountStatus::Active {
            return Err(CommandError::AccountDeleted);
        }
        Ok(profile.credential_generation == generation)
    }

    /// Ends the session of a refresh token (logout); ending an ended one changes nothing.
    pub async fn end_session(&self, token: &str) -> Result<(), CommandError> {
        let presented = Presented::parse(token)?;
        let key = session_key(&presented.user, &presented.session);
        let Some(stored) = self.table.get(&key, true).await? else {
            return Ok(());
        };
        // Only the holder of the current token may end it (not someone guessing ids).
        let current = stored.get("secret_hash").and_then(Value::as_str);
        if !current.is_some_and(|current| is_current(&presented, current)) {
            return Err(refused());
        }
        self.table.delete(&key, None).await?;
        Ok(())
    }

    /// The keys of every session of `user`, oldest first.
    pub(in crate::identity) async fn session_keys(
        &self,
        user: &UserId,
    ) -> Result<Vec<Key>, CommandError> {
        let query = Query::partition(PartitionKey::User(user.clone()).to_string())
            .sort_key(SortKeyCondition::BeginsWith(prefix::SESSION.to_owned()))
            .consistent();
        let page = self.table.query(&query).await?;
        Ok(page.items.iter().filter_map(|i| Key::of(i).ok()).collect())
    }

    /// Deletions of every session of `user`, to commit with a change that ends them.
    pub(in crate::identity) async fn end_every_session(
        &self,
        user: &UserId,
    ) -> Result<Vec<Action>, CommandError> {
        let sessions = self.session_keys(user).await?;
        Ok(sessions.into_iter().map(session_end).collect())
    }

    /// Changes the password (the current one must verify); every session ends with it.
    pub async fn change_password(
        &self,
        meta: &crate::CommandMeta,
        current: &str,
        new: &str,
    ) -> Result<(), CommandError> {
        validate_password(new)
            .map_err(|_| CommandError::invalid("new_password", "must be 10 to 256 characters"))?;
        let _writer = self.writers.user(&meta.user).await;
        let profile = self.profile(&meta.user).await?;
        if !profile.has_password(current).await? {
            return Err(CommandError::invalid(
                "current_password",
                "does not match the account's password",
            ));
        }
        let hash = password::hash(new.to_owned()).await?;
        let now = self.clock.now();
        let event =
            crate::outbox::envelope(meta, &self.clock, now, &PasswordChanged { changed_at: now })?;
        let (pk, request) = (meta.user_pk(), json!("change_password"));
        optimistic::run!({
            // Read on every attempt: a session started meanwhile ends with the others.
            let read = self.profile(&meta.user).await?;
            if read.password_hash != profile.password_hash {
                // Changed by another request since `current` was checked: the caller
                // tries again (with the password it knows now).
                return Err(CommandError::Contention);
            }
            let sessions = self.session_keys(&meta.user).await?;
            let mut actions = password_change(&read, hash.clone(), sessions);
            actions.push(crate::outbox::event_action(&pk, &event)?);
            let committed =
                crate::idempotency::commit(&self.table, meta, &pk, &request, actions, ());
            // A failed condition: the password or the latest session moved since the
            // read; the next attempt reads which.
            optimistic::settled(committed.await?)
        })
        .map(|_| ())
    }
}

/// The calls this module makes, as declared access patterns (see `infra::access`).
pub(crate) mod access {
    use crate::idempotency::command_tx;
    use events_schema::Context::Identity as IDENTITY;
    use infra::access::{AccessPattern as P, Action::*, Op, Order::Forward, Sk, Written as W};

    /// The sessions' calls: sign-in, refresh, sign-out, password change.
    pub static ACCESS: &[P] = &[
        P::transact(
            "open a session",
            &[
                W::new(Put, IDENTITY, "USER#", "SESSION#"),
                W::new(Update, IDENTITY, "USER#", "PROFILE"),
            ],
            "POST /v1/auth/login",
        )
        .volume(0.3)
        .size(2, 400),
        P::new(
            "a user's sessions",
            IDENTITY,
            Op::query(Forward, false, true),
            "USER#",
            Sk::prefix("SESSION#"),
            "POST /v1/auth/login (the oldest beyond the cap end), POST /v1/me/password",
        )
        .volume(0.3)
        .size(5, 300),
        P::new(
            "a session",
            IDENTITY,
            Op::get(true),
            "USER#",
            Sk::exact("SESSION#"),
            "POST /v1/auth/refresh, POST /v1/auth/logout",
        )
        .volume(4.0)
        .size(1, 300),
        P::transact(
            "rotate a session's refresh token",
            &[
                W::new(Update, IDENTITY, "USER#", "SESSION#"),
                W::new(Check, IDENTITY, "USER#", "PROFILE"),
            ],
            "POST /v1/auth/refresh",
        )
        .volume(4.0)
        .size(2, 400),
        P::new(
            "end a session",
            IDENTITY,
            Op::Delete,
            "USER#",
            Sk::exact("SESSION#"),
            "POST /v1/auth/logout, a refresh token replayed, the session cap, erasure's last step",
        )
        .volume(0.1)
        .size(1, 300),
        P::transact(
            "change the password",
            command_tx!(
                Identity,
                "USER#",
                [
                    W::new(Update, IDENTITY, "USER#", "PROFILE"),
                    W::new(Delete, IDENTITY, "USER#", "SESSION#").optional(),
                    W::new(Put, IDENTITY, "USER#", "EVT#"),
                ]
            ),
            "POST /v1/me/password (every other session ends)",
        )
        .volume(0.001)
        .size(4, 500),
    ];
}
