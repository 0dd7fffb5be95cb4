//! OAuth connect: start (a single-use state with 256 random bits and a TTL of minutes),
//! complete (state consumed in the same transaction that records the connection), and
//! disconnect.

use super::IntegrationCommands;
use crate::CommandError;
use crate::envelope::{CommandMeta, Outcome};
use crate::idempotency::{self, Committed};
use crate::items::to_item;
use crate::outbox::{envelope, event_action};
use events_schema::events::integrations::{ProviderConnected, ProviderDisconnected};
use events_schema::ids::{OAuthState, ProviderName, ProviderUserId, UserId};
use events_schema::keys::{PartitionKey, SortKey};
use events_schema::time::Timestamp;
use infra::store::{Condition, Key, now_epoch_seconds};
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

impl IntegrationCommands {
    /// Starts connecting `provider`: stores a fresh state and returns the provider's
    /// authorize URL carrying it.
    pub async fn start_connect(
        &self,
        meta: &CommandMeta,
        provider: &str,
    ) -> Result<Outcome<ConnectStarted>, CommandError> {
        let provider = self.providers.get(provider)?.clone();
        let mut bytes = [0u8; 32];
        rand::rngs::OsRng.fill_bytes(&mut bytes);
        let state = OAuthState::parse(&hex::encode(bytes))
            .map_err(|e| CommandError::Conflict(e.to_string()))?;
        let mut item = to_item(
            &state_key(&state),
            &json!({"user_id": meta.user, "provider": provider.name()}),
        )?;
        item.insert(
            "expires_at".into(),
            json!(now_epoch_seconds() + STATE_TTL_SECONDS),
        );
        let started = ConnectStarted {
            authorize_url: provider.authorize_url(state.as_str()),
            state: state.to_string(),
        };
        // A pointer in the user's partition, so erasing the account finds the state.
        let mut pointer = to_item(&state_ref_key(&meta.user_pk(), &state), &json!({}))?;
        pointer.insert(
            "expires_at".into(),
            json!(now_epoch_seconds() + STATE_TTL_SECONDS),
        );
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
    /// deleted in the transaction that records the connection.
    pub async fn complete_connect(
        &self,
        provider: &str,
        state: &str,
        code: &str,
    ) -> Result<Outcome<UserId>, CommandError> {
        let provider = self.providers.get(provider)?.clone();
        let state = OAuthState::parse(state).map_err(|_| unknown_state())?;
        // Reads never return an expired state, so an expired one is unknown here.
        let stored = self
            .table
            .get(&state_key(&state), true)
            .await?
            .ok_or_else(unknown_state)?;
        if stored.get("provider").and_then(Value::as_str) != Some(provider.name().as_str()) {
            return Err(unknown_state());
        }
        let user: UserId = stored
            .get("user_id")
            .and_then(Value::as_str)
            .and_then(|u| UserId::parse(u).ok())
            .ok_or_else(unknown_state)?;
        let grant = provider.exchange_code(code).await?;
        let meta = CommandMeta::new(user.clone());
        let pk = meta.user_pk();
        let connected_at = Timestamp::now();
        let connection = json!({
            "provider": provider.name(), "provider_user_id": grant.provider_user_id, "scopes": grant.scopes,
            "connected_at": connected_at, "access_token": grant.access_token, "refresh_token": grant.refresh_token,
        });
        let event = envelope(
            &meta,
            connected_at,
            &ProviderConnected {
                provider: provider.name().clone(),
                connected_at,
                scopes: grant.scopes.clone(),
            },
        )?;
        let actions = vec![
            Action::Delete {
                key: state_key(&state),
                condition: Some(Condition::ItemExists),
            },
            Action::Delete {
                key: state_ref_key(&pk, &state),
                condition: None,
            },
            Action::Put {
                item: to_item(&connection_key(&pk, provider.name()), &connection)?,
                condition: None,
            },
            Action::Put {
                item: to_item(
                    &provider_user_key(provider.name(), &grant.provider_user_id)?,
                    &json!({"user_id": user}),
                )?,
                condition: None,
            },
            event_action(&pk, &event)?,
        ];
        match idempotency::commit(&self.table, &meta, &pk, &json!({}), actions, user).await? {
            Committed::Done(outcome) => Ok(outcome),
            Committed::Cancelled(reasons)
                if matches!(
                    reasons.first(),
                    Some(infra::store::CancelReason::ConditionFailed { .. })
                ) =>
            {
                Err(unknown_state())
            }
            Committed::Cancelled(reasons) => Err(idempotency::unexpected(&reasons)),
        }
    }

    /// Removes a connection; disconnecting what is not connected changes nothing.
    pub async fn disconnect(
        &self,
        meta: &CommandMeta,
        provider: &str,
    ) -> Result<Outcome<()>, CommandError> {
        let provider = self.providers.get(provider)?.clone();
        let pk = meta.user_pk();
        let Some(connection) = self
            .table
            .get(&connection_key(&pk, provider.name()), true)
            .await?
        else {
            return Ok(Outcome::replayed(()));
        };
        let provider_user_id = connection
            .get("provider_user_id")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let event = envelope(
            meta,
            Timestamp::now(),
            &ProviderDisconnected {
                provider: provider.name().clone(),
            },
        )?;
        let mut actions = vec![Action::Delete {
            key: connection_key(&pk, provider.name()),
            condition: Some(Condition::ItemExists),
        }];
        if !provider_user_id.is_empty() {
            actions.push(Action::Delete {
                key: provider_user_key(provider.name(), &provider_user_id)?,
                condition: Some(Condition::AttributeEquals(
                    "user_id".into(),
                    json!(meta.user),
                )),
            });
        }
        actions.push(event_action(&pk, &event)?);
        match idempotency::commit(
            &self.table,
            meta,
            &pk,
            &json!({"disconnect": provider.name()}),
            actions,
            (),
        )
        .await?
        {
            Committed::Done(outcome) => Ok(outcome),
            // Disconnected concurrently (or reconnected by another account): nothing to do.
            Committed::Cancelled(_) => Ok(Outcome::replayed(())),
        }
    }
}
