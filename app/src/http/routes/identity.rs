//! `POST /v1/auth/register`, `POST /v1/auth/login`.

use crate::http::AppState;
use crate::http::error::ApiError;
use crate::http::extract::ApiJson;
use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use commands::CommandMeta;
use commands::identity::Register;
use events_schema::ids::UserId;
use serde::Deserialize;
use serde_json::{Value, json};

pub async fn register(
    State(state): State<AppState>,
    headers: HeaderMap,
    ApiJson(body): ApiJson<Register>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    // The account does not exist yet; the command assigns the user id.
    let mut meta = CommandMeta::new(UserId::generate());
    if let Some(key) = headers.get("idempotency-key").and_then(|v| v.to_str().ok()) {
        meta = meta.with_idempotency_key(key)?;
    }
    let timezone = body.timezone.clone();
    let user = state.api.identity.register(&meta, body).await?.value;
    let token = state.api.auth.issue(&user, Some(&timezone))?;
    Ok((
        StatusCode::CREATED,
        Json(json!({"user_id": user, "token": token})),
    ))
}

#[derive(Debug, Deserialize)]
pub struct Login {
    pub email: String,
    pub password: String,
}

pub async fn login(
    State(state): State<AppState>,
    ApiJson(body): ApiJson<Login>,
) -> Result<Json<Value>, ApiError> {
    let user = state
        .api
        .identity
        .login(&body.email, &body.password)
        .await?;
    let timezone = state
        .api
        .identity
        .profile(&user)
        .await
        .ok()
        .map(|p| p.timezone);
    let token = state.api.auth.issue(&user, timezone.as_deref())?;
    Ok(Json(json!({"user_id": user, "token": token})))
}
