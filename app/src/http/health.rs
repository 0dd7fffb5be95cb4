//! `GET /healthz`: the backend's name, the build's version, and whether the store
//! answers. A failing store is 503 with a generic message; the cause goes to the log.

use super::error::ApiError;
use super::limits::ClientAddress;
use super::state::AppState;
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::Serialize;

/// The server's health.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Health {
    /// `ok`, or `unavailable` when the store does not answer.
    #[schema(example = "ok")]
    pub status: &'static str,
    /// The storage backend, such as `embedded` or `dynamodb`.
    #[schema(example = "embedded")]
    pub backend: &'static str,
    /// The build's version.
    #[schema(example = "0.1.0")]
    pub version: &'static str,
}

/// Whether the server and its store answer.
#[utoipa::path(
    get,
    path = "/healthz",
    tag = "operations",
    responses(
        (status = 200, description = "The store answers.", body = Health),
        (status = 429, response = super::responses::TooManyRequests),
        (status = 503, description = "The store does not answer; the cause is logged.", body = Health),
    ),
)]
pub async fn healthz(
    State(state): State<AppState>,
    client: ClientAddress,
) -> Result<(StatusCode, Json<Health>), ApiError> {
    state.api.limits.operations(client)?;
    let backend = state.store.backend();
    let version = env!("CARGO_PKG_VERSION");
    Ok(match state.store.health().await {
        Ok(()) => (
            StatusCode::OK,
            Json(Health {
                status: "ok",
                backend,
                version,
            }),
        ),
        Err(error) => {
            tracing::error!(%error, backend, "health check failed");
            (
                StatusCode::SERVICE_UNAVAILABLE,
                Json(Health {
                    status: "unavailable",
                    backend,
                    version,
                }),
            )
        }
    })
}
