//! The history screens, from the dashboard table's history rows (`~MEAL#`, `~WORKOUT#`,
//! `~SLEEP#`): a day's meals, and workouts or sleep over a range of days, each one Query
//! per page, cursor-paginated. Deleted and moved things leave tombstones there; a page
//! leaves them out, so it may hold fewer items than its limit and still have a cursor.

use crate::views::{MealView, Page, SleepView, WorkoutView};
use crate::{QueryError, decode, live};
use events_schema::ids::UserId;
use events_schema::keys::{PartitionKey, prefix};
use events_schema::rows::{MealRow, SleepRow, WorkoutRow};
use events_schema::time::Day;
use infra::StoreError;
use infra::store::{Cursor, Query, SortKeyCondition};
use infra::table::{Table, contexts};

/// Items a page holds unless the caller asks for fewer.
pub const DEFAULT_LIMIT: usize = 50;
/// The most items a page holds.
pub const MAX_LIMIT: usize = 100;

/// Which page: at most `limit` items, after `cursor`.
#[derive(Debug, Clone, Default)]
pub struct PageRequest {
    pub limit: Option<usize>,
    pub cursor: Option<String>,
}

impl PageRequest {
    pub(crate) fn limit(&self) -> Result<usize, QueryError> {
        match self.limit {
            None => Ok(DEFAULT_LIMIT),
            Some(n) if (1..=MAX_LIMIT).contains(&n) => Ok(n),
            Some(_) => Err(QueryError::invalid(
                "limit",
                format!("must be 1 to {MAX_LIMIT}"),
            )),
        }
    }
}

/// A range of days: `to` not before `from`.
pub(crate) fn range(from: Day, to: Day) -> Result<(Day, Day), QueryError> {
    if to < from {
        return Err(QueryError::invalid("to", "must not be before from"));
    }
    Ok((from, to))
}

/// A cursor that does not decode (or is another query's) is the caller's.
pub(crate) fn cursor_error(error: StoreError) -> QueryError {
    match error {
        StoreError::Validation(_) => QueryError::invalid("cursor", "is not a cursor of this list"),
        other => QueryError::Store(other),
    }
}

/// The live rows of a store page as views, and the cursor of the next.
pub(crate) fn page_of<Row, View>(found: infra::store::Page) -> Result<Page<View>, QueryError>
where
    Row: serde::de::DeserializeOwned + Into<View>,
{
    let items = live(found.items)
        .map(|row| decode::<Row>(row).map(Into::into))
        .collect::<Result<Vec<View>, QueryError>>()?;
    Ok(Page {
        items,
        next_cursor: found.cursor.map(|c| c.as_str().to_owned()),
    })
}

#[derive(Debug, Clone)]
pub struct History {
    table: Table<contexts::Dashboard>,
}

impl History {
    pub fn new(table: Table<contexts::Dashboard>) -> Self {
        Self { table }
    }

    async fn page<Row, View>(
        &self,
        user: &UserId,
        condition: SortKeyCondition,
        newest_first: bool,
        page: &PageRequest,
    ) -> Result<Page<View>, QueryError>
    where
        Row: serde::de::DeserializeOwned + Into<View>,
    {
        let mut query = Query::partition(PartitionKey::User(user.clone()).to_string())
            .sort_key(condition)
            .limit(page.limit()?)
            .after(page.cursor.clone().map(Cursor::from_text));
        if newest_first {
            query = query.reverse();
        }
        let found = self.table.query(&query).await.map_err(cursor_error)?;
        page_of::<Row, View>(found)
    }

    /// The meals of one day, in the order they were logged.
    pub async fn meals_on(
        &self,
        user: &UserId,
        day: Day,
        page: &PageRequest,
    ) -> Result<Page<MealView>, QueryError> {
        let on_day = SortKeyCondition::BeginsWith(prefix::on_day(prefix::MEAL_LOG, day));
        self.page::<MealRow, MealView>(user, on_day, false, page)
            .await
    }

    /// Workouts from `from` to `to` (both included), newest day first.
    pub async fn workouts(
        &self,
        user: &UserId,
        (from, to): (Day, Day),
        page: &PageRequest,
    ) -> Result<Page<WorkoutView>, QueryError> {
        let (from, to) = range(from, to)?;
        let between = SortKeyCondition::days(prefix::WORKOUT_LOG, from, to);
        self.page::<WorkoutRow, WorkoutView>(user, between, true, page)
            .await
    }

    /// Sleep sessions of the nights from `from` to `to`, newest first.
    pub async fn sleep(
        &self,
        user: &UserId,
        (from, to): (Day, Day),
        page: &PageRequest,
    ) -> Result<Page<SleepView>, QueryError> {
        let (from, to) = range(from, to)?;
        let between = SortKeyCondition::days(prefix::SLEEP_LOG, from, to);
        self.page::<SleepRow, SleepView>(user, between, true, page)
            .await
    }
}

/// The calls this module makes, as declared access patterns (see `infra::access`).
pub(crate) mod access {
    use events_schema::Context::Dashboard as DASHBOARD;
    use infra::access::{AccessPattern as P, Op, Order::*, Sk};

    /// The history screens' reads, a page at a time.
    pub static ACCESS: &[P] = &[
        P::new(
            "a day's meals",
            DASHBOARD,
            Op::query(Forward, true, false),
            "USER#",
            Sk::prefix("~MEAL#"),
            "GET /v1/me/meals?date=",
        )
        .volume(2.0)
        .size(5, 400),
        P::new(
            "workouts of a range of days, newest first",
            DASHBOARD,
            Op::query(Backward, true, false),
            "USER#",
            Sk::range("~WORKOUT#"),
            "GET /v1/me/workouts",
        )
        .volume(1.0)
        .size(10, 400),
        P::new(
            "nights of a range, newest first",
            DASHBOARD,
            Op::query(Backward, true, false),
            "USER#",
            Sk::range("~SLEEP#"),
            "GET /v1/me/sleep",
        )
        .volume(1.0)
        .size(7, 300),
    ];
}
