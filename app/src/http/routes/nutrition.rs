//! Meals and daily nutrition under `/v1/me`: log, replace and delete a meal (the day's
//! summary changes with it, atomically), a day's meals, daily totals over a range.

use super::{Answer, created, id};
use crate::http::callers::Me;
use crate::http::extract::{ApiJson, ApiQuery};
use crate::http::formats::{Quantity, TimezoneName, day};
use crate::http::responses;
use crate::http::state::AppState;
use axum::extract::Path;
use axum::http::StatusCode;
use axum::routing::{get, post, put};
use axum::{Json, Router};
use commands::nutrition::{EditMeal, MealInput, MealRecord};
use events_schema::ids::MealId;
use events_schema::time::Timestamp;
use readmodels::history::PageRequest;
use readmodels::views::{DailyNutritionView, MealView, Page};
use serde::Deserialize;
use vitals_api_macros::{read, write};

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
    fn input(self, me: &Me) -> MealInput {
        MealInput {
            timezone: me.timezone(self.timezone),
            name: self.name,
            eaten_at: self.eaten_at,
            calories: self.calories.0,
            protein_g: self.protein_g.0,
            carbs_g: self.carbs_g.0,
            fat_g: self.fat_g.0,
        }
    }
}

/// The view of a stored meal: the same conversion the read side makes of its rows (the
/// stored meal and the read row are one type).
pub(crate) fn view(meal: MealRecord) -> MealView {
    MealView::from(meal)
}

/// Logs a meal; the day's summary changes with it, atomically.
#[write(
    post, path = "/v1/me/meals", tag = "nutrition", body = MealBody,
    responses(
        (status = 201, description = "Logged (or, for a retried `Idempotency-Key`, the first response again).",
         body = MealView, headers(("Location" = String, description = "`/v1/me/meals/{id}`"))),
        responses::JsonWriteErrors,
    ),
)]
pub async fn log_meal(me: Me, ApiJson(body): ApiJson<MealBody>) -> Answer {
    let meta = me.meta("log_meal")?;
    let meal = me
        .api
        .nutrition
        .log_meal(&meta, body.input(&me))
        .await?
        .value;
    created(format!("/v1/me/meals/{}", meal.meal_id), &view(meal))
}

/// Replaces a meal; both days' summaries change with it if it moves to another day.
#[write(
    put, path = "/v1/me/meals/{id}", tag = "nutrition", body = MealBody,
    params(("id" = String, Path, description = "The meal's id.")),
    responses(
        (status = 200, description = "The meal as replaced.", body = MealView),
        (status = 404, response = responses::NotFound),
        responses::JsonWriteErrors,
    ),
)]
pub async fn edit_meal(
    me: Me,
    Path(meal_id): Path<String>,
    ApiJson(body): ApiJson<MealBody>,
) -> Answer<Json<MealView>> {
    let input = EditMeal {
        meal_id: id::<MealId>(&meal_id)?,
        meal: body.input(&me),
    };
    let meta = me.meta("edit_meal")?;
    let meal = me.api.nutrition.edit_meal(&meta, input).await?.value;
    Ok(Json(view(meal)))
}

/// Deletes a meal and takes it out of its day's summary.
#[write(
    delete, path = "/v1/me/meals/{id}", tag = "nutrition",
    params(("id" = String, Path, description = "The meal's id.")),
    responses(
        (status = 204, description = "Deleted (or, for a retried `Idempotency-Key`, already)."),
        (status = 400, response = responses::BadHeader),
        (status = 409, response = responses::Conflict),
        (status = 422, response = responses::Unprocessable),
        responses::ReadErrors,
    ),
)]
pub async fn delete_meal(me: Me, Path(meal_id): Path<String>) -> Answer<StatusCode> {
    let meta = me.meta("delete_meal")?;
    me.api
        .nutrition
        .delete_meal(&meta, &id::<MealId>(&meal_id)?)
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
#[read(
    path = "/v1/me/meals", tag = "nutrition", params(MealsQuery),
    ok = "A page of the day's meals.", body = Page<MealView>, errors(responses::QueryErrors),
)]
pub async fn meals_on(me: Me, ApiQuery(query): ApiQuery<MealsQuery>) -> Answer {
    let date = day("date", &query.date)?;
    let page = PageRequest {
        limit: query.limit,
        cursor: query.cursor,
    };
    let history = &me.api.reads.history;
    let meals = history.meals_on(me.user(), date, &page).await?;
    me.view(&meals)
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
#[read(
    path = "/v1/me/nutrition/daily", tag = "nutrition", params(Range),
    ok = "The days with meals.", body = DailyNutritionView, errors(responses::QueryErrors),
)]
pub async fn daily_nutrition(me: Me, ApiQuery(range): ApiQuery<Range>) -> Answer {
    let (from, to) = (day("from", &range.from)?, day("to", &range.to)?);
    me.view(&me.api.reads.nutrition.daily(me.user(), from, to).await?)
}
