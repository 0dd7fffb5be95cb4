//! PKCE (RFC 7636, method `S256`) for the OAuth connect: the authorize URL carries a
//! challenge and the code exchange its verifier. The provider binds the code it issues to
//! the challenge, so a code carried to the app (and readable by whatever else claims the
//! app's URL scheme) is worth nothing in another connect: that connect's verifier does
//! not match.
//!
//! A connect's verifier is derived from its state with a server-held key
//! ([`VerifierKey`]), not stored: the state item holds nothing secret, and any process
//! holding the key completes a connect another started.

use crate::secret::Secret;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use events_schema::ids::OAuthState;
use hmac::{Hmac, Mac};
use rand::RngCore;
use sha2::{Digest, Sha256};

/// The key connects' code verifiers are derived with.
#[derive(Clone)]
pub struct VerifierKey([u8; 32]);

impl VerifierKey {
    /// The key derived from a server secret (the token signing secret), under a label of
    /// its own, so that neither use can stand for the other.
    pub fn derived_from(server_secret: &[u8]) -> Self {
        Self(hmac(server_secret, b"vitals/connect/pkce-verifier-key/v1"))
    }

    /// A random key: connects complete only where it is held (one process, a test).
    pub fn random() -> Self {
        let mut bytes = [0u8; 32];
        rand::rngs::OsRng.fill_bytes(&mut bytes);
        Self(bytes)
    }

    /// The code verifier of the connect whose state is `state`: 256 bits, base64url
    /// (43 characters of the unreserved set RFC 7636 allows).
    pub fn verifier_for(&self, state: &OAuthState) -> Secret {
        Secret::new(URL_SAFE_NO_PAD.encode(hmac(&self.0, state.as_str().as_bytes())))
    }
}

impl std::fmt::Debug for VerifierKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("VerifierKey(..)")
    }
}

fn hmac(key: &[u8], message: &[u8]) -> [u8; 32] {
    // HMAC takes a key of any length: `new_from_slice` cannot fail for it.
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(key)
        .unwrap_or_else(|_| unreachable!("HMAC accepts keys of every length"));
    mac.update(message);
    mac.finalize().into_bytes().into()
}

/// The `S256` challenge of `verifier`: base64url of its SHA-256.
pub fn challenge(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_challenge_is_rfc_7636s_for_its_example_verifier() {
        // RFC 7636, appendix B.
        let verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
        assert_eq!(
            challenge(verifier),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
    }

    #[test]
    fn a_verifier_is_the_states_under_the_key_and_of_the_allowed_form() {
        let state = |s: &str| OAuthState::parse(s).expect("state");
        let (one, two) = (state(&"a1".repeat(32)), state(&"b2".repeat(32)));
        let key = VerifierKey::derived_from(b"server secret");
        let same_key = VerifierKey::derived_from(b"server secret");
        assert_eq!(
            key.verifier_for(&one).expose(),
            same_key.verifier_for(&one).expose(),
            "another process with the secret completes the connect"
        );
        assert_ne!(
            key.verifier_for(&one).expose(),
            key.verifier_for(&two).expose()
        );
        let other = VerifierKey::derived_from(b"another secret");
        assert_ne!(
            key.verifier_for(&one).expose(),
            other.verifier_for(&one).expose()
        );
        let random = VerifierKey::random();
        assert_ne!(
            random.verifier_for(&one).expose(),
            VerifierKey::random().verifier_for(&one).expose()
        );
        let verifier = key.verifier_for(&one);
        assert_eq!(verifier.expose().len(), 43);
        let allowed = |c: char| c.is_ascii_alphanumeric() || "-._~".contains(c);
        assert!(
            verifier.expose().chars().all(allowed),
            "{}",
            verifier.expose()
        );
        assert_eq!(format!("{key:?}"), "VerifierKey(..)", "no key in logs");
    }
}
