//! `/v1/integrations/{provider}`: connect (the caller's), the OAuth callback (the state
//! names the user) and the provider's signed webhook (the signature authenticates it).

use crate::http::AppState;
use crate::http::auth::AuthUser;
use crate::http::error::{ApiError, ErrorBody};
use crate::http::extract::{ApiBytes, ApiQuery, meta};
use crate::http::limits::ClientAddress;
use crate::http::openapi::{responses, schemas};
use axum::Json;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// Starts connecting a wearable provider for the caller.
///
/// Returns the provider's authorize URL, carrying a fresh single-use state.
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
        (status = 200, description = "Send the user to `authorize_url`.", body = schemas::ConnectStarted),
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
) -> Result<Json<Value>, ApiError> {
    let started = state
        .api
        .integrations
        .start_connect(&meta(&caller, &headers)?, &provider)
        .await?
        .value;
    Ok(Json(json!(started)))
}

/// What the provider's authorize page sends back.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct Callback {
    /// The state `connect` returned.
    pub state: String,
    /// The provider's one-time authorization code.
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
/// The state names the user (no bearer token); the code is exchanged with the provider
/// for tokens.
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
        (status = 409, response = responses::Conflict),
        (status = 422, description = "`validation`: the state is unknown, expired or already used.", body = ErrorBody),
        (status = 429, response = responses::Throttled),
        (status = 500, response = responses::Internal),
        (status = 502, description = "`provider`: the provider refused the code or did not answer as expected.", body = ErrorBody),
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
/// publishes nothing new.
#[utoipa::path(
    post,
    path = "/v1/integrations/{provider}/webhook",
    tag = "integrations",
    params(
        ("provider" = String, Path, description = "The provider, such as `sandbox`."),
        ("X-Vitals-Timestamp" = String, Header, description = "Unix seconds when the provider signed the delivery; at most 5 minutes from now."),
        ("X-Vitals-Signature" = String, Header, description = "Hex HMAC-SHA256 of `<timestamp>.<raw body>` with the provider's secret."),
    ),
    request_body = schemas::WebhookPayload,
    responses(
        (status = 202, description = "Accepted.", body = WebhookReceived),
        (status = 401, description = "`bad_signature`: the signature or timestamp does not verify.", body = ErrorBody),
        (status = 404, description = "`not_found`: no such provider, or no user connected as `provider_user_id`.", body = ErrorBody),
        (status = 409, response = responses::Conflict),
        (status = 413, response = responses::PayloadTooLarge),
        (status = 422, description = "`validation`: the body is not a valid payload, or carries more than 90 items.", body = ErrorBody),
        (status = 429, response = responses::Throttled),
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
