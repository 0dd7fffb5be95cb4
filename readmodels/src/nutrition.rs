//! Daily nutrition, from the nutrition context's daily summaries (each always the sum of
//! its day's meals): one BETWEEN Query of at most [`MAX_SUMMARY_DAYS`] days.

use crate::views::{DailyNutritionView, DailySummaryView};
use crate::{QueryError, decode};
use chrono::Duration;
use events_schema::events::nutrition::Nutrients;
use events_schema::ids::UserId;
use events_schema::keys::{PartitionKey, SortKey};
use events_schema::time::Day;
use infra::store::{Query, SortKeyCondition};
use infra::table::{Table, contexts};
use serde::Deserialize;

/// The longest range of daily summaries one request may ask for.
pub const MAX_SUMMARY_DAYS: i64 = 31;

/// A daily summary as the nutrition context stores it.
#[derive(Deserialize)]
struct Summary {
    day: Day,
    meals: u32,
    totals: Nutrients,
}

#[derive(Debug, Clone)]
pub struct Nutrition {
    table: Table<contexts::Nutrition>,
}

impl Nutrition {
    pub fn new(table: Table<contexts::Nutrition>) -> Self {
        Self { table }
    }

    /// The days from `from` to `to` that have meals (or had, and now have none).
    pub async fn daily(
        &self,
        user: &UserId,
        from: Day,
        to: Day,
    ) -> Result<DailyNutritionView, QueryError> {
        if to < from {
            return Err(QueryError::invalid("to", "must not be before from"));
        }
        if to.date() - from.date() >= Duration::days(MAX_SUMMARY_DAYS) {
            return Err(QueryError::invalid(
                "to",
                format!("a range covers at most {MAX_SUMMARY_DAYS} days"),
            ));
        }
        let range = SortKeyCondition::Between(
            SortKey::DailySummary(from).to_string(),
            SortKey::DailySummary(to).to_string(),
        );
        let query = Query::partition(PartitionKey::User(user.clone()).to_string()).sort_key(range);
        let days = self
            .table
            .query(&query)
            .await?
            .items
            .into_iter()
            .map(|row| {
                decode::<Summary>(row).map(|s| DailySummaryView {
                    day: s.day,
                    meals: s.meals,
                    totals: s.totals.into(),
                })
            })
            .collect::<Result<_, _>>()?;
        Ok(DailyNutritionView { days })
    }
}

/// The calls this module makes, as declared access patterns (see `infra::access`).
pub(crate) mod access {
    use events_schema::Context::Nutrition as NUTRITION;
    use infra::access::{AccessPattern as P, Op, Order::Forward, Sk};

    /// The daily nutrition read.
    pub static ACCESS: &[P] = &[P::new(
        "daily totals of a range of days",
        NUTRITION,
        Op::query(Forward, false, false),
        "USER#",
        Sk::range("DAILY_SUMMARY#"),
        "GET /v1/me/nutrition/daily (at most 31 days)",
    )
    .volume(2.0)
    .size(7, 300)];
}
