//! Helpers for black-box tests of the `vitals` binary: start it, find its port, speak
//! plain HTTP/1.1 to it, stop it.

#![allow(dead_code)]

pub mod aws_local;
pub mod whole_app;

use commands::integrations::Providers;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};
use vitals::http::api::Api;
use vitals::http::auth::{Auth, Verifier};
use vitals::http::limits::{LimitSettings, Limits};
use vitals::http::{AppState, app};

/// A child process killed (and reaped) when the test ends, whatever the test did.
pub struct Process(pub Child);

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `vitals admin curate-recipe` of a breakfast named `name`, with valid fields.
pub fn curate_recipe(name: &str) -> Vec<&str> {
    vec![
        "admin",
        "curate-recipe",
        "--name",
        name,
        "--category",
        "breakfast",
        "--calories",
        "420",
        "--protein-g",
        "18",
        "--carbs-g",
        "60",
        "--fat-g",
        "9",
    ]
}

pub struct Server {
    pub child: Child,
    pub address: String,
}

/// Starts `vitals serve <args>` on a free port and waits for its address line.
pub fn start(args: &[&str]) -> Server {
    start_with_env(args, &[])
}

/// Rate limits high enough that a test's many sign-ups from one address are not what it
/// measures (the tests of the limits themselves use `start_with_exact_env`).
pub const GENEROUS_LIMITS: [(&str, &str); 3] = [
    ("VITALS_AUTH_RATE_LIMIT", "100000"),
    ("VITALS_LOGIN_RATE_LIMIT", "100000"),
    ("VITALS_RATE_LIMIT", "100000"),
];

/// The token signing secret of the servers tests start, unless they set their own.
pub const JWT_SECRET_TEXT: &str = "test-jwt-secret-of-the-support-servers-0123456789";

/// Like `start`, with environment variables (and generous rate limits, the signing
/// secret [`JWT_SECRET_TEXT`] and the webhook secret [`WEBHOOK_SECRET_TEXT`], which
/// `--backend dynamodb` requires, unless `env` sets them).
pub fn start_with_env(args: &[&str], env: &[(&str, &str)]) -> Server {
    let mut all: Vec<(&str, &str)> = GENEROUS_LIMITS.to_vec();
    all.push(("VITALS_JWT_SECRET", JWT_SECRET_TEXT));
    all.push(("VITALS_WEBHOOK_SECRET", WEBHOOK_SECRET_TEXT));
    all.extend_from_slice(env);
    start_with_exact_env(args, &all)
}

/// Like `start`, with exactly these environment variables (the binary's own defaults
/// for everything else).
pub fn start_with_exact_env(args: &[&str], env: &[(&str, &str)]) -> Server {
    start_logging_to(args, env, Stdio::inherit())
}

/// Like `start_with_exact_env`, its log (standard error) going to `stderr`.
pub fn start_logging_to(args: &[&str], env: &[(&str, &str)], stderr: Stdio) -> Server {
    let mut child = Command::new(env!("CARGO_BIN_EXE_vitals"))
        .arg("serve")
        .args(["--listen", "127.0.0.1:0"])
        .args(args)
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .expect("vitals starts");
    let address =
        served_address(&mut child).unwrap_or_else(|line| panic!("unexpected first line {line:?}"));
    Server { child, address }
}

/// The address a `vitals serve` child (its standard output piped) says it listens on,
/// in its first line (`listening on http://ADDR`); or the line it printed instead.
pub fn served_address(child: &mut std::process::Child) -> Result<String, String> {
    let stdout = child.stdout.take().expect("piped stdout");
    let mut line = String::new();
    BufReader::new(stdout)
        .read_line(&mut line)
        .expect("address line");
    line.trim()
        .strip_prefix("listening on http://")
        .map(str::to_owned)
        .ok_or(line)
}

/// What a `vitals` run printed, and how it ended.
pub struct Run {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl std::fmt::Display for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "exit {:?}\n--- stdout\n{}--- stderr\n{}",
            self.code, self.stdout, self.stderr
        )
    }
}

impl Run {
    /// How `vitals <args>` ended: whatever it failed with, it must not have panicked.
    pub fn checked(args: &[&str], code: Option<i32>, stdout: String, stderr: String) -> Self {
        let run = Run {
            code,
            stdout,
            stderr,
        };
        assert!(
            !run.stderr.contains("panicked"),
            "vitals {args:?} panicked: {run}"
        );
        run
    }
}

/// Runs `command`, a `vitals <args>` made by the caller (its environment, its flags), to
/// its end with no standard input: [`Run::checked`].
pub fn run_to_end(mut command: Command, args: &[&str]) -> Run {
    let output = command.stdin(Stdio::null()).output().expect("vitals runs");
    Run::checked(
        args,
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// A path as a command-line argument.
pub fn text(path: &std::path::Path) -> &str {
    path.to_str().expect("a UTF-8 path")
}

/// Sends one request with headers and an optional body; returns (status, body).
pub fn send(
    address: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&[u8]>,
) -> (u16, String) {
    let (response, _) = round_trip(
        address,
        method,
        path,
        headers,
        body,
        Duration::from_secs(30),
    );
    let (status, _, body) = parse_response(&String::from_utf8_lossy(&response));
    (status, body)
}

/// Sends one request with headers and an optional body; returns (status, response
/// headers with lowercase names, body).
pub fn exchange(
    address: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&[u8]>,
) -> (u16, std::collections::HashMap<String, String>, String) {
    let (response, _) = round_trip(
        address,
        method,
        path,
        headers,
        body,
        Duration::from_secs(60),
    );
    parse_response(&String::from_utf8_lossy(&response))
}

/// Writes one request (with a `Content-Length`) on a new connection and reads the whole
/// response, waiting at most `timeout` for each read; the bytes read, and whether the
/// read ended cleanly (`send` and `exchange` take what arrived: a server may close a
/// refused upload's connection early; `request` insists).
fn round_trip(
    address: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&[u8]>,
    timeout: Duration,
) -> (Vec<u8>, std::io::Result<usize>) {
    let mut stream = TcpStream::connect(address).expect("connects");
    stream.set_read_timeout(Some(timeout)).expect("timeout");
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n");
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    let body = body.unwrap_or_default();
    head.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
    stream.write_all(head.as_bytes()).expect("writes");
    stream.write_all(body).expect("writes");
    let mut response = Vec::new();
    let read = stream.read_to_end(&mut response);
    (response, read)
}

/// A whole HTTP/1.1 response: (status, headers with lowercase names, body).
pub fn parse_response(response: &str) -> (u16, std::collections::HashMap<String, String>, String) {
    let (head, body) = response
        .split_once("\r\n\r\n")
        .map(|(h, b)| (h.to_owned(), b.to_owned()))
        .unwrap_or_else(|| (response.to_owned(), String::new()));
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status in {response:?}"));
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    (status, headers, body)
}

/// Sends one request with no headers of the caller's and no body (`Host`, `Connection:
/// close`, `Content-Length: 0`); returns (status, body). The whole response must be read
/// cleanly, as UTF-8.
pub fn request(address: &str, method: &str, path: &str) -> (u16, String) {
    let (response, read) = round_trip(address, method, path, &[], None, Duration::from_secs(30));
    read.expect("reads the whole response");
    let response = String::from_utf8(response).expect("a UTF-8 response");
    let (status, _, body) = parse_response(&response);
    (status, body)
}

impl Drop for Server {
    /// A test that fails before `stop` must not leave its server running.
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

impl Server {
    /// Sends SIGTERM and waits (with a deadline) for a clean exit.
    pub fn stop(mut self) -> std::process::ExitStatus {
        self.stop_in_place()
    }

    fn stop_in_place(&mut self) -> std::process::ExitStatus {
        terminate(
            &mut self.child,
            Duration::from_secs(20),
            Duration::from_millis(20),
        )
        .expect("vitals did not stop after SIGTERM")
    }
}

/// Sends SIGTERM to `child` and waits for its exit, checking every `poll`; `None` when it
/// is still running after `within`.
pub fn terminate(
    child: &mut Child,
    within: Duration,
    poll: Duration,
) -> Option<std::process::ExitStatus> {
    let pid = child.id().to_string();
    Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .expect("kill runs");
    let deadline = Instant::now() + within;
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            return Some(status);
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(poll);
    }
}

/// A mobile-app client of the JSON API: an address, and the account it speaks for.
pub struct Client {
    pub address: String,
    pub token: Option<String>,
    /// Empty when signed out.
    pub user_id: String,
}

impl Client {
    pub fn anonymous(address: &str) -> Self {
        Self {
            address: address.to_owned(),
            token: None,
            user_id: String::new(),
        }
    }

    /// The account a register or login reply names.
    pub fn signed_in(address: &str, reply: &serde_json::Value) -> Self {
        Self {
            address: address.to_owned(),
            token: reply["access_token"].as_str().map(str::to_owned),
            user_id: reply["user_id"].as_str().expect("user id").to_owned(),
        }
    }

    /// The same account, speaking to another server.
    pub fn on(&self, address: &str) -> Self {
        Self {
            address: address.to_owned(),
            token: self.token.clone(),
            user_id: self.user_id.clone(),
        }
    }

    /// One JSON request with the bearer token and `extra` headers; (status, JSON body,
    /// or null when the body is not JSON).
    pub fn call(
        &self,
        method: &str,
        path: &str,
        body: Option<serde_json::Value>,
        extra: &[(&str, &str)],
    ) -> (u16, serde_json::Value) {
        let auth = self.token.as_ref().map(|t| format!("Bearer {t}"));
        let mut headers: Vec<(&str, &str)> = vec![("Content-Type", "application/json")];
        if let Some(auth) = &auth {
            headers.push(("Authorization", auth));
        }
        headers.extend_from_slice(extra);
        let bytes = body.map(|b| b.to_string().into_bytes());
        let (status, text) = send(&self.address, method, path, &headers, bytes.as_deref());
        (
            status,
            serde_json::from_str(&text).unwrap_or(serde_json::Value::Null),
        )
    }

    /// Starts connecting the sandbox provider; (status, reply).
    pub fn start_connect(&self) -> (u16, serde_json::Value) {
        self.call("POST", "/v1/integrations/sandbox/connect", None, &[])
    }

    /// Connects the sandbox provider as its user `provider_user` the way the app does:
    /// starts the connect, has `provider_user` approve the authorize URL at the sandbox
    /// (a code bound to its PKCE challenge), follows the provider's redirect through the
    /// callback (no token) to the app's URL, and completes with what it carried;
    /// (status, reply) of the completion. `extra` headers go with the completion (the
    /// request that connects).
    pub fn connect_wearable(
        &self,
        provider_user: &str,
        extra: &[(&str, &str)],
    ) -> (u16, serde_json::Value) {
        let (status, started) = self.start_connect();
        assert_eq!(status, 200, "{started}");
        let state = started["state"].as_str().expect("state");
        let code = approved(provider_user, &started);
        let carried = follow_callback(&self.address, state, &code);
        self.call(
            "POST",
            "/v1/integrations/sandbox/complete",
            Some(serde_json::json!({"state": carried["state"], "code": carried["code"]})),
            extra,
        )
    }

    /// Logs `meal` with an `Idempotency-Key`, as a retrying app does; (status, reply).
    pub fn log_meal(&self, meal: serde_json::Value, key: &str) -> (u16, serde_json::Value) {
        self.call(
            "POST",
            "/v1/me/meals",
            Some(meal),
            &[("Idempotency-Key", key)],
        )
    }

    /// Creates a daily protein goal of `target` grams; the goal as created.
    pub fn set_protein_goal(&self, target: &str) -> serde_json::Value {
        let (status, goal) = self.call(
            "POST",
            "/v1/me/goals",
            Some(serde_json::json!({"kind": "daily_protein_grams", "target": target, "title": "Protein"})),
            &[],
        );
        assert_eq!(status, 201, "{goal}");
        goal
    }

    /// Retries a GET until it answers 200 and `ok` holds, failing after `within`
    /// (projections are asynchronous; over HTTP there is nothing to wait on but asking).
    pub fn eventually(
        &self,
        path: &str,
        within: Duration,
        ok: impl Fn(&serde_json::Value) -> bool,
    ) -> serde_json::Value {
        let deadline = Instant::now() + within;
        loop {
            let (status, body) = self.call("GET", path, None, &[]);
            if status == 200 && ok(&body) {
                return body;
            }
            assert!(
                Instant::now() < deadline,
                "{path} did not converge within {within:?}: {status} {body}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// Today's date in UTC (`YYYY-MM-DD`): goals count from the day they are set, so tests
/// against a running server log what they count today.
pub fn today() -> String {
    chrono::Utc::now().date_naive().to_string()
}

/// A meal of oats eaten this morning (UTC), of `calories`.
pub fn meal(calories: u32) -> serde_json::Value {
    serde_json::json!({"name": "Oats", "eaten_at": format!("{today}T08:00:00.000Z", today = today()), "calories": calories.to_string(), "protein_g": "30", "carbs_g": "40", "fat_g": "5"})
}

/// A registration body for `email`.
pub fn registration(email: &str) -> serde_json::Value {
    serde_json::json!({"email": email, "password": "correct horse battery", "display_name": "Ana", "timezone": "UTC"})
}

/// Registers `email`; the new account's client.
pub fn register(address: &str, email: &str) -> Client {
    let (status, reply) = Client::anonymous(address).call(
        "POST",
        "/v1/auth/register",
        Some(registration(email)),
        &[],
    );
    assert_eq!(status, 201, "{reply}");
    Client::signed_in(address, &reply)
}

/// Registers `email` as soon as it is free: 409 `email_taken` until the erasure of its
/// previous holder is complete; fails after `within`.
pub fn register_once_free(address: &str, email: &str, within: Duration) -> Client {
    let deadline = Instant::now() + within;
    loop {
        let (status, reply) = Client::anonymous(address).call(
            "POST",
            "/v1/auth/register",
            Some(registration(email)),
            &[],
        );
        if status == 201 {
            return Client::signed_in(address, &reply);
        }
        assert_eq!(
            (status, &reply["error"]["code"]),
            (409, &serde_json::json!("email_taken")),
            "{reply}"
        );
        assert!(
            Instant::now() < deadline,
            "{email} was not free again within {within:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The `/metrics` page of a running server, and its projector lag lines
/// (`vitals_projector_lag_records{...} N`).
pub fn projector_lags(address: &str) -> (String, Vec<String>) {
    let (status, metrics) = request(address, "GET", "/metrics");
    assert_eq!(status, 200, "{metrics}");
    let lags = metrics
        .lines()
        .filter(|l| l.starts_with("vitals_projector_lag_records{"))
        .map(str::to_owned)
        .collect();
    (metrics, lags)
}

/// The events a subscription has applied, as its counter on the `/metrics` page
/// `metrics` says (0 before its first).
pub fn processed_events(metrics: &str, subscription: &str) -> u64 {
    let series =
        format!("vitals_projector_events_processed_total{{subscription=\"{subscription}\"}} ");
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(&series))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

/// Runs `vitals <args> <store args>`; its stdout, trimmed. Fails on a non-zero exit.
pub fn vitals(args: &[&str], store: &[&str]) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_vitals"))
        .args(args)
        .args(store)
        .output()
        .expect("vitals runs");
    assert!(
        output.status.success(),
        "vitals {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout)
        .expect("utf-8 output")
        .trim()
        .to_owned()
}

/// The webhook secret of the sandbox provider of an in-process [`api`], and of a server
/// [`start_with_env`] starts: at least 32 bytes, as the binary requires.
pub const WEBHOOK_SECRET_TEXT: &str = "test-hook-secret-32-bytes-or-more";
/// [`WEBHOOK_SECRET_TEXT`], as the bytes signatures are made with.
pub const WEBHOOK_SECRET: &[u8] = WEBHOOK_SECRET_TEXT.as_bytes();

/// The token issuer and verifier of an in-process [`api`] (every one made holds the
/// same secret, so one's tokens pass another).
pub fn local_auth() -> Auth {
    Auth::new(b"test-signing-secret-32-bytes-or-more", Verifier::Local)
}

/// The HTTP API in-process on `store` ([`local_auth`], [`WEBHOOK_SECRET`]), with the
/// login and sign-up limits out of the way and `user_per_second` requests a second per
/// user.
pub fn api(store: Arc<dyn infra::Store>, user_per_second: u32) -> Arc<Api> {
    Arc::new(Api::new(
        store,
        local_auth(),
        Providers::sandbox(WEBHOOK_SECRET_TEXT),
        Limits::new(LimitSettings {
            user_per_second,
            auth_per_minute: 100_000,
            account_per_minute: 100_000,
            webhook_per_second: 100_000,
            operations_per_second: 100_000,
        }),
    ))
}

/// The router in-process on an embedded store in a temporary directory (kept as long as
/// the router is), no projectors running, 50 requests a second per user.
pub fn router() -> (axum::Router, tempfile::TempDir) {
    let (embedded, dir) = vitals_tests::pipeline::open();
    let store: Arc<dyn infra::Store> = embedded;
    let api = api(store.clone(), 50);
    let state = AppState {
        store,
        pipeline: None,
        api,
    };
    (app(state), dir)
}

/// `GET path` of a fresh [`router`] in process, without a token.
pub async fn get_in_process(path: &str) -> axum::response::Response {
    use tower::ServiceExt as _;
    let (router, _dir) = router();
    let request = axum::http::Request::get(path).body(axum::body::Body::empty());
    router
        .oneshot(request.expect("request"))
        .await
        .expect("infallible")
}

/// Names the case of a long black-box walk that was running when it fails: hold one
/// (`let _case = Case("reads");`) for the length of each case.
pub struct Case(pub &'static str);

impl Drop for Case {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("failed in case `{}`", self.0);
        }
    }
}

/// The code the sandbox hands back when `provider_user` approves the authorize URL of the
/// connect `started` (the reply to `POST /v1/integrations/sandbox/connect`).
pub fn approved(provider_user: &str, started: &serde_json::Value) -> String {
    let url = started["authorize_url"].as_str().expect("authorize_url");
    commands::integrations::SandboxProvider::code_for(provider_user, url)
}

/// Where the sandbox's callback sends the phone for `state` and `code`: it answers `303`
/// with the app's URL, whose query carries `provider`, `state` and `code`; that query.
pub fn follow_callback(
    address: &str,
    state: &str,
    code: &str,
) -> std::collections::HashMap<String, String> {
    let query = form_urlencoded::Serializer::new(String::new())
        .append_pair("state", state)
        .append_pair("code", code)
        .finish();
    let path = format!("/v1/integrations/sandbox/callback?{query}");
    let (status, headers, body) = exchange(address, "GET", &path, &[], None);
    assert_eq!(status, 303, "the callback hands on to the app: {body}");
    let location = headers.get("location").expect("a Location");
    let (_, carried) = location.split_once('?').expect("a query");
    let carried: std::collections::HashMap<String, String> =
        form_urlencoded::parse(carried.as_bytes())
            .into_owned()
            .collect();
    assert_eq!(carried.get("provider").map(String::as_str), Some("sandbox"));
    carried
}
