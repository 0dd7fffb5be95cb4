//! The user-day `vitals cost` measures, request by request: sign-up, a goal and the
//! wearable connected once; then meals logged and edited, workouts delivered, a night
//! of sleep, the dashboard and a goal's progress, as many times as a day has them.

use super::model::{Model, WEBHOOK_SECRET};
use super::usage::{Line, Usage};
use axum::http::StatusCode;
use serde_json::{Value, json};

/// The day the workload's facts belong to.
const DAY: &str = "2026-03-02";

fn meal(name: &str, hour: u32, calories: u32) -> Value {
    json!({"name": name, "eaten_at": format!("{DAY}T{hour:02}:15:00.000Z"),
        "calories": calories.to_string(), "protein_g": "25", "carbs_g": "40", "fat_g": "12"})
}

/// Runs the user-day; returns its lines and the one-time setup (sign-up, a goal, the
/// wearable connected).
pub async fn user_day() -> anyhow::Result<(Vec<Line>, Usage)> {
    let dir = tempfile::tempdir()?;
    let mut model = Model::new(dir.path())?;
    let (setup, goal_id) = set_up(&mut model).await?;
    let (logs, edits) = meals(&mut model).await?;
    let lines = vec![
        line("log a meal", logs),
        line("edit a meal", edits),
        line(
            "a wearable delivers a workout (the second delivery a retry)",
            workout_deliveries(&mut model).await?,
        ),
        line("record a night of sleep", night(&mut model).await?),
        line("open the dashboard", dashboard_opens(&mut model).await?),
        line(
            "check a goal's progress",
            goal_check(&mut model, &goal_id).await?,
        ),
    ];
    Ok((lines, setup))
}

/// A line of the user-day from what each of its occurrences used.
fn line(what: &'static str, occurrences: Vec<Usage>) -> Line {
    let mut usage = Usage::default();
    for occurrence in &occurrences {
        usage += *occurrence;
    }
    Line {
        what,
        per_day: occurrences.len() as u32,
        usage,
    }
}

/// Sign-up, a goal and the wearable connected; returns what they used and the goal's id.
async fn set_up(model: &mut Model) -> anyhow::Result<(Usage, String)> {
    let mut setup = Usage::default();
    let registration = json!({"email": "ana@example.com", "password": "correct horse battery",
        "display_name": "Ana", "timezone": "UTC"});
    let (usage, answer) = model
        .measure(
            "POST",
            "/v1/auth/register",
            Some(&registration),
            &[],
            StatusCode::CREATED,
        )
        .await?;
    setup += usage;
    model.token = answer["access_token"].as_str().map(str::to_owned);
    let goal = json!({"kind": "daily_protein_grams", "target": "100", "title": "Protein"});
    let (usage, answer) = model
        .measure(
            "POST",
            "/v1/me/goals",
            Some(&goal),
            &[],
            StatusCode::CREATED,
        )
        .await?;
    setup += usage;
    let goal_id = answer["goal_id"].as_str().unwrap_or_default().to_owned();
    connect_wearable(model, &mut setup).await?;
    Ok((setup, goal_id))
}

/// The wearable connected through the sandbox provider, signed in; adds to `used` what
/// the connect, the provider's redirect to the callback and the completion used (one at
/// a time, in that order).
async fn connect_wearable(model: &mut Model, used: &mut Usage) -> anyhow::Result<()> {
    let (usage, answer) = model
        .measure(
            "POST",
            "/v1/integrations/sandbox/connect",
            None,
            &[],
            StatusCode::OK,
        )
        .await?;
    *used += usage;
    let state = answer["state"].as_str().unwrap_or_default().to_owned();
    // Ana approves at the sandbox; its redirect reaches the callback (no token), which
    // hands the code on to the app; the app completes the connect signed in.
    let authorize_url = answer["authorize_url"].as_str().unwrap_or_default();
    let code = commands::integrations::SandboxProvider::code_for("ana-watch", authorize_url);
    let token = model.token.take();
    let callback = format!("/v1/integrations/sandbox/callback?state={state}&code={code}");
    let (usage, _) = model
        .measure("GET", &callback, None, &[], StatusCode::SEE_OTHER)
        .await?;
    *used += usage;
    model.token = token;
    let complete = json!({"state": state, "code": code});
    let (usage, _) = model
        .measure(
            "POST",
            "/v1/integrations/sandbox/complete",
            Some(&complete),
            &[],
            StatusCode::OK,
        )
        .await?;
    *used += usage;
    Ok(())
}

/// Five meals logged, the first one edited; returns what each log and the edit used.
async fn meals(model: &mut Model) -> anyhow::Result<(Vec<Usage>, Vec<Usage>)> {
    let mut logs = Vec::new();
    let mut first_meal = String::new();
    for (name, hour, calories) in [
        ("Oats", 7, 420),
        ("Apple", 10, 95),
        ("Soup", 12, 380),
        ("Yogurt", 16, 150),
        ("Pasta", 19, 610),
    ] {
        let (usage, answer) = model
            .measure(
                "POST",
                "/v1/me/meals",
                Some(&meal(name, hour, calories)),
                &[],
                StatusCode::CREATED,
            )
            .await?;
        logs.push(usage);
        if first_meal.is_empty() {
            first_meal = answer["meal_id"].as_str().unwrap_or_default().to_owned();
        }
    }
    let path = format!("/v1/me/meals/{first_meal}");
    let (edit, _) = model
        .measure(
            "PUT",
            &path,
            Some(&meal("Oats with berries", 7, 470)),
            &[],
            StatusCode::OK,
        )
        .await?;
    Ok((logs, vec![edit]))
}

/// One workout delivered by the wearable's webhook twice (the second a retry).
async fn workout_deliveries(model: &mut Model) -> anyhow::Result<Vec<Usage>> {
    let workout = json!({"delivery_id": "d-1", "provider_user_id": "ana-watch", "workouts": [
        {"external_id": "run-1", "sport": "run", "started_at": format!("{DAY}T06:00:00.000Z"),
         "duration_s": 2400, "distance_m": 8000, "calories": null}]});
    let mut deliveries = Vec::new();
    for delivery in ["d-1", "d-2"] {
        let mut body = workout.clone();
        body["delivery_id"] = json!(delivery);
        let now = chrono::Utc::now().timestamp();
        let signature = commands::integrations::sign(
            WEBHOOK_SECRET.as_bytes(),
            now,
            body.to_string().as_bytes(),
        );
        let headers = [
            ("x-vitals-timestamp", now.to_string()),
            ("x-vitals-signature", signature),
        ];
        let token = model.token.take();
        let measured = model
            .measure(
                "POST",
                "/v1/integrations/sandbox/webhook",
                Some(&body),
                &headers,
                StatusCode::ACCEPTED,
            )
            .await;
        model.token = token;
        deliveries.push(measured?.0);
    }
    Ok(deliveries)
}

/// One night of sleep recorded.
async fn night(model: &mut Model) -> anyhow::Result<Vec<Usage>> {
    let night = json!({"start": format!("{DAY}T22:40:00.000Z"), "end": "2026-03-03T06:50:00.000Z",
        "score": 81, "stages": {"awake_min": 20, "light_min": 250, "deep_min": 90, "rem_min": 130}});
    let (usage, _) = model
        .measure(
            "POST",
            "/v1/me/sleep",
            Some(&night),
            &[],
            StatusCode::CREATED,
        )
        .await?;
    Ok(vec![usage])
}

/// The dashboard opened ten times.
async fn dashboard_opens(model: &mut Model) -> anyhow::Result<Vec<Usage>> {
    let mut opens = Vec::new();
    for _ in 0..10 {
        let path = format!("/v1/me/dashboard?date={DAY}");
        let (usage, _) = model
            .measure("GET", &path, None, &[], StatusCode::OK)
            .await?;
        opens.push(usage);
    }
    Ok(opens)
}

/// The goal's progress looked at once.
async fn goal_check(model: &mut Model, goal_id: &str) -> anyhow::Result<Vec<Usage>> {
    let path = format!("/v1/me/goals/{goal_id}/progress");
    let (usage, _) = model
        .measure("GET", &path, None, &[], StatusCode::OK)
        .await?;
    Ok(vec![usage])
}
