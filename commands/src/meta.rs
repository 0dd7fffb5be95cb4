//! What every command carries besides its input (the caller, the idempotency key, the
//! correlation id) and what every command returns.

use crate::CommandError;
use events_schema::ids::{RequestKey, UserId};
use events_schema::keys::SortKey;

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

/// A client's `Idempotency-Key`: 1 to 128 visible ASCII characters, no `#`; with the
/// operation it was sent to, when the caller names one (the HTTP API does): a key is the
/// caller's for that operation only, so the same key on another operation is another
/// request, never the replay of this one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdempotencyKey {
    key: RequestKey,
    operation: Option<events_schema::ids::OperationName>,
}

impl IdempotencyKey {
    pub fn parse(raw: &str) -> Result<Self, CommandError> {
        let ok = !raw.is_empty()
            && raw.len() <= 128
            && raw.bytes().all(|b| b.is_ascii_graphic() && b != b'#');
        match RequestKey::parse(raw) {
            Ok(key) if ok => Ok(Self {
                key,
                operation: None,
            }),
            _ => Err(CommandError::invalid(
                "idempotency_key",
                "must be 1 to 128 visible ASCII characters without '#'",
            )),
        }
    }

    /// The key, for `operation` only.
    pub fn for_operation(mut self, operation: &str) -> Result<Self, CommandError> {
        self.operation = Some(
            events_schema::ids::OperationName::parse(operation)
                .map_err(|e| CommandError::Internal(e.to_string()))?,
        );
        Ok(self)
    }

    pub fn sort_key(&self) -> String {
        match &self.operation {
            Some(operation) => {
                SortKey::ScopedIdempotency(operation.clone(), self.key.clone()).to_string()
            }
            None => SortKey::Idempotency(self.key.clone()).to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_validated() {
        assert!(IdempotencyKey::parse("abc-123_XYZ").is_ok());
        for bad in ["", "a#b", "a b", "é", &"k".repeat(129)] {
            assert!(IdempotencyKey::parse(bad).is_err(), "{bad:?}");
        }
    }
}
