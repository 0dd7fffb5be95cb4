//! The home screen: `GET /v1/me/dashboard`.

use super::Answer;
use crate::http::callers::Me;
use crate::http::extract::ApiQuery;
use crate::http::formats::day;
use crate::http::responses;
use crate::http::state::AppState;
use axum::Router;
use axum::routing::get;
use readmodels::views::{DashboardView, ReadinessView};
use serde::{Deserialize, Serialize};
use vitals_api_macros::read;

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
#[read(
    path = "/v1/me/dashboard", tag = "dashboard", params(DashboardQuery),
    ok = "The dashboard.", body = HomeView, errors(responses::QueryErrors),
)]
pub async fn dashboard(me: Me, ApiQuery(query): ApiQuery<DashboardQuery>) -> Answer {
    let date = match &query.date {
        Some(raw) => day("date", raw)?,
        None => me.caller.today(),
    };
    let reads = &me.api.reads;
    let (dashboard, readiness) = tokio::join!(
        reads.dashboard.home(me.user(), date),
        reads.insights.readiness(me.user(), date),
    );
    let view = HomeView {
        dashboard: dashboard?,
        readiness: readiness?,
    };
    me.view(&view)
}
