//! Meals and daily nutrition under `/v1/me`: log, replace and delete a meal (the day's
//! summary changes with it, atomically), a day's meals, daily totals over a range.

use super::{ApiError, created, id, timezone};
use crate::http::auth::AuthUser;
use crate::http::etag::viewed;
use crate::http::extract::{ApiJson, ApiQuery, meta};
use crate::http::formats::{Quantity, TimezoneName, day};
use crate::http::responses;
use crate::http::state::AppState;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::routing::{get, post, put};
use axum::{Json, Router};
use commands::nutrition::{EditMeal, MealInput, MealRecord};
use events_schema::ids::MealId;
use events_schema::time::Timestamp;
use readmodels::history::PageRequest;
use readmodels::views::{DailyNutritionView, MealView, Page};
use serde::Deserialize;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/v1/me/meals", post(log_meal).get(meals_on))
        .route("/v1/me/meals/{id}", put(edit_meal).delete(delete_meal))
        .route("/v1/me/nutrition/daily", get(daily_nutrition))
}

/// A meal, as logged or replaced. Quantities are numbers (strings holding one are
/// accepted too) with at most one decimal place.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MealBody {
    /// 1 to 120 characters.
    #[schema(
        example = "Oats",
        min_length = 1,
        max_length = 120,
        pattern = r"^[^\u0000-\u001f\u007f-\u009f]*[^\s\u0000-\u001f\u007f-\u009f][^\u0000-\u001f\u007f-\u009f]*$"
    )]
    pub name: String,
    /// When it was eaten: any RFC 3339 date-time from 2000-01-01 to a day from now.
    #[schema(example = "2026-03-01T08:00:00+01:00")]
    pub eaten_at: Timestamp,
    /// IANA timezone that names the meal's day; the token's timezone (or UTC) if absent.
    #[schema(value_type = Option<TimezoneName>)]
    pub timezone: Option<String>,
    /// kcal, 0 to 10000.
    #[schema(value_type = f64, minimum = 0, maximum = 10000, multiple_of = 0.1, example = 420)]
    pub calories: Quantity,
    /// Grams, 0 to 1000.
    #[schema(value_type = f64, minimum = 0, maximum = 1000, multiple_of = 0.1, example = 30.5)]
    pub protein_g: Quantity,
    /// Grams, 0 to 1000.
    #[schema(value_type = f64, minimum = 0, maximum = 1000, multiple_of = 0.1, example = 40)]
    pub carbs_g: Quantity,
    /// Grams, 0 to 1000.
    #[schema(value_type = f64, minimum = 0, maximum = 1000, multiple_of = 0.1, example = 5)]
    pub fat_g: Quantity,
}

impl MealBody {
    fn input(self, caller: &AuthUser) -> MealInput {
        MealInput {
            timezone: timezone(self.timezone, caller),
            name: self.name,
            eaten_at: self.eaten_at,
            calories: self.calories.0,
            protein_g: self.protein_g.0,
            carbs_g: self.carbs_g.0,
            fat_g: self.fat_g.0,
        }
    }
}

pub(crate) fn view(meal: MealRecord) -> MealView {
    MealView {
        meal_id: meal.meal_id,
        day: meal.day,
        eaten_at: meal.eaten_at,
        name: meal.name,
        nutrients: meal.nutrients.into(),
    }
}

/// Logs a meal; the day's summary changes with it, atomically.
#[utoipa::path(
    post,
    path = "/v1/me/meals",
    tag = "nutrition",
    security(("bearer" = [])),
    params(responses::IdempotencyKey),
    request_body = MealBody,
    responses(
        (status = 201, description = "Logged (or, for a retried `Idempotency-Key`, the first response again).",
         body = MealView, headers(("Location" = String, description = "`/v1/me/meals/{id}`"))),
        responses::JsonWriteErrors,
    ),
)]
pub async fn log_meal(
    State(state): State<AppState>,
    caller: AuthUser,
    headers: HeaderMap,
    ApiJson(body): ApiJson<MealBody>,
) -> Result<Response, ApiError> {
    let meal = state
        .api
        .nutrition
        .log_meal(&meta(&caller, &headers, "log_meal")?, body.input(&caller))
        .await?
        .value;
    created(format!("/v1/me/meals/{}", meal.meal_id), &view(meal))
}

/// Replaces a meal; both days' summaries change with it if it moves to another day.
#[utoipa::path(
    put,
    path = "/v1/me/meals/{id}",
    tag = "nutrition",
    security(("bearer" = [])),
    params(("id" = String, Path, description = "The meal's id."), responses::IdempotencyKey),
    request_body = MealBody,
    responses(
        (status = 200, description = "The meal as replaced.", body = MealView),
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
) -> Result<Json<MealView>, ApiError> {
    let input = EditMeal {
        meal_id: id::<MealId>(&meal_id)?,
        meal: body.input(&caller),
    };
    let meal = state
        .api
        .nutrition
        .edit_meal(&meta(&caller, &headers, "edit_meal")?, input)
        .await?
        .value;
    Ok(Json(view(meal)))
}

/// Deletes a meal and takes it out of its day's summary.
#[utoipa::path(
    delete,
    path = "/v1/me/meals/{id}",
    tag = "nutrition",
    security(("bearer" = [])),
    params(("id" = String, Path, description = "The meal's id."), responses::IdempotencyKey),
    responses(
        (status = 204, description = "Deleted (or, for a retried `Idempotency-Key`, already)."),
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
        .delete_meal(
            &meta(&caller, &headers, "delete_meal")?,
            &id::<MealId>(&meal_id)?,
        )
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// A day's meals, a page at a time.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct MealsQuery {
    /// The day, `YYYY-MM-DD`, in the timezone each meal was logged in.
    #[param(example = "2026-03-01", format = Date)]
    pub date: String,
    /// Items per page, 1 to 100 (50 if absent).
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<usize>,
    /// The `next_cursor` of the previous page (only cursors the server gave out are valid).
    #[param(pattern = r"^[A-Za-z0-9_-]+$", min_length = 1, max_length = 2048)]
    pub cursor: Option<String>,
}

/// The meals of one day, in the order they were logged: one query per page.
#[utoipa::path(
    get,
    path = "/v1/me/meals",
    tag = "nutrition",
    security(("bearer" = [])),
    params(MealsQuery, responses::IfNoneMatch),
    responses(
        (status = 200, description = "A page of the day's meals.", body = Page<MealView>,
         headers(("ETag" = String, description = "The representation's tag."))),
        (status = 304, response = responses::NotModified),
        responses::QueryErrors,
    ),
)]
pub async fn meals_on(
    State(state): State<AppState>,
    caller: AuthUser,
    headers: HeaderMap,
    ApiQuery(query): ApiQuery<MealsQuery>,
) -> Result<Response, ApiError> {
    let page = PageRequest {
        limit: query.limit,
        cursor: query.cursor,
    };
    let meals = state
        .api
        .reads
        .history
        .meals_on(&caller.user, day("date", &query.date)?, &page)
        .await?;
    viewed(&headers, &meals)
}

/// A range of days, both included.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct Range {
    /// First day, `YYYY-MM-DD`.
    #[param(example = "2026-03-01", format = Date)]
    pub from: String,
    /// Last day, `YYYY-MM-DD`: not before `from`, at most 30 days after it.
    #[param(example = "2026-03-07", format = Date)]
    pub to: String,
}

/// Daily nutrition summaries, each the sum of its day's meals: one query.
#[utoipa::path(
    get,
    path = "/v1/me/nutrition/daily",
    tag = "nutrition",
    security(("bearer" = [])),
    params(Range, responses::IfNoneMatch),
    responses(
        (status = 200, description = "The days with meals.", body = DailyNutritionView,
         headers(("ETag" = String, description = "The representation's tag."))),
        (status = 304, response = responses::NotModified),
        responses::QueryErrors,
    ),
)]
pub async fn daily_nutrition(
    State(state): State<AppState>,
    caller: AuthUser,
    headers: HeaderMap,
    ApiQuery(range): ApiQuery<Range>,
) -> Result<Response, ApiError> {
    let days = state
        .api
        .reads
        .nutrition
        .daily(
            &caller.user,
            day("from", &range.from)?,
            day("to", &range.to)?,
        )
        .await?;
    viewed(&headers, &days)
}
