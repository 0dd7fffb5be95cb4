//! The projection rows, one type per kind of row: the contract between the projector
//! that writes a row and the query handler that reads it, so a row's shape lives in one
//! place. Rows are stored with their keys (`pk`, `sk`) and whatever bookkeeping the
//! projector adds (versions, entry sets); the types hold what readers use and the
//! versions writers guard on. None of these is shown to clients as is: the read side
//! turns them into views.
//!
//! A deleted thing is a tombstone (`deleted: true` and its version, nothing else): check
//! [`is_tombstone`] before decoding a row.

use crate::events::Source;
use crate::events::goals::{GoalKind, GoalPeriod};
use crate::events::nutrition::{DayTotals, Nutrients};
use crate::events::sleep::SleepStages;
use crate::ids::{GoalId, MealId, ProviderName, SleepId, WorkoutId};
use crate::keys::SortKey;
use crate::time::{Day, Timestamp};
use rust_decimal::Decimal;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// The attribute that marks a tombstone row.
pub const DELETED: &str = "deleted";

/// Whether a stored row (as JSON) is a tombstone.
pub fn is_tombstone(row: &serde_json::Map<String, serde_json::Value>) -> bool {
    row.get(DELETED)
        .and_then(serde_json::Value::as_bool)
        .unwrap_or(false)
}

/// A row one fact owns whole. The fact's version is stored with it and guards every
/// write (a write applies only if newer); a deleted one becomes a tombstone at the
/// deleting version.
pub trait Row: Serialize + DeserializeOwned {
    /// The attribute the version is stored under.
    const VERSION_ATTR: &'static str = "version";

    /// The version of the fact the row shows.
    fn version(&self) -> u64;
}

/// A row stored under one sort key, named by its own fields.
pub trait KeyedRow: Row {
    /// The row's sort key in its user's partition.
    fn sort_key(&self) -> SortKey;
}

/// `Row` for types whose `version` field is the fact's version.
macro_rules! versioned_rows {
    ($($row:ty),* $(,)?) => {
        $(impl Row for $row {
            fn version(&self) -> u64 {
                self.version
            }
        })*
    };
}

versioned_rows!(
    ProfileRow,
    MealRow,
    WorkoutRow,
    SleepRow,
    ActiveGoalRow,
    ConnectionRow
);

/// A day's meal totals, as the command that changed them versioned them, are also the
/// row other contexts keep of them (activity's `INTAKE#<date>`, the goals'
/// `NUT_DAILY#<date>`): the fields and their meaning are the same.
impl Row for DayTotals {
    fn version(&self) -> u64 {
        self.version
    }
}

impl KeyedRow for ProfileRow {
    fn sort_key(&self) -> SortKey {
        SortKey::Profile
    }
}

impl KeyedRow for SleepRow {
    fn sort_key(&self) -> SortKey {
        SortKey::SleepLog(self.night, self.sleep_id.clone())
    }
}

impl KeyedRow for ActiveGoalRow {
    fn sort_key(&self) -> SortKey {
        SortKey::ActiveGoal(self.goal_id.clone())
    }
}

impl KeyedRow for ConnectionRow {
    fn sort_key(&self) -> SortKey {
        SortKey::Connection(self.provider.clone())
    }
}

impl MealRow {
    /// The keys of a meal's two rows: the home screen's (`RECENT_MEAL#`) and the
    /// history's (`~MEAL#`).
    pub fn keys(day: Day, meal: &MealId) -> (SortKey, SortKey) {
        (
            SortKey::RecentMeal(day, meal.clone()),
            SortKey::MealLog(day, meal.clone()),
        )
    }
}

impl WorkoutRow {
    /// The keys of a workout's two rows: the home screen's (`RECENT_WORKOUT#`) and the
    /// history's (`~WORKOUT#`).
    pub fn keys(day: Day, workout: &WorkoutId) -> (SortKey, SortKey) {
        (
            SortKey::RecentWorkout(day, workout.clone()),
            SortKey::WorkoutLog(day, workout.clone()),
        )
    }
}

/// Dashboard `PROFILE`: the profile as identity last published it, the public part its
/// events carry.
pub type ProfileRow = crate::events::identity::ProfileState;

/// A day's meals in all (`DAILY#` nutrition group, cross rows, goal facts).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DayNutrition {
    pub meals: u32,
    pub totals: Nutrients,
}

/// A day's workouts in all.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DayActivity {
    pub workouts: u32,
    pub active_minutes: u64,
}

/// A night's sleep: its sessions, their minutes in all, and the main (longest)
/// session's score and stages.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NightSleep {
    pub sessions: u32,
    pub minutes: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sleep_id: Option<SleepId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score: Option<u8>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stages: Option<SleepStages>,
}

/// A group of the dashboard's `DAILY#<date>` row: one context's part of the day. Its
/// attribute holds what readers use ([`DailyRow`]); the projector's bookkeeping beside
/// it is named here too, so no attribute name is spelled twice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DailyGroup {
    /// The day's meal totals, written whole, guarded by their version.
    Nutrition,
    /// The day's workouts, merged entry by entry.
    Activity,
    /// The night's sleep sessions, merged entry by entry.
    Sleep,
}

impl DailyGroup {
    /// The group's attribute in the row.
    pub const fn attr(self) -> &'static str {
        match self {
            Self::Nutrition => "nutrition",
            Self::Activity => "activity",
            Self::Sleep => "sleep",
        }
    }

    /// The version a group written whole is guarded by (`<group>_version`).
    pub fn version_attr(self) -> String {
        format!("{}_version", self.attr())
    }

    /// The entries a group merged entry by entry derives from (`<group>_entries`).
    pub fn entries_attr(self) -> String {
        format!("{}_entries", self.attr())
    }

    /// The revision guarding those entries (`<group>_rev`).
    pub fn revision_attr(self) -> String {
        format!("{}_rev", self.attr())
    }
}

/// Dashboard `DAILY#<date>`: one group per context, present once that context reported
/// something for the day (the entry sets and revisions behind `activity` and `sleep` are
/// the projector's bookkeeping and not read here).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DailyRow {
    pub day: Day,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nutrition: Option<DayNutrition>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub activity: Option<DayActivity>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sleep: Option<NightSleep>,
}

/// A meal as the read side keeps it: dashboard `RECENT_MEAL#<date>#<id>` (the last 30
/// days) and the meal history `~MEAL#<date>#<id>`. The meal itself, as the command
/// stored it and its events carried it.
pub type MealRow = crate::events::nutrition::Meal;

/// A workout as the read side keeps it: `RECENT_WORKOUT#<date>#<id>` and the workout
/// history `~WORKOUT#<date>#<id>`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkoutRow {
    pub workout_id: WorkoutId,
    pub day: Day,
    pub sport: String,
    pub started_at: Timestamp,
    pub duration_s: u32,
    pub distance_m: Option<u32>,
    pub calories: Option<u32>,
    /// 1 to 10, when the user rated it. Left out when absent, so the rows of unrated
    /// workouts are the same whichever version of the workout events made them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub perceived_effort: Option<u8>,
    /// Absent on rows written before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<Source>,
    pub version: u64,
}

/// A sleep session in the sleep history `~SLEEP#<night>#<id>`: the session itself, as
/// the command stored it and its events carried it.
pub type SleepRow = crate::events::sleep::SleepSession;

/// Dashboard `ACTIVE_GOAL#<goal-id>`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActiveGoalRow {
    pub goal_id: GoalId,
    pub kind: GoalKind,
    pub title: String,
    pub target: Decimal,
    pub period: GoalPeriod,
    pub version: u64,
}

/// Dashboard `CONNECTION#<provider>`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConnectionRow {
    pub provider: ProviderName,
    pub connected: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connected_at: Option<Timestamp>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<String>,
    pub version: u64,
}

/// Goals `PROGRESS#<goal-id>#<period-start>`: a goal's value over one period (present
/// only while it is not zero).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProgressRow {
    pub goal_id: GoalId,
    pub period_start: Day,
    pub value: Decimal,
    pub target: Decimal,
    pub met: bool,
}

/// What the goals projection keeps on a goal item: the latest period's value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GoalProgressAttrs {
    #[serde(default)]
    pub current_value: Option<Decimal>,
    #[serde(default)]
    pub current_period_start: Option<Day>,
}

/// Insights `ACTIVE_DAY#<date>`: what a user's day counted (the projector's entry set
/// beside it is bookkeeping). While it counts anything it carries the `active-day`
/// index keys (`DAY#<date>` -> `USER#<id>`), through which the nightly readiness job
/// lists the day's users; a day whose activity was all deleted or moved keeps its
/// marker, with zero totals and out of the index.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActiveDayRow {
    pub day: Day,
    #[serde(default)]
    pub meals: u64,
    #[serde(default)]
    pub active_minutes: u64,
    #[serde(default)]
    pub sleep_minutes: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_day_pk: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_day_sk: Option<String>,
}

impl ActiveDayRow {
    /// The marker of `user_pk`'s `day` with these totals, in the index if any is not 0.
    pub fn new(
        user_pk: &str,
        day: Day,
        meals: u64,
        active_minutes: u64,
        sleep_minutes: u64,
    ) -> Self {
        let mut row = Self {
            day,
            meals,
            active_minutes,
            sleep_minutes,
            active_day_pk: None,
            active_day_sk: None,
        };
        if row.had_data() {
            row.active_day_pk = Some(Self::index_pk(day));
            row.active_day_sk = Some(user_pk.to_owned());
        }
        row
    }

    /// The `active-day` index partition of `day`'s active users.
    pub fn index_pk(day: Day) -> String {
        format!("DAY#{day}")
    }

    /// Whether the day still counts anything.
    pub fn had_data(&self) -> bool {
        self.meals > 0 || self.active_minutes > 0 || self.sleep_minutes > 0
    }
}

/// `RUN#<date>` in the insights table's `JOB#readiness` partition: one day's run of the
/// nightly readiness job, where its next page starts and whether it is finished. Erasing
/// a user removes a cursor that names them ([`JobRunRow::CURSOR`]). Expires at
/// `expires_at` (the table's TTL attribute, `tables::TTL`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobRunRow {
    #[serde(default)]
    pub finished: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
    #[serde(default)]
    pub expires_at: i64,
}

impl JobRunRow {
    /// The attribute holding the cursor.
    pub const CURSOR: &'static str = "cursor";
}

/// Insights `READINESS#<date>`: the nightly score.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReadinessRow {
    pub day: Day,
    pub score: u64,
    pub days_with_data: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The groups' attributes are the fields readers decode [`DailyRow`] from.
    #[test]
    fn daily_groups_name_the_fields_of_the_daily_row() {
        let row = DailyRow {
            day: Day::parse("2026-12-07").expect("a day"),
            nutrition: Some(DayNutrition {
                meals: 1,
                totals: Nutrients::default(),
            }),
            activity: Some(DayActivity {
                workouts: 1,
                active_minutes: 30,
            }),
            sleep: Some(NightSleep {
                sessions: 1,
                minutes: 480,
                sleep_id: None,
                score: None,
                stages: None,
            }),
        };
        let value = serde_json::to_value(&row).expect("a row");
        for group in [
            DailyGroup::Nutrition,
            DailyGroup::Activity,
            DailyGroup::Sleep,
        ] {
            assert!(value.get(group.attr()).is_some(), "{group:?} in {value}");
        }
        assert_eq!(DailyGroup::Sleep.entries_attr(), "sleep_entries");
        assert_eq!(DailyGroup::Activity.revision_attr(), "activity_rev");
        assert_eq!(DailyGroup::Nutrition.version_attr(), "nutrition_version");
    }

    /// A run's attributes are the names the table's TTL and the erasure use.
    #[test]
    fn a_job_run_row_names_the_ttl_and_cursor_attributes() {
        let row = JobRunRow {
            finished: true,
            cursor: Some("c".into()),
            expires_at: 1,
        };
        let value = serde_json::to_value(&row).expect("a row");
        assert_eq!(value.get(crate::tables::TTL), Some(&serde_json::json!(1)));
        assert_eq!(value.get(JobRunRow::CURSOR), Some(&serde_json::json!("c")));
    }
}
