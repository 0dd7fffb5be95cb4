//! Signed-in sessions, for a phone that stays signed in for weeks: each sign-in starts a
//! session whose refresh token (`<user-id>.<session-id>.<secret>`, 256 random bits of
//! secret) exchanges for a new access token and a new refresh token, once: it is rotated
//! on use. Only the secret's SHA-256 is stored (`USER#<id>/SESSION#<session-id>`), so
//! the table holds nothing a client could present. A token presented a second time (a
//! stolen one, or a replay) ends its session. Sessions end on logout, on a password or
//! email change and on the account's deletion, and expire after [`SESSION_DAYS`].

use super::{AccountStatus, IdentityCommands, profile_key};
use crate::items::to_item;
use crate::{CommandError, password};
use events_schema::events::identity::PasswordChanged;
use events_schema::ids::{SessionId, UserId};
use events_schema::keys::{PartitionKey, SortKey, prefix};
use infra::store::{
    Condition, Key, Query, SortKeyCondition, StoreError, Update, now_epoch_seconds,
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

/// The profile is still an active account's.
fn still_active(user: &UserId) -> Action {
    Action::Check {
        key: profile_key(user),
        condition: Condition::AttributeEquals("status".into(), json!(AccountStatus::Active)),
    }
}

impl IdentityCommands {
    /// Starts a session for `user` (after a sign-up or a sign-in); returns its first
    /// refresh token. Refused once the account's deletion is requested.
    pub async fn start_session(&self, user: &UserId) -> Result<RefreshToken, CommandError> {
        let session = SessionId::generate();
        let secret = fresh_secret();
        let now = self.clock.now();
        let mut item = to_item(
            &session_key(user, &session),
            &json!({"secret_hash": digest(&secret), "started_at": now, "used_at": now}),
        )?;
        item.insert(
            "expires_at".into(),
            json!(now_epoch_seconds() + SESSION_DAYS * 86_400),
        );
        let mut actions = vec![
            Action::Put {
                item,
                condition: Some(Condition::ItemNotExists),
            },
            still_active(user),
        ];
        // The oldest sessions past the limit end (session ids are time-ordered).
        let sessions = self.session_keys(user).await?;
        let surplus = (sessions.len() + 1).saturating_sub(MAX_SESSIONS);
        actions.extend(
            sessions
                .into_iter()
                .take(surplus)
                .map(|key| Action::Delete {
                    key,
                    condition: None,
                }),
        );
        match self.table.transact(actions).await {
            Ok(()) => Ok(RefreshToken(format!("{user}.{session}.{secret}"))),
            Err(StoreError::TransactionCanceled { .. }) => Err(CommandError::AccountDeleted),
            Err(e) => Err(e.into()),
        }
    }

    /// Exchanges a refresh token for the user and the session's next refresh token. A
    /// token that is not the session's current one ends the session.
    pub async fn refresh_session(
        &self,
        token: &str,
    ) -> Result<(UserId, RefreshToken), CommandError> {
        let presented = Presented::parse(token)?;
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
        let presented_hash = digest(&presented.secret);
        if !bool::from(subtle::ConstantTimeEq::ct_eq(
            stored.as_bytes(),
            presented_hash.as_bytes(),
        )) {
            // Presented again after it was rotated: whoever holds the chain now, it ends.
            self.table.delete(&key, None).await?;
            return Err(refused());
        }
        let secret = fresh_secret();
        let update = Update::default()
            .set("secret_hash", digest(&secret))
            .set("used_at", json!(self.clock.now()))
            .set("expires_at", now_epoch_seconds() + SESSION_DAYS * 86_400);
        let actions = vec![
            Action::Update {
                key,
                update,
                condition: Some(Condition::AttributeEquals(
                    "secret_hash".into(),
                    json!(stored),
                )),
            },
            still_active(&presented.user),
        ];
        match self.table.transact(actions).await {
            Ok(()) => Ok((
                presented.user.clone(),
                RefreshToken(format!("{}.{}.{secret}", presented.user, presented.session)),
            )),
            // Rotated by a concurrent use of the same token, or the account is going.
            Err(StoreError::TransactionCanceled { .. }) => Err(refused()),
            Err(e) => Err(e.into()),
        }
    }

    /// Ends the session of a refresh token (logout); ending an ended one changes nothing.
    pub async fn end_session(&self, token: &str) -> Result<(), CommandError> {
        let presented = Presented::parse(token)?;
        let key = session_key(&presented.user, &presented.session);
        let Some(stored) = self.table.get(&key, true).await? else {
            return Ok(());
        };
        // Only the holder of the current token may end it (not someone guessing ids).
        if stored.get("secret_hash").and_then(Value::as_str) != Some(&digest(&presented.secret)) {
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
        Ok(self
            .session_keys(user)
            .await?
            .into_iter()
            .map(|key| Action::Delete {
                key,
                condition: None,
            })
            .collect())
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
        let _writer = crate::serial::user(&meta.user).await;
        let profile = self.profile(&meta.user).await?;
        if !password::verify(current.to_owned(), profile.password_hash.clone()).await? {
            return Err(CommandError::invalid(
                "current_password",
                "does not match the account's password",
            ));
        }
        let hash = password::hash(new.to_owned()).await?;
        let now = self.clock.now();
        let event =
            crate::outbox::envelope(meta, &self.clock, now, &PasswordChanged { changed_at: now })?;
        let mut actions = vec![
            Action::Update {
                key: profile_key(&meta.user),
                update: Update::default().set("password_hash", hash),
                condition: Some(Condition::AttributeEquals(
                    "password_hash".into(),
                    json!(profile.password_hash),
                )),
            },
            crate::outbox::event_action(&meta.user_pk(), &event)?,
        ];
        actions.extend(self.end_every_session(&meta.user).await?);
        match crate::idempotency::commit(
            &self.table,
            meta,
            &meta.user_pk(),
            &json!("change_password"),
            actions,
            (),
        )
        .await?
        {
            crate::idempotency::Committed::Done(_) => Ok(()),
            crate::idempotency::Committed::Cancelled(_) => Err(CommandError::Contention),
        }
    }
}
