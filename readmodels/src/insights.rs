//! Insights: the nightly readiness score of a day (insights table, one GetItem).

use crate::views::ReadinessView;
use crate::{QueryError, decode};
use events_schema::ids::UserId;
use events_schema::keys::{PartitionKey, SortKey};
use events_schema::rows::ReadinessRow;
use events_schema::time::Day;
use infra::store::Key;
use infra::table::{Table, contexts};

impl From<ReadinessRow> for ReadinessView {
    fn from(r: ReadinessRow) -> Self {
        Self {
            day: r.day,
            score: r.score,
            days_with_data: r.days_with_data,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Insights {
    table: Table<contexts::Insights>,
}

impl Insights {
    pub fn new(table: Table<contexts::Insights>) -> Self {
        Self { table }
    }

    /// The readiness scored for `day`, if the nightly job scored the user that day.
    pub async fn readiness(
        &self,
        user: &UserId,
        day: Day,
    ) -> Result<Option<ReadinessView>, QueryError> {
        let key = Key::new(
            PartitionKey::User(user.clone()).to_string(),
            SortKey::Readiness(day).to_string(),
        );
        match self.table.get(&key, false).await? {
            Some(row) if !events_schema::rows::is_tombstone(&row) => {
                Ok(Some(decode::<ReadinessRow>(row)?.into()))
            }
            _ => Ok(None),
        }
    }
}

/// The calls this module makes, as declared access patterns (see `infra::access`).
pub(crate) mod access {
    use events_schema::Context::Insights as INSIGHTS;
    use infra::access::{AccessPattern as P, Op, Sk};

    /// The readiness read.
    pub static ACCESS: &[P] = &[P::new(
        "a day's readiness",
        INSIGHTS,
        Op::get(false),
        "USER#",
        Sk::exact("READINESS#"),
        "GET /v1/me/readiness",
    )
    .volume(1.0)
    .size(1, 300)];
}
