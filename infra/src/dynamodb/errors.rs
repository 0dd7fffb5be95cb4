//! Mapping SDK errors onto the port's typed errors. The SDK has already retried
//! throttling and transient faults with backoff by the time an error reaches here.

use super::marshal;
use crate::store::{CancelReason, StoreError};
use aws_sdk_dynamodb::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::types::CancellationReason;

const THROTTLING: [&str; 4] = [
    "ProvisionedThroughputExceededException",
    "ThrottlingException",
    "RequestLimitExceeded",
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

pub(super) fn cancellation(reasons: &[CancellationReason]) -> StoreError {
    let reasons = reasons
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
    StoreError::TransactionCanceled { reasons }
}
