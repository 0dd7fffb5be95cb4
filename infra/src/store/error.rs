//! The port's typed errors. Backends map their own failures onto these, so callers can
//! tell a failed condition from a conflict, a throttle or a bad request.

use super::Item;

/// Why one action of a cancelled transaction did not apply.
#[derive(Debug, Clone, PartialEq)]
pub enum CancelReason {
    /// This action was fine; another one cancelled the transaction.
    None,
    /// Its condition did not hold; `existing` is the item it was checked against
    /// (absent when there was none), so callers need no extra read to see why.
    ConditionFailed { existing: Option<Item> },
    /// Another transaction was writing the same item at the same time.
    Conflict,
    /// Any other reason, with the backend's code.
    Other(String),
}

impl CancelReason {
    /// Whether one of a cancelled transaction's actions failed its condition (what was
    /// read is no longer so).
    pub fn failed_condition(reasons: &[CancelReason]) -> bool {
        reasons
            .iter()
            .any(|r| matches!(r, CancelReason::ConditionFailed { .. }))
    }

    /// Whether a cancellation means another writer got there first (a version that
    /// moved on, or a transaction conflict): read again and retry.
    pub fn lost_race(reasons: &[CancelReason]) -> bool {
        reasons.iter().any(|r| {
            matches!(
                r,
                CancelReason::ConditionFailed { .. } | CancelReason::Conflict
            )
        })
    }

    /// Whether a cancelled transaction met another one on an item and no condition
    /// failed: nothing was written and nothing read has changed, so trying it again
    /// unchanged may succeed.
    pub fn conflict_only(reasons: &[CancelReason]) -> bool {
        reasons.contains(&CancelReason::Conflict) && !Self::failed_condition(reasons)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A single write's condition did not hold; nothing was written.
    #[error("condition failed")]
    ConditionFailed { existing: Option<Item> },
    /// A transaction was cancelled; nothing was written. One reason per action.
    #[error("transaction cancelled: {}", describe(.reasons))]
    TransactionCanceled { reasons: Vec<CancelReason> },
    /// Throttled even after the retries with backoff.
    #[error("throttled by the backend")]
    Throttled,
    /// The request itself is invalid (too many actions, bad key, bad cursor, ...).
    #[error("invalid request: {0}")]
    Validation(String),
    /// The backend failed; the cause is for logs, not for users.
    #[error("storage backend failed: {0}")]
    Backend(String),
}

fn describe(reasons: &[CancelReason]) -> String {
    let failed: Vec<String> = reasons
        .iter()
        .enumerate()
        .filter(|(_, r)| **r != CancelReason::None)
        .map(|(i, r)| match r {
            CancelReason::ConditionFailed { .. } => format!("action {i}: condition failed"),
            CancelReason::Conflict => format!("action {i}: conflict"),
            CancelReason::Other(code) => format!("action {i}: {code}"),
            CancelReason::None => String::new(),
        })
        .collect();
    if failed.is_empty() {
        // What a caller is left with when it took out the reasons it understood.
        return "no action gave a reason".to_owned();
    }
    failed.join(", ")
}

impl StoreError {
    /// Indexes of the transaction actions whose condition failed.
    pub fn failed_conditions(&self) -> Vec<usize> {
        match self {
            StoreError::TransactionCanceled { reasons } => reasons
                .iter()
                .enumerate()
                .filter(|(_, r)| matches!(r, CancelReason::ConditionFailed { .. }))
                .map(|(i, _)| i)
                .collect(),
            _ => Vec::new(),
        }
    }

    /// Whether trying again unchanged may succeed (conflicts and throttling).
    pub fn is_retryable(&self) -> bool {
        match self {
            StoreError::Throttled => true,
            StoreError::TransactionCanceled { reasons } => CancelReason::conflict_only(reasons),
            _ => false,
        }
    }
}
