//! The HTTP API. `app(state)` builds the whole router, so tests can drive it with
//! `oneshot` and the server, Lambda or a test harness can host the same thing.

pub mod api;
pub mod auth;
mod callers;
pub mod error;
mod etag;
mod extract;
mod formats;
mod health;
pub mod limits;
mod metrics;
pub use metrics::metrics_text;
pub mod openapi;
pub mod request_log;
pub mod responses;
mod routes;
mod signing_keys;
mod web;

mod state;
pub use state::AppState;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::StatusCode;
use axum::routing::get;

/// The API: every operation of the OpenAPI document and the operations routes (what
/// Lambda hosts behind API Gateway).
pub fn app(state: AppState) -> Router {
    build(state, Router::new())
}

/// The API and, at `/` and `/docs`, the web app and the API reference ([`web`]): what
/// `vitals serve` hosts.
pub fn app_with_web(state: AppState) -> Router {
    build(state, web::router())
}

/// The API's routes beside `extra`, with the layers and fallbacks every route shares.
fn build(state: AppState, extra: Router<AppState>) -> Router {
    Router::new()
        .route("/healthz", get(health::healthz))
        .route("/metrics", get(metrics::metrics))
        .route("/openapi.json", get(openapi::openapi_json))
        .merge(routes::identity::router())
        .merge(routes::profile::router())
        .merge(routes::nutrition::router())
        .merge(routes::activity::router())
        .merge(routes::sleep::router())
        .merge(routes::goals::router())
        .merge(routes::dashboard::router())
        .merge(routes::integrations::router())
        .merge(routes::plans::router())
        .merge(routes::catalog::router())
        .merge(routes::insights::router())
        .merge(extra)
        .route_layer(axum::middleware::from_fn(request_log::route))
        .fallback(|| async { error::ApiError::not_found() })
        .method_not_allowed_fallback(|| async {
            error::ApiError::new(
                StatusCode::METHOD_NOT_ALLOWED,
                "method_not_allowed",
                "this path does not take that method",
            )
        })
        .layer(DefaultBodyLimit::max(extract::MAX_BODY_BYTES))
        .layer(axum::middleware::from_fn(request_log::layer))
        .with_state(state)
}
