//! A goal's periods: the day or the ISO week (Monday first) holding a day.

use chrono::{Datelike, Duration};
use events_schema::events::goals::GoalPeriod;
use events_schema::time::Day;

/// Monday of the ISO week holding `day`.
pub fn week_start(day: Day) -> Day {
    Day::new(day.date() - Duration::days(i64::from(day.date().weekday().num_days_from_monday())))
}

/// The first day of the period of `period` holding `day`.
pub fn period_start(period: GoalPeriod, day: Day) -> Day {
    match period {
        GoalPeriod::Daily => day,
        GoalPeriod::Weekly => week_start(day),
    }
}
