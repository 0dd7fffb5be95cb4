//! `GET /metrics`: Prometheus text. Projector counters, lag and dead-letter depth per
//! subscription when this process runs the workers.

use super::AppState;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;

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
