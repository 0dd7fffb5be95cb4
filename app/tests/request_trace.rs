//! One request id followed through the JSON logs, from the HTTP request to every read
//! row it caused: the access line, the command's commit of its event, and each
//! subscription of that event applying it (its correlation id the request id, its
//! causation id the event id) and writing its rows. On the embedded shape (`vitals
//! serve`) and on the aws-local shape (`vitals serve --backend dynamodb` and `vitals
//! work` as separate processes, on the emulator `VITALS_TEST_DYNAMODB_ENDPOINT` names).
//! Also: no line about the request holds the token, the password, the body or the raw
//! user id.

mod support;

use events_schema::envelope::EventPayload;
use events_schema::events::nutrition::MealLogged;
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use support::aws_local::Tables;
use support::{Case, Client, Process, exchange, registration};

const CONVERGE_WITHIN: Duration = Duration::from_secs(60);
const PASSWORD: &str = "correct horse battery";
const MEAL_NAME: &str = "Porridge with blueberries";

/// Every line of the logs, each a JSON object (a line that is not one fails the test).
fn read_lines(logs: &[PathBuf]) -> Vec<Value> {
    logs.iter()
        .flat_map(|path| {
            std::fs::read_to_string(path)
                .unwrap_or_default()
                .lines()
                .map(|line| {
                    serde_json::from_str::<Value>(line)
                        .unwrap_or_else(|e| panic!("a log line that is not JSON ({e}): {line}"))
                })
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The value of `field` of the enclosing span named `span`, if any.
fn span_field<'a>(line: &'a Value, span: &str, field: &str) -> Option<&'a str> {
    line["spans"]
        .as_array()?
        .iter()
        .find(|s| s["name"] == span)
        .and_then(|s| s[field].as_str())
}

/// The subscriptions that apply a MealLogged, and the tables they write.
fn consumers_of_meals() -> Vec<(&'static str, String)> {
    projectors::registry::described()
        .into_iter()
        .filter(|p| p.consumes().contains(&MealLogged::EVENT_TYPE))
        .map(|p| (p.name(), p.target().to_string()))
        .collect()
}

/// What one request left in the logs.
struct Trail {
    access: Vec<Value>,
    commit: Option<String>,
    applied: Vec<String>,
    rows: Vec<(String, String)>,
    all: Vec<Value>,
}

fn trail(logs: &[PathBuf], request_id: &str) -> Trail {
    let all: Vec<Value> = read_lines(logs)
        .into_iter()
        .filter(|line| line.to_string().contains(request_id))
        .collect();
    let in_request = |line: &&Value| span_field(line, "request", "request_id") == Some(request_id);
    let commit = all
        .iter()
        .filter(in_request)
        .filter(|l| l["target"] == "vitals::store" && l["fields"]["table"] == "nutrition")
        .find_map(|l| l["fields"]["row"].as_str()?.strip_prefix("EVT#"))
        .map(str::to_owned);
    let caused = |line: &&Value| {
        span_field(line, "event", "correlation_id") == Some(request_id)
            && span_field(line, "event", "causation_id") == commit.as_deref()
    };
    let subscription = |l: &Value| span_field(l, "event", "subscription").map(str::to_owned);
    Trail {
        access: all
            .iter()
            .filter(in_request)
            .filter(|l| l["target"] == "vitals::access")
            .cloned()
            .collect(),
        applied: all
            .iter()
            .filter(caused)
            .filter(|l| l["fields"]["message"] == "event applied")
            .filter_map(subscription)
            .collect(),
        rows: all
            .iter()
            .filter(caused)
            .filter(|l| l["target"] == "vitals::store")
            .filter_map(|l| Some((subscription(l)?, l["fields"]["table"].as_str()?.to_owned())))
            .collect(),
        commit,
        all,
    }
}

/// Logs a meal with a `traceparent`, then follows its trace id through `logs`; the
/// client of the account it made. Named cases, in order.
fn follow_one_meal(address: &str, logs: &[PathBuf]) -> Client {
    let (ana, trace_id) = a_meal_is_answered_with_its_request_id(address);
    let consumers = consumers_of_meals();
    assert!(consumers.len() >= 2, "{consumers:?}");
    let trail = every_subscription_logs_its_apply_and_its_row(logs, &trace_id, &consumers);
    the_access_line_names_the_route_and_a_digest_of_the_user(&trail);
    every_subscription_applied_that_event_once_in_its_own_table(&trail, &consumers);
    nothing_logged_holds_what_must_not_be_logged(&trail, &ana);
    ana
}

/// A new account (with a goal, so that the goals subscription has a row to write for
/// the meal) logs a meal with a `traceparent`; the answer carries its trace id as the
/// request id. Returns the account's client and the trace id.
fn a_meal_is_answered_with_its_request_id(address: &str) -> (Client, String) {
    let _case = Case("a meal is answered with its request id");
    let (status, reply) = Client::anonymous(address).call(
        "POST",
        "/v1/auth/register",
        Some(registration("ana@example.com")),
        &[],
    );
    assert_eq!(status, 201, "{reply}");
    let ana = Client::signed_in(address, &reply);
    // A goal, so that the goals subscription has a row to write for the meal.
    ana.set_protein_goal("50");

    let trace_id = format!("{:032x}", ulid::Ulid::new().0);
    let traceparent = format!("00-{trace_id}-00f067aa0ba902b7-01");
    let token = ana.token.clone().expect("token");
    let auth = format!("Bearer {token}");
    let day = support::today();
    let body = json!({"name": MEAL_NAME, "eaten_at": format!("{day}T08:00:00Z"), "calories": "350", "protein_g": "12", "carbs_g": "60", "fat_g": "6"}).to_string();
    let (status, headers, reply) = exchange(
        address,
        "POST",
        "/v1/me/meals",
        &[
            ("Content-Type", "application/json"),
            ("Authorization", &auth),
            ("traceparent", &traceparent),
        ],
        Some(body.as_bytes()),
    );
    assert_eq!(status, 201, "{reply}");
    assert_eq!(
        headers.get("x-request-id"),
        Some(&trace_id),
        "answered with the request id"
    );
    (ana, trace_id)
}

/// Every subscription of MealLogged logs its apply and its row under the trace id
/// (within `CONVERGE_WITHIN`); returns the request's trail.
fn every_subscription_logs_its_apply_and_its_row(
    logs: &[PathBuf],
    trace_id: &str,
    consumers: &[(&str, String)],
) -> Trail {
    let _case = Case("every subscription logs its apply and its row");
    let deadline = Instant::now() + CONVERGE_WITHIN;
    loop {
        let trail = trail(logs, trace_id);
        let done = consumers.iter().all(|(name, table)| {
            trail.applied.iter().any(|a| a == name)
                && trail.rows.iter().any(|(s, t)| s == name && t == table)
        });
        if done {
            break trail;
        }
        assert!(
            Instant::now() < deadline,
            "not every subscription of MealLogged logged its apply and its row under \
             {trace_id} within {CONVERGE_WITHIN:?}: commit {:?}, applied {:?}, rows {:?}",
            trail.commit,
            trail.applied,
            trail.rows
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The access line: the route's template, the status, a digest of the user; and the
/// command's commit of its event.
fn the_access_line_names_the_route_and_a_digest_of_the_user(trail: &Trail) {
    let _case = Case("the access line names the route and a digest of the user");
    let [access] = trail.access.as_slice() else {
        panic!("one access line per request: {:?}", trail.access);
    };
    let fields = &access["fields"];
    assert_eq!(
        (
            &fields["method"],
            &fields["route"],
            &fields["status"],
            &access["level"]
        ),
        (
            &json!("POST"),
            &json!("/v1/me/meals"),
            &json!(201),
            &json!("INFO")
        ),
        "{access}"
    );
    let user = fields["user"].as_str().expect("user digest");
    assert_eq!(user.len(), 16, "{access}");
    assert!(fields["latency_ms"].as_str().is_some(), "{access}");
    assert!(trail.commit.is_some(), "the command's commit of its event");
}

/// Every subscription applied that very event once, and wrote in its own table.
fn every_subscription_applied_that_event_once_in_its_own_table(
    trail: &Trail,
    consumers: &[(&str, String)],
) {
    let _case = Case("every subscription applied that event once, in its own table");
    for (name, table) in consumers {
        let applied = trail.applied.iter().filter(|a| a == name).count();
        assert_eq!(applied, 1, "{name} applied the event once");
        assert!(
            trail.rows.iter().any(|(s, t)| s == name && t == table),
            "{name} wrote a row in {table}"
        );
    }
}

/// Nothing logged about the request holds the token, the password, the body or the raw
/// user id.
fn nothing_logged_holds_what_must_not_be_logged(trail: &Trail, ana: &Client) {
    let _case = Case("nothing logged holds what must not be logged");
    let token = ana.token.clone().expect("token");
    for line in &trail.all {
        let text = line.to_string();
        for secret in [token.as_str(), PASSWORD, MEAL_NAME, ana.user_id.as_str()] {
            assert!(!text.contains(secret), "{secret:?} logged: {text}");
        }
    }
}

/// A wearable connection, completed after the provider's redirect: its event carries
/// the completing request's id, and so does every subscription's apply of it.
fn follow_a_wearable_connection(ana: &Client, logs: &[PathBuf]) {
    let _case = Case("a wearable connection is followed from its completion");
    let trace_id = format!("{:032x}", ulid::Ulid::new().0);
    let traceparent = format!("00-{trace_id}-00f067aa0ba902b7-01");
    let (status, reply) = ana.connect_wearable("ana-watch", &[("traceparent", &traceparent)]);
    assert_eq!(status, 200, "{reply}");
    let deadline = Instant::now() + CONVERGE_WITHIN;
    loop {
        let applied: Vec<Value> = read_lines(logs)
            .into_iter()
            .filter(|l| {
                l["fields"]["message"] == "event applied"
                    && span_field(l, "event", "correlation_id") == Some(trace_id.as_str())
                    && span_field(l, "event", "event_type") == Some("ProviderConnected")
            })
            .collect();
        if !applied.is_empty() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no apply of ProviderConnected under the completion's request id {trace_id}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn log_file(dir: &Path, name: &str) -> (PathBuf, Stdio) {
    let path = dir.join(name);
    let file = File::create(&path).expect("log file");
    (path, Stdio::from(file))
}

const JSON_LOGS: [(&str, &str); 4] = [
    ("VITALS_LOG_FORMAT", "json"),
    ("RUST_LOG", "info"),
    ("VITALS_AUTH_RATE_LIMIT", "100000"),
    ("VITALS_RATE_LIMIT", "100000"),
];

#[test]
fn one_request_id_leads_from_the_request_to_every_row_on_the_embedded_shape() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let (log, stderr) = log_file(dir.path(), "serve.log");
    let server = support::start_logging_to(
        &["--data-dir", data.to_str().expect("utf-8 path")],
        &JSON_LOGS,
        stderr,
    );
    let ana = follow_one_meal(&server.address, std::slice::from_ref(&log));
    follow_a_wearable_connection(&ana, &[log]);
    let text = metrics(&server.address);
    // Lag in records on the embedded log (a family with no sample is not declared).
    assert_eq!(
        families(&text),
        every_family_but("vitals_projector_lag_milliseconds"),
        "{text}"
    );
    for (name, _) in consumers_of_meals() {
        assert!(
            support::processed_events(&text, name) >= 1,
            "{name} counted the meal: {text}"
        );
    }
    assert!(server.stop().success());
}

/// `vitals serve --backend dynamodb` and `vitals work` as separate processes on the
/// emulator: named cases, in order, each saying its name when it fails.
#[test]
fn one_request_id_leads_from_the_request_to_every_row_on_the_aws_local_shape() {
    let tables = Tables::new("t");
    the_tables_are_bootstrapped(&tables);
    let dir = tempfile::tempdir().expect("tempdir");
    let (_worker, work_log, work_metrics) =
        vitals_work_says_where_its_metrics_are(&tables.args(), dir.path());
    let (serve_log, serve_stderr) = log_file(dir.path(), "serve.log");
    let mut env = JSON_LOGS.to_vec();
    env.push(("VITALS_JWT_SECRET", "test-jwt-secret-32-bytes-or-more"));
    env.push(("VITALS_WEBHOOK_SECRET", support::WEBHOOK_SECRET_TEXT));
    let server = support::start_logging_to(&tables.store_args(), &env, serve_stderr);
    follow_one_meal(&server.address, &[serve_log, work_log]);
    let text = the_workers_report_every_family_and_lag_in_time(&work_metrics);
    both_processes_report_what_they_asked_of_dynamodb(&server.address, text);
    assert!(server.stop().success());
}

/// `vitals bootstrap --kinesis --dlq-queues` on the test's tables.
fn the_tables_are_bootstrapped(tables: &Tables) {
    let _case = Case("the tables are bootstrapped");
    tables.bootstrap(&[]);
}

/// `vitals work`, logging JSON to `work.log` in `dir`, prints its metrics address first;
/// returns the process, its log and that address.
fn vitals_work_says_where_its_metrics_are(aws: &[&str], dir: &Path) -> (Process, PathBuf, String) {
    let _case = Case("vitals work says where its metrics are");
    let (work_log, work_stderr) = log_file(dir, "work.log");
    let mut worker = Process(
        Command::new(env!("CARGO_BIN_EXE_vitals"))
            .arg("work")
            .args(["--metrics-listen", "127.0.0.1:0"])
            .args(aws)
            .envs(JSON_LOGS)
            .stdout(Stdio::piped())
            .stderr(work_stderr)
            .spawn()
            .expect("vitals work starts"),
    );
    let work_metrics = support::aws_local::metrics_address(&mut worker.0);
    (worker, work_log, work_metrics)
}

/// The workers report the families `vitals serve` does; on Kinesis, lag in time. Returns
/// their metrics text.
fn the_workers_report_every_family_and_lag_in_time(work_metrics: &str) -> String {
    let _case = Case("the workers report every family, and lag in time");
    let text = metrics(work_metrics);
    assert_eq!(
        families(&text),
        every_family_but("vitals_projector_lag_records"),
        "{text}"
    );
    for (name, _) in consumers_of_meals() {
        assert!(
            text.contains(&format!(
                "vitals_projector_lag_milliseconds{{subscription=\"{name}\"}}"
            )) && !text.contains(&format!(
                "vitals_projector_lag_records{{subscription=\"{name}\"}}"
            )),
            "{name}: {text}"
        );
        assert!(
            support::processed_events(&text, name) >= 1,
            "{name} counted the meal: {text}"
        );
    }
    text
}

/// Both processes report what they asked of DynamoDB and what it consumed.
fn both_processes_report_what_they_asked_of_dynamodb(serve: &str, work_text: String) {
    let _case = Case("both processes report what they asked of DynamoDB");
    for (process, text) in [("serve", metrics(serve)), ("work", work_text)] {
        for family in [
            "vitals_dynamodb_requests_total{operation=\"TransactWriteItems\"}",
            "vitals_dynamodb_consumed_capacity_units_total{operation=\"TransactWriteItems\"}",
            "vitals_dynamodb_throttled_total{operation=\"TransactWriteItems\"} 0",
        ] {
            let value = text
                .lines()
                .find_map(|l| l.strip_prefix(family.split(' ').next().unwrap_or(family)))
                .and_then(|v| v.trim().parse::<f64>().ok());
            assert!(value.is_some(), "{process}: {family}: {text}");
        }
        let consumed = text
            .lines()
            .find_map(|l| {
                l.strip_prefix(
                    "vitals_dynamodb_consumed_capacity_units_total{operation=\"TransactWriteItems\"} ",
                )
            })
            .and_then(|v| v.trim().parse::<f64>().ok());
        assert!(consumed > Some(0.0), "{process}: {text}");
    }
}

/// `GET /metrics` at `address`.
fn metrics(address: &str) -> String {
    let (status, text) = support::request(address, "GET", "/metrics");
    assert_eq!(status, 200, "{text}");
    text
}

/// The projector metric families an OpenMetrics text declares, by the name of their
/// samples (a counter's end in `_total`, which its family's name leaves out).
fn families(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| {
            let mut words = l.split_whitespace();
            let (name, kind) = (words.next()?, words.next()?);
            Some(if kind == "counter" {
                format!("{name}_total")
            } else {
                name.to_owned()
            })
        })
        .filter(|name| name.starts_with("vitals_projector_"))
        .collect()
}

/// Every projector family but `other` (the lag of the other shape).
fn every_family_but(other: &str) -> BTreeSet<String> {
    projectors::pipeline::FAMILIES
        .iter()
        .map(|(name, _)| (*name).to_owned())
        .chain([projectors::pipeline::APPLIED_LAG_NAME.to_owned()])
        .filter(|name| name != other)
        .collect()
}
