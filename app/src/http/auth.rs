//! Bearer tokens. Register and login issue HS256 JWTs signed with the configured secret;
//! a verifier for an external identity provider (RS256, keys from a JWKS document) can
//! be configured instead. The user is the token's subject; missing, expired or forged
//! tokens are 401. (The `AuthUser` extractor, in `extract`, also refuses the token of an
//! account whose deletion was requested and rate limits each user.)

use super::error::ApiError;
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

    pub fn issue(&self, user: &UserId, timezone: Option<&str>) -> Result<String, ApiError> {
        let now = chrono::Utc::now().timestamp();
        let claims = Claims {
            sub: user.to_string(),
            iat: now,
            exp: now + TOKEN_SECONDS,
            tz: timezone.map(str::to_owned),
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
