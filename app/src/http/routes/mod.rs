//! The `/v1` routes, one module per context, each with its own `router()`.

pub mod activity;
pub mod catalog;
pub mod dashboard;
pub mod goals;
pub mod identity;
pub mod insights;
pub mod integrations;
pub mod nutrition;
pub mod plans;
pub mod profile;
pub mod sleep;

use super::error::ApiError;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

/// An id from a path: anything that is not a valid id is simply not found.
pub(crate) fn id<T: std::str::FromStr>(raw: &str) -> Result<T, ApiError> {
    raw.parse().map_err(|_| ApiError::not_found())
}

/// The timezone a write names its day in: the body's, else the token's, else UTC.
pub(crate) fn timezone(body: Option<String>, caller: &super::auth::AuthUser) -> String {
    body.or_else(|| caller.timezone.clone())
        .unwrap_or_else(|| "UTC".to_owned())
}

/// `201 Created` with `Location` and the created resource's representation.
pub(crate) fn created<T: Serialize>(location: String, view: &T) -> Result<Response, ApiError> {
    let location = HeaderValue::from_str(&location).map_err(ApiError::internal)?;
    Ok((
        StatusCode::CREATED,
        [(header::LOCATION, location)],
        axum::Json(view),
    )
        .into_response())
}
