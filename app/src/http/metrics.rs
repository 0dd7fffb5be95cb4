//! `GET /metrics`: the OpenMetrics text of the ecosystem's client (`prometheus-client`).
//! Projector counters, lag and dead-letter depth per subscription when this process runs
//! the workers, the time from an event's recording to its application (a histogram), the
//! request latency per route (a histogram), and the store's own figures.

use super::error::ApiError;
use super::limits::ClientAddress;
use super::state::AppState;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use std::sync::LazyLock;
use std::time::Duration;

/// Prometheus metrics.
///
/// Counters, lag and dead-letter depth of the projector workers this process runs;
/// empty when it runs none.
#[utoipa::path(
    get,
    path = "/metrics",
    tag = "operations",
    responses(
        (status = 200, description = "OpenMetrics text format 1.0.0.", body = String, content_type = "application/openmetrics-text; version=1.0.0; charset=utf-8"),
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

/// The label set of the request latency histogram.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Served {
    method: String,
    /// The route's template (`/v1/me/meals/{id}`), never the path: ids are not labels.
    route: String,
    /// `2xx`, `4xx`, `5xx`...
    status: &'static str,
}

/// The request latency per route, method and status class.
static REQUEST_SECONDS: LazyLock<Family<Served, Histogram>> = LazyLock::new(|| {
    Family::new_with_constructor(|| Histogram::new(exponential_buckets(0.0005, 2.0, 16)))
});

/// Observes a request served: its method, route template (unmatched ones together),
/// status class and latency.
pub fn observe_request(method: &str, route: Option<&str>, status: StatusCode, elapsed: Duration) {
    let status = match status.as_u16() {
        100..=199 => "1xx",
        200..=299 => "2xx",
        300..=399 => "3xx",
        400..=499 => "4xx",
        _ => "5xx",
    };
    let labels = Served {
        method: method.to_owned(),
        route: route.unwrap_or("(unmatched)").to_owned(),
        status,
    };
    REQUEST_SECONDS
        .get_or_create(&labels)
        .observe(elapsed.as_secs_f64());
}

/// The content type of the answer.
const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The answer of `GET /metrics`: a snapshot of the workers (or why there is none), the
/// histograms of this process, and the store's own figures.
pub fn metrics_text(
    stats: Result<Vec<projectors::pipeline::SubscriptionStats>, infra::StoreError>,
    store: &dyn infra::Store,
) -> Response {
    let stats = match stats {
        Ok(stats) => stats,
        Err(error) => {
            tracing::error!(%error, "reading projector metrics failed");
            return (
                StatusCode::SERVICE_UNAVAILABLE,
                [(header::CONTENT_TYPE, "text/plain")],
                String::new(),
            )
                .into_response();
        }
    };
    let mut registry = Registry::default();
    projectors::pipeline::register(&mut registry, &stats);
    registry.register(
        "vitals_http_request_duration_seconds",
        "request latency per route, method and status class",
        REQUEST_SECONDS.clone(),
    );
    store.register_metrics(&mut registry);
    let mut text = String::new();
    match encode(&mut text, &registry) {
        Ok(()) => (StatusCode::OK, [(header::CONTENT_TYPE, OPENMETRICS)], text).into_response(),
        Err(error) => {
            tracing::error!(%error, "encoding the metrics failed");
            StatusCode::INTERNAL_SERVER_ERROR.into_response()
        }
    }
}
