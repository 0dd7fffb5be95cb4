//! Cheap polling: every read answers with an `ETag` (a digest of the representation),
//! and a request whose `If-None-Match` names it gets `304 Not Modified` with no body.
//! The digest is of what the client would receive, so it changes exactly when that does.

use super::error::ApiError;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use sha2::{Digest, Sha256};

/// `view` as JSON with its `ETag`, or `304` if the client has it already.
pub fn viewed<T: Serialize>(request: &HeaderMap, view: &T) -> Result<Response, ApiError> {
    let body = serde_json::to_vec(view).map_err(ApiError::internal)?;
    let tag = format!("\"{}\"", &hex::encode(Sha256::digest(&body))[..32]);
    let tag_header = HeaderValue::from_str(&tag).map_err(ApiError::internal)?;
    let known = request
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|v| v.trim().trim_start_matches("W/"))
        .any(|v| v == tag || v == "*");
    let cache = (
        header::CACHE_CONTROL,
        HeaderValue::from_static("private, no-cache"),
    );
    if known {
        return Ok((
            StatusCode::NOT_MODIFIED,
            [(header::ETAG, tag_header), cache],
        )
            .into_response());
    }
    Ok((
        StatusCode::OK,
        [
            (header::ETAG, tag_header),
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            ),
            cache,
        ],
        body,
    )
        .into_response())
}
