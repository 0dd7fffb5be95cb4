//! The continuation cursor: the last evaluated key of a page (table keys, plus index
//! keys for an index query), as base64url JSON. Both backends use this encoding, and a
//! cursor that does not decode is a validation error, never a panic.

use super::StoreError;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use std::collections::BTreeMap;

/// An opaque position in a query's results.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cursor(String);

impl Cursor {
    /// Encodes a last evaluated key (attribute name -> string value).
    pub fn from_key(key: &BTreeMap<String, String>) -> Self {
        // A map of strings always serializes.
        let json = serde_json::to_vec(key).unwrap_or_default();
        Self(URL_SAFE_NO_PAD.encode(json))
    }

    /// Decodes it back, checking the attributes the backend expects are present.
    pub fn to_key(&self, required: &[&str]) -> Result<BTreeMap<String, String>, StoreError> {
        let bad = || StoreError::Validation("the cursor is not valid for this query".to_owned());
        let json = URL_SAFE_NO_PAD.decode(&self.0).map_err(|_| bad())?;
        let key: BTreeMap<String, String> = serde_json::from_slice(&json).map_err(|_| bad())?;
        if required.iter().all(|attr| key.contains_key(*attr)) {
            Ok(key)
        } else {
            Err(bad())
        }
    }

    /// The cursor as text, for an API response.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// A cursor received from a client; checked when used.
    pub fn from_text(text: impl Into<String>) -> Self {
        Self(text.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_garbage() {
        let key = BTreeMap::from([
            ("pk".to_owned(), "USER#1".to_owned()),
            ("sk".to_owned(), "é😀".to_owned()),
        ]);
        let cursor = Cursor::from_key(&key);
        assert_eq!(cursor.to_key(&["pk", "sk"]).expect("decodes"), key);
        assert!(cursor.to_key(&["pk", "sk", "status_pk"]).is_err());
        assert!(Cursor::from_text("!!not base64").to_key(&["pk"]).is_err());
        assert!(Cursor::from_text("bnVsbA").to_key(&["pk"]).is_err());
    }
}
