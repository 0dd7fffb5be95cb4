//! `GET /metrics`: Prometheus text. Projector counters, lag and dead-letter depth per
//! subscription when this process runs the workers.

use super::AppState;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;

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
        (status = 503, description = "The workers' state could not be read; empty body, the cause is logged."),
    ),
)]
pub async fn metrics(State(state): State<AppState>) -> impl IntoResponse {
    let text = match &state.pipeline {
        Some(pipeline) => match pipeline.stats().await {
            Ok(stats) => projectors::pipeline::prometheus(&stats),
            Err(error) => {
                tracing::error!(%error, "reading projector metrics failed");
                return (
                    StatusCode::SERVICE_UNAVAILABLE,
                    [(header::CONTENT_TYPE, "text/plain")],
                    String::new(),
                );
            }
        },
        None => String::new(),
    };
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        text,
    )
}
