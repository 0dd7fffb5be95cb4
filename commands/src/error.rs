//! The error of every command handler. Validation errors name the field and the reason;
//! conflicts name what conflicted; storage failures keep their cause for the log.

use infra::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    /// The input is invalid; nothing was written.
    #[error("{field}: {reason}")]
    Validation { field: &'static str, reason: String },
    /// The thing the command is about does not exist (or is not the caller's).
    #[error("{0} not found")]
    NotFound(&'static str),
    /// Another account already uses this email.
    #[error("email already registered")]
    EmailTaken,
    /// Email and password do not match an account.
    #[error("invalid credentials")]
    InvalidCredentials,
    /// The refresh token is not a session's current one (unknown, ended, expired, or
    /// already used: a used one ends its session).
    #[error("invalid refresh token")]
    InvalidSession,
    /// The account is being deleted.
    #[error("account is being deleted")]
    AccountDeleted,
    /// The state does not allow this change (a completed goal cannot be resumed...).
    /// The text is shown to the client: it names the state, never an internal cause.
    #[error("conflict: {0}")]
    Conflict(String),
    /// The provider account is connected to another Vitals account: a provider
    /// identity belongs to one account at a time.
    #[error("this provider account is connected to another account")]
    ProviderIdentityTaken,
    /// The server is at capacity for this kind of work (password hashing); try again
    /// after the given seconds. Nothing was written.
    #[error("busy, try again in {retry_after_s} s")]
    Busy { retry_after_s: u64 },
    /// A credential was tried too often this minute (by every process together); try
    /// again after the given seconds. Nothing was checked.
    #[error("too many tries, try again in {retry_after_s} s")]
    TooManyTries { retry_after_s: u64 },
    /// Something inside failed (a value that does not serialize, a stored item that does
    /// not decode). The cause is for the log, never for the client.
    #[error("internal failure: {0}")]
    Internal(String),
    /// The idempotency key was used before with a different request.
    #[error("idempotency key reused with a different request")]
    IdempotencyKeyReused,
    /// Too many concurrent writers; the command gave up after its retries.
    #[error("too much contention, try again")]
    Contention,
    /// A provider (OAuth, wearable, weather) failed.
    #[error("provider failed: {0}")]
    Provider(String),
    /// The webhook's signature or timestamp does not verify.
    #[error("webhook signature invalid")]
    BadSignature,
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl CommandError {
    pub fn invalid(field: &'static str, reason: impl Into<String>) -> Self {
        CommandError::Validation {
            field,
            reason: reason.into(),
        }
    }
}
