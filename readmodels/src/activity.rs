//! The activity context's reads: the latest workout (one reverse Query, limit 1) and the
//! training block running on a day (one reverse Query, limit 1).

use crate::views::{TrainingBlockView, WorkoutView};
use crate::{QueryError, decode};
use events_schema::events::activity::Workout;
use events_schema::ids::UserId;
use events_schema::keys::{PartitionKey, prefix};
use events_schema::time::Day;
use infra::store::{Query, SortKeyCondition};
use infra::table::{Table, contexts};

#[derive(Debug, Clone)]
pub struct Activity {
    table: Table<contexts::Activity>,
}

impl Activity {
    pub fn new(table: Table<contexts::Activity>) -> Self {
        Self { table }
    }

    /// The workout with the latest day (and, on that day, the latest id).
    pub async fn latest_workout(&self, user: &UserId) -> Result<Option<WorkoutView>, QueryError> {
        let query = Query::partition(PartitionKey::User(user.clone()).to_string())
            .sort_key(SortKeyCondition::BeginsWith(prefix::WORKOUT.to_owned()))
            .reverse()
            .limit(1);
        let Some(row) = self.table.query(&query).await?.items.into_iter().next() else {
            return Ok(None);
        };
        let w: Workout = decode(row)?;
        Ok(Some(WorkoutView::from(w)))
    }

    /// The training block running on `today`: the latest block started on or before it,
    /// if it has not ended (as planned or early).
    pub async fn current_training_block(
        &self,
        user: &UserId,
        today: Day,
    ) -> Result<Option<TrainingBlockView>, QueryError> {
        let upto = SortKeyCondition::up_to_day(prefix::TRAINING_BLOCK, today);
        let query = Query::partition(PartitionKey::User(user.clone()).to_string())
            .sort_key(upto)
            .reverse()
            .limit(1);
        let Some(row) = self.table.query(&query).await?.items.into_iter().next() else {
            return Ok(None);
        };
        let block = decode::<crate::planning::BlockRow>(row)?.view().block;
        Ok((today <= block.end_day).then_some(block))
    }
}

/// The calls this module makes, as declared access patterns (see `infra::access`).
pub(crate) mod access {
    use events_schema::Context::Activity as ACTIVITY;
    use infra::access::{AccessPattern as P, Op, Order::Backward, Sk};

    /// The activity reads.
    pub static ACCESS: &[P] = &[
        P::new(
            "the latest workout",
            ACTIVITY,
            Op::query(Backward, true, false),
            "USER#",
            Sk::prefix("WORKOUT#"),
            "GET /v1/me/workouts/latest",
        )
        .volume(1.0)
        .size(1, 500),
        P::new(
            "the block in progress",
            ACTIVITY,
            Op::query(Backward, true, false),
            "USER#",
            Sk::range("TRAINING_BLOCK#"),
            "GET /v1/me/training-block/current (the latest block started by today)",
        )
        .volume(1.0)
        .size(1, 400),
    ];
}
