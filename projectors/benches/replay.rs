//! Replay throughput and erasure time on the embedded store (release, durable commits).
//!
//! 1. Replay: `BENCH_REPLAY_EVENTS` (default 1,000,000) `MealLogged` outbox items for
//!    `BENCH_REPLAY_USERS` users (default 10,000; two meals a day, newest days last)
//!    are written straight into the nutrition table, then `replay` rebuilds every
//!    projection (dashboard, goals, insights, cross-context) from them, in each mode of
//!    `BENCH_REPLAY_MODES` (default `rebuild,incremental`; a fresh store each). Prints
//!    events/s and projector applications/s. Then, on `BENCH_REPLAY_COUNTED_EVENTS`
//!    (default 20,000) events, the same replay through a store that counts requests
//!    as DynamoDB takes them (25 writes per `BatchWriteItem`): requests per event.
//! 2. Erasure: one user with `BENCH_HISTORY_DAYS` (default 730) days of history (two
//!    meals, a workout and a sleep per day, through the command handlers, projectors
//!    running) asks for deletion; prints the time until identity marks it complete.

use commands::CommandMeta;
use commands::activity::{ActivityCommands, RecordWorkout};
use commands::identity::{IdentityCommands, Register};
use commands::nutrition::{MealInput, NutritionCommands};
use commands::sleep::{RecordSleep, SleepCommands};
use events_schema::Context;
use events_schema::envelope::EventEnvelope;
use events_schema::envelope::outbox_item;
use events_schema::events::nutrition::{DayTotals, Meal, MealLogged, Nutrients};
use events_schema::ids::{EventId, MealId, UserId};
use events_schema::keys::PartitionKey;
use events_schema::time::{Day, Timestamp};
use infra::Store;
use infra::counting::CountingStore;
use infra::embedded::EmbeddedStore;
use infra::feed::embedded::EmbeddedFeed;
use infra::store::{Query, TransactAction};
use infra::table::Table;
use projectors::pipeline::Pipeline;
use projectors::replay::{BATCH_EVENTS, Mode, Progress, replay_with};
use rust_decimal::Decimal;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Prints progress every 100,000 events.
struct Every {
    started: Instant,
    done: AtomicU64,
}

impl Progress for Every {
    fn total(&self, events: u64) {
        println!(
            "  counted {events} events in {:.1} s",
            self.started.elapsed().as_secs_f64()
        );
    }
    fn advance(&self, events: u64) {
        let before = self.done.fetch_add(events, Ordering::Relaxed);
        if (before + events) / 100_000 > before / 100_000 {
            let done = before + events;
            let secs = self.started.elapsed().as_secs_f64();
            println!("  {done} events, {:.0} events/s", done as f64 / secs);
        }
    }
}

fn meal_event(user: &UserId, n: usize) -> anyhow::Result<EventEnvelope> {
    let day = Day::parse("2024-01-01")?.date() + chrono::Duration::days((n / 2) as i64);
    let day = Day::new(day);
    let eaten_at = Timestamp::parse(&format!("{day}T{:02}:00:00.000Z", 8 + (n % 2) * 10))?;
    let nutrients = Nutrients {
        calories: Decimal::from(400 + (n % 7) as i64 * 10),
        protein_g: Decimal::from(25),
        carbs_g: Decimal::from(50),
        fat_g: Decimal::from(12),
    };
    let totals = Nutrients {
        calories: nutrients.calories * Decimal::from(1 + n % 2),
        ..nutrients
    };
    let payload = MealLogged {
        meal: Meal {
            meal_id: MealId::generate(),
            day,
            eaten_at,
            name: "Meal".into(),
            nutrients,
            version: 1,
        },
        day_totals: DayTotals {
            day,
            meals: 1 + (n % 2) as u32,
            totals,
            version: 1 + (n % 2) as u64,
        },
    };
    let mut event = EventEnvelope::new(Some(user.clone()), eaten_at, &payload)?;
    // Event ids in time order within the user, as the command side's would be.
    event.event_id =
        EventId::parse(&ulid::Ulid::from_parts(eaten_at.millis() as u64, n as u128).to_string())?;
    Ok(event)
}

/// Writes `events` `MealLogged` outbox items for `users` users into a fresh store.
async fn seeded_store(
    dir: &std::path::Path,
    events: usize,
    users: usize,
) -> anyhow::Result<Arc<EmbeddedStore>> {
    let store = Arc::new(EmbeddedStore::open(dir)?);
    let shared: Arc<dyn Store> = store.clone();
    let per_user = events.div_ceil(users);
    let started = Instant::now();
    let mut written = 0;
    let mut batch = Vec::with_capacity(100);
    let mut pending = tokio::task::JoinSet::new();
    'users: for _ in 0..users {
        let user = UserId::generate();
        let pk = PartitionKey::User(user.clone()).to_string();
        for n in 0..per_user {
            if written == events {
                break 'users;
            }
            let item = outbox_item(&pk, &meal_event(&user, n)?)?;
            batch.push(TransactAction::Put {
                table: Context::Nutrition,
                item,
                condition: None,
            });
            written += 1;
            if batch.len() == 100 {
                let store = shared.clone();
                let actions = std::mem::take(&mut batch);
                pending.spawn(async move { store.transact(actions).await });
                while pending.len() >= 32 {
                    if let Some(done) = pending.join_next().await {
                        done??;
                    }
                }
            }
        }
    }
    if !batch.is_empty() {
        shared.transact(batch).await?;
    }
    while let Some(done) = pending.join_next().await {
        done??;
    }
    println!(
        "seeded {written} MealLogged outbox items for {users} users in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    Ok(store)
}

async fn replay_bench(events: usize, users: usize, mode: Mode) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let store = seeded_store(dir.path(), events, users).await?;
    let shared: Arc<dyn Store> = store.clone();
    let subscriptions = projectors::registry::projections(shared.clone());
    let progress = Every {
        started: Instant::now(),
        done: AtomicU64::new(0),
    };
    let replayed = replay_with(
        shared.clone(),
        &subscriptions,
        None,
        &progress,
        BATCH_EVENTS,
        mode,
    )
    .await?;
    let secs = progress.started.elapsed().as_secs_f64();
    println!(
        "replay, {mode:?} (all {} projections; {} of them consume nutrition): {} events, {} applications, {} refused in {secs:.1} s",
        subscriptions.len(),
        subscriptions
            .iter()
            .filter(|s| s.source() == Context::Nutrition)
            .count(),
        replayed.events,
        replayed.applications,
        replayed.rejected
    );
    println!(
        "  {:.0} events/s, {:.0} applications/s (counting pass included)",
        replayed.events as f64 / secs,
        replayed.applications as f64 / secs
    );
    store.close();
    Ok(())
}

/// The replay's requests per event, counted as DynamoDB takes them.
async fn replay_requests(events: usize, users: usize, mode: Mode) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let store = seeded_store(dir.path(), events, users).await?;
    let counting = Arc::new(CountingStore::new(store.clone()));
    let shared: Arc<dyn Store> = counting.clone();
    let subscriptions = projectors::registry::projections(shared.clone());
    let replayed = replay_with(
        shared,
        &subscriptions,
        None,
        &projectors::replay::Quiet,
        BATCH_EVENTS,
        mode,
    )
    .await?;
    let counts = counting.counts();
    let per_event = |n: usize| n as f64 / replayed.events.max(1) as f64;
    println!(
        "replay requests, {mode:?}, {} events: {:.3} write requests per event ({} single, {} transactions, {} batch writes of up to 25), {:.3} reads per event; {:.2} write units per event",
        replayed.events,
        per_event(counts.writes()),
        counts.single_writes,
        counts.transactions,
        counts.batch_writes,
        per_event(counts.reads()),
        counting.capacity().write_units / replayed.events.max(1) as f64,
    );
    store.close();
    Ok(())
}

async fn erasure_bench(days: usize) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let store = Arc::new(EmbeddedStore::open(dir.path())?);
    let shared: Arc<dyn Store> = store.clone();
    let pipeline = Pipeline::start(
        shared.clone(),
        Arc::new(EmbeddedFeed::new(store.clone())),
        projectors::registry::all(shared.clone()),
    );
    let identity = IdentityCommands::new(Table::new(shared.clone()));
    let nutrition = Arc::new(NutritionCommands::new(Table::new(shared.clone())));
    let activity = Arc::new(ActivityCommands::new(Table::new(shared.clone())));
    let sleep = Arc::new(SleepCommands::new(Table::new(shared.clone())));
    let meta = CommandMeta::new(UserId::generate());
    let user = identity
        .register(
            &meta,
            Register {
                email: "two-years@example.com".into(),
                password: "correct horse battery".into(),
                display_name: "Long".into(),
                timezone: "UTC".into(),
                units: Default::default(),
            },
        )
        .await?
        .value;
    let meta = CommandMeta::new(user.clone());
    let started = Instant::now();
    let first = Day::parse("2024-12-01")?.date();
    // Days in parallel (8 at a time), each day's commands in order.
    let mut tasks = tokio::task::JoinSet::new();
    for d in 0..days {
        let day = Day::new(first + chrono::Duration::days(d as i64));
        let (nutrition, activity, sleep, meta) = (
            nutrition.clone(),
            activity.clone(),
            sleep.clone(),
            meta.clone(),
        );
        tasks.spawn(async move {
            for hour in [8, 19] {
                nutrition
                    .log_meal(
                        &meta,
                        MealInput {
                            name: "Meal".into(),
                            eaten_at: Timestamp::parse(&format!("{day}T{hour:02}:00:00.000Z"))?,
                            timezone: "UTC".into(),
                            calories: Decimal::from(600),
                            protein_g: Decimal::from(30),
                            carbs_g: Decimal::from(70),
                            fat_g: Decimal::from(20),
                        },
                    )
                    .await?;
            }
            activity
                .record_workout(
                    &meta,
                    RecordWorkout {
                        sport: "run".into(),
                        started_at: Timestamp::parse(&format!("{day}T06:00:00.000Z"))?,
                        timezone: "UTC".into(),
                        duration_s: 1800,
                        distance_m: Some(5000),
                        calories: Some(300),
                        perceived_effort: Some(5),
                    },
                )
                .await?;
            sleep
                .record_sleep(
                    &meta,
                    RecordSleep {
                        start: Timestamp::parse(&format!("{day}T00:00:00.000Z"))?,
                        end: Timestamp::parse(&format!("{day}T07:00:00.000Z"))?,
                        timezone: "UTC".into(),
                        score: 80,
                        stages: Default::default(),
                    },
                )
                .await?;
            anyhow::Ok(())
        });
        while tasks.len() >= 8 {
            if let Some(done) = tasks.join_next().await {
                done??;
            }
        }
    }
    while let Some(done) = tasks.join_next().await {
        done??;
    }
    while !pipeline.caught_up().await? {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let pk = PartitionKey::User(user.clone()).to_string();
    let mut items = 0;
    for table in Context::ALL {
        let mut cursor = None;
        loop {
            let page = shared
                .query(table, &Query::partition(&pk).after(cursor))
                .await?;
            items += page.items.len();
            match page.cursor {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
    }
    println!(
        "erasure: one user with {days} days of history ({} commands, {items} items in their partitions) built in {:.1} s",
        days * 4 + 1,
        started.elapsed().as_secs_f64()
    );

    let requested = Instant::now();
    identity
        .request_deletion(&meta, "correct horse battery")
        .await?;
    let identity_table = Table::new(shared.clone());
    while !projectors::erasure::is_complete(&identity_table, &user).await? {
        anyhow::ensure!(
            requested.elapsed() < Duration::from_secs(600),
            "erasure did not complete"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let took = requested.elapsed();
    let mut left = 0;
    for table in Context::ALL {
        left += shared
            .query(table, &Query::partition(&pk).limit(1))
            .await?
            .items
            .len();
    }
    println!(
        "  deletion request -> erasure complete: {:.2} s; items left in the user's partitions: {left}",
        took.as_secs_f64()
    );
    pipeline.stop().await;
    store.close();
    Ok(())
}

/// The binary's allocator (`app/src/main.rs`), so the figures are the product's.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        if env("BENCH_SKIP_REPLAY", 0) == 0 {
            let modes = std::env::var("BENCH_REPLAY_MODES")
                .unwrap_or_else(|_| "rebuild,incremental".to_owned());
            let users = env("BENCH_REPLAY_USERS", 10_000);
            for mode in modes.split(',') {
                let mode = match mode.trim() {
                    "rebuild" => Mode::Rebuild,
                    "incremental" => Mode::Incremental,
                    other => anyhow::bail!("BENCH_REPLAY_MODES: unknown mode {other:?}"),
                };
                replay_bench(env("BENCH_REPLAY_EVENTS", 1_000_000), users, mode).await?;
                let counted = env("BENCH_REPLAY_COUNTED_EVENTS", 20_000);
                replay_requests(counted, users.min(counted / 10).max(1), mode).await?;
            }
        }
        erasure_bench(env("BENCH_HISTORY_DAYS", 730)).await
    })
}
