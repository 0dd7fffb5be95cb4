//! Meal logging on the embedded store, with durable commits: commands per second and
//! latency percentiles at 1 and at 32 concurrent users. Each command is the real
//! handler: validation, one summary read, one transaction (meal, reference, summary,
//! event). `BENCH_SCALE` scales the number of commands (default 1.0).

use commands::CommandMeta;
use commands::nutrition::{MealInput, NutritionCommands};
use events_schema::ids::UserId;
use events_schema::time::Timestamp;
use hdrhistogram::Histogram;
use infra::Store;
use infra::embedded::EmbeddedStore;
use infra::table::Table;
use rust_decimal::Decimal;
use std::sync::Arc;
use std::time::Instant;

fn meal(n: u64) -> anyhow::Result<MealInput> {
    // Spread over a week of days so summaries of several days are written.
    let at = Timestamp::from_millis(
        1_767_261_600_000 + (n % 7) as i64 * 86_400_000 + (n % 600) as i64 * 60_000,
    )
    .ok_or_else(|| anyhow::anyhow!("timestamp out of range"))?;
    Ok(MealInput {
        name: format!("Meal {n}"),
        eaten_at: at,
        timezone: "Europe/Paris".into(),
        calories: Decimal::new(3000 + (n % 5000) as i64, 1),
        protein_g: Decimal::new((n % 900) as i64, 1),
        carbs_g: Decimal::from(40),
        fat_g: Decimal::new(125, 1),
    })
}

async fn run(
    nutrition: Arc<NutritionCommands>,
    users: usize,
    commands: u64,
) -> anyhow::Result<(f64, Histogram<u64>)> {
    let per_user = commands / users as u64;
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..users {
        let nutrition = nutrition.clone();
        tasks.push(tokio::spawn(async move {
            let meta = CommandMeta::new(UserId::generate());
            let mut latencies = Histogram::<u64>::new(3)?;
            for n in 0..per_user {
                let t = Instant::now();
                nutrition.log_meal(&meta, meal(n)?).await?;
                latencies.record(t.elapsed().as_micros() as u64)?;
            }
            anyhow::Ok(latencies)
        }));
    }
    let mut all = Histogram::<u64>::new(3)?;
    for task in tasks {
        all.add(task.await??)?;
    }
    Ok((started.elapsed().as_secs_f64(), all))
}

/// The binary's allocator (`app/src/main.rs`), so the figures are the product's.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> anyhow::Result<()> {
    let scale: f64 = std::env::var("BENCH_SCALE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1.0);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let dir = tempfile::tempdir()?;
    let embedded = Arc::new(EmbeddedStore::open(dir.path())?);
    let store: Arc<dyn Store> = embedded.clone();
    let nutrition = Arc::new(NutritionCommands::new(Table::new(store)));
    println!("meal logging on the embedded store (durable commits), scale {scale}");
    println!(
        "{:>6} {:>9} {:>8} {:>11} {:>8} {:>8} {:>8}",
        "users", "commands", "secs", "commands/s", "p50 us", "p99 us", "max us"
    );
    for (users, commands) in [(1usize, 3000u64), (32, 12_800)] {
        let commands = ((commands as f64 * scale) as u64).max(users as u64 * 5);
        // Warm-up, not measured.
        runtime.block_on(run(nutrition.clone(), users, commands / 20))?;
        let before = embedded.writer_totals();
        let (secs, latencies) = runtime.block_on(run(nutrition.clone(), users, commands))?;
        let writer = embedded.writer_totals().since(&before);
        println!(
            "{users:>6} {:>9} {secs:>8.2} {:>11.0} {:>8} {:>8} {:>8}",
            latencies.len(),
            latencies.len() as f64 / secs,
            latencies.value_at_quantile(0.5),
            latencies.value_at_quantile(0.99),
            latencies.max()
        );
        // Where the time goes: the single writer thread's share of the run.
        let ms = |d: std::time::Duration, n: u64| d.as_secs_f64() * 1000.0 / n.max(1) as f64;
        println!(
            "       store writer: busy {:.0}% of the run (engine commit {:.0}%), {} commits of {:.1} requests, {:.2} ms each (engine commit {:.2} ms); a request waits {:.2} ms queued; {:.1} items per command, {:.0} items/s",
            100.0 * writer.busy.as_secs_f64() / secs,
            100.0 * writer.committing.as_secs_f64() / secs,
            writer.commits,
            writer.requests as f64 / writer.commits.max(1) as f64,
            ms(writer.busy, writer.commits),
            ms(writer.committing, writer.commits),
            ms(writer.queued, writer.requests),
            writer.items as f64 / writer.requests.max(1) as f64,
            writer.items as f64 / secs,
        );
    }
    Ok(())
}
