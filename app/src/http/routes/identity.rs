//! `POST /v1/auth/register`, `POST /v1/auth/login`.

use crate::http::AppState;
use crate::http::error::{ApiError, ErrorBody};
use crate::http::extract::ApiJson;
use crate::http::limits::ClientAddress;
use crate::http::openapi::{responses, schemas};
use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use commands::CommandMeta;
use commands::identity::Register;
use events_schema::ids::UserId;
use serde::{Deserialize, Serialize};

/// A bearer token for the account, valid for an hour.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct TokenReply {
    #[schema(value_type = schemas::Id)]
    pub user_id: UserId,
    /// A JWT to send as `Authorization: Bearer <token>`.
    pub token: String,
}

/// Creates an account and signs it in.
#[utoipa::path(
    post,
    path = "/v1/auth/register",
    tag = "identity",
    params(responses::IdempotencyKey),
    request_body = schemas::Register,
    responses(
        (status = 201, description = "Registered; the token signs the new user in.", body = TokenReply),
        (status = 400, response = responses::MalformedJson),
        (status = 409, description = "`email_taken`: another account uses this email; or `contention`/`conflict`.", body = ErrorBody),
        (status = 413, response = responses::PayloadTooLarge),
        (status = 415, response = responses::UnsupportedMediaType),
        (status = 422, response = responses::Unprocessable),
        (status = 429, response = responses::Throttled),
        (status = 500, response = responses::Internal),
    ),
)]
pub async fn register(
    State(state): State<AppState>,
    client: ClientAddress,
    headers: HeaderMap,
    ApiJson(body): ApiJson<Register>,
) -> Result<(StatusCode, Json<TokenReply>), ApiError> {
    state.api.limits.unauthenticated(client)?;
    state.api.limits.account(&body.email)?;
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
        Json(TokenReply {
            user_id: user,
            token,
        }),
    ))
}

/// `POST /v1/auth/login`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub struct Login {
    /// Compared case-insensitively.
    #[schema(example = "ana@example.com")]
    pub email: String,
    #[schema(format = Password, example = "correct horse battery")]
    pub password: String,
}

/// Signs in with email and password.
#[utoipa::path(
    post,
    path = "/v1/auth/login",
    tag = "identity",
    request_body = Login,
    responses(
        (status = 200, description = "Signed in.", body = TokenReply),
        (status = 400, response = responses::MalformedJson),
        (status = 401, description = "`invalid_credentials`: email or password is wrong; `account_deleted`: the account is being deleted.", body = ErrorBody),
        (status = 413, response = responses::PayloadTooLarge),
        (status = 415, response = responses::UnsupportedMediaType),
        (status = 422, response = responses::Unprocessable),
        (status = 429, response = responses::Throttled),
        (status = 500, response = responses::Internal),
    ),
)]
pub async fn login(
    State(state): State<AppState>,
    client: ClientAddress,
    ApiJson(body): ApiJson<Login>,
) -> Result<Json<TokenReply>, ApiError> {
    state.api.limits.unauthenticated(client)?;
    state.api.limits.account(&body.email)?;
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
    Ok(Json(TokenReply {
        user_id: user,
        token,
    }))
}
