//! The sandbox provider: behaves like a real wearable platform (authorize URL with
//! state, one-time codes exchanged for tokens, HMAC-signed webhooks) but runs in-process,
//! so everything works offline. A code is `code-<provider-user-id>`, optionally followed
//! by `.<anything>` to make another single-use code for the same provider user (as the
//! provider would issue on a second authorization).

use super::provider::{ProviderGrant, WearableProvider};
use crate::CommandError;
use crate::secret::Secret;
use async_trait::async_trait;
use events_schema::ids::ProviderName;
use sha2::{Digest, Sha256};
use std::collections::HashSet;
use std::sync::Mutex;

pub struct SandboxProvider {
    name: ProviderName,
    secret: Secret,
    used_codes: Mutex<HashSet<String>>,
}

impl SandboxProvider {
    pub fn new(secret: Secret) -> Self {
        Self {
            name: ProviderName::parse("sandbox").unwrap_or_else(|_| ProviderName::generate()),
            secret,
            used_codes: Mutex::new(HashSet::new()),
        }
    }

    /// The code the sandbox's authorize page would hand back for this provider user.
    pub fn code_for(provider_user_id: &str) -> String {
        format!("code-{provider_user_id}")
    }
}

#[async_trait]
impl WearableProvider for SandboxProvider {
    fn name(&self) -> &ProviderName {
        &self.name
    }

    fn authorize_url(&self, state: &str) -> String {
        format!("https://sandbox.vitals.invalid/oauth/authorize?client_id=vitals&state={state}")
    }

    async fn exchange_code(&self, code: &str) -> Result<ProviderGrant, CommandError> {
        // A code the provider refuses is the client's mistake (a 4xx), not the
        // provider failing.
        let refused = || CommandError::invalid("code", "unknown, expired or already used");
        let word = |s: &str| {
            !s.is_empty()
                && s.len() <= 64
                && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        };
        let rest = code.strip_prefix("code-").ok_or_else(refused)?;
        let (user, nonce) = rest.split_once('.').unwrap_or((rest, "x"));
        if !word(user) || !word(nonce) {
            return Err(refused());
        }
        // Codes are single-use, as with a real provider.
        let fresh = self
            .used_codes
            .lock()
            .map(|mut used| used.insert(code.to_owned()))
            .unwrap_or(false);
        if !fresh {
            return Err(refused());
        }
        let token = |kind: &str| {
            Secret::new(hex::encode(Sha256::digest(format!(
                "{kind}|{code}|{}",
                self.secret.expose()
            ))))
        };
        Ok(ProviderGrant {
            provider_user_id: user.to_owned(),
            access_token: token("access"),
            refresh_token: token("refresh"),
            scopes: vec!["activity".into(), "sleep".into()],
        })
    }

    fn webhook_secret(&self) -> &Secret {
        &self.secret
    }
}
