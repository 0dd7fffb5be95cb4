//! Workouts and training blocks under `/v1/me`: record a workout, the workout history,
//! the latest workout, the current training block.

use super::{Answer, ApiError, created};
use crate::http::callers::Me;
use crate::http::extract::{ApiJson, ApiQuery};
use crate::http::formats::{TimezoneName, Whole, day};
use crate::http::responses;
use crate::http::state::AppState;
use axum::Router;
use axum::routing::get;
use commands::activity::RecordWorkout;
use events_schema::events::activity::Workout;
use events_schema::time::{Day, Timestamp};
use readmodels::history::PageRequest;
use readmodels::views::{Page, TrainingBlockView, WorkoutView};
use serde::Deserialize;
use vitals_api_macros::{read, write};

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/v1/me/workouts", get(workouts).post(record_workout))
        .route("/v1/me/workouts/latest", get(latest_workout))
        .route("/v1/me/training-block/current", get(current_training_block))
}

pub(crate) fn view(w: Workout) -> WorkoutView {
    WorkoutView::from(w)
}

/// A workout entered in the app.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WorkoutBody {
    /// Such as `run`, `ride`, `strength`: 1 to 40 characters (stored in lowercase).
    #[schema(
        example = "run",
        min_length = 1,
        max_length = 40,
        pattern = r"^[^\u0000-\u001f\u007f-\u009f]*[^\s\u0000-\u001f\u007f-\u009f][^\u0000-\u001f\u007f-\u009f]*$"
    )]
    pub sport: String,
    /// Any RFC 3339 date-time from 2000-01-01 to a day from now.
    #[schema(example = "2026-03-01T07:00:00Z")]
    pub started_at: Timestamp,
    /// IANA timezone that names the workout's day; the token's timezone (or UTC) if absent.
    #[schema(value_type = Option<TimezoneName>)]
    pub timezone: Option<String>,
    /// 1 to 86400 seconds.
    #[schema(value_type = u32, minimum = 1, maximum = 86400, example = 2400)]
    pub duration_s: Whole,
    /// At most 1000000 metres.
    #[schema(value_type = Option<u32>, minimum = 0, maximum = 1000000)]
    pub distance_m: Option<Whole>,
    /// At most 20000 kcal.
    #[schema(value_type = Option<u32>, minimum = 0, maximum = 20000)]
    pub calories: Option<Whole>,
    /// How hard it felt: 1 (very light) to 10 (maximal effort).
    #[schema(value_type = Option<u8>, minimum = 1, maximum = 10, example = 6)]
    pub perceived_effort: Option<Whole>,
}

/// Records a workout entered in the app.
#[write(
    post, path = "/v1/me/workouts", tag = "activity", body = WorkoutBody,
    responses(
        (status = 201, description = "Recorded; `Location` lists its day's workouts.", body = WorkoutView,
         headers(("Location" = String, description = "`/v1/me/workouts?from={day}&to={day}`"))),
        responses::JsonWriteErrors,
    ),
)]
pub async fn record_workout(me: Me, ApiJson(body): ApiJson<WorkoutBody>) -> Answer {
    let input = RecordWorkout {
        timezone: me.timezone(body.timezone),
        sport: body.sport,
        started_at: body.started_at,
        duration_s: body.duration_s.within("duration_s", 86_400)?,
        distance_m: body
            .distance_m
            .map(|d| d.within("distance_m", 1_000_000))
            .transpose()?,
        calories: body
            .calories
            .map(|c| c.within("calories", 20_000))
            .transpose()?,
        perceived_effort: body
            .perceived_effort
            .map(|e| e.within::<u8>("perceived_effort", 10))
            .transpose()?,
    };
    let meta = me.meta("record_workout")?;
    let workout = me.api.activity.record_workout(&meta, input).await?.value;
    let location = format!("/v1/me/workouts?from={0}&to={0}", workout.day);
    created(location, &view(workout))
}

/// A range of days, and which page of it.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct HistoryQuery {
    /// First day, `YYYY-MM-DD`.
    #[param(example = "2026-03-01", format = Date)]
    pub from: String,
    /// Last day, `YYYY-MM-DD`, not before `from`.
    #[param(example = "2026-03-31", format = Date)]
    pub to: String,
    /// Items per page, 1 to 100 (50 if absent).
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<usize>,
    /// The `next_cursor` of the previous page (only cursors the server gave out are valid).
    #[param(pattern = r"^[A-Za-z0-9_-]+$", min_length = 1, max_length = 2048)]
    pub cursor: Option<String>,
}

impl HistoryQuery {
    pub(crate) fn parse(self) -> Result<((Day, Day), PageRequest), ApiError> {
        let range = (day("from", &self.from)?, day("to", &self.to)?);
        Ok((
            range,
            PageRequest {
                limit: self.limit,
                cursor: self.cursor,
            },
        ))
    }
}

/// Workouts of a range of days, newest day first: one query per page.
#[read(
    path = "/v1/me/workouts", tag = "activity", params(HistoryQuery),
    ok = "A page of workouts.", body = Page<WorkoutView>, errors(responses::QueryErrors),
)]
pub async fn workouts(me: Me, ApiQuery(query): ApiQuery<HistoryQuery>) -> Answer {
    let (range, page) = query.parse()?;
    let history = &me.api.reads.history;
    let workouts = history.workouts(me.user(), range, &page).await?;
    me.view(&workouts)
}

/// The most recent workout: one query.
#[read(
    path = "/v1/me/workouts/latest", tag = "activity",
    ok = "The workout with the latest day.", body = WorkoutView, errors(responses::ReadErrors),
)]
pub async fn latest_workout(me: Me) -> Answer {
    me.found(me.api.reads.activity.latest_workout(me.user()).await?)
}

/// The training block running today (in the token's timezone): one query.
#[read(
    path = "/v1/me/training-block/current", tag = "activity",
    ok = "The current block.", body = TrainingBlockView, errors(responses::ReadErrors),
)]
pub async fn current_training_block(me: Me) -> Answer {
    let today = me.caller.today();
    let activity = &me.api.reads.activity;
    let block = activity.current_training_block(me.user(), today).await?;
    me.found(block)
}
