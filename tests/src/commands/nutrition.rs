//! Nutrition command specifications, the daily-summary invariant under concurrency
//! included.

use super::{
    Held, World, assert_invalid, assert_not_found, items_of, meanwhile, value, with_retry,
};
use crate::faults::{ConflictOnce, writes_sort_key};
use commands::nutrition::{
    CatalogKind, CurateMealPlan, CurateRecipe, EatScheduledMeal, EditMeal, MealInput, MealRecord,
    ScheduleMeal,
};
use commands::{CommandError, Outcome};
use events_schema::Context;
use events_schema::envelope::outbox_event;
use events_schema::events::nutrition::{MealEdited, MealLogged, Nutrients};
use events_schema::ids::{MealId, ScheduledMealId};
use events_schema::time::{Clock, Day, Timestamp};
use infra::Store;
use infra::observed::Row;
use rust_decimal::Decimal;
use std::collections::BTreeMap;
use std::sync::Arc;

fn dec(v: &str) -> Decimal {
    v.parse().expect("decimal")
}

pub fn meal(at: &str, calories: &str, protein: &str) -> MealInput {
    MealInput {
        name: "Oats".into(),
        eaten_at: Timestamp::parse(at).expect("timestamp"),
        timezone: "Europe/Paris".into(),
        calories: dec(calories),
        protein_g: dec(protein),
        carbs_g: dec("10"),
        fat_g: dec("2.5"),
    }
}

/// The first meal most cases log: 08:00 UTC on 2026-03-01, 300 kcal, 20 g protein.
fn breakfast() -> MealInput {
    meal("2026-03-01T08:00:00.000Z", "300", "20")
}

/// Logs [`breakfast`] and then `second`; breakfast's id.
async fn breakfast_and(world: &World, second: MealInput) -> MealId {
    let id = world.log_meal(breakfast()).await;
    world.log_meal(second).await;
    id
}

fn day(raw: &str) -> Day {
    Day::parse(raw).expect("day")
}

/// Asserts the user has one meal, `id`, stored under the day `on`.
async fn assert_only_meal(world: &World, on: &str, id: &MealId) {
    let meals = world.items(Context::Nutrition, "MEAL#").await;
    assert_eq!(meals.len(), 1);
    assert_eq!(meals[0]["sk"], serde_json::json!(format!("MEAL#{on}#{id}")));
}

/// Schedules `input` for the user, without a key; the scheduled meal's id.
async fn schedule(world: &World, input: ScheduleMeal) -> ScheduledMealId {
    value(world.nutrition.schedule_meal(&world.meta, input).await).scheduled_meal_id
}

pub async fn log_meal_writes_meal_summary_and_event(store: Arc<dyn Store>) {
    let world = World::new(store);
    // 23:30 UTC is already the next day in Paris.
    let id = world
        .log_meal(meal("2026-03-01T23:30:00.000Z", "420.5", "30"))
        .await;
    assert_only_meal(&world, "2026-03-02", &id).await;
    let summary = world.summary(day("2026-03-02")).await;
    assert_eq!(
        (summary.meals, summary.totals.calories, summary.version),
        (1, dec("420.5"), 1)
    );
    let events = world.events(Context::Nutrition).await;
    let logged: MealLogged = events[0].decode().expect("typed");
    assert_eq!(logged.day_totals.totals.protein_g, dec("30"));
    assert_eq!(events[0].user_id.as_ref(), Some(&world.meta.user));
}

pub async fn log_meal_costs_one_read_and_one_transaction(store: Arc<dyn Store>) {
    let world = World::new(store);
    world.log_meal(breakfast()).await;
    world.store.take();
    world
        .nutrition
        .log_meal(
            &world.keyed("m-2"),
            meal("2026-03-01T12:00:00.000Z", "500", "35"),
        )
        .await
        .expect("logs");
    let counts = world.store.take();
    assert!(counts.reads() <= 1, "{counts:?}");
    assert_eq!(
        (counts.transactions, counts.single_writes),
        (1, 0),
        "{counts:?}"
    );
}

pub async fn log_meal_repeated_with_the_same_key_writes_nothing(store: Arc<dyn Store>) {
    let world = World::new(store);
    let input = breakfast();
    let first = world
        .nutrition
        .log_meal(&world.keyed("meal-1"), input.clone())
        .await
        .expect("logs");
    let again = world
        .nutrition
        .log_meal(&world.keyed("meal-1"), input.clone())
        .await
        .expect("retry");
    assert_eq!((again.value, again.replayed), (first.value, true));
    assert_eq!(world.events(Context::Nutrition).await.len(), 1);
    assert_eq!(world.summary(day("2026-03-01")).await.meals, 1);
    let different = world
        .nutrition
        .log_meal(
            &world.keyed("meal-1"),
            meal("2026-03-01T08:00:00.000Z", "301", "20"),
        )
        .await;
    assert!(
        matches!(different, Err(CommandError::IdempotencyKeyReused)),
        "{different:?}"
    );
}

pub async fn edit_meal_within_a_day_updates_the_summary(store: Arc<dyn Store>) {
    let world = World::new(store);
    let id = breakfast_and(&world, meal("2026-03-01T12:00:00.000Z", "500", "30")).await;
    let edit = EditMeal {
        meal_id: id.clone(),
        meal: meal("2026-03-01T09:00:00.000Z", "350", "25"),
    };
    let keyed = world.keyed("e-1");
    with_retry(|| world.nutrition.edit_meal(&keyed, edit.clone())).await;
    let summary = world.summary(day("2026-03-01")).await;
    assert_eq!(
        (
            summary.meals,
            summary.totals.calories,
            summary.totals.protein_g
        ),
        (2, dec("850"), dec("55"))
    );
    assert_eq!(
        world.event_types(Context::Nutrition).await,
        vec!["MealLogged", "MealLogged", "MealEdited"]
    );
}

pub async fn edit_meal_to_another_day_moves_it_and_both_summaries(store: Arc<dyn Store>) {
    let world = World::new(store);
    let id = world.log_meal(breakfast()).await;
    world
        .nutrition
        .edit_meal(
            &world.meta,
            EditMeal {
                meal_id: id.clone(),
                meal: meal("2026-03-03T08:00:00.000Z", "300", "20"),
            },
        )
        .await
        .expect("moves");
    assert_only_meal(&world, "2026-03-03", &id).await;
    let left = world.summary(day("2026-03-01")).await;
    let arrived = world.summary(day("2026-03-03")).await;
    assert_eq!((left.meals, left.totals.calories), (0, Decimal::ZERO));
    assert_eq!((arrived.meals, arrived.totals.calories), (1, dec("300")));
    let edited: MealEdited = world.events(Context::Nutrition).await[1]
        .decode()
        .expect("typed");
    assert_eq!(edited.previous_day, day("2026-03-01"));
    assert_eq!(edited.day_totals.len(), 2);
    // The meal is still found by its id after moving.
    world
        .nutrition
        .delete_meal(&world.meta, &id)
        .await
        .expect("deletes");
    assert_eq!(world.summary(day("2026-03-03")).await.meals, 0);
}

pub async fn delete_meal_takes_it_out_of_the_summary(store: Arc<dyn Store>) {
    let world = World::new(store);
    let id = breakfast_and(&world, meal("2026-03-01T09:00:00.000Z", "100", "5")).await;
    let keyed = world.keyed("d-1");
    with_retry(|| world.nutrition.delete_meal(&keyed, &id)).await;
    let missing = world.nutrition.delete_meal(&world.meta, &id).await;
    assert!(
        matches!(missing, Err(CommandError::NotFound("meal"))),
        "{missing:?}"
    );
    let summary = world.summary(day("2026-03-01")).await;
    assert_eq!((summary.meals, summary.totals.calories), (1, dec("100")));
    assert_eq!(
        world.event_types(Context::Nutrition).await,
        vec!["MealLogged", "MealLogged", "MealDeleted"]
    );
}

pub async fn meal_validation_names_the_field_and_writes_nothing(store: Arc<dyn Store>) {
    let world = World::new(store);
    let base = breakfast();
    let cases: Vec<(&str, MealInput)> = vec![
        (
            "calories",
            MealInput {
                calories: dec("-1"),
                ..base.clone()
            },
        ),
        (
            "calories",
            MealInput {
                calories: dec("10000.1"),
                ..base.clone()
            },
        ),
        (
            "protein_g",
            MealInput {
                protein_g: dec("1000.5"),
                ..base.clone()
            },
        ),
        (
            "fat_g",
            MealInput {
                fat_g: dec("1.25"),
                ..base.clone()
            },
        ),
        (
            "name",
            MealInput {
                name: "  ".into(),
                ..base.clone()
            },
        ),
        (
            "timezone",
            MealInput {
                timezone: "UTC+2".into(),
                ..base.clone()
            },
        ),
        (
            "eaten_at",
            MealInput {
                eaten_at: Timestamp::parse("1999-12-31T00:00:00.000Z").expect("ts"),
                ..base.clone()
            },
        ),
    ];
    for (field, input) in cases {
        assert_invalid(world.nutrition.log_meal(&world.meta, input).await, field);
    }
    assert_eq!(
        world.store.counts().total(),
        0,
        "validation happens before any request"
    );
}

/// Sums of meals per day, from the meal items themselves.
async fn sums_of_meals(world: &World) -> BTreeMap<String, (u32, Nutrients)> {
    let mut sums: BTreeMap<String, (u32, Nutrients)> = BTreeMap::new();
    for item in world.items(Context::Nutrition, "MEAL#").await {
        let record: commands::nutrition::MealRecord =
            serde_json::from_value(serde_json::Value::Object(item)).expect("meal");
        let entry = sums.entry(record.day.to_string()).or_default();
        entry.0 += 1;
        entry.1 = entry.1.plus(record.nutrients);
    }
    sums
}

/// Concurrent writers (log, edit across days, delete) on the same user, two in each of
/// three processes: every daily summary still equals the sum of its day's meals.
/// Within a process the per-user writer lock takes a user's writes in turn; between
/// processes they race, and the optimistic conditions decide. Operations are drawn
/// from a seeded generator so a failure can be replayed.
pub async fn concurrent_writers_keep_every_summary_equal_to_its_meals(store: Arc<dyn Store>) {
    let first = World::in_another_process(store.clone());
    let user = first.meta.user.clone();
    let processes: Vec<Arc<World>> = std::iter::once(first)
        .chain((1..3).map(|_| World::in_another_process(store.clone()).as_user(user.clone())))
        .map(Arc::new)
        .collect();
    let writers = 6;
    let ops_per_writer = 12;
    let mut tasks = Vec::new();
    for writer in 0..writers {
        let world = processes[writer % processes.len()].clone();
        tasks.push(tokio::spawn(async move {
            let mut rng = (writer as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
            let mut next = move |n: u64| {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                rng % n
            };
            let mut mine = Vec::new();
            let mut gave_up = 0;
            for _ in 0..ops_per_writer {
                let at = format!("2026-03-0{}T1{}:00:00.000Z", 1 + next(3), next(10));
                let calories = format!("{}.{}", 50 + next(900), next(10));
                let input = meal(&at, &calories, &format!("{}", next(80)));
                let result = match (next(4), mine.is_empty()) {
                    (0, false) => {
                        let id = mine.remove(next(mine.len() as u64) as usize);
                        let result = world
                            .nutrition
                            .delete_meal(&world.meta, &id)
                            .await
                            .map(|_| ());
                        if result.is_err() {
                            mine.push(id);
                        }
                        result
                    }
                    (1, false) => {
                        let id = mine[next(mine.len() as u64) as usize].clone();
                        let edit = EditMeal {
                            meal_id: id,
                            meal: input,
                        };
                        world
                            .nutrition
                            .edit_meal(&world.meta, edit)
                            .await
                            .map(|_| ())
                    }
                    _ => world
                        .nutrition
                        .log_meal(&world.meta, input)
                        .await
                        .map(|o| mine.push(o.value.meal_id)),
                };
                // Giving up after losing every race is allowed (nothing is written);
                // any other error is a bug.
                match result {
                    Ok(()) => {}
                    Err(CommandError::Contention) => gave_up += 1,
                    Err(e) => panic!("unexpected error: {e:?}"),
                }
            }
            gave_up
        }));
    }
    let mut gave_up = 0;
    for task in tasks {
        gave_up += task.await.expect("writer");
    }
    let transactions: usize = processes
        .iter()
        .map(|p| p.store.counts().transactions)
        .sum();
    let operations = writers * ops_per_writer;
    eprintln!(
        "{operations} operations, {transactions} transactions, {gave_up} gave up after losing every race"
    );
    // Every operation that did not lose a race is one transaction: more means the
    // processes raced. (How many may give up needs no check: a lost attempt needs
    // another process's commit, so at most 5 of 72 can lose all 25 attempts.)
    assert!(
        transactions > operations,
        "the three processes never raced: {transactions} transactions for {operations} operations"
    );
    let world = &processes[0];
    let sums = sums_of_meals(world).await;
    let summaries = world.items(Context::Nutrition, "DAILY_SUMMARY#").await;
    assert!(!summaries.is_empty());
    for item in summaries {
        let summary: commands::nutrition::SummaryRecord =
            serde_json::from_value(serde_json::Value::Object(item)).expect("summary");
        let (meals, totals) = sums
            .get(&summary.day.to_string())
            .copied()
            .unwrap_or_default();
        assert_eq!(summary.meals, meals, "meal count of {}", summary.day);
        assert_eq!(summary.totals, totals, "totals of {}", summary.day);
    }
}

/// A meal logged while another process moves the day's summary on (a writer this
/// process's per-user lock does not hold back): the transaction is cancelled on the
/// summary, the command decides again on the summary the cancellation returned, and the
/// day counts both writers' meals.
pub async fn a_meal_that_loses_the_race_for_its_summary_is_logged_on_the_fresh_one(
    store: Arc<dyn Store>,
) {
    let held = breakfast_held(&store).await;
    let world = held.world.clone();
    // Meanwhile another process logs lunch on the same day: its summary write lands
    // first.
    let other = World::in_another_process(store.clone()).as_user(world.meta.user.clone());
    let lunch = meal("2026-03-01T12:00:00.000Z", "500", "10");
    meanwhile(other.log_meal(lunch.clone())).await;
    let logged = held.release().await.expect("the meal is logged");
    assert_eq!(
        reads_and_transactions(&world),
        (1, 2),
        "one read before the race, then the retry on the summary the cancellation returned"
    );
    let day = day("2026-03-01");
    let after = world.summary(day).await;
    assert_eq!(
        (after.meals, after.totals, after.version),
        (2, nutrients(&lunch).plus(nutrients(&breakfast())), 2),
        "the summary counts both meals, one version on from theirs"
    );
    let sums = sums_of_meals(&world).await;
    assert_eq!(
        sums.get(&day.to_string()),
        Some(&(after.meals, after.totals))
    );
    assert_eq!(logged.value.day, day);
}

/// A meal whose transaction is cancelled as a conflict (another transaction touched
/// the day's summary at the same moment; the cancellation carries no item): the command
/// reads the summary again and commits on its next attempt.
pub async fn a_meal_cancelled_as_a_conflict_is_logged_on_a_fresh_read(store: Arc<dyn Store>) {
    let world = World::new(ConflictOnce::on(store));
    let logged = world.nutrition.log_meal(&world.meta, breakfast()).await;
    logged.expect("logged on the second attempt");
    assert_eq!(
        reads_and_transactions(&world),
        (2, 2),
        "a read, the conflict, a fresh read, the commit"
    );
    let summary = world.summary(day("2026-03-01")).await;
    let expected = (1, nutrients(&breakfast()), 1);
    assert_eq!((summary.meals, summary.totals, summary.version), expected);
    assert_eq!(world.count(Context::Nutrition, "MEAL#").await, 1);
}

/// A keyed meal whose transaction met another one on its idempotency record alone
/// (every other action's reason `None`, as DynamoDB marks just the item in conflict):
/// the conflict is the command's to retry too, and the meal is logged once.
pub async fn a_keyed_meal_whose_record_met_a_conflict_is_logged_on_the_next_attempt(
    store: Arc<dyn Store>,
) {
    let at_record = |row: &Row<'_>| writes_sort_key(row, "IDEMPOTENCY#", "");
    let world = World::new(ConflictOnce::at(store, at_record));
    let logged = world
        .nutrition
        .log_meal(&world.keyed("breakfast"), breakfast())
        .await;
    assert!(!logged.expect("logged on the second attempt").replayed);
    assert_eq!(reads_and_transactions(&world), (2, 2));
    assert_eq!(world.count(Context::Nutrition, "MEAL#").await, 1);
    assert_eq!(
        world.event_types(Context::Nutrition).await,
        vec!["MealLogged"]
    );
}

/// A meal decided before the user's erasure reached nutrition and committed after it
/// (its transaction held at the store while the eraser writes the context's tombstone):
/// the commit is refused as `AccountDeleted` and nothing of the meal is written.
pub async fn a_meal_committing_after_the_erasure_began_is_refused_whole(store: Arc<dyn Store>) {
    let held = breakfast_held(&store).await;
    let world = held.world.clone();
    let nutrition = infra::table::Table::<infra::table::contexts::Nutrition>::new(store.clone());
    commands::erasure::begin(&nutrition, &world.meta.user, Timestamp::now())
        .await
        .expect("the eraser's tombstone");
    let refused = held.release().await;
    assert!(
        matches!(refused, Err(CommandError::AccountDeleted)),
        "{refused:?}"
    );
    let written = world.items(Context::Nutrition, "").await;
    assert!(written.is_empty(), "the user's partition holds {written:?}");
}

/// A [`breakfast`] being logged by a world of its own on `store`, its transaction held
/// at the store (at its day's summary) until [`Held::release`].
async fn breakfast_held(store: &Arc<dyn Store>) -> Held<Outcome<MealRecord>> {
    let at_summary = |row: &Row<'_>| writes_sort_key(row, "DAILY_SUMMARY#", "");
    Held::start(store, at_summary, |world| async move {
        world.nutrition.log_meal(&world.meta, breakfast()).await
    })
    .await
}

/// The reads and transactions the world's commands have cost so far.
fn reads_and_transactions(world: &World) -> (usize, usize) {
    let counts = world.store.counts();
    (counts.reads(), counts.transactions)
}

/// What `meal` adds to its day.
fn nutrients(meal: &MealInput) -> Nutrients {
    Nutrients {
        calories: meal.calories,
        protein_g: meal.protein_g,
        carbs_g: meal.carbs_g,
        fat_g: meal.fat_g,
    }
}

pub async fn scheduled_meals_and_the_catalog(store: Arc<dyn Store>) {
    let world = World::new(store.clone());
    let scheduled = ScheduleMeal {
        day: day("2026-04-01"),
        name: "Lentil soup".into(),
        recipe_id: None,
    };
    let keyed = world.keyed("s-1");
    let id = with_retry(|| world.nutrition.schedule_meal(&keyed, scheduled.clone()))
        .await
        .scheduled_meal_id;
    let planned = format!("SCHEDULED_MEAL#2026-04-01#{id}");
    world
        .assert_one_row_and_event(Context::Nutrition, &planned, "MealScheduled")
        .await;

    let category = format!(
        "soups-{}",
        events_schema::ids::UserId::generate()
            .as_str()
            .to_lowercase()
    );
    let nutrients = Nutrients {
        calories: dec("250"),
        protein_g: dec("12"),
        carbs_g: dec("30"),
        fat_g: dec("5"),
    };
    let mut recipes = Vec::new();
    for name in ["Minestrone", "Borscht", "Gazpacho"] {
        let recipe = CurateRecipe {
            name: name.into(),
            category: category.clone(),
            nutrients,
        };
        let key = format!("r-{name}");
        let id = world
            .nutrition
            .curate_recipe(&world.keyed(&key), recipe.clone())
            .await
            .expect("curates")
            .value;
        let again = world
            .nutrition
            .curate_recipe(&world.keyed(&key), recipe)
            .await
            .expect("retry");
        assert_eq!(
            (again.value, again.replayed),
            (id.clone(), true),
            "a retried curation returns the first id"
        );
        recipes.push(id);
    }
    let plan = CurateMealPlan {
        name: "Soup week".into(),
        category: category.clone(),
        recipes: recipes.clone(),
    };
    let plan_id = world
        .nutrition
        .curate_meal_plan(&world.keyed("plan"), plan.clone())
        .await
        .expect("curates plan")
        .value;
    assert_eq!(
        world
            .nutrition
            .curate_meal_plan(&world.keyed("plan"), plan.clone())
            .await
            .expect("retry")
            .value,
        plan_id
    );
    let plans = world
        .nutrition
        .browse_catalog(CatalogKind::MealPlan, &category, 10, None)
        .await
        .expect("browses");
    assert_eq!(plans.items.len(), 1);
    assert_invalid(
        world
            .nutrition
            .curate_meal_plan(
                &world.meta,
                CurateMealPlan {
                    recipes: vec![],
                    ..plan.clone()
                },
            )
            .await,
        "recipes",
    );
    // A plan lists only recipes of the catalog.
    let unknown = world
        .nutrition
        .curate_meal_plan(
            &world.meta,
            CurateMealPlan {
                recipes: vec![recipes[0].clone(), events_schema::ids::RecipeId::generate()],
                ..plan
            },
        )
        .await;
    assert!(
        matches!(unknown, Err(CommandError::NotFound("recipe"))),
        "{unknown:?}"
    );
    // One event per curated item, in the item's own partition, belonging to no user.
    let recipe_events = items_of(
        &*store,
        Context::Nutrition,
        &format!("RECIPE#{}", recipes[0]),
        "EVT#",
    )
    .await;
    assert_eq!(recipe_events.len(), 1);
    let envelope = outbox_event(&recipe_events[0])
        .expect("an outbox item")
        .expect("its envelope decodes");
    assert_eq!(
        (envelope.event_type.as_str(), envelope.user_id),
        ("RecipeCurated", None)
    );
    let page = world
        .nutrition
        .browse_catalog(CatalogKind::Recipe, &category, 10, None)
        .await
        .expect("browses");
    let names: Vec<&str> = page
        .items
        .iter()
        .map(|i| i["name"].as_str().expect("name"))
        .collect();
    assert_eq!(names, vec!["Borscht", "Gazpacho", "Minestrone"]);
    let first = world
        .nutrition
        .browse_catalog(CatalogKind::Recipe, &category, 2, None)
        .await
        .expect("browses");
    let rest = world
        .nutrition
        .browse_catalog(CatalogKind::Recipe, &category, 2, first.cursor)
        .await
        .expect("browses");
    assert_eq!(first.items.len() + rest.items.len(), 3);
    assert_invalid(
        world
            .nutrition
            .browse_catalog(CatalogKind::Recipe, "Soups!", 10, None)
            .await,
        "category",
    );
    // User rows never enter the catalog index; catalog rows are outside user partitions.
    assert!(
        items_of(&*store, Context::Nutrition, &world.pk(), "RECIPE")
            .await
            .is_empty()
    );
}

/// A catalog event is recorded by the handlers' clock, as a user's event is: its
/// `recorded_at` was the machine's time whatever the clock said.
pub async fn a_catalog_event_is_recorded_by_the_handlers_clock(store: Arc<dyn Store>) {
    let at = Timestamp::parse("2024-02-29T08:00:00.000Z").expect("time");
    let world = World::with_clock(store.clone(), Clock::manual(at));
    let recipe = CurateRecipe {
        name: "Porridge".into(),
        category: "breakfast".into(),
        nutrients: Nutrients {
            calories: dec("300"),
            protein_g: dec("10"),
            carbs_g: dec("50"),
            fat_g: dec("6"),
        },
    };
    let curated = world.nutrition.curate_recipe(&world.meta, recipe).await;
    let id = curated.expect("curates").value;
    let items = items_of(&*store, Context::Nutrition, &format!("RECIPE#{id}"), "EVT#").await;
    let events: Vec<_> = items.iter().filter_map(|i| outbox_event(i)?.ok()).collect();
    let times: Vec<_> = events
        .iter()
        .map(|e| (e.occurred_at, e.recorded_at))
        .collect();
    assert_eq!(times, vec![(at, at)], "{events:?}");
}

/// Taking a scheduled meal off the plan when the transaction is cancelled as a
/// conflict (nothing written) takes it off on the next attempt, where it answered
/// "not found"; curating a recipe so curates it, where it answered `Contention`.
pub async fn plans_and_the_catalog_cancelled_as_a_conflict_are_written_on_the_next_attempt(
    store: Arc<dyn Store>,
) {
    let world = World::new(store.clone());
    let day = day("2026-04-03");
    let planned = ScheduleMeal {
        day,
        name: "Salad".into(),
        recipe_id: None,
    };
    let salad = schedule(&world, planned).await;
    let conflicted = World::new(ConflictOnce::on(store.clone())).as_user(world.meta.user.clone());
    let removed = conflicted
        .nutrition
        .remove_scheduled_meal(&conflicted.meta, day, &salad);
    removed.await.expect("removed on the second attempt");
    assert_eq!(world.count(Context::Nutrition, "SCHEDULED_MEAL#").await, 0);
    assert_eq!(
        world.event_types(Context::Nutrition).await,
        vec!["MealScheduled", "ScheduledMealCleared"]
    );

    let editor = World::new(ConflictOnce::on(store));
    let recipe = CurateRecipe {
        name: "Minestrone".into(),
        category: format!("soups-{}", editor.meta.user.as_str().to_lowercase()),
        nutrients: nutrients(&breakfast()),
    };
    let curated = editor.nutrition.curate_recipe(&editor.meta, recipe).await;
    curated.expect("curated on the second attempt");
    assert_eq!(
        (
            conflicted.store.counts().transactions,
            editor.store.counts().transactions
        ),
        (2, 2)
    );
}

/// Eating a scheduled meal logs it and takes it off the plan in one transaction: the
/// day's summary counts it once; eating it twice at once, or after its removal, finds
/// nothing; a retry with the key answers the first meal.
pub async fn a_scheduled_meal_is_eaten_once(store: Arc<dyn Store>) {
    let world = World::new(store.clone());
    let plan_day = Day::parse("2026-04-02").expect("day");
    let planned = |name: &str| ScheduleMeal {
        day: plan_day,
        name: name.into(),
        recipe_id: None,
    };
    let soup = schedule(&world, planned("Soup")).await;
    let eat = |id: &events_schema::ids::ScheduledMealId| EatScheduledMeal {
        day: plan_day,
        scheduled_meal_id: id.clone(),
        eaten_at: Timestamp::parse("2026-04-02T12:30:00.000Z").expect("time"),
        timezone: "UTC".into(),
        nutrients: Some(Nutrients {
            calories: dec("300"),
            protein_g: dec("15"),
            carbs_g: dec("40"),
            fat_g: dec("8"),
        }),
    };
    // Two phones eat it at the same time: one meal.
    let (key_a, key_b) = (world.keyed("eat-a"), world.keyed("eat-b"));
    let (a, b) = tokio::join!(
        world.nutrition.eat_scheduled_meal(&key_a, eat(&soup)),
        world.nutrition.eat_scheduled_meal(&key_b, eat(&soup)),
    );
    let eaten: Vec<_> = [a, b].into_iter().filter_map(Result::ok).collect();
    assert_eq!(eaten.len(), 1, "eaten once");
    let meal = eaten[0].value.clone();
    assert_eq!((meal.name.as_str(), meal.day), ("Soup", plan_day));
    let summary = world.summary(plan_day).await;
    assert_eq!((summary.meals, summary.totals.calories), (1, dec("300")));
    assert!(
        world
            .items(Context::Nutrition, "SCHEDULED_MEAL#")
            .await
            .is_empty(),
        "off the plan"
    );
    // A retry of the one that ate it answers that meal; the other finds nothing.
    let retries = [
        world.nutrition.eat_scheduled_meal(&key_a, eat(&soup)).await,
        world.nutrition.eat_scheduled_meal(&key_b, eat(&soup)).await,
    ];
    let replayed: Vec<_> = retries.iter().filter_map(|r| r.as_ref().ok()).collect();
    assert_eq!(replayed.len(), 1, "{retries:?}");
    assert!(replayed[0].replayed);
    assert_eq!(replayed[0].value.meal_id, meal.meal_id);
    let eat_unkeyed = |id| world.nutrition.eat_scheduled_meal(&world.meta, eat(id));
    assert_not_found(eat_unkeyed(&soup).await);

    // A recipe that is not in the catalog is not planned.
    let unknown = world
        .nutrition
        .schedule_meal(
            &world.meta,
            ScheduleMeal {
                recipe_id: Some(events_schema::ids::RecipeId::generate()),
                ..planned("Mystery")
            },
        )
        .await;
    assert_not_found(unknown);

    // Without nutrients or a recipe: refused, nothing written.
    let salad = schedule(&world, planned("Salad")).await;
    let bare = EatScheduledMeal {
        nutrients: None,
        ..eat(&salad)
    };
    assert_invalid(
        world.nutrition.eat_scheduled_meal(&world.meta, bare).await,
        "nutrients",
    );
    // Removed: it cannot be eaten, nor removed again.
    // (A retry answers as the first time.)
    let keyed = world.keyed("rm");
    with_retry(|| {
        world
            .nutrition
            .remove_scheduled_meal(&keyed, plan_day, &salad)
    })
    .await;
    assert_not_found(eat_unkeyed(&salad).await);
    let twice = world
        .nutrition
        .remove_scheduled_meal(&world.meta, plan_day, &salad)
        .await;
    assert_not_found(twice);
    let summary = world.summary(plan_day).await;
    assert_eq!(summary.meals, 1, "still one meal");
    // (The two events of one transaction have no order between them.)
    let mut events = world.event_types(Context::Nutrition).await;
    events.sort();
    assert_eq!(
        events,
        vec![
            "MealLogged",
            "MealScheduled",
            "MealScheduled",
            "ScheduledMealCleared",
            "ScheduledMealCleared"
        ]
    );
}
