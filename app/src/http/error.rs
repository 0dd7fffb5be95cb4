//! The one error type of the HTTP API: a status, a stable code and a safe message, as
//! `{"error": {"code", "message"}}`. Internal causes are logged, never shown.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use commands::CommandError;
use readmodels::QueryError;
use serde::Serialize;

/// The body of every error response.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[schema(example = json!({"error": {"code": "not_found", "message": "not found"}}))]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

/// What went wrong: a stable, machine-readable code and a message safe to show.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ErrorDetail {
    /// Stable code, such as `validation`, `not_found`, `unauthorized`, `email_taken`,
    /// `conflict`, `contention`, `idempotency_key_reused`, `rate_limited`, `throttled`.
    pub code: &'static str,
    /// Human-readable; for `validation`, starts with the offending field.
    pub message: String,
}

#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
    /// Seconds the client should wait before trying again (`Retry-After`), for 429 and
    /// 503.
    pub retry_after: Option<u64>,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
            retry_after: None,
        }
    }

    /// With a `Retry-After` of `seconds` (at least one).
    pub fn retry_after(mut self, seconds: u64) -> Self {
        self.retry_after = Some(seconds.max(1));
        self
    }

    /// 429 `rate_limited`, to be tried again after `seconds`.
    pub fn rate_limited(seconds: u64) -> Self {
        Self::new(
            StatusCode::TOO_MANY_REQUESTS,
            "rate_limited",
            "too many requests, slow down",
        )
        .retry_after(seconds)
    }

    /// 422 `validation`: `field` and the rule it breaks.
    pub fn validation(field: &str, reason: impl std::fmt::Display) -> Self {
        Self::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "validation",
            format!("{field}: {reason}"),
        )
    }

    pub fn not_found() -> Self {
        Self::new(StatusCode::NOT_FOUND, "not_found", "not found")
    }

    pub fn unauthorized() -> Self {
        Self::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "a valid bearer token is required",
        )
    }

    pub fn internal(cause: impl std::fmt::Display) -> Self {
        tracing::error!(%cause, "request failed");
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "something went wrong",
        )
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = ErrorBody {
            error: ErrorDetail {
                code: self.code,
                message: self.message,
            },
        };
        let mut response = (self.status, Json(body)).into_response();
        if let Some(seconds) = self.retry_after {
            response
                .headers_mut()
                .insert(axum::http::header::RETRY_AFTER, seconds.into());
        }
        response
    }
}

impl ApiError {
    /// 409 `code`: the request conflicts with what is stored.
    fn conflict(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, code, message)
    }

    /// 401 `code`: the caller is not let in, for the reason `message` says.
    fn refused(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, code, message)
    }

    /// 503 `busy`, to be tried again after `retry_after_s` seconds.
    fn busy(retry_after_s: u64) -> Self {
        Self::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "busy",
            "the server is busy, try again shortly",
        )
        .retry_after(retry_after_s)
    }

    /// 429 `throttled`: the store refused the request for now; try again in a second.
    fn throttled() -> Self {
        Self::new(
            StatusCode::TOO_MANY_REQUESTS,
            "throttled",
            "try again shortly",
        )
        .retry_after(1)
    }

    /// 502 `provider`: an external provider failed (`cause` is logged, not shown).
    fn provider(cause: impl std::fmt::Display) -> Self {
        tracing::warn!(%cause, "provider failed");
        Self::new(
            StatusCode::BAD_GATEWAY,
            "provider",
            "the provider did not answer as expected",
        )
    }
}

impl From<CommandError> for ApiError {
    fn from(error: CommandError) -> Self {
        use CommandError::*;
        match error {
            Validation { field, reason } => Self::validation(field, reason),
            NotFound(_) => Self::not_found(),
            EmailTaken => Self::conflict("email_taken", "this email is already registered"),
            InvalidCredentials => {
                Self::refused("invalid_credentials", "email or password is wrong")
            }
            AccountDeleted => Self::refused("account_deleted", "this account is being deleted"),
            InvalidSession => Self::refused(
                "invalid_refresh_token",
                "the refresh token is unknown, expired or already used; sign in again",
            ),
            Conflict(reason) => Self::conflict("conflict", reason),
            ProviderIdentityTaken => Self::conflict(
                "provider_account_taken",
                "this provider account is connected to another account",
            ),
            Busy { retry_after_s } => Self::busy(retry_after_s),
            TooManyTries { retry_after_s } => Self::rate_limited(retry_after_s),
            Internal(cause) => Self::internal(cause),
            IdempotencyKeyReused => Self::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "idempotency_key_reused",
                "this Idempotency-Key was used with a different request",
            ),
            Contention => Self::conflict("contention", "too many concurrent changes, try again"),
            BadSignature => Self::refused("bad_signature", "the webhook signature does not verify"),
            Provider(cause) => Self::provider(cause),
            Store(infra::StoreError::Throttled) => Self::throttled(),
            Store(cause) => Self::internal(cause),
        }
    }
}

impl From<QueryError> for ApiError {
    fn from(error: QueryError) -> Self {
        match error {
            QueryError::Invalid { field, reason } => Self::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "validation",
                format!("{field}: {reason}"),
            ),
            QueryError::Store(cause) => Self::internal(cause),
        }
    }
}
