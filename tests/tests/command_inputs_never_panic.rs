//! No input makes a command handler panic or reach storage with something storage would
//! reject: random inputs go through every handler on the embedded store, and each
//! answer must be a success or a typed command error (never a storage validation error,
//! which would mean a validator let bad input through).

use commands::CommandError;
use commands::activity::{RecordWorkout, StartTrainingBlock};
use commands::goals::CreateGoal;
use commands::identity::{Register, UpdateProfile};
use commands::nutrition::{
    CatalogKind, CurateMealPlan, CurateRecipe, EditMeal, MealInput, ScheduleMeal,
};
use commands::sleep::RecordSleep;
use events_schema::events::goals::{GoalKind, GoalStatus};
use events_schema::events::identity::Units;
use events_schema::events::integrations::{ProviderSleep, ProviderWorkout};
use events_schema::events::sleep::SleepStages;
use events_schema::ids::{ExternalId, GoalId, MealId};
use events_schema::time::{Day, Timestamp};
use infra::StoreError;
use proptest::prelude::*;
use rust_decimal::Decimal;
use std::sync::OnceLock;
use vitals_tests::commands::World;
use vitals_tests::fuzz::{self, Fixture};

fn fixture() -> &'static Fixture<World> {
    static FIXTURE: OnceLock<Fixture<World>> = OnceLock::new();
    fuzz::fixture(&FIXTURE, |store| World::new(store))
}

/// A success, or a typed refusal; never a storage-level rejection of the input.
#[track_caller]
fn acceptable<T: std::fmt::Debug>(result: Result<T, CommandError>) {
    if let Err(CommandError::Store(StoreError::Validation(message))) = &result {
        panic!("input reached storage unvalidated: {message}");
    }
    if let Err(CommandError::Store(
        error @ (StoreError::Backend(_) | StoreError::TransactionCanceled { .. }),
    )) = &result
    {
        panic!("storage failed on user input: {error}");
    }
}

fn decimal() -> impl Strategy<Value = Decimal> {
    prop_oneof![
        (any::<i64>(), 0u32..29).prop_map(|(m, s)| Decimal::new(m, s)),
        (0i64..20_000, 0u32..3).prop_map(|(m, s)| Decimal::new(m, s)),
    ]
}

fn timestamp() -> impl Strategy<Value = Timestamp> {
    prop_oneof![
        (-62_000_000_000_000i64..250_000_000_000_000)
            .prop_filter_map("in range", Timestamp::from_millis),
        (946_684_800_000i64..1_800_000_000_000).prop_filter_map("in range", Timestamp::from_millis),
    ]
}

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        "[ -~]{0,300}",
        Just(String::new()),
        "\\PC{1,20}"
    ]
}

fn timezone() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("Europe/Paris".to_owned()),
        Just("UTC".to_owned()),
        any::<String>()
    ]
}

fn meal() -> impl Strategy<Value = MealInput> {
    (
        text(),
        timestamp(),
        timezone(),
        decimal(),
        decimal(),
        decimal(),
        decimal(),
    )
        .prop_map(
            |(name, eaten_at, timezone, calories, protein_g, carbs_g, fat_g)| MealInput {
                name,
                eaten_at,
                timezone,
                calories,
                protein_g,
                carbs_g,
                fat_g,
            },
        )
}

fn day() -> impl Strategy<Value = Day> {
    (1900i32..2200, 1u32..13, 1u32..29).prop_filter_map("valid date", |(y, m, d)| {
        chrono::NaiveDate::from_ymd_opt(y, m, d).map(Day::new)
    })
}

fn external_id() -> impl Strategy<Value = ExternalId> {
    "[a-zA-Z0-9-]{1,20}".prop_map(|s| ExternalId::parse(&s).expect("valid id"))
}

fn goal_kind() -> impl Strategy<Value = GoalKind> {
    prop_oneof![
        Just(GoalKind::WeeklyWorkoutCount),
        Just(GoalKind::WeeklyActiveMinutes),
        Just(GoalKind::DailyProteinGrams),
        Just(GoalKind::WeeklyDistanceKm),
        Just(GoalKind::NightlySleepHours),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn nutrition_commands_take_any_input(meal in meal(), other in meal(), name in text(), day in day(), category in text()) {
        let f = fixture();
        let w = &f.under_test;
        f.runtime.block_on(async {
            acceptable(w.nutrition.log_meal(&w.meta, meal.clone()).await);
            acceptable(w.nutrition.edit_meal(&w.meta, EditMeal { meal_id: MealId::generate(), meal: other }).await);
            acceptable(w.nutrition.delete_meal(&w.meta, &MealId::generate()).await);
            acceptable(w.nutrition.schedule_meal(&w.meta, ScheduleMeal { day, name, recipe_id: None }).await);
            acceptable(w.nutrition.browse_catalog(CatalogKind::Recipe, &category, 5, None).await);
            let nutrients = events_schema::events::nutrition::Nutrients { calories: meal.calories, protein_g: meal.protein_g, carbs_g: meal.carbs_g, fat_g: meal.fat_g };
            acceptable(w.nutrition.curate_recipe(&w.meta, CurateRecipe { name: meal.name.clone(), category: category.clone(), nutrients }).await);
            acceptable(w.nutrition.curate_meal_plan(&w.meta, CurateMealPlan { name: meal.name.clone(), category, recipes: vec![] }).await);
        });
    }

    #[test]
    fn activity_and_sleep_commands_take_any_input(
        sport in text(), start in timestamp(), end in timestamp(), tz in timezone(), duration in any::<u32>(),
        distance in any::<Option<u32>>(), calories in any::<Option<u32>>(), score in any::<u8>(),
        stages in (any::<u32>(), any::<u32>(), any::<u32>(), any::<u32>()), weeks in any::<u8>(), focus in text(),
        external in external_id(), day in day(), effort in any::<Option<u8>>(),
    ) {
        let f = fixture();
        let w = &f.under_test;
        let provider = vitals_tests::commands::garmin();
        let stages = SleepStages { awake_min: stages.0, light_min: stages.1, deep_min: stages.2, rem_min: stages.3 };
        f.runtime.block_on(async {
            let workout = RecordWorkout { sport: sport.clone(), started_at: start, timezone: tz.clone(), duration_s: duration, distance_m: distance, calories, perceived_effort: effort };
            acceptable(w.activity.record_workout(&w.meta, workout).await);
            let synced = ProviderWorkout { external_id: external.clone(), sport, started_at: start, duration_s: duration, distance_m: distance, calories, updated_at: None };
            acceptable(w.activity.sync_workout(&w.meta, &provider, &tz, &synced).await);
            acceptable(w.activity.start_training_block(&w.meta, StartTrainingBlock { start_day: day, weeks, focus }).await);
            acceptable(w.sleep.record_sleep(&w.meta, RecordSleep { start, end, timezone: tz.clone(), score, stages }).await);
            let night = ProviderSleep { external_id: external, start, end, score, stages, updated_at: None };
            acceptable(w.sleep.sync_sleep(&w.meta, &provider, &tz, &night).await);
        });
    }

    #[test]
    fn goal_identity_and_integration_commands_take_any_input(
        kind in goal_kind(), target in decimal(), title in text(), email in text(), password in text(),
        name in text(), tz in timezone(), state in text(), code in text(), signature in text(), stamp in text(),
        body in prop_oneof![any::<Vec<u8>>(), "[ -~]{0,200}".prop_map(String::into_bytes)], cell in text(), provider in text(),
    ) {
        let f = fixture();
        let w = &f.under_test;
        f.runtime.block_on(async {
            acceptable(w.goals.create_goal(&w.meta, CreateGoal { kind, target, title, timezone: None }).await);
            acceptable(w.goals.change_status(&w.meta, &GoalId::generate(), GoalStatus::Paused).await);
            // Registration only hashes a password once every field is valid.
            let registration = Register { email: email.clone(), password: password.clone().into(), display_name: name.clone(), timezone: tz.clone(), units: Units::Metric };
            acceptable(w.identity.register(&w.meta, registration).await);
            acceptable(w.identity.login(&email, &password).await);
            acceptable(w.identity.update_profile(&w.meta, UpdateProfile { display_name: Some(name), timezone: Some(tz), units: None }).await);
            acceptable(w.identity.change_email(&w.meta, &email, &password).await);
            acceptable(w.integrations.start_connect(&w.meta, &provider).await);
            acceptable(w.integrations.complete_connect(&w.meta, "sandbox", &state, &code).await);
            acceptable(w.integrations.receive_webhook("sandbox", &stamp, &signature, &body).await);
            acceptable(w.environment.weather(&cell, chrono::Utc::now()).await);
        });
    }
}
