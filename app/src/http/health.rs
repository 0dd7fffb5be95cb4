//! `GET /healthz`: the backend's name, the build's version, and whether the store
//! answers. A failing store is 503 with a generic message; the cause goes to the log.

use super::AppState;
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::Serialize;

#[derive(Debug, Serialize)]
pub struct Health {
    pub status: &'static str,
    pub backend: &'static str,
    pub version: &'static str,
}

pub async fn healthz(State(state): State<AppState>) -> (StatusCode, Json<Health>) {
    let backend = state.store.backend();
    let version = env!("CARGO_PKG_VERSION");
    match state.store.health().await {
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
    }
}
