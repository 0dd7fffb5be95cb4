//! OAuth connect: start (a single-use state with 256 random bits and a TTL of minutes,
//! from which the connect's PKCE code verifier is derived), complete (the code exchanged
//! with that verifier; the state consumed in the same transaction that records the connection and
//! claims the provider identity, which belongs to one account at a time), and
//! disconnect.

use super::IntegrationCommands;
use super::pkce;
use super::provider::ProviderGrant;
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
use infra::store::{CancelReason, Condition, Item, Key, now_epoch_seconds};
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
    /// Absent on items written before connections were versioned.
    #[serde(default)]
    version: Option<u64>,
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

/// The condition of a connection write: it replaces the connection read (at its version,
/// or, written before connections were versioned, still without one), or takes a free key.
fn replaces(read: Option<&StoredConnection>) -> Condition {
    match read.map(|connection| connection.version) {
        Some(Some(version)) => Condition::AttributeEquals("version".into(), json!(version)),
        Some(None) => Condition::All(vec![
            Condition::ItemExists,
            Condition::AttributeNotExists("version".into()),
        ]),
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

/// A connect in flight: whose it is, its state, the provider, the user's timezone.
struct Pending<'a> {
    user: &'a UserId,
    state: &'a OAuthState,
    provider: &'a ProviderName,
    timezone: &'a str,
}

/// Starting `pending`: its state item (whose it is, for which provider, the user's
/// timezone; no PKCE verifier, which is derived from the state again), written only if
/// the state is new, and a pointer to it in the user's partition, so erasing the account
/// finds it; both expire at `expires_at`.
fn starting(pending: &Pending<'_>, expires_at: i64) -> Result<Vec<Action>, CommandError> {
    let user = pending.user;
    let mut item = to_item(
        &state_key(pending.state),
        &json!({"user_id": user, "provider": pending.provider, "timezone": pending.timezone}),
    )?;
    item.insert("expires_at".into(), json!(expires_at));
    let pk = PartitionKey::User(user.clone()).to_string();
    let mut pointer = to_item(&state_ref_key(&pk, pending.state), &json!({}))?;
    pointer.insert("expires_at".into(), json!(expires_at));
    Ok(vec![
        Action::Put {
            item,
            condition: Some(Condition::ItemNotExists),
        },
        Action::Put {
            item: pointer,
            condition: None,
        },
    ])
}

/// What completing a connect read: the user's connection to the provider, the account
/// the granted identity routes to, and the identity the connection held before (when
/// another one) with the account it routes to.
struct ConnectFound {
    existing: Option<StoredConnection>,
    holder: Option<UserId>,
    previous: Option<(Key, Option<UserId>)>,
}

/// The timezone of the pending connect `stored` (a state item, if one was found) when it
/// is `user`'s connect of `provider`; an unknown state otherwise.
fn pending_for(
    stored: Option<&Item>,
    provider: &ProviderName,
    user: &UserId,
) -> Result<String, CommandError> {
    let stored = stored.ok_or_else(unknown_state)?;
    let field = |name: &str| stored.get(name).and_then(Value::as_str);
    if field("provider") != Some(provider.as_str()) || field("user_id") != Some(user.as_str()) {
        return Err(unknown_state());
    }
    Ok(field("timezone").unwrap_or("UTC").to_owned())
}

/// Completing `pending` with `grant` (its provider identity under `identity`) at `now`:
/// the state consumed (only if still there), the connection written over the version
/// read, the identity taken or kept, the one held before released if it is still the
/// user's; and the event (its envelope is the caller's). Refused with
/// `ProviderIdentityTaken` when the identity is another account's.
fn connecting(
    pending: &Pending<'_>,
    grant: &ProviderGrant,
    identity: &Key,
    found: &ConnectFound,
    now: Timestamp,
) -> Result<(ProviderConnected, Vec<Action>), CommandError> {
    let user = pending.user;
    if found.holder.as_ref().is_some_and(|holder| holder != user) {
        return Err(CommandError::ProviderIdentityTaken);
    }
    let pk = PartitionKey::User(user.clone()).to_string();
    let read_version = found.existing.as_ref().and_then(|c| c.version);
    let version = next_version(read_version.unwrap_or(0), now);
    let connection = json!({
        "provider": pending.provider, "provider_user_id": grant.provider_user_id,
        "scopes": grant.scopes, "connected_at": now, "status": "connected",
        "version": version, "timezone": pending.timezone,
    });
    let mut actions = vec![
        Action::Delete {
            key: state_key(pending.state),
            condition: Some(Condition::ItemExists),
        },
        Action::Delete {
            key: state_ref_key(&pk, pending.state),
            condition: None,
        },
        Action::Put {
            item: to_item(&connection_key(&pk, pending.provider), &connection)?,
            condition: Some(replaces(found.existing.as_ref())),
        },
        identity_put(identity, user, pending.timezone, found.holder.is_some())?,
    ];
    if let Some((previous, Some(holder))) = &found.previous
        && holder == user
    {
        actions.push(released(previous, user));
    }
    let connected = ProviderConnected {
        provider: pending.provider.clone(),
        connected_at: now,
        scopes: grant.scopes.clone(),
        version,
    };
    Ok((connected, actions))
}

/// Disconnecting the connection `existing` stored under `key` at `now`: kept as
/// disconnected over the version read, its identity (with the account it routes to)
/// released if it is still `user`'s; and the event.
fn disconnecting(
    key: &Key,
    provider: &ProviderName,
    existing: &StoredConnection,
    identity: Option<(Key, Option<UserId>)>,
    user: &UserId,
    now: Timestamp,
) -> Result<(ProviderDisconnected, Vec<Action>), CommandError> {
    let version = next_version(existing.version.unwrap_or(0), now);
    let mut actions = vec![Action::Put {
        item: to_item(
            key,
            &json!({"provider": provider, "status": "disconnected", "version": version}),
        )?,
        condition: Some(replaces(Some(existing))),
    }];
    if let Some((identity, Some(holder))) = identity
        && &holder == user
    {
        actions.push(released(&identity, user));
    }
    let disconnected = ProviderDisconnected {
        provider: provider.clone(),
        version,
    };
    Ok((disconnected, actions))
}

/// The release of a provider identity, only while it still routes to `user`.
fn released(identity: &Key, user: &UserId) -> Action {
    Action::Delete {
        key: identity.clone(),
        condition: Some(Condition::AttributeEquals("user_id".into(), json!(user))),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::integrations::Secret;

    fn now() -> Timestamp {
        Timestamp::parse("2026-03-02T08:00:00.000Z").expect("timestamp")
    }

    fn strava() -> ProviderName {
        ProviderName::parse("strava").expect("provider")
    }

    fn grant(provider_user_id: &str) -> ProviderGrant {
        ProviderGrant {
            provider_user_id: provider_user_id.into(),
            access_token: Secret::new("access-token-7f3a"),
            refresh_token: Secret::new("refresh-token-9c1d"),
            scopes: vec!["activity:read".into()],
        }
    }

    fn connected_as(provider_user_id: &str, version: u64) -> StoredConnection {
        StoredConnection {
            provider_user_id: Some(provider_user_id.into()),
            status: Some("connected".into()),
            version: Some(version),
        }
    }

    fn deletes(actions: &[Action]) -> Vec<&Key> {
        actions
            .iter()
            .filter_map(|a| match a {
                Action::Delete { key, .. } => Some(key),
                _ => None,
            })
            .collect()
    }

    /// Completes a connect of `user` granted `athlete` over what `found` holds.
    fn complete(
        user: &UserId,
        state: &OAuthState,
        athlete: &str,
        found: &ConnectFound,
    ) -> Result<(ProviderConnected, Vec<Action>), CommandError> {
        let provider = strava();
        let pending = Pending {
            user,
            state,
            provider: &provider,
            timezone: "Europe/Paris",
        };
        let identity = provider_user_key(&provider, athlete).expect("identity");
        connecting(&pending, &grant(athlete), &identity, found, now())
    }

    fn state() -> OAuthState {
        OAuthState::parse(&"ab".repeat(32)).expect("state")
    }

    /// The actions of `user` starting a connect to Strava from Paris, expiring at 1234.
    fn started_by(user: &UserId) -> Vec<Action> {
        let pending = Pending {
            user,
            state: &state(),
            provider: &strava(),
            timezone: "Europe/Paris",
        };
        starting(&pending, 1_234).expect("actions")
    }

    #[test]
    fn a_started_connect_remembers_whose_it_is_in_a_new_state_and_a_pointer() {
        let user = UserId::generate();
        let actions = started_by(&user);
        let Action::Put { item, condition } = &actions[0] else {
            panic!("the state first: {actions:?}");
        };
        assert_eq!(condition, &Some(Condition::ItemNotExists));
        assert_eq!(item["pk"], state_key(&state()).pk.as_str());
        assert_eq!(
            (&item["user_id"], &item["provider"], &item["timezone"]),
            (&json!(user), &json!("strava"), &json!("Europe/Paris"))
        );
        assert_eq!(item["expires_at"], 1_234);
        let fields: Vec<&str> = item.keys().map(String::as_str).collect();
        assert_eq!(
            fields,
            ["expires_at", "pk", "provider", "sk", "timezone", "user_id"],
            "nothing secret at rest"
        );
        let Action::Put { item, .. } = &actions[1] else {
            panic!("the pointer second: {actions:?}");
        };
        let pk = PartitionKey::User(user.clone()).to_string();
        assert_eq!(item["sk"], state_ref_key(&pk, &state()).sk.as_str());
        assert_eq!(item["expires_at"], 1_234);
    }

    #[test]
    fn only_the_account_that_started_a_connect_completes_it() {
        let (ana, bob) = (UserId::generate(), UserId::generate());
        let provider = strava();
        let actions = started_by(&ana);
        let Action::Put { item: stored, .. } = &actions[0] else {
            panic!("the state first: {actions:?}");
        };
        let completes = |stored, provider: &ProviderName, user| {
            pending_for(stored, provider, user).map_err(|e| e.to_string())
        };
        assert_eq!(
            completes(Some(stored), &provider, &ana),
            Ok("Europe/Paris".into())
        );
        let unknown = Err(unknown_state().to_string());
        assert_eq!(
            completes(Some(stored), &provider, &bob),
            unknown,
            "another account's"
        );
        let other = ProviderName::parse("sandbox").expect("provider");
        assert_eq!(
            completes(Some(stored), &other, &ana),
            unknown,
            "another provider's"
        );
        assert_eq!(completes(None, &provider, &ana), unknown, "gone or expired");
    }

    #[test]
    fn a_first_connect_consumes_the_state_and_takes_a_free_identity() {
        let user = UserId::generate();
        let found = ConnectFound {
            existing: None,
            holder: None,
            previous: None,
        };
        let (connected, actions) =
            complete(&user, &state(), "athlete-1", &found).expect("connects");
        assert_eq!(connected.version, now().millis() as u64);
        assert_eq!(connected.connected_at, now());
        assert_eq!(
            actions[0],
            Action::Delete {
                key: state_key(&state()),
                condition: Some(Condition::ItemExists),
            }
        );
        let Action::Put { item, condition } = &actions[2] else {
            panic!("the connection third: {actions:?}");
        };
        assert_eq!(condition, &Some(Condition::ItemNotExists));
        assert_eq!(item["status"], "connected");
        assert_eq!(item["timezone"], "Europe/Paris");
        let identity = provider_user_key(&strava(), "athlete-1").expect("identity");
        assert_eq!(
            actions[3],
            identity_put(&identity, &user, "Europe/Paris", false).expect("put")
        );
        assert!(
            !format!("{actions:?}").contains("token-"),
            "no token is stored"
        );
    }

    #[test]
    fn an_identity_another_account_holds_is_refused() {
        let found = ConnectFound {
            existing: None,
            holder: Some(UserId::generate()),
            previous: None,
        };
        let refused = complete(&UserId::generate(), &state(), "athlete-1", &found);
        assert!(matches!(refused, Err(CommandError::ProviderIdentityTaken)));
    }

    #[test]
    fn a_reconnect_as_another_athlete_releases_the_one_held_before_if_still_the_users() {
        let user = UserId::generate();
        let before = provider_user_key(&strava(), "athlete-1").expect("identity");
        // Given the user connected as athlete-1 at version 7, when they connect again as
        // athlete-2, then the connection replaces version 7 and athlete-1 is released;
        let found = |holder: Option<UserId>| ConnectFound {
            existing: Some(connected_as("athlete-1", 7)),
            holder: None,
            previous: Some((before.clone(), holder)),
        };
        let (connected, actions) =
            complete(&user, &state(), "athlete-2", &found(Some(user.clone()))).expect("connects");
        assert!(connected.version > 7);
        let Action::Put { condition, .. } = &actions[2] else {
            panic!("the connection third: {actions:?}");
        };
        assert_eq!(
            condition,
            &Some(Condition::AttributeEquals("version".into(), json!(7)))
        );
        assert!(deletes(&actions).contains(&&before));
        assert_eq!(actions.last(), Some(&released(&before, &user)));
        // when athlete-1 routes to another account by now, it is left alone.
        for holder in [None, Some(UserId::generate())] {
            let (_, actions) =
                complete(&user, &state(), "athlete-2", &found(holder)).expect("connects");
            assert!(!deletes(&actions).contains(&&before));
        }
    }

    #[test]
    fn a_connection_from_before_versions_is_replaced_only_while_it_has_none() {
        let user = UserId::generate();
        let key = connection_key(&PartitionKey::User(user.clone()).to_string(), &strava());
        // Given a connection stored before connections were versioned (no version),
        let legacy = StoredConnection {
            version: None,
            ..connected_as("athlete-1", 0)
        };
        // when it is disconnected, the write takes it only while it is still so (not
        // as a new key, which it is not, nor at a version it never had),
        let (disconnected, actions) =
            disconnecting(&key, &strava(), &legacy, None, &user, now()).expect("disconnects");
        let Action::Put { condition, .. } = &actions[0] else {
            panic!("the connection first: {actions:?}");
        };
        let unversioned = Condition::All(vec![
            Condition::ItemExists,
            Condition::AttributeNotExists("version".into()),
        ]);
        assert_eq!(condition, &Some(unversioned));
        // and its first version is the time of the change.
        assert_eq!(disconnected.version, now().millis() as u64);
    }

    #[test]
    fn a_disconnect_keeps_the_connection_as_disconnected_and_releases_its_identity() {
        let user = UserId::generate();
        let pk = PartitionKey::User(user.clone()).to_string();
        let key = connection_key(&pk, &strava());
        let identity = provider_user_key(&strava(), "athlete-1").expect("identity");
        let existing = connected_as("athlete-1", 9);
        let (disconnected, actions) = disconnecting(
            &key,
            &strava(),
            &existing,
            Some((identity.clone(), Some(user.clone()))),
            &user,
            now(),
        )
        .expect("disconnects");
        assert!(disconnected.version > 9);
        let Action::Put { item, condition } = &actions[0] else {
            panic!("the connection first: {actions:?}");
        };
        assert_eq!(item["status"], "disconnected");
        assert_eq!(
            condition,
            &Some(Condition::AttributeEquals("version".into(), json!(9)))
        );
        assert_eq!(actions[1], released(&identity, &user));
        // Given the identity routes to another account by now, it is not released.
        let (_, actions) = disconnecting(
            &key,
            &strava(),
            &existing,
            Some((identity, Some(UserId::generate()))),
            &user,
            now(),
        )
        .expect("disconnects");
        assert_eq!(actions.len(), 1);
    }
}
