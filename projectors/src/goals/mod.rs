//! The goals context's projections: the facts goal progress is computed from, copied
//! into the goals table (`ACT_WORKOUT#<date>#<workout-id>`, `NUT_DAILY#<date>`,
//! `SLEEP_NIGHT#<date>`), and each goal's progress computed from those owned rows only.
//!
//! Progress is a function of the facts, not of the order they arrived in:
//! - a goal has a `PROGRESS#<goal-id>#<period-start>` row for every period, from the one
//!   holding the day it was set (`created_on`), whose value is not zero (a period whose
//!   value falls back to zero loses its row);
//! - its `current_value` is the value of the latest such period;
//! - every goal counts, whatever its status: a status says what the user intends, not
//!   what they did, and reading it at delivery time would make progress depend on when
//!   an event happened to be applied.
//!
//! Every recompute of a goal's progress ends in one compare-and-set on the goal item's
//! `progress_rev`: the goal is read first, then the facts, then the write applies only if
//! no other worker recomputed that goal's progress in between (else it reads again). A
//! recompute that finds nothing to change moves the revision on all the same, so a
//! worker holding older facts cannot commit them after it. The `GoalProgressed` event
//! of a change is named by that revision, so it is unique per change and commits with
//! it.
//!
//! Layout: [`fact_rows`] (the fact rows and a goal's value from them), [`period`]
//! (a goal's periods), [`table`] (the
//! goals table and what the projection reads of it), [`progress`] (periods and the
//! recompute with its compare-and-set), [`projections`] (the subscriptions).

pub(crate) mod access;
pub mod fact_rows;
mod period;
mod progress;
mod projections;
mod table;

pub use fact_rows::value_of;
pub use period::{period_start, week_start};
pub use projections::{GoalsFromActivity, GoalsFromGoals, GoalsFromNutrition, GoalsFromSleep};
pub use table::GoalRows;
