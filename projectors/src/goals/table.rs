//! The goals table as the goal projections read it: the user's goals with their
//! progress bookkeeping ([`GoalState`]), and the live fact rows of a goal's period.

use super::fact_rows::fact_prefix;
use crate::convert::{attr_of, is_tombstone, row_of};
use crate::projector::ProjectionError;
use chrono::Duration;
use events_schema::events::goals::{Goal, GoalKind, GoalPeriod};
use events_schema::keys::prefix;
use events_schema::rows::GoalProgressAttrs;
use events_schema::time::{Clock, Day};
use infra::StoreError;
use infra::store::{Item, Query, SortKeyCondition};
use infra::table::{Table, contexts};

/// The goal item's count of progress changes: the compare-and-set guard.
pub(super) const PROGRESS_REV: &str = "progress_rev";

/// The goals table, and the clock that dates the `GoalProgressed` events it publishes.
#[derive(Clone)]
pub struct GoalRows {
    pub(super) table: Table<contexts::Goals>,
    /// When a `GoalProgressed` it publishes occurred.
    pub(super) clock: Clock,
}

/// The goal item as the projection reads it: the goal, and its progress bookkeeping.
pub(super) struct GoalState {
    pub(super) goal: Goal,
    pub(super) revision: Option<u64>,
    pub(super) current: Option<Day>,
}

impl GoalState {
    pub(super) fn of(row: Item) -> Result<Self, ProjectionError> {
        let revision = attr_of::<u64>(&row, PROGRESS_REV);
        let current = row_of::<GoalProgressAttrs>(&row)
            .ok()
            .and_then(|p| p.current_period_start);
        let goal: Goal = row_of(&row).map_err(|e| ProjectionError::Decode(e.to_string()))?;
        Ok(Self {
            goal,
            revision,
            current,
        })
    }
}

impl GoalRows {
    /// The goals' rows in `table`, telling time by `clock`.
    pub fn new(table: Table<contexts::Goals>, clock: Clock) -> Self {
        Self { table, clock }
    }

    pub(super) async fn rows(
        &self,
        pk: &str,
        condition: SortKeyCondition,
    ) -> Result<Vec<Item>, StoreError> {
        let mut rows = Vec::new();
        let mut cursor = None;
        loop {
            let page = self
                .table
                .query(
                    &Query::partition(pk)
                        .sort_key(condition.clone())
                        .consistent()
                        .after(cursor),
                )
                .await?;
            rows.extend(page.items.into_iter().filter(|r| !is_tombstone(r)));
            match page.cursor {
                Some(next) => cursor = Some(next),
                None => return Ok(rows),
            }
        }
    }

    /// The live fact rows of `kind` in the period starting on `start`.
    pub(super) async fn facts(
        &self,
        pk: &str,
        goal: &Goal,
        start: Day,
    ) -> Result<Vec<Item>, StoreError> {
        let kind_prefix = fact_prefix(goal.kind);
        let last = match goal.period {
            GoalPeriod::Daily => start,
            GoalPeriod::Weekly => Day::new(start.date() + Duration::days(6)),
        };
        let range = SortKeyCondition::days(kind_prefix, start, last);
        self.rows(pk, range).await
    }

    /// Every goal of the user (any status) of one of `kinds`: one Query.
    pub(super) async fn goals(
        &self,
        pk: &str,
        kinds: &[GoalKind],
    ) -> Result<Vec<Goal>, ProjectionError> {
        let mut goals = Vec::new();
        for row in self
            .rows(pk, SortKeyCondition::BeginsWith(prefix::GOAL.to_owned()))
            .await?
        {
            let state = GoalState::of(row)?;
            if kinds.contains(&state.goal.kind) {
                goals.push(state.goal);
            }
        }
        Ok(goals)
    }
}
