//! OAuth connect: start (a single-use state with 256 random bits and a TTL of minutes),
//! complete (state consumed in the same transaction that records the connection and
//! claims the provider identity, which belongs to one account at a time), and
//! disconnect.

use super::IntegrationCommands;
use crate::CommandError;
use crate::idempotency::{self, Committed};
use crate::items::to_item;
use crate::meta::{CommandMeta, Outcome};
use crate::optimistic::{self, Attempt};
use crate::outbox::{envelope, event_action};
use events_schema::events::integrations::{ProviderConnected, ProviderDisconnected};
use events_schema::ids::{OAuthState, ProviderName, ProviderUserId, UserId};
use events_schema::keys::{PartitionKey, SortKey};
use events_schema::time::Timestamp;
use infra::store::{CancelReason, Condition, Key, now_epoch_seconds};
use infra::table::Action;
use rand::RngCore;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// How long a user has to finish authorizing at the provider.
pub const STATE_TTL_SECONDS: i64 = 10 * 60;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConnectStarted {
    pub authorize_url: String,
    pub state: String,
}

/// The pointer to a pending connect's state in the user's partition.
fn state_ref_key(pk: &str, state: &OAuthState) -> Key {
    Key::new(pk, SortKey::OAuthStateRef(state.clone()).to_string())
}

/// The state item of a pending connect (`OAUTH_STATE#<state>`).
pub fn state_key(state: &OAuthState) -> Key {
    Key::new(
        PartitionKey::OAuthState(state.clone()).to_string(),
        SortKey::OAuthState.to_string(),
    )
}

fn connection_key(pk: &str, provider: &ProviderName) -> Key {
    Key::new(pk, SortKey::Connection(provider.clone()).to_string())
}

pub(super) fn provider_user_key(
    provider: &ProviderName,
    provider_user_id: &str,
) -> Result<Key, CommandError> {
    let user = ProviderUserId::parse(provider_user_id)
        .map_err(|e| CommandError::invalid("provider_user_id", e.to_string()))?;
    Ok(Key::new(
        PartitionKey::ProviderUser(provider.clone(), user).to_string(),
        SortKey::ProviderUser.to_string(),
    ))
}

fn unknown_state() -> CommandError {
    CommandError::invalid("state", "unknown, expired or already used")
}

/// The connection item as stored.
#[derive(Debug, Clone, Default, Deserialize)]
struct StoredConnection {
    #[serde(default)]
    provider_user_id: Option<String>,
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    version: u64,
}

impl StoredConnection {
    fn connected(&self) -> bool {
        // Items written before the status was recorded were deleted on disconnect.
        self.status.as_deref() != Some("disconnected")
    }
}

/// The next version of a connection: now in milliseconds, past the previous version, so
/// every change orders after the ones before it (and after events that carry only their
/// recording time).
fn next_version(previous: u64, now: Timestamp) -> u64 {
    (now.millis().max(0) as u64).max(previous + 1)
}

impl IntegrationCommands {
    /// Starts connecting `provider`: stores a fresh state and returns the provider's
    /// authorize URL carrying it. The state remembers the caller's timezone, which names
    /// the days of the data the provider will send.
    pub async fn start_connect(
        &self,
        meta: &CommandMeta,
        provider: &str,
    ) -> Result<Outcome<ConnectStarted>, CommandError> {
        let provider = self.providers.get(provider)?.clone();
        let timezone = meta.timezone.clone().unwrap_or_else(|| "UTC".to_owned());
        crate::validate::timezone("timezone", &timezone)?;
        let mut bytes = [0u8; 32];
        rand::rngs::OsRng.fill_bytes(&mut bytes);
        let state = OAuthState::parse(&hex::encode(bytes))
            .map_err(|e| CommandError::Internal(e.to_string()))?;
        // The store expires items by its own (real) clock, whatever the handlers' clock.
        let expires_at = now_epoch_seconds() + STATE_TTL_SECONDS;
        let mut item = to_item(
            &state_key(&state),
            &json!({"user_id": meta.user, "provider": provider.name(), "timezone": timezone}),
        )?;
        item.insert("expires_at".into(), json!(expires_at));
        let started = ConnectStarted {
            authorize_url: provider.authorize_url(state.as_str()),
            state: state.to_string(),
        };
        // A pointer in the user's partition, so erasing the account finds the state.
        let mut pointer = to_item(&state_ref_key(&meta.user_pk(), &state), &json!({}))?;
        pointer.insert("expires_at".into(), json!(expires_at));
        let actions = vec![
            Action::Put {
                item,
                condition: Some(Condition::ItemNotExists),
            },
            Action::Put {
                item: pointer,
                condition: None,
            },
        ];
        match idempotency::commit(
            &self.table,
            meta,
            &meta.user_pk(),
            &json!({"connect": provider.name()}),
            actions,
            started,
        )
        .await?
        {
            Committed::Done(outcome) => Ok(outcome),
            Committed::Cancelled(reasons) => Err(idempotency::unexpected(&reasons)),
        }
    }

    /// Completes a connect from the provider's callback. The state is single-use: it is
    /// deleted in the transaction that records the connection. A provider identity
    /// belongs to one account at a time: if another account holds it, the connect is
    /// refused (`ProviderIdentityTaken`) and nothing changes; a reconnect as another
    /// provider user releases the identity held before.
    pub async fn complete_connect(
        &self,
        provider: &str,
        state: &str,
        code: &str,
    ) -> Result<Outcome<UserId>, CommandError> {
        let provider = self.providers.get(provider)?.clone();
        let state = OAuthState::parse(state).map_err(|_| unknown_state())?;
        let (user, timezone) = self.pending_connect(provider.name(), &state).await?;
        let grant = provider.exchange_code(code).await?;
        let identity = provider_user_key(provider.name(), &grant.provider_user_id)?;
        let meta = CommandMeta::new(user.clone());
        let _writer = crate::serial::user(&user).await;
        let pk = meta.user_pk();
        optimistic::run!({
            let connection_key = connection_key(&pk, provider.name());
            let existing = self.stored_connection(&connection_key).await?;
            let holder = self.identity_holder(&identity).await?;
            if holder.as_ref().is_some_and(|holder| holder != &user) {
                return Err(CommandError::ProviderIdentityTaken);
            }
            let version =
                next_version(existing.as_ref().map_or(0, |c| c.version), self.clock.now());
            let connected_at = self.clock.now();
            let connection = json!({
                "provider": provider.name(), "provider_user_id": grant.provider_user_id,
                "scopes": grant.scopes, "connected_at": connected_at, "status": "connected",
                "version": version, "timezone": timezone,
            });
            let event = envelope(
                &meta,
                &self.clock,
                connected_at,
                &ProviderConnected {
                    provider: provider.name().clone(),
                    connected_at,
                    scopes: grant.scopes.clone(),
                    version,
                },
            )?;
            let mut actions = vec![
                Action::Delete {
                    key: state_key(&state),
                    condition: Some(Condition::ItemExists),
                },
                Action::Delete {
                    key: state_ref_key(&pk, &state),
                    condition: None,
                },
                Action::Put {
                    item: to_item(&connection_key, &connection)?,
                    condition: Some(replaces(existing.as_ref().map(|c| c.version))),
                },
                identity_put(&identity, &user, &timezone, holder.is_some())?,
                event_action(&pk, &event)?,
            ];
            actions.extend(
                self.released_identity(
                    provider.name(),
                    existing.as_ref(),
                    &grant.provider_user_id,
                    &user,
                )
                .await?,
            );
            match idempotency::commit(&self.table, &meta, &pk, &json!({}), actions, user.clone())
                .await?
            {
                Committed::Done(outcome) => Ok(Attempt::Done(outcome)),
                Committed::Cancelled(reasons) => match reasons.first() {
                    Some(CancelReason::ConditionFailed { .. }) => Err(unknown_state()),
                    // The connection or an identity changed meanwhile: look again.
                    _ if idempotency::lost_race(&reasons) => Ok(Attempt::LostRace),
                    _ => Err(idempotency::unexpected(&reasons)),
                },
            }
        })
    }

    /// The connection stored under `key`, if any.
    async fn stored_connection(&self, key: &Key) -> Result<Option<StoredConnection>, CommandError> {
        self.table
            .get(key, true)
            .await?
            .map(crate::items::from_item)
            .transpose()
    }

    /// The user and timezone a connection started with `state` for `provider` is for;
    /// an unknown state for anything else (reads never return an expired state).
    async fn pending_connect(
        &self,
        provider: &ProviderName,
        state: &OAuthState,
    ) -> Result<(UserId, String), CommandError> {
        let stored = self
            .table
            .get(&state_key(state), true)
            .await?
            .ok_or_else(unknown_state)?;
        if stored.get("provider").and_then(Value::as_str) != Some(provider.as_str()) {
            return Err(unknown_state());
        }
        let user: UserId = stored
            .get("user_id")
            .and_then(Value::as_str)
            .and_then(|u| UserId::parse(u).ok())
            .ok_or_else(unknown_state)?;
        let timezone = stored
            .get("timezone")
            .and_then(Value::as_str)
            .unwrap_or("UTC")
            .to_owned();
        Ok((user, timezone))
    }

    /// The release of the provider identity `user`'s connection held before, if it is
    /// another one than `granted` and still `user`'s.
    async fn released_identity(
        &self,
        provider: &ProviderName,
        existing: Option<&StoredConnection>,
        granted: &str,
        user: &UserId,
    ) -> Result<Option<Action>, CommandError> {
        let Some(previous) = existing
            .filter(|c| c.connected())
            .and_then(|c| c.provider_user_id.as_deref())
            .filter(|previous| *previous != granted)
        else {
            return Ok(None);
        };
        let previous = provider_user_key(provider, previous)?;
        if self.identity_holder(&previous).await?.as_ref() != Some(user) {
            return Ok(None);
        }
        Ok(Some(Action::Delete {
            key: previous,
            condition: Some(Condition::AttributeEquals("user_id".into(), json!(user))),
        }))
    }

    /// The account a provider identity routes to, if any.
    async fn identity_holder(&self, identity: &Key) -> Result<Option<UserId>, CommandError> {
        Ok(self
            .table
            .get(identity, true)
            .await?
            .and_then(|p| p.get("user_id").and_then(Value::as_str).map(str::to_owned))
            .and_then(|u| UserId::parse(&u).ok()))
    }

    /// Disconnects a provider: the connection is kept as disconnected (its version goes
    /// on ordering later changes), the provider identity is released. Disconnecting what
    /// is not connected changes nothing.
    pub async fn disconnect(
        &self,
        meta: &CommandMeta,
        provider: &str,
    ) -> Result<Outcome<()>, CommandError> {
        let provider = self.providers.get(provider)?.clone();
        let _writer = crate::serial::user(&meta.user).await;
        let pk = meta.user_pk();
        let key = connection_key(&pk, provider.name());
        optimistic::run!({
            let Some(existing) = self
                .stored_connection(&key)
                .await?
                .filter(StoredConnection::connected)
            else {
                return Ok(Attempt::Done(Outcome::replayed(())));
            };
            let version = next_version(existing.version, self.clock.now());
            let event = envelope(
                meta,
                &self.clock,
                self.clock.now(),
                &ProviderDisconnected {
                    provider: provider.name().clone(),
                    version,
                },
            )?;
            let mut actions = vec![
                Action::Put {
                    item: to_item(
                        &key,
                        &json!({"provider": provider.name(), "status": "disconnected", "version": version}),
                    )?,
                    condition: Some(Condition::AttributeEquals(
                        "version".into(),
                        json!(existing.version),
                    )),
                },
                event_action(&pk, &event)?,
            ];
            if let Some(identity) = existing
                .provider_user_id
                .as_deref()
                .map(|u| provider_user_key(provider.name(), u))
                .transpose()?
                && self.identity_holder(&identity).await?.as_ref() == Some(&meta.user)
            {
                actions.push(Action::Delete {
                    key: identity,
                    condition: Some(Condition::AttributeEquals(
                        "user_id".into(),
                        json!(meta.user),
                    )),
                });
            }
            optimistic::settled(
                idempotency::commit(
                    &self.table,
                    meta,
                    &pk,
                    &json!({"disconnect": provider.name()}),
                    actions,
                    (),
                )
                .await?,
            )
        })
    }
}

/// The condition of a connection write: it replaces the version read, or takes a free key.
fn replaces(version_read: Option<u64>) -> Condition {
    match version_read {
        Some(version) => Condition::AttributeEquals("version".into(), json!(version)),
        None => Condition::ItemNotExists,
    }
}

/// The provider identity routed to `user`: taken if free, or kept if already theirs.
fn identity_put(
    identity: &Key,
    user: &UserId,
    timezone: &str,
    held: bool,
) -> Result<Action, CommandError> {
    Ok(Action::Put {
        item: to_item(identity, &json!({"user_id": user, "timezone": timezone}))?,
        condition: Some(if held {
            Condition::AttributeEquals("user_id".into(), json!(user))
        } else {
            Condition::ItemNotExists
        }),
    })
}
