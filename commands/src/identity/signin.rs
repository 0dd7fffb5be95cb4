//! Signing in: an email and password checked against the account's profile, in the same
//! time whether or not the email is registered.

use super::IdentityCommands;
use super::profile::{AccountStatus, Profile};
use super::sessions::SignedIn;
use crate::items::from_item;
use crate::{CommandError, password, validate};
use infra::store::IndexQuery;

/// A hash to verify against when the email is unknown, so an unknown email costs the
/// same time as a wrong password and does not reveal which emails are registered.
async fn dummy_hash() -> Result<&'static str, CommandError> {
    static HASH: tokio::sync::OnceCell<String> = tokio::sync::OnceCell::const_new();
    HASH.get_or_try_init(|| password::hash("not a real password".into()))
        .await
        .map(String::as_str)
}

impl IdentityCommands {
    /// Checks `email` and `password` (one index query): who signed in, with the
    /// credentials they proved (a session starts on them only while they are still the
    /// account's).
    pub async fn login(&self, email: &str, password: &str) -> Result<SignedIn, CommandError> {
        let email =
            validate::email("email", email).map_err(|_| CommandError::InvalidCredentials)?;
        let page = self
            .table
            .query_index(&IndexQuery::partition("by-email", &email).limit(1))
            .await?;
        let Some(item) = page.items.into_iter().next() else {
            password::verify(password.to_owned(), dummy_hash().await?.to_owned()).await?;
            return Err(CommandError::InvalidCredentials);
        };
        let profile: Profile = from_item(item)?;
        if !profile.has_password(password).await? {
            return Err(CommandError::InvalidCredentials);
        }
        if profile.status != AccountStatus::Active {
            return Err(CommandError::AccountDeleted);
        }
        Ok(SignedIn::proved(&profile))
    }
}
