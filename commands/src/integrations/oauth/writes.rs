//! What each step of a connect writes, decided from what was read: the pending state
//! started, the connection completed (the state consumed, the provider identity taken
//! and the one held before released) or disconnected; the stored connection those
//! decisions read. Pure: nothing here touches the table.

use super::keys::{connection_key, state_key, state_ref_key};
use crate::CommandError;
use crate::integrations::provider::ProviderGrant;
use crate::items::to_item;
use events_schema::events::integrations::{ProviderConnected, ProviderDisconnected};
use events_schema::ids::{OAuthState, ProviderName, UserId};
use events_schema::keys::PartitionKey;
use events_schema::time::Timestamp;
use infra::store::{Condition, Item, Key};
use infra::table::Action;
use serde::Deserialize;
use serde_json::{Value, json};

/// The refusal of a state that is not a pending connect of the caller's.
pub(super) fn unknown_state() -> CommandError {
    CommandError::invalid("state", "unknown, expired or already used")
}

/// The connection item as stored.
#[derive(Debug, Clone, Default, Deserialize)]
pub(super) struct StoredConnection {
    #[serde(default)]
    pub(super) provider_user_id: Option<String>,
    #[serde(default)]
    status: Option<String>,
    /// Absent on items written before connections were versioned.
    #[serde(default)]
    version: Option<u64>,
}

impl StoredConnection {
    /// Whether the connection is connected (not kept as disconnected).
    pub(super) fn connected(&self) -> bool {
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
pub(super) struct Pending<'a> {
    pub(super) user: &'a UserId,
    pub(super) state: &'a OAuthState,
    pub(super) provider: &'a ProviderName,
    pub(super) timezone: &'a str,
}

/// Starting `pending`: its state item (whose it is, for which provider, the user's
/// timezone; no PKCE verifier, which is derived from the state again), written only if
/// the state is new, and a pointer to it in the user's partition, so erasing the account
/// finds it; both expire at `expires_at`.
pub(super) fn starting(
    pending: &Pending<'_>,
    expires_at: i64,
) -> Result<Vec<Action>, CommandError> {
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
pub(super) struct ConnectFound {
    pub(super) existing: Option<StoredConnection>,
    pub(super) holder: Option<UserId>,
    pub(super) previous: Option<(Key, Option<UserId>)>,
}

/// The timezone of the pending connect `stored` (a state item, if one was found) when it
/// is `user`'s connect of `provider`; an unknown state otherwise.
pub(super) fn pending_for(
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
pub(super) fn connecting(
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
pub(super) fn disconnecting(
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::integrations::Secret;
    use crate::integrations::oauth::keys::provider_user_key;

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
