//! Everything under `/v1/me`: the caller's profile, meals, workouts, sleep, goals and
//! dashboard. Another user's ids are simply not found in the caller's partitions: 404.

use crate::http::AppState;
use crate::http::auth::AuthUser;
use crate::http::error::{ApiError, ErrorBody};
use crate::http::extract::{ApiJson, ApiQuery, meta};
use crate::http::openapi::{responses, schemas};
use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use commands::activity::RecordWorkout;
use commands::goals::CreateGoal;
use commands::identity::UpdateProfile;
use commands::nutrition::{EditMeal, MealInput};
use commands::sleep::RecordSleep;
use events_schema::events::goals::GoalStatus;
use events_schema::events::sleep::SleepStages;
use events_schema::ids::{GoalId, MealId, SleepId, WorkoutId};
use events_schema::time::{Day, Timestamp};
use infra::store::Item;
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

type Reply<T = Value> = Result<Json<T>, ApiError>;
type Created<T> = Result<(StatusCode, Json<T>), ApiError>;

fn id<T: std::str::FromStr>(raw: &str) -> Result<T, ApiError> {
    raw.parse().map_err(|_| ApiError::not_found())
}

fn day(field: &'static str, raw: &str) -> Result<Day, ApiError> {
    Day::parse(raw).map_err(|_| {
        ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "validation",
            format!("{field}: must be YYYY-MM-DD"),
        )
    })
}

fn timezone(body: Option<String>, caller: &AuthUser) -> String {
    body.or_else(|| caller.timezone.clone())
        .unwrap_or_else(|| "UTC".to_owned())
}

/// The caller's profile, as the dashboard projection holds it.
#[utoipa::path(
    get,
    path = "/v1/me/profile",
    tag = "me",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The profile. Right after registering it may not be projected yet: 404.", body = schemas::ProfileRow),
        responses::ReadErrors,
    ),
)]
pub async fn get_profile(State(state): State<AppState>, caller: AuthUser) -> Reply {
    let profile = state
        .api
        .reads
        .profile(&caller.user)
        .await?
        .ok_or_else(ApiError::not_found)?;
    Ok(Json(Value::Object(profile)))
}

/// Changes the fields present in the body.
#[utoipa::path(
    patch,
    path = "/v1/me/profile",
    tag = "me",
    security(("bearer" = [])),
    params(responses::IdempotencyKey),
    request_body = schemas::UpdateProfile,
    responses(
        (status = 200, description = "The profile after the change.", body = schemas::ProfileState),
        (status = 404, response = responses::NotFound),
        responses::JsonWriteErrors,
    ),
)]
pub async fn patch_profile(
    State(state): State<AppState>,
    caller: AuthUser,
    headers: HeaderMap,
    ApiJson(body): ApiJson<UpdateProfile>,
) -> Reply {
    let profile = state
        .api
        .identity
        .update_profile(&meta(&caller, &headers)?, body)
        .await?
        .value;
    Ok(Json(json!(profile)))
}

/// Requests the deletion of the caller's account.
///
/// Every context then drains the user's data; login is refused from now on. Asking
/// again changes nothing.
#[utoipa::path(
    delete,
    path = "/v1/me",
    tag = "me",
    security(("bearer" = [])),
    params(responses::IdempotencyKey),
    responses(
        (status = 202, description = "Deletion requested; it completes asynchronously."),
        (status = 400, response = responses::BadHeader),
        (status = 409, response = responses::Conflict),
        (status = 422, response = responses::Unprocessable),
        responses::ReadErrors,
    ),
)]
pub async fn delete_me(
    State(state): State<AppState>,
    caller: AuthUser,
    headers: HeaderMap,
) -> Result<StatusCode, ApiError> {
    state
        .api
        .identity
        .request_deletion(&meta(&caller, &headers)?)
        .await?;
    Ok(StatusCode::ACCEPTED)
}

/// A meal, as logged or edited.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MealBody {
    #[schema(example = "Oats")]
    pub name: String,
    #[schema(value_type = schemas::Timestamp)]
    pub eaten_at: Timestamp,
    /// IANA timezone that names the meal's day; the token's timezone (or UTC) if absent.
    pub timezone: Option<String>,
    #[schema(value_type = schemas::Decimal)]
    pub calories: Decimal,
    #[schema(value_type = schemas::Decimal)]
    pub protein_g: Decimal,
    #[schema(value_type = schemas::Decimal)]
    pub carbs_g: Decimal,
    #[schema(value_type = schemas::Decimal)]
    pub fat_g: Decimal,
}

/// The meal that was logged or edited.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct MealReply {
    #[schema(value_type = schemas::Id)]
    pub meal_id: MealId,
}

impl MealBody {
    fn input(self, caller: &AuthUser) -> MealInput {
        MealInput {
            timezone: timezone(self.timezone, caller),
            name: self.name,
            eaten_at: self.eaten_at,
            calories: self.calories,
            protein_g: self.protein_g,
            carbs_g: self.carbs_g,
            fat_g: self.fat_g,
        }
    }
}

/// Logs a meal; the day's summary changes with it, atomically.
#[utoipa::path(
    post,
    path = "/v1/me/meals",
    tag = "me",
    security(("bearer" = [])),
    params(responses::IdempotencyKey),
    request_body = MealBody,
    responses(
        (status = 201, description = "Logged (or, for a retried `Idempotency-Key`, the first response again).", body = MealReply),
        responses::JsonWriteErrors,
    ),
)]
pub async fn log_meal(
    State(state): State<AppState>,
    caller: AuthUser,
    headers: HeaderMap,
    ApiJson(body): ApiJson<MealBody>,
) -> Created<MealReply> {
    let meal = state
        .api
        .nutrition
        .log_meal(&meta(&caller, &headers)?, body.input(&caller))
        .await?
        .value;
    Ok((StatusCode::CREATED, Json(MealReply { meal_id: meal })))
}

/// Replaces a meal; both days' summaries change with it if it moves to another day.
#[utoipa::path(
    put,
    path = "/v1/me/meals/{id}",
    tag = "me",
    security(("bearer" = [])),
    params(
        ("id" = String, Path, description = "The meal's id."),
        responses::IdempotencyKey,
    ),
    request_body = MealBody,
    responses(
        (status = 200, description = "Edited.", body = MealReply),
        (status = 404, response = responses::NotFound),
        responses::JsonWriteErrors,
    ),
)]
pub async fn edit_meal(
    State(state): State<AppState>,
    caller: AuthUser,
    headers: HeaderMap,
    Path(meal_id): Path<String>,
    ApiJson(body): ApiJson<MealBody>,
) -> Reply<MealReply> {
    let edit = EditMeal {
        meal_id: id::<MealId>(&meal_id)?,
        meal: body.input(&caller),
    };
    let meal = state
        .api
        .nutrition
        .edit_meal(&meta(&caller, &headers)?, edit)
        .await?
        .value;
    Ok(Json(MealReply { meal_id: meal }))
}

/// Deletes a meal; its day's summary changes with it.
#[utoipa::path(
    delete,
    path = "/v1/me/meals/{id}",
    tag = "me",
    security(("bearer" = [])),
    params(
        ("id" = String, Path, description = "The meal's id."),
        responses::IdempotencyKey,
    ),
    responses(
        (status = 204, description = "Deleted."),
        (status = 400, response = responses::BadHeader),
        (status = 409, response = responses::Conflict),
        (status = 422, response = responses::Unprocessable),
        responses::ReadErrors,
    ),
)]
pub async fn delete_meal(
    State(state): State<AppState>,
    caller: AuthUser,
    headers: HeaderMap,
    Path(meal_id): Path<String>,
) -> Result<StatusCode, ApiError> {
    state
        .api
        .nutrition
        .delete_meal(&meta(&caller, &headers)?, &id::<MealId>(&meal_id)?)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// A range of days, both included, at most 31 days.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct Range {
    /// First day, `YYYY-MM-DD`.
    #[param(example = "2026-03-01")]
    pub from: String,
    /// Last day, `YYYY-MM-DD`, not before `from`.
    #[param(example = "2026-03-07")]
    pub to: String,
}

/// Daily nutrition summaries.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct DailyNutrition {
    /// Only the days that have (or had) meals, oldest first.
    #[schema(value_type = Vec<schemas::DailySummaryRow>)]
    pub days: Vec<Item>,
}

/// The caller's daily nutrition summaries over a range of days: one query.
#[utoipa::path(
    get,
    path = "/v1/me/nutrition/daily",
    tag = "me",
    security(("bearer" = [])),
    params(Range),
    responses(
        (status = 200, description = "The summaries.", body = DailyNutrition),
        responses::QueryErrors,
    ),
)]
pub async fn daily_nutrition(
    State(state): State<AppState>,
    caller: AuthUser,
    ApiQuery(range): ApiQuery<Range>,
) -> Reply<DailyNutrition> {
    let days = state
        .api
        .reads
        .daily_summaries(
            &caller.user,
            day("from", &range.from)?,
            day("to", &range.to)?,
        )
        .await?;
    Ok(Json(DailyNutrition { days }))
}

/// A workout entered in the app.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WorkoutBody {
    /// Such as `run`, `ride`, `strength`.
    #[schema(example = "run")]
    pub sport: String,
    #[schema(value_type = schemas::Timestamp)]
    pub started_at: Timestamp,
    /// IANA timezone that names the workout's day; the token's timezone (or UTC) if absent.
    pub timezone: Option<String>,
    pub duration_s: u32,
    pub distance_m: Option<u32>,
    pub calories: Option<u32>,
}

/// The workout that was recorded.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct WorkoutReply {
    #[schema(value_type = schemas::Id)]
    pub workout_id: WorkoutId,
}

/// Records a workout entered in the app.
#[utoipa::path(
    post,
    path = "/v1/me/workouts",
    tag = "me",
    security(("bearer" = [])),
    params(responses::IdempotencyKey),
    request_body = WorkoutBody,
    responses(
        (status = 201, description = "Recorded.", body = WorkoutReply),
        responses::JsonWriteErrors,
    ),
)]
pub async fn record_workout(
    State(state): State<AppState>,
    caller: AuthUser,
    headers: HeaderMap,
    ApiJson(body): ApiJson<WorkoutBody>,
) -> Created<WorkoutReply> {
    let input = RecordWorkout {
        timezone: timezone(body.timezone, &caller),
        sport: body.sport,
        started_at: body.started_at,
        duration_s: body.duration_s,
        distance_m: body.distance_m,
        calories: body.calories,
    };
    let workout = state
        .api
        .activity
        .record_workout(&meta(&caller, &headers)?, input)
        .await?
        .value;
    Ok((
        StatusCode::CREATED,
        Json(WorkoutReply {
            workout_id: workout,
        }),
    ))
}

/// The caller's most recent workout: one query.
#[utoipa::path(
    get,
    path = "/v1/me/workouts/latest",
    tag = "me",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The workout that started last.", body = schemas::WorkoutRow),
        responses::ReadErrors,
    ),
)]
pub async fn latest_workout(State(state): State<AppState>, caller: AuthUser) -> Reply {
    let workout = state
        .api
        .reads
        .latest_workout(&caller.user)
        .await?
        .ok_or_else(ApiError::not_found)?;
    Ok(Json(Value::Object(workout)))
}

/// The training block running today (UTC), if any: one query.
#[utoipa::path(
    get,
    path = "/v1/me/training-block/current",
    tag = "me",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The block.", body = schemas::TrainingBlockRow),
        responses::ReadErrors,
    ),
)]
pub async fn current_training_block(State(state): State<AppState>, caller: AuthUser) -> Reply {
    let today = Day::new(chrono::Utc::now().date_naive());
    let block = state
        .api
        .reads
        .current_training_block(&caller.user, today)
        .await?
        .ok_or_else(ApiError::not_found)?;
    Ok(Json(Value::Object(block)))
}

/// A night's sleep entered in the app.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SleepBody {
    #[schema(value_type = schemas::Timestamp)]
    pub start: Timestamp,
    #[schema(value_type = schemas::Timestamp)]
    pub end: Timestamp,
    /// IANA timezone that names the night; the token's timezone (or UTC) if absent.
    pub timezone: Option<String>,
    pub score: u8,
    /// All zero if absent.
    #[serde(default)]
    #[schema(value_type = schemas::SleepStages)]
    pub stages: SleepStages,
}

/// The sleep session that was recorded.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct SleepReply {
    #[schema(value_type = schemas::Id)]
    pub sleep_id: SleepId,
}

/// Records a night's sleep entered in the app.
#[utoipa::path(
    post,
    path = "/v1/me/sleep",
    tag = "me",
    security(("bearer" = [])),
    params(responses::IdempotencyKey),
    request_body = SleepBody,
    responses(
        (status = 201, description = "Recorded.", body = SleepReply),
        responses::JsonWriteErrors,
    ),
)]
pub async fn record_sleep(
    State(state): State<AppState>,
    caller: AuthUser,
    headers: HeaderMap,
    ApiJson(body): ApiJson<SleepBody>,
) -> Created<SleepReply> {
    let input = RecordSleep {
        timezone: timezone(body.timezone, &caller),
        start: body.start,
        end: body.end,
        score: body.score,
        stages: body.stages,
    };
    let sleep = state
        .api
        .sleep
        .record_sleep(&meta(&caller, &headers)?, input)
        .await?
        .value;
    Ok((StatusCode::CREATED, Json(SleepReply { sleep_id: sleep })))
}

/// The goal that was created.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct GoalReply {
    #[schema(value_type = schemas::Id)]
    pub goal_id: GoalId,
}

/// Creates an active goal; progress counts the facts that arrive after it.
#[utoipa::path(
    post,
    path = "/v1/me/goals",
    tag = "me",
    security(("bearer" = [])),
    params(responses::IdempotencyKey),
    request_body = schemas::CreateGoal,
    responses(
        (status = 201, description = "Created.", body = GoalReply),
        responses::JsonWriteErrors,
    ),
)]
pub async fn create_goal(
    State(state): State<AppState>,
    caller: AuthUser,
    headers: HeaderMap,
    ApiJson(mut body): ApiJson<CreateGoal>,
) -> Created<GoalReply> {
    body.timezone = Some(timezone(body.timezone, &caller));
    let goal = state
        .api
        .goals
        .create_goal(&meta(&caller, &headers)?, body)
        .await?
        .value;
    Ok((StatusCode::CREATED, Json(GoalReply { goal_id: goal })))
}

/// `PATCH /v1/me/goals/{id}`: the new status. Completed and abandoned goals are final.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct GoalPatch {
    #[schema(value_type = schemas::GoalStatus)]
    pub status: GoalStatus,
}

/// Changes a goal's status.
#[utoipa::path(
    patch,
    path = "/v1/me/goals/{id}",
    tag = "me",
    security(("bearer" = [])),
    params(
        ("id" = String, Path, description = "The goal's id."),
        responses::IdempotencyKey,
    ),
    request_body = GoalPatch,
    responses(
        (status = 200, description = "The goal after the change.", body = schemas::Goal),
        (status = 400, response = responses::BadRequest),
        (status = 409, description = "`conflict`: the goal cannot move to that status (completed and abandoned goals are final); `contention`: too many concurrent changes, try again.", body = ErrorBody),
        (status = 413, response = responses::PayloadTooLarge),
        (status = 415, response = responses::UnsupportedMediaType),
        (status = 422, response = responses::Unprocessable),
        responses::ReadErrors,
    ),
)]
pub async fn patch_goal(
    State(state): State<AppState>,
    caller: AuthUser,
    headers: HeaderMap,
    Path(goal_id): Path<String>,
    ApiJson(body): ApiJson<GoalPatch>,
) -> Reply {
    let goal = state
        .api
        .goals
        .change_status(
            &meta(&caller, &headers)?,
            &id::<GoalId>(&goal_id)?,
            body.status,
        )
        .await?
        .value;
    Ok(Json(json!(goal)))
}

/// Which goals to list.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct GoalFilter {
    /// Only `active` is supported (and is the default).
    #[param(example = "active")]
    pub status: Option<String>,
}

/// The caller's goals.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct GoalList {
    #[schema(value_type = Vec<schemas::GoalRow>)]
    pub goals: Vec<Item>,
}

/// The caller's active goals: one index query.
#[utoipa::path(
    get,
    path = "/v1/me/goals",
    tag = "me",
    security(("bearer" = [])),
    params(GoalFilter),
    responses(
        (status = 200, description = "The active goals.", body = GoalList),
        responses::QueryErrors,
    ),
)]
pub async fn list_goals(
    State(state): State<AppState>,
    caller: AuthUser,
    ApiQuery(filter): ApiQuery<GoalFilter>,
) -> Reply<GoalList> {
    if filter.status.as_deref().is_some_and(|s| s != "active") {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "validation",
            "status: only active is supported",
        ));
    }
    let goals = state.api.reads.active_goals(&caller.user).await?;
    Ok(Json(GoalList { goals }))
}

/// A goal's progress.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct GoalProgress {
    /// One entry per period that has facts, oldest first; empty before any.
    #[schema(value_type = Vec<schemas::GoalProgressRow>)]
    pub progress: Vec<Item>,
}

/// A goal's progress per period: one query.
#[utoipa::path(
    get,
    path = "/v1/me/goals/{id}/progress",
    tag = "me",
    security(("bearer" = [])),
    params(("id" = String, Path, description = "The goal's id.")),
    responses(
        (status = 200, description = "The progress entries.", body = GoalProgress),
        responses::ReadErrors,
    ),
)]
pub async fn goal_progress(
    State(state): State<AppState>,
    caller: AuthUser,
    Path(goal_id): Path<String>,
) -> Reply<GoalProgress> {
    let goal = id::<GoalId>(&goal_id)?;
    let entries = state.api.reads.goal_progress(&caller.user, &goal).await?;
    if entries.is_empty() {
        // No progress yet, or not the caller's goal at all: tell them apart.
        let meta = commands::CommandMeta::new(caller.user.clone());
        state.api.goals.goal(&meta, &goal).await?;
    }
    Ok(Json(GoalProgress { progress: entries }))
}

/// Which day the dashboard shows.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct DashboardQuery {
    /// The day, `YYYY-MM-DD`.
    #[param(example = "2026-03-01")]
    pub date: String,
}

/// The app's home screen for one day: one query of the caller's dashboard partition.
#[utoipa::path(
    get,
    path = "/v1/me/dashboard",
    tag = "me",
    security(("bearer" = [])),
    params(DashboardQuery),
    responses(
        (status = 200, description = "The dashboard.", body = schemas::DashboardView),
        responses::QueryErrors,
    ),
)]
pub async fn dashboard(
    State(state): State<AppState>,
    caller: AuthUser,
    ApiQuery(query): ApiQuery<DashboardQuery>,
) -> Reply {
    let view = state
        .api
        .reads
        .dashboard(&caller.user, day("date", &query.date)?)
        .await?;
    Ok(Json(json!(view)))
}
