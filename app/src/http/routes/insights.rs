//! Insights and surroundings under `/v1/me`: the nightly readiness score of a day (one
//! GetItem of the insights projection) and the weather and air quality of a coarse
//! location (the environment cache, filled from the provider on a miss). The cache is
//! keyed by geohash cell and hour, never by user: a location is truncated to a cell of
//! about 5 km before anything is looked up, and nothing about it is stored per user.

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
use events_schema::time::Timestamp;
use serde::{Deserialize, Serialize};

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/v1/me/readiness", get(readiness))
        .route("/v1/me/environment", get(environment))
}

/// Which day.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct ReadinessQuery {
    /// `YYYY-MM-DD` in the user's timezone.
    #[param(example = "2026-03-01", format = Date)]
    pub date: String,
}

/// The readiness scored for a day. `vitals serve` scores every user active on a day
/// once that day has ended everywhere; a user with no sleep or activity that day gets
/// no score (404).
#[utoipa::path(
    get,
    path = "/v1/me/readiness",
    tag = "insights",
    security(("bearer" = [])),
    params(ReadinessQuery, responses::IfNoneMatch),
    responses(
        (status = 200, description = "The day's score.", body = readmodels::views::ReadinessView,
         headers(("ETag" = String, description = "The representation's tag."))),
        (status = 304, response = responses::NotModified),
        (status = 404, response = responses::NotFound),
        responses::QueryErrors,
    ),
)]
pub async fn readiness(
    State(state): State<AppState>,
    caller: AuthUser,
    headers: HeaderMap,
    ApiQuery(query): ApiQuery<ReadinessQuery>,
) -> Result<Response, ApiError> {
    let date = day("date", &query.date)?;
    let score = state
        .api
        .reads
        .insights
        .readiness(&caller.user, date)
        .await?
        .ok_or_else(ApiError::not_found)?;
    viewed(&headers, &score)
}

/// The characters of a geohash cell kept: about 4.9 km by 4.9 km.
const CELL_PRECISION: usize = 5;

/// Where and when.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct EnvironmentQuery {
    /// A geohash of the location, 1 to 12 characters; only its first 5 are used.
    #[param(example = "u09tv", pattern = r"^[0-9b-hjkmnp-zB-HJKMNP-Z]{1,12}$")]
    pub geohash: String,
    /// The instant, RFC 3339; now if absent.
    #[param(value_type = Option<String>, format = DateTime, example = "2026-03-01T08:00:00Z")]
    pub at: Option<Timestamp>,
}

/// The weather of an hour.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct WeatherView {
    pub temperature_c: f64,
    pub humidity_pct: u8,
    pub wind_kph: f64,
}

/// The air quality of an hour.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct AirView {
    /// Air quality index.
    pub aqi: u16,
    /// PM2.5, µg/m³.
    pub pm25: f64,
}

/// The weather and air of a cell at an hour.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct EnvironmentView {
    /// The cell the readings are for (the location's first 5 geohash characters).
    pub cell: String,
    /// The start of the hour the readings describe.
    #[schema(value_type = String, format = DateTime)]
    pub hour: Timestamp,
    pub weather: WeatherView,
    pub air: AirView,
}

/// The weather and air quality around a location at an hour, from the environment
/// cache (the provider on a miss; cached about an hour).
#[utoipa::path(
    get,
    path = "/v1/me/environment",
    tag = "insights",
    security(("bearer" = [])),
    params(EnvironmentQuery, responses::IfNoneMatch),
    responses(
        (status = 200, description = "The readings.", body = EnvironmentView,
         headers(("ETag" = String, description = "The representation's tag."))),
        (status = 304, response = responses::NotModified),
        responses::QueryErrors,
    ),
)]
pub async fn environment(
    State(state): State<AppState>,
    _caller: AuthUser,
    headers: HeaderMap,
    ApiQuery(query): ApiQuery<EnvironmentQuery>,
) -> Result<Response, ApiError> {
    let cell: String = query
        .geohash
        .to_lowercase()
        .chars()
        .take(CELL_PRECISION)
        .collect();
    let at = query.at.unwrap_or_else(Timestamp::now).datetime();
    let environment = &state.api.environment;
    let weather = environment.weather(&cell, at).await?;
    let air = environment.air(&cell, at).await?;
    let hour = events_schema::time::Hour::containing(at).start();
    let view = EnvironmentView {
        cell,
        hour: Timestamp::from_datetime(hour),
        weather: WeatherView {
            temperature_c: weather.temperature_c,
            humidity_pct: weather.humidity_pct,
            wind_kph: weather.wind_kph,
        },
        air: AirView {
            aqi: air.aqi,
            pm25: air.pm25,
        },
    };
    viewed(&headers, &view)
}
