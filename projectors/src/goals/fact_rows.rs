//! The facts goal progress is computed from, as the goals table keeps them: a workout
//! (`ACT_WORKOUT#<date>#<workout-id>`), a day's meal totals (`NUT_DAILY#<date>`, the
//! command's `DayTotals`) and a night's sleep (`SLEEP_NIGHT#<date>`,
//! derived from its sessions' entries); and a goal's value over a period, from them.

use crate::convert::{live_decoded, row_of};
use events_schema::events::goals::GoalKind;
use events_schema::events::nutrition::DayTotals;
use events_schema::ids::WorkoutId;
use events_schema::keys::prefix;
use events_schema::rows::Row;
use events_schema::time::Day;
use infra::store::Item;
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};

/// Goals `ACT_WORKOUT#<date>#<workout-id>`: what a workout counts towards goals.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActWorkoutRow {
    pub workout_id: WorkoutId,
    pub day: Day,
    pub sport: String,
    #[serde(default)]
    pub duration_s: u32,
    #[serde(default)]
    pub distance_m: Option<u32>,
    pub version: u64,
}

impl Row for ActWorkoutRow {
    fn version(&self) -> u64 {
        self.version
    }
}

/// A session's entry in its night's `SLEEP_NIGHT#` row.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NightEntry {
    #[serde(default)]
    pub minutes: i64,
}

/// Goals `SLEEP_NIGHT#<date>`: a night's sessions and their minutes in all, derived
/// from its entries (the set beside it is the projection's bookkeeping).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SleepNightRow {
    pub night: Day,
    pub sessions: u64,
    pub minutes: u64,
}

impl SleepNightRow {
    /// The night's row from its live sessions (a negative length counts as none).
    pub fn of(night: Day, entries: &Item) -> Self {
        let sessions = live_decoded::<NightEntry>(entries);
        Self {
            night,
            sessions: sessions.len() as u64,
            minutes: sessions
                .iter()
                .filter_map(|(_, s)| u64::try_from(s.minutes).ok())
                .sum(),
        }
    }
}

/// The sort-key prefix of the fact rows a kind of goal is computed from.
pub fn fact_prefix(kind: GoalKind) -> &'static str {
    match kind {
        GoalKind::WeeklyWorkoutCount
        | GoalKind::WeeklyActiveMinutes
        | GoalKind::WeeklyDistanceKm => prefix::ACT_WORKOUT,
        GoalKind::DailyProteinGrams => "NUT_DAILY#",
        GoalKind::NightlySleepHours => "SLEEP_NIGHT#",
    }
}

/// The day (or night) a live fact row of any kind is on.
pub fn day_of_fact(row: &Item) -> Option<Day> {
    #[derive(Deserialize)]
    struct Dated {
        #[serde(alias = "night")]
        day: Day,
    }
    row_of::<Dated>(row).ok().map(|d| d.day)
}

/// The sum over `facts` decoded as `R` (a row that does not decode counts nothing).
fn sum<R: serde::de::DeserializeOwned>(facts: &[Item], of: impl Fn(R) -> Decimal) -> Decimal {
    facts
        .iter()
        .filter_map(|row| row_of::<R>(row).ok())
        .map(of)
        .sum()
}

/// A goal's value over one period, from its fact rows (live ones only).
pub fn value_of(kind: GoalKind, facts: &[Item]) -> Decimal {
    let sixty = Decimal::from(60);
    match kind {
        GoalKind::WeeklyWorkoutCount => Decimal::from(facts.len()),
        GoalKind::WeeklyActiveMinutes => {
            (sum(facts, |w: ActWorkoutRow| Decimal::from(w.duration_s)) / sixty).round_dp(1)
        }
        GoalKind::WeeklyDistanceKm => {
            let metres = sum(facts, |w: ActWorkoutRow| {
                Decimal::from(w.distance_m.unwrap_or(0))
            });
            (metres / Decimal::from(1000)).round_dp(2)
        }
        GoalKind::DailyProteinGrams => sum(facts, |d: DayTotals| d.totals.protein_g),
        GoalKind::NightlySleepHours => {
            (sum(facts, |n: SleepNightRow| Decimal::from(n.minutes)) / sixty).round_dp(2)
        }
    }
    .normalize()
}
