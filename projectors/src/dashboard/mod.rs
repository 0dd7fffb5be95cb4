//! The dashboard: one partition per user holding everything the app's home screen shows,
//! read with one Query. Rows: `PROFILE`, `DAILY#<date>` (attribute groups: `nutrition`,
//! the day's summary, guarded by its version: a copy of the totals the meal commands
//! computed in their own transaction and carried in the event's `day_totals`, nothing
//! here adds meals up; `activity` and `sleep`, each derived from a
//! set of versioned entries, one per workout or session of the day), `RECENT_MEAL#<date>#<id>`,
//! `RECENT_WORKOUT#<date>#<id>`, `ACTIVE_GOAL#<goal-id>`, `CONNECTION#<provider>`.
//!
//! The partition stays bounded: dated rows are kept for a rolling window of
//! [`WINDOW_DAYS`] days behind the newest day seen (the `WINDOW` row's high-water mark).
//! Rows that fall out are deleted, and events older than the window are ignored, so the
//! partition has the same rows whatever order events arrive in.
//!
//! Layout: [`window`] (the table, its window and the typed writes inside it), then one
//! module per source context's projection: [`nutrition`], [`activity`], [`sleep`], and
//! [`owned`] for the rows one fact owns whole (profile, active goals, connections).

pub(crate) mod access;
mod activity;
mod nutrition;
mod owned;
mod sleep;
mod window;

pub use activity::DashboardFromActivity;
pub use nutrition::DashboardFromNutrition;
pub use owned::{DashboardFromGoals, DashboardFromIdentity, DashboardFromIntegrations};
pub use sleep::DashboardFromSleep;
pub use window::{Admissions, DashboardRows, WINDOW_DAYS};
