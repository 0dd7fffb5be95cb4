//! Bearer tokens. Register and login issue HS256 JWTs signed with the configured secret;
//! a verifier for an external identity provider (RS256, keys from a JWKS document) can
//! be configured instead. The user is the token's subject; missing, expired or forged
//! tokens are 401. (The `AuthUser` extractor, in `extract`, also rate limits each user
//! and asks [`Auth::still_holds`] whether the account still honours the token.)
//!
//! A token this server issues carries the generation of the account's credentials it
//! was issued at (`gen`, see `commands::identity::Access`): a password or email change
//! moves the generation on, and from then on every token issued before it is refused
//! (401), on every process, whatever second it was issued in. An external provider's
//! tokens are not ours to revoke: a change here does not end them (the provider's own
//! revocation and their expiry do); only the account's deletion refuses them.

use super::error::ApiError;
use axum::http::StatusCode;
use commands::CommandError;
use commands::identity::{Access, IdentityCommands};
use events_schema::ids::UserId;
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{
    Algorithm, DecodingKey, EncodingKey, Header, Validation, decode, decode_header, encode,
};
use serde::{Deserialize, Serialize};

/// How long an issued token is valid.
pub const TOKEN_SECONDS: i64 = 3600;

#[derive(Debug, Serialize, Deserialize)]
pub struct Claims {
    pub sub: String,
    pub exp: i64,
    pub iat: i64,
    /// The user's timezone when the token was issued.
    #[serde(default)]
    pub tz: Option<String>,
    /// The generation of the account's credentials the token was issued at (tokens of
    /// this server only; one issued before the claim existed counts as the first).
    #[serde(rename = "gen", default, skip_serializing_if = "Option::is_none")]
    pub generation: Option<u64>,
}

/// How tokens are checked.
pub enum Verifier {
    /// Tokens this server issued (HS256, shared secret).
    Local,
    /// Tokens of an external identity provider (RS256), keys by `kid` from a JWKS.
    Jwks {
        keys: JwkSet,
        issuer: String,
        audience: String,
    },
}

pub struct Auth {
    secret: Vec<u8>,
    verifier: Verifier,
}

impl std::fmt::Debug for Auth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Auth(***)")
    }
}

impl Auth {
    pub fn new(secret: &[u8], verifier: Verifier) -> Self {
        Self {
            secret: secret.to_vec(),
            verifier,
        }
    }

    /// A token of `user`, naming `timezone`, at the first generation of their
    /// credentials: for an account whose password and email never changed (it is
    /// refused once they do). Sign-ins issue theirs with [`Self::issue_for`].
    pub fn issue(&self, user: &UserId, timezone: Option<&str>) -> Result<String, ApiError> {
        self.issue_at(user, timezone, 0)
    }

    /// The access token of a sign-in or refresh: issued on `access`, it holds until the
    /// account's credentials move past the generation read.
    pub fn issue_for(&self, access: &Access) -> Result<String, ApiError> {
        self.issue_at(&access.user, Some(&access.timezone), access.generation)
    }

    fn issue_at(
        &self,
        user: &UserId,
        timezone: Option<&str>,
        generation: u64,
    ) -> Result<String, ApiError> {
        let now = chrono::Utc::now().timestamp();
        let claims = Claims {
            sub: user.to_string(),
            iat: now,
            exp: now + TOKEN_SECONDS,
            tz: timezone.map(str::to_owned),
            generation: Some(generation),
        };
        encode(
            &Header::new(Algorithm::HS256),
            &claims,
            &EncodingKey::from_secret(&self.secret),
        )
        .map_err(ApiError::internal)
    }

    pub fn verify(&self, token: &str) -> Result<Claims, ApiError> {
        let claims = match &self.verifier {
            Verifier::Local => decode::<Claims>(
                token,
                &DecodingKey::from_secret(&self.secret),
                &Validation::new(Algorithm::HS256),
            ),
            Verifier::Jwks {
                keys,
                issuer,
                audience,
            } => {
                let header = decode_header(token).map_err(|_| ApiError::unauthorized())?;
                let jwk = header
                    .kid
                    .as_deref()
                    .and_then(|kid| keys.find(kid))
                    .ok_or_else(ApiError::unauthorized)?;
                let key = DecodingKey::from_jwk(jwk).map_err(|_| ApiError::unauthorized())?;
                let mut validation = Validation::new(Algorithm::RS256);
                validation.set_issuer(&[issuer]);
                validation.set_audience(&[audience]);
                decode::<Claims>(token, &key, &validation)
            }
        };
        claims
            .map(|data| data.claims)
            .map_err(|_| ApiError::unauthorized())
    }

    /// Whether the account of `user` still honours their verified `claims`: refused
    /// (`401 account_deleted`) once its deletion is requested and, for a token of this
    /// server, once a password or email change moved its credentials past the token's
    /// generation (`401 unauthorized`).
    ///
    /// Cost: one strongly consistent `GetItem` per authenticated request, of the profile
    /// for our tokens (it carries both the status and the generation, so it replaces the
    /// tombstone read the deletion check made before: no extra read) or of the tombstone
    /// for an external provider's. Not cached, on purpose: a stolen token must stop
    /// working at the change, on every process at once.
    pub async fn still_holds(
        &self,
        identity: &IdentityCommands,
        user: &UserId,
        claims: &Claims,
    ) -> Result<(), ApiError> {
        let holds = match self.verifier {
            Verifier::Local => {
                let generation = claims.generation.unwrap_or(0);
                identity.access_holds(user, generation).await?
            }
            // Not ours to revoke (see the module's documentation).
            Verifier::Jwks { .. } => {
                if identity.is_deleted(user).await? {
                    return Err(CommandError::AccountDeleted.into());
                }
                true
            }
        };
        if !holds {
            return Err(ApiError::new(
                StatusCode::UNAUTHORIZED,
                "unauthorized",
                "the token was issued before the password or email changed; sign in again",
            ));
        }
        Ok(())
    }
}

/// The caller, from the bearer token.
#[derive(Debug, Clone)]
pub struct AuthUser {
    pub user: UserId,
    pub timezone: Option<String>,
}

impl AuthUser {
    /// Today in the caller's timezone (UTC when the token names none).
    pub fn today(&self) -> events_schema::time::Day {
        let zone: chrono_tz::Tz = self
            .timezone
            .as_deref()
            .and_then(|tz| tz.parse().ok())
            .unwrap_or(chrono_tz::UTC);
        events_schema::time::Day::new(chrono::Utc::now().with_timezone(&zone).date_naive())
    }
}
