//! Integrations: OAuth connections to wearable providers and their signed webhooks.
//!
//! Items: `OAUTH_STATE#<state>` (256 random bits, TTL minutes, single use; the
//! connect's PKCE code verifier is derived from it, never stored),
//! `USER#<id>/CONNECTION#<provider>` (connected or disconnected, with a version that
//! orders its changes; provider tokens are not kept: data arrives by signed webhooks),
//! `PROVIDER_USER#<provider>#<provider-user-id>` (who a webhook is about: one account at
//! a time), `USER#<id>/DELIVERY#<provider>#<delivery-id>` (a webhook delivery, recorded
//! once). Received workouts and sleep are published as events for the activity and sleep
//! contexts to sync.

pub mod oauth;
mod pkce;
mod provider;
mod sandbox;
pub(crate) mod webhook;

pub use crate::secret::Secret;
pub use oauth::ConnectStarted;
pub use pkce::VerifierKey;
pub use provider::{ProviderGrant, Providers, WearableProvider};
pub use sandbox::SandboxProvider;
pub use webhook::{SIGNATURE_TOLERANCE_SECONDS, WebhookPayload, sign};

use infra::table::contexts::Integrations;
use std::sync::Arc;

/// The integrations context's commands, calling the configured wearable providers.
pub type IntegrationCommands = crate::handlers::Handlers<Integrations, Arc<Providers>>;

impl IntegrationCommands {
    /// The wearable providers its commands call.
    fn providers(&self) -> &Providers {
        &self.services
    }

    /// Whether `provider` is configured: `NotFound("provider")` if not.
    pub fn provider_exists(&self, provider: &str) -> Result<(), crate::CommandError> {
        self.providers().get(provider).map(|_| ())
    }
}
