//! The sandbox provider: behaves like a real wearable platform (authorize URL with
//! state and a PKCE challenge, one-time codes bound to that challenge exchanged for
//! tokens, HMAC-signed webhooks) but runs in-process, so everything works offline. A
//! code is `code-<provider-user-id>.<code-challenge>`: what its authorize page would
//! hand back when that provider user approves the URL (a real provider keeps the
//! challenge with the code; the sandbox, keeping nothing, writes it in). Used codes are
//! remembered for as long as a connect lives, then forgotten.

use super::pkce;
use super::provider::{ProviderGrant, WearableProvider};
use crate::CommandError;
use crate::secret::Secret;
use async_trait::async_trait;
use events_schema::ids::ProviderName;
use events_schema::time::Clock;
use sha2::{Digest, Sha256};
use std::collections::{BTreeSet, HashMap};
use std::sync::Mutex;

/// How long a used code is remembered: as long as a connect started when it was used
/// can live. Past that no connect's verifier proves the code, so it is refused whether
/// remembered or not, and the sandbox keeps only the codes used in the last connect
/// lifetime (bounded by the rate connects can start, not growing for ever).
const REMEMBER_USED_MILLIS: i64 = super::oauth::STATE_TTL_SECONDS * 1000;

/// The codes used already, each until it can be forgotten (epoch milliseconds).
#[derive(Debug, Default)]
struct UsedCodes {
    until: HashMap<String, i64>,
    by_expiry: BTreeSet<(i64, String)>,
}

impl UsedCodes {
    /// Forgets the codes whose time is up at `now`.
    fn forget_expired(&mut self, now: i64) {
        while let Some(first) = self.by_expiry.first() {
            if first.0 > now {
                break;
            }
            if let Some((_, code)) = self.by_expiry.pop_first() {
                self.until.remove(&code);
            }
        }
    }

    /// Records `code` used at `now`; false if it was used already (and not forgotten).
    fn use_once(&mut self, code: &str, now: i64) -> bool {
        self.forget_expired(now);
        if self.until.contains_key(code) {
            return false;
        }
        let until = now.saturating_add(REMEMBER_USED_MILLIS);
        self.until.insert(code.to_owned(), until);
        self.by_expiry.insert((until, code.to_owned()));
        true
    }
}

pub struct SandboxProvider {
    name: ProviderName,
    secret: Secret,
    used_codes: Mutex<UsedCodes>,
    /// Tells when a used code may be forgotten.
    clock: Clock,
}

impl SandboxProvider {
    pub fn new(secret: Secret) -> Self {
        Self {
            name: ProviderName::parse("sandbox").unwrap_or_else(|_| ProviderName::generate()),
            secret,
            used_codes: Mutex::new(UsedCodes::default()),
            clock: Clock::System,
        }
    }

    /// The same sandbox, telling time by `clock` (when a used code may be forgotten).
    pub fn with_clock(self, clock: Clock) -> Self {
        Self { clock, ..self }
    }

    /// How many used codes the sandbox remembers.
    pub fn remembered_codes(&self) -> usize {
        self.used_codes.lock().map_or(0, |used| used.until.len())
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
        let now = self.clock.now().millis();
        let fresh = self
            .used_codes
            .lock()
            .map(|mut used| used.use_once(code, now))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::integrations::oauth::STATE_TTL_SECONDS;
    use events_schema::time::Timestamp;

    fn at(seconds: i64) -> Timestamp {
        Timestamp::from_millis(1_800_000_000_000 + seconds * 1000).expect("timestamp")
    }

    fn verifier(n: usize) -> Secret {
        Secret::new(format!("{n:0>43}"))
    }

    fn code(n: usize) -> String {
        format!("code-user-{n}.{}", pkce::challenge(verifier(n).expose()))
    }

    #[tokio::test]
    async fn a_used_code_is_refused_until_its_connect_expires_then_forgotten() {
        let clock = Clock::manual(at(0));
        let sandbox = SandboxProvider::new(Secret::new("s")).with_clock(clock.clone());
        sandbox
            .exchange_code(&code(1), &verifier(1))
            .await
            .expect("a fresh code");
        // Until a connect started when it was used would have expired: refused.
        clock.set(at(STATE_TTL_SECONDS - 1));
        let again = sandbox.exchange_code(&code(1), &verifier(1)).await;
        assert!(again.is_err(), "a used code is refused before it expires");
        assert_eq!(sandbox.remembered_codes(), 1);
        // After that, no connect can carry it: forgotten as others are used.
        clock.set(at(STATE_TTL_SECONDS));
        sandbox
            .exchange_code(&code(2), &verifier(2))
            .await
            .expect("another fresh code");
        assert_eq!(sandbox.remembered_codes(), 1, "only the code used last");
    }

    #[tokio::test]
    async fn the_used_codes_remembered_are_those_of_the_last_connect_lifetime() {
        let clock = Clock::manual(at(0));
        let sandbox = SandboxProvider::new(Secret::new("s")).with_clock(clock.clone());
        // A code a second for an hour: six times as many as a connect's lifetime.
        let seconds = usize::try_from(6 * STATE_TTL_SECONDS).expect("seconds");
        for n in 0..seconds {
            clock.set(at(i64::try_from(n).expect("n")));
            sandbox
                .exchange_code(&code(n), &verifier(n))
                .await
                .expect("a fresh code");
        }
        let window = usize::try_from(STATE_TTL_SECONDS).expect("window");
        assert_eq!(sandbox.remembered_codes(), window);
        // The last of them still refused.
        let last = seconds - 1;
        let again = sandbox.exchange_code(&code(last), &verifier(last)).await;
        assert!(again.is_err());
    }
}
