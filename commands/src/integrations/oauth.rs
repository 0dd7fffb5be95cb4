//! OAuth connect: start (a single-use state with 256 random bits and a TTL of minutes,
//! from which the connect's PKCE code verifier is derived), complete (the code exchanged
//! with that verifier; the state consumed in the same transaction that records the connection and
//! claims the provider identity, which belongs to one account at a time), and
//! disconnect.

//!
//! Layout: `keys` (the items' keys), `writes` (what each step writes, decided from
//! what was read, with its tests), and here the commands and their access patterns.

mod keys;
mod writes;

pub(super) use keys::provider_user_key;
pub use keys::state_key;

use super::IntegrationCommands;
use super::pkce;
use crate::CommandError;
use crate::idempotency::{self, Committed};
use crate::meta::{CommandMeta, Outcome};
use crate::optimistic::{self, Attempt};
use crate::outbox::{envelope, event_action};
use events_schema::ids::{OAuthState, ProviderName, UserId};
use infra::store::{CancelReason, Key, now_epoch_seconds};
use keys::connection_key;
use rand::RngCore;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use writes::{
    ConnectFound, Pending, StoredConnection, connecting, disconnecting, pending_for, starting,
    unknown_state,
};

/// How long a user has to finish authorizing at the provider.
pub const STATE_TTL_SECONDS: i64 = 10 * 60;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConnectStarted {
    pub authorize_url: String,
    pub state: String,
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
        let provider = self.providers().get(provider)?.clone();
        let timezone = meta.timezone.clone().unwrap_or_else(|| "UTC".to_owned());
        crate::validate::timezone("timezone", &timezone)?;
        let mut bytes = [0u8; 32];
        rand::rngs::OsRng.fill_bytes(&mut bytes);
        let state = OAuthState::parse(&hex::encode(bytes))
            .map_err(|e| CommandError::Internal(e.to_string()))?;
        // The store expires items by its own (real) clock, whatever the handlers' clock.
        let expires_at = now_epoch_seconds() + STATE_TTL_SECONDS;
        let code_verifier = self.providers().verifiers().verifier_for(&state);
        let pending = Pending {
            user: &meta.user,
            state: &state,
            provider: provider.name(),
            timezone: &timezone,
        };
        let actions = starting(&pending, expires_at)?;
        let challenge = pkce::challenge(code_verifier.expose());
        let started = ConnectStarted {
            authorize_url: provider.authorize_url(state.as_str(), &challenge),
            state: state.to_string(),
        };
        let (pk, request) = (meta.user_pk(), json!({"connect": provider.name()}));
        optimistic::commit_through_conflicts(&self.table, meta, &pk, &request, actions, started)
            .await?
            .or_unexpected()
    }

    /// Completes the caller's connect with the code the provider's redirect carried
    /// back. Only the account that started the connect completes it: a state another
    /// account started is refused as unknown and nothing is written, so an authorize URL
    /// sent to someone else cannot connect their provider account to the sender's (the
    /// code reaches the device that authorized, whose app completes as its own user).
    /// The state is single-use: it is deleted in the transaction that records the
    /// connection. A provider identity belongs to one account at a time: if another
    /// account holds it, the connect is refused (`ProviderIdentityTaken`) and nothing
    /// changes; a reconnect as another provider user releases the identity held before.
    pub async fn complete_connect(
        &self,
        meta: &CommandMeta,
        provider: &str,
        state: &str,
        code: &str,
    ) -> Result<Outcome<UserId>, CommandError> {
        let provider = self.providers().get(provider)?.clone();
        let user = meta.user.clone();
        let _writer = self.writers.user(&user).await;
        // The state is gone once the first attempt committed: a keyed retry replays.
        let request = json!({"complete": provider.name(), "state": state, "code": code});
        if let Some(first) = idempotency::replayed(&self.table, meta, &request).await? {
            return Ok(first);
        }
        let state = OAuthState::parse(state).map_err(|_| unknown_state())?;
        let timezone = self.pending_connect(provider.name(), &state, &user).await?;
        let code_verifier = self.providers().verifiers().verifier_for(&state);
        let grant = provider.exchange_code(code, &code_verifier).await?;
        let identity = provider_user_key(provider.name(), &grant.provider_user_id)?;
        let pk = meta.user_pk();
        optimistic::run!({
            let connection_key = connection_key(&pk, provider.name());
            let existing = self.stored_connection(&connection_key).await?;
            let found = ConnectFound {
                holder: self.identity_holder(&identity).await?,
                previous: self
                    .previous_identity(provider.name(), existing.as_ref(), &grant.provider_user_id)
                    .await?,
                existing,
            };
            let pending = Pending {
                user: &user,
                state: &state,
                provider: provider.name(),
                timezone: &timezone,
            };
            let (connected, mut actions) =
                connecting(&pending, &grant, &identity, &found, self.clock.now())?;
            let event = envelope(meta, &self.clock, connected.connected_at, &connected)?;
            actions.push(event_action(&pk, &event)?);
            match idempotency::commit(&self.table, meta, &pk, &request, actions, user.clone())
                .await?
            {
                Committed::Done(outcome) => Ok(Attempt::Done(outcome)),
                Committed::Cancelled(reasons) => match reasons.first() {
                    Some(CancelReason::ConditionFailed { .. }) => Err(unknown_state()),
                    // The connection or an identity changed meanwhile: look again.
                    _ if CancelReason::lost_race(&reasons) => Ok(Attempt::LostRace),
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

    /// The timezone a connection `user` started with `state` for `provider` is for; an
    /// unknown state for anything else, another account's state included (reads never
    /// return an expired state).
    async fn pending_connect(
        &self,
        provider: &ProviderName,
        state: &OAuthState,
        user: &UserId,
    ) -> Result<String, CommandError> {
        let stored = self.table.get(&state_key(state), true).await?;
        pending_for(stored.as_ref(), provider, user)
    }

    /// The provider identity the connection held before, when it is connected and
    /// another one than `granted`, with the account it routes to now.
    async fn previous_identity(
        &self,
        provider: &ProviderName,
        existing: Option<&StoredConnection>,
        granted: &str,
    ) -> Result<Option<(Key, Option<UserId>)>, CommandError> {
        let Some(previous) = existing
            .filter(|c| c.connected())
            .and_then(|c| c.provider_user_id.as_deref())
            .filter(|previous| *previous != granted)
        else {
            return Ok(None);
        };
        let previous = provider_user_key(provider, previous)?;
        let holder = self.identity_holder(&previous).await?;
        Ok(Some((previous, holder)))
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
        let provider = self.providers().get(provider)?.clone();
        let _writer = self.writers.user(&meta.user).await;
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
            let identity = match existing
                .provider_user_id
                .as_deref()
                .map(|u| provider_user_key(provider.name(), u))
                .transpose()?
            {
                Some(identity) => {
                    let holder = self.identity_holder(&identity).await?;
                    Some((identity, holder))
                }
                None => None,
            };
            // One reading of the clock: the connection's version and the event's time.
            let now = self.clock.now();
            let (disconnected, mut actions) =
                disconnecting(&key, provider.name(), &existing, identity, &meta.user, now)?;
            let event = envelope(meta, &self.clock, now, &disconnected)?;
            actions.push(event_action(&pk, &event)?);
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

/// The calls this module makes, as declared access patterns (see `infra::access`).
pub(crate) mod access {
    use crate::idempotency::command_tx;
    use events_schema::Context::Integrations as INTEGRATIONS;
    use infra::access::{AccessPattern as P, Action::*, Op, Sk, Written as W};

    const EVENT: W = W::new(Put, INTEGRATIONS, "USER#", "EVT#");

    /// The wearable connection's calls.
    pub static ACCESS: &[P] = &[
        P::transact(
            "start a connect",
            command_tx!(
                Integrations,
                "USER#",
                [
                    W::new(Put, INTEGRATIONS, "OAUTH_STATE#", "OAUTH_STATE"),
                    W::new(Put, INTEGRATIONS, "USER#", "OAUTH_STATE#"),
                ]
            ),
            "POST /v1/integrations/{provider}/connect",
        )
        .volume(0.001)
        .size(2, 400),
        P::new(
            "a pending connect",
            INTEGRATIONS,
            Op::get(true),
            "OAUTH_STATE#",
            Sk::exact("OAUTH_STATE"),
            "GET /v1/integrations/{provider}/callback, POST …/complete",
        )
        .volume(0.002)
        .size(1, 400),
        P::new(
            "a connection",
            INTEGRATIONS,
            Op::get(true),
            "USER#",
            Sk::exact("CONNECTION#"),
            "POST /v1/integrations/{provider}/complete, …/disconnect",
        )
        .volume(0.002)
        .size(1, 500),
        P::new(
            "the user a provider's account is linked to",
            INTEGRATIONS,
            Op::get(true),
            "PROVIDER_USER#",
            Sk::exact("PROVIDER_USER"),
            "POST /v1/integrations/{provider}/complete (another account's link is refused)",
        )
        .volume(0.001)
        .size(1, 200),
        P::transact(
            "complete a connect",
            command_tx!(
                Integrations,
                "USER#",
                [
                    W::new(Delete, INTEGRATIONS, "OAUTH_STATE#", "OAUTH_STATE"),
                    W::new(Delete, INTEGRATIONS, "USER#", "OAUTH_STATE#"),
                    W::new(Put, INTEGRATIONS, "USER#", "CONNECTION#"),
                    W::new(Put, INTEGRATIONS, "PROVIDER_USER#", "PROVIDER_USER"),
                    W::new(Delete, INTEGRATIONS, "PROVIDER_USER#", "PROVIDER_USER").optional(),
                    EVENT,
                ]
            ),
            "POST /v1/integrations/{provider}/complete",
        )
        .volume(0.001)
        .size(5, 500),
        P::transact(
            "disconnect",
            command_tx!(
                Integrations,
                "USER#",
                [
                    W::new(Put, INTEGRATIONS, "USER#", "CONNECTION#"),
                    W::new(Delete, INTEGRATIONS, "PROVIDER_USER#", "PROVIDER_USER").optional(),
                    EVENT,
                ]
            ),
            "POST /v1/integrations/{provider}/disconnect",
        )
        .volume(0.0005)
        .size(3, 500),
    ];
}
