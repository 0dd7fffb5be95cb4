//! The home screen: `GET /v1/me/dashboard`.

use super::ApiError;
use crate::http::auth::AuthUser;
use crate::http::etag::viewed;
use crate::http::extract::ApiQuery;
use crate::http::formats::day;
use crate::http::responses;
use crate::http::state::AppState;
use axum::Router;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;
use axum::routing::get;
use readmodels::views::{DashboardView, ReadinessView};
use serde::{Deserialize, Serialize};

pub fn router() -> Router<AppState> {
    Router::new().route("/v1/me/dashboard", get(dashboard))
}

/// Which day the dashboard shows.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct DashboardQuery {
    /// The day, `YYYY-MM-DD`; today in the token's timezone if absent.
    #[param(example = "2026-03-01", format = Date)]
    pub date: Option<String>,
}

/// The home screen: the dashboard's rows, and the day's readiness from the insights
/// context (each its own read model, read at the same time).
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct HomeView {
    #[serde(flatten)]
    pub dashboard: DashboardView,
    /// The day's readiness, once the nightly job has scored it.
    pub readiness: Option<ReadinessView>,
}

/// The app's home screen for one day: one query of the caller's dashboard rows, however
/// long their history, and one read of the day's readiness, made concurrently. Poll it
/// cheaply with `If-None-Match`.
#[utoipa::path(
    get,
    path = "/v1/me/dashboard",
    tag = "dashboard",
    security(("bearer" = [])),
    params(DashboardQuery, responses::IfNoneMatch),
    responses(
        (status = 200, description = "The dashboard.", body = HomeView,
         headers(("ETag" = String, description = "The representation's tag."))),
        (status = 304, response = responses::NotModified),
        responses::QueryErrors,
    ),
)]
pub async fn dashboard(
    State(state): State<AppState>,
    caller: AuthUser,
    headers: HeaderMap,
    ApiQuery(query): ApiQuery<DashboardQuery>,
) -> Result<Response, ApiError> {
    let date = match &query.date {
        Some(raw) => day("date", raw)?,
        None => caller.today(),
    };
    let reads = &state.api.reads;
    let (dashboard, readiness) = tokio::join!(
        reads.dashboard.home(&caller.user, date),
        reads.insights.readiness(&caller.user, date),
    );
    let view = HomeView {
        dashboard: dashboard?,
        readiness: readiness?,
    };
    viewed(&headers, &view)
}
