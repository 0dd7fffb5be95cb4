//! Query handlers for the mobile app. Each answers with exactly one GetItem or one
//! Query, on projection or summary rows, never by reading entity rows to aggregate them:
//! the dashboard is one Query of the user's dashboard partition, daily summaries one
//! BETWEEN, the latest workout one reverse Query with limit 1, active goals one index
//! Query.

use chrono::Duration;
use events_schema::ids::{GoalId, UserId};
use events_schema::keys::{PartitionKey, SortKey, prefix};
use events_schema::time::Day;
use infra::StoreError;
use infra::store::{IndexQuery, Item, Query, SortKeyCondition};
use infra::table::{Table, contexts};
use serde::Serialize;
use serde_json::Value;

/// The longest range of daily summaries one request may ask for.
pub const MAX_SUMMARY_DAYS: i64 = 31;

/// How many recent meals and recent workouts the dashboard answers with.
pub const RECENT_SHOWN: usize = 10;

#[derive(Debug, thiserror::Error)]
pub enum QueryError {
    #[error("{field}: {reason}")]
    Invalid { field: &'static str, reason: String },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What the app's home screen shows for one day.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct DashboardView {
    pub profile: Option<Item>,
    pub day: Option<Item>,
    pub recent_meals: Vec<Item>,
    pub recent_workouts: Vec<Item>,
    pub active_goals: Vec<Item>,
    pub connections: Vec<Item>,
}

fn live(rows: impl IntoIterator<Item = Item>) -> impl Iterator<Item = Item> {
    rows.into_iter()
        .filter(|row| !row.get("deleted").and_then(Value::as_bool).unwrap_or(false))
}

fn sk(row: &Item) -> &str {
    row.get("sk").and_then(Value::as_str).unwrap_or_default()
}

/// The read side, over the tables it reads.
#[derive(Debug, Clone)]
pub struct ReadModels {
    dashboard: Table<contexts::Dashboard>,
    nutrition: Table<contexts::Nutrition>,
    activity: Table<contexts::Activity>,
    goals: Table<contexts::Goals>,
}

impl ReadModels {
    pub fn new(
        dashboard: Table<contexts::Dashboard>,
        nutrition: Table<contexts::Nutrition>,
        activity: Table<contexts::Activity>,
        goals: Table<contexts::Goals>,
    ) -> Self {
        Self {
            dashboard,
            nutrition,
            activity,
            goals,
        }
    }

    /// The dashboard for `day`: one Query of the user's dashboard partition (30-day
    /// window), with the newest [`RECENT_SHOWN`] meals and workouts.
    pub async fn dashboard(&self, user: &UserId, day: Day) -> Result<DashboardView, QueryError> {
        let pk = PartitionKey::User(user.clone()).to_string();
        let page = self.dashboard.query(&Query::partition(&pk)).await?;
        let mut view = DashboardView::default();
        let daily = SortKey::Daily(day).to_string();
        for row in live(page.items) {
            let key = sk(&row).to_owned();
            match key.split('#').next().unwrap_or_default() {
                "PROFILE" => view.profile = Some(row),
                "DAILY" if key == daily => view.day = Some(row),
                "RECENT_MEAL" => view.recent_meals.push(row),
                "RECENT_WORKOUT" => view.recent_workouts.push(row),
                "ACTIVE_GOAL" => view.active_goals.push(row),
                "CONNECTION" => view.connections.push(row),
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

    /// The user's profile as the dashboard projection holds it: one GetItem.
    pub async fn profile(&self, user: &UserId) -> Result<Option<Item>, QueryError> {
        let key = infra::store::Key::new(
            PartitionKey::User(user.clone()).to_string(),
            SortKey::Profile.to_string(),
        );
        Ok(self.dashboard.get(&key, false).await?)
    }

    /// Daily nutrition summaries from `from` to `to` (at most 31 days): one Query.
    pub async fn daily_summaries(
        &self,
        user: &UserId,
        from: Day,
        to: Day,
    ) -> Result<Vec<Item>, QueryError> {
        if to < from {
            return Err(QueryError::Invalid {
                field: "to",
                reason: "must not be before from".into(),
            });
        }
        if to.date() - from.date() >= Duration::days(MAX_SUMMARY_DAYS) {
            return Err(QueryError::Invalid {
                field: "to",
                reason: format!("a range covers at most {MAX_SUMMARY_DAYS} days"),
            });
        }
        let range = SortKeyCondition::Between(
            SortKey::DailySummary(from).to_string(),
            SortKey::DailySummary(to).to_string(),
        );
        let query = Query::partition(PartitionKey::User(user.clone()).to_string()).sort_key(range);
        Ok(self.nutrition.query(&query).await?.items)
    }

    /// The most recent workout: one reverse Query with limit 1.
    pub async fn latest_workout(&self, user: &UserId) -> Result<Option<Item>, QueryError> {
        let query = Query::partition(PartitionKey::User(user.clone()).to_string())
            .sort_key(SortKeyCondition::BeginsWith(prefix::WORKOUT.to_owned()))
            .reverse()
            .limit(1);
        Ok(self.activity.query(&query).await?.items.into_iter().next())
    }

    /// The training block running on `today`: the latest block started on or before it,
    /// if it has not ended. One reverse Query with limit 1.
    pub async fn current_training_block(
        &self,
        user: &UserId,
        today: Day,
    ) -> Result<Option<Item>, QueryError> {
        let upto = SortKeyCondition::Between(
            prefix::TRAINING_BLOCK.to_owned(),
            format!("{}{today}#\u{10FFFF}", prefix::TRAINING_BLOCK),
        );
        let query = Query::partition(PartitionKey::User(user.clone()).to_string())
            .sort_key(upto)
            .reverse()
            .limit(1);
        let block = self.activity.query(&query).await?.items.into_iter().next();
        Ok(block.filter(|row| {
            let start = row
                .get("start_day")
                .and_then(Value::as_str)
                .and_then(|d| Day::parse(d).ok());
            let weeks = row.get("weeks").and_then(Value::as_i64).unwrap_or(0);
            start.is_some_and(|start| today.date() < start.date() + Duration::days(weeks * 7))
        }))
    }

    /// The user's active goals: one Query of the `by-status` index.
    pub async fn active_goals(&self, user: &UserId) -> Result<Vec<Item>, QueryError> {
        let pk = PartitionKey::User(user.clone()).to_string();
        let query = IndexQuery::partition("by-status", format!("{pk}#STATUS#active"));
        Ok(self.goals.query_index(&query).await?.items)
    }

    /// A goal's progress entries, one per period, oldest first: one Query.
    pub async fn goal_progress(
        &self,
        user: &UserId,
        goal: &GoalId,
    ) -> Result<Vec<Item>, QueryError> {
        let query = Query::partition(PartitionKey::User(user.clone()).to_string())
            .sort_key(SortKeyCondition::BeginsWith(prefix::progress_of(goal)));
        Ok(self.goals.query(&query).await?.items)
    }
}
