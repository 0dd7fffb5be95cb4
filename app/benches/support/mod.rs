//! What the HTTP benchmarks share: `vitals serve` started in-process on an embedded store
//! (127.0.0.1:0, projector workers running, rate limits out of the way), a keep-alive
//! HTTP/1.1 client of the API, the day the app logs, convergence polled with a deadline
//! (on the dashboard and on the projector lag in `/metrics`), and latency runs.

#![allow(dead_code)] // each benchmark uses its own part of this module

use anyhow::{Context as _, bail, ensure};
use axum::body::Bytes;
use axum::http::{Method, Request, StatusCode, header};
use chrono::{Duration as Days, NaiveDate};
use clap::Parser as _;
use hdrhistogram::Histogram;
use http_body_util::{BodyExt as _, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use vitals::cli::{Cli, Command};
use vitals::{server, setup, storage};

/// The day every dashboard is read for, and the last day of the long history.
pub const QUERY_DATE: &str = "2026-03-01";

/// Runs a benchmark's body on a multi-threaded runtime.
pub fn run_bench(
    bench: impl std::future::Future<Output = anyhow::Result<()>>,
) -> anyhow::Result<()> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("building the runtime")?
        .block_on(bench)
}

pub fn env_number(name: &str, default: u32) -> anyhow::Result<u32> {
    match std::env::var(name) {
        Ok(text) => text
            .trim()
            .parse()
            .with_context(|| format!("{name}={text:?} is not a whole number")),
        Err(_) => Ok(default),
    }
}

pub type Served = tokio::task::JoinHandle<anyhow::Result<()>>;

/// A server started in-process: its address, its stop signal, its task and its store.
pub struct InProcess {
    pub base: String,
    pub stop: tokio::sync::oneshot::Sender<()>,
    pub served: Served,
    pub store: Arc<infra::embedded::EmbeddedStore>,
}

/// Starts the server as `vitals serve` does, on `data_dir`, bound to a free port.
pub async fn start_server(data_dir: &std::path::Path) -> anyhow::Result<InProcess> {
    let data_dir = data_dir.join("data");
    let data_dir = data_dir.to_str().context("temporary path is not UTF-8")?;
    let cli = Cli::try_parse_from([
        "vitals",
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--backend",
        "embedded",
        "--data-dir",
        data_dir,
        "--jwt-secret",
        "bench-jwt-secret-32-bytes-or-more",
        // High enough that the limiter is never what is measured.
        "--rate-limit",
        "1000000",
        "--auth-rate-limit",
        "1000000",
        "--login-rate-limit",
        "1000000",
    ])?;
    let Command::Serve(args) = cli.command else {
        bail!("`vitals serve` did not parse as serve");
    };
    let storage = storage::open(&args.store).await?;
    let store = storage
        .embedded
        .clone()
        .context("the embedded backend has an embedded store")?;
    let listener = tokio::net::TcpListener::bind(args.listen).await?;
    let address = listener.local_addr()?;
    let shape = setup::Shape::serving(args.store.backend);
    let secrets = setup::Secrets::from_args(&args.api, shape)?;
    let api = setup::api_with(storage.store.clone(), &args.api, secrets)?;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let served = tokio::spawn(server::run(listener, storage, api, async {
        let _ = stopped.await;
    }));
    Ok(InProcess {
        base: format!("http://{address}"),
        stop,
        served,
        store,
    })
}

/// A keep-alive HTTP/1.1 client of the API (a pool of connections to one host).
#[derive(Clone)]
pub struct Api {
    pub http: Client<HttpConnector, Full<Bytes>>,
    pub base: String,
}

/// A registered user.
#[derive(Clone)]
pub struct User {
    pub bearer: String,
}

/// The ids of the last day's writes, which the dashboard must show to have converged.
pub struct LastDay {
    pub meals: u64,
    pub sleep_sessions: u64,
}

impl Api {
    pub fn new(base: String) -> Self {
        let http = Client::builder(TokioExecutor::new())
            .pool_max_idle_per_host(256)
            .build_http();
        Self { http, base }
    }

    /// One request; the status and the whole body.
    pub async fn call(
        &self,
        method: Method,
        path: &str,
        user: Option<&User>,
        body: Option<&Value>,
        idempotency_key: Option<&str>,
    ) -> anyhow::Result<(StatusCode, Bytes)> {
        let mut request = Request::builder()
            .method(method)
            .uri(format!("{}{path}", self.base));
        if let Some(user) = user {
            request = request.header(header::AUTHORIZATION, &user.bearer);
        }
        if let Some(key) = idempotency_key {
            request = request.header("Idempotency-Key", key);
        }
        let body = match body {
            Some(body) => {
                request = request.header(header::CONTENT_TYPE, "application/json");
                Bytes::from(body.to_string())
            }
            None => Bytes::new(),
        };
        let response = self.http.request(request.body(Full::new(body))?).await?;
        let status = response.status();
        let bytes = response.into_body().collect().await?.to_bytes();
        Ok((status, bytes))
    }

    /// A request that must answer `expected`; its body as JSON.
    pub async fn expect(
        &self,
        method: Method,
        path: &str,
        user: Option<&User>,
        body: Option<&Value>,
        expected: StatusCode,
    ) -> anyhow::Result<Value> {
        let (status, bytes) = self.call(method.clone(), path, user, body, None).await?;
        ensure!(
            status == expected,
            "{method} {path}: {status} {}",
            String::from_utf8_lossy(&bytes)
        );
        Ok(serde_json::from_slice(&bytes).unwrap_or(Value::Null))
    }

    pub async fn register(&self, email: &str) -> anyhow::Result<User> {
        Ok(self.register_with_id(email).await?.0)
    }

    /// Registers a user; the user and its id.
    pub async fn register_with_id(&self, email: &str) -> anyhow::Result<(User, String)> {
        let body = json!({"email": email, "password": "correct horse battery", "display_name": "Bench", "timezone": "UTC"});
        let reply = self
            .expect(
                Method::POST,
                "/v1/auth/register",
                None,
                Some(&body),
                StatusCode::CREATED,
            )
            .await?;
        let token = reply["access_token"]
            .as_str()
            .with_context(|| format!("no token in {reply}"))?;
        let id = reply["user_id"]
            .as_str()
            .with_context(|| format!("no user id in {reply}"))?;
        let user = User {
            bearer: format!("Bearer {token}"),
        };
        Ok((user, id.to_owned()))
    }
}

/// The day `back` days before the query date.
pub fn day(back: u32) -> anyhow::Result<NaiveDate> {
    let last: NaiveDate = QUERY_DATE.parse()?;
    Ok(last - Days::days(back.into()))
}

pub fn meal(day: NaiveDate, hour: u32, calories: u32) -> Value {
    json!({"name": "Oats", "eaten_at": format!("{day}T{hour:02}:00:00.000Z"), "calories": calories.to_string(), "protein_g": "30", "carbs_g": "40", "fat_g": "5"})
}

/// One day as the app logs it: two meals, a sleep, and a workout every third day (and
/// always on the query date). Returns how the dashboard shows that day.
pub async fn seed_day(
    api: &Api,
    user: &User,
    date: NaiveDate,
    index: u32,
) -> anyhow::Result<LastDay> {
    let path = "/v1/me/meals";
    for (hour, calories) in [(8, 400), (19, 650)] {
        api.expect(
            Method::POST,
            path,
            Some(user),
            Some(&meal(date, hour, calories)),
            StatusCode::CREATED,
        )
        .await?;
    }
    if index.is_multiple_of(3) {
        let workout = json!({"sport": "run", "started_at": format!("{date}T07:00:00.000Z"), "duration_s": 2400, "distance_m": 8000});
        api.expect(
            Method::POST,
            "/v1/me/workouts",
            Some(user),
            Some(&workout),
            StatusCode::CREATED,
        )
        .await?;
    }
    let next = date + Days::days(1);
    let sleep = json!({"start": format!("{date}T22:30:00.000Z"), "end": format!("{next}T06:30:00.000Z"), "score": 80, "stages": {"awake_min": 20, "light_min": 250, "deep_min": 90, "rem_min": 120}});
    api.expect(
        Method::POST,
        "/v1/me/sleep",
        Some(user),
        Some(&sleep),
        StatusCode::CREATED,
    )
    .await?;
    Ok(LastDay {
        meals: 2,
        sleep_sessions: 1,
    })
}

/// Days `nearest_back..=farthest_back` before the query date, dealt out over `lanes`
/// concurrent connections, each logging its days oldest first. Returns how many
/// commands were logged.
pub async fn seed_history(
    api: &Api,
    user: &User,
    lanes: u32,
    nearest_back: u32,
    farthest_back: u32,
) -> anyhow::Result<u32> {
    // Days `nearest_back..=farthest_back` before the query date, oldest first per lane.
    let lanes = lanes.max(1);
    let logged = Arc::new(AtomicU64::new(0));
    let mut tasks = tokio::task::JoinSet::new();
    for lane in 0..lanes {
        let (api, user, logged) = (api.clone(), user.clone(), logged.clone());
        tasks.spawn(async move {
            for back in (nearest_back..=farthest_back)
                .rev()
                .skip(lane as usize)
                .step_by(lanes as usize)
            {
                let index = farthest_back - back;
                seed_day(&api, &user, day(back)?, index).await?;
                let commands = if index.is_multiple_of(3) { 4 } else { 3 };
                logged.fetch_add(commands, Ordering::Relaxed);
            }
            anyhow::Ok(())
        });
    }
    while let Some(done) = tasks.join_next().await {
        done.context("seeding task")??;
    }
    Ok(u32::try_from(logged.load(Ordering::Relaxed)).unwrap_or(u32::MAX))
}

/// Polls the dashboard of the query date until it shows `last` (the last write of each
/// kind), then waits for every projector to have processed the whole change log.
pub async fn converge(
    api: &Api,
    user: &User,
    last: &LastDay,
    within: Duration,
) -> anyhow::Result<()> {
    let deadline = Instant::now() + within;
    let path = format!("/v1/me/dashboard?date={QUERY_DATE}");
    loop {
        let (status, bytes) = api.call(Method::GET, &path, Some(user), None, None).await?;
        let view: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        let day = &view["day"];
        if status == StatusCode::OK
            && day["nutrition"]["meals"] == last.meals
            && day["activity"]["workouts"] == 1
            && day["sleep"]["sessions"] == last.sleep_sessions
        {
            break;
        }
        ensure!(
            Instant::now() < deadline,
            "the dashboard did not converge within {within:?}: {status} {view}"
        );
        // Projections are asynchronous and there is nothing to wait on over HTTP.
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    settle(api, deadline.saturating_duration_since(Instant::now())).await?;
    Ok(())
}

/// Waits until `/metrics` reports no projector lag; returns how long that took.
pub async fn settle(api: &Api, within: Duration) -> anyhow::Result<Duration> {
    let started = Instant::now();
    loop {
        let (status, bytes) = api.call(Method::GET, "/metrics", None, None, None).await?;
        let text = String::from_utf8_lossy(&bytes);
        let lag: Vec<u64> = text
            .lines()
            .filter(|l| l.starts_with("vitals_projector_lag_records{"))
            .filter_map(|l| l.rsplit(' ').next()?.parse().ok())
            .collect();
        if status == StatusCode::OK && !lag.is_empty() && lag.iter().all(|&n| n == 0) {
            return Ok(started.elapsed());
        }
        ensure!(
            started.elapsed() < within,
            "the projectors did not catch up within {within:?}: {status}\n{text}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// One measured run: latencies (microseconds) and how long it took.
pub struct Run {
    pub latency: Histogram<u64>,
    pub requests: u64,
    pub elapsed: Duration,
}

pub struct Reads {
    pub run: Run,
    pub bytes: usize,
    pub recent_meals: usize,
}

pub fn histogram() -> anyhow::Result<Histogram<u64>> {
    Ok(Histogram::new_with_bounds(1, 60_000_000, 3)?)
}

pub fn micros(elapsed: Duration) -> u64 {
    u64::try_from(elapsed.as_micros())
        .unwrap_or(u64::MAX)
        .max(1)
}

/// Sequential dashboard reads of the query date on one keep-alive connection.
pub async fn read_dashboard(
    api: &Api,
    user: &User,
    warmup: u32,
    reads: u32,
) -> anyhow::Result<Reads> {
    let path = format!("/v1/me/dashboard?date={QUERY_DATE}");
    let mut last = Bytes::new();
    for _ in 0..warmup {
        let (status, bytes) = api.call(Method::GET, &path, Some(user), None, None).await?;
        ensure!(status == StatusCode::OK, "dashboard: {status}");
        last = bytes;
    }
    let mut latency = histogram()?;
    let started = Instant::now();
    for _ in 0..reads {
        let sent = Instant::now();
        let (status, bytes) = api.call(Method::GET, &path, Some(user), None, None).await?;
        latency.record(micros(sent.elapsed()))?;
        ensure!(status == StatusCode::OK, "dashboard: {status}");
        last = bytes;
    }
    let elapsed = started.elapsed();
    let view: Value = serde_json::from_slice(&last).unwrap_or(Value::Null);
    Ok(Reads {
        bytes: last.len(),
        recent_meals: view["recent_meals"].as_array().map_or(0, Vec::len),
        run: Run {
            latency,
            requests: u64::from(reads),
            elapsed,
        },
    })
}

/// `clients` new users log `each` meals apiece, every user on its own connection, all
/// at once; each meal carries its own Idempotency-Key, as the app sends.
pub async fn log_meals(api: &Api, clients: u32, each: u32) -> anyhow::Result<Run> {
    static RUN: AtomicU64 = AtomicU64::new(0);
    let run = RUN.fetch_add(1, Ordering::Relaxed);
    let mut users = Vec::new();
    for client in 0..clients {
        users.push(
            api.register(&format!("writer-{run}-{client}@bench.example"))
                .await?,
        );
    }
    let date = day(0)?;
    let start = Arc::new(tokio::sync::Barrier::new(clients as usize + 1));
    let mut tasks = tokio::task::JoinSet::new();
    for (client, user) in users.into_iter().enumerate() {
        let (api, start) = (api.clone(), start.clone());
        tasks.spawn(async move {
            let mut latency = histogram()?;
            start.wait().await;
            for n in 0..each {
                let body = meal(date, 12, 300 + n % 500);
                let key = format!("bench-{run}-{client}-{n}");
                let sent = Instant::now();
                let (status, bytes) = api
                    .call(
                        Method::POST,
                        "/v1/me/meals",
                        Some(&user),
                        Some(&body),
                        Some(&key),
                    )
                    .await?;
                latency.record(micros(sent.elapsed()))?;
                ensure!(
                    status == StatusCode::CREATED,
                    "POST /v1/me/meals: {status} {}",
                    String::from_utf8_lossy(&bytes)
                );
            }
            anyhow::Ok(latency)
        });
    }
    start.wait().await;
    let started = Instant::now();
    let mut latency = histogram()?;
    while let Some(done) = tasks.join_next().await {
        latency.add(done.context("client task")??)?;
    }
    Ok(Run {
        latency,
        requests: u64::from(clients) * u64::from(each),
        elapsed: started.elapsed(),
    })
}

pub fn row(label: &str, run: &Run) -> String {
    let ms = |q: f64| run.latency.value_at_quantile(q) as f64 / 1000.0;
    format!(
        "{label:<36} {:>9} {:>10.0} {:>9.2} {:>9.2} {:>9.2}",
        run.requests,
        run.requests as f64 / run.elapsed.as_secs_f64(),
        ms(0.5),
        ms(0.99),
        run.latency.max() as f64 / 1000.0
    )
}
