//! `vitals cost`: what one user costs on the AWS shape, and what the stack costs at rest.
//!
//! A realistic user-day runs through the real HTTP router, command handlers and
//! projectors, on an embedded store that counts every request and prices it as DynamoDB
//! bills it ([`infra::counting`], [`infra::capacity`]). After each request every outbox
//! event it wrote is applied by every subscription of its stream, as the stream
//! consumers do (no checkpoints: on AWS the event source mapping keeps the position).
//! The figures are then priced at on-demand list prices ([`Prices`], which a JSON file
//! can override), and the stack's fixed monthly floor is read from the generated
//! template. The output for the default workload is committed as `docs/cost.md`.
//!
//! Assumptions, stated in the output: one projector invocation per outbox event and
//! function it is delivered to (each projector function's mapping passes only the event
//! types its subscriptions apply; an upper bound: a mapping batches up to 100 records of
//! many users into one invocation), a
//! Lambda duration per invocation, and Kinesis bytes of one KB per change-data-capture
//! unit (an upper bound).

use crate::cli::ApiArgs;
use crate::http::{self, AppState};
use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use events_schema::Context;
use infra::Store;
use infra::capacity::Capacity;
use infra::counting::{CountingStore, RequestCounts};
use infra::embedded::EmbeddedStore;
use infra::feed::FeedRecord;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::sync::Arc;
use tower::ServiceExt;

/// On-demand list prices in US dollars (us-east-1, as published in 2026). Any of them
/// can be overridden by `vitals cost --prices FILE` (a JSON object of these fields).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct Prices {
    pub dynamodb_per_million_write_units: f64,
    pub dynamodb_per_million_read_units: f64,
    pub cdc_per_million_units: f64,
    pub kinesis_per_gb_in: f64,
    pub kinesis_per_gb_out: f64,
    /// An on-demand stream's hourly charge.
    pub kinesis_per_stream_hour: f64,
    /// A provisioned shard's hourly charge.
    pub kinesis_per_shard_hour: f64,
    /// Provisioned streams bill records put in 25 KB units (and reads not at all).
    pub kinesis_per_million_put_units: f64,
    pub lambda_per_million_requests: f64,
    pub lambda_per_gb_second: f64,
    /// Assumed duration of one invocation, in milliseconds.
    pub lambda_ms_per_invocation: f64,
    pub api_gateway_per_million_requests: f64,
    pub alarm_per_month: f64,
    pub secret_per_month: f64,
    /// An enhanced fan-out consumer's charge per shard it reads, an hour.
    pub kinesis_efo_per_consumer_shard_hour: f64,
}

impl Default for Prices {
    fn default() -> Self {
        Self {
            dynamodb_per_million_write_units: 0.625,
            dynamodb_per_million_read_units: 0.125,
            cdc_per_million_units: 0.10,
            kinesis_per_gb_in: 0.08,
            kinesis_per_gb_out: 0.04,
            kinesis_per_stream_hour: 0.04,
            kinesis_per_shard_hour: 0.015,
            kinesis_per_million_put_units: 0.014,
            lambda_per_million_requests: 0.20,
            lambda_per_gb_second: 0.000_016_666_7,
            lambda_ms_per_invocation: 25.0,
            api_gateway_per_million_requests: 1.00,
            alarm_per_month: 0.10,
            secret_per_month: 0.40,
            kinesis_efo_per_consumer_shard_hour: 0.015,
        }
    }
}

/// Days in the month the figures are scaled to.
const DAYS_PER_MONTH: f64 = 30.0;
const HOURS_PER_MONTH: f64 = 730.0;

/// What some requests used, with the events they caused applied.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Usage {
    pub api_requests: u64,
    pub reads: u64,
    pub writes: u64,
    pub transactions: u64,
    pub capacity: Capacity,
    /// Projector invocations (one per outbox event and function it is delivered to, an
    /// upper bound).
    pub consumer_invocations: u64,
}

impl std::ops::AddAssign for Usage {
    fn add_assign(&mut self, other: Self) {
        self.api_requests += other.api_requests;
        self.reads += other.reads;
        self.writes += other.writes;
        self.transactions += other.transactions;
        self.capacity += other.capacity;
        self.consumer_invocations += other.consumer_invocations;
    }
}

/// One line of the user-day: what the app does, how often a day, and what it used.
#[derive(Debug, Clone)]
pub struct Line {
    pub what: &'static str,
    pub per_day: u32,
    /// All occurrences of the day together.
    pub usage: Usage,
}

/// The memory of the deployed functions, and the stack's fixed parts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stack {
    pub api_memory_mb: f64,
    pub consumer_memory_mb: f64,
    pub streams: usize,
    /// Shards of each stream, 0 when the streams are on demand.
    pub stream_shards: u32,
    pub alarms: usize,
    pub secrets: usize,
}

impl Stack {
    /// Read from the generated template (`deploy/template.json`).
    pub fn from_template(template: &Value) -> Self {
        let resources = template["Resources"]
            .as_object()
            .cloned()
            .unwrap_or_default();
        let count = |kind: &str| resources.values().filter(|r| r["Type"] == kind).count();
        // The memory of the first function of `role` (all of a role have the same).
        let memory = |role: &str| {
            resources
                .values()
                .filter(|r| r["Type"] == "AWS::Lambda::Function")
                .find(|r| r["Properties"]["Environment"]["Variables"]["VITALS_ROLE"] == role)
                .and_then(|r| r["Properties"]["MemorySize"].as_f64())
                .unwrap_or(0.0)
        };
        Self {
            api_memory_mb: memory("api"),
            consumer_memory_mb: memory("stream"),
            streams: count("AWS::Kinesis::Stream"),
            stream_shards: template["Parameters"]["StreamShards"]["Default"]
                .as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .unwrap_or(0),
            alarms: count("AWS::CloudWatch::Alarm"),
            secrets: count("AWS::SecretsManager::Secret"),
        }
    }

    /// The streams' share of the floor.
    pub fn streams_floor(&self, prices: &Prices) -> f64 {
        let hourly = match self.stream_shards {
            0 => prices.kinesis_per_stream_hour,
            shards => f64::from(shards) * prices.kinesis_per_shard_hour,
        };
        self.streams as f64 * hourly * HOURS_PER_MONTH
    }

    /// The same stack with its streams on demand (`StreamShards=0`).
    pub fn on_demand(&self) -> Self {
        Self {
            stream_shards: 0,
            ..*self
        }
    }

    /// Dollars a month whatever the traffic.
    pub fn floor(&self, prices: &Prices) -> f64 {
        self.streams_floor(prices)
            + self.alarms as f64 * prices.alarm_per_month
            + self.secrets as f64 * prices.secret_per_month
    }
}

/// What some usage costs, in dollars, by service.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Dollars {
    pub dynamodb: f64,
    pub streams: f64,
    pub lambda: f64,
    pub api_gateway: f64,
}

impl Dollars {
    pub fn of(usage: &Usage, prices: &Prices, stack: &Stack) -> Self {
        let million = 1_000_000.0;
        let c = &usage.capacity;
        let gb = c.cdc_units / (1024.0 * 1024.0);
        let seconds = prices.lambda_ms_per_invocation / 1000.0;
        let gb_seconds = usage.api_requests as f64 * seconds * stack.api_memory_mb / 1024.0
            + usage.consumer_invocations as f64 * seconds * stack.consumer_memory_mb / 1024.0;
        Self {
            dynamodb: c.write_units * prices.dynamodb_per_million_write_units / million
                + c.read_units * prices.dynamodb_per_million_read_units / million,
            // A record is at least one CDC unit and at most 25 KB here, so CDC units
            // bound the put units from above.
            streams: c.cdc_units * prices.cdc_per_million_units / million
                + match stack.stream_shards {
                    0 => gb * (prices.kinesis_per_gb_in + prices.kinesis_per_gb_out),
                    _ => c.cdc_units * prices.kinesis_per_million_put_units / million,
                },
            lambda: (usage.api_requests + usage.consumer_invocations) as f64
                * prices.lambda_per_million_requests
                / million
                + gb_seconds * prices.lambda_per_gb_second,
            api_gateway: usage.api_requests as f64 * prices.api_gateway_per_million_requests
                / million,
        }
    }

    pub fn total(&self) -> f64 {
        self.dynamodb + self.streams + self.lambda + self.api_gateway
    }
}

/// The app's HTTP API on a counting embedded store, with every subscription applied
/// after each request.
struct Model {
    router: Router,
    log: Arc<EmbeddedStore>,
    counting: Arc<CountingStore>,
    handlers: Vec<projectors::runtime::Handler>,
    /// The deployed projector functions, whose mappings' filters decide which are
    /// invoked for an event.
    plan: crate::deploy::plan::Plan,
    applied_up_to: u64,
    token: Option<String>,
}

const WEBHOOK_SECRET: &str = "cost-model-webhook-secret-32-bytes-or-more";

impl Model {
    fn new(dir: &std::path::Path) -> anyhow::Result<Self> {
        let log = Arc::new(EmbeddedStore::open(dir)?);
        let counting = Arc::new(CountingStore::new(log.clone()));
        let store: Arc<dyn Store> = counting.clone();
        let mut args: ApiArgs = crate::cli::api_args_from_env()?;
        args.jwt_secret = Some("cost-model-signing-key-32-bytes-or-more".into());
        args.webhook_secret = Some(WEBHOOK_SECRET.into());
        let api = crate::setup::api(store.clone(), &args)?;
        let handlers = Context::ALL
            .into_iter()
            .flat_map(|source| projectors::registry::stream_handlers(store.clone(), source))
            .collect();
        Ok(Self {
            router: http::app(AppState {
                store,
                pipeline: None,
                api,
            }),
            log,
            counting,
            handlers,
            plan: crate::deploy::plan::plan(),
            applied_up_to: 0,
            token: None,
        })
    }

    /// One request; its answer must have `expected` status.
    async fn call(
        &mut self,
        method: &str,
        path: &str,
        body: Option<&Value>,
        headers: &[(&str, String)],
        expected: StatusCode,
    ) -> anyhow::Result<Value> {
        let mut request = Request::builder()
            .method(method)
            .uri(path)
            .header("content-type", "application/json");
        if let Some(token) = &self.token {
            request = request.header("authorization", format!("Bearer {token}"));
        }
        for (name, value) in headers {
            request = request.header(*name, value);
        }
        let bytes = body.map(|b| b.to_string()).unwrap_or_default();
        let response = self
            .router
            .clone()
            .oneshot(request.body(Body::from(bytes))?)
            .await?;
        let status = response.status();
        let bytes = axum::body::to_bytes(response.into_body(), 1 << 20).await?;
        let answer = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        anyhow::ensure!(
            status == expected,
            "{method} {path}: {status} (expected {expected}): {answer}"
        );
        Ok(answer)
    }

    /// Applies every change since the last call through the subscriptions of its
    /// table; returns the projector invocations the outbox events among them cause.
    async fn project(&mut self) -> anyhow::Result<u64> {
        let mut events = 0;
        loop {
            let changes = self.log.changes_after(self.applied_up_to, 500).await?;
            let Some(last) = changes.last() else {
                return Ok(events);
            };
            self.applied_up_to = last.seq;
            for change in changes {
                let record = FeedRecord::from(change);
                if let Some(image) = record
                    .new_image
                    .as_ref()
                    .filter(|_| record.sk.starts_with("EVT#"))
                {
                    let event_type = image
                        .get("event_type")
                        .and_then(Value::as_str)
                        .unwrap_or_default();
                    events += self
                        .plan
                        .consumers
                        .iter()
                        .filter(|c| c.receives(record.table, event_type))
                        .count() as u64;
                }
                for handler in &self.handlers {
                    if handler.projector().source() == record.table {
                        handler.handle(&record).await?;
                    }
                }
            }
        }
    }

    /// One request of the app, with everything it caused: its usage.
    async fn measure(
        &mut self,
        method: &str,
        path: &str,
        body: Option<&Value>,
        headers: &[(&str, String)],
        expected: StatusCode,
    ) -> anyhow::Result<(Usage, Value)> {
        self.project().await?;
        self.counting.take();
        self.counting.take_capacity();
        let answer = self.call(method, path, body, headers, expected).await?;
        let events = self.project().await?;
        let counts: RequestCounts = self.counting.take();
        let usage = Usage {
            api_requests: 1,
            reads: counts.reads() as u64,
            writes: counts.writes() as u64,
            transactions: counts.transactions as u64,
            capacity: self.counting.take_capacity(),
            consumer_invocations: events,
        };
        Ok((usage, answer))
    }
}

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

/// The report, as Markdown.
pub fn render(lines: &[Line], setup: &Usage, prices: &Prices, stack: &Stack) -> String {
    let mut out = String::new();
    out.push_str(
        "# What a user costs\n\n\
         Generated by `vitals cost` (a test fails when this file drifts; \
         `VITALS_WRITE_COST=1 cargo test -p vitals --test cost_doc` rewrites it). One \
         user-day runs through the real HTTP handlers, commands and projectors on a store \
         that prices each request as DynamoDB bills it on demand; each outbox event is \
         applied by every subscription of its stream, as the deployed projector functions do.\n\n",
    );
    out.push_str(&format!(
        "Assumptions: one projector invocation per outbox event and function it is delivered \
         to (an upper bound: a mapping batches up to 100 records), {} ms per Lambda invocation ({} MB api, {} MB \
         projectors), one KB of Kinesis data per change-data-capture unit (an upper bound), \
         {} days a month; the workload's day has ended everywhere, so each insights \
         projection also reads the readiness job's checkpoints (an upper bound: a change \
         to a day not yet ended skips that query).\n\n",
        prices.lambda_ms_per_invocation,
        stack.api_memory_mb,
        stack.consumer_memory_mb,
        DAYS_PER_MONTH
    ));
    let (table, day) = per_command(lines, prices, stack);
    out.push_str(&table);
    let month = scale(&day, DAYS_PER_MONTH);
    let dollars = Dollars::of(&month, prices, stack);
    out.push_str(&format!(
        "\nOne-time setup (sign-up, a goal, a wearable connected): {} requests, {:.1} read \
         units, {:.1} write units, ${:.6}.\n\n",
        setup.api_requests,
        setup.capacity.read_units,
        setup.capacity.write_units,
        Dollars::of(setup, prices, stack).total()
    ));
    out.push_str(&user_month(&month, &dollars));
    out.push_str(&at_rest(&month, &dollars, prices, stack));
    out.push_str(
        "## Prices (on demand, us-east-1; override with `vitals cost --prices FILE`)\n\n```json\n",
    );
    out.push_str(&serde_json::to_string_pretty(prices).unwrap_or_default());
    out.push_str("\n```\n");
    out
}

/// The per-command table, and the whole day's usage.
fn per_command(lines: &[Line], prices: &Prices, stack: &Stack) -> (String, Usage) {
    let mut out = String::from("## Per command\n\n");
    out.push_str(
        "| what the app does | a day | reads | writes | of which transactions | read units | write units | of which changing nothing | CDC units | Lambda invocations | $ per 1,000 |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    let mut day = Usage::default();
    for line in lines {
        day += line.usage;
        let n = f64::from(line.per_day.max(1));
        let u = &line.usage;
        let dollars = Dollars::of(u, prices, stack).total();
        out.push_str(&format!(
            "| {} | {} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.4} |\n",
            line.what,
            line.per_day,
            u.reads as f64 / n,
            u.writes as f64 / n,
            u.transactions as f64 / n,
            u.capacity.read_units / n,
            u.capacity.write_units / n,
            u.capacity.unchanged_write_units / n,
            u.capacity.cdc_units / n,
            (u.api_requests + u.consumer_invocations) as f64 / n,
            dollars / n * 1000.0,
        ));
    }
    (out, day)
}

/// The table of an active user-month.
fn user_month(month: &Usage, dollars: &Dollars) -> String {
    let mut out = String::from("## An active user-month\n\n| | per month |\n|---|---:|\n");
    for (label, value) in [
        ("API requests", month.api_requests as f64),
        ("DynamoDB reads (requests)", month.reads as f64),
        ("DynamoDB writes (requests)", month.writes as f64),
        ("of which transactions", month.transactions as f64),
        ("read request units", month.capacity.read_units),
        ("write request units", month.capacity.write_units),
        (
            "of which writes that changed nothing",
            month.capacity.unchanged_write_units,
        ),
        ("change data capture units", month.capacity.cdc_units),
        (
            "Lambda invocations",
            (month.api_requests + month.consumer_invocations) as f64,
        ),
    ] {
        out.push_str(&format!("| {label} | {value:.0} |\n"));
    }
    for (label, value) in [
        ("DynamoDB", dollars.dynamodb),
        ("Kinesis (CDC units, records in and out)", dollars.streams),
        ("Lambda", dollars.lambda),
        ("API Gateway (HTTP API)", dollars.api_gateway),
        ("**total per active user-month**", dollars.total()),
    ] {
        out.push_str(&format!("| {label} | ${value:.4} |\n"));
    }
    out
}

/// The stack's fixed monthly floor, and the on-demand alternative.
fn at_rest(month: &Usage, dollars: &Dollars, prices: &Prices, stack: &Stack) -> String {
    let mut out = format!(
        "\n## The stack at rest\n\n{}, {} alarms, {} secrets: **${:.2} a month** whatever \
         the traffic (table storage aside), the cost of about {:.0} active users.\n\n",
        streams_phrase(stack, prices),
        stack.alarms,
        stack.secrets,
        stack.floor(prices),
        stack.floor(prices) / dollars.total().max(f64::MIN_POSITIVE),
    );
    if stack.stream_shards > 0 {
        let on_demand = stack.on_demand();
        out.push_str(&format!(
            "With `StreamShards=0`, {} and no shards to size: **${:.2} a month**, and \
             ${:.4} per active user-month.\n\n",
            streams_phrase(&on_demand, prices),
            on_demand.floor(prices),
            Dollars::of(month, prices, &on_demand).total(),
        ));
    }
    out
}

fn streams_phrase(stack: &Stack, prices: &Prices) -> String {
    match stack.stream_shards {
        0 => format!(
            "{} on-demand Kinesis streams (${:.3} each an hour)",
            stack.streams, prices.kinesis_per_stream_hour
        ),
        shards => format!(
            "{} Kinesis streams of {shards} provisioned shard{} (${:.3} a shard-hour)",
            stack.streams,
            if shards == 1 { "" } else { "s" },
            prices.kinesis_per_shard_hour
        ),
    }
}

fn scale(usage: &Usage, factor: f64) -> Usage {
    let times = |n: u64| (n as f64 * factor).round() as u64;
    Usage {
        api_requests: times(usage.api_requests),
        reads: times(usage.reads),
        writes: times(usage.writes),
        transactions: times(usage.transactions),
        capacity: Capacity {
            read_units: usage.capacity.read_units * factor,
            write_units: usage.capacity.write_units * factor,
            cdc_units: usage.capacity.cdc_units * factor,
            unchanged_write_units: usage.capacity.unchanged_write_units * factor,
        },
        consumer_invocations: times(usage.consumer_invocations),
    }
}

/// Who reads each stream, and why that needs no enhanced fan-out.
pub fn stream_readers(plan: &crate::deploy::plan::Plan, prices: &Prices, stack: &Stack) -> String {
    use crate::deploy::plan::MAX_MAPPINGS_PER_STREAM;
    let mut out = format!(
        "\n## Who reads each stream\n\n\
         Each projector function writes one table (its role may write no other) and has an \
         event source mapping on each stream its subscriptions read. A mapping polls each \
         shard about once a second, and a shard serves 5 `GetRecords` calls a second shared \
         by every standard consumer: at most {MAX_MAPPINGS_PER_STREAM} mappings a stream \
         leave one call for `vitals redrive-failures` and an operator.\n\n\
         | stream | mappings (`GetRecords` calls a second a shard, of 5) | functions |\n|---|---:|---|\n"
    );
    let mut streams = 0;
    for def in &plan.published {
        let readers: Vec<String> = plan
            .consumers
            .iter()
            .filter(|c| c.sources.iter().any(|s| s.context == def.context))
            .map(|c| format!("`{}`", crate::deploy::template::consumer_id(c.target)))
            .collect();
        streams += 1;
        out.push_str(&format!(
            "| {} | {} | {} |\n",
            def.context,
            readers.len(),
            readers.join(", ")
        ));
    }
    let shards = f64::from(stack.stream_shards.max(1));
    let efo_month = prices.kinesis_efo_per_consumer_shard_hour * shards * HOURS_PER_MONTH;
    out.push_str(&format!(
        "\nWhy account erasure is a chain. With an eraser per context on identity's \
         `AccountDeletionRequested` and a completer on every context's `PartitionDrained`, \
         grouping subscriptions by the table they write would put 7 mappings on the identity \
         stream and 5 each on nutrition and activity: 5 over the limit. Those 5 as enhanced \
         fan-out consumers (a dedicated 2 MB/s pushed to each) would cost ${:.3} per \
         consumer-shard-hour, ${:.2} a month at {} shard{} a stream (${:.2} each) before \
         a record is read, and the local emulator cannot provision them, so the stack run \
         could not prove them. As a chain (each context's eraser starts on its \
         predecessor's `PartitionDrained`, on a stream its table mostly reads already; \
         `projectors::erasure::ERASURE_CHAIN`), the {streams} streams keep within the limit \
         with standard consumers and the floor is unchanged; an erasure takes a few more \
         seconds (one poll a link), which a deletion finished within minutes allows.\n",
        prices.kinesis_efo_per_consumer_shard_hour,
        5.0 * efo_month,
        stack.stream_shards.max(1),
        if stack.stream_shards > 1 { "s" } else { "" },
        efo_month,
    ));
    out
}

/// `vitals cost`: the report for the default workload at `prices`.
pub async fn report(prices: &Prices) -> anyhow::Result<String> {
    let (lines, setup) = user_day().await?;
    let plan = crate::deploy::plan::plan();
    let template = crate::deploy::template::render(&plan);
    let stack = Stack::from_template(&template);
    let mut out = render(&lines, &setup, prices, &stack);
    out.push_str(&stream_readers(&plan, prices, &stack));
    Ok(out)
}
