//! `/v1/integrations/{provider}`: connect, complete and disconnect (the caller's), the
//! OAuth callback (the provider's redirect, handed on to the app) and the provider's
//! signed webhook (the signature authenticates it).
//!
//! With the sandbox provider (`sandbox`, always configured) the whole flow runs
//! offline: `connect` returns an authorize URL with a `state` and a PKCE
//! `code_challenge`; the sandbox's authorize page would redirect to the callback with
//! `code=code-<provider-user-id>.<code_challenge>` (a code bound to that connect); the
//! callback redirects to the app, whose signed-in `complete` connects that provider user
//! to the caller; webhooks about `provider_user_id` are signed
//! `hex(HMAC-SHA256(secret, "<unix-seconds>.<raw body>"))` with `VITALS_WEBHOOK_SECRET`.
//!
//! Why the callback connects nothing itself: it carries no token, only the state, which
//! names whoever started the connect. Completing there would let anyone who sends their
//! own authorize URL to someone else receive that person's provider data; completed by
//! the app of the device that authorized, as its signed-in user, a state someone else
//! started is refused.

use super::{Answer, ApiError};
use crate::http::callers::{Guest, Me};
use crate::http::error::ErrorBody;
use crate::http::extract::{ApiBytes, ApiJson, ApiQuery};
use crate::http::limits::ClientAddress;
use crate::http::responses;
use crate::http::state::AppState;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use axum::{Json, Router};
use commands::integrations::{Secret, WebhookPayload};
use serde::{Deserialize, Serialize};
use vitals_api_macros::write;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/v1/integrations/{provider}/connect", post(connect))
        .route("/v1/integrations/{provider}/disconnect", post(disconnect))
        .route("/v1/integrations/{provider}/callback", get(callback))
        .route("/v1/integrations/{provider}/complete", post(complete))
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
/// The provider's redirect reaches the callback, which hands `state` and `code` to the
/// app; the app completes with `POST /v1/integrations/{provider}/complete`. With
/// `sandbox`, the code is `code-<your-provider-user-id>.<code_challenge>`, the
/// `code_challenge` of the `authorize_url`.
#[write(
    post, path = "/v1/integrations/{provider}/connect", tag = "integrations",
    params(("provider" = String, Path, description = "The provider, such as `sandbox`.")),
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
pub async fn connect(me: Me, Path(provider): Path<String>) -> Answer<Json<ConnectStarted>> {
    let meta = me.meta("connect")?;
    let started = me.api.integrations.start_connect(&meta, &provider).await?;
    Ok(Json(ConnectStarted {
        authorize_url: started.value.authorize_url,
        state: started.value.state,
    }))
}

/// Disconnects a provider: its webhooks no longer reach the caller's account.
#[write(
    post, path = "/v1/integrations/{provider}/disconnect", tag = "integrations",
    params(("provider" = String, Path, description = "The provider, such as `sandbox`.")),
    responses(
        (status = 204, description = "Disconnected (or it was not connected)."),
        (status = 400, response = responses::BadHeader),
        (status = 409, response = responses::Conflict),
        (status = 422, response = responses::Unprocessable),
        responses::ReadErrors,
    ),
)]
pub async fn disconnect(me: Me, Path(provider): Path<String>) -> Answer<StatusCode> {
    let meta = me.meta("disconnect")?;
    me.api.integrations.disconnect(&meta, &provider).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// What the provider's authorize page sends back.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct Callback {
    /// The state `connect` returned.
    pub state: String,
    /// The provider's one-time authorization code (`code-<provider-user-id>.<code_challenge>`
    /// with `sandbox`).
    #[param(value_type = String)]
    pub code: Secret,
}

/// The OAuth callback of a provider: the redirect the provider's authorize page ends in.
///
/// It connects nothing (it carries no token): it redirects to the app's return URL
/// (`VITALS_CONNECT_RETURN_URL`) with `provider`, `state` and `code` added to its query,
/// and the app completes the connect as its signed-in user with
/// `POST /v1/integrations/{provider}/complete`.
#[utoipa::path(
    get,
    path = "/v1/integrations/{provider}/callback",
    tag = "integrations",
    params(
        ("provider" = String, Path, description = "The provider, such as `sandbox`."),
        Callback,
    ),
    responses(
        (status = 303, description = "On to the app.",
         headers(("Location" = String, description = "The app's return URL with `provider`, `state` and `code`."))),
        (status = 400, response = responses::BadQuery),
        (status = 404, description = "`not_found`: no such provider.", body = ErrorBody),
        (status = 429, response = responses::TooManyRequests),
        (status = 500, response = responses::Internal),
    ),
)]
pub async fn callback(
    guest: Guest,
    Path(provider): Path<String>,
    ApiQuery(callback): ApiQuery<Callback>,
) -> Answer {
    guest.api.integrations.provider_exists(&provider)?;
    let query = form_urlencoded::Serializer::new(String::new())
        .append_pair("provider", &provider)
        .append_pair("state", &callback.state)
        .append_pair("code", callback.code.expose())
        .finish();
    let base = &guest.api.connect_return;
    let separator = if base.contains('?') { '&' } else { '?' };
    let location = HeaderValue::from_str(&format!("{base}{separator}{query}"))
        .map_err(|e| ApiError::internal(format!("the return URL is not a header value: {e}")))?;
    let headers = [
        (header::LOCATION, location),
        // The code is in the URL: kept out of caches and of the next page's Referer.
        (header::CACHE_CONTROL, HeaderValue::from_static("no-store")),
        (
            header::REFERRER_POLICY,
            HeaderValue::from_static("no-referrer"),
        ),
    ];
    Ok((StatusCode::SEE_OTHER, headers).into_response())
}

/// What the provider's redirect carried to the app.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CompleteBody {
    /// The state `connect` returned.
    pub state: String,
    /// The provider's one-time authorization code.
    #[schema(value_type = String)]
    pub code: Secret,
}

/// The provider is connected.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Connected {
    /// Always `true`.
    pub connected: bool,
    pub provider: String,
}

/// Completes the caller's connect with what the provider's redirect carried.
///
/// Only the account that started the connect completes it. The code is exchanged with
/// the provider. A provider account belongs to one Vitals account at a time.
#[write(
    post, path = "/v1/integrations/{provider}/complete", tag = "integrations", body = CompleteBody,
    params(("provider" = String, Path, description = "The provider, such as `sandbox`.")),
    responses(
        (status = 200, description = "Connected.", body = Connected),
        (status = 400, response = responses::BadRequest),
        (status = 401, response = responses::Unauthorized),
        (status = 404, description = "`not_found`: no such provider.", body = ErrorBody),
        (status = 409, description = "`provider_account_taken`: this provider account is connected to another Vitals account; `conflict` or `contention`.", body = ErrorBody),
        (status = 413, response = responses::PayloadTooLarge),
        (status = 415, response = responses::UnsupportedMediaType),
        (status = 422, description = "`validation`: the state is unknown, expired, already used or another account's, or the code is refused.", body = ErrorBody),
        (status = 429, response = responses::TooManyRequests),
        (status = 500, response = responses::Internal),
        (status = 502, description = "`provider`: the provider did not answer as expected.", body = ErrorBody),
    ),
)]
pub async fn complete(
    me: Me,
    Path(provider): Path<String>,
    ApiJson(body): ApiJson<CompleteBody>,
) -> Answer<Json<Connected>> {
    let meta = me.meta("complete")?;
    let integrations = &me.api.integrations;
    let code = body.code.expose();
    integrations
        .complete_connect(&meta, &provider, &body.state, code)
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
