//! Plans: scheduled meals over a range of days (nutrition table, one Query per page) and
//! training blocks, newest first (activity table, one Query per page). Both are the
//! command side's own items, read as they are: a plan has no projection to wait for.

use crate::QueryError;
use crate::history::{PageRequest, cursor_error, page_of, range};
use crate::views::{Page, ScheduledMealView, TrainingBlockListed, TrainingBlockView};
use events_schema::events::activity::TrainingBlockStarted;
use events_schema::events::nutrition::MealScheduled;
use events_schema::ids::UserId;
use events_schema::keys::{PartitionKey, prefix};
use events_schema::time::Day;
use infra::store::{Cursor, Query, SortKeyCondition};
use infra::table::{Table, contexts};
use serde::Deserialize;

impl From<MealScheduled> for ScheduledMealView {
    fn from(m: MealScheduled) -> Self {
        Self {
            scheduled_meal_id: m.scheduled_meal_id,
            day: m.day,
            name: m.name,
            recipe_id: m.recipe_id,
        }
    }
}

/// A training block item: the start event's fields, and `ended_on` once ended early.
#[derive(Deserialize)]
pub(crate) struct BlockRow {
    #[serde(flatten)]
    pub(crate) block: TrainingBlockStarted,
    #[serde(default)]
    pub(crate) ended_on: Option<Day>,
}

impl TrainingBlockListed {
    /// A block as listed: its last day is the day it ended, else its planned last day.
    pub fn of(b: TrainingBlockStarted, ended_on: Option<Day>) -> Self {
        let planned = b.planned_last_day();
        TrainingBlockListed {
            ended_early: ended_on.is_some(),
            block: TrainingBlockView {
                training_block_id: b.training_block_id,
                start_day: b.start_day,
                end_day: ended_on.unwrap_or(planned),
                weeks: b.weeks,
                focus: b.focus,
            },
        }
    }
}

impl BlockRow {
    pub(crate) fn view(self) -> TrainingBlockListed {
        TrainingBlockListed::of(self.block, self.ended_on)
    }
}

impl From<BlockRow> for TrainingBlockListed {
    fn from(row: BlockRow) -> Self {
        row.view()
    }
}

#[derive(Debug, Clone)]
pub struct ScheduledMeals {
    table: Table<contexts::Nutrition>,
}

impl ScheduledMeals {
    pub fn new(table: Table<contexts::Nutrition>) -> Self {
        Self { table }
    }

    /// Meals scheduled from `from` to `to` (both included), by day.
    pub async fn between(
        &self,
        user: &UserId,
        (from, to): (Day, Day),
        page: &PageRequest,
    ) -> Result<Page<ScheduledMealView>, QueryError> {
        let (from, to) = range(from, to)?;
        let between = SortKeyCondition::days(prefix::SCHEDULED_MEAL, from, to);
        let query = Query::partition(PartitionKey::User(user.clone()).to_string())
            .sort_key(between)
            .limit(page.limit()?)
            .after(page.cursor.clone().map(Cursor::from_text));
        let found = self.table.query(&query).await.map_err(cursor_error)?;
        page_of::<MealScheduled, ScheduledMealView>(found)
    }
}

#[derive(Debug, Clone)]
pub struct TrainingBlocks {
    table: Table<contexts::Activity>,
}

impl TrainingBlocks {
    pub fn new(table: Table<contexts::Activity>) -> Self {
        Self { table }
    }

    /// Every training block, the latest start first.
    pub async fn list(
        &self,
        user: &UserId,
        page: &PageRequest,
    ) -> Result<Page<TrainingBlockListed>, QueryError> {
        let query = Query::partition(PartitionKey::User(user.clone()).to_string())
            .sort_key(SortKeyCondition::BeginsWith(
                prefix::TRAINING_BLOCK.to_owned(),
            ))
            .reverse()
            .limit(page.limit()?)
            .after(page.cursor.clone().map(Cursor::from_text));
        let found = self.table.query(&query).await.map_err(cursor_error)?;
        page_of::<BlockRow, TrainingBlockListed>(found)
    }
}

/// The calls this module makes, as declared access patterns (see `infra::access`).
pub(crate) mod access {
    use events_schema::Context::{Activity as ACTIVITY, Nutrition as NUTRITION};
    use infra::access::{AccessPattern as P, Op, Order::*, Sk};

    /// The planning reads.
    pub static ACCESS: &[P] = &[
        P::new(
            "scheduled meals of a range of days",
            NUTRITION,
            Op::query(Forward, true, false),
            "USER#",
            Sk::range("SCHEDULED_MEAL#"),
            "GET /v1/me/scheduled-meals",
        )
        .volume(1.0)
        .size(7, 500),
        P::new(
            "training blocks, newest first",
            ACTIVITY,
            Op::query(Backward, true, false),
            "USER#",
            Sk::prefix("TRAINING_BLOCK#"),
            "GET /v1/me/training-blocks",
        )
        .volume(0.1)
        .size(5, 400),
    ];
}
