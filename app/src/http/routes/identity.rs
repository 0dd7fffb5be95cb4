//! Accounts and sessions: `POST /v1/auth/register`, `/login`, `/refresh`, `/logout`.
//! These need no bearer token, so each is rate limited per client address (and sign-in
//! and sign-up per account too).

use super::Answer;
use crate::http::api::Api;
use crate::http::callers::Guest;
use crate::http::error::ErrorBody;
use crate::http::extract::{ApiJson, of_request};
use crate::http::formats::TimezoneName;
use crate::http::responses;
use crate::http::state::AppState;
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum::routing::post;
use axum::{Json, Router};
use commands::CommandMeta;
use commands::identity::{Access, RefreshToken, Register};
use commands::secret::Secret;
use events_schema::events::identity::Units;
use events_schema::ids::UserId;
use serde::{Deserialize, Serialize};

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/v1/auth/register", post(register))
        .route("/v1/auth/login", post(login))
        .route("/v1/auth/refresh", post(refresh))
        .route("/v1/auth/logout", post(logout))
}

/// A signed-in session: an access token for requests and a refresh token for the next
/// access token.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct TokenReply {
    pub user_id: UserId,
    /// A JWT to send as `Authorization: Bearer <access_token>`.
    pub access_token: String,
    /// Always `Bearer`.
    #[schema(example = "Bearer")]
    pub token_type: &'static str,
    /// Seconds the access token is valid for.
    #[schema(example = 3600)]
    pub expires_in: i64,
    /// Exchanges once, at `POST /v1/auth/refresh`, for a new pair; lasts 30 days unused.
    pub refresh_token: String,
}

/// The reply that signs in to a session (`refresh`), its access token issued on `access`
/// (naming the profile's timezone, and holding until the credentials read change).
fn reply(api: &Api, access: &Access, refresh: RefreshToken) -> Answer<TokenReply> {
    Ok(TokenReply {
        access_token: api.auth.issue_for(access)?,
        token_type: "Bearer",
        expires_in: crate::http::auth::TOKEN_SECONDS,
        refresh_token: refresh.expose().to_owned(),
        user_id: access.user.clone(),
    })
}

/// `POST /v1/auth/register`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RegisterBody {
    /// Compared case-insensitively; unique across accounts; at most 254 characters.
    #[schema(example = "ana@example.com", max_length = 254, format = Email)]
    pub email: String,
    /// 10 to 256 characters.
    #[schema(value_type = String, format = Password, example = "correct horse battery", min_length = 10, max_length = 256)]
    pub password: Secret,
    /// 1 to 80 characters.
    #[schema(
        example = "Ana",
        min_length = 1,
        max_length = 80,
        pattern = r"^[^\u0000-\u001f\u007f-\u009f]*[^\s\u0000-\u001f\u007f-\u009f][^\u0000-\u001f\u007f-\u009f]*$"
    )]
    pub display_name: String,
    /// IANA timezone name: it names the user's days.
    #[schema(value_type = TimezoneName)]
    pub timezone: String,
    /// `metric` when absent.
    #[serde(default)]
    pub units: Option<Units>,
}

/// Creates an account and signs it in.
///
/// A retry with the same `Idempotency-Key` and request signs in to the same account,
/// and only with the same password.
#[utoipa::path(
    post,
    path = "/v1/auth/register",
    tag = "identity",
    params(responses::IdempotencyKey),
    request_body = RegisterBody,
    responses(
        (status = 201, description = "Registered and signed in; `Location` is the profile.", body = TokenReply,
         headers(("Location" = String, description = "`/v1/me/profile`"))),
        (status = 400, response = responses::BadRequest),
        (status = 409, description = "`email_taken`: another account uses this email.", body = ErrorBody),
        (status = 413, response = responses::PayloadTooLarge),
        (status = 415, response = responses::UnsupportedMediaType),
        (status = 422, response = responses::Unprocessable),
        (status = 429, response = responses::TooManyRequests),
        (status = 500, response = responses::Internal),
        (status = 503, response = responses::Busy),
    ),
)]
pub async fn register(
    guest: Guest,
    headers: HeaderMap,
    ApiJson(body): ApiJson<RegisterBody>,
) -> Answer {
    let api = &guest.api;
    let limits = &api.limits;
    limits
        .account(&api.identity, &body.email, guest.client)
        .await?;
    // The account does not exist yet; the command assigns the user id.
    let meta = of_request(CommandMeta::new(UserId::generate()), &headers, "register")?;
    let input = Register {
        email: body.email,
        password: body.password,
        display_name: body.display_name,
        timezone: body.timezone,
        units: body.units.unwrap_or_default(),
    };
    let signed_up = api.identity.sign_up(&meta, input).await?.value;
    let session = api.identity.start_session(&signed_up).await?;
    let reply = reply(api, signed_up.access(), session)?;
    Ok((
        StatusCode::CREATED,
        [(axum::http::header::LOCATION, "/v1/me/profile")],
        Json(reply),
    )
        .into_response())
}

/// `POST /v1/auth/login`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Login {
    /// Compared case-insensitively.
    #[schema(example = "ana@example.com")]
    pub email: String,
    #[schema(value_type = String, format = Password, example = "correct horse battery")]
    pub password: Secret,
}

/// Signs in with email and password.
#[utoipa::path(
    post,
    path = "/v1/auth/login",
    tag = "identity",
    request_body = Login,
    responses(
        (status = 200, description = "Signed in.", body = TokenReply),
        (status = 401, description = "`invalid_credentials`: email or password is wrong; `account_deleted`: the account is being deleted.", body = ErrorBody),
        responses::SessionErrors,
        (status = 503, response = responses::Busy),
    ),
)]
pub async fn login(guest: Guest, ApiJson(body): ApiJson<Login>) -> Answer<Json<TokenReply>> {
    let api = &guest.api;
    let limits = &api.limits;
    let password = body.password.expose();
    let proved = limits
        .sign_in(&api.identity, &body.email, password, guest.client)
        .await?;
    let session = api.identity.start_session(&proved).await?;
    Ok(Json(reply(api, proved.access(), session)?))
}

/// A refresh token, to exchange or to end.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RefreshBody {
    #[schema(value_type = String)]
    pub refresh_token: Secret,
}

/// Exchanges a refresh token for a new access token and a new refresh token.
///
/// A refresh token works once: presented again, it ends its session (whoever else
/// holds it can no longer use it).
#[utoipa::path(
    post,
    path = "/v1/auth/refresh",
    tag = "identity",
    request_body = RefreshBody,
    responses(
        (status = 200, description = "A new pair.", body = TokenReply),
        (status = 401, description = "`invalid_refresh_token`: unknown, expired, ended or already used: sign in again.", body = ErrorBody),
        responses::SessionErrors,
    ),
)]
pub async fn refresh(
    guest: Guest,
    ApiJson(body): ApiJson<RefreshBody>,
) -> Answer<Json<TokenReply>> {
    let identity = &guest.api.identity;
    let (access, next) = identity
        .refresh_session(body.refresh_token.expose())
        .await?;
    Ok(Json(reply(&guest.api, &access, next)?))
}

/// Ends the session of a refresh token (the access tokens already issued run out within
/// the hour).
#[utoipa::path(
    post,
    path = "/v1/auth/logout",
    tag = "identity",
    request_body = RefreshBody,
    responses(
        (status = 204, description = "Signed out (or already)."),
        (status = 401, description = "`invalid_refresh_token`: not the session's current token.", body = ErrorBody),
        responses::SessionErrors,
    ),
)]
pub async fn logout(guest: Guest, ApiJson(body): ApiJson<RefreshBody>) -> Answer<StatusCode> {
    let identity = &guest.api.identity;
    identity.end_session(body.refresh_token.expose()).await?;
    Ok(StatusCode::NO_CONTENT)
}
