//! Logging, editing and deleting meals. Every change of a day's meals rewrites that
//! day's summary in the same transaction, on condition that the summary is still the
//! version read; on a conflict the command retries with the summary the cancellation
//! reason returned (no extra read). So a summary always equals the sum of its meals,
//! whatever the concurrency. Each event carries the day's new totals (`day_totals`):
//! the read side copies them and never sums meals itself.
//!
//! Layout: `records` (the inputs, the stored meal and summary, their validation),
//! `writes` (what each change writes, decided from what was read, with its tests),
//! and here the commands (read, decide, commit, retry) and their access patterns.

mod records;
mod writes;

pub(super) use records::valid_nutrients;
pub use records::{EditMeal, LogMeal, MealInput, MealRecord, SummaryRecord};

use super::NutritionCommands;
use crate::CommandError;
use crate::idempotency::{self, Committed};
use crate::meta::{CommandMeta, Outcome};
use crate::optimistic::{self, Attempt};
use crate::outbox::{envelope, event_action};
use events_schema::events::nutrition::{MealDeleted, MealEdited, MealLogged};
use events_schema::ids::MealId;
use events_schema::time::Day;
use infra::store::{CancelReason, Key};
use infra::table::Action;
use records::validate_meal;
use serde_json::json;
use writes::{
    meal_key, moved_day_edit, new_meal, ref_key, refreshed, removed_meal, same_day_edit,
    summary_from, summary_key,
};

/// Where, in a meal log's transaction, the cancellation reasons of interest are.
#[derive(Debug, Clone, Copy)]
struct LogLayout {
    /// The day's summary: [`new_meal`]'s last action.
    summary_at: usize,
    /// The first of the caller's own actions, which come after the event.
    also_from: usize,
}

impl NutritionCommands {
    /// Logs a meal. Costs one read (the day's summary) and one transaction (meal, its
    /// reference, the summary, the event) when nobody else writes that day.
    pub async fn log_meal(
        &self,
        meta: &CommandMeta,
        input: LogMeal,
    ) -> Result<Outcome<MealRecord>, CommandError> {
        let _writer = self.writers.user(&meta.user).await;
        self.log_meal_with(meta, &input, &input, |_| Ok(Vec::new()))
            .await
    }

    /// Logs `input` as a meal with the actions `also` returns for it in the same
    /// transaction (a scheduled meal eaten leaves the plan with it); `request` is what the
    /// idempotency record fingerprints. A failed condition of one of those actions is
    /// `NotFound("scheduled meal")`. The caller holds the user's writer lock.
    pub(super) async fn log_meal_with<F>(
        &self,
        meta: &CommandMeta,
        input: &LogMeal,
        request: &impl serde::Serialize,
        also: F,
    ) -> Result<Outcome<MealRecord>, CommandError>
    where
        F: Fn(&MealRecord) -> Result<Vec<Action>, CommandError>,
    {
        let meal = validate_meal(input, self.clock.now())?;
        let pk = meta.user_pk();
        let meal_id = MealId::generate();
        let record = MealRecord {
            meal_id: meal_id.clone(),
            day: meal.day,
            eaten_at: meal.eaten_at,
            name: meal.name,
            nutrients: meal.nutrients,
            version: 1,
        };
        let mut summary = self.stored_summary(&pk, meal.day).await?;
        optimistic::run!({
            let (actions, layout) = self.log_writes(meta, &pk, &record, &summary, &also)?;
            match idempotency::commit(&self.table, meta, &pk, request, actions, record.clone())
                .await?
            {
                Committed::Done(outcome) => Ok(Attempt::Done(outcome)),
                Committed::Cancelled(reasons) => {
                    self.log_cancelled(&pk, record.day, &reasons, layout, &mut summary)
                        .await
                }
            }
        })
    }

    /// What logging `record` over its day's `summary` writes: the meal, its reference
    /// and the summary ([`new_meal`]), the event, then the actions `also` returns for
    /// it; and where in them a cancellation's reasons are read.
    fn log_writes(
        &self,
        meta: &CommandMeta,
        pk: &str,
        record: &MealRecord,
        summary: &SummaryRecord,
        also: &impl Fn(&MealRecord) -> Result<Vec<Action>, CommandError>,
    ) -> Result<(Vec<Action>, LogLayout), CommandError> {
        let (mut actions, next) = new_meal(pk, record, summary)?;
        // Where the cancellation reasons say what failed: the summary is new_meal's
        // last action, the caller's own come after the event.
        let summary_at = actions.len() - 1;
        let event = envelope(
            meta,
            &self.clock,
            record.eaten_at,
            &MealLogged {
                meal: record.clone(),
                day_totals: next.clone(),
            },
        )?;
        actions.push(event_action(pk, &event)?);
        let also_from = actions.len();
        actions.extend(also(record)?);
        Ok((
            actions,
            LogLayout {
                summary_at,
                also_from,
            },
        ))
    }

    /// What a cancelled meal log (laid out as `layout` says) means: a failed condition
    /// of the caller's own actions is the scheduled meal gone; otherwise `day`'s summary
    /// moved on, and `summary` becomes the one the cancellation returned (or, after a
    /// transaction conflict, which carries no item, the one stored now) to try again.
    async fn log_cancelled(
        &self,
        pk: &str,
        day: Day,
        reasons: &[CancelReason],
        layout: LogLayout,
        summary: &mut SummaryRecord,
    ) -> Result<Attempt<Outcome<MealRecord>>, CommandError> {
        if reasons
            .iter()
            .skip(layout.also_from)
            .any(|r| matches!(r, CancelReason::ConditionFailed { .. }))
        {
            return Err(CommandError::NotFound("scheduled meal"));
        }
        // The summary moved on: the cancellation returned it.
        match refreshed(reasons, layout.summary_at, day) {
            Some(fresh) => {
                *summary = fresh?;
                Ok(Attempt::LostRace)
            }
            // A transaction conflict carries no item: read the summary again.
            None if reasons.contains(&CancelReason::Conflict) => {
                *summary = self.stored_summary(pk, day).await?;
                Ok(Attempt::LostRace)
            }
            None => Err(idempotency::unexpected(reasons)),
        }
    }

    async fn load_meal(&self, pk: &str, meal_id: &MealId) -> Result<MealRecord, CommandError> {
        let reference = self.existing(&ref_key(pk, meal_id), "meal").await?;
        let day: Day = reference
            .get("day")
            .cloned()
            .and_then(|d| serde_json::from_value(d).ok())
            .ok_or(CommandError::NotFound("meal"))?;
        self.record(&meal_key(pk, day, meal_id), "meal").await
    }

    /// Replaces a meal. If its day changes, it moves: both days' summaries change in the
    /// same transaction.
    pub async fn edit_meal(
        &self,
        meta: &CommandMeta,
        input: EditMeal,
    ) -> Result<Outcome<MealRecord>, CommandError> {
        let meal = validate_meal(&input.meal, self.clock.now())?;
        let _writer = self.writers.user(&meta.user).await;
        let pk = meta.user_pk();
        // A concurrent change to the meal or a summary: read again and retry.
        optimistic::run!({
            let current = self.load_meal(&pk, &input.meal_id).await?;
            let next = MealRecord {
                meal_id: current.meal_id.clone(),
                day: meal.day,
                eaten_at: meal.eaten_at,
                name: meal.name.clone(),
                nutrients: meal.nutrients,
                version: current.version + 1,
            };
            let old_summary = self.stored_summary(&pk, current.day).await?;
            let (mut actions, day_totals) = if next.day == current.day {
                same_day_edit(&pk, &current, &next, &old_summary)?
            } else {
                let new_summary = self.stored_summary(&pk, next.day).await?;
                moved_day_edit(&pk, &current, &next, &old_summary, &new_summary)?
            };
            let event = envelope(
                meta,
                &self.clock,
                next.eaten_at,
                &MealEdited {
                    meal: next.clone(),
                    previous_day: current.day,
                    day_totals,
                },
            )?;
            actions.push(event_action(&pk, &event)?);
            optimistic::settled(
                idempotency::commit(&self.table, meta, &pk, &input, actions, next.clone()).await?,
            )
        })
    }

    /// Deletes a meal and takes it out of its day's summary.
    pub async fn delete_meal(
        &self,
        meta: &CommandMeta,
        meal_id: &MealId,
    ) -> Result<Outcome<()>, CommandError> {
        let _writer = self.writers.user(&meta.user).await;
        let pk = meta.user_pk();
        optimistic::run!({
            let current = match self.load_meal(&pk, meal_id).await {
                Ok(meal) => meal,
                // Deleting twice with the same key answers as the first time did.
                Err(CommandError::NotFound(_)) if meta.idempotency_key.is_some() => {
                    return self.replay_delete(meta, meal_id).await.map(Attempt::Done);
                }
                Err(e) => return Err(e),
            };
            let summary = self.stored_summary(&pk, current.day).await?;
            let (mut actions, next) = removed_meal(&pk, &current, &summary)?;
            let event = self.event_now(
                meta,
                &MealDeleted {
                    meal_id: meal_id.clone(),
                    day: current.day,
                    version: current.version + 1,
                    day_totals: next.clone(),
                },
            )?;
            actions.push(event_action(&pk, &event)?);
            optimistic::settled(
                idempotency::commit(
                    &self.table,
                    meta,
                    &pk,
                    &json!({"delete_meal": meal_id}),
                    actions,
                    (),
                )
                .await?,
            )
        })
    }

    async fn replay_delete(
        &self,
        meta: &CommandMeta,
        meal_id: &MealId,
    ) -> Result<Outcome<()>, CommandError> {
        let Some(key) = &meta.idempotency_key else {
            return Err(CommandError::NotFound("meal"));
        };
        let record = self
            .table
            .get(&Key::new(meta.user_pk(), key.sort_key()), true)
            .await?;
        let expected = idempotency::request_hash(&json!({"delete_meal": meal_id}));
        match record
            .as_ref()
            .and_then(|r| r.get("request_hash"))
            .and_then(|h| h.as_str())
        {
            Some(hash) if hash == expected => Ok(Outcome::replayed(())),
            Some(_) => Err(CommandError::IdempotencyKeyReused),
            None => Err(CommandError::NotFound("meal")),
        }
    }

    /// The stored summary of a day (for tests and the read side's checks).
    pub async fn summary(
        &self,
        meta: &CommandMeta,
        day: Day,
    ) -> Result<SummaryRecord, CommandError> {
        self.stored_summary(&meta.user_pk(), day).await
    }

    /// The summary of `day` in partition `pk`, read strongly consistent (the empty one
    /// when nothing was logged that day).
    async fn stored_summary(&self, pk: &str, day: Day) -> Result<SummaryRecord, CommandError> {
        summary_from(self.table.get(&summary_key(pk, day), true).await?, day)
    }
}

/// The calls this module makes, as declared access patterns (see `infra::access`).
pub(crate) mod access {
    use crate::idempotency::command_tx;
    use events_schema::Context::Nutrition as NUTRITION;
    use infra::access::{AccessPattern as P, Action::*, Op, Sk, Written as W};

    /// A meal's items.
    const MEAL: W = W::new(Put, NUTRITION, "USER#", "MEAL#");
    const MEAL_REF: W = W::new(Put, NUTRITION, "USER#", "MEAL_REF#");
    const SUMMARY: W = W::new(Put, NUTRITION, "USER#", "DAILY_SUMMARY#");
    const EVENT: W = W::new(Put, NUTRITION, "USER#", "EVT#");

    /// The meal commands' calls.
    pub static ACCESS: &[P] = &[
        P::transact(
            "log a meal",
            command_tx!(Nutrition, "USER#", [MEAL, MEAL_REF, SUMMARY, EVENT]),
            "POST /v1/me/meals",
        )
        .volume(4.0)
        .size(4, 700),
        P::new(
            "the day a meal is filed under",
            NUTRITION,
            Op::get(true),
            "USER#",
            Sk::exact("MEAL_REF#"),
            "PUT and DELETE /v1/me/meals/{id}",
        )
        .volume(0.5)
        .size(1, 150),
        P::new(
            "a meal, to change it",
            NUTRITION,
            Op::get(true),
            "USER#",
            Sk::exact("MEAL#"),
            "PUT and DELETE /v1/me/meals/{id}",
        )
        .volume(0.5)
        .size(1, 500),
        P::new(
            "a day's totals, to change them",
            NUTRITION,
            Op::get(true),
            "USER#",
            Sk::exact("DAILY_SUMMARY#"),
            "POST, PUT and DELETE /v1/me/meals (the totals move with the meal)",
        )
        .volume(5.0)
        .size(1, 300),
        P::transact(
            "edit a meal",
            command_tx!(Nutrition, "USER#", [MEAL, SUMMARY, EVENT]),
            "PUT /v1/me/meals/{id} (the same day)",
        )
        .volume(0.3)
        .size(3, 600),
        P::transact(
            "move a meal to another day",
            command_tx!(
                Nutrition,
                "USER#",
                [
                    W::new(Delete, NUTRITION, "USER#", "MEAL#"),
                    MEAL,
                    SUMMARY,
                    MEAL_REF,
                    EVENT,
                ]
            ),
            "PUT /v1/me/meals/{id} (another day: both days' totals change)",
        )
        .volume(0.02)
        .size(6, 600),
        P::transact(
            "delete a meal",
            command_tx!(
                Nutrition,
                "USER#",
                [
                    W::new(Delete, NUTRITION, "USER#", "MEAL#"),
                    W::new(Delete, NUTRITION, "USER#", "MEAL_REF#"),
                    SUMMARY,
                    EVENT,
                ]
            ),
            "DELETE /v1/me/meals/{id}",
        )
        .volume(0.1)
        .size(4, 400),
    ];
}
