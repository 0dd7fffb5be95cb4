//! `/v1/integrations/{provider}`: connect (the caller's), the OAuth callback (the state
//! names the user) and the provider's signed webhook (the signature authenticates it).

use crate::http::AppState;
use crate::http::auth::AuthUser;
use crate::http::error::ApiError;
use crate::http::extract::meta;
use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use serde::Deserialize;
use serde_json::{Value, json};

pub async fn connect(
    State(state): State<AppState>,
    caller: AuthUser,
    headers: HeaderMap,
    Path(provider): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let started = state
        .api
        .integrations
        .start_connect(&meta(&caller, &headers)?, &provider)
        .await?
        .value;
    Ok(Json(json!(started)))
}

#[derive(Debug, Deserialize)]
pub struct Callback {
    pub state: String,
    pub code: String,
}

pub async fn callback(
    State(state): State<AppState>,
    Path(provider): Path<String>,
    Query(callback): Query<Callback>,
) -> Result<Json<Value>, ApiError> {
    state
        .api
        .integrations
        .complete_connect(&provider, &callback.state, &callback.code)
        .await?;
    Ok(Json(json!({"connected": true, "provider": provider})))
}

pub async fn webhook(
    State(state): State<AppState>,
    Path(provider): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned()
    };
    let outcome = state
        .api
        .integrations
        .receive_webhook(
            &provider,
            &header("x-vitals-timestamp"),
            &header("x-vitals-signature"),
            &body,
        )
        .await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(json!({"items": outcome.value, "duplicate": outcome.replayed})),
    ))
}
