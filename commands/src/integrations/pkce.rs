//! PKCE (RFC 7636, method `S256`) for the OAuth connect: each connect gets a fresh code
//! verifier, kept with its state; the authorize URL carries its challenge and the code
//! exchange the verifier. The provider binds the code it issues to the challenge, so a
//! code carried to the app (and readable by whatever else claims the app's URL scheme)
//! is worth nothing in another connect: that connect's verifier does not match.

use crate::secret::Secret;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rand::RngCore;
use sha2::{Digest, Sha256};

/// A fresh code verifier: 256 random bits, base64url (43 characters).
pub fn verifier() -> Secret {
    let mut bytes = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    Secret::new(URL_SAFE_NO_PAD.encode(bytes))
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
    fn verifiers_are_fresh_and_of_the_allowed_form() {
        let (a, b) = (verifier(), verifier());
        assert_ne!(a.expose(), b.expose());
        assert_eq!(a.expose().len(), 43);
        let allowed = |c: char| c.is_ascii_alphanumeric() || "-._~".contains(c);
        assert!(a.expose().chars().all(allowed), "{}", a.expose());
    }
}
