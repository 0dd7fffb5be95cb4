//! The HTTP API. `app(state)` builds the whole router, so tests can drive it with
//! `oneshot` and the server, Lambda or a test harness can host the same thing.

pub mod api;
pub mod auth;
pub mod error;
mod extract;
mod health;
pub mod limits;
mod metrics;
pub mod openapi;
mod routes;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post, put};
use infra::Store;
use projectors::pipeline::Pipeline;
use std::sync::Arc;
use tower_http::trace::TraceLayer;

/// The largest request body accepted (413 beyond).
pub const MAX_BODY_BYTES: usize = 64 * 1024;

/// What every handler may use.
#[derive(Clone)]
pub struct AppState {
    pub store: Arc<dyn Store>,
    /// The in-process projector workers, when this process runs them.
    pub pipeline: Option<Arc<Pipeline>>,
    pub api: Arc<api::Api>,
}

pub fn app(state: AppState) -> Router {
    use routes::{identity, integrations, me};
    Router::new()
        .route("/healthz", get(health::healthz))
        .route("/metrics", get(metrics::metrics))
        .route("/openapi.json", get(openapi::openapi_json))
        .route("/v1/auth/register", post(identity::register))
        .route("/v1/auth/login", post(identity::login))
        .route("/v1/me", axum::routing::delete(me::delete_me))
        .route(
            "/v1/me/profile",
            get(me::get_profile).patch(me::patch_profile),
        )
        .route("/v1/me/meals", post(me::log_meal))
        .route(
            "/v1/me/meals/{id}",
            put(me::edit_meal).delete(me::delete_meal),
        )
        .route("/v1/me/nutrition/daily", get(me::daily_nutrition))
        .route("/v1/me/workouts", post(me::record_workout))
        .route("/v1/me/workouts/latest", get(me::latest_workout))
        .route(
            "/v1/me/training-block/current",
            get(me::current_training_block),
        )
        .route("/v1/me/sleep", post(me::record_sleep))
        .route("/v1/me/goals", post(me::create_goal).get(me::list_goals))
        .route("/v1/me/goals/{id}", axum::routing::patch(me::patch_goal))
        .route("/v1/me/goals/{id}/progress", get(me::goal_progress))
        .route("/v1/me/dashboard", get(me::dashboard))
        .route(
            "/v1/integrations/{provider}/connect",
            post(integrations::connect),
        )
        .route(
            "/v1/integrations/{provider}/callback",
            get(integrations::callback),
        )
        .route(
            "/v1/integrations/{provider}/webhook",
            post(integrations::webhook),
        )
        .fallback(|| async { error::ApiError::not_found() })
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(TraceLayer::new_for_http())
        .with_state(state)
}
