//! Everything under `/v1/me`: the caller's profile, meals, workouts, sleep, goals and
//! dashboard. Another user's ids are simply not found in the caller's partitions: 404.

use crate::http::AppState;
use crate::http::auth::AuthUser;
use crate::http::error::ApiError;
use crate::http::extract::{ApiJson, meta};
use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use commands::activity::RecordWorkout;
use commands::goals::CreateGoal;
use commands::identity::UpdateProfile;
use commands::nutrition::{EditMeal, MealInput};
use commands::sleep::RecordSleep;
use events_schema::events::goals::GoalStatus;
use events_schema::events::sleep::SleepStages;
use events_schema::ids::{GoalId, MealId};
use events_schema::time::{Day, Timestamp};
use rust_decimal::Decimal;
use serde::Deserialize;
use serde_json::{Value, json};

type Reply = Result<Json<Value>, ApiError>;
type Created = Result<(StatusCode, Json<Value>), ApiError>;

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

pub async fn get_profile(State(state): State<AppState>, caller: AuthUser) -> Reply {
    let profile = state
        .api
        .reads
        .profile(&caller.user)
        .await?
        .ok_or_else(ApiError::not_found)?;
    Ok(Json(Value::Object(profile)))
}

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

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MealBody {
    pub name: String,
    pub eaten_at: Timestamp,
    pub timezone: Option<String>,
    pub calories: Decimal,
    pub protein_g: Decimal,
    pub carbs_g: Decimal,
    pub fat_g: Decimal,
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

pub async fn log_meal(
    State(state): State<AppState>,
    caller: AuthUser,
    headers: HeaderMap,
    ApiJson(body): ApiJson<MealBody>,
) -> Created {
    let meal = state
        .api
        .nutrition
        .log_meal(&meta(&caller, &headers)?, body.input(&caller))
        .await?
        .value;
    Ok((StatusCode::CREATED, Json(json!({"meal_id": meal}))))
}

pub async fn edit_meal(
    State(state): State<AppState>,
    caller: AuthUser,
    headers: HeaderMap,
    Path(meal_id): Path<String>,
    ApiJson(body): ApiJson<MealBody>,
) -> Reply {
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
    Ok(Json(json!({"meal_id": meal})))
}

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

#[derive(Debug, Deserialize)]
pub struct Range {
    pub from: String,
    pub to: String,
}

pub async fn daily_nutrition(
    State(state): State<AppState>,
    caller: AuthUser,
    Query(range): Query<Range>,
) -> Reply {
    let days = state
        .api
        .reads
        .daily_summaries(
            &caller.user,
            day("from", &range.from)?,
            day("to", &range.to)?,
        )
        .await?;
    Ok(Json(json!({"days": days})))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkoutBody {
    pub sport: String,
    pub started_at: Timestamp,
    pub timezone: Option<String>,
    pub duration_s: u32,
    pub distance_m: Option<u32>,
    pub calories: Option<u32>,
}

pub async fn record_workout(
    State(state): State<AppState>,
    caller: AuthUser,
    headers: HeaderMap,
    ApiJson(body): ApiJson<WorkoutBody>,
) -> Created {
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
    Ok((StatusCode::CREATED, Json(json!({"workout_id": workout}))))
}

pub async fn latest_workout(State(state): State<AppState>, caller: AuthUser) -> Reply {
    let workout = state
        .api
        .reads
        .latest_workout(&caller.user)
        .await?
        .ok_or_else(ApiError::not_found)?;
    Ok(Json(Value::Object(workout)))
}

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

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SleepBody {
    pub start: Timestamp,
    pub end: Timestamp,
    pub timezone: Option<String>,
    pub score: u8,
    #[serde(default)]
    pub stages: SleepStages,
}

pub async fn record_sleep(
    State(state): State<AppState>,
    caller: AuthUser,
    headers: HeaderMap,
    ApiJson(body): ApiJson<SleepBody>,
) -> Created {
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
    Ok((StatusCode::CREATED, Json(json!({"sleep_id": sleep}))))
}

pub async fn create_goal(
    State(state): State<AppState>,
    caller: AuthUser,
    headers: HeaderMap,
    ApiJson(body): ApiJson<CreateGoal>,
) -> Created {
    let goal = state
        .api
        .goals
        .create_goal(&meta(&caller, &headers)?, body)
        .await?
        .value;
    Ok((StatusCode::CREATED, Json(json!({"goal_id": goal}))))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GoalPatch {
    pub status: GoalStatus,
}

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

#[derive(Debug, Deserialize)]
pub struct GoalFilter {
    pub status: Option<String>,
}

pub async fn list_goals(
    State(state): State<AppState>,
    caller: AuthUser,
    Query(filter): Query<GoalFilter>,
) -> Reply {
    if filter.status.as_deref().is_some_and(|s| s != "active") {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "validation",
            "status: only active is supported",
        ));
    }
    let goals = state.api.reads.active_goals(&caller.user).await?;
    Ok(Json(json!({"goals": goals})))
}

pub async fn goal_progress(
    State(state): State<AppState>,
    caller: AuthUser,
    Path(goal_id): Path<String>,
) -> Reply {
    let goal = id::<GoalId>(&goal_id)?;
    let entries = state.api.reads.goal_progress(&caller.user, &goal).await?;
    if entries.is_empty() {
        // No progress yet, or not the caller's goal at all: tell them apart.
        let meta = commands::CommandMeta::new(caller.user.clone());
        state.api.goals.goal(&meta, &goal).await?;
    }
    Ok(Json(json!({"progress": entries})))
}

#[derive(Debug, Deserialize)]
pub struct DashboardQuery {
    pub date: String,
}

pub async fn dashboard(
    State(state): State<AppState>,
    caller: AuthUser,
    Query(query): Query<DashboardQuery>,
) -> Reply {
    let view = state
        .api
        .reads
        .dashboard(&caller.user, day("date", &query.date)?)
        .await?;
    Ok(Json(json!(view)))
}
