//! Projection lag on the embedded store: many users log meals at once while every
//! projector runs in-process; for each meal, the time from the commit of its event to
//! the commit of the dashboard row showing it. Both times come from the change log
//! (commit timestamps, millisecond resolution), so the measurement adds no load.
//! `BENCH_USERS` (default 200), `BENCH_MEALS` (per user, default 10), `BENCH_PACE_MS`
//! (pause between one user's meals; default 0, a burst; the users' meals are spread
//! evenly over it unless `BENCH_IN_STEP=1`).

use commands::CommandMeta;
use commands::nutrition::{MealInput, NutritionCommands};
use events_schema::Context;
use events_schema::ids::UserId;
use events_schema::time::Timestamp;
use hdrhistogram::Histogram;
use infra::Store;
use infra::embedded::EmbeddedStore;
use infra::feed::embedded::EmbeddedFeed;
use infra::table::Table;
use projectors::pipeline::Pipeline;
use rust_decimal::Decimal;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The binary's allocator (`app/src/main.rs`), so the figures are the product's.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> anyhow::Result<()> {
    let users = env("BENCH_USERS", 200);
    let meals = env("BENCH_MEALS", 10);
    let pace = Duration::from_millis(env("BENCH_PACE_MS", 0) as u64);
    let in_step = env("BENCH_IN_STEP", 0) == 1;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let dir = tempfile::tempdir()?;
        let store = Arc::new(EmbeddedStore::open(dir.path())?);
        let shared: Arc<dyn Store> = store.clone();
        let pipeline = Pipeline::start(shared.clone(), Arc::new(EmbeddedFeed::new(store.clone())), projectors::registry::all(shared.clone()));
        let nutrition = Arc::new(NutritionCommands::new(Table::new(shared)));
        let started = Instant::now();
        let writer_before = store.writer_totals();
        let mut tasks = Vec::new();
        let first_tick = tokio::time::Instant::now();
        for user in 0..users {
            let nutrition = nutrition.clone();
            tasks.push(tokio::spawn(async move {
                let meta = CommandMeta::new(UserId::generate());
                // Load pacing: each user logs a meal per tick, the users' ticks spread
                // evenly over the pace (people do not log in step), so 200 users at one
                // meal a second are 200 meals a second, not a burst of 200 each second.
                // `BENCH_IN_STEP=1` sends them in step, as this benchmark once did.
                let offset = if in_step {
                    Duration::ZERO
                } else {
                    pace.mul_f64(user as f64 / users as f64)
                };
                let mut ticks = tokio::time::interval_at(first_tick + offset, pace.max(Duration::from_micros(1)));
                for n in 0..meals {
                    ticks.tick().await;
                    let input = MealInput {
                        name: format!("Meal {n}"),
                        eaten_at: Timestamp::parse("2026-03-01T08:00:00.000Z")?,
                        timezone: "UTC".into(),
                        calories: Decimal::from(300 + n as i64),
                        protein_g: Decimal::from(20),
                        carbs_g: Decimal::from(30),
                        fat_g: Decimal::from(10),
                    };
                    nutrition.log_meal(&meta, input).await?;
                }
                anyhow::Ok(())
            }));
        }
        for task in tasks {
            task.await??;
        }
        let commands_done = started.elapsed();
        let deadline = Instant::now() + Duration::from_secs(600);
        while !pipeline.caught_up().await? {
            anyhow::ensure!(Instant::now() < deadline, "projectors did not catch up");
            let mut commits = store.commits();
            let _ = tokio::time::timeout(Duration::from_millis(100), commits.changed()).await;
        }
        let drained = started.elapsed();
        let writer = store.writer_totals().since(&writer_before);
        pipeline.stop().await;

        // Commit times of each day summary version's event, and of the dashboard rows.
        let mut published: HashMap<(String, u64), i64> = HashMap::new();
        let mut shown: HashMap<(String, u64), i64> = HashMap::new();
        let mut after = 0;
        loop {
            let batch = store.changes_after(after, 10_000).await?;
            let Some(last) = batch.last() else { break };
            after = last.seq;
            for change in batch {
                let Some(new) = &change.new else { continue };
                if change.table == Context::Nutrition
                    && change.sk.starts_with("EVT#")
                    && let Some(version) = new.get("envelope").and_then(|e| e["payload"]["day_totals"]["version"].as_u64())
                {
                    published.insert((change.pk.clone(), version), change.at_ms);
                }
                if change.table == Context::Dashboard
                    && change.sk.starts_with("DAILY#")
                    && let Some(version) = new.get("nutrition_version").and_then(|v| v.as_u64())
                {
                    shown.entry((change.pk.clone(), version)).or_insert(change.at_ms);
                }
            }
        }
        let mut lag = Histogram::<u64>::new(3)?;
        for (key, at) in &published {
            // The row may have jumped past this version in one write: the first row at
            // or after it shows it.
            let visible = (key.1..=key.1 + meals as u64).find_map(|v| shown.get(&(key.0.clone(), v))).copied();
            if let Some(visible) = visible {
                lag.record((visible - at).max(0) as u64)?;
            }
        }
        println!("projection lag, embedded store: {users} users x {meals} meals, one per {} ms per user{}, every projector running", pace.as_millis(), if in_step { " (in step)" } else { "" });
        println!("commands: {} in {:.2} s ({:.0}/s); all projections caught up after {:.2} s", users * meals, commands_done.as_secs_f64(), (users * meals) as f64 / commands_done.as_secs_f64(), drained.as_secs_f64());
        println!(
            "commit -> dashboard row: {} samples, p50 {} ms, p90 {} ms, p99 {} ms, max {} ms",
            lag.len(),
            lag.value_at_quantile(0.5),
            lag.value_at_quantile(0.9),
            lag.value_at_quantile(0.99),
            lag.max()
        );
        // Where a write's latency goes: the single writer's queue, then its commit.
        let per = |total: Duration, n: u64| total.as_secs_f64() * 1000.0 / n.max(1) as f64;
        println!(
            "store writer: {} commits ({:.0}/s), {:.1} requests each, {:.1} write requests per meal; busy {:.0}% of the run (engine commit {:.0}%); a request waits {:.2} ms queued, a commit takes {:.2} ms (engine commit {:.2} ms); {:.1} items written per meal",
            writer.commits,
            writer.commits as f64 / drained.as_secs_f64(),
            writer.requests as f64 / writer.commits.max(1) as f64,
            writer.requests as f64 / (users * meals) as f64,
            100.0 * writer.busy.as_secs_f64() / drained.as_secs_f64(),
            100.0 * writer.committing.as_secs_f64() / drained.as_secs_f64(),
            per(writer.queued, writer.requests),
            per(writer.busy, writer.commits),
            per(writer.committing, writer.commits),
            writer.items as f64 / (users * meals) as f64,
        );
        anyhow::Ok(())
    })
}
