//! Bearer tokens. Register and login issue HS256 JWTs signed with the configured secret
//! (its id in the `kid` header; a previous key still verifies during a rotation, see
//! [`super::signing_keys`]);
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
pub use super::signing_keys::{KeySource, SigningKeys};
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
    keys: SigningKeys,
    verifier: Verifier,
}

impl std::fmt::Debug for Auth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Auth(***)")
    }
}

impl Auth {
    pub fn new(secret: &[u8], verifier: Verifier) -> Self {
        Self::with_keys(SigningKeys::new(secret, &[]), verifier)
    }

    /// Tokens signed with the current of `keys` and verified with any of them (a key
    /// rotation: the previous key still verifies the tokens it signed).
    pub fn with_keys(keys: SigningKeys, verifier: Verifier) -> Self {
        Self { keys, verifier }
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
        let key = self
            .keys
            .current()
            .ok_or_else(|| ApiError::internal("no token signing key"))?;
        let mut header = Header::new(Algorithm::HS256);
        header.kid = Some(key.kid.clone());
        encode(&header, &claims, &EncodingKey::from_secret(key.secret()))
            .map_err(ApiError::internal)
    }

    /// The token's claims, verified; a token of ours naming a key this process does not
    /// hold first makes it read its keys again (see [`SigningKeys::refresh`]).
    pub async fn verify(&self, token: &str) -> Result<Claims, ApiError> {
        self.keys.refresh_if_stale().await;
        match self.verify_held(token) {
            Err(error) if self.names_unknown_key(token) && self.keys.refresh().await => {
                self.verify_held(token).or(Err(error))
            }
            verified => verified,
        }
    }

    fn names_unknown_key(&self, token: &str) -> bool {
        matches!(self.verifier, Verifier::Local)
            && decode_header(token)
                .ok()
                .and_then(|h| h.kid)
                .is_some_and(|kid| self.keys.verifying(Some(&kid)).is_empty())
    }

    fn verify_held(&self, token: &str) -> Result<Claims, ApiError> {
        let claims = match &self.verifier {
            Verifier::Local => {
                let kid = decode_header(token)
                    .map_err(|_| ApiError::unauthorized())?
                    .kid;
                let validation = Validation::new(Algorithm::HS256);
                let mut outcome = Err(jsonwebtoken::errors::ErrorKind::InvalidSignature.into());
                for key in self.keys.verifying(kid.as_deref()) {
                    outcome = decode::<Claims>(
                        token,
                        &DecodingKey::from_secret(key.secret()),
                        &validation,
                    );
                    if outcome.is_ok() {
                        break;
                    }
                }
                outcome
            }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::signing_keys::SigningKey;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    const OLD: &[u8] = b"the-signing-key-before-the-rotation-0123";
    const NEW: &[u8] = b"the-signing-key-after-the-rotation-456789";

    fn kid(token: &str) -> Option<String> {
        decode_header(token).ok().and_then(|h| h.kid)
    }

    /// A token of `user` signed with `key` as this server signs, or with no `kid` (as
    /// before keys had ids).
    fn token_of(key: &[u8], user: &UserId, with_kid: bool) -> String {
        let auth = Auth::new(key, Verifier::Local);
        let token = auth.issue(user, None).expect("issued");
        if with_kid {
            return token;
        }
        let claims = decode::<Claims>(
            &token,
            &DecodingKey::from_secret(key),
            &Validation::new(Algorithm::HS256),
        )
        .expect("decodes")
        .claims;
        encode(
            &Header::new(Algorithm::HS256),
            &claims,
            &EncodingKey::from_secret(key),
        )
        .expect("signed")
    }

    #[tokio::test]
    async fn the_current_key_signs_and_every_held_key_verifies() {
        let user = UserId::generate();
        let rotated = Auth::with_keys(SigningKeys::new(NEW, &[OLD.to_vec()]), Verifier::Local);
        let issued = rotated.issue(&user, None).expect("issued");
        assert_eq!(kid(&issued), Some(SigningKey::new(NEW).kid));
        assert_ne!(SigningKey::new(NEW).kid, SigningKey::new(OLD).kid);
        for token in [
            issued,
            token_of(OLD, &user, true),
            token_of(OLD, &user, false),
        ] {
            let claims = rotated.verify(&token).await.expect("verified");
            assert_eq!(claims.sub, user.to_string());
        }
        // Once the old key is retired, its tokens are refused, with or without a kid.
        let retired = Auth::new(NEW, Verifier::Local);
        assert!(retired.verify(&token_of(OLD, &user, true)).await.is_err());
        assert!(retired.verify(&token_of(OLD, &user, false)).await.is_err());
        // A token naming a held key but signed with another is forged.
        let forged = {
            let mut header = Header::new(Algorithm::HS256);
            header.kid = Some(SigningKey::new(NEW).kid);
            let claims = Claims {
                sub: user.to_string(),
                exp: i64::MAX / 2,
                iat: 0,
                tz: None,
                generation: Some(0),
            };
            encode(&header, &claims, &EncodingKey::from_secret(OLD)).expect("signed")
        };
        assert!(rotated.verify(&forged).await.is_err());
    }

    /// Keys read from Secrets Manager, counting the reads.
    struct Source {
        keys: Vec<Vec<u8>>,
        reads: AtomicUsize,
    }

    #[async_trait::async_trait]
    impl KeySource for Source {
        async fn keys(&self) -> anyhow::Result<Vec<Vec<u8>>> {
            self.reads.fetch_add(1, Ordering::SeqCst);
            Ok(self.keys.clone())
        }
    }

    /// A warm process holding only the old key takes up the new one at the first token
    /// that names it; tokens naming keys nobody holds make it read at most once a minute.
    #[tokio::test]
    async fn a_token_naming_an_unknown_key_has_the_keys_read_again_at_most_once_a_minute() {
        let user = UserId::generate();
        let source = Arc::new(Source {
            keys: vec![NEW.to_vec(), OLD.to_vec()],
            reads: AtomicUsize::new(0),
        });
        let warm = Auth::with_keys(
            SigningKeys::new(OLD, &[]).refreshed_from(source.clone()),
            Verifier::Local,
        );
        let claims = warm
            .verify(&token_of(NEW, &user, true))
            .await
            .expect("taken up");
        assert_eq!(claims.sub, user.to_string());
        assert_eq!(source.reads.load(Ordering::SeqCst), 1);
        // It now signs with the new key, and still verifies the old one's tokens.
        let issued = warm.issue(&user, None).expect("issued");
        assert_eq!(kid(&issued), Some(SigningKey::new(NEW).kid));
        assert!(warm.verify(&token_of(OLD, &user, true)).await.is_ok());
        // Unknown keys: refused, and the keys are not read again within the minute.
        for n in 0..3 {
            let stranger = format!("a-key-nobody-holds-number-{n}-0123456789abcdef");
            assert!(
                warm.verify(&token_of(stranger.as_bytes(), &user, true))
                    .await
                    .is_err()
            );
        }
        assert_eq!(
            source.reads.load(Ordering::SeqCst),
            1,
            "no read within the minute of the last"
        );
    }
}
