//! Tries at a credential, counted in the identity table so that every process shares
//! one count: each Lambda execution environment and each `vitals serve` limits only what
//! reaches it, so N of them would otherwise allow N times the guesses. One item per
//! subject and minute (`TRIES#<digest>#<minute>`, expiring two minutes on), whose
//! digest keeps the subject (an email) out of the table. A try is one atomic update:
//! add one, on condition the count is below the allowance, so tries at once from any
//! number of processes are each counted, none past it (no read, no retry).

use super::IdentityCommands;
use crate::CommandError;
use events_schema::ids::UserId;
use events_schema::keys::{Digest, PartitionKey, SortKey};
use infra::store::{Condition, Key, StoreError, Update, now_epoch_seconds};

/// What is tried.
#[derive(Debug, Clone, Copy)]
pub enum Tried<'a> {
    /// A sign-in or sign-up for an email (compared as the identity context normalizes
    /// it; anything past an email's 254 characters is no account's).
    SignIn(&'a str),
    /// A signed-in user's current password (a password change proves it).
    Password(&'a UserId),
}

impl Tried<'_> {
    fn subject(&self) -> String {
        match self {
            Tried::SignIn(email) => {
                let email: String = email.trim().to_lowercase().chars().take(254).collect();
                format!("email:{email}")
            }
            Tried::Password(user) => format!("password:{user}"),
        }
    }
}

/// A try refused `second` seconds into its minute: come back when the minute ends.
fn too_many(second: i64) -> CommandError {
    let retry_after_s = u64::try_from(60 - second.rem_euclid(60)).unwrap_or(60);
    CommandError::TooManyTries { retry_after_s }
}

impl IdentityCommands {
    /// Counts one try at `tried` this minute: `TooManyTries` (nothing counted) when
    /// `per_minute` were counted already, by any process.
    pub async fn count_try(&self, tried: Tried<'_>, per_minute: u32) -> Result<(), CommandError> {
        let now = self.clock.now().millis().div_euclid(1000);
        let minute = u64::try_from(now.div_euclid(60)).unwrap_or(0);
        let key = Key::new(
            PartitionKey::Tries(Digest::tries(&tried.subject()), minute).to_string(),
            SortKey::Tries.to_string(),
        );
        // The store expires items by its own (real) clock, whatever the handlers'.
        let one_more = Update::default()
            .add("tries", 1)
            .set("expires_at", now_epoch_seconds() + 120);
        let below_the_allowance = Condition::Newer {
            attr: "tries".into(),
            version: u64::from(per_minute),
        };
        match self
            .table
            .update(&key, one_more, Some(below_the_allowance))
            .await
        {
            Ok(_) => Ok(()),
            Err(StoreError::ConditionFailed { .. }) => Err(too_many(now)),
            Err(other) => Err(other.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_try_is_told_when_its_minute_ends() {
        let at = |second| match too_many(second) {
            CommandError::TooManyTries { retry_after_s } => retry_after_s,
            other => panic!("{other:?}"),
        };
        assert_eq!(at(10), 50);
        assert_eq!(at(59), 1);
        assert_eq!(at(60), 60, "a new minute's first second");
        assert_eq!(at(29_530_000 * 60 + 15), 45, "seconds since the epoch");
    }

    #[test]
    fn an_email_is_one_subject_however_it_is_written() {
        let ana = Tried::SignIn("Ana@Example.com ").subject();
        assert_eq!(ana, Tried::SignIn("ana@example.com").subject());
        let user = UserId::generate();
        assert_ne!(ana, Tried::Password(&user).subject());
        let long = "a".repeat(10_000);
        assert!(
            Tried::SignIn(&long).subject().len() < 300,
            "cut at an email's length"
        );
    }
}
