//! Request extractors with the API's error shape: JSON bodies (400 malformed, 413 too
//! large, 422 wrong fields), raw bodies (413), query strings (400) and the
//! `Idempotency-Key` header. axum's own rejections are plain text; these answer with the
//! JSON error body like every other error.

use super::auth::AuthUser;
use super::error::ApiError;
use axum::extract::{FromRequest, Request};
use axum::http::{HeaderMap, StatusCode};
use commands::CommandMeta;
use serde::de::DeserializeOwned;

/// A JSON body; rejections become `ApiError`s.
pub struct ApiJson<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, ApiError> {
        match axum::Json::<T>::from_request(request, state).await {
            Ok(axum::Json(value)) => Ok(ApiJson(value)),
            Err(rejection) => {
                let status = rejection.status();
                let code = match status {
                    StatusCode::PAYLOAD_TOO_LARGE => "payload_too_large",
                    StatusCode::UNSUPPORTED_MEDIA_TYPE => "unsupported_media_type",
                    StatusCode::UNPROCESSABLE_ENTITY => "validation",
                    _ => "malformed_json",
                };
                let status = if status.is_server_error() {
                    StatusCode::BAD_REQUEST
                } else {
                    status
                };
                Err(ApiError::new(status, code, rejection.body_text()))
            }
        }
    }
}

/// A query string; a missing, repeated or ill-typed parameter is `400 bad_query`.
pub struct ApiQuery<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> axum::extract::FromRequestParts<S> for ApiQuery<T> {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        state: &S,
    ) -> Result<Self, ApiError> {
        axum::extract::Query::<T>::from_request_parts(parts, state)
            .await
            .map(|axum::extract::Query(value)| ApiQuery(value))
            .map_err(|rejection| {
                ApiError::new(StatusCode::BAD_REQUEST, "bad_query", rejection.body_text())
            })
    }
}

/// A raw body (webhooks, whose signature covers the exact bytes); over the body limit
/// is `413 payload_too_large`.
pub struct ApiBytes(pub axum::body::Bytes);

impl<S: Send + Sync> FromRequest<S> for ApiBytes {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, ApiError> {
        axum::body::Bytes::from_request(request, state)
            .await
            .map(ApiBytes)
            .map_err(|rejection| {
                let status = rejection.status();
                let code = if status == StatusCode::PAYLOAD_TOO_LARGE {
                    "payload_too_large"
                } else {
                    "bad_body"
                };
                let status = if status.is_server_error() {
                    StatusCode::BAD_REQUEST
                } else {
                    status
                };
                ApiError::new(status, code, rejection.body_text())
            })
    }
}

/// The command envelope of a request: the caller, and its `Idempotency-Key` if any.
pub fn meta(caller: &AuthUser, headers: &HeaderMap) -> Result<CommandMeta, ApiError> {
    let meta = CommandMeta::new(caller.user.clone()).in_timezone(caller.timezone.clone());
    match headers.get("idempotency-key") {
        None => Ok(meta),
        Some(value) => {
            let key = value.to_str().map_err(|_| {
                ApiError::new(
                    StatusCode::BAD_REQUEST,
                    "bad_header",
                    "Idempotency-Key must be visible ASCII",
                )
            })?;
            Ok(meta.with_idempotency_key(key)?)
        }
    }
}
