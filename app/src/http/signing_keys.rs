//! The keys this server's tokens are signed and verified with: the current key signs
//! (its id in the token's `kid` header), and every key held verifies, so a key can be
//! rotated without signing everyone out. The key id is a digest of the key, never the
//! key. Where the keys live elsewhere (Secrets Manager, for the Lambda functions), a
//! token naming a key this process does not hold makes it read the keys again, at most
//! once a minute: a new key put there is taken up by warm processes too, at the first
//! token that needs it.

use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

/// One key: its id and its bytes.
#[derive(Clone)]
pub struct SigningKey {
    pub kid: String,
    secret: Vec<u8>,
}

impl SigningKey {
    pub fn new(secret: &[u8]) -> Self {
        use sha2::Digest as _;
        // Under a label of its own, so the id is no digest any other use of the key makes.
        let digest = sha2::Sha256::new()
            .chain_update(b"vitals token key id\0")
            .chain_update(secret)
            .finalize();
        Self {
            kid: format!("{digest:x}")[..16].to_owned(),
            secret: secret.to_vec(),
        }
    }

    pub fn secret(&self) -> &[u8] {
        &self.secret
    }
}

/// Where the keys can be read again: the current first, then the ones that still verify.
#[async_trait::async_trait]
pub trait KeySource: Send + Sync {
    async fn keys(&self) -> anyhow::Result<Vec<Vec<u8>>>;
}

/// Reads the keys again at most this often (a forged `kid` costs nothing more).
const REFRESH_EVERY: Duration = Duration::from_secs(60);
/// Reads the keys again when they are this old, whatever the tokens name: a warm
/// process that only signs (sign-ins) takes up a new key within minutes too, so it does
/// not go on signing with a key a second rotation would retire.
const STALE_AFTER: Duration = Duration::from_secs(300);

/// The keys held, and where to read them again.
pub struct SigningKeys {
    held: RwLock<Vec<SigningKey>>,
    source: Option<Arc<dyn KeySource>>,
    /// When the keys were last read (at the start, for keys given to [`Self::new`]).
    read_at: tokio::sync::Mutex<Instant>,
    /// When a token naming an unknown key last had them read again.
    asked_at: tokio::sync::Mutex<Option<Instant>>,
}

impl SigningKeys {
    /// `current` signs; `current` and `previous` verify.
    pub fn new(current: &[u8], previous: &[Vec<u8>]) -> Self {
        let held = std::iter::once(current)
            .chain(previous.iter().map(Vec::as_slice))
            .map(SigningKey::new)
            .collect();
        Self {
            held: RwLock::new(held),
            source: None,
            read_at: tokio::sync::Mutex::new(Instant::now()),
            asked_at: tokio::sync::Mutex::new(None),
        }
    }

    /// The same keys, read again from `source` when a token names another.
    pub fn refreshed_from(mut self, source: Arc<dyn KeySource>) -> Self {
        self.source = Some(source);
        self
    }

    /// The key that signs.
    pub fn current(&self) -> Option<SigningKey> {
        self.held.read().ok()?.first().cloned()
    }

    /// The key named `kid`; with no `kid` (a token issued before keys had ids), every
    /// key held, to try in turn.
    pub fn verifying(&self, kid: Option<&str>) -> Vec<SigningKey> {
        let Ok(held) = self.held.read() else {
            return Vec::new();
        };
        held.iter()
            .filter(|k| kid.is_none_or(|kid| k.kid == kid))
            .cloned()
            .collect()
    }

    /// Reads the keys again from the source (a token named a key not held), unless
    /// there is none or a token asked less than a minute ago; whether the keys changed.
    pub async fn refresh(&self) -> bool {
        if self.source.is_none() {
            return false;
        }
        {
            let mut asked = self.asked_at.lock().await;
            if asked.is_some_and(|at| at.elapsed() < REFRESH_EVERY) {
                return false;
            }
            *asked = Some(Instant::now());
        }
        self.read_again().await
    }

    /// Reads the keys again if they were read more than five minutes ago.
    pub async fn refresh_if_stale(&self) -> bool {
        if self.source.is_none() || self.read_at.lock().await.elapsed() < STALE_AFTER {
            return false;
        }
        self.read_again().await
    }

    async fn read_again(&self) -> bool {
        let Some(source) = &self.source else {
            return false;
        };
        *self.read_at.lock().await = Instant::now();
        let keys = match source.keys().await {
            Ok(keys) if !keys.is_empty() => keys,
            Ok(_) => return false,
            Err(error) => {
                tracing::warn!(%error, "reading the token signing keys again failed");
                return false;
            }
        };
        let fresh: Vec<SigningKey> = keys.iter().map(|k| SigningKey::new(k)).collect();
        let Ok(mut held) = self.held.write() else {
            return false;
        };
        let changed = fresh.iter().map(|k| &k.kid).ne(held.iter().map(|k| &k.kid));
        if changed {
            let current = fresh.first().map(|k| k.kid.clone()).unwrap_or_default();
            tracing::info!(keys = fresh.len(), %current, "token signing keys read again");
            *held = fresh;
        }
        changed
    }
}
