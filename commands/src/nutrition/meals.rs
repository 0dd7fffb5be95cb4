//! Logging, editing and deleting meals. Every change of a day's meals rewrites that
//! day's summary in the same transaction, on condition that the summary is still the
//! version read; on a conflict the command retries with the summary the cancellation
//! reason returned (no extra read). So a summary always equals the sum of its meals,
//! whatever the concurrency. Each event carries the day's new totals (`day_totals`):
//! the read side copies them and never sums meals itself.

use super::NutritionCommands;
use crate::idempotency::{self, Committed};
use crate::items::{from_item, to_item};
use crate::meta::{CommandMeta, Outcome};
use crate::optimistic::{self, Attempt};
use crate::outbox::{envelope, event_action};
use crate::{CommandError, validate};
use events_schema::events::nutrition::{
    DayTotals, Meal, MealDeleted, MealEdited, MealLogged, Nutrients,
};
use events_schema::ids::MealId;
use events_schema::keys::SortKey;
use events_schema::time::{Day, Timestamp};
use infra::store::{CancelReason, Condition, Item, Key};
use infra::table::Action;
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use serde_json::json;

/// A meal as the client describes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MealInput {
    pub name: String,
    pub eaten_at: Timestamp,
    /// The user's IANA timezone: the meal's day is its time there.
    pub timezone: String,
    pub calories: Decimal,
    pub protein_g: Decimal,
    pub carbs_g: Decimal,
    pub fat_g: Decimal,
}

pub type LogMeal = MealInput;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EditMeal {
    pub meal_id: MealId,
    pub meal: MealInput,
}

/// The stored meal item.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MealRecord {
    pub meal_id: MealId,
    pub day: Day,
    pub eaten_at: Timestamp,
    pub name: String,
    pub nutrients: Nutrients,
    pub version: u64,
}

/// The stored daily summary item.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SummaryRecord {
    pub day: Day,
    pub meals: u32,
    pub totals: Nutrients,
    pub version: u64,
}

impl SummaryRecord {
    fn empty(day: Day) -> Self {
        Self {
            day,
            meals: 0,
            totals: Nutrients::default(),
            version: 0,
        }
    }

    fn totals(&self) -> DayTotals {
        DayTotals {
            day: self.day,
            meals: self.meals,
            totals: self.totals,
            version: self.version,
        }
    }
}

/// A valid meal: name, time, day, nutrients.
struct ValidMeal {
    name: String,
    eaten_at: Timestamp,
    day: Day,
    nutrients: Nutrients,
}

/// Nutrients in range: calories to 10,000, grams to 1,000, one decimal; an
/// invalid-field error naming the first out of range otherwise.
pub(super) fn valid_nutrients(n: Nutrients) -> Result<Nutrients, CommandError> {
    let grams =
        |field, value| validate::decimal(field, value, Decimal::ZERO, Decimal::from(1000), 1);
    Ok(Nutrients {
        calories: validate::decimal(
            "calories",
            n.calories,
            Decimal::ZERO,
            Decimal::from(10_000),
            1,
        )?,
        protein_g: grams("protein_g", n.protein_g)?,
        carbs_g: grams("carbs_g", n.carbs_g)?,
        fat_g: grams("fat_g", n.fat_g)?,
    })
}

fn validate_meal(input: &MealInput, now: Timestamp) -> Result<ValidMeal, CommandError> {
    let name = validate::text("name", &input.name, 1, 120)?;
    let eaten_at = validate::instant("eaten_at", input.eaten_at, now)?;
    let tz = validate::timezone("timezone", &input.timezone)?;
    let nutrients = valid_nutrients(Nutrients {
        calories: input.calories,
        protein_g: input.protein_g,
        carbs_g: input.carbs_g,
        fat_g: input.fat_g,
    })?;
    Ok(ValidMeal {
        name,
        eaten_at,
        day: validate::day_in(eaten_at, tz),
        nutrients,
    })
}

fn meal_key(pk: &str, day: Day, id: &MealId) -> Key {
    Key::new(pk, SortKey::Meal(day, id.clone()).to_string())
}

fn ref_key(pk: &str, id: &MealId) -> Key {
    Key::new(pk, SortKey::MealRef(id.clone()).to_string())
}

fn summary_key(pk: &str, day: Day) -> Key {
    Key::new(pk, SortKey::DailySummary(day).to_string())
}

fn summary_from(item: Option<Item>, day: Day) -> Result<SummaryRecord, CommandError> {
    item.map(from_item)
        .transpose()
        .map(|s| s.unwrap_or_else(|| SummaryRecord::empty(day)))
}

/// Writes `next` over `current` (same day), guarded by `current`'s version.
fn summary_action(
    pk: &str,
    current: &SummaryRecord,
    next: &SummaryRecord,
) -> Result<Action, CommandError> {
    let condition = if current.version == 0 {
        Condition::ItemNotExists
    } else {
        Condition::VersionEquals(current.version)
    };
    Ok(Action::Put {
        item: to_item(&summary_key(pk, next.day), next)?,
        condition: Some(condition),
    })
}

/// What logging `record` writes, given its day's `summary` (event aside): the meal and
/// its reference on free keys, and the summary with it (if still as read); and that
/// summary.
fn new_meal(
    pk: &str,
    record: &MealRecord,
    summary: &SummaryRecord,
) -> Result<(Vec<Action>, SummaryRecord), CommandError> {
    let next = with_meal(summary, record.nutrients, true);
    let actions = vec![
        Action::Put {
            item: to_item(&meal_key(pk, record.day, &record.meal_id), record)?,
            condition: Some(Condition::ItemNotExists),
        },
        Action::Put {
            item: to_item(&ref_key(pk, &record.meal_id), &json!({"day": record.day}))?,
            condition: Some(Condition::ItemNotExists),
        },
        summary_action(pk, summary, &next)?,
    ];
    Ok((actions, next))
}

/// What deleting `current` writes, given its day's `summary` (event aside): the meal
/// gone if still at the version read, its reference gone, and the summary without it;
/// and that summary.
fn removed_meal(
    pk: &str,
    current: &MealRecord,
    summary: &SummaryRecord,
) -> Result<(Vec<Action>, SummaryRecord), CommandError> {
    let next = with_meal(summary, current.nutrients, false);
    let actions = vec![
        Action::Delete {
            key: meal_key(pk, current.day, &current.meal_id),
            condition: Some(Condition::VersionEquals(current.version)),
        },
        Action::Delete {
            key: ref_key(pk, &current.meal_id),
            condition: Some(Condition::ItemExists),
        },
        summary_action(pk, summary, &next)?,
    ];
    Ok((actions, next))
}

/// What an edit that keeps the meal's day writes: the meal (if still at the version
/// read) and its day's summary with the old nutrients out and the new ones in; and the
/// day's new totals.
fn same_day_edit(
    pk: &str,
    current: &MealRecord,
    next: &MealRecord,
    summary: &SummaryRecord,
) -> Result<(Vec<Action>, Vec<DayTotals>), CommandError> {
    let edited = with_meal(
        &with_meal(summary, current.nutrients, false),
        next.nutrients,
        true,
    );
    let edited = SummaryRecord {
        version: summary.version + 1,
        ..edited
    };
    let actions = vec![
        Action::Put {
            item: to_item(&meal_key(pk, next.day, &next.meal_id), next)?,
            condition: Some(Condition::VersionEquals(current.version)),
        },
        summary_action(pk, summary, &edited)?,
    ];
    Ok((actions, vec![edited.totals()]))
}

/// What an edit that moves the meal to another day writes: the meal deleted from its
/// old day (if still at the version read) and put on the new one, both days' summaries,
/// and the meal's reference to its day; and both days' new totals (the new day first).
fn moved_day_edit(
    pk: &str,
    current: &MealRecord,
    next: &MealRecord,
    old_summary: &SummaryRecord,
    new_summary: &SummaryRecord,
) -> Result<(Vec<Action>, Vec<DayTotals>), CommandError> {
    let left = with_meal(old_summary, current.nutrients, false);
    let arrived = with_meal(new_summary, next.nutrients, true);
    let actions = vec![
        Action::Delete {
            key: meal_key(pk, current.day, &current.meal_id),
            condition: Some(Condition::VersionEquals(current.version)),
        },
        Action::Put {
            item: to_item(&meal_key(pk, next.day, &next.meal_id), next)?,
            condition: Some(Condition::ItemNotExists),
        },
        summary_action(pk, old_summary, &left)?,
        summary_action(pk, new_summary, &arrived)?,
        Action::Put {
            item: to_item(&ref_key(pk, &next.meal_id), &json!({"day": next.day}))?,
            condition: Some(Condition::AttributeEquals("day".into(), json!(current.day))),
        },
    ];
    Ok((actions, vec![arrived.totals(), left.totals()]))
}

fn with_meal(summary: &SummaryRecord, nutrients: Nutrients, added: bool) -> SummaryRecord {
    SummaryRecord {
        day: summary.day,
        meals: if added {
            summary.meals + 1
        } else {
            summary.meals.saturating_sub(1)
        },
        totals: if added {
            summary.totals.plus(nutrients)
        } else {
            summary.totals.minus(nutrients)
        },
        version: summary.version + 1,
    }
}

/// The summary a failed condition returned, if that action's condition failed.
fn refreshed(
    reasons: &[CancelReason],
    index: usize,
    day: Day,
) -> Option<Result<SummaryRecord, CommandError>> {
    match reasons.get(index) {
        Some(CancelReason::ConditionFailed { existing }) => {
            Some(summary_from(existing.clone(), day))
        }
        _ => None,
    }
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
            let (mut actions, next) = new_meal(&pk, &record, &summary)?;
            // Where the cancellation reasons say what failed: the summary is new_meal's
            // last action, the caller's own come after the event.
            let summary_at = actions.len() - 1;
            let event = envelope(
                meta,
                &self.clock,
                record.eaten_at,
                &MealLogged {
                    meal: meal_event(&record),
                    day_totals: next.totals(),
                },
            )?;
            actions.push(event_action(&pk, &event)?);
            let also_from = actions.len();
            actions.extend(also(&record)?);
            match idempotency::commit(&self.table, meta, &pk, request, actions, record.clone())
                .await?
            {
                Committed::Done(outcome) => Ok(Attempt::Done(outcome)),
                Committed::Cancelled(reasons)
                    if reasons
                        .iter()
                        .skip(also_from)
                        .any(|r| matches!(r, CancelReason::ConditionFailed { .. })) =>
                {
                    Err(CommandError::NotFound("scheduled meal"))
                }
                // The summary moved on: the cancellation returned it.
                Committed::Cancelled(reasons) => {
                    match refreshed(&reasons, summary_at, record.day) {
                        Some(fresh) => {
                            summary = fresh?;
                            Ok(Attempt::LostRace)
                        }
                        // A transaction conflict carries no item: read the summary again.
                        None if reasons.contains(&CancelReason::Conflict) => {
                            summary = self.stored_summary(&pk, meal.day).await?;
                            Ok(Attempt::LostRace)
                        }
                        None => Err(idempotency::unexpected(&reasons)),
                    }
                }
            }
        })
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
                    meal: meal_event(&next),
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
                    day_totals: next.totals(),
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

fn meal_event(record: &MealRecord) -> Meal {
    Meal {
        meal_id: record.meal_id.clone(),
        day: record.day,
        eaten_at: record.eaten_at,
        name: record.name.clone(),
        nutrients: record.nutrients,
        version: record.version,
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

#[cfg(test)]
mod tests {
    use super::*;

    const PK: &str = "USER#01M8ZF5ZSJP5Z70GTS7AGAV9T7";

    fn kcal(n: i64) -> Nutrients {
        Nutrients {
            calories: Decimal::from(n),
            ..Nutrients::default()
        }
    }

    fn day(text: &str) -> Day {
        Day::parse(text).expect("day")
    }

    fn meal(id: &MealId, on: &str, calories: i64, version: u64) -> MealRecord {
        MealRecord {
            meal_id: id.clone(),
            day: day(on),
            eaten_at: Timestamp::parse(&format!("{on}T12:00:00.000Z")).expect("time"),
            name: "soup".into(),
            nutrients: kcal(calories),
            version,
        }
    }

    fn summary(on: &str, meals: u32, calories: i64, version: u64) -> SummaryRecord {
        SummaryRecord {
            day: day(on),
            meals,
            totals: kcal(calories),
            version,
        }
    }

    /// A put's item read back as `T`, and its condition.
    fn put<T: serde::de::DeserializeOwned>(action: &Action) -> (T, Option<Condition>) {
        match action {
            Action::Put { item, condition } => {
                (from_item(item.clone()).expect("item"), condition.clone())
            }
            other => panic!("not a put: {other:?}"),
        }
    }

    #[test]
    fn an_edit_on_the_same_day_swaps_the_meals_nutrients_in_its_summary() {
        // Given a day of two meals, 300 and 500 kcal, the summary at version 4,
        let id = MealId::generate();
        let current = meal(&id, "2026-03-01", 500, 2);
        let before = summary("2026-03-01", 2, 800, 4);
        // when the 500 kcal meal becomes 200 kcal,
        let next = meal(&id, "2026-03-01", 200, 3);
        let (actions, totals) = same_day_edit(PK, &current, &next, &before).expect("decide");
        // then the meal is replaced if still at version 2,
        assert_eq!(actions.len(), 2);
        let (written, condition) = put::<MealRecord>(&actions[0]);
        assert_eq!(written, next);
        assert_eq!(condition, Some(Condition::VersionEquals(2)));
        // and the summary holds 2 meals, 500 kcal, at version 5, if still at version 4.
        let (after, condition) = put::<SummaryRecord>(&actions[1]);
        assert_eq!(after, summary("2026-03-01", 2, 500, 5));
        assert_eq!(condition, Some(Condition::VersionEquals(4)));
        assert_eq!(totals, vec![after.totals()]);
    }

    #[test]
    fn an_edit_that_moves_the_meal_changes_both_days_and_its_reference() {
        // Given a 500 kcal meal on a day of two meals (800 kcal) and nothing on the next day,
        let id = MealId::generate();
        let current = meal(&id, "2026-03-01", 500, 2);
        let old_day = summary("2026-03-01", 2, 800, 4);
        let new_day = SummaryRecord::empty(day("2026-03-02"));
        // when it moves to the next day,
        let next = meal(&id, "2026-03-02", 500, 3);
        let (actions, totals) =
            moved_day_edit(PK, &current, &next, &old_day, &new_day).expect("decide");
        // then it leaves its day if still at version 2 and arrives on a free key,
        assert_eq!(actions.len(), 5);
        match &actions[0] {
            Action::Delete { key, condition } => {
                assert_eq!(key, &meal_key(PK, day("2026-03-01"), &id));
                assert_eq!(condition, &Some(Condition::VersionEquals(2)));
            }
            other => panic!("not a delete: {other:?}"),
        }
        let (arrived, condition) = put::<MealRecord>(&actions[1]);
        assert_eq!(arrived, next);
        assert_eq!(condition, Some(Condition::ItemNotExists));
        // both summaries change (the new one created), and the reference follows the meal
        // from the day it was on.
        let (left, condition) = put::<SummaryRecord>(&actions[2]);
        assert_eq!((left.meals, left.totals), (1, kcal(300)));
        assert_eq!(condition, Some(Condition::VersionEquals(4)));
        let (gained, condition) = put::<SummaryRecord>(&actions[3]);
        assert_eq!((gained.meals, gained.totals), (1, kcal(500)));
        assert_eq!(condition, Some(Condition::ItemNotExists));
        let (reference, condition) = put::<serde_json::Value>(&actions[4]);
        assert_eq!(reference["day"], json!("2026-03-02"));
        assert_eq!(
            condition,
            Some(Condition::AttributeEquals(
                "day".into(),
                json!(day("2026-03-01"))
            ))
        );
        assert_eq!(totals, vec![gained.totals(), left.totals()]);
    }

    #[test]
    fn a_new_meal_takes_free_keys_and_joins_its_days_summary() {
        // Given a day with one 300 kcal meal (summary version 1),
        let id = MealId::generate();
        let before = summary("2026-03-01", 1, 300, 1);
        // when a 500 kcal meal is logged,
        let record = meal(&id, "2026-03-01", 500, 1);
        let (actions, next) = new_meal(PK, &record, &before).expect("decide");
        // then the meal and its reference take free keys,
        assert_eq!(actions.len(), 3);
        let (written, condition) = put::<MealRecord>(&actions[0]);
        assert_eq!(
            (written, condition),
            (record, Some(Condition::ItemNotExists))
        );
        let (reference, condition) = put::<serde_json::Value>(&actions[1]);
        assert_eq!(reference["day"], json!("2026-03-01"));
        assert_eq!(condition, Some(Condition::ItemNotExists));
        // and the summary counts 2 meals, 800 kcal, if still at version 1.
        let (after, condition) = put::<SummaryRecord>(&actions[2]);
        assert_eq!(after, summary("2026-03-01", 2, 800, 2));
        assert_eq!(
            (after, condition),
            (next, Some(Condition::VersionEquals(1)))
        );
    }

    #[test]
    fn the_first_meal_of_a_day_creates_its_summary() {
        let id = MealId::generate();
        let empty = SummaryRecord::empty(day("2026-03-01"));
        let (actions, next) =
            new_meal(PK, &meal(&id, "2026-03-01", 250, 1), &empty).expect("decide");
        let (after, condition) = put::<SummaryRecord>(&actions[2]);
        assert_eq!(after, summary("2026-03-01", 1, 250, 1));
        assert_eq!(next, after);
        assert_eq!(condition, Some(Condition::ItemNotExists));
    }

    #[test]
    fn a_deleted_meal_leaves_its_days_summary() {
        // Given a day of two meals, 300 and 500 kcal (summary version 2),
        let id = MealId::generate();
        let current = meal(&id, "2026-03-01", 500, 3);
        let before = summary("2026-03-01", 2, 800, 2);
        // when the 500 kcal meal (version 3) is deleted,
        let (actions, next) = removed_meal(PK, &current, &before).expect("decide");
        // then it goes if still at version 3, with its reference,
        assert_eq!(actions.len(), 3);
        match (&actions[0], &actions[1]) {
            (
                Action::Delete { key, condition },
                Action::Delete {
                    key: reference,
                    condition: reference_condition,
                },
            ) => {
                assert_eq!(key, &meal_key(PK, day("2026-03-01"), &id));
                assert_eq!(condition, &Some(Condition::VersionEquals(3)));
                assert_eq!(reference, &ref_key(PK, &id));
                assert_eq!(reference_condition, &Some(Condition::ItemExists));
            }
            other => panic!("not two deletes: {other:?}"),
        }
        // and the summary keeps 1 meal, 300 kcal.
        let (after, condition) = put::<SummaryRecord>(&actions[2]);
        assert_eq!(after, summary("2026-03-01", 1, 300, 3));
        assert_eq!(next, after);
        assert_eq!(condition, Some(Condition::VersionEquals(2)));
    }
}
