//! Tries at a credential, counted in the identity table so that every process shares
//! one count: each Lambda execution environment and each `vitals serve` limits only what
//! reaches it, so N of them would otherwise allow N times the guesses. One item per
//! subject and minute (`TRIES#<digest>#<minute>`, expiring two minutes on), whose
//! digest keeps the subject (an email) out of the table. A try is one atomic update:
//! add one, on condition the count is below the allowance, so tries at once from any
//! number of processes are each counted, none past it (no read, no retry).
//!
//! Wrong passwords are counted too, per email and client address
//! (`TRIES#<digest of both>#<minute>`): once an email's tries are spent, an address that
//! has not failed at it lately is let through on an allowance of its own (the owner, not
//! the guessers; see `vitals::http::limits`).

use super::IdentityCommands;
use crate::CommandError;
use events_schema::ids::UserId;
use events_schema::keys::{Digest, PartitionKey, SortKey};
use infra::store::{Condition, Key, StoreError, Update, now_epoch_seconds};
use std::net::IpAddr;

/// What is tried.
#[derive(Debug, Clone, Copy)]
pub enum Tried<'a> {
    /// A sign-in or sign-up for an email (compared as the identity context normalizes
    /// it; anything past an email's 254 characters is no account's).
    SignIn(&'a str),
    /// A sign-in for an email, once its `SignIn` tries are spent, from an address that
    /// has not failed at it lately ([`IdentityCommands::has_failed`]): a count of its
    /// own, so the guessers' tries do not spend it.
    SignInAfresh(&'a str),
    /// A signed-in user's current password (a password change proves it).
    Password(&'a UserId),
}

/// An email as the identity context compares it, cut at an email's 254 characters.
fn normalized(email: &str) -> String {
    email.trim().to_lowercase().chars().take(254).collect()
}

impl Tried<'_> {
    fn subject(&self) -> String {
        match self {
            Tried::SignIn(email) => format!("email:{}", normalized(email)),
            Tried::SignInAfresh(email) => format!("afresh:{}", normalized(email)),
            Tried::Password(user) => format!("password:{user}"),
        }
    }
}

/// The subject of the wrong passwords for `email` from `from`.
fn failures(email: &str, from: IpAddr) -> String {
    format!("failed:{} from:{from}", normalized(email))
}

/// How long a counting item outlives its minute's start: it is read during its minute
/// and the next.
const KEPT_S: i64 = 180;

/// A try refused `second` seconds into its minute: come back when the minute ends.
fn too_many(second: i64) -> CommandError {
    let retry_after_s = u64::try_from(60 - second.rem_euclid(60)).unwrap_or(60);
    CommandError::TooManyTries { retry_after_s }
}

/// The counting item of `subject` in `minute`.
fn counted(subject: &str, minute: u64) -> Key {
    Key::new(
        PartitionKey::Tries(Digest::tries(subject), minute).to_string(),
        SortKey::Tries.to_string(),
    )
}

impl IdentityCommands {
    /// Now (seconds since the epoch, by the handlers' clock) and its minute.
    fn minute(&self) -> (i64, u64) {
        let now = self.clock.now().millis().div_euclid(1000);
        (now, u64::try_from(now.div_euclid(60)).unwrap_or(0))
    }

    /// Counts one try at `tried` this minute: `TooManyTries` (nothing counted) when
    /// `per_minute` were counted already, by any process.
    pub async fn count_try(&self, tried: Tried<'_>, per_minute: u32) -> Result<(), CommandError> {
        let (now, minute) = self.minute();
        let key = counted(&tried.subject(), minute);
        // The store expires items by its own (real) clock, whatever the handlers'.
        let one_more = Update::default()
            .add("tries", 1)
            .set("expires_at", now_epoch_seconds() + KEPT_S);
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

    /// Counts a wrong password (or an unknown email) for `email` from the client address
    /// `from` (as the limits count addresses), this minute.
    pub async fn count_failure(&self, email: &str, from: IpAddr) -> Result<(), CommandError> {
        let (_, minute) = self.minute();
        let key = counted(&failures(email, from), minute);
        let one_more = Update::default()
            .add("failures", 1)
            .set("expires_at", now_epoch_seconds() + KEPT_S);
        self.table.update(&key, one_more, None).await?;
        Ok(())
    }

    /// Whether `from` has failed at `email` this minute or the last (by any process).
    pub async fn has_failed(&self, email: &str, from: IpAddr) -> Result<bool, CommandError> {
        let (_, minute) = self.minute();
        let subject = failures(email, from);
        for minute in [minute, minute.saturating_sub(1)] {
            if self
                .table
                .get(&counted(&subject, minute), true)
                .await?
                .is_some()
            {
                return Ok(true);
            }
        }
        Ok(false)
    }
}

/// The calls this module makes, as declared access patterns (see `infra::access`).
pub(crate) mod access {
    /// The credential-tries counter's call.
    pub static ACCESS: &[infra::access::AccessPattern] = &[infra::access::AccessPattern::new(
        "count a credential try",
        events_schema::Context::Identity,
        infra::access::Op::Update,
        "TRIES#",
        infra::access::Sk::exact("TRIES"),
        "POST /v1/auth/login, POST /v1/me/password, DELETE /v1/me (per subject per minute)",
    )
    .volume(0.5)
    .size(1, 150)];
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
        assert_ne!(ana, Tried::SignInAfresh("ana@example.com").subject());
        let here: IpAddr = "10.0.0.1".parse().expect("ip");
        assert_eq!(
            failures("Ana@Example.com ", here),
            failures("ana@example.com", here)
        );
        assert_ne!(ana, failures("ana@example.com", here));
    }

    #[tokio::test]
    async fn a_failure_is_remembered_for_its_address_and_email_only() {
        let dir = tempfile::tempdir().expect("temporary directory");
        let store = infra::embedded::EmbeddedStore::open(dir.path()).expect("store");
        let identity = IdentityCommands::new(infra::table::Table::new(std::sync::Arc::new(store)));
        let ip = |text: &str| -> IpAddr { text.parse().expect("ip") };
        let ana = "ana@example.com";
        assert!(
            !identity
                .has_failed(ana, ip("10.0.0.1"))
                .await
                .expect("read")
        );
        identity
            .count_failure("Ana@Example.com", ip("10.0.0.1"))
            .await
            .expect("counted");
        assert!(
            identity
                .has_failed(ana, ip("10.0.0.1"))
                .await
                .expect("read")
        );
        assert!(
            !identity
                .has_failed(ana, ip("10.0.0.2"))
                .await
                .expect("read")
        );
        let bob = "bob@example.com";
        assert!(
            !identity
                .has_failed(bob, ip("10.0.0.1"))
                .await
                .expect("read")
        );
    }
}
