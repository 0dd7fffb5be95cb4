//! The one optimistic-commit loop every command shares: read, decide, commit with
//! conditions on what was read; when a condition fails because someone else wrote
//! first, or the transaction met another one on an item (a conflict: nothing was
//! written), that attempt lost a race: wait a jittered moment and try again from the
//! read; after `MAX_ATTEMPTS` lost races, report contention.

use crate::CommandError;
use crate::idempotency::{self, Committed};
use crate::meta::{CommandMeta, Outcome};
use infra::store::CancelReason;
use infra::table::{Action, ContextTable, Table};
use serde::Serialize;
use serde::de::DeserializeOwned;

/// What one attempt came to.
#[derive(Debug)]
pub(crate) enum Attempt<T> {
    Done(T),
    /// Someone else wrote what the attempt read: read again and decide again.
    LostRace,
}

/// Runs `$attempt`, a block evaluating to `Result<Attempt<T>, CommandError>`, until it
/// is done or fails, backing off between attempts; `CommandError::Contention` after
/// `MAX_ATTEMPTS` lost races. The value of the whole is `Result<T, CommandError>`.
///
/// The block is the body of an async block: `return` and `?` inside it leave that
/// block, not the command's function. What it returns decides: `Ok(Attempt::LostRace)`
/// tries again from the read, `Ok(Attempt::Done(x))` makes `x` the command's value,
/// and an `Err` (a `?` included) is the command's result, with no further attempt:
///
/// ```text
/// optimistic::run!({
///     let read = self.table.get(&key, true).await?; // an error ends the command
///     let Some(actions) = decide(read)? else {
///         return Ok(Attempt::Done(Outcome::replayed(()))); // nothing to write
///     };
///     settled(idempotency::commit(&self.table, meta, &pk, &input, actions, ()).await?)
/// })
/// ```
///
/// A macro rather than a function taking an async closure: the attempt borrows the
/// command's state mutably between attempts (a summary refreshed from a cancellation),
/// and a future returned by a closure cannot borrow from it; an async block awaited in
/// place can, and stays `Send`.
macro_rules! run {
    ($attempt:block) => {{
        let mut outcome = Err($crate::CommandError::Contention);
        for n in 0..$crate::retry::MAX_ATTEMPTS {
            $crate::retry::backoff(n).await;
            let step: Result<$crate::optimistic::Attempt<_>, $crate::CommandError> =
                async $attempt.await;
            match step {
                Ok($crate::optimistic::Attempt::Done(value)) => {
                    outcome = Ok(value);
                    break;
                }
                Ok($crate::optimistic::Attempt::LostRace) => continue,
                Err(error) => {
                    outcome = Err(error);
                    break;
                }
            }
        }
        outcome
    }};
}
pub(crate) use run;

/// The usual reading of a commit: done, a lost race (any failed condition or
/// conflict), or an error for anything else.
pub(crate) fn settled<T>(committed: Committed<T>) -> Result<Attempt<Outcome<T>>, CommandError> {
    match committed {
        Committed::Done(outcome) => Ok(Attempt::Done(outcome)),
        Committed::Cancelled(reasons) if CancelReason::lost_race(&reasons) => Ok(Attempt::LostRace),
        Committed::Cancelled(reasons) => Err(idempotency::unexpected(&reasons)),
    }
}

/// Commits `actions` (see [`idempotency::commit`]) again for as long as the
/// transaction is cancelled as a conflict only: nothing was written and every condition
/// held, so the same actions are still right. For commands whose writes depend on no
/// read that a condition does not guard; the outcome is done, or cancelled for another
/// reason (for the caller to read), or `Contention` after `MAX_ATTEMPTS` conflicts.
pub(crate) async fn commit_through_conflicts<C: ContextTable, T>(
    table: &Table<C>,
    meta: &CommandMeta,
    record_pk: &str,
    request: &impl Serialize,
    actions: Vec<Action>,
    response: T,
) -> Result<Committed<T>, CommandError>
where
    T: Serialize + DeserializeOwned + Clone,
{
    run!({
        let (actions, response) = (actions.clone(), response.clone());
        match idempotency::commit(table, meta, record_pk, request, actions, response).await? {
            Committed::Cancelled(reasons) if CancelReason::conflict_only(&reasons) => {
                Ok(Attempt::LostRace)
            }
            committed => Ok(Attempt::Done(committed)),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::retry::MAX_ATTEMPTS;

    #[tokio::test]
    async fn lost_races_are_tried_again_until_done() {
        let mut attempts = 0;
        let done: Result<u32, CommandError> = run!({
            attempts += 1;
            if attempts < 3 {
                return Ok(Attempt::LostRace);
            }
            Ok(Attempt::Done(attempts))
        });
        assert_eq!(done.ok(), Some(3));
    }

    #[tokio::test]
    async fn every_race_lost_is_contention_after_the_last_attempt() {
        let mut attempts = 0;
        let lost: Result<(), CommandError> = run!({
            attempts += 1;
            Ok(Attempt::LostRace)
        });
        assert!(matches!(lost, Err(CommandError::Contention)));
        assert_eq!(attempts, MAX_ATTEMPTS);
    }

    #[tokio::test]
    async fn an_error_ends_the_attempts_at_once() {
        let mut attempts = 0;
        let failed: Result<(), CommandError> = run!({
            attempts += 1;
            Err(CommandError::NotFound("meal"))
        });
        assert!(matches!(failed, Err(CommandError::NotFound("meal"))));
        assert_eq!(attempts, 1);
    }
}
