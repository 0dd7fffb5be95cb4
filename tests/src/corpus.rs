//! The stored-event corpus (`events-schema/corpus/`): real envelopes, written by the
//! command handlers and projectors of the release that published each event version,
//! kept so every later release proves it still reads them.
//!
//! [`record`] runs one scenario that makes every event type through the real handlers
//! and subscriptions: a user who uses every feature (profile, meals, a meal plan,
//! workouts and sleep by hand and from a wearable, a training block, goals), a curated
//! catalog, and a second user who deletes the account. What it records:
//! - `<Event>.v<N>.json`: the first envelope of each event type, at the version this
//!   release writes (files are added, never rewritten);
//! - `history/<label>.jsonl`: every outbox item of the first user and the catalog, one
//!   `{"pk", "envelope"}` per line, to rebuild read models from in later releases.

use crate::commands::World;
use crate::model::capture::capturing;
use crate::model::deliver::{Delivery, deliver};
use commands::CommandMeta;
use commands::activity::{RecordWorkout, StartTrainingBlock};
use commands::goals::CreateGoal;
use commands::identity::{Register, UpdateProfile};
use commands::integrations::WebhookPayload;
use commands::nutrition::{
    CurateMealPlan, CurateRecipe, EatScheduledMeal, EditMeal, MealInput, ScheduleMeal,
};
use commands::sleep::RecordSleep;
use events_schema::Context;
use events_schema::envelope::{EventEnvelope, outbox_event};
use events_schema::events::goals::{GoalKind, GoalStatus};
use events_schema::events::integrations::{ProviderSleep, ProviderWorkout};
use events_schema::events::nutrition::Nutrients;
use events_schema::events::sleep::SleepStages;
use events_schema::ids::{ExternalId, UserId};
use events_schema::time::{Clock, Day, Timestamp};
use infra::Store;
use infra::store::{Item, now_epoch_seconds};
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::sync::Arc;

/// One outbox item of a history: its partition and its envelope (the sort key is the
/// event id).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stored {
    pub pk: String,
    pub envelope: EventEnvelope,
}

/// What one run of the scenario wrote.
pub struct Recorded {
    /// Every event committed, handlers' and subscriptions', in commit order.
    pub events: Vec<EventEnvelope>,
    /// The outbox items of the first user and the catalog after the run.
    pub history: Vec<Stored>,
}

const HOUR: i64 = 3_600_000;

/// The instant the scenario runs at: a Wednesday mid-morning, so everything it records
/// "hours ago" falls in the same ISO week as the goals it sets, whatever the wall clock
/// says (run on a Monday morning by the system clock, a workout 28 hours back fell in
/// the week before the goal's and no `GoalProgressed` was made). Webhook signatures are
/// transport and keep to real time.
pub const SCENARIO_AT: &str = "2026-03-11T09:30:00.000Z";

fn scenario_clock() -> Clock {
    Clock::manual(Timestamp::parse(SCENARIO_AT).expect("the scenario's instant"))
}

/// `hours` before the handlers' now.
fn ago(world: &World, hours: i64) -> Timestamp {
    let now = world.clock.now();
    Timestamp::from_millis(now.millis() - hours * HOUR).unwrap_or(now)
}

/// The handlers' today, in UTC.
fn today(world: &World) -> Day {
    Day::new(world.clock.now().datetime().date_naive())
}

fn meal(name: &str, eaten_at: Timestamp, protein: u32) -> MealInput {
    MealInput {
        name: name.into(),
        eaten_at,
        timezone: "Europe/Paris".into(),
        calories: Decimal::from(450),
        protein_g: Decimal::from(protein),
        carbs_g: Decimal::from(50),
        fat_g: Decimal::new(125, 1),
    }
}

fn webhook(
    provider_user: &str,
    delivery: &str,
    workouts: Vec<ProviderWorkout>,
    sleep: Vec<ProviderSleep>,
) -> Vec<u8> {
    let body = WebhookPayload {
        delivery_id: delivery.into(),
        provider_user_id: provider_user.into(),
        workouts,
        sleep,
    };
    serde_json::to_vec(&body).unwrap_or_default()
}

/// Profile, catalog, meals and a meal plan.
async fn eat(world: &World) {
    let meta = &world.meta;
    let n = &world.nutrition;
    let update = UpdateProfile {
        display_name: Some("Corpus Keeper".into()),
        ..Default::default()
    };
    world
        .identity
        .update_profile(meta, update)
        .await
        .expect("profile");
    let email = format!("keeper-{}@example.org", meta.user.as_str().to_lowercase());
    world
        .identity
        .change_email(meta, &email, "correct horse battery")
        .await
        .expect("email");
    world
        .identity
        .change_password(
            meta,
            "correct horse battery",
            "battery horse staple correct",
        )
        .await
        .expect("password");
    let nutrients = Nutrients {
        calories: Decimal::from(520),
        protein_g: Decimal::from(32),
        carbs_g: Decimal::from(61),
        fat_g: Decimal::from(14),
    };
    let recipe = CurateRecipe {
        name: "Lentil soup".into(),
        category: "soups".into(),
        nutrients,
    };
    let recipe = n.curate_recipe(meta, recipe).await.expect("recipe").value;
    let plan = CurateMealPlan {
        name: "Plant week".into(),
        category: "vegetarian".into(),
        recipes: vec![recipe.clone()],
    };
    n.curate_meal_plan(meta, plan).await.expect("plan");
    let breakfast = n
        .log_meal(meta, meal("Porridge", ago(world, 30), 18))
        .await
        .expect("meal")
        .value;
    let lunch = n
        .log_meal(meta, meal("Salad", ago(world, 26), 22))
        .await
        .expect("meal")
        .value;
    // Edited onto the previous day: the event carries both days' totals.
    let edit = EditMeal {
        meal_id: breakfast.meal_id,
        meal: meal("Porridge with nuts", ago(world, 50), 24),
    };
    n.edit_meal(meta, edit).await.expect("edit");
    n.delete_meal(meta, &lunch.meal_id).await.expect("delete");
    let today = today(world);
    let planned = |name: &str| ScheduleMeal {
        day: today,
        name: name.into(),
        recipe_id: Some(recipe.clone()),
    };
    let soup = n
        .schedule_meal(meta, planned("Soup"))
        .await
        .expect("schedule")
        .value;
    let eaten = EatScheduledMeal {
        day: today,
        scheduled_meal_id: soup.scheduled_meal_id,
        eaten_at: ago(world, 1),
        timezone: "Europe/Paris".into(),
        nutrients: None,
    };
    n.eat_scheduled_meal(meta, eaten).await.expect("eaten");
    let spare = n
        .schedule_meal(meta, planned("Spare soup"))
        .await
        .expect("schedule")
        .value;
    n.remove_scheduled_meal(meta, today, &spare.scheduled_meal_id)
        .await
        .expect("removed");
}

/// Workouts and sleep, by hand and from a wearable (delivered, then corrected), a
/// training block and goals.
async fn move_and_sleep(world: &World) {
    let meta = &world.meta;
    let run = RecordWorkout {
        sport: "run".into(),
        started_at: ago(world, 28),
        timezone: "Europe/Paris".into(),
        duration_s: 2_400,
        distance_m: Some(6_200),
        calories: Some(410),
        perceived_effort: Some(7),
    };
    world
        .activity
        .record_workout(meta, run)
        .await
        .expect("workout");
    let night = RecordSleep {
        start: ago(world, 40),
        end: ago(world, 32),
        timezone: "Europe/Paris".into(),
        score: 81,
        stages: SleepStages {
            awake_min: 20,
            light_min: 250,
            deep_min: 90,
            rem_min: 120,
        },
    };
    world.sleep.record_sleep(meta, night).await.expect("sleep");
    let block = StartTrainingBlock {
        start_day: today(world),
        weeks: 4,
        focus: "base building".into(),
    };
    let block = world
        .activity
        .start_training_block(meta, block)
        .await
        .expect("block")
        .value;
    world
        .activity
        .end_training_block(
            meta,
            block.start_day,
            &block.training_block_id,
            block.start_day,
        )
        .await
        .expect("block ended");
    for (kind, target) in [
        (GoalKind::WeeklyWorkoutCount, 3),
        (GoalKind::NightlySleepHours, 7),
    ] {
        let goal = CreateGoal {
            kind,
            target: Decimal::from(target),
            title: "Keep going".into(),
            timezone: Some("Europe/Paris".into()),
        };
        let goal = world
            .goals
            .create_goal(meta, goal)
            .await
            .expect("goal")
            .value;
        if kind == GoalKind::NightlySleepHours {
            world
                .goals
                .change_status(meta, &goal.goal_id, GoalStatus::Paused)
                .await
                .expect("paused");
        }
    }
}

/// The provider's account of this user.
fn provider_user(user: &UserId) -> String {
    format!("corpus-{}", user.as_str().to_lowercase())
}

async fn connect(world: &World) {
    world
        .connect_as(&provider_user(&world.meta.user))
        .await
        .expect("connected");
}

/// Two deliveries: a workout and a night, then the same corrected by the provider.
async fn sync_wearable(world: &World) {
    let pu = provider_user(&world.meta.user);
    for (revision, delivery) in [(1_i64, "d-1"), (2, "d-2")] {
        let workout = ProviderWorkout {
            external_id: ExternalId::parse("ride-1").expect("id"),
            sport: "ride".into(),
            started_at: ago(world, 20),
            duration_s: 3_000 + 60 * revision as u32,
            distance_m: Some(25_000),
            calories: Some(600),
            updated_at: Some(ago(world, 10 - revision)),
        };
        let sleep = ProviderSleep {
            external_id: ExternalId::parse("night-1").expect("id"),
            start: ago(world, 16),
            end: ago(world, 9 - revision),
            score: 70 + revision as u8,
            stages: SleepStages::default(),
            updated_at: Some(ago(world, 10 - revision)),
        };
        let body = webhook(&pu, delivery, vec![workout], vec![sleep]);
        world
            .receive_signed(&body, now_epoch_seconds())
            .await
            .expect("webhook");
    }
}

/// Every outbox item of `user` or of no user, in every table.
async fn outbox_of(store: &dyn Store, user: &UserId) -> Vec<Stored> {
    let mut found = Vec::new();
    for table in Context::ALL {
        found.extend(
            crate::snapshot::scan_all(store, table, None, 500)
                .await
                .iter()
                .filter_map(stored)
                .filter(|s| s.envelope.user_id.as_ref().is_none_or(|u| u == user)),
        );
    }
    found.sort_by(|a, b| {
        (a.envelope.recorded_at, &a.envelope.event_id)
            .cmp(&(b.envelope.recorded_at, &b.envelope.event_id))
    });
    found
}

fn stored(item: &Item) -> Option<Stored> {
    Some(Stored {
        envelope: outbox_event(item)?.ok()?,
        pk: item.get("pk").and_then(Value::as_str)?.to_owned(),
    })
}

/// A newly registered user of `world`, as the caller of the next commands.
async fn registered(world: &World) -> CommandMeta {
    let register = Register {
        email: format!("{}@example.org", world.meta.user.as_str().to_lowercase()),
        password: "correct horse battery".into(),
        display_name: "Corpus".into(),
        timezone: "Europe/Paris".into(),
        units: Default::default(),
    };
    let user = world
        .identity
        .register(&world.meta, register)
        .await
        .expect("register");
    CommandMeta::new(user.value)
}

/// Runs the scenario on `store` (fresh), every subscription applying what is committed.
pub async fn record(store: Arc<dyn Store>) -> Recorded {
    let capture = Arc::new(capturing(store));
    let mut keeper = World::with_clock(capture.clone(), scenario_clock());
    keeper.meta = registered(&keeper).await;
    connect(&keeper).await;
    eat(&keeper).await;
    move_and_sleep(&keeper).await;
    sync_wearable(&keeper).await;
    let mut events = capture.observer().take();
    events.extend(
        deliver(
            0,
            &capture,
            Delivery::InOrder,
            events.clone(),
            &keeper.clock,
        )
        .await,
    );
    keeper
        .integrations
        .disconnect(&keeper.meta, "sandbox")
        .await
        .expect("disconnect");
    let mut leaver = World::with_clock(capture.clone(), scenario_clock());
    leaver.meta = registered(&leaver).await;
    leaver
        .identity
        .request_deletion(&leaver.meta, "correct horse battery")
        .await
        .expect("deletion");
    let more = capture.observer().take();
    events.extend(more.iter().cloned());
    events.extend(deliver(0, &capture, Delivery::InOrder, more, &leaver.clock).await);
    let history = outbox_of(&*capture, &keeper.meta.user).await;
    Recorded { events, history }
}
