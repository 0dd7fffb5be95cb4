//! Refresh tokens: as handed to the client ([`RefreshToken`], `<user-id>.<session-id>.
//! <secret>`), as presented back (parsed, never trusted), and their secrets: fresh ones,
//! their digests (all the table keeps), and the constant-time check of a presented one.

use crate::CommandError;
use events_schema::ids::{SessionId, UserId};
use rand::RngCore;
use sha2::{Digest, Sha256};

/// A refresh token, as handed to the client: shown as `***` by `Debug`.
#[derive(Clone, PartialEq, Eq)]
pub struct RefreshToken(pub(super) String);

impl std::fmt::Debug for RefreshToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RefreshToken(***)")
    }
}

impl RefreshToken {
    pub fn expose(&self) -> &str {
        &self.0
    }
}

/// A presented refresh token, split.
pub(super) struct Presented {
    pub(super) user: UserId,
    pub(super) session: SessionId,
    secret: String,
}

/// The refusal of a presented token, whatever was wrong with it.
pub(super) fn refused() -> CommandError {
    CommandError::InvalidSession
}

impl Presented {
    /// The token `raw` split, or refused when it is not one.
    pub(super) fn parse(raw: &str) -> Result<Self, CommandError> {
        let mut parts = raw.trim().split('.');
        let (Some(user), Some(session), Some(secret), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(refused());
        };
        let secret_ok = secret.len() == 64 && secret.bytes().all(|b| b.is_ascii_hexdigit());
        match (UserId::parse(user), SessionId::parse(session)) {
            (Ok(user), Ok(session)) if secret_ok => Ok(Self {
                user,
                session,
                secret: secret.to_owned(),
            }),
            _ => Err(refused()),
        }
    }
}

/// The SHA-256 of a secret, as stored.
pub(super) fn digest(secret: &str) -> String {
    hex::encode(Sha256::digest(secret.as_bytes()))
}

/// 256 fresh random bits, in hex.
pub(super) fn fresh_secret() -> String {
    let mut bytes = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    hex::encode(bytes)
}

/// Whether `presented` carries its session's current secret, whose digest is `stored`;
/// compared in constant time.
pub(super) fn is_current(presented: &Presented, stored: &str) -> bool {
    let presented_hash = digest(&presented.secret);
    bool::from(subtle::ConstantTimeEq::ct_eq(
        stored.as_bytes(),
        presented_hash.as_bytes(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refresh_token_is_user_session_and_a_256_bit_hex_secret() {
        let (user, session, secret) = (UserId::generate(), SessionId::generate(), fresh_secret());
        let presented = Presented::parse(&format!(" {user}.{session}.{secret}\n")).expect("valid");
        assert_eq!((&presented.user, &presented.session), (&user, &session));
        assert_eq!(presented.secret, secret);
        for spoiled in [
            String::new(),
            format!("{user}.{session}"),
            format!("{user}.{session}.{secret}.more"),
            format!("{user}.{session}.{}", &secret[1..]),
            format!("{user}.{session}.{}z", &secret[1..]),
            format!("us#er.{session}.{secret}"),
            format!("{user}.\u{7}.{secret}"),
            "\u{1F600}.\u{1F600}.\u{1F600}".to_owned(),
        ] {
            assert!(Presented::parse(&spoiled).is_err(), "{spoiled:?} refused");
        }
    }

    #[test]
    fn only_the_current_secret_is_current() {
        let (user, session, secret) = (UserId::generate(), SessionId::generate(), fresh_secret());
        let presented = Presented::parse(&format!("{user}.{session}.{secret}")).expect("valid");
        assert!(is_current(&presented, &digest(&secret)));
        assert!(!is_current(&presented, &digest(&fresh_secret())));
        // The stored value is a digest: the secret itself is not accepted in its place.
        assert!(!is_current(&presented, &secret));
        assert!(!is_current(&presented, ""));
    }
}
