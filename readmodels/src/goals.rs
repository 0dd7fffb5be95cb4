//! The goals context's reads: the user's goals in one status (one Query of the sparse
//! `by-status` index per page, goal items only) and a goal's progress, one row per
//! period (one Query per page).

use crate::history::{PageRequest, cursor_error};
use crate::views::{GoalView, Page, ProgressView, number};
use crate::{QueryError, decode};
use events_schema::events::goals::{Goal, GoalStatus};
use events_schema::ids::{GoalId, UserId};
use events_schema::keys::{PartitionKey, prefix};
use events_schema::rows::{GoalProgressAttrs, ProgressRow};
use infra::store::{Cursor, IndexQuery, Item, Query, SortKeyCondition};
use infra::table::{Table, contexts};

#[derive(Debug, Clone)]
pub struct Goals {
    table: Table<contexts::Goals>,
}

/// A goal item as a view: the goal, and its latest period if any counted.
fn view(row: Item) -> Result<GoalView, QueryError> {
    let progress: GoalProgressAttrs = decode(row.clone())?;
    let goal: Goal = decode(row)?;
    let latest = progress
        .current_period_start
        .zip(progress.current_value)
        .map(|(period_start, value)| ProgressView {
            period_start,
            value: number(value),
            target: number(goal.target),
            met: value >= goal.target,
        });
    Ok(GoalView::of(goal, latest))
}

impl Goals {
    pub fn new(table: Table<contexts::Goals>) -> Self {
        Self { table }
    }

    /// A page of the user's goals in `status`, oldest first: one index Query (a user
    /// sets goals for years; the completed ones are never pruned).
    pub async fn with_status(
        &self,
        user: &UserId,
        status: GoalStatus,
        page: &PageRequest,
    ) -> Result<Page<GoalView>, QueryError> {
        let pk = PartitionKey::User(user.clone()).to_string();
        let query = IndexQuery::partition("by-status", format!("{pk}#STATUS#{}", status.as_str()))
            .limit(page.limit()?)
            .after(page.cursor.clone().map(Cursor::from_text));
        let found = self.table.query_index(&query).await.map_err(cursor_error)?;
        Ok(Page {
            items: found
                .items
                .into_iter()
                .map(view)
                .collect::<Result<_, _>>()?,
            next_cursor: found.cursor.map(|c| c.as_str().to_owned()),
        })
    }

    /// One goal: one GetItem.
    pub async fn one(&self, user: &UserId, goal: &GoalId) -> Result<Option<GoalView>, QueryError> {
        let key = infra::store::Key::new(
            PartitionKey::User(user.clone()).to_string(),
            events_schema::keys::SortKey::Goal(goal.clone()).to_string(),
        );
        self.table.get(&key, false).await?.map(view).transpose()
    }

    /// A goal's progress, one entry per period that counted anything, oldest first.
    pub async fn progress(
        &self,
        user: &UserId,
        goal: &GoalId,
        page: &PageRequest,
    ) -> Result<Page<ProgressView>, QueryError> {
        let query = Query::partition(PartitionKey::User(user.clone()).to_string())
            .sort_key(SortKeyCondition::BeginsWith(prefix::progress_of(goal)))
            .limit(page.limit()?)
            .after(page.cursor.clone().map(Cursor::from_text));
        let found = self.table.query(&query).await.map_err(cursor_error)?;
        let items = found
            .items
            .into_iter()
            .map(|row| {
                decode::<ProgressRow>(row).map(|p| ProgressView {
                    period_start: p.period_start,
                    value: number(p.value),
                    target: number(p.target),
                    met: p.met,
                })
            })
            .collect::<Result<_, _>>()?;
        Ok(Page {
            items,
            next_cursor: found.cursor.map(|c| c.as_str().to_owned()),
        })
    }
}

/// The calls this module makes, as declared access patterns (see `infra::access`).
pub(crate) mod access {
    use events_schema::Context::Goals as GOALS;
    use infra::access::{AccessPattern as P, Op, Order::Forward, Sk};

    /// The goals screens' reads.
    pub static ACCESS: &[P] = &[
        P::new(
            "a user's goals in one status",
            GOALS,
            Op::query_index("by-status", Forward, true),
            "USER#",
            Sk::Whole,
            "GET /v1/me/goals",
        )
        .volume(3.0)
        .size(5, 500),
        P::new(
            "a goal",
            GOALS,
            Op::get(false),
            "USER#",
            Sk::exact("GOAL#"),
            "GET /v1/me/goals/{id}",
        )
        .volume(1.0)
        .size(1, 600),
        P::new(
            "a goal's progress by period",
            GOALS,
            Op::query(Forward, true, false),
            "USER#",
            Sk::prefix("PROGRESS#"),
            "GET /v1/me/goals/{id}/progress",
        )
        .volume(1.0)
        .size(10, 300),
    ];
}
