//! Builds the HTTP API's handlers and authentication from the command line, the same
//! way for `vitals serve` and `vitals api-lambda`.

use crate::cli::ApiArgs;
use crate::http::api::Api;
use crate::http::auth::{Auth, Verifier};
use crate::http::limits::Limits;
use anyhow::Context as _;
use commands::integrations::{Providers, VerifierKey};
use infra::Store;
use jsonwebtoken::jwk::JwkSet;
use std::sync::Arc;

pub fn api(store: Arc<dyn Store>, args: &ApiArgs) -> anyhow::Result<Arc<Api>> {
    let signing_secret = signing_secret(args);
    let auth = Auth::new(&signing_secret, verifier(args)?);
    // Connects' PKCE verifiers are derived from the same secret (under a label of their
    // own): every process of a deployment holds it, so any of them completes a connect
    // another started, and no verifier is stored.
    let providers = Providers::sandbox(&args.webhook_secret)
        .with_verifier_key(VerifierKey::derived_from(&signing_secret));
    let limits = Limits::new(args.limits());
    let mut api = Api::new(store, auth, providers, limits);
    api.connect_return = args.connect_return_url.clone();
    Ok(Arc::new(api))
}

fn signing_secret(args: &ApiArgs) -> Vec<u8> {
    args.jwt_secret
        .clone()
        .map(String::into_bytes)
        .unwrap_or_else(|| {
            tracing::warn!(
                "no VITALS_JWT_SECRET: tokens are signed with a random key and end with this process"
            );
            ulid::Ulid::new().to_string().into_bytes()
        })
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
