//! `/v1/integrations/{provider}`: connect and disconnect (the caller's), the OAuth
//! callback (the state names the user) and the provider's signed webhook (the signature
//! authenticates it).
//!
//! With the sandbox provider (`sandbox`, always configured) the whole flow runs
//! offline: `connect` returns an authorize URL with a `state`; the sandbox's authorize
//! page would redirect to the callback with `code=code-<provider-user-id>` (append
//! `.<anything>` for another single-use code of the same provider user); the callback
//! connects that provider user to the caller; webhooks about `provider_user_id` are
//! signed `hex(HMAC-SHA256(secret, "<unix-seconds>.<raw body>"))` with
//! `VITALS_WEBHOOK_SECRET`.

use super::ApiError;
use crate::http::auth::AuthUser;
use crate::http::error::ErrorBody;
use crate::http::extract::{ApiBytes, ApiQuery, meta};
use crate::http::limits::ClientAddress;
use crate::http::responses;
use crate::http::state::AppState;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::{get, post};
use axum::{Json, Router};
use commands::integrations::WebhookPayload;
use serde::{Deserialize, Serialize};

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/v1/integrations/{provider}/connect", post(connect))
        .route("/v1/integrations/{provider}/disconnect", post(disconnect))
        .route("/v1/integrations/{provider}/callback", get(callback))
        .route("/v1/integrations/{provider}/webhook", post(webhook))
}

/// Where to send the user to authorize Vitals at the provider.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ConnectStarted {
    /// The provider's authorize page, carrying `state`.
    pub authorize_url: String,
    /// Single use, valid for 10 minutes: the provider's redirect to the callback
    /// carries it back.
    pub state: String,
}

/// Starts connecting a wearable provider for the caller.
///
/// With `sandbox`, complete it with `GET /v1/integrations/sandbox/callback?state=<state>&code=code-<your-provider-user-id>`.
#[utoipa::path(
    post,
    path = "/v1/integrations/{provider}/connect",
    tag = "integrations",
    security(("bearer" = [])),
    params(
        ("provider" = String, Path, description = "The provider, such as `sandbox`."),
        responses::IdempotencyKey,
    ),
    responses(
        (status = 200, description = "Send the user to `authorize_url`.", body = ConnectStarted),
        (status = 400, response = responses::BadHeader),
        (status = 401, response = responses::Unauthorized),
        (status = 404, description = "`not_found`: no such provider.", body = ErrorBody),
        (status = 409, response = responses::Conflict),
        (status = 422, response = responses::Unprocessable),
        (status = 429, response = responses::TooManyRequests),
        (status = 500, response = responses::Internal),
    ),
)]
pub async fn connect(
    State(state): State<AppState>,
    caller: AuthUser,
    headers: HeaderMap,
    Path(provider): Path<String>,
) -> Result<Json<ConnectStarted>, ApiError> {
    let started = state
        .api
        .integrations
        .start_connect(&meta(&caller, &headers, "connect")?, &provider)
        .await?
        .value;
    Ok(Json(ConnectStarted {
        authorize_url: started.authorize_url,
        state: started.state,
    }))
}

/// Disconnects a provider: its webhooks no longer reach the caller's account.
#[utoipa::path(
    post,
    path = "/v1/integrations/{provider}/disconnect",
    tag = "integrations",
    security(("bearer" = [])),
    params(
        ("provider" = String, Path, description = "The provider, such as `sandbox`."),
        responses::IdempotencyKey,
    ),
    responses(
        (status = 204, description = "Disconnected (or it was not connected)."),
        (status = 400, response = responses::BadHeader),
        (status = 409, response = responses::Conflict),
        (status = 422, response = responses::Unprocessable),
        responses::ReadErrors,
    ),
)]
pub async fn disconnect(
    State(state): State<AppState>,
    caller: AuthUser,
    headers: HeaderMap,
    Path(provider): Path<String>,
) -> Result<StatusCode, ApiError> {
    state
        .api
        .integrations
        .disconnect(&meta(&caller, &headers, "disconnect")?, &provider)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// What the provider's authorize page sends back.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct Callback {
    /// The state `connect` returned.
    pub state: String,
    /// The provider's one-time authorization code (`code-<provider-user-id>` with
    /// `sandbox`).
    pub code: String,
}

/// The provider is connected.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Connected {
    /// Always `true`.
    pub connected: bool,
    pub provider: String,
}

/// The OAuth callback of a provider.
///
/// The state names the user (no bearer token); the code is exchanged with the provider.
/// A provider account belongs to one Vitals account at a time.
#[utoipa::path(
    get,
    path = "/v1/integrations/{provider}/callback",
    tag = "integrations",
    params(
        ("provider" = String, Path, description = "The provider, such as `sandbox`."),
        Callback,
    ),
    responses(
        (status = 200, description = "Connected.", body = Connected),
        (status = 400, response = responses::BadQuery),
        (status = 404, description = "`not_found`: no such provider.", body = ErrorBody),
        (status = 409, description = "`provider_account_taken`: this provider account is connected to another Vitals account; `conflict` or `contention`.", body = ErrorBody),
        (status = 422, description = "`validation`: the state is unknown, expired or already used, or the code is refused.", body = ErrorBody),
        (status = 429, response = responses::TooManyRequests),
        (status = 500, response = responses::Internal),
        (status = 502, description = "`provider`: the provider did not answer as expected.", body = ErrorBody),
    ),
)]
pub async fn callback(
    State(state): State<AppState>,
    client: ClientAddress,
    Path(provider): Path<String>,
    ApiQuery(callback): ApiQuery<Callback>,
) -> Result<Json<Connected>, ApiError> {
    state.api.limits.unauthenticated(client)?;
    state
        .api
        .integrations
        .complete_connect(&provider, &callback.state, &callback.code)
        .await?;
    Ok(Json(Connected {
        connected: true,
        provider,
    }))
}

/// What a webhook delivery did.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct WebhookReceived {
    /// How many workouts and sleep sessions the delivery carried.
    pub items: usize,
    /// Whether this delivery id was received before (nothing new was published).
    pub duplicate: bool,
}

/// A provider's signed webhook.
///
/// The signature authenticates it (no bearer token). A redelivery is accepted and
/// publishes nothing new; of several deliveries of one provider record, the one with the
/// newest `updated_at` wins, whatever their order.
#[utoipa::path(
    post,
    path = "/v1/integrations/{provider}/webhook",
    tag = "integrations",
    params(
        ("provider" = String, Path, description = "The provider, such as `sandbox`."),
        ("X-Vitals-Timestamp" = String, Header, description = "Unix seconds when the provider signed the delivery; at most 5 minutes from now."),
        ("X-Vitals-Signature" = String, Header, description = "Hex HMAC-SHA256 of `<timestamp>.<raw body>` with the provider's secret."),
    ),
    request_body = WebhookPayload,
    responses(
        (status = 202, description = "Accepted.", body = WebhookReceived),
        (status = 401, description = "`bad_signature`: the signature or timestamp does not verify.", body = ErrorBody),
        (status = 404, description = "`not_found`: no such provider, or no account connected as `provider_user_id`.", body = ErrorBody),
        (status = 409, response = responses::Conflict),
        (status = 413, response = responses::PayloadTooLarge),
        (status = 422, description = "`validation`: the body is not a valid payload, or carries more than 90 items.", body = ErrorBody),
        (status = 429, response = responses::TooManyRequests),
        (status = 500, response = responses::Internal),
    ),
)]
pub async fn webhook(
    State(state): State<AppState>,
    client: ClientAddress,
    Path(provider): Path<String>,
    headers: HeaderMap,
    ApiBytes(body): ApiBytes,
) -> Result<(StatusCode, Json<WebhookReceived>), ApiError> {
    state.api.limits.webhook(client)?;
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
        Json(WebhookReceived {
            items: outcome.value,
            duplicate: outcome.replayed,
        }),
    ))
}
