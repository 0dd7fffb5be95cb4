//! The HTTP API. `app(state)` builds the whole router, so tests can drive it with
//! `oneshot` and the server, Lambda or a test harness can host the same thing.

mod health;
mod metrics;

use axum::Router;
use axum::routing::get;
use infra::Store;
use projectors::pipeline::Pipeline;
use std::sync::Arc;

/// What every handler may use.
#[derive(Clone)]
pub struct AppState {
    pub store: Arc<dyn Store>,
    /// The in-process projector workers, when this process runs them.
    pub pipeline: Option<Arc<Pipeline>>,
}

pub fn app(state: AppState) -> Router {
    Router::new()
        .route("/healthz", get(health::healthz))
        .route("/metrics", get(metrics::metrics))
        .with_state(state)
}
