//! The sandbox provider: behaves like a real wearable platform (authorize URL with
//! state and a PKCE challenge, one-time codes bound to that challenge exchanged for
//! tokens, HMAC-signed webhooks) but runs in-process, so everything works offline. A
//! code is `code-<provider-user-id>.<code-challenge>`: what its authorize page would
//! hand back when that provider user approves the URL (a real provider keeps the
//! challenge with the code; the sandbox, keeping nothing, writes it in).

use super::pkce;
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

    /// The code the sandbox's authorize page would hand back when `provider_user_id`
    /// approves `authorize_url`: bound to the URL's `code_challenge`.
    pub fn code_for(provider_user_id: &str, authorize_url: &str) -> String {
        let query = authorize_url.split_once('?').map_or("", |(_, query)| query);
        let challenge = form_urlencoded::parse(query.as_bytes())
            .find(|(name, _)| name == "code_challenge")
            .map(|(_, value)| value.into_owned())
            .unwrap_or_default();
        format!("code-{provider_user_id}.{challenge}")
    }
}

#[async_trait]
impl WearableProvider for SandboxProvider {
    fn name(&self) -> &ProviderName {
        &self.name
    }

    fn authorize_url(&self, state: &str, code_challenge: &str) -> String {
        let query = form_urlencoded::Serializer::new(String::new())
            .append_pair("client_id", "vitals")
            .append_pair("response_type", "code")
            .append_pair("state", state)
            .append_pair("code_challenge", code_challenge)
            .append_pair("code_challenge_method", "S256")
            .finish();
        format!("https://sandbox.vitals.invalid/oauth/authorize?{query}")
    }

    async fn exchange_code(
        &self,
        code: &str,
        code_verifier: &Secret,
    ) -> Result<ProviderGrant, CommandError> {
        // A code the provider refuses is the client's mistake (a 4xx), not the
        // provider failing.
        let refused = || CommandError::invalid("code", "unknown, expired or already used");
        let user_id = |s: &str| {
            !s.is_empty()
                && s.len() <= 64
                && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        };
        let rest = code.strip_prefix("code-").ok_or_else(refused)?;
        let (user, challenge) = rest.split_once('.').ok_or_else(refused)?;
        // Issued for another connect's challenge: this verifier does not prove it.
        if !user_id(user) || challenge != pkce::challenge(code_verifier.expose()) {
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
