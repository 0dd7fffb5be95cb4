//! Sleep under `/v1/me`: record a session, the sleep history.

use super::activity::HistoryQuery;
use super::{Answer, ApiError, created};
use crate::http::callers::Me;
use crate::http::extract::{ApiJson, ApiQuery};
use crate::http::formats::{TimezoneName, Whole};
use crate::http::responses;
use crate::http::state::AppState;
use axum::Router;
use axum::routing::get;
use commands::sleep::RecordSleep;
use events_schema::events::sleep::{SleepSession, SleepStages};
use events_schema::time::Timestamp;
use readmodels::views::{Page, SleepView};
use serde::Deserialize;
use vitals_api_macros::{read, write};

pub fn router() -> Router<AppState> {
    Router::new().route("/v1/me/sleep", get(sleep_history).post(record_sleep))
}

fn view(s: SleepSession) -> SleepView {
    SleepView {
        sleep_id: s.sleep_id,
        night: s.night,
        minutes: s.start.minutes_until(s.end),
        start: s.start,
        end: s.end,
        score: s.score,
        stages: s.stages,
        source: s.source.into(),
    }
}

/// A sleep session entered in the app.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SleepBody {
    /// Any RFC 3339 date-time from 2000-01-01 to a day from now.
    #[schema(example = "2026-03-01T22:00:00Z")]
    pub start: Timestamp,
    /// After `start`, at most 24 hours later.
    #[schema(example = "2026-03-02T06:00:00Z")]
    pub end: Timestamp,
    /// IANA timezone that names the night; the token's timezone (or UTC) if absent.
    #[schema(value_type = Option<TimezoneName>)]
    pub timezone: Option<String>,
    /// 0 to 100.
    #[schema(value_type = u8, minimum = 0, maximum = 100)]
    pub score: Whole,
    /// Minutes per stage; together at most the session's length. Zeros if absent.
    pub stages: Option<StagesBody>,
}

/// Minutes spent in each stage of a session, each 0 to 1440.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct StagesBody {
    #[schema(value_type = u32, minimum = 0, maximum = 1440)]
    pub awake_min: Whole,
    #[schema(value_type = u32, minimum = 0, maximum = 1440)]
    pub light_min: Whole,
    #[schema(value_type = u32, minimum = 0, maximum = 1440)]
    pub deep_min: Whole,
    #[schema(value_type = u32, minimum = 0, maximum = 1440)]
    pub rem_min: Whole,
}

impl StagesBody {
    fn stages(self) -> Result<SleepStages, ApiError> {
        Ok(SleepStages {
            awake_min: self.awake_min.within("stages.awake_min", 1440)?,
            light_min: self.light_min.within("stages.light_min", 1440)?,
            deep_min: self.deep_min.within("stages.deep_min", 1440)?,
            rem_min: self.rem_min.within("stages.rem_min", 1440)?,
        })
    }
}

/// Records a sleep session entered in the app.
#[write(
    post, path = "/v1/me/sleep", tag = "sleep", body = SleepBody,
    responses(
        (status = 201, description = "Recorded; `Location` lists its night's sessions.", body = SleepView,
         headers(("Location" = String, description = "`/v1/me/sleep?from={night}&to={night}`"))),
        responses::JsonWriteErrors,
    ),
)]
pub async fn record_sleep(me: Me, ApiJson(body): ApiJson<SleepBody>) -> Answer {
    let input = RecordSleep {
        timezone: me.timezone(body.timezone),
        start: body.start,
        end: body.end,
        score: body.score.within("score", 100)?,
        stages: body
            .stages
            .map(StagesBody::stages)
            .transpose()?
            .unwrap_or_default(),
    };
    let meta = me.meta("record_sleep")?;
    let session = me.api.sleep.record_sleep(&meta, input).await?.value;
    let location = format!("/v1/me/sleep?from={0}&to={0}", session.night);
    created(location, &view(session))
}

/// Sleep sessions of a range of nights, newest first: one query per page.
#[read(
    path = "/v1/me/sleep", tag = "sleep", params(HistoryQuery),
    ok = "A page of sessions.", body = Page<SleepView>, errors(responses::QueryErrors),
)]
pub async fn sleep_history(me: Me, ApiQuery(query): ApiQuery<HistoryQuery>) -> Answer {
    let (range, page) = query.parse()?;
    me.view(&me.api.reads.history.sleep(me.user(), range, &page).await?)
}
