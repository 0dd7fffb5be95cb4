//! Insights and surroundings under `/v1/me`: the nightly readiness score of a day (one
//! GetItem of the insights projection) and the weather and air quality of a coarse
//! location (the environment cache, filled from the provider on a miss). The cache is
//! keyed by geohash cell and hour, never by user: a location is truncated to a cell of
//! about 5 km before anything is looked up, and nothing about it is stored per user.

use super::Answer;
use crate::http::callers::Me;
use crate::http::extract::ApiQuery;
use crate::http::formats::day;
use crate::http::responses;
use crate::http::state::AppState;
use axum::Router;
use axum::routing::get;
use events_schema::time::Timestamp;
use serde::{Deserialize, Serialize};
use vitals_api_macros::read;

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
#[read(
    path = "/v1/me/readiness", tag = "insights", params(ReadinessQuery),
    ok = "The day's score.", body = readmodels::views::ReadinessView, errors(responses::QueryOneErrors),
)]
pub async fn readiness(me: Me, ApiQuery(query): ApiQuery<ReadinessQuery>) -> Answer {
    let date = day("date", &query.date)?;
    me.found(me.api.reads.insights.readiness(me.user(), date).await?)
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
#[read(
    path = "/v1/me/environment", tag = "insights", params(EnvironmentQuery),
    ok = "The readings.", body = EnvironmentView, errors(responses::QueryErrors),
)]
pub async fn environment(me: Me, ApiQuery(query): ApiQuery<EnvironmentQuery>) -> Answer {
    let cell: String = query
        .geohash
        .to_lowercase()
        .chars()
        .take(CELL_PRECISION)
        .collect();
    let at = query.at.unwrap_or_else(Timestamp::now).datetime();
    let environment = &me.api.environment;
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
    me.view(&view)
}
