//! Runs a generated history through the real command handlers, on a manual clock that
//! the history advances, and records what the reference model needs to know that the
//! final state alone cannot tell: when and where each goal was set, which provider
//! revisions were delivered, who asked to be erased.

use super::history::{History, Op, Synced, TIMEZONES, When};
use crate::commands::{WEBHOOK_SECRET, World};
use commands::CommandError;
use commands::integrations::{SandboxProvider, WebhookPayload, sign};
use commands::nutrition::{EditMeal, MealInput};
use events_schema::events::goals::GoalKind;
use events_schema::events::integrations::{ProviderSleep, ProviderWorkout};
use events_schema::events::sleep::SleepStages;
use events_schema::ids::{ExternalId, GoalId, MealId, UserId};
use events_schema::time::{Clock, Timestamp};
use infra::Store;
use infra::store::now_epoch_seconds;
use rust_decimal::Decimal;
use std::collections::BTreeMap;
use std::sync::Arc;

/// A goal as it was set.
#[derive(Debug, Clone)]
pub struct GoalSet {
    pub id: GoalId,
    pub kind: GoalKind,
    pub at: Timestamp,
    pub timezone: String,
}

/// What a provider sent of one record at one revision.
#[derive(Debug, Clone, PartialEq)]
pub enum Payload {
    Workout(ProviderWorkout),
    Sleep(ProviderSleep),
}

/// A revision of a provider record that a webhook delivered.
#[derive(Debug, Clone)]
pub struct Delivered {
    pub revision: usize,
    pub payload: Payload,
    /// The timezone the delivery carried (the user's when they connected).
    pub timezone: String,
}

/// What the reference model needs of one user's history.
#[derive(Debug, Clone)]
pub struct UserRun {
    pub user: UserId,
    pub erased: bool,
    pub goals: Vec<GoalSet>,
    /// Provider record number -> its deliveries.
    pub delivered: BTreeMap<usize, Vec<Delivered>>,
}

/// The external id of a user's provider record number `record`.
pub fn external_id(record: usize) -> String {
    format!("rec-{record}")
}

/// When provider revision `revision` was made (its `updated_at`).
pub fn revision_time(revision: usize) -> Timestamp {
    Timestamp::from_millis(1_767_225_600_000 + (revision as i64 + 1) * 60_000)
        .unwrap_or_else(Timestamp::now)
}

/// The instant `when` means at `now`.
pub fn instant(now: Timestamp, when: When) -> Timestamp {
    let midnight = now.millis() - now.millis().rem_euclid(86_400_000);
    Timestamp::from_millis(midnight - when.days_ago * 86_400_000 + when.minute * 60_000)
        .unwrap_or(now)
}

struct Runner {
    world: World,
    timezone: String,
    meals: Vec<(MealId, MealInput)>,
    deleted_meals: Vec<MealInput>,
    goals: Vec<GoalId>,
    watch: Option<(String, String)>,
    connects: usize,
    run: UserRun,
}

/// Accepts the errors a history may run into (what it asked was not valid, or no longer
/// possible); anything else is a failure of the system under test.
fn expected<T>(seed: u64, what: &str, result: Result<T, CommandError>) -> Option<T> {
    match result {
        Ok(value) => Some(value),
        Err(
            CommandError::Validation { .. } | CommandError::NotFound(_) | CommandError::Conflict(_),
        ) => None,
        Err(other) => panic!("seed {seed}: {what} failed: {other:?}"),
    }
}

/// Runs `history` on `store` (commands only: nothing is projected); returns each
/// user's run.
pub async fn run(history: &History, store: Arc<dyn Store>, start: Timestamp) -> Vec<UserRun> {
    let clock = Clock::manual(start);
    let seed = history.seed;
    let mut runners = Vec::new();
    for (n, tz) in history.timezones.iter().enumerate() {
        let mut world = World::with_clock(store.clone(), clock.clone());
        let timezone = TIMEZONES[*tz].to_owned();
        let register = serde_json::from_value(serde_json::json!({
            "email": format!("user{n}-{}@model.example", world.meta.user.as_str().to_lowercase()),
            "password": "correct horse battery", "display_name": format!("User {n}"),
            "timezone": timezone,
        }))
        .expect("registration");
        let user = world
            .identity
            .register(&world.meta, register)
            .await
            .unwrap_or_else(|e| panic!("seed {seed}: register: {e:?}"))
            .value;
        world.meta = commands::CommandMeta::new(user.clone());
        runners.push(Runner {
            world,
            timezone,
            meals: Vec::new(),
            deleted_meals: Vec::new(),
            goals: Vec::new(),
            watch: None,
            connects: 0,
            run: UserRun {
                user,
                erased: false,
                goals: Vec::new(),
                delivered: BTreeMap::new(),
            },
        });
    }
    for (n, step) in history.steps.iter().enumerate() {
        // A minute passes between steps, so every step has a time of its own.
        clock.set(Timestamp::from_millis(clock.now().millis() + 60_000).unwrap_or(start));
        let runner = &mut runners[step.user];
        if runner.run.erased {
            continue;
        }
        let what = format!("step {n} ({:?})", step.op);
        runner
            .step(
                seed,
                &what,
                &step.op,
                &clock,
                &history.provider[step.user].records,
                (n, start),
            )
            .await;
    }
    runners.into_iter().map(|r| r.run).collect()
}

fn meal_input(now: Timestamp, when: When, tz: &str, protein: u32, calories: u32) -> MealInput {
    MealInput {
        name: format!("meal {protein}/{calories}"),
        eaten_at: instant(now, when),
        timezone: tz.to_owned(),
        calories: Decimal::from(calories),
        protein_g: Decimal::from(protein),
        carbs_g: Decimal::from(protein / 2),
        fat_g: Decimal::from(calories / 50),
    }
}

impl Runner {
    fn zone(&self, tz: usize) -> String {
        TIMEZONES
            .get(tz)
            .map_or_else(|| self.timezone.clone(), |z| (*z).to_owned())
    }

    async fn step(
        &mut self,
        seed: u64,
        what: &str,
        op: &Op,
        clock: &Clock,
        records: &[Vec<Synced>],
        (n, start): (usize, Timestamp),
    ) {
        let now = clock.now();
        let meta = self
            .world
            .meta
            .clone()
            .in_timezone(Some(self.timezone.clone()));
        let world = &self.world;
        match op {
            Op::Advance { minutes } => {
                clock.set(Timestamp::from_millis(now.millis() + minutes * 60_000).unwrap_or(now));
            }
            Op::LogMeal {
                when,
                tz,
                protein,
                calories,
            } => {
                let input = meal_input(now, *when, &self.zone(*tz), *protein, *calories);
                let logged = world.nutrition.log_meal(&meta, input.clone()).await;
                if let Some(logged) = expected(seed, what, logged) {
                    self.meals.push((logged.value.meal_id, input));
                }
            }
            Op::LogAgain { meal } => {
                let Some(input) = pick(&self.deleted_meals, *meal) else {
                    return;
                };
                let logged = world.nutrition.log_meal(&meta, input.clone()).await;
                if let Some(logged) = expected(seed, what, logged) {
                    self.meals.push((logged.value.meal_id, input));
                }
            }
            Op::EditMeal {
                meal,
                when,
                tz,
                protein,
                calories,
            } => {
                let Some((id, _)) = pick(&self.meals, *meal) else {
                    return;
                };
                let edited = meal_input(now, *when, &self.zone(*tz), *protein, *calories);
                let input = EditMeal {
                    meal_id: id.clone(),
                    meal: edited.clone(),
                };
                if expected(seed, what, world.nutrition.edit_meal(&meta, input).await).is_some() {
                    for (known, as_logged) in &mut self.meals {
                        if *known == id {
                            *as_logged = edited.clone();
                        }
                    }
                }
            }
            Op::DeleteMeal { meal } => {
                let Some((id, input)) = pick(&self.meals, *meal) else {
                    return;
                };
                if expected(seed, what, world.nutrition.delete_meal(&meta, &id).await).is_some() {
                    self.meals.retain(|(m, _)| *m != id);
                    self.deleted_meals.push(input);
                }
            }
            Op::RecordWorkout {
                when,
                duration_s,
                distance_m,
            } => {
                let input = serde_json::from_value(serde_json::json!({
                    "sport": "run", "started_at": instant(now, *when), "timezone": self.timezone,
                    "duration_s": duration_s, "distance_m": distance_m, "calories": null,
                }))
                .expect("workout");
                expected(
                    seed,
                    what,
                    world.activity.record_workout(&meta, input).await,
                );
            }
            Op::RecordSleep {
                when,
                minutes,
                score,
            } => {
                let start = instant(now, *when);
                let input = commands::sleep::RecordSleep {
                    start,
                    end: Timestamp::from_millis(start.millis() + minutes * 60_000).unwrap_or(start),
                    timezone: self.timezone.clone(),
                    score: *score,
                    stages: SleepStages::default(),
                };
                expected(seed, what, world.sleep.record_sleep(&meta, input).await);
            }
            Op::Connect { watch } => {
                let started = expected(
                    seed,
                    what,
                    world.integrations.start_connect(&meta, "sandbox").await,
                );
                let Some(started) = started else { return };
                let provider_user = format!("w{watch}-{}", meta.user.as_str().to_lowercase());
                self.connects += 1;
                let code = format!(
                    "{}.{}",
                    SandboxProvider::code_for(&provider_user),
                    self.connects
                );
                let done = world
                    .integrations
                    .complete_connect("sandbox", &started.value.state, &code)
                    .await;
                if expected(seed, what, done).is_some() {
                    self.watch = Some((provider_user, self.timezone.clone()));
                }
            }
            Op::Disconnect => {
                if expected(
                    seed,
                    what,
                    world.integrations.disconnect(&meta, "sandbox").await,
                )
                .is_some()
                {
                    self.watch = None;
                }
            }
            Op::Deliver { record, revision } => {
                let Some((provider_user, timezone)) = self.watch.clone() else {
                    return;
                };
                let record = record % records.len().max(1);
                let Some(revisions) = records.get(record) else {
                    return;
                };
                let revision = revision % revisions.len().max(1);
                let Some(content) = revisions.get(revision) else {
                    return;
                };
                let payload = payload(start, record, revision, content);
                let body = webhook(&provider_user, n, &payload);
                let stamp = now_epoch_seconds();
                let signature = sign(WEBHOOK_SECRET.as_bytes(), stamp, &body);
                let received = world
                    .integrations
                    .receive_webhook("sandbox", &stamp.to_string(), &signature, &body)
                    .await;
                if expected(seed, what, received).is_some() {
                    self.run
                        .delivered
                        .entry(record)
                        .or_default()
                        .push(Delivered {
                            revision,
                            payload,
                            timezone,
                        });
                }
            }
            Op::CreateGoal { kind, target } => {
                let input = serde_json::from_value(serde_json::json!({
                    "kind": kind, "target": target.to_string(), "title": "Goal", "timezone": self.timezone,
                }))
                .expect("goal");
                if let Some(created) =
                    expected(seed, what, world.goals.create_goal(&meta, input).await)
                {
                    self.goals.push(created.value.goal_id.clone());
                    self.run.goals.push(GoalSet {
                        id: created.value.goal_id,
                        kind: *kind,
                        at: now,
                        timezone: self.timezone.clone(),
                    });
                }
            }
            Op::ChangeGoal { goal, status } => {
                let Some(id) = pick(&self.goals, *goal) else {
                    return;
                };
                expected(
                    seed,
                    what,
                    world.goals.change_status(&meta, &id, *status).await,
                );
            }
            Op::ChangeTimezone { tz } => {
                let zone = self.zone(*tz);
                let input = commands::identity::UpdateProfile {
                    timezone: Some(zone.clone()),
                    ..Default::default()
                };
                if expected(
                    seed,
                    what,
                    world.identity.update_profile(&meta, input).await,
                )
                .is_some()
                {
                    self.timezone = zone;
                }
            }
            Op::DeleteAccount => {
                expected(seed, what, world.identity.request_deletion(&meta).await);
                self.run.erased = true;
            }
        }
    }
}

fn pick<T: Clone>(items: &[T], n: usize) -> Option<T> {
    (!items.is_empty()).then(|| items[n % items.len()].clone())
}

/// Revision `revision` of a user's provider record `record`: its times are fixed
/// relative to the history's `start`, so every delivery of it says the same.
fn payload(start: Timestamp, record: usize, revision: usize, content: &Synced) -> Payload {
    let external_id = ExternalId::parse(&external_id(record)).expect("external id");
    let updated_at = Some(revision_time(revision));
    match content {
        Synced::Workout {
            when,
            duration_s,
            distance_m,
        } => Payload::Workout(ProviderWorkout {
            external_id,
            sport: "run".into(),
            started_at: instant(start, *when),
            duration_s: *duration_s,
            distance_m: *distance_m,
            calories: None,
            updated_at,
        }),
        Synced::Sleep {
            when,
            minutes,
            score,
        } => {
            let begin = instant(start, *when);
            Payload::Sleep(ProviderSleep {
                external_id,
                start: begin,
                end: Timestamp::from_millis(begin.millis() + minutes * 60_000).unwrap_or(begin),
                score: *score,
                stages: SleepStages::default(),
                updated_at,
            })
        }
    }
}

/// A webhook body delivering `payload` (delivery ids are unique per step).
fn webhook(provider_user: &str, step: usize, payload: &Payload) -> Vec<u8> {
    let (workouts, sleep) = match payload {
        Payload::Workout(w) => (vec![w.clone()], vec![]),
        Payload::Sleep(s) => (vec![], vec![s.clone()]),
    };
    let body = WebhookPayload {
        delivery_id: format!("d-{step}"),
        provider_user_id: provider_user.to_owned(),
        workouts,
        sleep,
    };
    serde_json::to_vec(&body).expect("payload")
}
