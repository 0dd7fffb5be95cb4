//! Idempotency keys. A command with a key also writes `IDEMPOTENCY#<key>` (request hash
//! and response) in the same transaction, on condition that it does not exist. A retry
//! is then detected from the cancellation reason of that action, with no extra read on
//! the happy path: same request -> the stored response, different request -> an error.

use crate::CommandError;
use crate::meta::{CommandMeta, Outcome};
use infra::store::{CancelReason, Condition, Item, StoreError, now_epoch_seconds};
use infra::table::{Action, ContextTable, Table};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// How long a key is remembered. This is a request record, not user data.
pub const KEY_TTL_SECONDS: i64 = 24 * 3600;

/// A stable hash of a command's input.
pub fn request_hash(request: &impl Serialize) -> String {
    let json = serde_json::to_vec(request).unwrap_or_default();
    hex::encode(Sha256::digest(&json))
}

/// How a commit ended when it did not simply succeed.
#[derive(Debug)]
pub enum Committed<T> {
    Done(Outcome<T>),
    /// Cancelled: one reason per action of the command's own (the idempotency record
    /// and the erasure check excluded), then a `Conflict` if one of those two met
    /// another transaction, then any backend's code (`Other`) they gave.
    Cancelled(Vec<CancelReason>),
}

/// Commits `actions` on `table`, plus the idempotency record in partition `record_pk`
/// when the command has a key; returns `response`, or the stored one on a retry.
///
/// Every commit also checks that the user's account is not erased (no tombstone in this
/// context's table): once a context has begun erasing a user, nothing of theirs can be
/// written there again, whatever token or retry arrives late.
pub async fn commit<C: ContextTable, T: Serialize + DeserializeOwned>(
    table: &Table<C>,
    meta: &CommandMeta,
    record_pk: &str,
    request: &impl Serialize,
    mut actions: Vec<Action>,
    response: T,
) -> Result<Committed<T>, CommandError> {
    let hash = request_hash(request);
    let tombstone = infra::store::Key::tombstone(&meta.user);
    // A command that writes the tombstone itself (the deletion request) checks nothing.
    let guarded = !actions.iter().any(|a| a.targets(&tombstone));
    if let Some(key) = &meta.idempotency_key {
        actions.push(record_put(record_pk, &key.sort_key(), &hash, &response)?);
    }
    if guarded {
        actions.push(Action::Check {
            key: tombstone,
            condition: Condition::ItemNotExists,
        });
    }
    match table.transact(actions).await {
        Ok(()) => Ok(Committed::Done(Outcome::new(response))),
        Err(StoreError::TransactionCanceled { reasons }) => {
            cancelled(reasons, guarded, meta.idempotency_key.is_some(), &hash)
        }
        Err(e) => Err(e.into()),
    }
}

/// The conditional put of the idempotency record (sort key `record_sk`, in partition
/// `record_pk`): the request's hash and the response to replay, expiring after
/// [`KEY_TTL_SECONDS`]; it fails if the key was used before.
fn record_put<T: Serialize>(
    record_pk: &str,
    record_sk: &str,
    hash: &str,
    response: &T,
) -> Result<Action, CommandError> {
    let stored = serde_json::to_value(response)
        .map_err(|e| CommandError::Internal(format!("response does not serialize: {e}")))?;
    let record: Item = match json!({
        "pk": record_pk, "sk": record_sk, "request_hash": hash, "response": stored,
        "expires_at": now_epoch_seconds() + KEY_TTL_SECONDS,
    }) {
        Value::Object(map) => map,
        _ => Item::new(),
    };
    Ok(Action::Put {
        item: record,
        condition: Some(Condition::ItemNotExists),
    })
}

/// Reads a cancelled commit's `reasons`, whose tail is what [`commit`] appended: the
/// idempotency record (when `keyed`), then the erasure check (when `guarded`). An
/// erased account is an error, a used key replays its first answer (or is an error if
/// the request differs), and anything else is handed back as [`Committed::Cancelled`].
fn cancelled<T: DeserializeOwned>(
    mut reasons: Vec<CancelReason>,
    guarded: bool,
    keyed: bool,
    hash: &str,
) -> Result<Committed<T>, CommandError> {
    // A backend's own code for the record or the erasure check: not read here,
    // kept, so an error reports it.
    let mut unread = Vec::new();
    let mut met_conflict = false;
    // The erasure check is the very last action.
    if guarded {
        match reasons.pop() {
            Some(CancelReason::ConditionFailed { .. }) => {
                return Err(CommandError::AccountDeleted);
            }
            Some(CancelReason::Conflict) => met_conflict = true,
            Some(other @ CancelReason::Other(_)) => unread.push(other),
            _ => {}
        }
    }
    // The record is the last action before it.
    if keyed {
        match reasons.pop() {
            Some(CancelReason::ConditionFailed {
                existing: Some(record),
            }) => return replay(&record, hash).map(Committed::Done),
            Some(CancelReason::Conflict) => met_conflict = true,
            Some(other @ CancelReason::Other(_)) => unread.push(other),
            _ => {}
        }
    }
    // Another transaction met the record or the erasure check: the command may
    // try again, so the conflict stays among its reasons (after its own).
    if met_conflict {
        reasons.push(CancelReason::Conflict);
    }
    reasons.extend(unread);
    Ok(Committed::Cancelled(reasons))
}

/// The first answer to `request` under the caller's key, if the key was used: for
/// commands whose preconditions a first success removes (what was eaten, removed or
/// ended is not there to check again), so a retry replays instead of failing them.
pub async fn replayed<C: ContextTable, T: DeserializeOwned>(
    table: &Table<C>,
    meta: &CommandMeta,
    request: &impl Serialize,
) -> Result<Option<Outcome<T>>, CommandError> {
    let Some(key) = &meta.idempotency_key else {
        return Ok(None);
    };
    let record_key = infra::store::Key::new(meta.user_pk(), key.sort_key());
    match table.get(&record_key, true).await? {
        Some(record) => replay(&record, &request_hash(request)).map(Some),
        None => Ok(None),
    }
}

fn replay<T: DeserializeOwned>(record: &Item, hash: &str) -> Result<Outcome<T>, CommandError> {
    if record.get("request_hash").and_then(Value::as_str) != Some(hash) {
        return Err(CommandError::IdempotencyKeyReused);
    }
    let response = record.get("response").cloned().unwrap_or(Value::Null);
    serde_json::from_value(response)
        .map(Outcome::replayed)
        .map_err(|e| CommandError::Internal(format!("stored response does not decode: {e}")))
}

impl<T> Committed<T> {
    /// The outcome of a commit that has no cancellation of its own to expect.
    pub fn or_unexpected(self) -> Result<Outcome<T>, CommandError> {
        match self {
            Committed::Done(outcome) => Ok(outcome),
            Committed::Cancelled(reasons) => Err(unexpected(&reasons)),
        }
    }
}

/// A cancellation the command did not expect: a storage conflict to retry, or a bug.
pub fn unexpected(reasons: &[CancelReason]) -> CommandError {
    if reasons.contains(&CancelReason::Conflict) {
        CommandError::Contention
    } else {
        CommandError::Store(StoreError::TransactionCanceled {
            reasons: reasons.to_vec(),
        })
    }
}

/// The items of a command's transaction as an access pattern declares them: `$items`,
/// plus what [`commit`] adds: the idempotency record (in the `$record` partition) and
/// the check that the user is not being erased.
macro_rules! command_tx {
    ($table:ident, $record:literal, [$($item:expr),* $(,)?]) => {
        &[
            $($item,)*
            infra::access::Written::new(
                infra::access::Action::Put,
                events_schema::Context::$table,
                $record,
                "IDEMPOTENCY#",
            )
            .optional(),
            infra::access::Written::new(
                infra::access::Action::Check,
                events_schema::Context::$table,
                "ERASED#",
                "TOMBSTONE",
            ),
        ]
    };
}
pub(crate) use command_tx;

/// The idempotency record read of every context (a retried request's answer).
macro_rules! replay_pattern {
    ($table:ident) => {
        infra::access::AccessPattern::new(
            "replay a retried request",
            events_schema::Context::$table,
            infra::access::Op::get(true),
            "USER#",
            infra::access::Sk::exact("IDEMPOTENCY#"),
            "any command sent with an Idempotency-Key",
        )
        .volume(0.5)
        .size(1, 800)
    };
}

/// The calls this module makes, as declared access patterns (see `infra::access`).
pub(crate) mod access {
    /// The idempotency reads (one per context that takes keys).
    pub static ACCESS: &[infra::access::AccessPattern] = &[
        replay_pattern!(Identity),
        replay_pattern!(Nutrition),
        replay_pattern!(Activity),
        replay_pattern!(Sleep),
        replay_pattern!(Goals),
        replay_pattern!(Integrations),
    ];
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_hash_depends_on_content() {
        assert_eq!(
            request_hash(&json!({"a": 1})),
            request_hash(&json!({"a": 1}))
        );
        assert_ne!(
            request_hash(&json!({"a": 1})),
            request_hash(&json!({"a": 2}))
        );
    }
}
