//! Logging, editing and deleting meals. Every change of a day's meals rewrites that
//! day's summary in the same transaction, on condition that the summary is still the
//! version read; on a conflict the command retries with the summary the cancellation
//! reason returned (no extra read). So a summary always equals the sum of its meals,
//! whatever the concurrency.

use super::NutritionCommands;
use crate::idempotency::{self, Committed};
use crate::items::{from_item, to_item};
use crate::meta::{CommandMeta, Outcome};
use crate::outbox::{envelope, event_action};
use crate::retry::MAX_ATTEMPTS;
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

fn validate_meal(input: &MealInput, now: Timestamp) -> Result<ValidMeal, CommandError> {
    let name = validate::text("name", &input.name, 1, 120)?;
    let eaten_at = validate::instant("eaten_at", input.eaten_at, now)?;
    let tz = validate::timezone("timezone", &input.timezone)?;
    let grams =
        |field, value| validate::decimal(field, value, Decimal::ZERO, Decimal::from(1000), 1);
    let nutrients = Nutrients {
        calories: validate::decimal(
            "calories",
            input.calories,
            Decimal::ZERO,
            Decimal::from(10_000),
            1,
        )?,
        protein_g: grams("protein_g", input.protein_g)?,
        carbs_g: grams("carbs_g", input.carbs_g)?,
        fat_g: grams("fat_g", input.fat_g)?,
    };
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
        let _writer = crate::serial::user(&meta.user).await;
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
        let mut summary = summary_from(
            self.table.get(&summary_key(&pk, meal.day), true).await?,
            meal.day,
        )?;
        for attempt in 0..MAX_ATTEMPTS {
            crate::retry::backoff(attempt).await;
            let next = with_meal(&summary, record.nutrients, true);
            let event = envelope(
                meta,
                &self.clock,
                record.eaten_at,
                &MealLogged {
                    meal: meal_event(&record),
                    day_totals: next.totals(),
                },
            )?;
            let mut actions = vec![
                Action::Put {
                    item: to_item(&meal_key(&pk, record.day, &meal_id), &record)?,
                    condition: Some(Condition::ItemNotExists),
                },
                Action::Put {
                    item: to_item(&ref_key(&pk, &meal_id), &json!({"day": record.day}))?,
                    condition: Some(Condition::ItemNotExists),
                },
                summary_action(&pk, &summary, &next)?,
                event_action(&pk, &event)?,
            ];
            actions.extend(also(&record)?);
            match idempotency::commit(&self.table, meta, &pk, request, actions, record.clone())
                .await?
            {
                Committed::Done(outcome) => return Ok(outcome),
                Committed::Cancelled(reasons)
                    if reasons
                        .iter()
                        .skip(4)
                        .any(|r| matches!(r, CancelReason::ConditionFailed { .. })) =>
                {
                    return Err(CommandError::NotFound("scheduled meal"));
                }
                Committed::Cancelled(reasons) => match refreshed(&reasons, 2, record.day) {
                    Some(fresh) => summary = fresh?,
                    // A transaction conflict carries no item: read the summary again.
                    None if reasons.contains(&CancelReason::Conflict) => {
                        summary = summary_from(
                            self.table.get(&summary_key(&pk, meal.day), true).await?,
                            meal.day,
                        )?;
                    }
                    None => return Err(idempotency::unexpected(&reasons)),
                },
            }
        }
        Err(CommandError::Contention)
    }

    async fn load_meal(&self, pk: &str, meal_id: &MealId) -> Result<MealRecord, CommandError> {
        let reference = self
            .table
            .get(&ref_key(pk, meal_id), true)
            .await?
            .ok_or(CommandError::NotFound("meal"))?;
        let day: Day = reference
            .get("day")
            .cloned()
            .and_then(|d| serde_json::from_value(d).ok())
            .ok_or(CommandError::NotFound("meal"))?;
        let item = self
            .table
            .get(&meal_key(pk, day, meal_id), true)
            .await?
            .ok_or(CommandError::NotFound("meal"))?;
        from_item(item)
    }

    /// Replaces a meal. If its day changes, it moves: both days' summaries change in the
    /// same transaction.
    pub async fn edit_meal(
        &self,
        meta: &CommandMeta,
        input: EditMeal,
    ) -> Result<Outcome<MealRecord>, CommandError> {
        let meal = validate_meal(&input.meal, self.clock.now())?;
        let _writer = crate::serial::user(&meta.user).await;
        let pk = meta.user_pk();
        for attempt in 0..MAX_ATTEMPTS {
            crate::retry::backoff(attempt).await;
            let current = self.load_meal(&pk, &input.meal_id).await?;
            let next = MealRecord {
                meal_id: current.meal_id.clone(),
                day: meal.day,
                eaten_at: meal.eaten_at,
                name: meal.name.clone(),
                nutrients: meal.nutrients,
                version: current.version + 1,
            };
            let old_summary = summary_from(
                self.table.get(&summary_key(&pk, current.day), true).await?,
                current.day,
            )?;
            let mut actions = Vec::new();
            let mut day_totals = Vec::new();
            if next.day == current.day {
                let summary = with_meal(
                    &with_meal(&old_summary, current.nutrients, false),
                    next.nutrients,
                    true,
                );
                let summary = SummaryRecord {
                    version: old_summary.version + 1,
                    ..summary
                };
                actions.push(Action::Put {
                    item: to_item(&meal_key(&pk, next.day, &next.meal_id), &next)?,
                    condition: Some(Condition::VersionEquals(current.version)),
                });
                actions.push(summary_action(&pk, &old_summary, &summary)?);
                day_totals.push(summary.totals());
            } else {
                let new_summary = summary_from(
                    self.table.get(&summary_key(&pk, next.day), true).await?,
                    next.day,
                )?;
                let left = with_meal(&old_summary, current.nutrients, false);
                let arrived = with_meal(&new_summary, next.nutrients, true);
                actions.push(Action::Delete {
                    key: meal_key(&pk, current.day, &current.meal_id),
                    condition: Some(Condition::VersionEquals(current.version)),
                });
                actions.push(Action::Put {
                    item: to_item(&meal_key(&pk, next.day, &next.meal_id), &next)?,
                    condition: Some(Condition::ItemNotExists),
                });
                actions.push(summary_action(&pk, &old_summary, &left)?);
                actions.push(summary_action(&pk, &new_summary, &arrived)?);
                actions.push(Action::Put {
                    item: to_item(&ref_key(&pk, &next.meal_id), &json!({"day": next.day}))?,
                    condition: Some(Condition::AttributeEquals("day".into(), json!(current.day))),
                });
                day_totals.push(arrived.totals());
                day_totals.push(left.totals());
            }
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
            match idempotency::commit(&self.table, meta, &pk, &input, actions, next.clone()).await?
            {
                Committed::Done(outcome) => return Ok(outcome),
                // A concurrent change to the meal or a summary: read again and retry.
                Committed::Cancelled(reasons) if idempotency::lost_race(&reasons) => {
                    continue;
                }
                Committed::Cancelled(reasons) => return Err(idempotency::unexpected(&reasons)),
            }
        }
        Err(CommandError::Contention)
    }

    /// Deletes a meal and takes it out of its day's summary.
    pub async fn delete_meal(
        &self,
        meta: &CommandMeta,
        meal_id: &MealId,
    ) -> Result<Outcome<()>, CommandError> {
        let _writer = crate::serial::user(&meta.user).await;
        let pk = meta.user_pk();
        for attempt in 0..MAX_ATTEMPTS {
            crate::retry::backoff(attempt).await;
            let current = match self.load_meal(&pk, meal_id).await {
                Ok(meal) => meal,
                // Deleting twice with the same key answers as the first time did.
                Err(CommandError::NotFound(_)) if meta.idempotency_key.is_some() => {
                    return self.replay_delete(meta, meal_id).await;
                }
                Err(e) => return Err(e),
            };
            let summary = summary_from(
                self.table.get(&summary_key(&pk, current.day), true).await?,
                current.day,
            )?;
            let next = with_meal(&summary, current.nutrients, false);
            let event = envelope(
                meta,
                &self.clock,
                self.clock.now(),
                &MealDeleted {
                    meal_id: meal_id.clone(),
                    day: current.day,
                    version: current.version + 1,
                    day_totals: next.totals(),
                },
            )?;
            let actions = vec![
                Action::Delete {
                    key: meal_key(&pk, current.day, meal_id),
                    condition: Some(Condition::VersionEquals(current.version)),
                },
                Action::Delete {
                    key: ref_key(&pk, meal_id),
                    condition: Some(Condition::ItemExists),
                },
                summary_action(&pk, &summary, &next)?,
                event_action(&pk, &event)?,
            ];
            match idempotency::commit(
                &self.table,
                meta,
                &pk,
                &json!({"delete_meal": meal_id}),
                actions,
                (),
            )
            .await?
            {
                Committed::Done(outcome) => return Ok(outcome),
                Committed::Cancelled(reasons) if idempotency::lost_race(&reasons) => {
                    continue;
                }
                Committed::Cancelled(reasons) => return Err(idempotency::unexpected(&reasons)),
            }
        }
        Err(CommandError::Contention)
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
        summary_from(
            self.table
                .get(&summary_key(&meta.user_pk(), day), true)
                .await?,
            day,
        )
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
