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

/// What a handler answers: its response, or the API's error.
pub(crate) type Answer<T = Response> = Result<T, ApiError>;

/// An id from a path: anything that is not a valid id is simply not found.
pub(crate) fn id<T: std::str::FromStr>(raw: &str) -> Result<T, ApiError> {
    raw.parse().map_err(|_| ApiError::not_found())
}

/// `201 Created` with `Location` and the created resource's representation.
pub(crate) fn created<T: Serialize>(location: String, view: &T) -> Answer {
    let location = HeaderValue::from_str(&location).map_err(ApiError::internal)?;
    Ok((
        StatusCode::CREATED,
        [(header::LOCATION, location)],
        axum::Json(view),
    )
        .into_response())
}
