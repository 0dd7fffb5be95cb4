//! The whole app over HTTP, as a phone uses it (issue 18): browse the catalog, schedule a
//! meal from it and log it as eaten, start and end a training block, see the weather and
//! air, and read readiness after a night. Shared by the embedded and aws-local tests;
//! each shape supplies how to run a `vitals` command on its store.

use super::{Case, Client, vitals};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// The operator curates a recipe and a meal plan holding it; (recipe id, plan id).
pub fn curate(store: &[&str]) -> (String, String) {
    let recipe = vitals(
        &[
            "admin",
            "curate-recipe",
            "--name",
            "Overnight oats",
            "--category",
            "breakfast",
            "--calories",
            "420",
            "--protein-g",
            "18.5",
            "--carbs-g",
            "60",
            "--fat-g",
            "9",
        ],
        store,
    );
    let plan = vitals(
        &[
            "admin",
            "curate-meal-plan",
            "--name",
            "Easy week",
            "--category",
            "starter",
            "--recipe",
            &recipe,
        ],
        store,
    );
    (recipe, plan)
}

fn yesterday() -> String {
    (chrono::Utc::now().date_naive() - chrono::Duration::days(1)).to_string()
}

/// Browse, schedule, eat, plan training, weather: everything but readiness (which needs
/// the nightly job), for a user in UTC. Returns the day the eaten meal counts for.
pub fn walk(ana: &Client, bob: &Client, recipe: &str, plan: &str, converge: Duration) -> String {
    browse_the_catalog(ana, recipe, plan);
    let day = yesterday();
    eat_from_the_plan(ana, bob, recipe, &day);
    the_day_counts_the_meal_once(ana, &day, converge);
    a_training_block(ana, &day);
    weather_and_air(ana, bob);
    day
}

fn browse_the_catalog(ana: &Client, recipe: &str, plan: &str) {
    let _case = Case("browse the catalog");
    // The catalog: one category at a time, by name; another category is empty.
    let (status, recipes) = ana.call("GET", "/v1/catalog/recipes?category=breakfast", None, &[]);
    assert_eq!(status, 200, "{recipes}");
    assert_eq!(recipes["items"][0]["recipe_id"], recipe, "{recipes}");
    assert_eq!(recipes["items"][0]["nutrients"]["protein_g"], 18.5);
    let (_, plans) = ana.call("GET", "/v1/catalog/meal-plans?category=starter", None, &[]);
    assert_eq!(plans["items"][0]["meal_plan_id"], plan, "{plans}");
    assert_eq!(plans["items"][0]["recipes"], json!([recipe]));
    let (_, none) = ana.call("GET", "/v1/catalog/recipes?category=dinner", None, &[]);
    assert_eq!(none["items"], json!([]), "{none}");
    let (status, bad) = ana.call(
        "GET",
        "/v1/catalog/recipes?category=Not%20A%20Slug",
        None,
        &[],
    );
    assert_eq!((status, &bad["error"]["code"]), (422, &json!("validation")));
}

fn eat_from_the_plan(ana: &Client, bob: &Client, recipe: &str, day: &str) {
    let _case = Case("eat from the plan");
    // Schedule the recipe for yesterday and a snack, then eat the recipe: it becomes a
    // meal with the recipe's nutrients and leaves the plan, in one transaction.
    let (status, scheduled) = ana.call(
        "POST",
        "/v1/me/scheduled-meals",
        Some(json!({"day": day, "name": "Oats from the plan", "recipe_id": recipe})),
        &[("Idempotency-Key", "plan-1")],
    );
    assert_eq!(status, 201, "{scheduled}");
    let oats = scheduled["scheduled_meal_id"]
        .as_str()
        .expect("id")
        .to_owned();
    let (status, snack) = ana.call(
        "POST",
        "/v1/me/scheduled-meals",
        Some(json!({"day": day, "name": "Apple"})),
        &[],
    );
    assert_eq!(status, 201, "{snack}");
    let snack = snack["scheduled_meal_id"].as_str().expect("id").to_owned();
    let listed = format!("/v1/me/scheduled-meals?from={day}&to={day}");
    let (_, page) = ana.call("GET", &listed, None, &[]);
    assert_eq!(page["items"].as_array().map(Vec::len), Some(2), "{page}");
    let (_, theirs) = bob.call("GET", &listed, None, &[]);
    assert_eq!(
        theirs["items"],
        json!([]),
        "another user sees nothing: {theirs}"
    );

    let eaten = format!("/v1/me/scheduled-meals/{day}/{oats}/eaten");
    let body = json!({"eaten_at": format!("{day}T08:15:00+00:00")});
    let (status, _) = bob.call("POST", &eaten, Some(body.clone()), &[]);
    assert_eq!(status, 404, "another user cannot eat it");
    let (status, meal) = ana.call("POST", &eaten, Some(body.clone()), &[]);
    assert_eq!(status, 201, "{meal}");
    assert_eq!(
        (&meal["name"], &meal["day"], &meal["nutrients"]["calories"]),
        (&json!("Oats from the plan"), &json!(day), &json!(420))
    );
    let (status, again) = ana.call("POST", &eaten, Some(body), &[]);
    assert_eq!(status, 404, "eaten once: {again}");
    // The snack names no recipe: eating it needs its nutrients; taken off instead.
    let snack_eaten = format!("/v1/me/scheduled-meals/{day}/{snack}/eaten");
    let (status, refused) = ana.call(
        "POST",
        &snack_eaten,
        Some(json!({"eaten_at": format!("{day}T15:00:00Z")})),
        &[],
    );
    assert_eq!(
        (status, &refused["error"]["code"]),
        (422, &json!("validation"))
    );
    let (status, _) = ana.call(
        "DELETE",
        &format!("/v1/me/scheduled-meals/{day}/{snack}"),
        None,
        &[],
    );
    assert_eq!(status, 204);
    let (_, page) = ana.call("GET", &listed, None, &[]);
    assert_eq!(page["items"], json!([]), "nothing left planned: {page}");
}

fn the_day_counts_the_meal_once(ana: &Client, day: &str, converge: Duration) {
    let _case = Case("the day counts the eaten meal once");
    // The day counts the eaten meal once.
    let daily = ana.eventually(
        &format!("/v1/me/nutrition/daily?from={day}&to={day}"),
        converge,
        |d| d["days"][0]["meals"] == 1,
    );
    assert_eq!(daily["days"][0]["totals"]["calories"], 420, "{daily}");
    ana.eventually(&format!("/v1/me/meals?date={day}"), converge, |m| {
        m["items"].as_array().map(Vec::len) == Some(1)
    });
}

fn a_training_block(ana: &Client, day: &str) {
    let _case = Case("a training block");
    // A training block from yesterday: current today, listed, then ended today.
    let today = super::today();
    let (status, block) = ana.call(
        "POST",
        "/v1/me/training-blocks",
        Some(json!({"start_day": day, "weeks": 4, "focus": "10k"})),
        &[],
    );
    assert_eq!(status, 201, "{block}");
    let block_id = block["training_block_id"].as_str().expect("id").to_owned();
    let (_, current) = ana.call("GET", "/v1/me/training-block/current", None, &[]);
    assert_eq!(current["training_block_id"], block_id.as_str(), "{current}");
    let end = format!("/v1/me/training-blocks/{day}/{block_id}/end");
    let (status, ended) = ana.call("POST", &end, Some(json!({"ended_on": today})), &[]);
    assert_eq!(status, 200, "{ended}");
    assert_eq!(
        (&ended["end_day"], &ended["ended_early"]),
        (&json!(today), &json!(true))
    );
    let (status, _) = ana.call("POST", &end, Some(json!({"ended_on": today})), &[]);
    assert_eq!(status, 409, "a block ends once");
    let (_, blocks) = ana.call("GET", "/v1/me/training-blocks", None, &[]);
    assert_eq!(blocks["items"][0]["training_block_id"], block_id.as_str());
    assert_eq!(blocks["items"][0]["ended_early"], true);
}

fn weather_and_air(ana: &Client, bob: &Client) {
    let _case = Case("weather and air");
    // Weather and air of a coarse cell: the same hour answers the same readings.
    let here = "/v1/me/environment?geohash=u09tvw0f&at=2026-03-01T08:20:00Z";
    let (status, first) = ana.call("GET", here, None, &[]);
    assert_eq!(status, 200, "{first}");
    assert_eq!(first["cell"], "u09tv", "only a 5-character cell is used");
    assert_eq!(first["hour"], "2026-03-01T08:00:00.000Z");
    let (_, same) = bob.call(
        "GET",
        "/v1/me/environment?geohash=u09tv&at=2026-03-01T08:59:00Z",
        None,
        &[],
    );
    assert_eq!(
        same, first,
        "one cache entry per cell and hour, whoever asks"
    );
    let (status, bad) = ana.call("GET", "/v1/me/environment?geohash=a!", None, &[]);
    assert_eq!(
        (status, &bad["error"]["code"]),
        (422, &json!("validation")),
        "{bad}"
    );
}

/// Logs a night and a run on `day` so the user counts as active that day.
pub fn be_active(ana: &Client, day: &str) {
    let night = json!({"start": format!("{day}T00:30:00Z"), "end": format!("{day}T07:30:00Z"), "score": 80});
    let (status, reply) = ana.call("POST", "/v1/me/sleep", Some(night), &[]);
    assert_eq!(status, 201, "{reply}");
    let run = json!({"sport": "run", "started_at": format!("{day}T17:00:00Z"), "duration_s": 1800});
    let (status, reply) = ana.call("POST", "/v1/me/workouts", Some(run), &[]);
    assert_eq!(status, 201, "{reply}");
}

/// The readiness of `day` once scored: a score, and none for an inactive user.
pub fn check_readiness(ana: &Client, bob: &Client, day: &str) -> Value {
    let path = format!("/v1/me/readiness?date={day}");
    let (status, score) = ana.call("GET", &path, None, &[]);
    assert_eq!(status, 200, "{score}");
    assert_eq!(score["day"], day);
    assert!(score["score"].as_u64().is_some_and(|s| s > 0), "{score}");
    let (status, _) = bob.call("GET", &path, None, &[]);
    assert_eq!(status, 404, "an inactive user is not scored");
    // A marker arriving late (the run after the night) re-scores the day, so the score
    // may move between two reads: the dashboard must show the score read on either side
    // of it, once the two agree (a deadline, not a sleep, bounds the wait).
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut score = score;
    loop {
        let (_, home) = ana.call("GET", &format!("/v1/me/dashboard?date={day}"), None, &[]);
        let (_, after) = ana.call("GET", &path, None, &[]);
        if home["readiness"] == score && after == score {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the dashboard shows the day's readiness: {} against {score} then {after}",
            home["readiness"]
        );
        score = after;
        std::thread::sleep(Duration::from_millis(50));
    }
    let (_, theirs) = bob.call("GET", &format!("/v1/me/dashboard?date={day}"), None, &[]);
    assert_eq!(theirs["readiness"], serde_json::Value::Null);
    score
}
