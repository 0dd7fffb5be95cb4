//! The provider port: what Vitals needs of a wearable platform (OAuth authorize URL and
//! code exchange, the webhook signing secret), and the registry of configured providers.

use super::pkce::VerifierKey;
use crate::CommandError;
use crate::secret::Secret;
use async_trait::async_trait;
use events_schema::ids::ProviderName;
use std::collections::BTreeMap;
use std::sync::Arc;

/// What a code exchange grants. The tokens are not stored: data arrives by signed
/// webhooks, and a token kept at rest is a secret to lose.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderGrant {
    pub provider_user_id: String,
    pub access_token: Secret,
    pub refresh_token: Secret,
    pub scopes: Vec<String>,
}

#[async_trait]
pub trait WearableProvider: Send + Sync {
    fn name(&self) -> &ProviderName;
    /// Where to send the user to authorize Vitals, carrying `state` and the PKCE
    /// `code_challenge` (method `S256`) the code it issues is bound to.
    fn authorize_url(&self, state: &str, code_challenge: &str) -> String;
    /// Exchanges an authorization code for tokens, proving the connect's PKCE
    /// `code_verifier`: a code issued for another connect's challenge is refused.
    async fn exchange_code(
        &self,
        code: &str,
        code_verifier: &Secret,
    ) -> Result<ProviderGrant, CommandError>;
    /// The shared secret webhooks are signed with.
    fn webhook_secret(&self) -> &Secret;
}

/// The configured providers, by name, and the key their connects' PKCE verifiers are
/// derived with (random unless [`Providers::with_verifier_key`] gives the server's).
pub struct Providers {
    by_name: BTreeMap<ProviderName, Arc<dyn WearableProvider>>,
    verifiers: VerifierKey,
}

impl Default for Providers {
    fn default() -> Self {
        Self {
            by_name: BTreeMap::new(),
            verifiers: VerifierKey::random(),
        }
    }
}

impl Providers {
    /// The sandbox provider alone, signing its webhooks with `webhook_secret`.
    pub fn sandbox(webhook_secret: &str) -> Self {
        let sandbox = super::SandboxProvider::new(Secret::new(webhook_secret));
        Self::default().with(Arc::new(sandbox))
    }

    /// Connects' verifiers derived with `key`: every process holding it completes a
    /// connect any of them started.
    pub fn with_verifier_key(self, key: VerifierKey) -> Self {
        Self {
            verifiers: key,
            ..self
        }
    }

    pub fn verifiers(&self) -> &VerifierKey {
        &self.verifiers
    }

    pub fn with(mut self, provider: Arc<dyn WearableProvider>) -> Self {
        self.by_name.insert(provider.name().clone(), provider);
        self
    }

    pub fn get(&self, name: &str) -> Result<&Arc<dyn WearableProvider>, CommandError> {
        ProviderName::parse(name)
            .ok()
            .and_then(|n| self.by_name.get(&n))
            .ok_or(CommandError::NotFound("provider"))
    }
}
