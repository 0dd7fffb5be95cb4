//! What every command carries besides its input, and what every command returns.

use crate::CommandError;
use crate::idempotency::IdempotencyKey;
use events_schema::ids::UserId;

/// The caller and the request around a command.
#[derive(Debug, Clone)]
pub struct CommandMeta {
    /// The user the bearer token names.
    pub user: UserId,
    /// The client's `Idempotency-Key`, if any.
    pub idempotency_key: Option<IdempotencyKey>,
    /// Shared by every event of one request.
    pub correlation_id: Option<String>,
    /// The caller's IANA timezone, when known (the token carries it): it names the days
    /// of what the command records without a timezone of its own.
    pub timezone: Option<String>,
}

impl CommandMeta {
    pub fn new(user: UserId) -> Self {
        Self {
            user,
            idempotency_key: None,
            correlation_id: None,
            timezone: None,
        }
    }

    /// With the caller's timezone.
    pub fn in_timezone(mut self, timezone: Option<String>) -> Self {
        self.timezone = timezone;
        self
    }

    /// With an idempotency key given as text (validated).
    pub fn with_idempotency_key(mut self, key: &str) -> Result<Self, CommandError> {
        self.idempotency_key = Some(IdempotencyKey::parse(key)?);
        Ok(self)
    }

    /// With an idempotency key given as text (validated), the caller's for `operation`
    /// only.
    pub fn with_scoped_idempotency_key(
        mut self,
        key: &str,
        operation: &str,
    ) -> Result<Self, CommandError> {
        self.idempotency_key = Some(IdempotencyKey::parse(key)?.for_operation(operation)?);
        Ok(self)
    }

    pub fn user_pk(&self) -> String {
        events_schema::keys::PartitionKey::User(self.user.clone()).to_string()
    }
}

/// A command's result; `replayed` when it is the stored result of an earlier request
/// with the same idempotency key or external id (nothing was written this time).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome<T> {
    pub value: T,
    pub replayed: bool,
}

impl<T> Outcome<T> {
    pub fn new(value: T) -> Self {
        Self {
            value,
            replayed: false,
        }
    }

    pub fn replayed(value: T) -> Self {
        Self {
            value,
            replayed: true,
        }
    }
}
