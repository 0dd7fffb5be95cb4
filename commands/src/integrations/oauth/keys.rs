//! The keys of a connect's items: the pending state and its pointer in the user's
//! partition, the user's connection to a provider, and the provider identity that routes
//! a provider's user to one account.

use crate::CommandError;
use events_schema::ids::{OAuthState, ProviderName, ProviderUserId};
use events_schema::keys::{PartitionKey, SortKey};
use infra::store::Key;

/// The pointer to a pending connect's state in the user's partition.
pub(super) fn state_ref_key(pk: &str, state: &OAuthState) -> Key {
    Key::new(pk, SortKey::OAuthStateRef(state.clone()).to_string())
}

/// The state item of a pending connect (`OAUTH_STATE#<state>`).
pub fn state_key(state: &OAuthState) -> Key {
    Key::new(
        PartitionKey::OAuthState(state.clone()).to_string(),
        SortKey::OAuthState.to_string(),
    )
}

/// The key of the user's connection to `provider`, in the user's partition `pk`.
pub(super) fn connection_key(pk: &str, provider: &ProviderName) -> Key {
    Key::new(pk, SortKey::Connection(provider.clone()).to_string())
}

/// The key of a provider identity: the provider's user, routed to one account.
pub(in crate::integrations) fn provider_user_key(
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
