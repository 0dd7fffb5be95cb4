//! Builds the HTTP API's handlers and authentication from the command line, the same
//! way for `vitals serve` and `vitals api-lambda`.
//!
//! Its secrets are checked first ([`Secrets::from_args`]), before anything is opened or
//! served: a token signing key or webhook secret shorter than [`MIN_SECRET_BYTES`] (an
//! empty one included) stops the start with an error naming its variable, never its
//! value. Nothing defaults to a value anyone could know: on a shared store or in a
//! function ([`Shape::Deployed`]) both secrets are required; on the embedded store
//! ([`Shape::Sandbox`]) an absent signing key is 32 random bytes, kept in the data
//! directory by `serve` ([`kept_signing_key`]) so sessions survive a restart, and an
//! absent webhook secret a random one nobody holds, so webhooks are refused, as a warning
//! says at start.

use crate::cli::{ApiArgs, Backend};
use crate::http::api::Api;
use crate::http::auth::{Auth, KeySource, SigningKeys, Verifier};
use crate::http::limits::Limits;
use anyhow::Context as _;
use commands::integrations::{Providers, VerifierKey};
use infra::Store;
use jsonwebtoken::jwk::JwkSet;
use rand::RngCore as _;
use std::sync::Arc;

/// The fewest bytes a secret of the API may have: 256 bits, the size of HS256's key and
/// of HMAC-SHA256's output (the token signatures and webhook signatures it makes).
pub const MIN_SECRET_BYTES: usize = 32;

/// What an absent webhook secret means where the API runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// `vitals serve` on the embedded store: a local, self-hosted sandbox. Without
    /// `VITALS_WEBHOOK_SECRET`, webhooks are checked against a random secret of the
    /// process (so refused), and a warning says so at start.
    Sandbox,
    /// A shared store (`--backend dynamodb`) or a deployed function (`api-lambda`): the
    /// webhook secret is required.
    Deployed,
}

impl Shape {
    /// The shape of `vitals serve` on `backend`.
    pub fn serving(backend: Backend) -> Self {
        match backend {
            Backend::Embedded => Self::Sandbox,
            Backend::Dynamodb => Self::Deployed,
        }
    }
}

/// The API's secrets, checked: each at least [`MIN_SECRET_BYTES`] long.
pub struct Secrets {
    signing: Vec<u8>,
    /// Keys that verify tokens and sign none (the previous key of a rotation).
    previous: Vec<Vec<u8>>,
    webhook: String,
}

impl std::fmt::Debug for Secrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secrets(..)")
    }
}

impl Secrets {
    /// The secrets `args` give, checked; an absent one as [`Shape`] says.
    pub fn from_args(args: &ApiArgs, shape: Shape) -> anyhow::Result<Self> {
        const JWT: &str = "VITALS_JWT_SECRET (--jwt-secret)";
        const WEBHOOK: &str = "VITALS_WEBHOOK_SECRET (--webhook-secret)";
        // Every refusal before any warning about an absent secret.
        if let Some(secret) = &args.jwt_secret {
            check_secret(secret, JWT)?;
        }
        if let Some(secret) = &args.webhook_secret {
            check_secret(secret, WEBHOOK)?;
        }
        if let Some(secret) = &args.jwt_previous_secret {
            check_secret(secret, "VITALS_JWT_PREVIOUS_SECRET (--jwt-previous-secret)")?;
        }
        // Every process of a deployed shape must sign and verify with one key (and derive
        // one PKCE verifier key from it): a random key per process would refuse the tokens
        // and the connects another process issued.
        anyhow::ensure!(
            args.jwt_secret.is_some() || shape == Shape::Sandbox,
            "{JWT} is not set: on a shared store (--backend dynamodb) and in api-lambda \
             every process must hold the same signing key, at least {MIN_SECRET_BYTES} \
             bytes; only the embedded store runs without one"
        );
        anyhow::ensure!(
            args.webhook_secret.is_some() || shape == Shape::Sandbox,
            "{WEBHOOK} is not set: on a shared store (--backend dynamodb) and in api-lambda \
             the webhook secret is required, at least {MIN_SECRET_BYTES} bytes; only the \
             embedded store runs without one"
        );
        // Without one (the sandbox only), a random key of the process, which `serve`
        // replaces with the key kept in its data directory ([`Secrets::sign_with`]).
        let signing = match &args.jwt_secret {
            Some(secret) => secret.as_bytes().to_vec(),
            None => random_secret().to_vec(),
        };
        let webhook = match &args.webhook_secret {
            Some(secret) => secret.clone(),
            None => {
                tracing::warn!(
                    "no VITALS_WEBHOOK_SECRET: sandbox webhooks are refused (checked against a \
                     random secret of this process); set VITALS_WEBHOOK_SECRET, at least \
                     {MIN_SECRET_BYTES} bytes, to accept them. Only the embedded store runs \
                     without one: --backend dynamodb and api-lambda refuse to start"
                );
                hex::encode(random_secret())
            }
        };
        let previous = args
            .jwt_previous_secret
            .iter()
            .map(|s| s.as_bytes().to_vec())
            .collect();
        Ok(Self {
            signing,
            previous,
            webhook,
        })
    }
}

impl Secrets {
    /// The same secrets, tokens signed with `key` (checked already, such as the one
    /// [`kept_signing_key`] keeps).
    pub fn sign_with(self, key: &str) -> Self {
        Self {
            signing: key.as_bytes().to_vec(),
            ..self
        }
    }
}

/// Refuses a secret shorter than [`MIN_SECRET_BYTES`] (an empty one included), with an
/// error naming `what` (the variable it came from) and never the value.
pub fn check_secret(secret: &str, what: &str) -> anyhow::Result<()> {
    if secret.is_empty() {
        anyhow::bail!(
            "{what} is empty: a secret needs at least {MIN_SECRET_BYTES} bytes (for example \
             `openssl rand -hex 32`)"
        );
    }
    anyhow::ensure!(
        secret.len() >= MIN_SECRET_BYTES,
        "{what} is shorter than {MIN_SECRET_BYTES} bytes, the least a secret needs (for \
         example `openssl rand -hex 32`)"
    );
    Ok(())
}

/// [`MIN_SECRET_BYTES`] random bytes from the operating system's generator.
pub fn random_secret() -> [u8; MIN_SECRET_BYTES] {
    let mut bytes = [0; MIN_SECRET_BYTES];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    bytes
}

/// The file in a data directory keeping the signing key `serve` generated there.
pub const KEPT_KEY_FILE: &str = "signing.key";

/// Where `serve`'s token signing key comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SigningKey {
    /// `VITALS_JWT_SECRET` (`--jwt-secret`).
    Configured,
    /// Kept in the data directory by an earlier start.
    Kept(std::path::PathBuf),
    /// Generated by this start and kept in the data directory.
    Generated(std::path::PathBuf),
}

impl std::fmt::Display for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SigningKey::Configured => f.write_str("VITALS_JWT_SECRET"),
            SigningKey::Kept(path) => write!(f, "the key kept in {}", path.display()),
            SigningKey::Generated(path) => {
                write!(
                    f,
                    "a new key, kept in {} for the next start",
                    path.display()
                )
            }
        }
    }
}

/// The signing key kept in `data_dir` ([`KEPT_KEY_FILE`]), generated there on first use:
/// [`MIN_SECRET_BYTES`] random bytes, hex, in a file only its owner may read (0600),
/// written whole or not at all. Why: without `VITALS_JWT_SECRET`, a key of the process
/// signed everyone out at every restart of the self-hosted server. The key is as secret
/// as the store beside it (which holds the password hashes) and lives and goes with it.
pub fn kept_signing_key(data_dir: &std::path::Path) -> anyhow::Result<(String, SigningKey)> {
    use std::io::Write as _;
    let path = data_dir.join(KEPT_KEY_FILE);
    match std::fs::read_to_string(&path) {
        Ok(key) => {
            let key = key.trim().to_owned();
            check_secret(&key, &format!("the signing key kept in {}", path.display()))?;
            return Ok((key, SigningKey::Kept(path)));
        }
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
        Err(error) => {
            return Err(error).with_context(|| format!("reading {}", path.display()));
        }
    }
    std::fs::create_dir_all(data_dir)
        .with_context(|| format!("creating {}", data_dir.display()))?;
    let key = hex::encode(random_secret());
    // Written under another name and renamed: a crash leaves the whole key or none.
    let partial = data_dir.join(format!("{KEPT_KEY_FILE}.partial"));
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options
        .open(&partial)
        .with_context(|| format!("creating {}", partial.display()))?;
    file.write_all(key.as_bytes())
        .and_then(|()| file.sync_all())
        .with_context(|| format!("writing {}", partial.display()))?;
    std::fs::rename(&partial, &path).with_context(|| format!("keeping {}", path.display()))?;
    Ok((key, SigningKey::Generated(path)))
}

/// The API of a deployed shape ([`Shape::Deployed`]: `api-lambda`, a function, a tool),
/// its secrets checked first.
pub fn api(store: Arc<dyn Store>, args: &ApiArgs) -> anyhow::Result<Arc<Api>> {
    api_with(store, args, Secrets::from_args(args, Shape::Deployed)?)
}

/// [`api`], its token keys read again from `keys` when a token names one it does not
/// hold (a Lambda function's, from Secrets Manager).
pub fn api_refreshing(
    store: Arc<dyn Store>,
    args: &ApiArgs,
    keys: Arc<dyn KeySource>,
) -> anyhow::Result<Arc<Api>> {
    build_api(
        store,
        args,
        Secrets::from_args(args, Shape::Deployed)?,
        Some(keys),
    )
}

/// The API on `store` with `secrets`, checked already.
pub fn api_with(
    store: Arc<dyn Store>,
    args: &ApiArgs,
    secrets: Secrets,
) -> anyhow::Result<Arc<Api>> {
    build_api(store, args, secrets, None)
}

fn build_api(
    store: Arc<dyn Store>,
    args: &ApiArgs,
    secrets: Secrets,
    source: Option<Arc<dyn KeySource>>,
) -> anyhow::Result<Arc<Api>> {
    let mut keys = SigningKeys::new(&secrets.signing, &secrets.previous);
    if let Some(source) = source {
        keys = keys.refreshed_from(source);
    }
    let auth = Auth::with_keys(keys, verifier(args)?);
    // Connects' PKCE verifiers are derived from the same secret (under a label of their
    // own): every process of a deployment holds it, so any of them completes a connect
    // another started, and no verifier is stored.
    let providers = Providers::sandbox(&secrets.webhook)
        .with_verifier_key(VerifierKey::derived_from(&secrets.signing));
    let limits = Limits::new(args.limits());
    let mut api = Api::new(store, auth, providers, limits);
    api.connect_return = args.connect_return_url.clone();
    Ok(Arc::new(api))
}

fn verifier(args: &ApiArgs) -> anyhow::Result<Verifier> {
    let Some(path) = &args.jwks_file else {
        return Ok(Verifier::Local);
    };
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading the JWKS document {}", path.display()))?;
    let keys: JwkSet = serde_json::from_str(&text)
        .with_context(|| format!("{} is not a JWKS document", path.display()))?;
    anyhow::ensure!(!keys.keys.is_empty(), "{} holds no keys", path.display());
    // clap enforces `requires_all`; these only guard against a caller building ApiArgs
    // by hand.
    let issuer = args
        .jwt_issuer
        .clone()
        .context("--jwks-file needs --jwt-issuer")?;
    let audience = args
        .jwt_audience
        .clone()
        .context("--jwks-file needs --jwt-audience")?;
    tracing::info!(keys = keys.keys.len(), %issuer, "verifying tokens of an external identity provider");
    Ok(Verifier::Jwks {
        keys,
        issuer,
        audience,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHORT: &str = "a-31-byte-secret-nobody-reads!!";
    const MINIMUM: &str = "a-32-byte-secret-for-this-test-0";

    fn args(jwt: Option<&str>, webhook: Option<&str>) -> ApiArgs {
        let mut args = crate::cli::api_args_from_env().expect("the API's defaults parse");
        args.jwt_secret = jwt.map(str::to_owned);
        args.webhook_secret = webhook.map(str::to_owned);
        args
    }

    fn refusal(jwt: Option<&str>, webhook: Option<&str>, shape: Shape) -> String {
        Secrets::from_args(&args(jwt, webhook), shape)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
    }

    /// The key `serve` keeps is generated once, 0600, and the same at every later start.
    #[test]
    fn a_generated_signing_key_is_kept_for_the_next_start() {
        let dir = tempfile::tempdir().expect("a directory");
        let data = dir.path().join("data");
        let (first, made) = kept_signing_key(&data).expect("generated");
        assert_eq!(made, SigningKey::Generated(data.join(KEPT_KEY_FILE)));
        assert!(first.len() >= MIN_SECRET_BYTES);
        let (again, kept) = kept_signing_key(&data).expect("kept");
        assert_eq!(again, first, "the same key after a restart");
        assert_eq!(kept, SigningKey::Kept(data.join(KEPT_KEY_FILE)));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(data.join(KEPT_KEY_FILE))
                .expect("the key file")
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600, "only its owner reads it");
        }
        let other = tempfile::tempdir().expect("another directory");
        let (elsewhere, _) = kept_signing_key(other.path()).expect("generated");
        assert_ne!(elsewhere, first, "each data directory its own key");
    }

    /// A kept key too short to sign with (a file truncated, or written by hand) stops the
    /// start, naming the file, not the key.
    #[test]
    fn a_short_kept_key_is_refused_by_its_path() {
        let dir = tempfile::tempdir().expect("a directory");
        std::fs::write(dir.path().join(KEPT_KEY_FILE), "k3y-too-brief").expect("written");
        let error = kept_signing_key(dir.path())
            .expect_err("refused")
            .to_string();
        assert!(error.contains(KEPT_KEY_FILE), "{error}");
        assert!(!error.contains("k3y-too-brief"), "{error}");
    }

    #[test]
    fn a_fallback_key_is_32_random_bytes() {
        let (one, two) = (random_secret(), random_secret());
        assert_eq!(one.len(), 32);
        assert_ne!(one, two, "two fallbacks differ");
        assert_ne!(one, [0; 32]);
        let a = Secrets::from_args(&args(None, None), Shape::Sandbox).expect("sandbox");
        let b = Secrets::from_args(&args(None, None), Shape::Sandbox).expect("sandbox");
        assert_eq!(a.signing.len(), MIN_SECRET_BYTES);
        assert_ne!(a.signing, b.signing);
        assert_eq!(
            a.webhook.len(),
            2 * MIN_SECRET_BYTES,
            "hex of 32 random bytes"
        );
        assert_ne!(a.webhook, b.webhook);
        assert_ne!(a.webhook, "sandbox-webhook-secret");
    }

    #[test]
    fn an_empty_or_short_secret_is_refused_by_its_name_everywhere() {
        for shape in [Shape::Sandbox, Shape::Deployed] {
            for bad in ["", SHORT] {
                let error = refusal(Some(bad), Some(MINIMUM), shape);
                assert!(error.contains("VITALS_JWT_SECRET"), "{shape:?} {error}");
                assert!(error.contains("32 bytes"), "{error}");
                assert!(
                    bad.is_empty() || !error.contains(bad),
                    "the value is not shown"
                );
                let error = refusal(Some(MINIMUM), Some(bad), shape);
                assert!(error.contains("VITALS_WEBHOOK_SECRET"), "{shape:?} {error}");
                assert!(
                    bad.is_empty() || !error.contains(bad),
                    "the value is not shown"
                );
            }
            let secrets =
                Secrets::from_args(&args(Some(MINIMUM), Some(MINIMUM)), shape).expect("32 bytes");
            assert_eq!(secrets.signing, MINIMUM.as_bytes());
            assert_eq!(secrets.webhook, MINIMUM);
        }
        assert_eq!(SHORT.len(), 31);
        assert_eq!(MINIMUM.len(), 32);
    }

    #[test]
    fn a_shared_store_has_no_default_secret() {
        assert_eq!(Shape::serving(Backend::Dynamodb), Shape::Deployed);
        assert_eq!(Shape::serving(Backend::Embedded), Shape::Sandbox);
        let error = refusal(Some(MINIMUM), None, Shape::Deployed);
        assert!(error.contains("VITALS_WEBHOOK_SECRET"), "{error}");
        assert!(error.contains("not set"), "{error}");
        // Every process of a deployment must verify the tokens another signed.
        let error = refusal(None, Some(MINIMUM), Shape::Deployed);
        assert!(error.contains("VITALS_JWT_SECRET"), "{error}");
        assert!(error.contains("not set"), "{error}");
        assert!(!refusal(None, None, Shape::Deployed).is_empty());
        assert!(refusal(None, None, Shape::Sandbox).is_empty());
    }
}
