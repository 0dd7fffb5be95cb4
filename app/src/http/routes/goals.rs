//! Goals under `/v1/me`: set one, list them by status, read one, change its status, and
//! its progress per period.

use super::{ApiError, created, id};
use crate::http::auth::AuthUser;
use crate::http::etag::viewed;
use crate::http::extract::{ApiJson, ApiQuery, meta};
use crate::http::formats::{Quantity, TimezoneName};
use crate::http::responses;
use crate::http::state::AppState;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::Response;
use axum::routing::get;
use axum::{Json, Router};
use commands::goals::CreateGoal;
use events_schema::events::goals::{GoalKind, GoalStatus};
use events_schema::ids::GoalId;
use readmodels::history::PageRequest;
use readmodels::views::{GoalView, Page, ProgressView};
use serde::{Deserialize, Serialize};

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/v1/me/goals", get(list_goals).post(create_goal))
        .route("/v1/me/goals/{id}", get(get_goal).patch(patch_goal))
        .route("/v1/me/goals/{id}/progress", get(goal_progress))
}

/// `POST /v1/me/goals`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct GoalBody {
    /// What it counts; its period (daily or weekly) follows from it.
    pub kind: GoalKind,
    /// At least 0.1, at most 50 workouts a week, 5000 active minutes a week, 1000 g of
    /// protein a day, 2000 km a week or 16 hours of sleep a night; one decimal place.
    #[schema(value_type = f64, minimum = 0.1, maximum = 5000, multiple_of = 0.1, example = 3)]
    pub target: Quantity,
    /// 1 to 80 characters.
    #[schema(
        min_length = 1,
        max_length = 80,
        example = "Run three times a week",
        pattern = r"^[^\u0000-\u001f\u007f-\u009f]*[^\s\u0000-\u001f\u007f-\u009f][^\u0000-\u001f\u007f-\u009f]*$"
    )]
    pub title: String,
    /// IANA timezone: the goal counts from the period holding today there; the token's
    /// timezone (or UTC) if absent.
    #[schema(value_type = Option<TimezoneName>)]
    pub timezone: Option<String>,
}

/// Sets a goal. It counts from the period (day or ISO week) holding today, including
/// what was already recorded in it.
#[utoipa::path(
    post,
    path = "/v1/me/goals",
    tag = "goals",
    security(("bearer" = [])),
    params(responses::IdempotencyKey),
    request_body = GoalBody,
    responses(
        (status = 201, description = "Set.", body = GoalView,
         headers(("Location" = String, description = "`/v1/me/goals/{id}`"))),
        responses::JsonWriteErrors,
    ),
)]
pub async fn create_goal(
    State(state): State<AppState>,
    caller: AuthUser,
    headers: HeaderMap,
    ApiJson(body): ApiJson<GoalBody>,
) -> Result<Response, ApiError> {
    let input = CreateGoal {
        kind: body.kind,
        target: body.target.0,
        title: body.title,
        timezone: Some(super::timezone(body.timezone, &caller)),
    };
    let goal = state
        .api
        .goals
        .create_goal(&meta(&caller, &headers, "create_goal")?, input)
        .await?
        .value;
    created(
        format!("/v1/me/goals/{}", goal.goal_id),
        &GoalView::of(goal, None),
    )
}

/// Which goals to list, and which page of them.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct GoalFilter {
    /// `active` if absent.
    pub status: Option<GoalStatus>,
    /// Goals per page, 1 to 100 (50 if absent).
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<usize>,
    /// The `next_cursor` of the previous page (only cursors the server gave out are valid).
    #[param(pattern = r"^[A-Za-z0-9_-]+$", min_length = 1, max_length = 2048)]
    pub cursor: Option<String>,
}

/// A page of the caller's goals in one status.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct GoalList {
    pub goals: Vec<GoalView>,
    /// Pass it back as `cursor` for the next page; null on the last page.
    pub next_cursor: Option<String>,
}

/// The caller's goals in one status: one index query per page.
#[utoipa::path(
    get,
    path = "/v1/me/goals",
    tag = "goals",
    security(("bearer" = [])),
    params(GoalFilter, responses::IfNoneMatch),
    responses(
        (status = 200, description = "A page of the goals, oldest first.", body = GoalList,
         headers(("ETag" = String, description = "The representation's tag."))),
        (status = 304, response = responses::NotModified),
        responses::QueryErrors,
    ),
)]
pub async fn list_goals(
    State(state): State<AppState>,
    caller: AuthUser,
    headers: HeaderMap,
    ApiQuery(filter): ApiQuery<GoalFilter>,
) -> Result<Response, ApiError> {
    let status = filter.status.unwrap_or(GoalStatus::Active);
    let page = PageRequest {
        limit: filter.limit,
        cursor: filter.cursor,
    };
    let found = state
        .api
        .reads
        .goals
        .with_status(&caller.user, status, &page)
        .await?;
    let list = GoalList {
        goals: found.items,
        next_cursor: found.next_cursor,
    };
    viewed(&headers, &list)
}

/// One goal, with its latest period: one read.
#[utoipa::path(
    get,
    path = "/v1/me/goals/{id}",
    tag = "goals",
    security(("bearer" = [])),
    params(("id" = String, Path, description = "The goal's id."), responses::IfNoneMatch),
    responses(
        (status = 200, description = "The goal.", body = GoalView,
         headers(("ETag" = String, description = "The representation's tag."))),
        (status = 304, response = responses::NotModified),
        responses::ReadErrors,
    ),
)]
pub async fn get_goal(
    State(state): State<AppState>,
    caller: AuthUser,
    headers: HeaderMap,
    Path(goal_id): Path<String>,
) -> Result<Response, ApiError> {
    let goal = state
        .api
        .reads
        .goals
        .one(&caller.user, &id::<GoalId>(&goal_id)?)
        .await?
        .ok_or_else(ApiError::not_found)?;
    viewed(&headers, &goal)
}

/// `PATCH /v1/me/goals/{id}`: the new status. Completed and abandoned goals are final.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct GoalPatch {
    pub status: GoalStatus,
}

/// Changes a goal's status.
#[utoipa::path(
    patch,
    path = "/v1/me/goals/{id}",
    tag = "goals",
    security(("bearer" = [])),
    params(("id" = String, Path, description = "The goal's id."), responses::IdempotencyKey),
    request_body = GoalPatch,
    responses(
        (status = 200, description = "The goal after the change.", body = GoalView),
        (status = 404, response = responses::NotFound),
        responses::JsonWriteErrors,
    ),
)]
pub async fn patch_goal(
    State(state): State<AppState>,
    caller: AuthUser,
    headers: HeaderMap,
    Path(goal_id): Path<String>,
    ApiJson(body): ApiJson<GoalPatch>,
) -> Result<Json<GoalView>, ApiError> {
    let goal = state
        .api
        .goals
        .change_status(
            &meta(&caller, &headers, "change_goal_status")?,
            &id::<GoalId>(&goal_id)?,
            body.status,
        )
        .await?
        .value;
    Ok(Json(GoalView::of(goal, None)))
}

/// Which page of progress.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct ProgressQuery {
    /// Items per page, 1 to 100 (50 if absent).
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<usize>,
    /// The `next_cursor` of the previous page (only cursors the server gave out are valid).
    #[param(pattern = r"^[A-Za-z0-9_-]+$", min_length = 1, max_length = 2048)]
    pub cursor: Option<String>,
}

/// A goal's progress, one entry per period that counted anything, oldest first.
#[utoipa::path(
    get,
    path = "/v1/me/goals/{id}/progress",
    tag = "goals",
    security(("bearer" = [])),
    params(("id" = String, Path, description = "The goal's id."), ProgressQuery, responses::IfNoneMatch),
    responses(
        (status = 200, description = "A page of progress.", body = Page<ProgressView>,
         headers(("ETag" = String, description = "The representation's tag."))),
        (status = 304, response = responses::NotModified),
        responses::QueryErrors,
        (status = 404, response = responses::NotFound),
    ),
)]
pub async fn goal_progress(
    State(state): State<AppState>,
    caller: AuthUser,
    headers: HeaderMap,
    Path(goal_id): Path<String>,
    ApiQuery(query): ApiQuery<ProgressQuery>,
) -> Result<Response, ApiError> {
    let goal = id::<GoalId>(&goal_id)?;
    let page = PageRequest {
        limit: query.limit,
        cursor: query.cursor,
    };
    let progress = state
        .api
        .reads
        .goals
        .progress(&caller.user, &goal, &page)
        .await?;
    if progress.items.is_empty() && page.cursor.is_none() {
        // No progress yet, or not the caller's goal at all: tell them apart.
        state
            .api
            .reads
            .goals
            .one(&caller.user, &goal)
            .await?
            .ok_or_else(ApiError::not_found)?;
    }
    viewed(&headers, &progress)
}
