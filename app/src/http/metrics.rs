//! `GET /metrics`: Prometheus text. Projector counters, lag and dead-letter depth per
//! subscription when this process runs the workers.

use super::error::ApiError;
use super::limits::ClientAddress;
use super::state::AppState;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};

/// Prometheus metrics.
///
/// Counters, lag and dead-letter depth of the projector workers this process runs;
/// empty when it runs none.
#[utoipa::path(
    get,
    path = "/metrics",
    tag = "operations",
    responses(
        (status = 200, description = "Prometheus text exposition format 0.0.4.", body = String, content_type = "text/plain; version=0.0.4"),
        (status = 429, response = super::responses::TooManyRequests),
        (status = 503, description = "The workers' state could not be read; empty body, the cause is logged."),
    ),
)]
pub async fn metrics(
    State(state): State<AppState>,
    client: ClientAddress,
) -> Result<Response, ApiError> {
    state.api.limits.operations(client)?;
    let stats = match &state.pipeline {
        Some(pipeline) => pipeline.stats().await,
        None => Ok(Vec::new()),
    };
    Ok(metrics_text(stats, &*state.store))
}

/// The answer of `GET /metrics`: a snapshot of the workers (or why there is none), and
/// the store's own figures.
pub fn metrics_text(
    stats: Result<Vec<projectors::pipeline::SubscriptionStats>, infra::StoreError>,
    store: &dyn infra::Store,
) -> Response {
    match stats {
        Ok(stats) => (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
            projectors::pipeline::prometheus(&stats) + &store.prometheus(),
        )
            .into_response(),
        Err(error) => {
            tracing::error!(%error, "reading projector metrics failed");
            (
                StatusCode::SERVICE_UNAVAILABLE,
                [(header::CONTENT_TYPE, "text/plain")],
                String::new(),
            )
                .into_response()
        }
    }
}
