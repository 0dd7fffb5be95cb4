//! The committed OpenAPI document (`docs/openapi.json`) is exactly what the code
//! generates, and it describes exactly the router: every API route of `http::app` is in
//! it (the web app's page and assets, `http/web.rs`, are not API operations),
//! every operation in it is routed, and what the handlers really answer (statuses,
//! content types, bodies) is what it documents.
//!
//! After changing a handler or a route, regenerate the document with
//! `VITALS_WRITE_OPENAPI=1 cargo test -p vitals --test openapi_drift`.

mod support;

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;
use support::Case;
use tower::ServiceExt as _;
use vitals::http::{AppState, app, openapi};

const REGENERATE: &str = "VITALS_WRITE_OPENAPI=1 cargo test -p vitals --test openapi_drift";

const METHODS: [&str; 5] = ["get", "post", "put", "patch", "delete"];

fn committed_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/openapi.json")
}

fn generated() -> Value {
    serde_json::from_str(&openapi::document()).expect("the document is JSON")
}

/// (method, path) of every operation in the document.
fn documented() -> BTreeSet<(String, String)> {
    let document = generated();
    let paths = document["paths"].as_object().expect("paths");
    paths
        .iter()
        .flat_map(|(path, item)| {
            let item = item.as_object().expect("path item");
            METHODS
                .iter()
                .filter(|m| item.contains_key(**m))
                .map(|m| (m.to_string(), path.clone()))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// (method, path) of every route in the router's source: each `.route("<path>", ...)`
/// call of `http::app`, and the method routers (`get(...)`, `.patch(...)`) it is given.
fn routed_in_source() -> BTreeSet<(String, String)> {
    // The app's router and every context's `router()`.
    let source = [
        include_str!("../src/http/mod.rs"),
        include_str!("../src/http/routes/identity.rs"),
        include_str!("../src/http/routes/profile.rs"),
        include_str!("../src/http/routes/nutrition.rs"),
        include_str!("../src/http/routes/activity.rs"),
        include_str!("../src/http/routes/sleep.rs"),
        include_str!("../src/http/routes/goals.rs"),
        include_str!("../src/http/routes/dashboard.rs"),
        include_str!("../src/http/routes/integrations.rs"),
        include_str!("../src/http/routes/plans.rs"),
        include_str!("../src/http/routes/catalog.rs"),
        include_str!("../src/http/routes/insights.rs"),
    ]
    .join("\n");
    let mut routes = BTreeSet::new();
    for call in source.split(".route(").skip(1) {
        let path = call
            .split('"')
            .nth(1)
            .expect("a route's first argument is a string literal");
        // The call's arguments end at the first parenthesis that closes more than opened.
        let mut depth = 0usize;
        let end = call
            .char_indices()
            .find(|&(_, c)| match c {
                '(' => {
                    depth += 1;
                    false
                }
                ')' if depth == 0 => true,
                ')' => {
                    depth -= 1;
                    false
                }
                _ => false,
            })
            .map(|(i, _)| i)
            .expect("the call closes");
        let arguments = &call[..end];
        for method in METHODS {
            let pattern = format!("{method}(");
            let found = arguments.match_indices(&pattern).any(|(i, _)| {
                !arguments[..i]
                    .chars()
                    .next_back()
                    .is_some_and(|c| c.is_alphanumeric() || c == '_')
            });
            if found {
                routes.insert((method.to_owned(), path.to_owned()));
            }
        }
    }
    routes
}

/// A concrete URI for a templated path.
fn concrete(path: &str) -> String {
    path.replace("{id}", "01JNM7Q3W8X9Y2Z4A5B6C7D8E9")
        .replace("{provider}", "sandbox")
}

async fn status(router: &axum::Router, method: &str, path: &str) -> (StatusCode, String) {
    let method = Method::from_bytes(method.to_uppercase().as_bytes()).expect("method");
    let response = router
        .clone()
        .oneshot(
            Request::builder()
                .method(method)
                .uri(concrete(path))
                .body(Body::empty())
                .expect("request"),
        )
        .await
        .expect("infallible");
    let status = response.status();
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .expect("body");
    (status, String::from_utf8_lossy(&bytes).into_owned())
}

#[test]
fn the_committed_document_is_what_the_code_generates() {
    let document = openapi::document();
    let path = committed_path();
    if std::env::var_os("VITALS_WRITE_OPENAPI").is_some() {
        std::fs::write(&path, &document).expect("writes docs/openapi.json");
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    let first_difference = committed
        .lines()
        .zip(document.lines())
        .position(|(a, b)| a != b)
        .unwrap_or(committed.lines().count().min(document.lines().count()));
    assert!(
        committed == document,
        "docs/openapi.json is not what the code generates (first difference at line {}); \
         regenerate it with `{REGENERATE}` and commit the result",
        first_difference + 1
    );
}

#[test]
fn the_document_has_exactly_the_routes_of_the_router() {
    let routed = routed_in_source();
    assert!(
        routed.len() >= 24,
        "reading the router's source found only {routed:?}"
    );
    let documented = documented();
    let undocumented: Vec<_> = routed.difference(&documented).collect();
    let unrouted: Vec<_> = documented.difference(&routed).collect();
    assert!(
        undocumented.is_empty() && unrouted.is_empty(),
        "routes without a #[utoipa::path] in ApiDoc: {undocumented:?}; \
         documented operations the router lacks: {unrouted:?}"
    );
}

#[tokio::test]
async fn every_documented_operation_is_routed_and_no_other_method_is() {
    let (router, _dir) = support::router();
    let documented = documented();
    let paths: BTreeSet<&String> = documented.iter().map(|(_, path)| path).collect();
    for path in paths {
        for method in METHODS {
            let (status, body) = status(&router, method, path).await;
            if documented.contains(&(method.to_owned(), path.clone())) {
                // Without a token, a body or parameters, a routed operation answers
                // 401/400/415..., never the router's 404 or 405.
                assert!(
                    status != StatusCode::METHOD_NOT_ALLOWED
                        && !(status == StatusCode::NOT_FOUND && body.contains("\"not_found\"")),
                    "{method} {path} is documented but not routed: {status} {body}"
                );
            } else {
                assert_eq!(
                    status,
                    StatusCode::METHOD_NOT_ALLOWED,
                    "{method} {path} is routed but not documented"
                );
            }
        }
    }
}

#[tokio::test]
async fn the_router_serves_the_document() {
    let response = support::get_in_process("/openapi.json").await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(
        response.headers()["content-type"].to_str().ok(),
        Some("application/json")
    );
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .expect("body");
    assert_eq!(bytes, openapi::document().as_bytes());
}

#[test]
fn every_operation_under_v1_me_and_the_connections_requires_a_bearer_token() {
    let document = generated();
    for (method, path) in documented() {
        let operation = &document["paths"][&path][&method];
        let bearer = operation["security"]
            .as_array()
            .is_some_and(|s| s.iter().any(|r| r.get("bearer").is_some()));
        let needs_token = path.starts_with("/v1/me")
            || path.starts_with("/v1/catalog")
            || path.ends_with("/connect")
            || path.ends_with("/complete")
            || path.ends_with("/disconnect");
        assert_eq!(
            bearer, needs_token,
            "{method} {path}: bearer security is {bearer}, expected {needs_token}"
        );
        if needs_token {
            assert!(
                operation["responses"].get("401").is_some(),
                "{method} {path} needs a token but does not document 401"
            );
        }
    }
    assert!(
        document["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer",
        "the bearer scheme is registered"
    );
}

/// Checks values against the document's schemas (the subset of JSON Schema it uses).
/// Stricter than JSON Schema on purpose: an object may not carry a property its schema
/// does not list, so an undocumented field fails too.
struct Checker {
    document: Value,
}

impl Checker {
    fn resolve<'a>(&'a self, value: &'a Value) -> &'a Value {
        match value.get("$ref").and_then(Value::as_str) {
            Some(reference) => {
                let pointer = reference.trim_start_matches('#');
                self.resolve(self.document.pointer(pointer).expect("a $ref resolves"))
            }
            None => value,
        }
    }

    fn check(&self, schema: &Value, value: &Value, at: &str, errors: &mut Vec<String>) {
        let schema = self.resolve(schema);
        if let Some(options) = schema.get("oneOf").and_then(Value::as_array) {
            let matching = options
                .iter()
                .filter(|option| {
                    let mut inner = Vec::new();
                    self.check(option, value, at, &mut inner);
                    inner.is_empty()
                })
                .count();
            if matching != 1 {
                errors.push(format!("{at}: {matching} of oneOf match {value}"));
            }
            return;
        }
        if let Some(types) = schema.get("type") {
            let types: Vec<&str> = match types {
                Value::String(t) => vec![t.as_str()],
                Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
                _ => vec![],
            };
            let kind = match value {
                Value::Null => "null",
                Value::Bool(_) => "boolean",
                Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
                Value::Number(_) => "number",
                Value::String(_) => "string",
                Value::Array(_) => "array",
                Value::Object(_) => "object",
            };
            let fits = types.contains(&kind) || (kind == "integer" && types.contains(&"number"));
            if !fits {
                errors.push(format!("{at}: {value} is not {types:?}"));
                return;
            }
        }
        if let Some(allowed) = schema.get("enum").and_then(Value::as_array)
            && !allowed.contains(value)
        {
            errors.push(format!("{at}: {value} is not one of {allowed:?}"));
        }
        if let (Some(min), Some(n)) = (
            schema.get("minimum").and_then(Value::as_f64),
            value.as_f64(),
        ) && n < min
        {
            errors.push(format!("{at}: {n} < {min}"));
        }
        if let (Some(format), Some(text)) =
            (schema.get("format").and_then(Value::as_str), value.as_str())
        {
            let ok = match format {
                // Any RFC 3339 date-time is read; the API always answers in one form.
                "date-time" if at.starts_with("response") => {
                    events_schema::time::Timestamp::parse(text).is_ok()
                }
                "date-time" => events_schema::time::Timestamp::parse_rfc3339(text).is_ok(),
                "date" => events_schema::time::Day::parse(text).is_ok(),
                "decimal" => text.parse::<rust_decimal::Decimal>().is_ok(),
                _ => true,
            };
            if !ok {
                errors.push(format!("{at}: {text:?} is not a {format}"));
            }
        }
        if let Some(object) = value.as_object() {
            if let Some(required) = schema.get("required").and_then(Value::as_array) {
                for name in required.iter().filter_map(Value::as_str) {
                    if !object.contains_key(name) {
                        errors.push(format!("{at}: missing required `{name}` in {value}"));
                    }
                }
            }
            if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
                for (name, field) in object {
                    match properties.get(name) {
                        Some(property) => {
                            self.check(property, field, &format!("{at}.{name}"), errors)
                        }
                        None => errors.push(format!("{at}: undocumented property `{name}`")),
                    }
                }
            }
        }
        if let (Some(items), Some(array)) = (schema.get("items"), value.as_array()) {
            for (i, item) in array.iter().enumerate() {
                self.check(items, item, &format!("{at}[{i}]"), errors);
            }
        }
    }

    fn operation(&self, method: &str, template: &str) -> &Value {
        let operation = &self.document["paths"][template][method];
        assert!(
            operation.is_object(),
            "{method} {template} is not documented"
        );
        operation
    }

    /// The request body is what the operation documents.
    fn request(&self, method: &str, template: &str, body: &Value) {
        let schema = &self.operation(method, template)["requestBody"]["content"]["application/json"]
            ["schema"];
        assert!(
            schema.is_object(),
            "{method} {template} documents no JSON body"
        );
        let mut errors = Vec::new();
        self.check(schema, body, "request", &mut errors);
        assert!(errors.is_empty(), "{method} {template}: {errors:#?}");
    }

    /// The status is documented for the operation, and the content type and body are
    /// the documented ones.
    fn response(&self, method: &str, template: &str, reply: &Reply) {
        let status = reply.status.as_u16().to_string();
        let documented = self.resolve(&self.operation(method, template)["responses"][&status]);
        assert!(
            documented.is_object(),
            "{method} {template} answered {status}, which it does not document: {}",
            reply.text
        );
        let content = documented.get("content").and_then(Value::as_object);
        let Some(content) = content else {
            assert!(
                reply.text.is_empty(),
                "{method} {template} {status}: documented without a body, got {}",
                reply.text
            );
            return;
        };
        let (media, media_type) = content.iter().next().expect("a media type");
        assert_eq!(
            reply.content_type.split(';').next(),
            media.split(';').next(),
            "{method} {template} {status}: content type"
        );
        if media == "application/json" {
            let body: Value = serde_json::from_str(&reply.text).unwrap_or_else(|_| {
                panic!("{method} {template} {status}: not JSON: {}", reply.text)
            });
            let mut errors = Vec::new();
            self.check(&media_type["schema"], &body, "response", &mut errors);
            assert!(
                errors.is_empty(),
                "{method} {template} {status}: {errors:#?}\n{body:#}"
            );
        }
    }
}

struct Reply {
    status: StatusCode,
    content_type: String,
    text: String,
}

impl Reply {
    fn json(&self) -> Value {
        serde_json::from_str(&self.text).unwrap_or(Value::Null)
    }

    /// The string field `name` of the JSON body.
    fn string(&self, name: &str) -> String {
        let value = self.json()[name].as_str().map(str::to_owned);
        value.unwrap_or_else(|| panic!("no string {name} in {}", self.text))
    }
}

/// Drives the router in-process, checking every exchange against the document, and
/// remembering which operations answered with a success.
struct Client {
    router: axum::Router,
    checker: Checker,
    answered: std::sync::Mutex<BTreeSet<(String, String)>>,
}

/// Attributes of storage rows that no response may show: keys, index keys, versions,
/// tombstones, TTLs, credentials, sessions and projector bookkeeping.
fn storage_attribute(name: &str) -> bool {
    matches!(
        name,
        "pk" | "sk"
            | "status_pk"
            | "status_sk"
            | "email_pk"
            | "catalog_pk"
            | "catalog_sk"
            | "active_day_pk"
            | "active_day_sk"
            | "version"
            | "deleted"
            | "expires_at"
            | "entries"
            | "rev"
            | "hwm"
            | "password_hash"
            | "secret_hash"
            | "latest_session"
            | "credential_generation"
            | "current_period_rank"
            | "progress_rev"
    ) || name.ends_with("_version")
        || name.ends_with("_rev")
        || name.ends_with("_entries")
}

fn storage_attributes_in(value: &Value, path: &str, found: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (name, inner) in map {
                if storage_attribute(name) {
                    found.push(format!("{path}.{name}"));
                }
                storage_attributes_in(inner, &format!("{path}.{name}"), found);
            }
        }
        Value::Array(items) => {
            for (i, inner) in items.iter().enumerate() {
                storage_attributes_in(inner, &format!("{path}[{i}]"), found);
            }
        }
        _ => {}
    }
}

struct Call<'a> {
    method: &'a str,
    template: &'a str,
    uri: String,
    token: Option<&'a str>,
    headers: Vec<(&'a str, String)>,
    body: Option<Vec<u8>>,
    /// Whether the JSON body must be what the operation documents (false for requests
    /// that are wrong on purpose).
    check_body: bool,
}

impl<'a> Call<'a> {
    fn new(method: &'a str, template: &'a str) -> Self {
        Self {
            method,
            template,
            uri: concrete(template),
            token: None,
            headers: vec![],
            body: None,
            check_body: true,
        }
    }

    fn invalid(mut self) -> Self {
        self.check_body = false;
        self
    }

    fn uri(mut self, uri: impl Into<String>) -> Self {
        self.uri = uri.into();
        self
    }

    fn token(mut self, token: &'a str) -> Self {
        self.token = Some(token);
        self
    }

    fn header(mut self, name: &'a str, value: impl Into<String>) -> Self {
        self.headers.push((name, value.into()));
        self
    }

    fn json(mut self, body: Value) -> Self {
        self.body = Some(body.to_string().into_bytes());
        self.header("content-type", "application/json")
    }

    fn raw(mut self, body: impl Into<Vec<u8>>) -> Self {
        self.body = Some(body.into());
        self
    }
}

impl Client {
    async fn send(&self, call: Call<'_>) -> Reply {
        if let Some(body) = &call.body
            && call.check_body
            && let Ok(json) = serde_json::from_slice::<Value>(body)
        {
            self.checker.request(call.method, call.template, &json);
        }
        let mut request = Request::builder()
            .method(Method::from_bytes(call.method.to_uppercase().as_bytes()).expect("method"))
            .uri(call.uri.as_str());
        if let Some(token) = call.token {
            request = request.header("authorization", format!("Bearer {token}"));
        }
        for (name, value) in &call.headers {
            request = request.header(*name, value.as_str());
        }
        let request = request
            .body(Body::from(call.body.unwrap_or_default()))
            .expect("request");
        let response = self
            .router
            .clone()
            .oneshot(request)
            .await
            .expect("infallible");
        let status = response.status();
        let content_type = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .expect("body");
        let reply = Reply {
            status,
            content_type,
            text: String::from_utf8_lossy(&bytes).into_owned(),
        };
        self.checker.response(call.method, call.template, &reply);
        let mut leaked = Vec::new();
        // The API's own answers (`/healthz` names the server's version) are not rows.
        if call.template.starts_with("/v1/") {
            storage_attributes_in(&reply.json(), "response", &mut leaked);
        }
        assert!(
            leaked.is_empty(),
            "{} {} shows storage attributes {leaked:?}: {}",
            call.method,
            call.template,
            reply.text
        );
        if (status.is_success() || status.is_redirection())
            && let Ok(mut answered) = self.answered.lock()
        {
            answered.insert((call.method.to_owned(), call.template.to_owned()));
        }
        reply
    }

    /// Sends `call` and asserts it is answered with `status`.
    async fn expect(&self, call: Call<'_>, status: StatusCode) -> Reply {
        let (method, uri) = (call.method, call.uri.clone());
        let reply = self.send(call).await;
        assert_eq!(reply.status, status, "{method} {uri}: {}", reply.text);
        reply
    }

    /// Retries a GET until `ok` holds (projections are asynchronous).
    async fn eventually(
        &self,
        template: &str,
        uri: &str,
        token: &str,
        ok: impl Fn(&Value) -> bool,
    ) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        loop {
            let reply = self
                .send(Call::new("get", template).uri(uri).token(token))
                .await;
            if reply.status == StatusCode::OK && ok(&reply.json()) {
                return;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "{uri} did not converge: {} {}",
                reply.status,
                reply.text
            );
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    }
}

/// Today (UTC): goals count from the day they are set, so the day's facts are today's.
fn utc_today() -> String {
    chrono::Utc::now().date_naive().to_string()
}

/// A meal as a phone sends it: an RFC 3339 time with an offset, quantities as numbers.
fn meal(calories: i64) -> Value {
    serde_json::json!({"name": "Oats", "eaten_at": format!("{}T09:00:00+01:00", utc_today()), "calories": calories, "protein_g": 30, "carbs_g": 40.5, "fat_g": 5})
}

/// The API walked once, as the mobile app and the operator use it: one server (the
/// router over an embedded store, the projectors running) shared by the named cases
/// below, in order, each leaving what the next needs. A failure names its case.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_the_handlers_answer_is_what_the_document_says() {
    let walk = Walk::start().await;
    operations(&walk).await;
    let ana = identity(&walk).await;
    let goal = writes(&walk, &ana).await;
    a_day_of_training_and_sleep(&walk, &ana).await;
    a_wearable(&walk, &ana).await;
    reads(&walk, &ana, &goal).await;
    catalog_plans_and_environment(&walk, &ana).await;
    readiness(&walk, &ana).await;
    errors(&walk, &ana).await;
    let ana = sessions(&walk, &ana).await;
    leaving(&walk, &ana).await;
    every_operation_was_walked(&walk);
    vitals_tests::access::finish(&walk.recorded, "http-walk");
}

/// The server the cases share.
struct Walk {
    client: Client,
    api: Arc<vitals::http::api::Api>,
    recorded: Arc<infra::recorded::Recorded>,
    pipeline: Arc<projectors::pipeline::Pipeline>,
    _dir: tempfile::TempDir,
}

impl Walk {
    async fn start() -> Self {
        let (embedded, dir) = vitals_tests::pipeline::open();
        // Every call the handlers and projectors make is recorded against the declared
        // access patterns (checked once the walk is done); the cases' own reads are not.
        let recorded = vitals_tests::access::recording(embedded.clone(), vitals::access::catalog());
        let pipeline = Arc::new(vitals_tests::pipeline::start_on(
            &embedded,
            recorded.clone(),
        ));
        let store: Arc<dyn infra::Store> = recorded.clone();
        let api = support::api(store.clone(), 10000);
        let client = Client {
            router: app(AppState {
                store,
                pipeline: Some(pipeline.clone()),
                api: api.clone(),
            }),
            checker: Checker {
                document: generated(),
            },
            answered: Default::default(),
        };
        Self {
            client,
            api,
            recorded,
            pipeline,
            _dir: dir,
        }
    }
}

/// Ana, signed up by the identity case: her access token and user id.
struct Ana {
    token: String,
    user: String,
}

/// Operations: health, metrics and the document itself.
async fn operations(walk: &Walk) {
    let _case = Case("operations");
    let client = &walk.client;
    client.send(Call::new("get", "/healthz")).await;
    client.send(Call::new("get", "/metrics")).await;
    client.send(Call::new("get", "/openapi.json")).await;
}

/// Identity: sign-up (a taken email refused), sign-in (a wrong password refused).
async fn identity(walk: &Walk) -> Ana {
    let _case = Case("identity");
    let client = &walk.client;
    let register = json!({"email": "ana@example.com", "password": "correct horse battery", "display_name": "Ana", "timezone": "UTC"});
    let reply = client
        .expect(
            Call::new("post", "/v1/auth/register").json(register.clone()),
            StatusCode::CREATED,
        )
        .await;
    let token = reply.string("access_token");
    let user = reply.string("user_id");
    let taken = client
        .send(Call::new("post", "/v1/auth/register").json(register))
        .await;
    assert_eq!(taken.status, StatusCode::CONFLICT);
    let login = json!({"email": "ana@example.com", "password": "correct horse battery"});
    let reply = client
        .send(Call::new("post", "/v1/auth/login").json(login))
        .await;
    assert_eq!(reply.status, StatusCode::OK);
    let wrong = json!({"email": "ana@example.com", "password": "wrong horse battery"});
    let reply = client
        .send(Call::new("post", "/v1/auth/login").json(wrong))
        .await;
    assert_eq!(reply.status, StatusCode::UNAUTHORIZED);
    Ana { token, user }
}

/// Writes: a goal and meals (an idempotent retry, a reused key refused, an edit, a
/// deletion); returns the goal's id.
async fn writes(walk: &Walk, ana: &Ana) -> String {
    let _case = Case("writes");
    let (client, token) = (&walk.client, ana.token.as_str());
    let reply = client
        .expect(
            Call::new("post", "/v1/me/goals")
                .token(token)
                .json(json!({"kind": "daily_protein_grams", "target": 50, "title": "Protein"})),
            StatusCode::CREATED,
        )
        .await;
    let goal = reply.string("goal_id");
    let first = client
        .expect(
            Call::new("post", "/v1/me/meals")
                .token(token)
                .header("idempotency-key", "meal-1")
                .json(meal(400)),
            StatusCode::CREATED,
        )
        .await;
    let retried = client
        .send(
            Call::new("post", "/v1/me/meals")
                .token(token)
                .header("idempotency-key", "meal-1")
                .json(meal(400)),
        )
        .await;
    assert_eq!(
        (retried.status, retried.json()),
        (first.status, first.json())
    );
    let reused = client
        .send(
            Call::new("post", "/v1/me/meals")
                .token(token)
                .header("idempotency-key", "meal-1")
                .json(meal(999)),
        )
        .await;
    assert_eq!(reused.status, StatusCode::UNPROCESSABLE_ENTITY);
    let meal_id = first.string("meal_id");
    client
        .expect(
            Call::new("put", "/v1/me/meals/{id}")
                .uri(format!("/v1/me/meals/{meal_id}"))
                .token(token)
                .json(meal(450)),
            StatusCode::OK,
        )
        .await;
    let second = client
        .send(
            Call::new("post", "/v1/me/meals")
                .token(token)
                .json(meal(100)),
        )
        .await;
    let second = second.string("meal_id");
    client
        .expect(
            Call::new("delete", "/v1/me/meals/{id}")
                .uri(format!("/v1/me/meals/{second}"))
                .token(token),
            StatusCode::NO_CONTENT,
        )
        .await;
    goal
}

/// A workout and a night entered in the app, and a training block started.
async fn a_day_of_training_and_sleep(walk: &Walk, ana: &Ana) {
    let _case = Case("a day of training and sleep");
    let (client, api) = (&walk.client, &walk.api);
    let (token, user) = (ana.token.as_str(), &ana.user);
    let ride = json!({"sport": "ride", "started_at": format!("{}T17:00:00.000Z", utc_today()), "duration_s": 3600, "distance_m": 30000});
    let night = json!({"start": format!("{}T00:00:00.000Z", utc_today()), "end": format!("{}T08:00:00.000Z", utc_today()), "score": 80, "stages": {"awake_min": 10, "light_min": 250, "deep_min": 100, "rem_min": 120}});
    for (template, body) in [("/v1/me/workouts", ride), ("/v1/me/sleep", night)] {
        let call = Call::new("post", template).token(token).json(body);
        client.expect(call, StatusCode::CREATED).await;
    }
    let meta =
        commands::CommandMeta::new(events_schema::ids::UserId::parse(user).expect("user id"));
    let today = events_schema::time::Day::new(chrono::Utc::now().date_naive());
    api.activity
        .start_training_block(
            &meta,
            commands::activity::StartTrainingBlock {
                start_day: today,
                weeks: 4,
                focus: "base".into(),
            },
        )
        .await
        .expect("a training block");
}

/// A wearable: connected through the sandbox provider, a signed webhook delivered
/// twice, an unsigned one refused.
async fn a_wearable(walk: &Walk, ana: &Ana) {
    let _case = Case("a wearable");
    let (client, token) = (&walk.client, ana.token.as_str());
    let reply = client
        .expect(
            Call::new("post", "/v1/integrations/{provider}/connect").token(token),
            StatusCode::OK,
        )
        .await;
    let state = reply.string("state");
    let code = support::approved("ana-watch", &reply.json());
    client
        .expect(
            Call::new("get", "/v1/integrations/{provider}/callback").uri(format!(
                "/v1/integrations/sandbox/callback?state={state}&code={code}"
            )),
            StatusCode::SEE_OTHER,
        )
        .await;
    client
        .expect(
            Call::new("post", "/v1/integrations/{provider}/complete")
                .token(token)
                .json(json!({"state": state, "code": code})),
            StatusCode::OK,
        )
        .await;
    let delivery = json!({"delivery_id": "d-1", "provider_user_id": "ana-watch",
        "workouts": [{"external_id": "run-1", "sport": "run", "started_at": format!("{}T07:00:00.000Z", utc_today()), "duration_s": 2400, "distance_m": 8000, "calories": null}],
        "sleep": []});
    for _ in 0..2 {
        let bytes = delivery.to_string().into_bytes();
        let now = chrono::Utc::now().timestamp();
        let signature = commands::integrations::sign(support::WEBHOOK_SECRET, now, &bytes);
        client
            .expect(
                Call::new("post", "/v1/integrations/{provider}/webhook")
                    .header("x-vitals-timestamp", now.to_string())
                    .header("x-vitals-signature", signature)
                    .header("content-type", "application/json")
                    .raw(bytes),
                StatusCode::ACCEPTED,
            )
            .await;
    }
    let reply = client
        .send(
            Call::new("post", "/v1/integrations/{provider}/webhook")
                .header("x-vitals-timestamp", "1")
                .header("x-vitals-signature", "00")
                .raw(b"{}".to_vec())
                .invalid(),
        )
        .await;
    assert_eq!(reply.status, StatusCode::UNAUTHORIZED);
}

/// Reads, once the projections have converged; polling with an entity tag; profile and
/// goal updates.
async fn reads(walk: &Walk, ana: &Ana, goal: &str) {
    converged_reads(walk, ana, goal).await;
    polling_with_an_entity_tag(walk, ana).await;
    the_latest_and_the_current(walk, ana).await;
    profile_and_goal_updates(walk, ana, goal).await;
}

/// The dashboard and the goal's progress converge; the histories and the goal answer.
async fn converged_reads(walk: &Walk, ana: &Ana, goal: &str) {
    let _case = Case("reads, once the projections converged");
    let (client, token) = (&walk.client, ana.token.as_str());
    client
        .eventually(
            "/v1/me/dashboard",
            &format!("/v1/me/dashboard?date={}", utc_today()),
            token,
            |d| {
                let day = &d["day"];
                day["nutrition"].is_object()
                    && day["activity"]["workouts"] == 2
                    && day["sleep"].is_object()
                    && d["profile"].is_object()
                    && d["recent_meals"].as_array().is_some_and(|m| m.len() == 1)
                    && d["active_goals"].as_array().is_some_and(|g| g.len() == 1)
                    && d["connections"].as_array().is_some_and(|c| c.len() == 1)
            },
        )
        .await;
    let progress = format!("/v1/me/goals/{goal}/progress");
    client
        .eventually("/v1/me/goals/{id}/progress", &progress, token, |p| {
            p["items"].as_array().is_some_and(|p| !p.is_empty())
        })
        .await;
    let today = utc_today();
    for (template, uri) in [
        ("/v1/me/meals", format!("/v1/me/meals?date={today}")),
        (
            "/v1/me/workouts",
            format!("/v1/me/workouts?from={today}&to={today}&limit=1"),
        ),
        (
            "/v1/me/sleep",
            format!("/v1/me/sleep?from={today}&to={today}"),
        ),
        ("/v1/me/goals/{id}", format!("/v1/me/goals/{goal}")),
    ] {
        let reply = client
            .send(Call::new("get", template).uri(uri.clone()).token(token))
            .await;
        assert_eq!(reply.status, StatusCode::OK, "{uri}: {}", reply.text);
    }
}

/// Polling the profile with the tag its last answer carried.
async fn polling_with_an_entity_tag(walk: &Walk, ana: &Ana) {
    let _case = Case("polling with an entity tag");
    let (client, token) = (&walk.client, ana.token.as_str());
    // Polling with the tag the last answer carried: 304, no body.
    let etag = {
        let response = client
            .router
            .clone()
            .oneshot(
                Request::get("/v1/me/profile")
                    .header("authorization", format!("Bearer {token}"))
                    .body(Body::empty())
                    .expect("request"),
            )
            .await
            .expect("infallible");
        response.headers()["etag"]
            .to_str()
            .expect("etag")
            .to_owned()
    };
    client
        .expect(
            Call::new("get", "/v1/me/profile")
                .token(token)
                .header("if-none-match", etag),
            StatusCode::NOT_MODIFIED,
        )
        .await;
    client
        .eventually("/v1/me/profile", "/v1/me/profile", token, |p| {
            p["email"] == "ana@example.com"
        })
        .await;
}

/// The latest workout, the current training block, the daily nutrition, active goals.
async fn the_latest_and_the_current(walk: &Walk, ana: &Ana) {
    let _case = Case("the latest and the current");
    let (client, token) = (&walk.client, ana.token.as_str());
    for (template, uri) in [
        ("/v1/me/workouts/latest", "/v1/me/workouts/latest"),
        (
            "/v1/me/training-block/current",
            "/v1/me/training-block/current",
        ),
        (
            "/v1/me/nutrition/daily",
            &format!("/v1/me/nutrition/daily?from={0}&to={0}", utc_today()),
        ),
        ("/v1/me/goals", "/v1/me/goals?status=active"),
    ] {
        let reply = client
            .send(Call::new("get", template).uri(uri).token(token))
            .await;
        assert_eq!(reply.status, StatusCode::OK, "{uri}: {}", reply.text);
    }
}

/// A profile update; a goal completed, then refused going back to active.
async fn profile_and_goal_updates(walk: &Walk, ana: &Ana, goal: &str) {
    let _case = Case("profile and goal updates");
    let (client, token) = (&walk.client, ana.token.as_str());
    client
        .expect(
            Call::new("patch", "/v1/me/profile")
                .token(token)
                .json(json!({"display_name": "Ana B.", "units": "imperial"})),
            StatusCode::OK,
        )
        .await;
    client
        .expect(
            Call::new("patch", "/v1/me/goals/{id}")
                .uri(format!("/v1/me/goals/{goal}"))
                .token(token)
                .json(json!({"status": "completed"})),
            StatusCode::OK,
        )
        .await;
    client
        .expect(
            Call::new("patch", "/v1/me/goals/{id}")
                .uri(format!("/v1/me/goals/{goal}"))
                .token(token)
                .json(json!({"status": "active"})),
            StatusCode::CONFLICT,
        )
        .await;
}

/// The catalog (curated by an operator), scheduled meals, training blocks and the
/// environment.
async fn catalog_plans_and_environment(walk: &Walk, ana: &Ana) {
    let recipe = the_catalog_and_the_environment(walk, ana).await;
    scheduled_meals_and_training_blocks(walk, ana, &recipe).await;
}

/// An operator curates a recipe and a meal plan; the catalog, the environment and the
/// training blocks answer. The recipe's id.
async fn the_catalog_and_the_environment(walk: &Walk, ana: &Ana) -> events_schema::ids::RecipeId {
    let _case = Case("the catalog and the environment");
    let (client, api, token) = (&walk.client, &walk.api, ana.token.as_str());
    let curator = commands::CommandMeta::new(events_schema::ids::UserId::generate());
    let recipe = api
        .nutrition
        .curate_recipe(
            &curator,
            commands::nutrition::CurateRecipe {
                name: "Oats".into(),
                category: "breakfast".into(),
                nutrients: events_schema::events::nutrition::Nutrients {
                    calories: 400.into(),
                    protein_g: 20.into(),
                    carbs_g: 60.into(),
                    fat_g: 8.into(),
                },
            },
        )
        .await
        .expect("a recipe")
        .value;
    api.nutrition
        .curate_meal_plan(
            &curator,
            commands::nutrition::CurateMealPlan {
                name: "Week".into(),
                category: "starter".into(),
                recipes: vec![recipe.clone()],
            },
        )
        .await
        .expect("a meal plan");
    for (template, uri) in [
        (
            "/v1/catalog/recipes",
            "/v1/catalog/recipes?category=breakfast",
        ),
        (
            "/v1/catalog/meal-plans",
            "/v1/catalog/meal-plans?category=starter",
        ),
        (
            "/v1/me/environment",
            "/v1/me/environment?geohash=u09tvw&at=2026-03-01T08:00:00Z",
        ),
        ("/v1/me/training-blocks", "/v1/me/training-blocks"),
    ] {
        let reply = client
            .send(Call::new("get", template).uri(uri).token(token))
            .await;
        assert_eq!(reply.status, StatusCode::OK, "{uri}: {}", reply.text);
        assert!(
            !reply.json()["cell"].is_null()
                || reply.json()["items"]
                    .as_array()
                    .is_some_and(|i| !i.is_empty()),
            "{uri}: {}",
            reply.text
        );
    }
    recipe
}

/// Meals scheduled from the recipe, one eaten and one taken off; a training block
/// started and ended.
async fn scheduled_meals_and_training_blocks(
    walk: &Walk,
    ana: &Ana,
    recipe: &events_schema::ids::RecipeId,
) {
    let _case = Case("scheduled meals and training blocks");
    let (client, token) = (&walk.client, ana.token.as_str());
    let today = utc_today();
    let mut scheduled = Vec::new();
    for name in ["Oats", "Apple"] {
        let reply = client
            .expect(
                Call::new("post", "/v1/me/scheduled-meals")
                    .token(token)
                    .json(json!({"day": today, "name": name, "recipe_id": recipe})),
                StatusCode::CREATED,
            )
            .await;
        scheduled.push(reply.string("scheduled_meal_id"));
    }
    client
        .expect(
            Call::new("get", "/v1/me/scheduled-meals")
                .uri(format!("/v1/me/scheduled-meals?from={today}&to={today}"))
                .token(token),
            StatusCode::OK,
        )
        .await;
    client
        .expect(
            Call::new("post", "/v1/me/scheduled-meals/{day}/{id}/eaten")
                .uri(format!(
                    "/v1/me/scheduled-meals/{today}/{}/eaten",
                    scheduled[0]
                ))
                .token(token)
                .json(json!({"eaten_at": format!("{today}T00:30:00Z")})),
            StatusCode::CREATED,
        )
        .await;
    client
        .expect(
            Call::new("delete", "/v1/me/scheduled-meals/{day}/{id}")
                .uri(format!("/v1/me/scheduled-meals/{today}/{}", scheduled[1]))
                .token(token),
            StatusCode::NO_CONTENT,
        )
        .await;
    let reply = client
        .expect(
            Call::new("post", "/v1/me/training-blocks")
                .token(token)
                .json(json!({"start_day": today, "weeks": 2, "focus": "speed"})),
            StatusCode::CREATED,
        )
        .await;
    let block = reply.string("training_block_id");
    client
        .expect(
            Call::new("post", "/v1/me/training-blocks/{start_day}/{id}/end")
                .uri(format!("/v1/me/training-blocks/{today}/{block}/end"))
                .token(token)
                .json(json!({"ended_on": today})),
            StatusCode::OK,
        )
        .await;
}

/// Readiness: the nightly job scores today once the day's markers are projected.
async fn readiness(walk: &Walk, ana: &Ana) {
    let _case = Case("readiness");
    let (client, token) = (&walk.client, ana.token.as_str());
    // The nightly job is code under test: its calls are recorded too.
    let shared: Arc<dyn infra::Store> = walk.recorded.clone();
    let today = utc_today();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        projectors::nightly::rescore_day(
            &infra::table::Table::new(shared.clone()),
            events_schema::time::Day::parse(&today).expect("day"),
            events_schema::time::Timestamp::now(),
        )
        .await
        .expect("the nightly job");
        let reply = client
            .send(
                Call::new("get", "/v1/me/readiness")
                    .uri(format!("/v1/me/readiness?date={today}"))
                    .token(token),
            )
            .await;
        if reply.status == StatusCode::OK {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no readiness: {}",
            reply.text
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// Errors, each with its documented status and shape.
async fn errors(walk: &Walk, ana: &Ana) {
    let _case = Case("errors");
    let (client, token) = (&walk.client, ana.token.as_str());
    for (method, template, call) in [
        ("get", "/v1/me/profile", Call::new("get", "/v1/me/profile")),
        (
            "get",
            "/v1/me/profile",
            Call::new("get", "/v1/me/profile").token("forged"),
        ),
        (
            "post",
            "/v1/me/meals",
            Call::new("post", "/v1/me/meals")
                .token(token)
                .header("content-type", "application/json")
                .raw(b"{not json".to_vec()),
        ),
        (
            "post",
            "/v1/me/meals",
            Call::new("post", "/v1/me/meals")
                .token(token)
                .raw(meal(1).to_string().into_bytes()),
        ),
        (
            "post",
            "/v1/me/meals",
            Call::new("post", "/v1/me/meals")
                .token(token)
                .invalid()
                .json(json!({"name": "x".repeat(100_000)})),
        ),
        (
            "post",
            "/v1/me/meals",
            Call::new("post", "/v1/me/meals")
                .token(token)
                .invalid()
                .json(json!({"name": "Oats"})),
        ),
        (
            "post",
            "/v1/me/meals",
            Call::new("post", "/v1/me/meals")
                .token(token)
                .invalid()
                .json(meal(-5)),
        ),
        (
            "delete",
            "/v1/me/meals/{id}",
            Call::new("delete", "/v1/me/meals/{id}")
                .token(token)
                .header("idempotency-key", "has#hash"),
        ),
        (
            "get",
            "/v1/me/nutrition/daily",
            Call::new("get", "/v1/me/nutrition/daily")
                .uri("/v1/me/nutrition/daily?from=2026-03-01")
                .token(token),
        ),
        (
            "get",
            "/v1/me/nutrition/daily",
            Call::new("get", "/v1/me/nutrition/daily")
                .uri("/v1/me/nutrition/daily?from=2026-03-01&to=2026-05-01")
                .token(token),
        ),
        (
            "get",
            "/v1/me/dashboard",
            Call::new("get", "/v1/me/dashboard")
                .uri("/v1/me/dashboard?date=March")
                .token(token),
        ),
        (
            "get",
            "/v1/me/goals",
            Call::new("get", "/v1/me/goals")
                .uri("/v1/me/goals?status=bogus")
                .token(token),
        ),
        (
            "get",
            "/v1/me/goals/{id}/progress",
            Call::new("get", "/v1/me/goals/{id}/progress").token(token),
        ),
        (
            "post",
            "/v1/integrations/{provider}/connect",
            Call::new("post", "/v1/integrations/{provider}/connect")
                .uri("/v1/integrations/nope/connect")
                .token(token),
        ),
        (
            "get",
            "/v1/integrations/{provider}/callback",
            Call::new("get", "/v1/integrations/{provider}/callback")
                .uri("/v1/integrations/nope/callback?state=unknown&code=code-x"),
        ),
        (
            "post",
            "/v1/integrations/{provider}/complete",
            Call::new("post", "/v1/integrations/{provider}/complete")
                .token(token)
                .json(json!({"state": "unknown", "code": "code-x"})),
        ),
        (
            "post",
            "/v1/integrations/{provider}/webhook",
            Call::new("post", "/v1/integrations/{provider}/webhook").raw(vec![b' '; 70 * 1024]),
        ),
    ] {
        let reply = client.send(call).await;
        assert!(
            reply.status.is_client_error(),
            "{method} {template}: {} {}",
            reply.status,
            reply.text
        );
    }
}

/// Sessions: a refresh token works once; logout ends a session; a provider
/// disconnected; a password change ends them all, and the access tokens issued before;
/// an email change takes the current password (a wrong one refused) and ends them too.
/// Ana, signed in again with the new email and password.
async fn sessions(walk: &Walk, ana: &Ana) -> Ana {
    let _case = Case("sessions");
    let (client, token) = (&walk.client, ana.token.as_str());
    let sign_in = || {
        let password = json!({"email": "ana@example.com", "password": "correct horse battery"});
        client.expect(
            Call::new("post", "/v1/auth/login").json(password),
            StatusCode::OK,
        )
    };
    let refresh = |token: &str, status| {
        let body = json!({"refresh_token": token});
        client.expect(Call::new("post", "/v1/auth/refresh").json(body), status)
    };
    let first = sign_in().await.string("refresh_token");
    let renewed = refresh(&first, StatusCode::OK).await;
    refresh(&first, StatusCode::UNAUTHORIZED).await;
    // The reuse ended the session: its next token is refused too.
    refresh(&renewed.string("refresh_token"), StatusCode::UNAUTHORIZED).await;
    let other = sign_in().await.string("refresh_token");
    client
        .expect(
            Call::new("post", "/v1/auth/logout").json(json!({"refresh_token": other})),
            StatusCode::NO_CONTENT,
        )
        .await;
    client
        .expect(
            Call::new("post", "/v1/integrations/{provider}/disconnect")
                .uri("/v1/integrations/sandbox/disconnect")
                .token(token),
            StatusCode::NO_CONTENT,
        )
        .await;
    let change = json!({"current_password": "correct horse battery", "new_password": NEW_PASSWORD});
    client
        .expect(
            Call::new("post", "/v1/me/password")
                .token(token)
                .json(change),
            StatusCode::NO_CONTENT,
        )
        .await;
    // Every access token issued before ends with it.
    let profile = Call::new("get", "/v1/me/profile").token(token);
    client.expect(profile, StatusCode::UNAUTHORIZED).await;
    let signed_in = |email: &str| {
        let login = json!({"email": email, "password": NEW_PASSWORD});
        let call = Call::new("post", "/v1/auth/login").json(login);
        client.expect(call, StatusCode::OK)
    };
    let token = signed_in("ana@example.com").await.string("access_token");
    let move_to = |password: &str| {
        let body = json!({"email": "ana.b@example.com", "current_password": password});
        Call::new("patch", "/v1/me/profile")
            .token(&token)
            .json(body)
    };
    let guess = move_to("a guess at the password");
    client.expect(guess, StatusCode::FORBIDDEN).await;
    client.expect(move_to(NEW_PASSWORD), StatusCode::OK).await;
    let profile = Call::new("get", "/v1/me/profile").token(&token);
    client.expect(profile, StatusCode::UNAUTHORIZED).await;
    let token = signed_in("ana.b@example.com").await.string("access_token");
    Ana {
        token,
        user: ana.user.clone(),
    }
}

/// Ana's password after the sessions case changed it.
const NEW_PASSWORD: &str = "a brand new passphrase";

/// Leaving: the account's deletion takes the current password (a wrong one refused),
/// and is accepted; the projectors stop.
async fn leaving(walk: &Walk, ana: &Ana) {
    let _case = Case("leaving");
    let (client, token) = (&walk.client, ana.token.as_str());
    let delete = |password: &str| {
        let body = json!({"current_password": password});
        Call::new("delete", "/v1/me").token(token).json(body)
    };
    let guess = delete("a guess at the password");
    client.expect(guess, StatusCode::FORBIDDEN).await;
    client
        .expect(delete(NEW_PASSWORD), StatusCode::ACCEPTED)
        .await;
    walk.pipeline.stop().await;
}

/// Every documented operation answered with a success (or its redirect) at least once.
fn every_operation_was_walked(walk: &Walk) {
    let _case = Case("every operation walked");
    let answered = walk.client.answered.lock().expect("answered").clone();
    let missing: Vec<_> = documented().difference(&answered).cloned().collect();
    assert!(missing.is_empty(), "operations never walked: {missing:?}");
}
