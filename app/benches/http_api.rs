//! The HTTP API measured over real sockets: `vitals serve` started in-process on an
//! embedded store in a temporary directory (127.0.0.1:0, projector workers running,
//! rate limit out of the way), driven by a keep-alive HTTP/1.1 client.
//!
//! - Dashboard reads (`GET /v1/me/dashboard?date=...`): one user, first with one day of
//!   history, then again once two years of history (logged through the API) lie behind
//!   the same query date.
//! - Meal logging (`POST /v1/me/meals`): one client, then 32 clients (32 users).
//!
//! Run with `cargo bench -p vitals --bench http_api`. Sizes come from environment
//! variables (see [`Sizes`]); the defaults keep a release run on two cores to a couple
//! of minutes. Nothing here waits on a fixed sleep: convergence is polled with a
//! deadline, on the dashboard and on the projector lag in `/metrics`.

mod support;

use anyhow::{Context as _, ensure};
use axum::http::{Method, StatusCode};
use std::time::{Duration, Instant};
use support::{
    Api, QUERY_DATE, Reads, User, converge, day, env_number, log_meals, read_dashboard, row,
    seed_day, seed_history, settle, start_server,
};

/// How big each phase is; every field has an environment variable.
#[derive(Debug, Clone)]
struct Sizes {
    /// `VITALS_BENCH_HISTORY_DAYS`: days of history of the long user.
    history_days: u32,
    /// `VITALS_BENCH_SEED_CLIENTS`: concurrent connections logging that history.
    seed_clients: u32,
    /// `VITALS_BENCH_WARMUP`: unmeasured dashboard reads before each measured run.
    warmup: u32,
    /// `VITALS_BENCH_READS`: measured sequential dashboard reads per user.
    reads: u32,
    /// `VITALS_BENCH_WRITES`: meals logged by the single client.
    writes: u32,
    /// `VITALS_BENCH_CLIENTS`: concurrent clients (one user each) of the second run.
    clients: u32,
    /// `VITALS_BENCH_WRITES_PER_CLIENT`: meals each of them logs.
    writes_per_client: u32,
    /// `VITALS_BENCH_CONVERGE_SECS`: deadline for the projections to catch up.
    converge: Duration,
}

impl Sizes {
    fn from_env() -> anyhow::Result<Self> {
        Ok(Self {
            history_days: env_number("VITALS_BENCH_HISTORY_DAYS", 730)?.max(1),
            seed_clients: env_number("VITALS_BENCH_SEED_CLIENTS", 4)?.max(1),
            warmup: env_number("VITALS_BENCH_WARMUP", 500)?,
            reads: env_number("VITALS_BENCH_READS", 5000)?.max(1),
            writes: env_number("VITALS_BENCH_WRITES", 1000)?.max(1),
            clients: env_number("VITALS_BENCH_CLIENTS", 32)?.max(1),
            writes_per_client: env_number("VITALS_BENCH_WRITES_PER_CLIENT", 100)?.max(1),
            converge: Duration::from_secs(env_number("VITALS_BENCH_CONVERGE_SECS", 180)?.into()),
        })
    }
}

/// The binary's allocator (`app/src/main.rs`), so the figures are the product's.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> anyhow::Result<()> {
    // `cargo bench` passes `--bench` (and any filter); this harness has nothing to filter.
    let sizes = Sizes::from_env()?;
    support::run_bench(bench(sizes))
}

async fn bench(sizes: Sizes) -> anyhow::Result<()> {
    let dir = tempfile::tempdir().context("temporary directory")?;
    let support::InProcess {
        base,
        stop,
        served,
        store,
    } = start_server(dir.path()).await?;
    let api = Api::new(base);
    let mut table = Vec::new();
    eprintln!("http_api: server on {}; sizes {sizes:?}", api.base);

    // (a) Dashboard reads for one user: with one day of history, then again once two
    // years of history lie behind the same day.
    let user = api.register("history@bench.example").await?;
    let last = seed_day(&api, &user, day(0)?, 0).await?;
    converge(&api, &user, &last, sizes.converge).await?;
    let one_day = read_dashboard(&api, &user, sizes.warmup, sizes.reads).await?;

    // A full 30-day window (the dashboard's), then the rest of the history.
    let window_days = 31.min(sizes.history_days);
    seed_history(&api, &user, sizes.seed_clients, 1, window_days - 1).await?;
    converge(&api, &user, &last, sizes.converge).await?;
    let one_month = read_dashboard(&api, &user, sizes.warmup, sizes.reads).await?;

    let started = Instant::now();
    let logged = if sizes.history_days > window_days {
        seed_history(
            &api,
            &user,
            sizes.seed_clients,
            window_days,
            sizes.history_days - 1,
        )
        .await?
    } else {
        0
    };
    let seeding = started.elapsed();
    converge(&api, &user, &last, sizes.converge).await?;
    let converged = started.elapsed();
    check_history(&api, &user, sizes.history_days).await?;
    eprintln!(
        "http_api: {} more days of history = {} commands in {:.1} s ({:.0}/s); converged {:.1} s after the first",
        sizes.history_days - window_days,
        logged,
        seeding.as_secs_f64(),
        f64::from(logged) / seeding.as_secs_f64().max(1e-9),
        converged.as_secs_f64()
    );
    let two_years = read_dashboard(&api, &user, sizes.warmup, sizes.reads).await?;
    let p50 = |r: &Reads| r.run.latency.value_at_quantile(0.5).max(1) as f64;
    let ratio = p50(&two_years) / p50(&one_day);
    let ratio_window = p50(&two_years) / p50(&one_month);
    let shape = |r: &Reads| format!("{} B, {} recent meals", r.bytes, r.recent_meals);
    table.push(row("GET dashboard, 1 day of history", &one_day.run));
    table.push(row(
        &format!("GET dashboard, {window_days} days of history"),
        &one_month.run,
    ));
    table.push(row(
        &format!("GET dashboard, {} days of history", sizes.history_days),
        &two_years.run,
    ));

    // (b) Meal logging: one client, then many.
    let single = log_meals(&api, 1, sizes.writes).await?;
    let drained_single = settle(&api, sizes.converge).await?;
    let writer_before = store.writer_totals();
    let many = log_meals(&api, sizes.clients, sizes.writes_per_client).await?;
    let drained_many = settle(&api, sizes.converge).await?;
    // From the first meal until the projections have caught up.
    let writer = store.writer_totals().since(&writer_before);
    let writer_window = many.elapsed + drained_many;
    table.push(row("POST meals, 1 client", &single));
    table.push(row(
        &format!("POST meals, {} clients", sizes.clients),
        &many,
    ));

    drop(api);
    drop(store);
    let _ = stop.send(());
    served.await.context("server task")??;

    println!();
    println!("HTTP API over 127.0.0.1, embedded store, in-process server and client");
    println!(
        "{:<36} {:>9} {:>10} {:>9} {:>9} {:>9}",
        "", "requests", "req/s", "p50 ms", "p99 ms", "max ms"
    );
    for line in &table {
        println!("{line}");
    }
    println!();
    println!(
        "dashboard p50 ratio, {} days / 1 day: {ratio:.2}x  (responses: {} vs {})",
        sizes.history_days,
        shape(&two_years),
        shape(&one_day)
    );
    println!(
        "dashboard p50 ratio, {} days / {window_days} days (a full 30-day window either way): {ratio_window:.2}x  (responses: {} vs {})",
        sizes.history_days,
        shape(&two_years),
        shape(&one_month)
    );
    println!(
        "history beyond the window ({} days): {} commands logged in {:.1} s, dashboard converged after {:.1} s",
        sizes.history_days - window_days,
        logged,
        seeding.as_secs_f64(),
        converged.as_secs_f64()
    );
    println!(
        "projector lag back to 0 after the last meal: {:.2} s (1 client), {:.2} s ({} clients)",
        drained_single.as_secs_f64(),
        drained_many.as_secs_f64(),
        sizes.clients
    );
    // Where the write path's time goes: the store's single writer thread, from the first
    // of the clients' meals until the projections caught up.
    let meals = many.requests.max(1) as f64;
    println!(
        "store writer, {} clients until caught up ({:.2} s): busy {:.0}% (engine commit {:.0}%); {} commits of {:.1} requests, {:.2} ms each; {:.1} write requests and {:.1} items per meal (the command's and every projection's), {:.0} items/s",
        sizes.clients,
        writer_window.as_secs_f64(),
        100.0 * writer.busy.as_secs_f64() / writer_window.as_secs_f64(),
        100.0 * writer.committing.as_secs_f64() / writer_window.as_secs_f64(),
        writer.commits,
        writer.requests as f64 / writer.commits.max(1) as f64,
        writer.busy.as_secs_f64() * 1000.0 / writer.commits.max(1) as f64,
        writer.requests as f64 / meals,
        writer.items as f64 / meals,
        writer.items as f64 / writer_window.as_secs_f64(),
    );
    Ok(())
}

/// The command side kept the whole history: the last 31 daily summaries are there.
async fn check_history(api: &Api, user: &User, history_days: u32) -> anyhow::Result<()> {
    let from = day(30.min(history_days - 1))?;
    let path = format!("/v1/me/nutrition/daily?from={from}&to={QUERY_DATE}");
    let reply = api
        .expect(Method::GET, &path, Some(user), None, StatusCode::OK)
        .await?;
    let days = reply["days"].as_array().map_or(0, Vec::len);
    ensure!(
        days == 31.min(history_days as usize),
        "expected {} daily summaries, got {days}: {reply}",
        31.min(history_days)
    );
    Ok(())
}
