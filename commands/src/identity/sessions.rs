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

use super::{AccountStatus, CREDENTIAL_GENERATION, IdentityCommands, Profile, profile_key};
use crate::idempotency;
use crate::items::{from_item, to_item};
use crate::optimistic::{self, Attempt};
use crate::secret::Secret;
use crate::{CommandError, password};
use events_schema::events::identity::PasswordChanged;
use events_schema::ids::{SessionId, UserId};
use events_schema::keys::{PartitionKey, SortKey, prefix};
use events_schema::time::Timestamp;
use infra::store::{
    CancelReason, Condition, Key, Query, SortKeyCondition, StoreError, Update, now_epoch_seconds,
};
use infra::table::Action;
use rand::RngCore;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// How long a session lasts without being used.
pub const SESSION_DAYS: i64 = 30;
/// Sessions one account may hold; signing in past it ends the oldest.
const MAX_SESSIONS: usize = 20;

/// A refresh token, as handed to the client: shown as `***` by `Debug`.
#[derive(Clone, PartialEq, Eq)]
pub struct RefreshToken(String);

impl std::fmt::Debug for RefreshToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RefreshToken(***)")
    }
}

impl RefreshToken {
    pub fn expose(&self) -> &str {
        &self.0
    }
}

/// What an access token is issued on: whose it is, their timezone (the token names it)
/// and the generation of their credentials when the sign-in or refresh read them (the
/// token carries it, and holds only while it is the account's: see
/// [`IdentityCommands::access_holds`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Access {
    pub user: UserId,
    pub timezone: String,
    pub generation: u64,
}

impl Access {
    fn of(profile: &Profile) -> Self {
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
    pub(super) fn proved(profile: &Profile) -> Self {
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
    fn still_holds(&self) -> Condition {
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
pub(super) fn latest_session_is(read: &Profile) -> Condition {
    match &read.latest_session {
        Some(session) => Condition::AttributeEquals("latest_session".into(), json!(session)),
        None => Condition::AttributeNotExists("latest_session".into()),
    }
}

/// A presented refresh token, split.
struct Presented {
    user: UserId,
    session: SessionId,
    secret: String,
}

fn refused() -> CommandError {
    CommandError::InvalidSession
}

impl Presented {
    fn parse(raw: &str) -> Result<Self, CommandError> {
        let mut parts = raw.trim().split('.');
        let (Some(user), Some(session), Some(secret), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(refused());
        };
        let secret_ok = secret.len() == 64 && secret.bytes().all(|b| b.is_ascii_hexdigit());
        match (UserId::parse(user), SessionId::parse(session)) {
            (Ok(user), Ok(session)) if secret_ok => Ok(Self {
                user,
                session,
                secret: secret.to_owned(),
            }),
            _ => Err(refused()),
        }
    }
}

fn digest(secret: &str) -> String {
    hex::encode(Sha256::digest(secret.as_bytes()))
}

fn fresh_secret() -> String {
    let mut bytes = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    hex::encode(bytes)
}

fn session_key(user: &UserId, session: &SessionId) -> Key {
    Key::new(
        PartitionKey::User(user.clone()).to_string(),
        SortKey::Session(session.clone()).to_string(),
    )
}

/// The condition that the profile is an active account's.
fn active() -> Condition {
    Condition::AttributeEquals("status".into(), json!(AccountStatus::Active))
}

/// The profile is still an active account's.
fn still_active(user: &UserId) -> Action {
    Action::Check {
        key: profile_key(user),
        condition: active(),
    }
}

/// Starting `session` for `signed_in` at `now`: its item (the secret's digest only); the
/// profile marked with it as the latest session, on condition that the account still
/// holds what the sign-in proved; and the end of the oldest of the `existing` sessions
/// (oldest first) past [`MAX_SESSIONS`].
fn starting(
    signed_in: &SignedIn,
    session: &SessionId,
    secret: &str,
    now: Timestamp,
    expires_at: i64,
    existing: Vec<Key>,
) -> Result<Vec<Action>, CommandError> {
    let user = &signed_in.user;
    let mut item = to_item(
        &session_key(user, session),
        &json!({"secret_hash": digest(secret), "started_at": now, "used_at": now}),
    )?;
    item.insert("expires_at".into(), json!(expires_at));
    let mut actions = vec![
        Action::Put {
            item,
            condition: Some(Condition::ItemNotExists),
        },
        Action::Update {
            key: profile_key(user),
            update: Update::default().set("latest_session", session.to_string()),
            condition: Some(signed_in.still_holds()),
        },
    ];
    // The oldest sessions past the limit end (session ids are time-ordered).
    let surplus = (existing.len() + 1).saturating_sub(MAX_SESSIONS);
    actions.extend(existing.into_iter().take(surplus).map(session_end));
    Ok(actions)
}

/// Whether `presented` carries its session's current secret, whose digest is `stored`;
/// compared in constant time.
fn is_current(presented: &Presented, stored: &str) -> bool {
    let presented_hash = digest(&presented.secret);
    bool::from(subtle::ConstantTimeEq::ct_eq(
        stored.as_bytes(),
        presented_hash.as_bytes(),
    ))
}

/// Rotating the `presented` token whose session stores `stored` (a digest) to
/// `next_secret`, on condition that nobody rotated it meanwhile and the account is
/// still active; `None` when the presented secret is not the current one (a reuse,
/// which ends the session).
fn rotation(
    presented: &Presented,
    stored: &str,
    next_secret: &str,
    now: Timestamp,
    expires_at: i64,
) -> Option<Vec<Action>> {
    if !is_current(presented, stored) {
        return None;
    }
    let update = Update::default()
        .set("secret_hash", digest(next_secret))
        .set("used_at", json!(now))
        .set("expires_at", expires_at);
    Some(vec![
        Action::Update {
            key: session_key(&presented.user, &presented.session),
            update,
            condition: Some(Condition::AttributeEquals(
                "secret_hash".into(),
                json!(stored),
            )),
        },
        still_active(&presented.user),
    ])
}

/// What a cancelled start of a session (laid out by [`starting`]) means.
fn start_cancelled<T>(reasons: &[CancelReason]) -> Result<Attempt<T>, CommandError> {
    match reasons {
        // The profile's condition: the account is going, or its credentials changed
        // since the sign-in checked them (sign in again).
        [_, CancelReason::ConditionFailed { existing }, ..] => {
            let status = existing.as_ref().and_then(|profile| profile.get("status"));
            if status == Some(&json!(AccountStatus::Active)) {
                Err(CommandError::InvalidCredentials)
            } else {
                Err(CommandError::AccountDeleted)
            }
        }
        _ if CancelReason::conflict_only(reasons) => Ok(Attempt::LostRace),
        // A fresh session's item cannot exist; a backend's own code (throttled, say) is
        // not the account's state.
        other => Err(idempotency::unexpected(other)),
    }
}

/// What a cancelled rotation of a session (laid out by [`rotation`]) means.
#[derive(Debug, PartialEq, Eq)]
enum RotationCancelled {
    /// Another transaction met one of its items and nothing was written: try again.
    Conflict,
    /// The session's secret is no longer the one read (another presentation of the
    /// same token rotated it first), or the session is gone: a reuse, which ends it.
    Reused,
    /// The account is no longer active.
    Inactive,
    /// A backend's own code, which says nothing of the token.
    Unexpected,
}

fn rotation_cancelled(reasons: &[CancelReason]) -> RotationCancelled {
    match reasons {
        [CancelReason::ConditionFailed { .. }, ..] => RotationCancelled::Reused,
        [_, CancelReason::ConditionFailed { .. }, ..] => RotationCancelled::Inactive,
        _ if CancelReason::conflict_only(reasons) => RotationCancelled::Conflict,
        _ => RotationCancelled::Unexpected,
    }
}

/// Changing `read`'s password to `new_hash`: only if nobody changed it meanwhile and no
/// session started since the read, its credentials a generation on (every access token
/// issued before ends), and every one of its `sessions` ends with it.
fn password_change(read: &Profile, new_hash: String, sessions: Vec<Key>) -> Vec<Action> {
    let unchanged = Condition::AttributeEquals("password_hash".into(), json!(read.password_hash));
    let update = Update::default()
        .set("password_hash", new_hash)
        .add(CREDENTIAL_GENERATION, 1);
    let mut actions = vec![Action::Update {
        key: profile_key(&read.user_id),
        update,
        condition: Some(Condition::All(vec![unchanged, latest_session_is(read)])),
    }];
    actions.extend(sessions.into_iter().map(session_end));
    actions
}

/// The end of the session stored under `key`: it is deleted, whatever it holds.
fn session_end(key: Key) -> Action {
    Action::Delete {
        key,
        condition: None,
    }
}

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
    pub(super) async fn session_keys(&self, user: &UserId) -> Result<Vec<Key>, CommandError> {
        let query = Query::partition(PartitionKey::User(user.clone()).to_string())
            .sort_key(SortKeyCondition::BeginsWith(prefix::SESSION.to_owned()))
            .consistent();
        let page = self.table.query(&query).await?;
        Ok(page.items.iter().filter_map(|i| Key::of(i).ok()).collect())
    }

    /// Deletions of every session of `user`, to commit with a change that ends them.
    pub(super) async fn end_every_session(
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
        super::validate_password(new)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> Timestamp {
        Timestamp::parse(text).expect("timestamp")
    }

    /// Ana's profile, signed up with `password_hash`, `latest_session` started last.
    fn profile(user: &UserId, password_hash: &str, latest_session: Option<&str>) -> Profile {
        Profile {
            user_id: user.clone(),
            email: "ana@example.com".into(),
            email_pk: "ana@example.com".into(),
            display_name: "Ana".into(),
            timezone: "Europe/Paris".into(),
            units: events_schema::events::identity::Units::Metric,
            password_hash: Secret::new(password_hash),
            status: AccountStatus::Active,
            version: 2,
            latest_session: latest_session.map(str::to_owned),
            credential_generation: 0,
        }
    }

    fn sessions(user: &UserId, count: usize) -> Vec<Key> {
        (0..count)
            .map(|_| session_key(user, &SessionId::generate()))
            .collect()
    }

    #[test]
    fn who_signed_in_is_logged_by_user_id_only() {
        let user = UserId::generate();
        let shown = format!(
            "{:?}",
            SignedIn::proved(&profile(&user, "$argon2id$h", None))
        );
        assert!(shown.contains(user.as_str()), "{shown}");
        assert!(
            !shown.contains("argon2") && !shown.contains("ana@"),
            "{shown}"
        );
    }

    #[test]
    fn a_refresh_token_is_user_session_and_a_256_bit_hex_secret() {
        let (user, session, secret) = (UserId::generate(), SessionId::generate(), fresh_secret());
        let presented = Presented::parse(&format!(" {user}.{session}.{secret}\n")).expect("valid");
        assert_eq!((&presented.user, &presented.session), (&user, &session));
        assert_eq!(presented.secret, secret);
        for spoiled in [
            String::new(),
            format!("{user}.{session}"),
            format!("{user}.{session}.{secret}.more"),
            format!("{user}.{session}.{}", &secret[1..]),
            format!("{user}.{session}.{}z", &secret[1..]),
            format!("us#er.{session}.{secret}"),
            format!("{user}.\u{7}.{secret}"),
            "\u{1F600}.\u{1F600}.\u{1F600}".to_owned(),
        ] {
            assert!(Presented::parse(&spoiled).is_err(), "{spoiled:?} refused");
        }
    }

    #[test]
    fn a_new_session_stores_only_the_secrets_digest_while_the_sign_in_holds() {
        let (user, session, secret) = (UserId::generate(), SessionId::generate(), fresh_secret());
        let now = at("2026-03-02T08:00:00.000Z");
        let signed_in = SignedIn::proved(&profile(&user, "argon2-hash", None));
        let shown = format!("{signed_in:?}");
        assert!(
            !shown.contains("argon2-hash") && !shown.contains("ana@"),
            "{shown}"
        );
        let actions = starting(
            &signed_in,
            &session,
            &secret,
            now,
            1_000,
            sessions(&user, 3),
        )
        .expect("actions");
        // Given three sessions, when a fourth starts, then none ends.
        assert_eq!(actions.len(), 2);
        let Action::Put { item, condition } = &actions[0] else {
            panic!("a put first: {actions:?}");
        };
        assert_eq!(condition, &Some(Condition::ItemNotExists));
        assert_eq!(item["secret_hash"], digest(&secret).as_str());
        assert!(
            !serde_json::to_string(item).expect("json").contains(&secret),
            "the secret itself is not stored"
        );
        assert_eq!(item["expires_at"], 1_000);
        // The profile marks it the latest session, while the account is active and
        // still has the password and email the sign-in checked.
        let latest = |condition: Condition| Action::Update {
            key: profile_key(&user),
            update: Update::default().set("latest_session", session.to_string()),
            condition: Some(condition),
        };
        let held = |generation: Condition| {
            Condition::All(vec![
                Condition::AttributeEquals("status".into(), json!("active")),
                Condition::AttributeEquals("password_hash".into(), json!("argon2-hash")),
                Condition::AttributeEquals("email".into(), json!("ana@example.com")),
                generation,
            ])
        };
        let first = Condition::AttributeNotExists(CREDENTIAL_GENERATION.into());
        assert_eq!(actions[1], latest(held(first)));
        // Once the credentials changed (twice, say), at the generation the sign-in read.
        let changed = Profile {
            credential_generation: 2,
            ..profile(&user, "argon2-hash", None)
        };
        let signed_in = SignedIn::proved(&changed);
        assert_eq!(signed_in.access().generation, 2);
        let actions = starting(&signed_in, &session, &secret, now, 1_000, vec![]);
        let second = Condition::AttributeEquals(CREDENTIAL_GENERATION.into(), json!(2));
        assert_eq!(actions.expect("actions")[1], latest(held(second)));
    }

    #[test]
    fn signing_in_past_the_limit_ends_the_oldest_sessions() {
        let user = UserId::generate();
        let existing = sessions(&user, MAX_SESSIONS + 1);
        let now = at("2026-03-02T08:00:00.000Z");
        let actions = starting(
            &SignedIn::proved(&profile(&user, "argon2-hash", None)),
            &SessionId::generate(),
            &fresh_secret(),
            now,
            0,
            existing.clone(),
        )
        .expect("actions");
        // Given one session over the limit already, when another starts, then the two
        // oldest end, and only they.
        let ended: Vec<&Key> = actions
            .iter()
            .filter_map(|a| match a {
                Action::Delete { key, .. } => Some(key),
                _ => None,
            })
            .collect();
        assert_eq!(ended, existing.iter().take(2).collect::<Vec<_>>());
    }

    #[test]
    fn only_the_current_secret_rotates_and_the_rotation_is_conditional() {
        let (user, session, secret) = (UserId::generate(), SessionId::generate(), fresh_secret());
        let presented = Presented::parse(&format!("{user}.{session}.{secret}")).expect("valid");
        let stored = digest(&secret);
        let next = fresh_secret();
        let now = at("2026-03-02T08:00:00.000Z");
        let actions = rotation(&presented, &stored, &next, now, 5).expect("the current secret");
        let Action::Update { key, condition, .. } = &actions[0] else {
            panic!("an update first: {actions:?}");
        };
        assert_eq!(key, &session_key(&user, &session));
        assert_eq!(
            condition,
            &Some(Condition::AttributeEquals(
                "secret_hash".into(),
                json!(stored)
            ))
        );
        assert_eq!(actions[1], still_active(&user));
        // Given the session rotated to `next`, when the old secret comes again, then
        // there is nothing to rotate (the caller ends the session).
        assert_eq!(
            rotation(&presented, &digest(&next), &fresh_secret(), now, 5),
            None
        );
    }

    #[test]
    fn a_new_password_replaces_the_one_read_and_ends_every_session() {
        let user = UserId::generate();
        let open = sessions(&user, 3);
        // Given the profile read with session S1 the latest, the new password replaces
        // the old one only while S1 is still the latest session;
        let read = profile(&user, "old-hash", Some("S1"));
        let actions = password_change(&read, "new-hash".into(), open.clone());
        let old = Condition::AttributeEquals("password_hash".into(), json!("old-hash"));
        // its credentials a generation on, which ends every access token issued before;
        let change = |latest: Condition| Action::Update {
            key: profile_key(&user),
            update: Update::default()
                .set("password_hash", "new-hash")
                .add(CREDENTIAL_GENERATION, 1),
            condition: Some(Condition::All(vec![old.clone(), latest])),
        };
        let s1 = Condition::AttributeEquals("latest_session".into(), json!("S1"));
        assert_eq!(actions[0], change(s1));
        // read with no session ever started, while none has started;
        let never = password_change(&profile(&user, "old-hash", None), "new-hash".into(), vec![]);
        let none = Condition::AttributeNotExists("latest_session".into());
        assert_eq!(never[0], change(none));
        // and every session read ends with it.
        let ended: Vec<Action> = open
            .into_iter()
            .map(|key| Action::Delete {
                key,
                condition: None,
            })
            .collect();
        assert_eq!(actions[1..], ended[..]);
    }

    #[test]
    fn only_the_current_secret_is_current() {
        let (user, session, secret) = (UserId::generate(), SessionId::generate(), fresh_secret());
        let presented = Presented::parse(&format!("{user}.{session}.{secret}")).expect("valid");
        assert!(is_current(&presented, &digest(&secret)));
        assert!(!is_current(&presented, &digest(&fresh_secret())));
        // The stored value is a digest: the secret itself is not accepted in its place.
        assert!(!is_current(&presented, &secret));
        assert!(!is_current(&presented, ""));
    }

    #[test]
    fn a_cancelled_start_is_a_deleted_account_only_when_the_accounts_check_failed() {
        use CancelReason::{ConditionFailed, Conflict, None as Fine, Other};
        let failed = || ConditionFailed { existing: None };
        let deleted = |r: &[CancelReason]| {
            matches!(start_cancelled::<()>(r), Err(CommandError::AccountDeleted))
        };
        // Given the reasons of the new session, the profile's condition, then the ends
        // of the oldest sessions: the profile's condition failed with no profile, or an
        // account going, whatever met the others: deleted;
        assert!(deleted(&[Fine, failed()]));
        assert!(deleted(&[Conflict, failed(), Fine]));
        let mut going = to_item(&profile_key(&UserId::generate()), &json!({})).expect("item");
        going.insert("status".into(), json!(AccountStatus::DeletionRequested));
        let going = ConditionFailed {
            existing: Some(going),
        };
        assert!(deleted(&[Fine, going]));
        // with an active account: its credentials changed since the sign-in: sign in
        // again;
        let user = UserId::generate();
        let active = to_item(&profile_key(&user), &profile(&user, "new-hash", None));
        let changed = ConditionFailed {
            existing: Some(active.expect("item")),
        };
        let refused = start_cancelled::<()>(&[Fine, changed]);
        assert!(
            matches!(refused, Err(CommandError::InvalidCredentials)),
            "{refused:?}"
        );
        // a conflict alone: try again;
        let conflict = start_cancelled::<()>(&[Fine, Fine, Conflict]);
        assert!(matches!(conflict, Ok(Attempt::LostRace)));
        // a backend's own code is no account's state.
        let throttled = start_cancelled::<()>(&[Other("ThrottlingError".into()), Fine]);
        assert!(
            matches!(throttled, Err(CommandError::Store(_))),
            "{throttled:?}"
        );
    }

    #[test]
    fn a_rotation_refused_on_the_sessions_secret_is_a_reuse() {
        use CancelReason::{ConditionFailed, Conflict, None as Fine, Other};
        let failed = || ConditionFailed { existing: None };
        // Given the reasons of the session's update, then the account's check:
        // the secret changed since it was read (another presentation of the same
        // token rotated it first): a reuse, which ends the session;
        assert_eq!(
            rotation_cancelled(&[failed(), Fine]),
            RotationCancelled::Reused
        );
        assert_eq!(
            rotation_cancelled(&[failed(), failed()]),
            RotationCancelled::Reused
        );
        // the account is going: refused, the session left to the erasure;
        assert_eq!(
            rotation_cancelled(&[Fine, failed()]),
            RotationCancelled::Inactive
        );
        // a conflict: nothing was written, try again;
        assert_eq!(
            rotation_cancelled(&[Conflict, Fine]),
            RotationCancelled::Conflict
        );
        // a backend's own code says nothing of the token: not a refusal.
        let throttled = [Other("ThrottlingError".into()), Fine];
        assert_eq!(
            rotation_cancelled(&throttled),
            RotationCancelled::Unexpected
        );
    }
}
