//! Goals under `/v1/me`: set one, list them by status, read one, change its status, and
//! its progress per period.

use super::{Answer, ApiError, created, id};
use crate::http::callers::Me;
use crate::http::extract::{ApiJson, ApiQuery};
use crate::http::formats::{Quantity, TimezoneName};
use crate::http::responses;
use crate::http::state::AppState;
use axum::extract::Path;
use axum::routing::get;
use axum::{Json, Router};
use commands::goals::CreateGoal;
use events_schema::events::goals::{GoalKind, GoalStatus};
use events_schema::ids::GoalId;
use readmodels::history::PageRequest;
use readmodels::views::{GoalView, Page, ProgressView};
use serde::{Deserialize, Serialize};
use vitals_api_macros::{read, write};

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
#[write(
    post, path = "/v1/me/goals", tag = "goals", body = GoalBody,
    responses(
        (status = 201, description = "Set.", body = GoalView,
         headers(("Location" = String, description = "`/v1/me/goals/{id}`"))),
        responses::JsonWriteErrors,
    ),
)]
pub async fn create_goal(me: Me, ApiJson(body): ApiJson<GoalBody>) -> Answer {
    let input = CreateGoal {
        kind: body.kind,
        target: body.target.0,
        title: body.title,
        timezone: Some(me.timezone(body.timezone)),
    };
    let meta = me.meta("create_goal")?;
    let goal = me.api.goals.create_goal(&meta, input).await?.value;
    let location = format!("/v1/me/goals/{}", goal.goal_id);
    created(location, &GoalView::of(goal, None))
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
#[read(
    path = "/v1/me/goals", tag = "goals", params(GoalFilter),
    ok = "A page of the goals, oldest first.", body = GoalList, errors(responses::QueryErrors),
)]
pub async fn list_goals(me: Me, ApiQuery(filter): ApiQuery<GoalFilter>) -> Answer {
    let status = filter.status.unwrap_or(GoalStatus::Active);
    let page = PageRequest {
        limit: filter.limit,
        cursor: filter.cursor,
    };
    let goals = &me.api.reads.goals;
    let found = goals.with_status(me.user(), status, &page).await?;
    let list = GoalList {
        goals: found.items,
        next_cursor: found.next_cursor,
    };
    me.view(&list)
}

/// One goal, with its latest period: one read.
#[read(
    path = "/v1/me/goals/{id}", tag = "goals", params(("id" = String, Path, description = "The goal's id.")),
    ok = "The goal.", body = GoalView, errors(responses::ReadErrors),
)]
pub async fn get_goal(me: Me, Path(goal_id): Path<String>) -> Answer {
    let goal = id::<GoalId>(&goal_id)?;
    me.found(me.api.reads.goals.one(me.user(), &goal).await?)
}

/// `PATCH /v1/me/goals/{id}`: the new status. Completed and abandoned goals are final.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct GoalPatch {
    pub status: GoalStatus,
}

/// Changes a goal's status.
#[write(
    patch, path = "/v1/me/goals/{id}", tag = "goals", body = GoalPatch,
    params(("id" = String, Path, description = "The goal's id.")),
    responses(
        (status = 200, description = "The goal after the change.", body = GoalView),
        (status = 404, response = responses::NotFound),
        responses::JsonWriteErrors,
    ),
)]
pub async fn patch_goal(
    me: Me,
    Path(goal_id): Path<String>,
    ApiJson(body): ApiJson<GoalPatch>,
) -> Answer<Json<GoalView>> {
    let meta = me.meta("change_goal_status")?;
    let goal_id = id::<GoalId>(&goal_id)?;
    let changed = me
        .api
        .goals
        .change_status(&meta, &goal_id, body.status)
        .await?;
    Ok(Json(GoalView::of(changed.value, None)))
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
#[read(
    path = "/v1/me/goals/{id}/progress", tag = "goals", params(("id" = String, Path, description = "The goal's id."), ProgressQuery),
    ok = "A page of progress.", body = Page<ProgressView>, errors(responses::QueryOneErrors),
)]
pub async fn goal_progress(
    me: Me,
    Path(goal_id): Path<String>,
    ApiQuery(query): ApiQuery<ProgressQuery>,
) -> Answer {
    let goal = id::<GoalId>(&goal_id)?;
    let page = PageRequest {
        limit: query.limit,
        cursor: query.cursor,
    };
    let goals = &me.api.reads.goals;
    let progress = goals.progress(me.user(), &goal, &page).await?;
    if progress.items.is_empty() && page.cursor.is_none() {
        // No progress yet, or not the caller's goal at all: tell them apart.
        goals
            .one(me.user(), &goal)
            .await?
            .ok_or_else(ApiError::not_found)?;
    }
    me.view(&progress)
}
