//! Growth: meal logging and dashboard reads as the embedded store grows from nearly
//! empty to ten million items, the bytes on disk an active user-year takes, and the peak
//! memory (RSS) of the serving process under the 32-client meal-logging load.
//!
//! How the store grows: a template user logs a year through the API (the day of
//! `support::seed_day`: two meals, a sleep, a workout every third day). Then, for each
//! step, the server stops, the template's `USER#` partition of every table (its events,
//! state rows and projection rows) is copied under fresh user ids with
//! `Store::write_batch` until the store holds the step's item count, every
//! subscription's checkpoint is moved past the copies and the change log trimmed (the
//! copies are a projected user's rows already; projecting them again would measure the
//! copy, not the growth), and the server starts again on the same file for the same
//! measurements. Copying keeps ten million items to minutes; logging them through the
//! API at ~1,000 commands/s would take hours.
//!
//! Run with `cargo bench -p vitals --bench growth`. `VITALS_BENCH_GROWTH_ITEMS` lists
//! the item counts to grow to (default `1000000,10000000`); the first measurement is
//! always taken before any copy. Other sizes: `VITALS_BENCH_READS`,
//! `VITALS_BENCH_WARMUP`, `VITALS_BENCH_CLIENTS`, `VITALS_BENCH_WRITES_PER_CLIENT`.

mod support;

use anyhow::{Context as _, bail, ensure};
use events_schema::Context;
use events_schema::ids::UserId;
use infra::Store as _;
use infra::embedded::EmbeddedStore;
use infra::feed::embedded::EmbeddedFeed;
use infra::store::{BatchWrite, Item, Query, Scan};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::{Api, Run, User, converge, env_number, log_meals, read_dashboard, seed_day};

/// Copies written between two trims of the change log (about half a million items).
const COPIES_PER_TRIM: usize = 80;

#[derive(Debug)]
struct Sizes {
    steps: Vec<u64>,
    warmup: u32,
    reads: u32,
    clients: u32,
    writes_per_client: u32,
    converge: Duration,
}

impl Sizes {
    fn from_env() -> anyhow::Result<Self> {
        let steps = match std::env::var("VITALS_BENCH_GROWTH_ITEMS") {
            Ok(text) => text
                .split(',')
                .map(|n| n.trim().parse::<u64>())
                .collect::<Result<Vec<_>, _>>()
                .with_context(|| format!("VITALS_BENCH_GROWTH_ITEMS={text:?}"))?,
            Err(_) => vec![1_000_000, 10_000_000],
        };
        Ok(Self {
            steps,
            warmup: env_number("VITALS_BENCH_WARMUP", 300)?,
            reads: env_number("VITALS_BENCH_READS", 3000)?.max(1),
            clients: env_number("VITALS_BENCH_CLIENTS", 32)?.max(1),
            writes_per_client: env_number("VITALS_BENCH_WRITES_PER_CLIENT", 60)?.max(1),
            converge: Duration::from_secs(env_number("VITALS_BENCH_CONVERGE_SECS", 300)?.into()),
        })
    }
}

/// The binary's allocator (`app/src/main.rs`), so the figures are the product's.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> anyhow::Result<()> {
    let sizes = Sizes::from_env()?;
    support::run_bench(bench(sizes))
}

/// What one step measured.
struct Step {
    items: u64,
    disk_bytes: u64,
    dashboard: Run,
    meals: Run,
    peak_rss_kib: Option<u64>,
}

/// The template year and the users the measurements use, made on the first server.
struct Population {
    reader: User,
    template_id: String,
}

async fn bench(sizes: Sizes) -> anyhow::Result<()> {
    let dir = tempfile::tempdir().context("temporary directory")?;
    let data = dir.path().join("data");
    eprintln!("growth: store in {}; sizes {sizes:?}", data.display());

    let server = Server::start(dir.path()).await?;
    let population = populate(&server.api, &sizes).await?;
    server.stop().await?;

    let template = read_template(&data, &population.template_id).await?;
    eprintln!(
        "growth: the template year is {} items, {} B of item JSON",
        template.items.len(),
        template.json_bytes
    );
    let empty_disk = disk_bytes(&data)?;
    let mut steps = vec![measure(dir.path(), &data, &population, &sizes).await?];
    let mut copies = 0u64;
    for &target in &sizes.steps {
        let started = Instant::now();
        let before = steps.last().map_or(0, |s| s.items);
        let made = grow(&data, &template, before, target).await?;
        copies += made;
        eprintln!(
            "growth: {made} copies ({} items) in {:.1} s",
            made * template.items.len() as u64,
            started.elapsed().as_secs_f64()
        );
        steps.push(measure(dir.path(), &data, &population, &sizes).await?);
    }
    report(&steps, &template, copies, empty_disk);
    Ok(())
}

/// `vitals serve` on the data directory, as its own process (so that the memory measured
/// is the server's alone), and a client of it.
struct Server {
    api: Api,
    child: std::process::Child,
    /// Kept open: the server's standard output after its address line.
    _stdout: std::process::ChildStdout,
}

impl Server {
    async fn start(dir: &Path) -> anyhow::Result<Self> {
        let data = dir.join("data");
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_vitals"))
            .args(["serve", "--listen", "127.0.0.1:0", "--backend", "embedded"])
            .arg("--data-dir")
            .arg(&data)
            .args(["--jwt-secret", "bench-jwt-secret"])
            // High enough that the limiter is never what is measured.
            .args(["--rate-limit", "1000000", "--auth-rate-limit", "1000000"])
            .args(["--login-rate-limit", "1000000"])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .context("starting vitals serve")?;
        let mut stdout = child.stdout.take().context("piped stdout")?;
        // The first line names the bound address (the child has started or failed).
        let (line, stdout) = tokio::task::spawn_blocking(move || {
            let mut line = String::new();
            let mut reader = std::io::BufReader::new(&mut stdout);
            std::io::BufRead::read_line(&mut reader, &mut line)
                .map(|_| line)
                .map(|line| (line, stdout))
        })
        .await??;
        let Some(address) = line.trim().strip_prefix("listening on ") else {
            let _ = child.kill();
            bail!("vitals serve did not start: {line:?}");
        };
        Ok(Self {
            api: Api::new(address.to_owned()),
            child,
            _stdout: stdout,
        })
    }

    /// Stops the server as an operator does (SIGTERM) and waits until it has exited,
    /// its store closed.
    async fn stop(mut self) -> anyhow::Result<()> {
        let pid = self.child.id().to_string();
        let sent = std::process::Command::new("kill")
            .args(["-TERM", &pid])
            .status()?;
        ensure!(sent.success(), "kill -TERM {pid} failed");
        let status = tokio::task::spawn_blocking(move || self.child.wait()).await??;
        ensure!(status.success(), "vitals serve exited with {status}");
        Ok(())
    }

    /// Resets the kernel's high-water mark of the server's resident memory (Linux).
    fn reset_peak_rss(&self) {
        let path = format!("/proc/{}/clear_refs", self.child.id());
        if let Err(error) = std::fs::write(&path, "5") {
            eprintln!("growth: cannot reset the peak RSS ({error}); it covers the whole run");
        }
    }

    /// The server's peak resident memory since the last reset, in KiB (Linux).
    fn peak_rss_kib(&self) -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).ok()?;
        let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
        line.split_whitespace().nth(1)?.parse().ok()
    }
}

/// The reader (30 days of history before the query date) and the template year.
async fn populate(api: &Api, sizes: &Sizes) -> anyhow::Result<Population> {
    let reader = api.register("reader@growth.example").await?;
    let last = seed_day(api, &reader, support::day(0)?, 0).await?;
    support::seed_history(api, &reader, 4, 1, 30).await?;
    converge(api, &reader, &last, sizes.converge).await?;

    let (template_user, template_id) = api.register_with_id("template@growth.example").await?;
    let last = seed_day(api, &template_user, support::day(0)?, 0).await?;
    support::seed_history(api, &template_user, 4, 1, 364).await?;
    converge(api, &template_user, &last, sizes.converge).await?;
    Ok(Population {
        reader,
        template_id,
    })
}

/// The template user's partition of every table, read once the server has stopped.
struct Template {
    id: String,
    items: Vec<(Context, String)>,
    json_bytes: u64,
}

/// Every item of every table, counted with the store opened offline.
async fn count_items(data: &Path) -> anyhow::Result<u64> {
    let store = open_offline(data).await?;
    let mut total = 0u64;
    for table in Context::ALL {
        let mut scan = Scan::default();
        loop {
            let page = store.scan(table, &scan).await?;
            total += page.items.len() as u64;
            match page.cursor {
                Some(cursor) => scan.cursor = Some(cursor),
                None => break,
            }
        }
    }
    store.close();
    Ok(total)
}

/// The template's items (kept as JSON text, to copy under other ids), read offline.
async fn read_template(data: &Path, id: &str) -> anyhow::Result<Template> {
    let store = open_offline(data).await?;
    let pk = format!("USER#{id}");
    let mut items = Vec::new();
    for table in Context::ALL {
        let mut query = Query::partition(pk.clone());
        loop {
            let page = store.query(table, &query).await?;
            for item in page.items {
                items.push((table, serde_json::to_string(&item)?));
            }
            match page.cursor {
                Some(cursor) => query = query.after(Some(cursor)),
                None => break,
            }
        }
    }
    store.close();
    ensure!(!items.is_empty(), "the template user has no items");
    let json_bytes = items.iter().map(|(_, json)| json.len() as u64).sum();
    Ok(Template {
        id: id.to_owned(),
        items,
        json_bytes,
    })
}

/// Opens the store in `data`, waiting (with a deadline) for the stopped server's
/// handles to be dropped.
async fn open_offline(data: &Path) -> anyhow::Result<Arc<EmbeddedStore>> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match EmbeddedStore::open(data) {
            Ok(store) => return Ok(Arc::new(store)),
            Err(error) if Instant::now() < deadline => {
                eprintln!("growth: waiting for the store to close ({error})");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(error) => bail!("opening {}: {error}", data.display()),
        }
    }
}

/// Copies the template until the store holds about `target` items; returns how many
/// copies were written.
async fn grow(data: &Path, template: &Template, items: u64, target: u64) -> anyhow::Result<u64> {
    let rows = &template.items;
    let per_copy = rows.len() as u64;
    let copies = target.saturating_sub(items).div_ceil(per_copy);
    let store = open_offline(data).await?;
    let consumers: Vec<&'static str> = projectors::registry::all(store.clone())
        .iter()
        .map(|p| p.name())
        .collect();
    let mut written = 0u64;
    while written < copies {
        let group = (copies - written).min(COPIES_PER_TRIM as u64);
        let mut by_table: Vec<(Context, Vec<BatchWrite>)> =
            Context::ALL.iter().map(|&t| (t, Vec::new())).collect();
        for _ in 0..group {
            let id = UserId::generate();
            for (table, json) in rows {
                let item: Item = serde_json::from_str(&json.replace(&template.id, id.as_str()))?;
                if let Some((_, writes)) = by_table.iter_mut().find(|(t, _)| t == table) {
                    writes.push(BatchWrite::Put(item));
                }
            }
        }
        for (table, writes) in by_table {
            if !writes.is_empty() {
                store.write_batch(table, writes).await?;
            }
        }
        written += group;
        // The copies are projected already: every subscription moves past them, and the
        // change log forgets them as it forgets what the workers have processed.
        let head = store.last_sequence().await?;
        for consumer in &consumers {
            store.set_checkpoint(consumer, head).await?;
        }
        EmbeddedFeed::new(store.clone())
            .trim_processed(&consumers)
            .await?;
    }
    store.close();
    Ok(copies)
}

/// Starts the server on the store as it is and measures dashboard reads, then meal
/// logging by `clients` new users with the peak RSS over that load.
async fn measure(
    dir: &Path,
    data: &Path,
    population: &Population,
    sizes: &Sizes,
) -> anyhow::Result<Step> {
    let items = count_items(data).await?;
    let server = Server::start(dir).await?;
    let api = &server.api;
    let dashboard = read_dashboard(api, &population.reader, sizes.warmup, sizes.reads)
        .await?
        .run;
    server.reset_peak_rss();
    let meals = log_meals(api, sizes.clients, sizes.writes_per_client).await?;
    let peak_rss_kib = server.peak_rss_kib();
    support::settle(api, sizes.converge).await?;
    server.stop().await?;
    let step = Step {
        items,
        disk_bytes: disk_bytes(data)?,
        dashboard,
        meals,
        peak_rss_kib,
    };
    eprintln!(
        "growth: measured at ~{items} items: dashboard p99 {:.2} ms, meals p99 {:.2} ms",
        ms(&step.dashboard, 0.99),
        ms(&step.meals, 0.99)
    );
    Ok(step)
}

fn ms(run: &Run, quantile: f64) -> f64 {
    run.latency.value_at_quantile(quantile) as f64 / 1000.0
}

/// The bytes of every file in the data directory.
fn disk_bytes(data: &Path) -> anyhow::Result<u64> {
    let mut total = 0;
    for entry in std::fs::read_dir(data)? {
        let entry: PathBuf = entry?.path();
        total += std::fs::metadata(&entry)?.len();
    }
    Ok(total)
}

fn report(steps: &[Step], template: &Template, copies: u64, empty_disk: u64) {
    println!();
    println!(
        "Growth of the embedded store: vitals serve as its own process, its client over 127.0.0.1"
    );
    println!(
        "{:>12} {:>10} {:>11} {:>11} {:>10} {:>11} {:>11} {:>10}",
        "items",
        "disk MB",
        "dash p50 ms",
        "dash p99 ms",
        "meals/s",
        "meal p50 ms",
        "meal p99 ms",
        "peak RSS MB"
    );
    for step in steps {
        println!(
            "{:>12} {:>10.1} {:>11.2} {:>11.2} {:>10.0} {:>11.2} {:>11.2} {:>10}",
            step.items,
            step.disk_bytes as f64 / 1e6,
            ms(&step.dashboard, 0.5),
            ms(&step.dashboard, 0.99),
            step.meals.requests as f64 / step.meals.elapsed.as_secs_f64(),
            ms(&step.meals, 0.5),
            ms(&step.meals, 0.99),
            step.peak_rss_kib
                .map_or("n/a".to_owned(), |k| format!("{:.1}", k as f64 / 1024.0)),
        );
    }
    if let (Some(first), Some(last)) = (steps.first(), steps.last()) {
        println!();
        println!(
            "p99 at {} items / p99 at {} items: dashboard {:.2}x, meal logging {:.2}x",
            last.items,
            first.items,
            ms(&last.dashboard, 0.99) / ms(&first.dashboard, 0.99),
            ms(&last.meals, 0.99) / ms(&first.meals, 0.99)
        );
        if copies > 0 {
            println!(
                "an active user-year ({} items, {} B of item JSON): {:.0} B on disk ({} copies, {:.1} MB of file growth)",
                template.items.len(),
                template.json_bytes,
                last.disk_bytes.saturating_sub(empty_disk) as f64 / copies as f64,
                copies,
                last.disk_bytes.saturating_sub(empty_disk) as f64 / 1e6
            );
        }
    }
}
