//! Goals: creation and status changes. A goal item carries the sparse `by-status` index
//! keys (`USER#<id>#STATUS#<status>`, `GOAL#<id>`), rewritten with every status change,
//! so "my active goals" is one index query. Items: `GOAL#<goal-id>`.

use crate::idempotency;
use crate::items::to_item;
use crate::meta::{CommandMeta, Outcome};
use crate::optimistic::{self, Attempt};
use crate::outbox::event_action;
use crate::{CommandError, validate};
use events_schema::events::goals::{
    Goal, GoalCreated, GoalKind, GoalPeriod, GoalStatus, GoalStatusChanged,
};
use events_schema::ids::GoalId;
use events_schema::keys::SortKey;
use events_schema::time::Timestamp;
use infra::store::{Condition, Item, Key, Update};
use infra::table::{Action, contexts::Goals};
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use serde_json::json;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CreateGoal {
    pub kind: GoalKind,
    pub target: Decimal,
    pub title: String,
    /// The user's IANA timezone: the goal counts from the period holding today there
    /// (UTC when absent).
    #[serde(default)]
    pub timezone: Option<String>,
}

/// The period a kind is measured over, and the largest sensible target.
fn rules(kind: GoalKind) -> (GoalPeriod, Decimal) {
    match kind {
        GoalKind::WeeklyWorkoutCount => (GoalPeriod::Weekly, Decimal::from(50)),
        GoalKind::WeeklyActiveMinutes => (GoalPeriod::Weekly, Decimal::from(5000)),
        GoalKind::DailyProteinGrams => (GoalPeriod::Daily, Decimal::from(1000)),
        GoalKind::WeeklyDistanceKm => (GoalPeriod::Weekly, Decimal::from(2000)),
        GoalKind::NightlySleepHours => (GoalPeriod::Daily, Decimal::from(16)),
    }
}

/// Which status changes are allowed: completed and abandoned goals are final.
pub fn can_move(from: GoalStatus, to: GoalStatus) -> bool {
    use GoalStatus::*;
    matches!(
        (from, to),
        (Active, Paused | Completed | Abandoned) | (Paused, Active | Completed | Abandoned)
    )
}

/// The goal `input` sets at `now`: active, version 1, its period and the upper bound of
/// its target from its kind, counted from the user's day; an invalid-field error (nothing
/// written) for a bad title, target or timezone.
fn new_goal(input: &CreateGoal, now: Timestamp) -> Result<Goal, CommandError> {
    let title = validate::text("title", &input.title, 1, 80)?;
    let (period, max) = rules(input.kind);
    let target = validate::decimal("target", input.target, Decimal::new(1, 1), max, 1)?;
    let timezone = validate::timezone("timezone", input.timezone.as_deref().unwrap_or("UTC"))?;
    Ok(Goal {
        goal_id: GoalId::generate(),
        kind: input.kind,
        target,
        period,
        status: GoalStatus::Active,
        title,
        version: 1,
        created_on: Some(validate::day_in(now, timezone)),
    })
}

/// What moving `current` to `to` writes (event aside), and the goal it becomes; None
/// when it is already there; a conflict when the move is not allowed.
fn status_change(
    pk: &str,
    current: &Goal,
    to: GoalStatus,
) -> Result<Option<(Vec<Action>, Goal)>, CommandError> {
    if current.status == to {
        return Ok(None);
    }
    if !can_move(current.status, to) {
        return Err(CommandError::Conflict(format!(
            "a {} goal cannot become {}",
            current.status.as_str(),
            to.as_str()
        )));
    }
    let next = Goal {
        status: to,
        version: current.version + 1,
        ..current.clone()
    };
    // An update, not a put: the goal's current value (kept by the goals projectors)
    // must survive a status change.
    let actions = vec![Action::Update {
        key: goal_key(pk, &current.goal_id),
        update: Update::default()
            .set("status", json!(to))
            .set("status_pk", json!(status_pk(pk, to)))
            .set("version", next.version),
        condition: Some(Condition::VersionEquals(current.version)),
    }];
    Ok(Some((actions, next)))
}

fn goal_key(pk: &str, id: &GoalId) -> Key {
    Key::new(pk, SortKey::Goal(id.clone()).to_string())
}

/// The `by-status` index partition of a user's goals in one status.
fn status_pk(pk: &str, status: GoalStatus) -> String {
    format!("{pk}#STATUS#{}", status.as_str())
}

/// The goal item, with its index keys for its status.
fn goal_item(pk: &str, goal: &Goal) -> Result<Item, CommandError> {
    let mut item = to_item(&goal_key(pk, &goal.goal_id), goal)?;
    item.insert("status_pk".into(), json!(status_pk(pk, goal.status)));
    item.insert(
        "status_sk".into(),
        json!(SortKey::Goal(goal.goal_id.clone()).to_string()),
    );
    Ok(item)
}

/// The goals context's commands.
pub type GoalCommands = crate::handlers::Handlers<Goals>;

impl GoalCommands {
    pub async fn create_goal(
        &self,
        meta: &CommandMeta,
        input: CreateGoal,
    ) -> Result<Outcome<Goal>, CommandError> {
        let now = self.clock.now();
        let goal = new_goal(&input, now)?;
        let item = goal_item(&meta.user_pk(), &goal)?;
        let created = GoalCreated { goal: goal.clone() };
        self.create(meta, item, (now, &created), &input, goal).await
    }

    pub async fn goal(&self, meta: &CommandMeta, id: &GoalId) -> Result<Goal, CommandError> {
        self.record(&goal_key(&meta.user_pk(), id), "goal").await
    }

    /// Moves a goal to another status. Asking for the status it has changes nothing.
    pub async fn change_status(
        &self,
        meta: &CommandMeta,
        id: &GoalId,
        to: GoalStatus,
    ) -> Result<Outcome<Goal>, CommandError> {
        let _writer = self.writers.user(&meta.user).await;
        let pk = meta.user_pk();
        optimistic::run!({
            let current = self.goal(meta, id).await?;
            let Some((mut actions, next)) = status_change(&pk, &current, to)? else {
                return Ok(Attempt::Done(Outcome::replayed(current)));
            };
            let event = self.event_now(
                meta,
                &GoalStatusChanged {
                    previous: current.status,
                    goal: next.clone(),
                },
            )?;
            actions.push(event_action(&pk, &event)?);
            let request = json!({"goal": id, "status": to});
            optimistic::settled(
                idempotency::commit(&self.table, meta, &pk, &request, actions, next.clone())
                    .await?,
            )
        })
    }
}

/// The calls this module makes, as declared access patterns (see `infra::access`).
pub(crate) mod access {
    use crate::idempotency::command_tx;
    use events_schema::Context::Goals as GOALS;
    use infra::access::{AccessPattern as P, Action::*, Op, Sk, Written as W};

    /// The goal commands' calls.
    pub static ACCESS: &[P] = &[
        P::transact(
            "set a goal",
            command_tx!(
                Goals,
                "USER#",
                [
                    W::new(Put, GOALS, "USER#", "GOAL#"),
                    W::new(Put, GOALS, "USER#", "EVT#"),
                ]
            ),
            "POST /v1/me/goals",
        )
        .volume(0.05)
        .size(2, 500),
        P::new(
            "a goal, to change or score it",
            GOALS,
            Op::get(true),
            "USER#",
            Sk::exact("GOAL#"),
            "PATCH /v1/me/goals/{id}; the goals projections scoring it",
        )
        .volume(3.0)
        .size(1, 600),
        P::transact(
            "change a goal",
            command_tx!(
                Goals,
                "USER#",
                [
                    W::new(Update, GOALS, "USER#", "GOAL#"),
                    W::new(Put, GOALS, "USER#", "EVT#"),
                ]
            ),
            "PATCH /v1/me/goals/{id}",
        )
        .volume(0.05)
        .size(2, 600),
    ];
}

#[cfg(test)]
mod tests {
    use super::*;
    use events_schema::events::goals::{GoalKind, GoalPeriod};

    const PK: &str = "USER#01M8ZF5ZSJP5Z70GTS7AGAV9T7";

    fn goal(status: GoalStatus, version: u64) -> Goal {
        Goal {
            goal_id: GoalId::generate(),
            kind: GoalKind::WeeklyWorkoutCount,
            target: Decimal::from(3),
            period: GoalPeriod::Weekly,
            status,
            title: "three a week".into(),
            version,
            created_on: None,
        }
    }

    #[test]
    fn pausing_an_active_goal_updates_its_status_and_index_entry() {
        // Given an active goal at version 4,
        let current = goal(GoalStatus::Active, 4);
        // when it is paused,
        let (actions, next) = status_change(PK, &current, GoalStatus::Paused)
            .expect("allowed")
            .expect("a change");
        // then only status, index partition and version are set, if still at version 4.
        assert_eq!(next.status, GoalStatus::Paused);
        assert_eq!(next.version, 5);
        assert_eq!((next.target, &next.title), (current.target, &current.title));
        match actions.as_slice() {
            [
                Action::Update {
                    key,
                    update,
                    condition,
                },
            ] => {
                assert_eq!(key, &goal_key(PK, &current.goal_id));
                assert_eq!(update.set["status"], json!(GoalStatus::Paused));
                assert_eq!(
                    update.set["status_pk"],
                    json!(format!("{PK}#STATUS#paused"))
                );
                assert_eq!(update.set["version"], json!(5));
                assert_eq!(update.set.len(), 3);
                assert_eq!(condition, &Some(Condition::VersionEquals(4)));
            }
            other => panic!("not one update: {other:?}"),
        }
    }

    #[test]
    fn asking_for_the_status_a_goal_has_writes_nothing() {
        let current = goal(GoalStatus::Paused, 2);
        assert!(
            status_change(PK, &current, GoalStatus::Paused)
                .expect("allowed")
                .is_none()
        );
    }

    #[test]
    fn a_finished_goal_does_not_come_back() {
        for finished in [GoalStatus::Completed, GoalStatus::Abandoned] {
            let current = goal(finished, 7);
            for to in [GoalStatus::Active, GoalStatus::Paused] {
                assert!(matches!(
                    status_change(PK, &current, to),
                    Err(CommandError::Conflict(_))
                ));
            }
        }
    }

    fn create(kind: GoalKind, target: &str, title: &str, timezone: Option<&str>) -> CreateGoal {
        CreateGoal {
            kind,
            target: target.parse().expect("decimal"),
            title: title.into(),
            timezone: timezone.map(str::to_owned),
        }
    }

    #[test]
    fn a_new_goal_is_active_from_the_users_day() {
        // Given 23:30 UTC on the 1st, a user in Tokyo (already the 2nd there)
        let now = Timestamp::parse("2026-03-01T23:30:00.000Z").expect("time");
        let input = create(
            GoalKind::DailyProteinGrams,
            "120",
            "Protein",
            Some("Asia/Tokyo"),
        );
        // when the goal is set,
        let goal = new_goal(&input, now).expect("valid");
        // then it is active at version 1, daily, counted from the 2nd.
        assert_eq!((goal.status, goal.version), (GoalStatus::Active, 1));
        assert_eq!(goal.period, GoalPeriod::Daily);
        assert_eq!(goal.target, Decimal::from(120));
        assert_eq!(
            goal.created_on.map(|d| d.to_string()),
            Some("2026-03-02".into())
        );
    }

    #[test]
    fn a_goal_out_of_bounds_names_its_field() {
        let now = Timestamp::parse("2026-03-01T12:00:00.000Z").expect("time");
        for (input, field) in [
            (
                create(GoalKind::WeeklyWorkoutCount, "0", "Runs", None),
                "target",
            ),
            (create(GoalKind::WeeklyWorkoutCount, "3", "", None), "title"),
            (
                create(GoalKind::WeeklyWorkoutCount, "3", "Runs", Some("Mars/Base")),
                "timezone",
            ),
        ] {
            match new_goal(&input, now) {
                Err(error) => assert!(error.to_string().contains(field), "{error} names {field}"),
                Ok(goal) => panic!("accepted {goal:?}"),
            }
        }
    }
}
