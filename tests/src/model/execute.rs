//! Runs a generated history through the real command handlers, on a manual clock that
//! the history advances, and records what the reference model needs to know that the
//! final state alone cannot tell: when and where each goal was set, which provider
//! revisions were delivered, who asked to be erased.

use super::history::{History, Op, Synced, TIMEZONES, When};
use crate::commands::World;
use commands::integrations::{SandboxProvider, WebhookPayload};
use commands::nutrition::{EditMeal, MealInput};
use commands::{CommandError, CommandMeta};
use events_schema::events::goals::{GoalKind, GoalStatus};
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

/// Runs `history` on `store` (commands only: nothing is projected) on `clock`, which
/// shows the history's start and is advanced as its steps pass; returns each user's run.
/// Every handler's calls are recorded by `recorded`.
pub async fn run(
    history: &History,
    store: Arc<dyn Store>,
    clock: &Clock,
    recorded: &infra::recorded::Recorded,
) -> Vec<UserRun> {
    let start = clock.now();
    let seed = history.seed;
    let mut runners = Vec::new();
    for (n, tz) in history.timezones.iter().enumerate() {
        let mut world = World::recorded(store.clone(), clock.clone(), recorded);
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
                clock,
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

/// What every command of one step shares: the user's meta in their timezone, the time,
/// and what to say if the command fails.
struct Call<'a> {
    seed: u64,
    what: &'a str,
    meta: CommandMeta,
    now: Timestamp,
}

impl Call<'_> {
    /// The command's result, or `None` for an error the history may run into.
    fn expected<T>(&self, result: Result<T, CommandError>) -> Option<T> {
        expected(self.seed, self.what, result)
    }
}

impl Runner {
    /// Timezone number `tz`, or the user's own where there is no such number.
    fn zone(&self, tz: usize) -> String {
        TIMEZONES
            .get(tz)
            .map_or_else(|| self.timezone.clone(), |z| (*z).to_owned())
    }

    /// Runs one step: passes time, or runs the command it names.
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
        let call = Call {
            seed,
            what,
            meta,
            now,
        };
        match *op {
            Op::Advance { minutes } => {
                clock.set(Timestamp::from_millis(now.millis() + minutes * 60_000).unwrap_or(now));
            }
            Op::LogMeal {
                when,
                tz,
                protein,
                calories,
            } => {
                let input = meal_input(now, when, &self.zone(tz), protein, calories);
                self.log_meal(&call, input).await;
            }
            Op::LogAgain { meal } => {
                if let Some(input) = pick(&self.deleted_meals, meal) {
                    self.log_meal(&call, input).await;
                }
            }
            Op::EditMeal {
                meal,
                when,
                tz,
                protein,
                calories,
            } => {
                let edited = meal_input(now, when, &self.zone(tz), protein, calories);
                self.edit_meal(&call, meal, edited).await;
            }
            Op::DeleteMeal { meal } => self.delete_meal(&call, meal).await,
            Op::RecordWorkout {
                when,
                duration_s,
                distance_m,
            } => {
                self.record_workout(&call, when, duration_s, distance_m)
                    .await
            }
            Op::RecordSleep {
                when,
                minutes,
                score,
            } => self.record_sleep(&call, when, minutes, score).await,
            Op::Connect { watch } => self.connect(&call, watch).await,
            Op::Disconnect => self.disconnect(&call).await,
            Op::Deliver { record, revision } => {
                self.deliver(&call, records, (record, revision), (n, start))
                    .await;
            }
            Op::CreateGoal { kind, target } => self.create_goal(&call, kind, target).await,
            Op::ChangeGoal { goal, status } => self.change_goal(&call, goal, status).await,
            Op::ChangeTimezone { tz } => self.change_timezone(&call, tz).await,
            Op::DeleteAccount => {
                let (identity, password) = (&self.world.identity, "correct horse battery");
                call.expected(identity.request_deletion(&call.meta, password).await);
                self.run.erased = true;
            }
        }
    }

    /// Logs `input` as a meal; remembers it as logged.
    async fn log_meal(&mut self, call: &Call<'_>, input: MealInput) {
        let logged = self
            .world
            .nutrition
            .log_meal(&call.meta, input.clone())
            .await;
        if let Some(logged) = call.expected(logged) {
            self.meals.push((logged.value.meal_id, input));
        }
    }

    /// Edits logged meal number `meal` to `edited`; remembers it as edited.
    async fn edit_meal(&mut self, call: &Call<'_>, meal: usize, edited: MealInput) {
        let Some((id, _)) = pick(&self.meals, meal) else {
            return;
        };
        let input = EditMeal {
            meal_id: id.clone(),
            meal: edited.clone(),
        };
        let done = self.world.nutrition.edit_meal(&call.meta, input).await;
        if call.expected(done).is_some() {
            for (known, as_logged) in &mut self.meals {
                if *known == id {
                    *as_logged = edited.clone();
                }
            }
        }
    }

    /// Deletes logged meal number `meal`; remembers it as deleted, to log again.
    async fn delete_meal(&mut self, call: &Call<'_>, meal: usize) {
        let Some((id, input)) = pick(&self.meals, meal) else {
            return;
        };
        let done = self.world.nutrition.delete_meal(&call.meta, &id).await;
        if call.expected(done).is_some() {
            self.meals.retain(|(m, _)| *m != id);
            self.deleted_meals.push(input);
        }
    }

    /// A run entered by hand.
    async fn record_workout(
        &mut self,
        call: &Call<'_>,
        when: When,
        duration_s: u32,
        distance_m: Option<u32>,
    ) {
        let input = serde_json::from_value(serde_json::json!({
            "sport": "run", "started_at": instant(call.now, when), "timezone": self.timezone,
            "duration_s": duration_s, "distance_m": distance_m, "calories": null,
        }))
        .expect("workout");
        call.expected(self.world.activity.record_workout(&call.meta, input).await);
    }

    /// A night entered by hand.
    async fn record_sleep(&mut self, call: &Call<'_>, when: When, minutes: i64, score: u8) {
        let start = instant(call.now, when);
        let input = commands::sleep::RecordSleep {
            start,
            end: Timestamp::from_millis(start.millis() + minutes * 60_000).unwrap_or(start),
            timezone: self.timezone.clone(),
            score,
            stages: SleepStages::default(),
        };
        call.expected(self.world.sleep.record_sleep(&call.meta, input).await);
    }

    /// Connects the sandbox provider as watch number `watch`; remembers the watch.
    async fn connect(&mut self, call: &Call<'_>, watch: usize) {
        let integrations = &self.world.integrations;
        let started = call.expected(integrations.start_connect(&call.meta, "sandbox").await);
        let Some(started) = started else { return };
        let provider_user = format!("w{watch}-{}", call.meta.user.as_str().to_lowercase());
        let code = SandboxProvider::code_for(&provider_user, &started.value.authorize_url);
        let done = integrations
            .complete_connect(&call.meta, "sandbox", &started.value.state, &code)
            .await;
        if call.expected(done).is_some() {
            self.watch = Some((provider_user, self.timezone.clone()));
        }
    }

    /// Disconnects the watch; remembers there is none.
    async fn disconnect(&mut self, call: &Call<'_>) {
        let done = self
            .world
            .integrations
            .disconnect(&call.meta, "sandbox")
            .await;
        if call.expected(done).is_some() {
            self.watch = None;
        }
    }

    /// Delivers revision `revision` of provider record `record` to the connected watch,
    /// if any; remembers what was delivered.
    async fn deliver(
        &mut self,
        call: &Call<'_>,
        records: &[Vec<Synced>],
        (record, revision): (usize, usize),
        (n, start): (usize, Timestamp),
    ) {
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
        let received = self.world.receive_signed(&body, now_epoch_seconds()).await;
        if call.expected(received).is_some() {
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

    /// A goal of `kind` with `target`; remembers when and where it was set.
    async fn create_goal(&mut self, call: &Call<'_>, kind: GoalKind, target: u32) {
        let input = serde_json::from_value(serde_json::json!({
            "kind": kind, "target": target.to_string(), "title": "Goal", "timezone": self.timezone,
        }))
        .expect("goal");
        let created = self.world.goals.create_goal(&call.meta, input).await;
        if let Some(created) = call.expected(created) {
            self.goals.push(created.value.goal_id.clone());
            self.run.goals.push(GoalSet {
                id: created.value.goal_id,
                kind,
                at: call.now,
                timezone: self.timezone.clone(),
            });
        }
    }

    /// Goal number `goal` moved to `status`.
    async fn change_goal(&mut self, call: &Call<'_>, goal: usize, status: GoalStatus) {
        let Some(id) = pick(&self.goals, goal) else {
            return;
        };
        call.expected(
            self.world
                .goals
                .change_status(&call.meta, &id, status)
                .await,
        );
    }

    /// The account's timezone changed to number `tz`; remembered when it was.
    async fn change_timezone(&mut self, call: &Call<'_>, tz: usize) {
        let zone = self.zone(tz);
        let input = commands::identity::UpdateProfile {
            timezone: Some(zone.clone()),
            ..Default::default()
        };
        let done = self.world.identity.update_profile(&call.meta, input).await;
        if call.expected(done).is_some() {
            self.timezone = zone;
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
