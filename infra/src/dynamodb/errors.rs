//! Mapping SDK errors onto the port's typed errors. The SDK has already retried
//! throttling and transient faults with backoff by the time an error reaches here.

use super::marshal;
use crate::store::{CancelReason, StoreError};
use aws_sdk_dynamodb::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::types::CancellationReason;

/// The codes of throttling: of a request, and of a transaction's cancellation reason
/// (`ProvisionedThroughputExceeded`, `ThrottlingError`).
const THROTTLING: [&str; 5] = [
    "ProvisionedThroughputExceededException",
    "ThrottlingException",
    "RequestLimitExceeded",
    "ProvisionedThroughputExceeded",
    "ThrottlingError",
];

/// Whether an error code says the request was throttled.
pub(super) fn is_throttling(code: &str) -> bool {
    THROTTLING.contains(&code)
}

/// The errors every operation shares.
pub(super) fn common<E, R>(error: SdkError<E, R>) -> StoreError
where
    E: ProvideErrorMetadata + std::error::Error + 'static,
    R: std::fmt::Debug,
{
    let code = error.code().unwrap_or_default().to_owned();
    let message = error.message().unwrap_or_default().to_owned();
    match code.as_str() {
        c if THROTTLING.contains(&c) => StoreError::Throttled,
        "ValidationException" => StoreError::Validation(message),
        "ResourceNotFoundException" => StoreError::Backend(format!(
            "table not found ({message}); run `vitals bootstrap` first"
        )),
        _ => StoreError::Backend(DisplayErrorContext(&error).to_string()),
    }
}

/// A cancelled transaction, one reason per action; one that only throttling cancelled
/// (no condition failed, no other transaction met it) is [`StoreError::Throttled`], as
/// the same request outside a transaction would be: the caller may try it again later,
/// and the codes say nothing about the items.
pub(super) fn cancellation(reasons: &[CancellationReason]) -> StoreError {
    let throttled = reasons.iter().any(|r| r.code().is_some_and(is_throttling));
    let reasons: Vec<CancelReason> = reasons
        .iter()
        .map(|reason| match reason.code() {
            None | Some("None") => CancelReason::None,
            Some("ConditionalCheckFailed") => CancelReason::ConditionFailed {
                existing: reason
                    .item()
                    .and_then(|item| marshal::from_attributes(item.clone()).ok()),
            },
            Some("TransactionConflict") => CancelReason::Conflict,
            Some(code) => CancelReason::Other(code.to_owned()),
        })
        .collect();
    let explained =
        CancelReason::failed_condition(&reasons) || reasons.contains(&CancelReason::Conflict);
    if throttled && !explained {
        return StoreError::Throttled;
    }
    StoreError::TransactionCanceled { reasons }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reason(code: &str) -> CancellationReason {
        CancellationReason::builder().code(code).build()
    }

    #[test]
    fn a_transaction_only_throttling_cancelled_is_throttled() {
        for code in ["ThrottlingError", "ProvisionedThroughputExceeded"] {
            let throttled = cancellation(&[reason("None"), reason(code)]);
            assert!(matches!(throttled, StoreError::Throttled), "{throttled:?}");
        }
        // A failed condition or a conflict explains the cancellation: its reasons stay.
        let failed = cancellation(&[reason("ConditionalCheckFailed"), reason("ThrottlingError")]);
        assert_eq!(failed.failed_conditions(), vec![0]);
        let met = cancellation(&[reason("TransactionConflict"), reason("ThrottlingError")]);
        assert!(
            matches!(&met, StoreError::TransactionCanceled { reasons }
                if reasons == &[CancelReason::Conflict, CancelReason::Other("ThrottlingError".into())]),
            "{met:?}"
        );
        // Another code stays a reason of its own.
        let other = cancellation(&[reason("None"), reason("ValidationError")]);
        assert!(
            matches!(&other, StoreError::TransactionCanceled { reasons }
                if reasons == &[CancelReason::None, CancelReason::Other("ValidationError".into())]),
            "{other:?}"
        );
    }
}
