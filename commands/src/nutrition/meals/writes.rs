//! What each change of a day's meals writes, decided from what was read: the meal, its
//! reference and its day's summary (guarded by the summary's version), as actions for
//! one transaction, with the day's new totals. Pure: nothing here touches the table.

use super::records::{MealRecord, SummaryRecord};
use crate::CommandError;
use crate::items::{from_item, to_item};
use events_schema::events::nutrition::{DayTotals, Nutrients};
use events_schema::ids::MealId;
use events_schema::keys::SortKey;
use events_schema::time::Day;
use infra::store::{CancelReason, Condition, Item, Key};
use infra::table::Action;
use serde_json::json;

/// The key of a meal filed under `day`.
pub(super) fn meal_key(pk: &str, day: Day, id: &MealId) -> Key {
    Key::new(pk, SortKey::Meal(day, id.clone()).to_string())
}

/// The key of a meal's reference (the day it is filed under).
pub(super) fn ref_key(pk: &str, id: &MealId) -> Key {
    Key::new(pk, SortKey::MealRef(id.clone()).to_string())
}

/// The key of `day`'s summary.
pub(super) fn summary_key(pk: &str, day: Day) -> Key {
    Key::new(pk, SortKey::DailySummary(day).to_string())
}

/// The summary `item` holds, or `day`'s empty one when there is none.
pub(super) fn summary_from(item: Option<Item>, day: Day) -> Result<SummaryRecord, CommandError> {
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
pub(super) fn new_meal(
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
pub(super) fn removed_meal(
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
pub(super) fn same_day_edit(
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
    Ok((actions, vec![edited]))
}

/// What an edit that moves the meal to another day writes: the meal deleted from its
/// old day (if still at the version read) and put on the new one, both days' summaries,
/// and the meal's reference to its day; and both days' new totals (the new day first).
pub(super) fn moved_day_edit(
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
    Ok((actions, vec![arrived, left]))
}

/// `summary` with a meal of `nutrients` added (or taken out), a version on.
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
pub(super) fn refreshed(
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

#[cfg(test)]
mod tests {
    use super::*;
    use events_schema::time::Timestamp;
    use rust_decimal::Decimal;

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
        assert_eq!(totals, vec![after.clone()]);
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
        assert_eq!(totals, vec![gained.clone(), left.clone()]);
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
