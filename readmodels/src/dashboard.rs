//! The home screen and the profile, from the dashboard table: the user's partition up to
//! its history rows (`sk < "~"`), one Query however long the history is (a page of it:
//! more only when the window's rows pass 1 MB).

use crate::views::{ActiveGoalView, DashboardView, DayView, ProfileView, number};
use crate::{QueryError, decode, live};
use events_schema::ids::UserId;
use events_schema::keys::{PartitionKey, SortKey, prefix};
use events_schema::rows::{
    ActiveGoalRow, ConnectionRow, DailyRow, MealRow, ProfileRow, WorkoutRow,
};
use events_schema::time::Day;
use infra::store::{Item, Key, Query, SortKeyCondition};
use infra::table::{Table, contexts};
use serde_json::Value;

/// How many recent meals and recent workouts the home screen shows.
pub const RECENT_SHOWN: usize = 10;

fn sk(row: &Item) -> &str {
    row.get("sk").and_then(Value::as_str).unwrap_or_default()
}

#[derive(Debug, Clone)]
pub struct Dashboard {
    table: Table<contexts::Dashboard>,
}

impl Dashboard {
    pub fn new(table: Table<contexts::Dashboard>) -> Self {
        Self { table }
    }

    /// The home screen for `day`: one Query of the dashboard rows (30-day window), the
    /// newest [`RECENT_SHOWN`] meals and workouts, the day's totals.
    pub async fn home(&self, user: &UserId, day: Day) -> Result<DashboardView, QueryError> {
        let rows = self.window(user).await?;
        let mut view = DashboardView {
            profile: None,
            day: DayView::empty(day),
            recent_meals: Vec::new(),
            recent_workouts: Vec::new(),
            active_goals: Vec::new(),
            connections: Vec::new(),
        };
        let daily = SortKey::Daily(day).to_string();
        for row in rows {
            let key = sk(&row).to_owned();
            match key.split('#').next().unwrap_or_default() {
                "PROFILE" => view.profile = Some(decode::<ProfileRow>(row)?.into()),
                "DAILY" if key == daily => {
                    let row: DailyRow = decode(row)?;
                    let empty = DayView::empty(day);
                    view.day = DayView {
                        day,
                        nutrition: row.nutrition.map_or(empty.nutrition, Into::into),
                        activity: row.activity.map_or(empty.activity, Into::into),
                        sleep: row.sleep.map_or(empty.sleep, Into::into),
                    };
                }
                "RECENT_MEAL" => view.recent_meals.push(decode::<MealRow>(row)?.into()),
                "RECENT_WORKOUT" => view.recent_workouts.push(decode::<WorkoutRow>(row)?.into()),
                "ACTIVE_GOAL" => {
                    let goal: ActiveGoalRow = decode(row)?;
                    view.active_goals.push(ActiveGoalView {
                        goal_id: goal.goal_id,
                        kind: goal.kind,
                        title: goal.title,
                        target: number(goal.target),
                        period: goal.period,
                    });
                }
                "CONNECTION" => view.connections.push(decode::<ConnectionRow>(row)?.into()),
                _ => {}
            }
        }
        // Newest first, and only as many as the home screen shows: the window holds
        // up to 30 days of them, and the answer should not grow with the user's habits.
        view.recent_meals.reverse();
        view.recent_meals.truncate(RECENT_SHOWN);
        view.recent_workouts.reverse();
        view.recent_workouts.truncate(RECENT_SHOWN);
        Ok(view)
    }

    /// Every live row of `user`'s window, page after page: a page ends at 1 MB, and the
    /// rows after its end (the recent workouts sort after the meals) belong on the screen.
    async fn window(&self, user: &UserId) -> Result<Vec<Item>, QueryError> {
        let pk = PartitionKey::User(user.clone()).to_string();
        let window = SortKeyCondition::LessThan(prefix::HISTORY.to_owned());
        let (mut rows, mut cursor) = (Vec::new(), None);
        loop {
            let query = Query::partition(&pk).sort_key(window.clone()).after(cursor);
            let page = self.table.query(&query).await?;
            rows.extend(live(page.items));
            match page.cursor {
                Some(next) => cursor = Some(next),
                None => return Ok(rows),
            }
        }
    }

    /// The user's profile as the dashboard holds it: one GetItem.
    pub async fn profile(&self, user: &UserId) -> Result<Option<ProfileView>, QueryError> {
        let key = Key::new(
            PartitionKey::User(user.clone()).to_string(),
            SortKey::Profile.to_string(),
        );
        self.table
            .get(&key, false)
            .await?
            .map(|row| decode::<ProfileRow>(row).map(Into::into))
            .transpose()
    }
}

/// The calls this module makes, as declared access patterns (see `infra::access`).
pub(crate) mod access {
    use events_schema::Context::Dashboard as DASHBOARD;
    use infra::access::{AccessPattern as P, Op, Order::Forward, Sk};

    /// The home screen's reads.
    pub static ACCESS: &[P] = &[
        P::new(
            "the home screen",
            DASHBOARD,
            Op::query(Forward, false, false),
            "USER#",
            Sk::below("~"),
            "GET /v1/me/dashboard (every row before the history, which sorts after `~`)",
        )
        .volume(20.0)
        .size(30, 400),
        P::new(
            "the profile as shown",
            DASHBOARD,
            Op::get(false),
            "USER#",
            Sk::exact("PROFILE"),
            "GET /v1/me/profile",
        )
        .volume(2.0)
        .size(1, 300),
    ];
}
