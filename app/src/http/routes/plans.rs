//! Plans under `/v1/me`: meals scheduled for a day (listed, taken off the plan, or eaten,
//! which logs the meal in the same transaction) and training blocks (started, listed,
//! ended early). A planned thing is named in paths by its day and its id, the way it is
//! stored, so every operation on it is one keyed read or write.

use super::{Answer, created, id};
use crate::http::callers::Me;
use crate::http::extract::{ApiJson, ApiQuery};
use crate::http::formats::{Quantity, TimezoneName, Whole};
use crate::http::responses;
use crate::http::routes::activity::HistoryQuery;
use crate::http::state::AppState;
use axum::extract::Path;
use axum::http::StatusCode;
use axum::routing::{delete, post};
use axum::{Json, Router};
use commands::activity::StartTrainingBlock;
use commands::nutrition::{EatScheduledMeal, ScheduleMeal};
use events_schema::events::nutrition::Nutrients;
use events_schema::ids::{RecipeId, ScheduledMealId, TrainingBlockId};
use events_schema::time::{Day, Timestamp};
use readmodels::history::PageRequest;
use readmodels::views::{
    MealView, Page, ScheduledMealView, TrainingBlockListed, TrainingBlockView,
};
use serde::Deserialize;
use vitals_api_macros::{read, write};

pub fn router() -> Router<AppState> {
    Router::new()
        .route(
            "/v1/me/scheduled-meals",
            post(schedule_meal).get(scheduled_meals),
        )
        .route(
            "/v1/me/scheduled-meals/{day}/{id}",
            delete(remove_scheduled_meal),
        )
        .route(
            "/v1/me/scheduled-meals/{day}/{id}/eaten",
            post(eat_scheduled_meal),
        )
        .route(
            "/v1/me/training-blocks",
            post(start_training_block).get(training_blocks),
        )
        .route(
            "/v1/me/training-blocks/{start_day}/{id}/end",
            post(end_training_block),
        )
}

/// A meal planned for a day.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ScheduleBody {
    /// The day it is planned for, `YYYY-MM-DD`.
    #[schema(value_type = String, format = Date, example = "2026-03-02")]
    pub day: Day,
    /// 1 to 120 characters.
    #[schema(
        example = "Overnight oats",
        min_length = 1,
        max_length = 120,
        pattern = r"^[^\u0000-\u001f\u007f-\u009f]*[^\s\u0000-\u001f\u007f-\u009f][^\u0000-\u001f\u007f-\u009f]*$"
    )]
    pub name: String,
    /// A catalog recipe it follows (its nutrients are the meal's when it is eaten).
    pub recipe_id: Option<RecipeId>,
}

/// Schedules a meal for a day.
#[write(
    post, path = "/v1/me/scheduled-meals", tag = "plans", body = ScheduleBody,
    responses(
        (status = 201, description = "Scheduled; `Location` lists its day's scheduled meals.", body = ScheduledMealView,
         headers(("Location" = String, description = "`/v1/me/scheduled-meals?from={day}&to={day}`"))),
        (status = 404, response = responses::NotFound),
        responses::JsonWriteErrors,
    ),
)]
pub async fn schedule_meal(me: Me, ApiJson(body): ApiJson<ScheduleBody>) -> Answer {
    let input = ScheduleMeal {
        day: body.day,
        name: body.name,
        recipe_id: body.recipe_id,
    };
    let meta = me.meta("schedule_meal")?;
    let scheduled = me.api.nutrition.schedule_meal(&meta, input).await?.value;
    let day = scheduled.day;
    created(
        format!("/v1/me/scheduled-meals?from={day}&to={day}"),
        &ScheduledMealView::from(scheduled),
    )
}

/// Meals scheduled over a range of days, by day: one query per page.
#[read(
    path = "/v1/me/scheduled-meals", tag = "plans", params(HistoryQuery),
    ok = "A page of scheduled meals.", body = Page<ScheduledMealView>, errors(responses::QueryErrors),
)]
pub async fn scheduled_meals(me: Me, ApiQuery(query): ApiQuery<HistoryQuery>) -> Answer {
    let (range, page) = query.parse()?;
    let scheduled = &me.api.reads.scheduled_meals;
    me.view(&scheduled.between(me.user(), range, &page).await?)
}

/// Takes a scheduled meal off the plan without eating it.
#[write(
    delete, path = "/v1/me/scheduled-meals/{day}/{id}", tag = "plans",
    params(
        ("day" = String, Path, description = "The day it is scheduled for."),
        ("id" = String, Path, description = "The scheduled meal's id."),
    ),
    responses(
        (status = 204, description = "Removed (or, for a retried `Idempotency-Key`, already)."),
        (status = 400, response = responses::BadHeader),
        (status = 422, response = responses::Unprocessable),
        responses::ReadErrors,
    ),
)]
pub async fn remove_scheduled_meal(
    me: Me,
    Path((day, scheduled)): Path<(String, String)>,
) -> Answer<StatusCode> {
    let meta = me.meta("remove_scheduled_meal")?;
    let (day, scheduled) = (id::<Day>(&day)?, id::<ScheduledMealId>(&scheduled)?);
    let nutrition = &me.api.nutrition;
    nutrition
        .remove_scheduled_meal(&meta, day, &scheduled)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Energy and macronutrients of a meal eaten from the plan.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NutrientsBody {
    /// kcal, 0 to 10000.
    #[schema(value_type = f64, minimum = 0, maximum = 10000, multiple_of = 0.1, example = 420)]
    pub calories: Quantity,
    /// Grams, 0 to 1000.
    #[schema(value_type = f64, minimum = 0, maximum = 1000, multiple_of = 0.1, example = 30)]
    pub protein_g: Quantity,
    /// Grams, 0 to 1000.
    #[schema(value_type = f64, minimum = 0, maximum = 1000, multiple_of = 0.1, example = 40)]
    pub carbs_g: Quantity,
    /// Grams, 0 to 1000.
    #[schema(value_type = f64, minimum = 0, maximum = 1000, multiple_of = 0.1, example = 5)]
    pub fat_g: Quantity,
}

/// A scheduled meal, eaten.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EatenBody {
    /// When it was eaten: any RFC 3339 date-time from 2000-01-01 to a day from now.
    #[schema(example = "2026-03-02T08:00:00+01:00")]
    pub eaten_at: Timestamp,
    /// IANA timezone that names the meal's day; the token's timezone (or UTC) if absent.
    #[schema(value_type = Option<TimezoneName>)]
    pub timezone: Option<String>,
    /// What it held; required unless the scheduled meal names a recipe (whose nutrients
    /// are then the meal's).
    pub nutrients: Option<NutrientsBody>,
}

/// Logs a scheduled meal as eaten: the meal is logged and leaves the plan in one
/// transaction, so its day counts it once.
#[write(
    post, path = "/v1/me/scheduled-meals/{day}/{id}/eaten", tag = "plans", body = EatenBody,
    params(
        ("day" = String, Path, description = "The day it is scheduled for."),
        ("id" = String, Path, description = "The scheduled meal's id."),
    ),
    responses(
        (status = 201, description = "Logged as a meal; it is no longer scheduled.", body = MealView,
         headers(("Location" = String, description = "`/v1/me/meals/{id}`"))),
        (status = 404, response = responses::NotFound),
        responses::JsonWriteErrors,
    ),
)]
pub async fn eat_scheduled_meal(
    me: Me,
    Path((day, scheduled)): Path<(String, String)>,
    ApiJson(body): ApiJson<EatenBody>,
) -> Answer {
    let input = EatScheduledMeal {
        day: id::<Day>(&day)?,
        scheduled_meal_id: id::<ScheduledMealId>(&scheduled)?,
        eaten_at: body.eaten_at,
        timezone: me.timezone(body.timezone),
        nutrients: body.nutrients.map(|n| Nutrients {
            calories: n.calories.0,
            protein_g: n.protein_g.0,
            carbs_g: n.carbs_g.0,
            fat_g: n.fat_g.0,
        }),
    };
    let meta = me.meta("eat_scheduled_meal")?;
    let meal = me
        .api
        .nutrition
        .eat_scheduled_meal(&meta, input)
        .await?
        .value;
    created(
        format!("/v1/me/meals/{}", meal.meal_id),
        &super::nutrition::view(meal),
    )
}

/// A training block to start.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BlockBody {
    /// Its first day, `YYYY-MM-DD`.
    #[schema(value_type = String, format = Date, example = "2026-03-02")]
    pub start_day: Day,
    /// 1 to 52.
    #[schema(value_type = u8, minimum = 1, maximum = 52, example = 8)]
    pub weeks: Whole,
    /// What it trains for: 1 to 80 characters.
    #[schema(
        example = "10k",
        min_length = 1,
        max_length = 80,
        pattern = r"^[^\u0000-\u001f\u007f-\u009f]*[^\s\u0000-\u001f\u007f-\u009f][^\u0000-\u001f\u007f-\u009f]*$"
    )]
    pub focus: String,
}

/// Starts a training block.
#[write(
    post, path = "/v1/me/training-blocks", tag = "plans", body = BlockBody,
    responses(
        (status = 201, description = "Started; `Location` is the block running today.", body = TrainingBlockView,
         headers(("Location" = String, description = "`/v1/me/training-block/current`"))),
        responses::JsonWriteErrors,
    ),
)]
pub async fn start_training_block(me: Me, ApiJson(body): ApiJson<BlockBody>) -> Answer {
    let input = StartTrainingBlock {
        start_day: body.start_day,
        weeks: body.weeks.within("weeks", 52)?,
        focus: body.focus,
    };
    let meta = me.meta("start_training_block")?;
    let started = me.api.activity.start_training_block(&meta, input).await?;
    let view = TrainingBlockListed::of(started.value, None).block;
    created("/v1/me/training-block/current".to_owned(), &view)
}

/// Which page of the training blocks.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct BlocksQuery {
    /// Items per page, 1 to 100 (50 if absent).
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<usize>,
    /// The `next_cursor` of the previous page (only cursors the server gave out are valid).
    #[param(pattern = r"^[A-Za-z0-9_-]+$", min_length = 1, max_length = 2048)]
    pub cursor: Option<String>,
}

/// Every training block, the latest start first: one query per page.
#[read(
    path = "/v1/me/training-blocks", tag = "plans", params(BlocksQuery),
    ok = "A page of training blocks.", body = Page<TrainingBlockListed>, errors(responses::QueryErrors),
)]
pub async fn training_blocks(me: Me, ApiQuery(query): ApiQuery<BlocksQuery>) -> Answer {
    let page = PageRequest {
        limit: query.limit,
        cursor: query.cursor,
    };
    me.view(&me.api.reads.training_blocks.list(me.user(), &page).await?)
}

/// A training block's early end.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EndBody {
    /// Its last day: from its first day to its planned last day.
    #[schema(value_type = String, format = Date, example = "2026-03-20")]
    pub ended_on: Day,
}

/// Ends a training block before its planned last day.
#[write(
    post, path = "/v1/me/training-blocks/{start_day}/{id}/end", tag = "plans", body = EndBody,
    params(
        ("start_day" = String, Path, description = "The block's first day."),
        ("id" = String, Path, description = "The block's id."),
    ),
    responses(
        (status = 200, description = "Ended.", body = TrainingBlockListed),
        (status = 404, response = responses::NotFound),
        (status = 409, response = responses::Conflict),
        responses::JsonWriteErrors,
    ),
)]
pub async fn end_training_block(
    me: Me,
    Path((start_day, block)): Path<(String, String)>,
    ApiJson(body): ApiJson<EndBody>,
) -> Answer<Json<TrainingBlockListed>> {
    let start_day = id::<Day>(&start_day)?;
    let block = id::<TrainingBlockId>(&block)?;
    let meta = me.meta("end_training_block")?;
    let ended = me
        .api
        .activity
        .end_training_block(&meta, start_day, &block, body.ended_on);
    let ended = ended.await?.value;
    let listed = TrainingBlockListed::of(ended.block, Some(ended.ended_on));
    Ok(Json(listed))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_day_in_a_path_that_is_not_a_day_is_not_found() {
        assert!(super::id::<super::Day>("2026-02-30").is_err());
        assert!(super::id::<super::Day>("2026-02-28").is_ok());
    }
}
