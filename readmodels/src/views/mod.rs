//! The views: what the app is shown. Quantities are JSON numbers: stored exactly as
//! decimals (at most one decimal place, within documented bounds), they convert to
//! numbers that print as the same decimals, so what the app adds up is what was
//! logged. Timestamps are written `YYYY-MM-DDTHH:MM:SS.mmmZ`, dates `YYYY-MM-DD` in the
//! user's timezone.

use events_schema::events::Source;
use events_schema::events::activity::Workout;
use events_schema::events::goals::{Goal, GoalKind, GoalPeriod, GoalStatus};
use events_schema::events::identity::Units;
use events_schema::events::nutrition::Nutrients;
use events_schema::events::sleep::SleepStages;
use events_schema::ids::{GoalId, MealId, ProviderName, SleepId, WorkoutId};
use events_schema::rows::{
    ConnectionRow, DayActivity, DayNutrition, MealRow, NightSleep, ProfileRow, SleepRow, WorkoutRow,
};
use events_schema::time::{Day, Timestamp};
use serde::Serialize;

#[cfg(feature = "openapi")]
use utoipa::ToSchema;

mod planning;
mod quantity;

pub use planning::{
    MealPlanView, RecipeView, ScheduledMealView, TrainingBlockListed, TrainingBlockView,
};
pub use quantity::{Amount, NutrientsView, number};

/// The caller's profile.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct ProfileView {
    pub email: String,
    pub display_name: String,
    /// IANA timezone name: it names the user's days.
    pub timezone: String,
    pub units: Units,
}

impl From<ProfileRow> for ProfileView {
    fn from(row: ProfileRow) -> Self {
        Self {
            email: row.email,
            display_name: row.display_name,
            timezone: row.timezone,
            units: row.units,
        }
    }
}

/// A logged meal.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct MealView {
    pub meal_id: MealId,
    /// The day it counts for, in the timezone it was logged in.
    pub day: Day,
    pub eaten_at: Timestamp,
    pub name: String,
    pub nutrients: NutrientsView,
}

impl From<MealRow> for MealView {
    fn from(row: MealRow) -> Self {
        Self {
            meal_id: row.meal_id,
            day: row.day,
            eaten_at: row.eaten_at,
            name: row.name,
            nutrients: row.nutrients.into(),
        }
    }
}

/// Where a workout or a sleep session came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub enum SourceView {
    /// Entered in the app.
    Manual,
    /// Synced from a wearable.
    Provider {
        provider: ProviderName,
        external_id: String,
    },
}

impl From<Source> for SourceView {
    fn from(source: Source) -> Self {
        match source {
            Source::Manual => SourceView::Manual,
            Source::Provider {
                provider,
                external_id,
            } => SourceView::Provider {
                provider,
                external_id: external_id.to_string(),
            },
        }
    }
}

/// A workout.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct WorkoutView {
    pub workout_id: WorkoutId,
    /// The day it started, in the user's timezone.
    pub day: Day,
    pub sport: String,
    pub started_at: Timestamp,
    pub duration_s: u32,
    pub distance_m: Option<u32>,
    pub calories: Option<u32>,
    /// How hard it felt to the user, 1 (very light) to 10 (maximal effort); `null` when
    /// not rated.
    #[cfg_attr(feature = "openapi", schema(minimum = 1, maximum = 10))]
    pub perceived_effort: Option<u8>,
    pub source: SourceView,
}

/// The activity context's own workout item, as the app shows it.
impl From<Workout> for WorkoutView {
    fn from(w: Workout) -> Self {
        Self {
            workout_id: w.workout_id,
            day: w.day,
            sport: w.sport,
            started_at: w.started_at,
            duration_s: w.duration_s,
            distance_m: w.distance_m,
            calories: w.calories,
            perceived_effort: w.perceived_effort,
            source: SourceView::from(w.source),
        }
    }
}

impl From<WorkoutRow> for WorkoutView {
    fn from(row: WorkoutRow) -> Self {
        Self {
            workout_id: row.workout_id,
            day: row.day,
            sport: row.sport,
            started_at: row.started_at,
            duration_s: row.duration_s,
            distance_m: row.distance_m,
            calories: row.calories,
            perceived_effort: row.perceived_effort,
            source: row.source.map_or(SourceView::Manual, SourceView::from),
        }
    }
}

/// A sleep session.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct SleepView {
    pub sleep_id: SleepId,
    /// The night, named by the day it started in the user's timezone.
    pub night: Day,
    pub start: Timestamp,
    pub end: Timestamp,
    pub minutes: i64,
    /// 0 to 100.
    pub score: u8,
    pub stages: SleepStages,
    pub source: SourceView,
}

impl From<SleepRow> for SleepView {
    fn from(row: SleepRow) -> Self {
        Self {
            sleep_id: row.sleep_id,
            night: row.night,
            minutes: row.start.minutes_until(row.end),
            start: row.start,
            end: row.end,
            score: row.score,
            stages: row.stages,
            source: row.source.into(),
        }
    }
}

/// A day's meals in all.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct DayNutritionView {
    pub meals: u32,
    pub totals: NutrientsView,
}

impl From<DayNutrition> for DayNutritionView {
    fn from(n: DayNutrition) -> Self {
        Self {
            meals: n.meals,
            totals: n.totals.into(),
        }
    }
}

/// A day's workouts in all.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct DayActivityView {
    pub workouts: u32,
    pub active_minutes: u64,
}

impl From<DayActivity> for DayActivityView {
    fn from(a: DayActivity) -> Self {
        Self {
            workouts: a.workouts,
            active_minutes: a.active_minutes,
        }
    }
}

/// A night's sleep: its sessions, their minutes in all, and the score and stages of the
/// longest (absent when there was no session).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct NightSleepView {
    pub sessions: u32,
    pub minutes: i64,
    pub score: Option<u8>,
    pub stages: Option<SleepStages>,
}

impl From<NightSleep> for NightSleepView {
    fn from(s: NightSleep) -> Self {
        Self {
            sessions: s.sessions,
            minutes: s.minutes,
            score: s.score,
            stages: s.stages,
        }
    }
}

/// What one day holds: meals, workouts and the night's sleep (zeros when nothing was
/// recorded).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct DayView {
    pub day: Day,
    pub nutrition: DayNutritionView,
    pub activity: DayActivityView,
    pub sleep: NightSleepView,
}

impl DayView {
    /// A day with nothing recorded.
    pub fn empty(day: Day) -> Self {
        Self {
            day,
            nutrition: DayNutritionView {
                meals: 0,
                totals: Nutrients::default().into(),
            },
            activity: DayActivityView {
                workouts: 0,
                active_minutes: 0,
            },
            sleep: NightSleepView {
                sessions: 0,
                minutes: 0,
                score: None,
                stages: None,
            },
        }
    }
}

/// A goal's value over one period.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct ProgressView {
    /// The period's first day (a Monday for weekly goals).
    pub period_start: Day,
    pub value: Amount,
    pub target: Amount,
    pub met: bool,
}

/// A goal, with its latest period that counted anything.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct GoalView {
    pub goal_id: GoalId,
    pub kind: GoalKind,
    pub title: String,
    pub target: Amount,
    pub period: GoalPeriod,
    pub status: GoalStatus,
    /// The user's day when it was set: it counts from the period holding it.
    pub created_on: Option<Day>,
    /// The latest period with a value above zero, if any.
    pub latest: Option<ProgressView>,
}

impl GoalView {
    /// The view of `goal`, with its latest period that counted, if any.
    pub fn of(goal: Goal, latest: Option<ProgressView>) -> Self {
        Self {
            goal_id: goal.goal_id,
            kind: goal.kind,
            title: goal.title,
            target: number(goal.target),
            period: goal.period,
            status: goal.status,
            created_on: goal.created_on,
            latest,
        }
    }
}

/// A goal on the home screen (active goals only).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct ActiveGoalView {
    pub goal_id: GoalId,
    pub kind: GoalKind,
    pub title: String,
    pub target: Amount,
    pub period: GoalPeriod,
}

/// A wearable provider's connection.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct ConnectionView {
    pub provider: ProviderName,
    pub connected: bool,
    pub connected_at: Option<Timestamp>,
    pub scopes: Vec<String>,
}

impl From<ConnectionRow> for ConnectionView {
    fn from(row: ConnectionRow) -> Self {
        Self {
            provider: row.provider,
            connected: row.connected,
            connected_at: row.connected_at,
            scopes: row.scopes,
        }
    }
}

/// The nightly readiness score of one day.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct ReadinessView {
    pub day: Day,
    /// 0 to 100: half from sleep against 8 h a night, half from activity against 30
    /// active minutes a day, over the week ending on `day`.
    pub score: u64,
    /// How many days of that week had any sleep or activity.
    pub days_with_data: u64,
}

/// What the app's home screen shows for one day.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct DashboardView {
    /// Absent until registration has been projected.
    pub profile: Option<ProfileView>,
    pub day: DayView,
    /// The newest ten meals of the last 30 days, newest first.
    pub recent_meals: Vec<MealView>,
    /// The newest ten workouts of the last 30 days, newest first.
    pub recent_workouts: Vec<WorkoutView>,
    pub active_goals: Vec<ActiveGoalView>,
    pub connections: Vec<ConnectionView>,
}

/// Daily nutrition over a range of days (days without a meal are left out).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct DailyNutritionView {
    pub days: Vec<DailySummaryView>,
}

/// One day's nutrition.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct DailySummaryView {
    pub day: Day,
    pub meals: u32,
    pub totals: NutrientsView,
}

/// One page of a list: pass `next_cursor` back as `cursor` for the next one; `null` on
/// the last page. A page may hold fewer items than the limit and still have a cursor.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct Page<T> {
    pub items: Vec<T>,
    pub next_cursor: Option<String>,
}
