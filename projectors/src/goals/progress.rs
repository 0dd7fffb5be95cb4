//! A goal's progress, recomputed for one period from the facts (see the module docs of
//! `goals` for the compare-and-set on the goal's `progress_rev`): the `PROGRESS#` row,
//! the goal's current value and the `GoalProgressed` event of each change, committed in
//! one transaction.

use super::fact_rows::value_of;
use super::period::period_start;
use super::table::{GoalRows, GoalState, PROGRESS_REV};
use crate::convert::{is_tombstone, item_of, row_of};
use crate::projector::ProjectionError;
use chrono::Datelike;
use events_schema::envelope::{EventEnvelope, outbox_item};
use events_schema::events::goals::{Goal, GoalKind, GoalProgressed};
use events_schema::keys::{SortKey, prefix};
use events_schema::rows::{GoalProgressAttrs, ProgressRow};
use events_schema::time::{Day, Timestamp};
use infra::StoreError;
use infra::store::{CancelReason, Condition, Key, SortKeyCondition, Update};
use infra::table::Action;
use rust_decimal::Decimal;

/// How many times a recompute reads again after losing its compare-and-set.
const MAX_ATTEMPTS: usize = 64;

/// What a change of one period does to the goal's current value.
enum Current {
    Keep,
    Set(Day, Decimal),
    /// No period is above zero any more.
    Clear,
}

impl Current {
    /// `update` with the goal item's current value changed as this says.
    fn applied_to(self, update: Update) -> Update {
        match self {
            Current::Keep => update,
            Current::Clear => update
                .remove("current_value")
                .remove("current_period_start")
                .remove("current_period_rank"),
            Current::Set(day, value) => {
                let attrs = item_of(&GoalProgressAttrs {
                    current_value: Some(value),
                    current_period_start: Some(day),
                });
                let rank = day.date().num_days_from_ce().max(0) as u64;
                attrs
                    .into_iter()
                    .fold(update, |update, (name, value)| update.set(name, value))
                    .set("current_period_rank", rank)
            }
        }
    }
}

/// The write of a goal's progress row at `key` for the period starting on `start`. A
/// period back to zero has no row: which rows exist is then a function of the facts
/// alone (the goal's revision, not the row, orders the changes).
fn progress_row(key: Key, goal: &Goal, start: Day, value: Decimal) -> Action {
    if value.is_zero() {
        return Action::Delete {
            key,
            condition: None,
        };
    }
    let mut item = item_of(&ProgressRow {
        goal_id: goal.goal_id.clone(),
        period_start: start,
        value,
        target: goal.target,
        met: value >= goal.target,
    });
    item.extend(key.to_item());
    Action::Put {
        item,
        condition: None,
    }
}

/// The key of a goal's progress row for the period starting on `start`.
fn progress_key(pk: &str, goal: &Goal, start: Day) -> Result<Key, ProjectionError> {
    let at = start
        .date()
        .and_hms_opt(0, 0, 0)
        .map(|t| t.and_utc().timestamp_millis())
        .and_then(Timestamp::from_millis)
        .ok_or_else(|| ProjectionError::Decode("period start out of range".into()))?;
    Ok(Key::new(
        pk,
        SortKey::Progress(goal.goal_id.clone(), at).to_string(),
    ))
}

/// The `GoalProgressed` event of change number `revision` of a goal's progress,
/// occurring `at`.
fn progress_event(
    pk: &str,
    progressed: &GoalProgressed,
    revision: u64,
    at: Timestamp,
) -> Result<EventEnvelope, ProjectionError> {
    let user = pk
        .strip_prefix("USER#")
        .and_then(|u| events_schema::ids::UserId::parse(u).ok());
    let mut event = EventEnvelope::new(user, at, progressed)
        .map_err(|e| ProjectionError::Decode(e.to_string()))?;
    let seed = format!("{}|progress|{revision}", progressed.goal_id);
    event.event_id = events_schema::ids::EventId::derived(&seed, at);
    Ok(event)
}

/// The compare-and-set on a goal read as `state`: it still exists, at the revision read.
fn revision_guard(state: &GoalState) -> Condition {
    let revision = match state.revision {
        Some(rev) => Condition::AttributeEquals(PROGRESS_REV.into(), rev.into()),
        None => Condition::AttributeNotExists(PROGRESS_REV.into()),
    };
    Condition::All(vec![Condition::ItemExists, revision])
}

impl GoalState {
    /// The first period the goal counts, if it records the day it was set.
    fn first_period(&self) -> Option<Day> {
        self.goal
            .created_on
            .map(|day| period_start(self.goal.period, day))
    }
}

impl GoalRows {
    /// Recomputes the progress of the user's goals of `kinds` for the periods holding
    /// `day`.
    pub(super) async fn progress(
        &self,
        pk: &str,
        kinds: &[GoalKind],
        day: Day,
    ) -> Result<(), ProjectionError> {
        for goal in self.goals(pk, kinds).await? {
            self.recompute(pk, &goal, period_start(goal.period, day))
                .await?;
        }
        Ok(())
    }

    /// Recomputes one goal's progress for the period starting on `start` (see the module
    /// docs for the compare-and-set).
    pub(super) async fn recompute(
        &self,
        pk: &str,
        goal: &Goal,
        start: Day,
    ) -> Result<(), ProjectionError> {
        let goal_key = Key::new(pk, SortKey::Goal(goal.goal_id.clone()).to_string());
        let key = progress_key(pk, goal, start)?;
        for _ in 0..MAX_ATTEMPTS {
            // The goal first: whatever changed its progress after this read also makes
            // the write below fail.
            let Some(row) = self.table.get(&goal_key, true).await? else {
                return Ok(());
            };
            let state = GoalState::of(row)?;
            if state.first_period().is_some_and(|first| start < first) {
                return Ok(());
            }
            let value = value_of(goal.kind, &self.facts(pk, goal, start).await?);
            let previous = self
                .table
                .get(&key, true)
                .await?
                .filter(|row| !is_tombstone(row))
                .and_then(|row| row_of::<ProgressRow>(&row).ok())
                .map_or(Decimal::ZERO, |row| row.value);
            let revision = state.revision.unwrap_or(0) + 1;
            let actions = if previous == value {
                // Nothing to change; but a worker that read older facts may be about to
                // commit them: moving the revision on fails its compare-and-set, so it
                // reads again. (A transaction of one write: a conflict with another
                // worker's transaction is then a cancellation, read like the change's.)
                vec![Action::Update {
                    key: goal_key.clone(),
                    update: Update::default().set(PROGRESS_REV, revision),
                    condition: Some(revision_guard(&state)),
                }]
            } else {
                let current = self.current_after(pk, &state, start, value).await?;
                self.change(pk, &state, (start, previous, value), revision, current)?
            };
            match self.table.transact(actions).await {
                Ok(()) => return Ok(()),
                // Another worker changed this goal's progress: read again.
                Err(StoreError::TransactionCanceled { reasons })
                    if CancelReason::lost_race(&reasons) =>
                {
                    continue;
                }
                Err(e) => return Err(e.into()),
            }
        }
        Err(StoreError::Backend(format!("progress of goal {} kept changing", goal.goal_id)).into())
    }

    /// How the goal's current value (its latest non-zero period's) changes once the
    /// period starting on `start` has `value`.
    async fn current_after(
        &self,
        pk: &str,
        state: &GoalState,
        start: Day,
        value: Decimal,
    ) -> Result<Current, ProjectionError> {
        if !value.is_zero() {
            return Ok(match state.current {
                Some(current) if current > start => Current::Keep,
                _ => Current::Set(start, value),
            });
        }
        if state.current != Some(start) {
            return Ok(Current::Keep);
        }
        // The latest period falls to zero: the one before it that is not zero, if any.
        let rows = self
            .rows(
                pk,
                SortKeyCondition::BeginsWith(prefix::progress_of(&state.goal.goal_id)),
            )
            .await?;
        let earlier = rows
            .iter()
            .filter_map(|row| row_of::<ProgressRow>(row).ok())
            .filter(|row| row.period_start < start)
            .map(|row| (row.period_start, row.value))
            .filter(|(_, value)| !value.is_zero())
            .max_by_key(|(day, _)| *day);
        Ok(earlier.map_or(Current::Clear, |(day, value)| Current::Set(day, value)))
    }

    /// The transaction of one change: the goal's revision (and current value), the
    /// progress row (or its tombstone) and the `GoalProgressed` event.
    fn change(
        &self,
        pk: &str,
        state: &GoalState,
        (start, previous, value): (Day, Decimal, Decimal),
        revision: u64,
        current: Current,
    ) -> Result<Vec<Action>, ProjectionError> {
        let goal = &state.goal;
        let met = value >= goal.target;
        let update = current.applied_to(Update::default().set(PROGRESS_REV, revision));
        let row = progress_row(progress_key(pk, goal, start)?, goal, start, value);
        let progressed = GoalProgressed {
            goal_id: goal.goal_id.clone(),
            kind: goal.kind,
            period_start: start,
            previous_value: previous,
            value,
            target: goal.target,
            met,
        };
        let event = progress_event(pk, &progressed, revision, self.clock.now())?;
        let event_item =
            outbox_item(pk, &event).map_err(|e| ProjectionError::Decode(e.to_string()))?;
        Ok(vec![
            Action::Update {
                key: Key::new(pk, SortKey::Goal(goal.goal_id.clone()).to_string()),
                update,
                condition: Some(revision_guard(state)),
            },
            row,
            Action::Put {
                item: event_item,
                condition: Some(Condition::ItemNotExists),
            },
        ])
    }
}
